-- The pinned public keys (000039, docs/security.md "Keys"): receipt, jwt, arbiter. Pinning and
-- retiring are an operator's acts (a live admin session: cage.pin_key, cage.retire_key, what
-- `npm run ops -- keys` calls through the cage) or the owner's (cage_private.pin_key with no admin:
-- a migration, `npm start` outside production, `npm run ops -- keys --owner`). No service login pins.

-- Pins p_public_key for p_purpose, by the operator p_admin (null: the owner). Pinning a pinned key
-- replays it; a retired key is never pinned again (key_retired): a retired key may have leaked.
create or replace function cage_private.pin_key(p_admin uuid, p_purpose text, p_public_key bytea)
  returns table (purpose text, public_key bytea, pinned_at timestamptz, pinned_by uuid, retired_at timestamptz, retired_by uuid, replayed boolean)
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_key cage_private.pinned_keys;
begin
  if p_purpose is null or p_purpose not in ('receipt', 'jwt', 'arbiter') or p_public_key is null or length(p_public_key) <> 32 then
    perform cage_private.refuse('invalid_key', 'a purpose (receipt, jwt, arbiter) and a 32-byte ed25519 public key');
  end if;
  insert into cage_private.pinned_keys as k (purpose, public_key, pinned_by) values (p_purpose, p_public_key, p_admin)
  on conflict on constraint pinned_keys_once do nothing
  returning k.* into v_key;
  if v_key.id is not null then
    return query select v_key.purpose, v_key.public_key, v_key.pinned_at, v_key.pinned_by, v_key.retired_at, v_key.retired_by, false;
    return;
  end if;
  select k.* into v_key from cage_private.pinned_keys k where k.purpose = p_purpose and k.public_key = p_public_key;
  if v_key.retired_at is not null then
    perform cage_private.refuse('key_retired', format('this %s key was retired at %s: pin a new one', p_purpose, v_key.retired_at));
  end if;
  return query select v_key.purpose, v_key.public_key, v_key.pinned_at, v_key.pinned_by, v_key.retired_at, v_key.retired_by, true;
end;
$$;

-- Retires the pinned key, by the operator p_admin (null: the owner): nothing new is accepted under
-- it (receipts, releases; a jwt key stays published for its tokens' lifetime). Replays when retired.
create or replace function cage_private.retire_key(p_admin uuid, p_purpose text, p_public_key bytea)
  returns table (purpose text, public_key bytea, pinned_at timestamptz, pinned_by uuid, retired_at timestamptz, retired_by uuid, replayed boolean)
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_key cage_private.pinned_keys;
  v_replayed boolean;
begin
  select k.* into v_key from cage_private.pinned_keys k where k.purpose = p_purpose and k.public_key = p_public_key for update;
  if v_key.id is null then
    perform cage_private.refuse('key_not_pinned', format('no pinned %s key %s', p_purpose, encode(p_public_key, 'hex')));
  end if;
  v_replayed := v_key.retired_at is not null;
  if not v_replayed then
    update cage_private.pinned_keys k set retired_at = now(), retired_by = p_admin where k.id = v_key.id returning k.* into v_key;
  end if;
  return query select v_key.purpose, v_key.public_key, v_key.pinned_at, v_key.pinned_by, v_key.retired_at, v_key.retired_by, v_replayed;
end;
$$;

-- An operator's pin (POST /api/operator/keys): the admin of the live session p_sid.
create or replace function cage.pin_key(p_sid uuid, p_purpose text, p_public_key bytea)
  returns table (purpose text, public_key bytea, pinned_at timestamptz, pinned_by uuid, retired_at timestamptz, retired_by uuid, replayed boolean)
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$ select * from cage_private.pin_key(auth_private.admin_of_session(p_sid), p_purpose, p_public_key) $$;

-- An operator's retirement (POST /api/operator/keys): the admin of the live session p_sid.
create or replace function cage.retire_key(p_sid uuid, p_purpose text, p_public_key bytea)
  returns table (purpose text, public_key bytea, pinned_at timestamptz, pinned_by uuid, retired_at timestamptz, retired_by uuid, replayed boolean)
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$ select * from cage_private.retire_key(auth_private.admin_of_session(p_sid), p_purpose, p_public_key) $$;

-- The pinned keys of a purpose (null: every purpose), active ones first: public values, what the
-- cage checks its receipt key and the arbiter's signatures against, and the worker's audit reads.
create or replace function cage.pinned_keys(p_purpose text)
  returns table (purpose text, public_key bytea, pinned_at timestamptz, pinned_by uuid, retired_at timestamptz, retired_by uuid)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select k.purpose, k.public_key, k.pinned_at, k.pinned_by, k.retired_at, k.retired_by
    from cage_private.pinned_keys k
   where p_purpose is null or k.purpose = p_purpose
   order by k.purpose, k.retired_at is not null, k.id
$$;

-- True when p_public_key is an active (pinned, not retired) key of p_purpose.
create or replace function cage_private.key_is_active(p_purpose text, p_public_key bytea) returns boolean
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select exists (select from cage_private.pinned_keys k where k.purpose = p_purpose and k.public_key = p_public_key and k.retired_at is null)
$$;
