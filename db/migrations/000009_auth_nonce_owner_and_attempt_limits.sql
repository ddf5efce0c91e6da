-- Issue 10, auth.
-- 1. A link nonce belongs to the user who asked for it. Keyed by wallet alone, another user's request
--    replaced yours (griefing) and another user's link took yours (hijack: your wallet's signed
--    message linked the wallet to them). The identifier keeps the spec's shape
--    (`siwe:{checksum}:{chainId}`, `solana:{address}`); a row is now (identifier, requested_by).
--    Reset tokens have no requester (null) and stay unique by their identifier.
alter table auth_private.verifications add column requested_by uuid references auth.users (id) on delete cascade;
alter table auth_private.verifications drop constraint verifications_pkey;
alter table auth_private.verifications
  add constraint verifications_identifier_requester unique nulls not distinct (identifier, requested_by);
create index verifications_requested_by_idx on auth_private.verifications (requested_by, created_at) where requested_by is not null;
-- nonces issued before had no owner, so nobody could take them now; they lived five minutes anyway
delete from auth_private.verifications where identifier like 'siwe:%' or identifier like 'solana:%';
drop function if exists auth.issue_nonce(text, text, integer);
drop function if exists auth.consume_nonce(text);

-- 2. The attempt limiter's store, shared by every auth process: the table shape and queries of
--    rate-limiter-flexible's RateLimiterPostgres (created here, `tableCreated: true`, so the auth
--    role never needs CREATE). `expire` is epoch milliseconds; the library deletes rows expired an
--    hour ago every five minutes.
create table auth.attempt_limits (
  key varchar(255) primary key,
  points integer not null default 0,
  expire bigint
);
create index attempt_limits_expire_idx on auth.attempt_limits (expire);
comment on table auth.attempt_limits is 'Sign-in and password-recovery attempts per client address (and account), written by rate-limiter-flexible.';
alter table auth.attempt_limits enable row level security;
