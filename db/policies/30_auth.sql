-- Auth: only the auth role reads identities and calls the identity functions; every write goes
-- through them. Nobody else sees a row.
revoke all on schema auth, auth_private from public;
revoke all on all tables in schema auth, auth_private from public;
revoke all on all functions in schema auth, auth_private from public;
revoke all on all tables in schema auth, auth_private from poker_cage, poker_auth, poker_game, poker_worker, poker_admin, poker_anonymous;
revoke all on all functions in schema auth, auth_private from poker_cage, poker_auth, poker_game, poker_worker, poker_admin, poker_anonymous;
alter default privileges in schema auth, auth_private revoke execute on functions from public;

grant usage on schema auth to poker_auth;
grant select on auth.users, auth.bridge_identities, auth.invite_codes, auth.wallets to poker_auth;
grant execute on function
  auth.mint_invite(text, integer, integer, text),
  auth.bridge_sign_in(text, text, text, text),
  auth.issue_nonce(text, uuid, text, integer),
  auth.consume_nonce(text, uuid),
  auth.link_wallet(uuid, text, text, integer),
  auth.set_primary_wallet(uuid, text),
  auth.unlink_wallet(uuid, text),
  auth.jwt_public_keys(integer),
  auth.admin_password_params(text),
  auth.count_sign_in(text, text, text, integer, integer, integer),
  auth.bind_sign_in(uuid, bytea),
  auth.create_session(uuid, bytea, bytea, integer, bytea),
  auth.grant_access(uuid, integer),
  auth.session_for(bytea),
  auth.revoke_session(bytea),
  auth.request_password_reset(text, text, integer),
  auth.check_reset_token(bytea),
  auth.reset_password(bytea, text)
  to poker_auth;

drop policy if exists users_auth_read on auth.users;
create policy users_auth_read on auth.users for select to poker_auth using (true);
drop policy if exists bridge_identities_auth_read on auth.bridge_identities;
create policy bridge_identities_auth_read on auth.bridge_identities for select to poker_auth using (true);
drop policy if exists invite_codes_auth_read on auth.invite_codes;
create policy invite_codes_auth_read on auth.invite_codes for select to poker_auth using (true);
drop policy if exists wallets_auth_read on auth.wallets;
create policy wallets_auth_read on auth.wallets for select to poker_auth using (true);

-- The recovery limiter's store: counted only through auth.count_attempt, recovery keys only (no
-- direct write by anyone but the owner); nobody else reads it. Sign-in attempts are counted inside the
-- sign-in flow (auth.count_sign_in, auth.create_session), in auth_private tables no login reads.
drop policy if exists attempt_limits_auth_all on auth.attempt_limits;
grant execute on function auth.count_attempt(text, integer) to poker_auth;
