-- Legacy password recovery, for the only accounts that have a password (admins). A reset token is
-- stored as its sha-256 in verifications (`reset:<hex>`); using it is one DELETE, so it works once.
create or replace function auth.request_password_reset(p_email text, p_token_hash bytea, p_ttl_seconds integer)
  returns uuid
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_user uuid;
begin
  if p_token_hash is null or length(p_token_hash) <> 32 or p_ttl_seconds is null or p_ttl_seconds not between 60 and 86400 then
    perform auth_private.refuse('invalid_nonce_request', 'a 32-byte token hash and a ttl of 60 s..1 day');
  end if;
  select c.user_id into v_user from auth_private.credentials c where lower(c.email) = lower(p_email);
  if v_user is null then
    return null; -- the caller answers exactly as for a known email
  end if;
  insert into auth_private.verifications (identifier, value, expires_at)
  values ('reset:' || encode(p_token_hash, 'hex'), v_user::text, now() + make_interval(secs => p_ttl_seconds));
  return v_user;
end;
$$;

-- Looks a reset token up without using it, so the route refuses an unknown, used or expired token
-- before it spends a scrypt on the new password (issue 10). auth.reset_password checks again,
-- atomically: this is the cheap early answer, not the rule.
create or replace function auth.check_reset_token(p_token_hash bytea) returns void
  language plpgsql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_expires timestamptz;
begin
  select v.expires_at into v_expires from auth_private.verifications v
   where v.identifier = 'reset:' || encode(p_token_hash, 'hex') and v.requested_by is null;
  if v_expires is null then
    perform auth_private.refuse('reset_token_invalid', 'unknown or already used');
  end if;
  if v_expires <= now() then
    perform auth_private.refuse('reset_token_expired');
  end if;
end;
$$;

-- Uses a reset token: sets the new password hash and revokes every session of the user.
create or replace function auth.reset_password(p_token_hash bytea, p_password_hash text) returns uuid
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_value text;
  v_expires timestamptz;
  v_user uuid;
begin
  delete from auth_private.verifications v where v.identifier = 'reset:' || encode(p_token_hash, 'hex')
  returning v.value, v.expires_at into v_value, v_expires;
  if v_value is null then
    perform auth_private.refuse('reset_token_invalid', 'unknown or already used');
  end if;
  if v_expires <= now() then
    perform auth_private.refuse('reset_token_expired');
  end if;
  v_user := v_value::uuid;
  update auth_private.credentials c set password_hash = p_password_hash, updated_at = now() where c.user_id = v_user;
  update auth_private.sessions s set revoked_at = now() where s.user_id = v_user and s.revoked_at is null;
  return v_user;
end;
$$;
