-- Legacy password recovery, for the only accounts that have a password (admins). A reset token is
-- stored as its sha-256 in verifications (`reset:<hex>`); using it is one DELETE, so it works once.
-- A reset for the admin with this email (nothing for another: the caller answers the same): the
-- token is made here and stored as its sha-256; it leaves only sealed, in the mail job the worker
-- sends (`send_password_reset`: { to, redirect, sealed }, sealed = RSA-OAEP to the worker's pinned
-- mail key of the 32 token bytes and the sha-256 of `to`, a newline and `redirect`), so neither the
-- auth login (it reads no job) nor the worker login (it reads the job, not the worker's key) ever
-- holds a token it could use, and the sealed token opens only for the mail and link it was made for.
-- At most five unused, unexpired resets stand per admin (a flood of requests queues no more mail).
-- Nothing is queued while no mail key is pinned. Returns whether a mail was queued.
create or replace function auth.request_password_reset(p_email text, p_redirect text, p_ttl_seconds integer)
  returns boolean
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_user uuid;
  v_email text;
  v_raw bytea := auth_private.random_32();
  v_token text;
  v_sealed text;
begin
  if p_redirect is null or p_redirect !~ '^https?://' or length(p_redirect) > 2000 or p_ttl_seconds is null or p_ttl_seconds not between 60 and 86400 then
    perform auth_private.refuse('invalid_nonce_request', 'an absolute redirect and a ttl of 60 s..1 day');
  end if;
  select c.user_id, c.email into v_user, v_email from auth_private.credentials c where lower(c.email) = lower(p_email);
  if v_user is null
     or (select count(*) from auth_private.verifications v
          where v.identifier like 'reset:%' and v.requested_by is null and v.value = v_user::text and v.expires_at > now()) >= 5 then
    return false; -- the caller answers exactly as for a known email
  end if;
  v_sealed := auth_private.seal_for_worker(v_raw || sha256(convert_to(v_email || E'\n' || p_redirect, 'UTF8')));
  if v_sealed is null then
    return false; -- no mail key pinned: nothing could open the mail
  end if;
  v_token := rtrim(translate(encode(v_raw, 'base64'), '+/', '-_'), '=');
  insert into auth_private.verifications (identifier, value, expires_at)
  values ('reset:' || encode(sha256(convert_to(v_token, 'UTF8')), 'hex'), v_user::text, now() + make_interval(secs => p_ttl_seconds));
  perform graphile_worker.add_job('send_password_reset',
    json_build_object('to', v_email, 'redirect', p_redirect, 'sealed', replace(v_sealed, E'\n', '')), max_attempts => 5);
  return true;
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
