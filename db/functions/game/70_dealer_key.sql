-- The dealer's pinned public keys (issue 31; migration 000044). The private key lives with the game
-- process that signs (GAME_DEALER_KEY, or outside production a key file: server/crypto/key-files.ts);
-- the database keeps the public halves a hand record may be signed with. Pinning and retiring a key
-- is an operator act (a live admin session) or the owner's (the development start, a migration):
-- never the game login's, so a stolen game login cannot make its own key one the audit accepts.

-- Every pinned key, retired ones included (a hand signed while a key was in use still verifies):
-- for the audit, GET /api/dealer/key and the game role's start (it refuses to sign with a key that is
-- not pinned).
create or replace function game.dealer_public_keys()
  returns table (public_key text, pinned_at timestamptz, pinned_by text, retired_at timestamptz)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select k.public_key, k.pinned_at, k.pinned_by, k.retired_at
    from game_private.dealer_public_keys k
   order by k.pinned_at, k.public_key
$$;

-- Pins a key (idempotent; a retired key is not pinned again). p_by: who, for the record.
create or replace function game_private.pin_dealer_key(p_public_key text, p_by text)
  returns table (public_key text, pinned_at timestamptz, pinned_by text, retired_at timestamptz)
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  if p_public_key is null or p_public_key !~ '^[0-9a-f]{64}$' then
    perform game_private.refuse('invalid_dealer_key', 'a dealer public key is 64 lowercase hex characters (ed25519)');
  end if;
  insert into game_private.dealer_public_keys as k (public_key, pinned_by) values (p_public_key, p_by)
  on conflict on constraint dealer_public_keys_pkey do nothing;
  return query select k.public_key, k.pinned_at, k.pinned_by, k.retired_at
                 from game_private.dealer_public_keys k where k.public_key = p_public_key;
end;
$$;

-- An operator pins a dealer key (the public half of a new GAME_DEALER_KEY, before the game processes
-- start with it): p_sid is the operator's live admin session.
create or replace function game.pin_dealer_key(p_sid uuid, p_public_key text)
  returns table (public_key text, pinned_at timestamptz, pinned_by text, retired_at timestamptz)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_admin uuid := auth_private.admin_of_session(p_sid);
begin
  return query select * from game_private.pin_dealer_key(lower(p_public_key), 'admin:' || v_admin::text);
end;
$$;

-- An operator retires a dealer key: hands ended after now signed with it no longer verify.
create or replace function game.retire_dealer_key(p_sid uuid, p_public_key text)
  returns table (public_key text, pinned_at timestamptz, pinned_by text, retired_at timestamptz)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_admin uuid := auth_private.admin_of_session(p_sid);
begin
  update game_private.dealer_public_keys k set retired_at = now(), retired_by = 'admin:' || v_admin::text
   where k.public_key = lower(p_public_key) and k.retired_at is null;
  if not exists (select from game_private.dealer_public_keys k where k.public_key = lower(p_public_key)) then
    perform game_private.refuse('dealer_key_not_pinned', 'no such dealer key is pinned');
  end if;
  return query select k.public_key, k.pinned_at, k.pinned_by, k.retired_at
                 from game_private.dealer_public_keys k where k.public_key = lower(p_public_key);
end;
$$;

-- Operator acts of the admin role's own routes (POST /api/dealer-keys), not of its read-only GraphQL.
comment on function game.pin_dealer_key(uuid, text) is E'@behavior -mutationField -queryField -typeField\nAn operator pins a dealer public key (POST /api/dealer-keys).';
comment on function game.retire_dealer_key(uuid, text) is E'@behavior -mutationField -queryField -typeField\nAn operator retires a dealer public key (POST /api/dealer-keys).';
