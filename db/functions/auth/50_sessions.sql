-- Admin sessions: opaque random tokens, stored only as their sha-256.

-- The scrypt parameters of an admin's password (`scrypt$N$r$p$salt`), never the derived key: the
-- auth service derives the key from the password it was given and proves it to create_session.
-- No row for an unknown email (the service then derives against a decoy, at the same cost).
create or replace function auth.admin_password_params(p_email text)
  returns table (user_id uuid, params text)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select c.user_id, regexp_replace(c.password_hash, '\$[^$]*$', '')
    from auth_private.credentials c where lower(c.email) = lower(p_email)
$$;

-- The stored scrypt key of a password hash (its last, base64url, field).
create or replace function auth_private.password_key(p_hash text) returns bytea
  language plpgsql immutable
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_b64 text := translate(substring(p_hash from '[^$]*$'), '-_', '+/');
begin
  return decode(v_b64 || repeat('=', (4 - length(v_b64) % 4) % 4), 'base64');
exception when others then
  return null;
end;
$$;

-- An admin session, opened only with proof of the password, for an attempt already counted: p_ticket
-- is what auth.count_sign_in gave for this email, bound (auth.bind_sign_in) to the sha-256 of p_key in
-- an earlier, committed transaction (else invalid_attempt: no guess is checked before its count is
-- committed, so rolling this back uncounts nothing, and a ticket checks one key only). p_key is the scrypt key the auth
-- service derived from the password it was given, with the parameters admin_password_params gave; it
-- must equal the stored one (else 401 invalid_credentials, for an unknown email too). A success uses
-- the ticket, clears the failures it counted (the address's count stands) and, with p_device_hash
-- (the sha-256 of the new poker_device cookie), knows the browser as a device of the account. Returns
-- the admin, the session's handle (sid, carried by the access JWTs minted for it) and its expiry.
create or replace function auth.create_session(p_ticket uuid, p_key bytea, p_token_hash bytea, p_ttl_seconds integer, p_device_hash bytea)
  returns table (user_id uuid, sid uuid, expires_at timestamptz)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_ticket auth_private.sign_in_tickets;
  v_credential auth_private.credentials;
begin
  if p_token_hash is null or length(p_token_hash) <> 32 or p_ttl_seconds is null or p_ttl_seconds not between 60 and 2592000
     or length(p_device_hash) <> 32 then
    perform auth_private.refuse('invalid_session_request', 'a 32-byte token hash, a ttl of 60 s..30 days, a 32-byte device hash or none');
  end if;
  delete from auth_private.sign_in_tickets t
   where t.ticket = p_ticket and t.created_at > now() - interval '1 minute' and t.bound_in <> txid_current()
  returning * into v_ticket;
  if v_ticket.ticket is null or p_key is null or v_ticket.key_hash <> sha256(p_key) then
    perform auth_private.refuse('invalid_attempt', 'the ticket of an attempt counted in an earlier transaction, for this key');
  end if;
  select * into v_credential from auth_private.credentials c where lower(c.email) = v_ticket.email;
  if v_credential.user_id is null or auth_private.password_key(v_credential.password_hash) is distinct from p_key then
    perform auth_private.refuse('invalid_credentials', 'no admin with this email and password');
  end if;
  delete from auth_private.sign_in_attempts a where a.bucket = any(v_ticket.buckets) and a.bucket not like 'peer:%';
  if p_device_hash is not null then
    insert into auth_private.sign_in_devices (token_hash, user_id) values (p_device_hash, v_credential.user_id) on conflict do nothing;
  end if;
  return query
  insert into auth_private.sessions as s (user_id, token_hash, expires_at)
  values (v_credential.user_id, p_token_hash, now() + make_interval(secs => p_ttl_seconds))
  returning s.user_id, s.sid, s.expires_at;
end;
$$;

-- The live session of a token: not expired, not revoked.
create or replace function auth.session_for(p_token_hash bytea)
  returns table (user_id uuid, email text, expires_at timestamptz, sid uuid)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select s.user_id, u.email, s.expires_at, s.sid
    from auth_private.sessions s join auth.users u on u.id = s.user_id
   where s.token_hash = p_token_hash and s.revoked_at is null and s.expires_at > now()
$$;

create or replace function auth.revoke_session(p_token_hash bytea) returns boolean
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  update auth_private.sessions s set revoked_at = now() where s.token_hash = p_token_hash and s.revoked_at is null;
  return found;
end;
$$;

-- The admin of the live session p_sid (exists, an admin's: the account holds admin credentials,
-- neither signed out nor expired), else null.
create or replace function auth_private.live_admin(p_sid uuid) returns uuid
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select s.user_id
    from auth_private.sessions s
    join auth_private.credentials c on c.user_id = s.user_id
   where s.sid = p_sid and s.revoked_at is null and s.expires_at > now()
$$;

-- The operator behind an act: the admin of the live session p_sid (the `sid` of the operator's
-- access JWT), refused with admin_session_required otherwise. Every operator function of every
-- domain derives its operator here, never from an id it is handed: no service login reads a
-- session's handle, so a stolen login cannot act as an operator.
create or replace function auth_private.admin_of_session(p_sid uuid) returns uuid
  language plpgsql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_user uuid := auth_private.live_admin(p_sid);
begin
  if v_user is null then
    perform auth_private.refuse('admin_session_required', 'a live admin session (the sid of an operator''s access JWT)');
  end if;
  return v_user;
end;
$$;

-- The operator the admin GraphQL reads as: the admin of the live session whose handle the request
-- set (`poker.admin_sid`, from the sid of the operator's verified access JWT), else null. Every row
-- poker_admin reads is behind it (db/policies/90_admin_reads.sql), so the GraphQL login, which may
-- become poker_admin, reads nothing without a live operator session behind the request.
create or replace function auth.current_admin() returns uuid
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select auth_private.live_admin(case when pg_input_is_valid(coalesce(current_setting('poker.admin_sid', true), ''), 'uuid')
                                      then current_setting('poker.admin_sid', true)::uuid end)
$$;

-- The grant of a player's access JWT being minted (KeyStore.sign): its handle (the token's `sid`)
-- and expiry (the token's own, plus the clock skew a verifier allows). Grants expired a day ago are
-- swept now and then.
create or replace function auth.grant_access(p_user_id uuid, p_ttl_seconds integer) returns uuid
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_sid uuid;
begin
  if p_user_id is null or p_ttl_seconds is null or p_ttl_seconds not between 1 and 86400 then
    perform auth_private.refuse('invalid_session_request', 'a user and a ttl of 1 s..1 day');
  end if;
  if random() < 0.01 then
    delete from auth_private.access_grants g where g.expires_at < now() - interval '1 day';
  end if;
  insert into auth_private.access_grants (user_id, expires_at) values (p_user_id, now() + make_interval(secs => p_ttl_seconds))
  returning sid into v_sid;
  return v_sid;
end;
$$;

-- The user a service acts for: the user of the live grant or admin session p_sid (the `sid` of the
-- access JWT the service verified), refused (session_required) for a made-up, expired or
-- signed-out handle. Every function a service login executes for a player derives the player here.
create or replace function auth_private.user_of_sid(p_sid uuid) returns uuid
  language plpgsql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_user uuid;
begin
  select g.user_id into v_user from auth_private.access_grants g where g.sid = p_sid and g.expires_at > now();
  v_user := coalesce(v_user, auth_private.live_admin(p_sid));
  if v_user is null then
    perform auth_private.refuse('session_required', 'the live grant of an access JWT (its sid)');
  end if;
  return v_user;
end;
$$;
