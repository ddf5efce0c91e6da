-- The bridge: the only way a poker user comes to exist. A returning identity (bridge record
-- present) needs no code; a new one needs a valid code, consumed in the same transaction that
-- creates the user and the bridge record, so a refused code creates nothing.
create or replace function auth.bridge_sign_in(
  p_auth_provider text, p_auth_provider_user_id text, p_email text, p_invite_code text
) returns table (user_id uuid, email text, created boolean)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_user auth.users;
begin
  if p_auth_provider is null or length(p_auth_provider) not between 1 and 64
     or p_auth_provider_user_id is null or length(p_auth_provider_user_id) not between 1 and 255 then
    perform auth_private.refuse('invalid_identity', 'provider 1..64 chars, provider user id 1..255 chars');
  end if;

  select u.* into v_user
    from auth.bridge_identities b join auth.users u on u.id = b.user_id
   where b.auth_provider = p_auth_provider and b.auth_provider_user_id = p_auth_provider_user_id;
  if v_user.id is not null then
    return query select v_user.id, v_user.email, false;
    return;
  end if;

  if p_invite_code is null or p_invite_code = '' then
    perform auth_private.refuse('invite_required', 'first sign-in of this identity needs an invite code');
  end if;
  begin
    perform auth_private.consume_invite(p_invite_code);
  exception when sqlstate 'AUINV' then
    -- The code may have been used up by a twin sign-in of this same identity that committed
    -- after our look above (its last use, which our consumption waited for): that twin made the
    -- user, so this is a returning sign-in, not a refusal.
    select u.* into v_user
      from auth.bridge_identities b join auth.users u on u.id = b.user_id
     where b.auth_provider = p_auth_provider and b.auth_provider_user_id = p_auth_provider_user_id;
    if v_user.id is null then
      raise;
    end if;
    return query select v_user.id, v_user.email, false;
    return;
  end;

  perform set_config('auth.user_creation_path', 'bridge', true);
  insert into auth.users as u (email) values (nullif(p_email, '')) returning u.* into v_user;
  perform set_config('auth.user_creation_path', '', true);
  insert into auth.bridge_identities (user_id, auth_provider, auth_provider_user_id)
  values (v_user.id, p_auth_provider, p_auth_provider_user_id)
  on conflict on constraint bridge_identities_one_user_per_identity do nothing;
  if not found then
    -- The same identity signed in concurrently and won: roll all of this back (the code's use
    -- included) and let the caller retry, which finds the bridge record and needs no code.
    raise exception using errcode = '40001', message = 'identity created concurrently; retry';
  end if;
  return query select v_user.id, v_user.email, true;
end;
$$;

-- The admin command's user (email/password). Never reachable from HTTP.
create or replace function auth.create_admin(p_email text, p_password_hash text) returns uuid
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_id uuid;
begin
  if p_email is null or p_email not like '%@%' or length(p_email) > 320 or p_password_hash is null then
    perform auth_private.refuse('invalid_identity', 'an email address and a password hash');
  end if;
  perform set_config('auth.user_creation_path', 'admin_command', true);
  insert into auth.users (email) values (p_email) returning id into v_id;
  perform set_config('auth.user_creation_path', '', true);
  insert into auth_private.credentials (user_id, email, password_hash) values (v_id, p_email, p_password_hash);
  return v_id;
end;
$$;

-- Whether a user is an operator: an account made by the admin command, holding admin credentials.
-- Read by the other domains' operator functions (the cage's money acts, the claim board's catalog).
create or replace function auth_private.is_operator(p_user_id uuid) returns boolean
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select p_user_id is not null and exists (select from auth_private.credentials c where c.user_id = p_user_id)
$$;
