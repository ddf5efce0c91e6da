-- Issue 31, classes 5 and 6.
-- 1. The worker's mail key: the public half (an RSA modulus, exponent 65537) a mail job's secret is
--    sealed to (auth_private.seal_for_worker). Pinned by the owner only (auth_private.pin_mail_key);
--    the live key is the last pinned.
create table auth_private.mail_keys (
  id bigint generated always as identity primary key,
  modulus bytea not null,
  pinned_at timestamptz not null default now(),
  retired_at timestamptz
);
alter table auth_private.mail_keys enable row level security;

-- 2. The sign-in attempt limit, kept and enforced by the SQL that checks the password
--    (auth.count_sign_in, auth.create_session): failures per bucket in a fixed window. Buckets: the
--    account (whatever the address: the ceiling a thief holding the auth login meets, since he names
--    the address), the (address, account) pair and the address (the limits the auth role configures),
--    a known device of the account (a browser that signed in before, by its device token's hash).
create table auth_private.sign_in_attempts (
  bucket text primary key,
  failures integer not null,
  window_ends timestamptz not null
);
create index sign_in_attempts_window_idx on auth_private.sign_in_attempts (window_ends);
alter table auth_private.sign_in_attempts enable row level security;

-- An attempt counted: bound once to one derived key (its sha-256, auth.bind_sign_in), it lets
-- create_session check that key for one email, in a later transaction than the binding.
create table auth_private.sign_in_tickets (
  ticket uuid primary key default gen_random_uuid(),
  email text not null,
  buckets text[] not null,
  key_hash bytea,
  bound_in bigint,
  created_at timestamptz not null default now()
);
create index sign_in_tickets_created_idx on auth_private.sign_in_tickets (created_at);
alter table auth_private.sign_in_tickets enable row level security;

-- A browser that signed in: its device token's sha-256 (the poker_device cookie). Its attempts count
-- in its own bucket, so failures without it (a thief's, a botnet's) never lock it out.
create table auth_private.sign_in_devices (
  token_hash bytea primary key,
  user_id uuid not null references auth.users (id) on delete cascade,
  created_at timestamptz not null default now()
);
create index sign_in_devices_user_idx on auth_private.sign_in_devices (user_id, created_at);
alter table auth_private.sign_in_devices enable row level security;

-- The auth login counted and cleared sign-in attempts directly (auth.count_attempt on any key,
-- auth.clear_sign_in_attempts): sign-in counts move into the flow above, and create_session takes an
-- attempt's ticket instead of an email.
drop function if exists auth.clear_sign_in_attempts(bytea, text);
drop function if exists auth.create_session(text, bytea, bytea, integer);
delete from auth.attempt_limits where key like 'sign-in:%';
