-- A stolen service login proves no authority (issue 18), part 3: a player's identity. Every access
-- JWT names the grant it was minted under (`sid`): an admin session's handle for an operator's
-- token, else a row here, written when the token is minted (auth.grant_access, in KeyStore.sign).
-- The cage's functions that act for a player take that handle and derive the user from it
-- (auth_private.user_of_sid): no service login reads a handle, so the cage's login cannot act in a
-- player's name. The user id is not a foreign key: a token may be minted for an id the identity
-- service vouches for; a grant moves nothing by itself.
create table auth_private.access_grants (
  sid uuid primary key default gen_random_uuid(),
  user_id uuid not null,
  issued_at timestamptz not null default now(),
  expires_at timestamptz not null
);
comment on table auth_private.access_grants is 'The grant behind each player access JWT (its sid): written by auth.grant_access when the token is minted; read by auth_private.user_of_sid.';
create index access_grants_expires_idx on auth_private.access_grants (expires_at);
alter table auth_private.access_grants enable row level security;

-- the cage's player functions take the token's handle instead of a user id (renamed: the old forms go)
drop function if exists cage.open_deposit(uuid, text, text, integer, bigint);
drop function if exists cage.open_tournament_entry(uuid, text, text, integer, bigint, integer);
drop function if exists cage.refund_tournament_entry(uuid, text);
drop function if exists cage.claim_custody(uuid, bigint);
