-- Admin sessions: opaque random tokens, stored only as their sha-256.
create or replace function auth.admin_credentials(p_email text)
  returns table (user_id uuid, password_hash text)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select c.user_id, c.password_hash from auth_private.credentials c where lower(c.email) = lower(p_email)
$$;

create or replace function auth.create_session(p_user_id uuid, p_token_hash bytea, p_ttl_seconds integer)
  returns timestamptz
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_expires timestamptz;
begin
  if p_token_hash is null or length(p_token_hash) <> 32 or p_ttl_seconds is null or p_ttl_seconds not between 60 and 2592000
     or not exists (select from auth_private.credentials c where c.user_id = p_user_id) then
    perform auth_private.refuse('invalid_session_request', 'an admin user, a 32-byte token hash, a ttl of 60 s..30 days');
  end if;
  insert into auth_private.sessions as s (user_id, token_hash, expires_at)
  values (p_user_id, p_token_hash, now() + make_interval(secs => p_ttl_seconds))
  returning s.expires_at into v_expires;
  return v_expires;
end;
$$;

-- The live session of a token: not expired, not revoked.
create or replace function auth.session_for(p_token_hash bytea)
  returns table (user_id uuid, email text, expires_at timestamptz)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select s.user_id, u.email, s.expires_at
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
