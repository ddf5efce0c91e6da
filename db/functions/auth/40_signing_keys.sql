-- The JWT signing keys' public halves, as the JWKS publishes them: the pinned jwt keys
-- (cage_private.pinned_keys, 000039: pinned by an operator or the owner, never by the auth login),
-- the active ones first, then the retired ones still inside the publication window (the token
-- lifetime plus skew), so the tokens a retired key signed verify until they expire. The private key
-- is the auth process's own (AUTH_JWT_KEY, or its development file): never in the database.
create or replace function auth.jwt_public_keys(p_publish_window_seconds integer)
  returns table (public_key bytea, pinned_at timestamptz, retired_at timestamptz)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select k.public_key, k.pinned_at, k.retired_at
    from cage_private.pinned_keys k
   where k.purpose = 'jwt'
     and (k.retired_at is null or k.retired_at > now() - make_interval(secs => least(greatest(p_publish_window_seconds, 0), 86400)))
   order by k.retired_at is not null, k.id desc
$$;
