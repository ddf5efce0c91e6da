-- JWT signing keys. Adding a key retires the others (rotation); a retired key stays published for
-- the caller's window (the token lifetime plus skew) so the tokens it signed verify until they expire.
create or replace function auth.add_signing_key(p_kid text, p_public_jwk jsonb, p_private_key_encrypted bytea)
  returns timestamptz
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_created timestamptz;
begin
  if p_kid is null or length(p_kid) not between 8 and 128 or p_public_jwk is null or p_public_jwk ? 'd'
     or p_private_key_encrypted is null or length(p_private_key_encrypted) < 29 then
    perform auth_private.refuse('invalid_signing_key', 'kid 8..128 chars, a public JWK without private parts, an encrypted private key');
  end if;
  -- one rotation at a time: two auth processes booting together must not both stay active
  perform pg_advisory_xact_lock(hashtext('auth.signing_keys'));
  update auth_private.signing_keys k set retired_at = now() where k.retired_at is null;
  insert into auth_private.signing_keys as k (kid, public_jwk, private_key_encrypted)
  values (p_kid, p_public_jwk, p_private_key_encrypted)
  returning k.created_at into v_created;
  return v_created;
end;
$$;

-- The active key first, then the retired keys still inside the publication window.
create or replace function auth.signing_keys(p_publish_window_seconds integer)
  returns table (kid text, public_jwk jsonb, private_key_encrypted bytea, created_at timestamptz, retired_at timestamptz)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select k.kid, k.public_jwk, k.private_key_encrypted, k.created_at, k.retired_at
    from auth_private.signing_keys k
   where k.retired_at is null or k.retired_at > now() - make_interval(secs => p_publish_window_seconds)
   order by k.retired_at is not null, k.created_at desc
$$;
