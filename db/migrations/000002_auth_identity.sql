-- Auth: identity in three layers (the canonical user, the 1:1 bridge record, the identity records),
-- invite codes and wallets. The rules that must never break (invite consumption, no account outside
-- the bridge, wallet ownership, exactly one primary wallet) live here and in db/functions/auth/.

create schema auth;
create schema auth_private;

-- (a) The canonical user. `id` is the JWT `sub`.
create table auth.users (
  id uuid primary key default gen_random_uuid(),
  email text,
  created_at timestamptz not null default now(),
  constraint users_email_shape check (email is null or (length(email) between 3 and 320 and email like '%@%'))
);
comment on table auth.users is 'Canonical users; sub of every JWT. Created only by auth.bridge_sign_in or the admin command.';

-- (b) The bridge record: one identity-provider identity per user, and per identity one user.
create table auth.bridge_identities (
  user_id uuid not null references auth.users (id) on delete cascade,
  auth_provider text not null check (length(auth_provider) between 1 and 64),
  auth_provider_user_id text not null check (length(auth_provider_user_id) between 1 and 255),
  created_at timestamptz not null default now(),
  constraint bridge_identities_one_per_user primary key (user_id),
  constraint bridge_identities_one_user_per_identity unique (auth_provider, auth_provider_user_id)
);

-- (c) Identity records. Admin credentials (email/password) exist only for users made by the admin
-- command; a bridged user can never hold one (auth_private.tg_credentials__not_bridged).
create table auth_private.credentials (
  user_id uuid primary key references auth.users (id) on delete cascade,
  email text not null,
  password_hash text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index credentials_email_unique on auth_private.credentials (lower(email));

create table auth_private.sessions (
  id bigint generated always as identity primary key,
  token_hash bytea not null unique check (length(token_hash) = 32),
  user_id uuid not null references auth.users (id) on delete cascade,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  revoked_at timestamptz
);
create index sessions_user_idx on auth_private.sessions (user_id);

-- One-time values: SIWE nonces (`siwe:{checksum}:{chainId}`), password-reset tokens.
create table auth_private.verifications (
  identifier text primary key check (length(identifier) between 1 and 200),
  value text not null,
  expires_at timestamptz not null,
  created_at timestamptz not null default now()
);

-- JWT signing keys: the private key encrypted with AUTH_SECRET by the auth role.
create table auth_private.signing_keys (
  kid text primary key,
  public_jwk jsonb not null,
  private_key_encrypted bytea not null,
  created_at timestamptz not null default now(),
  retired_at timestamptz
);

create table auth.invite_codes (
  code text primary key check (length(code) between 8 and 128),
  max_uses integer not null default 1 check (max_uses >= 1),
  current_uses integer not null default 0 check (current_uses >= 0),
  expires_at timestamptz,
  created_at timestamptz not null default now(),
  created_by text not null default 'admin' check (length(created_by) between 1 and 200),
  constraint invite_codes_uses_within_cap check (current_uses <= max_uses)
);

create type auth.wallet_chain as enum ('evm', 'solana');

create table auth.wallets (
  id bigint generated always as identity primary key,
  user_id uuid not null references auth.users (id) on delete cascade,
  address text not null check (length(address) between 1 and 128),
  chain auth.wallet_chain not null default 'evm',
  chain_id integer not null check (chain_id >= 0),
  is_primary boolean not null default false,
  created_at timestamptz not null default now(),
  constraint wallets_evm_shape check (chain <> 'evm' or (address ~ '^0x[0-9a-fA-F]{40}$' and chain_id > 0)),
  constraint wallets_solana_shape check (chain <> 'solana' or chain_id = 0)
);
-- A wallet belongs to one user: EVM addresses case-insensitively, non-EVM verbatim.
create unique index wallets_evm_address_unique on auth.wallets (lower(address)) where chain = 'evm';
create unique index wallets_solana_address_unique on auth.wallets (address) where chain = 'solana';
-- At most one primary per user here; "at least one while any wallet remains" is checked at commit.
create unique index wallets_one_primary on auth.wallets (user_id) where is_primary;
create index wallets_user_idx on auth.wallets (user_id, created_at desc);

-- No account is created outside the bridge and the admin command, whoever calls the insert.
create function auth_private.tg_users__creation_path() returns trigger
  language plpgsql as $$
begin
  if coalesce(current_setting('auth.user_creation_path', true), '') not in ('bridge', 'admin_command') then
    raise exception using errcode = 'AUCRE', message = 'account_creation_disabled',
      detail = 'users are created only by the identity-provider bridge (auth.bridge_sign_in) or the admin command';
  end if;
  return new;
end;
$$;
create trigger tg_users__creation_path before insert on auth.users
  for each row execute function auth_private.tg_users__creation_path();

create function auth_private.tg_credentials__not_bridged() returns trigger
  language plpgsql as $$
begin
  if exists (select from auth.bridge_identities b where b.user_id = new.user_id) then
    raise exception using errcode = 'AUCRE', message = 'account_creation_disabled',
      detail = 'a poker (bridged) user can never hold an email/password credential';
  end if;
  return new;
end;
$$;
create trigger tg_credentials__not_bridged before insert or update on auth_private.credentials
  for each row execute function auth_private.tg_credentials__not_bridged();

-- Exactly one primary per user who has a wallet, checked when the transaction commits (so a
-- function may move the flag in two steps).
create function auth_private.tg_wallets__one_primary() returns trigger
  language plpgsql as $$
declare
  v_user uuid := coalesce(new.user_id, old.user_id);
begin
  if exists (select from auth.wallets w where w.user_id = v_user)
     and (select count(*) from auth.wallets w where w.user_id = v_user and w.is_primary) <> 1 then
    raise exception using errcode = 'AUPRI', message = 'primary_wallet_invariant',
      detail = format('user %s must have exactly one primary wallet', v_user);
  end if;
  return null;
end;
$$;
create constraint trigger tg_wallets__one_primary after insert or update or delete on auth.wallets
  deferrable initially deferred
  for each row execute function auth_private.tg_wallets__one_primary();

alter table auth.users enable row level security;
alter table auth.bridge_identities enable row level security;
alter table auth.invite_codes enable row level security;
alter table auth.wallets enable row level security;
alter table auth_private.credentials enable row level security;
alter table auth_private.sessions enable row level security;
alter table auth_private.verifications enable row level security;
alter table auth_private.signing_keys enable row level security;
