-- One table, one dealer: game processes, table leases and the fence on hand boundaries.
--
-- A process is present while its presence lock (a session advisory lock on its own connection) is
-- held by the backend that registered it: Postgres frees it the moment that connection dies, so a
-- killed process is gone at once. A process is who its connection proves: the lease functions act
-- for the calling connection's process (game_private.calling_process), never for an id they are
-- given, and its public URL is one the operators listed (game.process_urls).
-- A lease is live while its holder is present and it has not expired (the TTL is the backstop for
-- a holder that is present but no longer renews: hung, or cut off from its clients). Every change
-- of a lease's tenure (take, takeover, recovery) locks the table row first, the lock every hand
-- boundary takes, so a fence check made under that lock cannot be overtaken.

-- The first key of every presence lock ('game' in ASCII); the second is the process's lock_key.
create or replace function game_private.presence_namespace() returns integer
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select 1734438245
$$;

-- Whether the process holds its presence lock now (in this database), on the backend that
-- registered it: a lock on the same keys taken by any other backend proves nothing.
create or replace function game_private.process_present(p_process uuid) returns boolean
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select exists (
    select from game.game_processes gp
      join pg_locks l on l.locktype = 'advisory' and l.granted and l.objsubid = 2 and l.pid = gp.backend_pid
       and l.database = (select d.oid from pg_database d where d.datname = current_database())
       and l.classid = game_private.presence_namespace()::oid and l.objid = gp.lock_key::oid
     where gp.id = p_process)
$$;

-- The process of the calling connection: the one this backend registered, whose nonce this
-- session still holds and whose presence lock this backend holds. Null for any other connection
-- (a thief's, whatever id it read and whatever keys it locked).
create or replace function game_private.calling_process() returns uuid
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select gp.id from game.game_processes gp
   where gp.backend_pid = pg_backend_pid()
     and gp.presence_hash = sha256(convert_to(coalesce(current_setting('game_private.presence', true), ''), 'UTF8'))
     and game_private.process_present(gp.id)
$$;

-- The calling connection's process, or the refusal game_process_gone.
create or replace function game_private.require_calling_process() returns uuid
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_process uuid := game_private.calling_process();
begin
  if v_process is null then
    perform game_private.refuse('game_process_gone', 'this connection is no registered game process (a process acts on the connection that registered it)');
  end if;
  return v_process;
end;
$$;

-- A URL a process may announce: null (not known yet), or one the operators listed.
create or replace function game_private.check_process_url(p_url text) returns void
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
begin
  if p_url is not null and not exists (select from game.process_urls u where u.url = p_url) then
    perform game_private.refuse('process_url_unlisted', format('%s is not on the operators'' list of game process URLs (npm run ops -- process-url add)', left(p_url, 500)));
  end if;
end;
$$;

-- A fresh secret (two random UUIDs: 244 random bits), for a nonce or a succession secret.
create or replace function game_private.new_secret() returns text
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  select replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', '')
$$;

-- Binds the process row to the calling backend: its presence lock (on a key drawn at random from
-- 2^31: keys a thief holds are passed over), a nonce set in this session only, and a new
-- succession secret (returned).
create or replace function game_private.bind_process(p_process uuid) returns table (lock_key integer, succession text)
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_key integer;
  v_nonce text := game_private.new_secret();
  v_succession text := game_private.new_secret();
begin
  for i in 1..64 loop
    v_key := 1 + floor(random() * 2147483646)::integer;
    exit when not exists (select from game.game_processes gp where gp.lock_key = v_key)
              and pg_try_advisory_lock(game_private.presence_namespace(), v_key);
    if i = 64 then
      perform game_private.refuse('game_process_gone', 'no free presence lock key');
    end if;
  end loop;
  perform set_config('game_private.presence', v_nonce, false);
  update game.game_processes gp
     set lock_key = v_key, backend_pid = pg_backend_pid(), presence_hash = sha256(convert_to(v_nonce, 'UTF8')),
         succession_hash = sha256(convert_to(v_succession, 'UTF8'))
   where gp.id = p_process;
  return query select v_key, v_succession;
end;
$$;

-- Whether a lease still binds its table: a present holder that has renewed in time.
create or replace function game_private.lease_live(p_lease game.table_leases) returns boolean
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select p_lease.holder is not null and p_lease.expires_at > now() and game_private.process_present(p_lease.holder)
$$;

-- The URL clients are sent to for a process: its own, while the operators' list still has it.
create or replace function game_private.listed_url(p_process uuid) returns text
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select gp.url from game.game_processes gp join game.process_urls u on u.url = gp.url where gp.id = p_process
$$;

-- The fence. A hand boundary must carry the current epoch of the table's lease: a table no room has
-- taken (no lease row) and a null epoch are refused (lease_lost), so a service login cannot deal on
-- a table no process runs. The caller holds the table row lock.
create or replace function game_private.check_lease(p_table_id text, p_epoch bigint) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_epoch bigint;
begin
  -- every hand boundary runs under a lease: a table nobody has taken has no hand to begin or end
  -- (a null epoch is never a pass)
  select l.epoch into v_epoch from game.table_leases l where l.table_id = p_table_id;
  if not found then
    perform game_private.refuse('lease_lost', format('table %s has no lease', p_table_id));
  end if;
  if p_epoch is null or p_epoch <> v_epoch then
    perform game_private.refuse('lease_lost', format('table %s is run under epoch %s, not %s', p_table_id, v_epoch, p_epoch));
  end if;
end;
$$;

-- The table of a hand boundary, locked, under the caller's lease: game_private.lock_table and
-- game_private.check_lease in one statement (issue 33: every boundary ran the two, each a function
-- call and a statement, twice a hand). The same refusals in the same order: table_not_found, then
-- lease_lost, made by check_lease itself when the lease read here does not pass (its epoch moves only
-- under the table's lock, held here: take_lease, end_tenure; so it reads the same row and refuses).
-- The lease row is read, not locked, as check_lease reads it.
create or replace function game_private.lock_leased(p_table_id text, p_epoch bigint) returns game.tables
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  r record;
begin
  select t as tab, l.epoch as epoch, l.table_id is not null as leased into r
    from game.tables t left join game.table_leases l on l.table_id = t.table_id
   where t.table_id = p_table_id
     for update of t;
  if not found then
    perform game_private.refuse('table_not_found', format('table %s', p_table_id));
  end if;
  if not r.leased or p_epoch is null or p_epoch <> r.epoch then
    perform game_private.check_lease(p_table_id, p_epoch);
  end if;
  return r.tab;
end;
$$;

-- Ends the tenure of a lease whose holder is gone: the hand it left is abandoned (the stacks of its
-- start stand) and the epoch moves on, so anything the old holder still sends is refused. Returns
-- the abandoned hand. The caller holds the table row lock.
create or replace function game_private.end_tenure(p_table_id text) returns text
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_lease game.table_leases;
  v_hand text;
begin
  select * into v_lease from game.table_leases l where l.table_id = p_table_id for update;
  v_hand := game.abandon_hand(p_table_id, v_lease.epoch);
  update game.table_leases l set holder = null, epoch = l.epoch + 1, expires_at = now() where l.table_id = p_table_id;
  return v_hand;
end;
$$;

-- A table found holding a hand: if the hand was begun under a lease whose holder is gone, it is
-- recovered here, by whichever game process touches the table next (a seat call from the cage).
-- Returns the table as it now stands.
create or replace function game_private.recover_orphaned_hand(p_table game.tables) returns game.tables
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_lease game.table_leases;
  v_table game.tables;
begin
  if p_table.current_hand_id is null then
    return p_table;
  end if;
  select * into v_lease from game.table_leases l where l.table_id = p_table.table_id;
  if v_lease.table_id is null or game_private.lease_live(v_lease) then
    return p_table;
  end if;
  perform game_private.end_tenure(p_table.table_id);
  select * into v_table from game.tables t where t.table_id = p_table.table_id;
  return v_table;
end;
$$;

-- Registers the calling connection as a game process, which keeps it open for its life (its
-- presence). The id is made here; p_url is null or on the operators' list. A process whose
-- connection was lost comes back under its id with the succession secret its last registration
-- returned (p_succession): its leases stand, if nobody took them meanwhile. Processes that are gone
-- are forgotten (their leases lose their holder). Returns the id and the next succession secret.
create or replace function game.register_process(p_url text, p_succession text default null)
  returns table (process_id uuid, lock_key integer, succession text)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_process uuid;
  v_bound record;
begin
  perform game_private.check_process_url(p_url);
  if game_private.calling_process() is not null then
    perform game_private.refuse('process_already_registered', 'this connection is a game process already');
  end if;
  if p_succession is not null then
    select gp.id into v_process from game.game_processes gp where gp.succession_hash = sha256(convert_to(p_succession, 'UTF8'));
    if v_process is not null and game_private.process_present(v_process) then
      perform game_private.refuse('game_process_gone', format('process %s is present on another connection', v_process));
    end if;
  end if;
  delete from game.game_processes gp where gp.id is distinct from v_process and not game_private.process_present(gp.id);
  if v_process is null then
    insert into game.game_processes as gp (url) values (p_url) returning gp.id into v_process;
  elsif p_url is not null then
    update game.game_processes gp set url = p_url where gp.id = v_process;
  end if;
  select * into v_bound from game_private.bind_process(v_process) b;
  return query select v_process, v_bound.lock_key, v_bound.succession;
end;
$$;

-- The URL clients are sent to for the tables the calling process runs (known once it listens):
-- one on the operators' list.
create or replace function game.set_process_url(p_url text) returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  if p_url is null then
    perform game_private.refuse('invalid_table', 'a process url');
  end if;
  perform game_private.check_process_url(p_url);
  update game.game_processes gp set url = p_url where gp.id = game_private.require_calling_process();
end;
$$;

-- A clean stop of the calling process: its row goes (its leases lose their holder; release them
-- first), and its presence lock with it.
create or replace function game.unregister_process() returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_key integer;
begin
  delete from game.game_processes gp where gp.id = game_private.require_calling_process() returning gp.lock_key into v_key;
  perform pg_advisory_unlock(game_private.presence_namespace(), v_key);
  perform set_config('game_private.presence', '', false);
end;
$$;

-- A room loads: the calling process takes the table for a new tenure (epoch + 1) unless another
-- process holds a live lease on it (granted = false, with that holder's URL). A hand the previous
-- tenure left is abandoned (recovered_hand): the stacks of its start stand.
create or replace function game.take_lease(p_table_id text, p_ttl_seconds integer)
  returns table (granted boolean, epoch bigint, holder_url text, recovered_hand text)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_process uuid := game_private.require_calling_process();
  v_table game.tables;
  v_lease game.table_leases;
  v_hand text;
begin
  if p_ttl_seconds is null or p_ttl_seconds not between 1 and 3600 then
    perform game_private.refuse('invalid_table', 'a lease lasts 1..3600 seconds');
  end if;
  v_table := game_private.lock_table(p_table_id);
  insert into game.table_leases (table_id) values (p_table_id) on conflict (table_id) do nothing;
  select * into v_lease from game.table_leases l where l.table_id = p_table_id for update;
  if v_lease.holder is distinct from v_process and game_private.lease_live(v_lease) then
    return query select false, v_lease.epoch, game_private.listed_url(v_lease.holder), null::text;
    return;
  end if;
  if v_table.current_hand_id is not null then
    v_hand := game.abandon_hand(p_table_id, v_lease.epoch);
  end if;
  update game.table_leases l
     set holder = v_process, epoch = l.epoch + 1, taken_at = now(), expires_at = now() + make_interval(secs => p_ttl_seconds)
   where l.table_id = p_table_id
  returning l.* into v_lease;
  return query select true, v_lease.epoch, game_private.listed_url(v_process), v_hand;
end;
$$;

-- The calling process renews the leases it runs (one call for all of them); returns the tables it
-- has lost (taken over, or recovered after expiring), whose rooms must stop.
create or replace function game.renew_leases(p_table_ids text[], p_epochs bigint[], p_ttl_seconds integer)
  returns setof text
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_process uuid := game_private.require_calling_process();
begin
  if p_ttl_seconds is null or p_ttl_seconds not between 1 and 3600
     or coalesce(cardinality(p_table_ids), 0) <> coalesce(cardinality(p_epochs), 0) then
    perform game_private.refuse('invalid_table', 'tables and epochs pair up; a lease lasts 1..3600 seconds');
  end if;
  return query
    with mine as (select m.table_id, m.epoch from unnest(p_table_ids, p_epochs) as m (table_id, epoch)),
         renewed as (
           update game.table_leases l set expires_at = now() + make_interval(secs => p_ttl_seconds)
             from mine m
            where l.table_id = m.table_id and l.epoch = m.epoch and l.holder = v_process
           returning l.table_id)
    select m.table_id from mine m where m.table_id not in (select r.table_id from renewed r) order by m.table_id;
end;
$$;

-- The room stops (a clean stop, or it unloads): the calling process lets the lease go, and a hand
-- still in progress is abandoned now rather than left for a recovery (the stacks of its start
-- stand). Releasing a lease that is no longer this tenure's changes nothing. Returns the abandoned hand.
create or replace function game.release_lease(p_table_id text, p_epoch bigint) returns text
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_process uuid := game_private.require_calling_process();
  v_table game.tables;
  v_hand text;
begin
  v_table := game_private.lock_table(p_table_id);
  if not exists (select from game.table_leases l where l.table_id = p_table_id and l.holder = v_process and l.epoch = p_epoch) then
    return null;
  end if;
  if v_table.current_hand_id is not null then
    v_hand := game.abandon_hand(p_table_id, p_epoch);
  end if;
  update game.table_leases l set holder = null, expires_at = now() where l.table_id = p_table_id;
  return v_hand;
end;
$$;

-- At a game process's start, before it answers anything: every table holding a hand that no live
-- lease covers (its holder is gone, or let the lease expire, or no room ever ran it) is released,
-- the hand abandoned (the stacks of its start stand). One table at a time, in table order.
create or replace function game.recover_interrupted_hands()
  returns table (table_id text, hand_id text)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_id text;
  v_table game.tables;
  v_lease game.table_leases;
begin
  for v_id in select t.table_id from game.tables t
                where t.current_hand_id is not null
                  and not exists (select from game.table_leases l where l.table_id = t.table_id and game_private.lease_live(l))
                order by t.table_id loop
    v_table := game_private.lock_table(v_id);
    select * into v_lease from game.table_leases l where l.table_id = v_id;
    continue when v_table.current_hand_id is null or (v_lease.table_id is not null and game_private.lease_live(v_lease));
    table_id := v_id;
    if v_lease.table_id is null then
      -- a hand under no lease (none can begin now; one left by an older release): abandoned here
      perform game_private.abandon_current_hand(v_table);
      hand_id := v_table.current_hand_id;
    else
      hand_id := game_private.end_tenure(v_id);
    end if;
    return next;
  end loop;
end;
$$;

-- Who runs a table now: the live holder and its URL (null unless on the operators' list), or no
-- row (any game process may take it).
create or replace function game.lease_holder(p_table_id text)
  returns table (epoch bigint, holder uuid, holder_url text)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select l.epoch, l.holder, game_private.listed_url(l.holder)
    from game.table_leases l
   where l.table_id = p_table_id and game_private.lease_live(l)
$$;

-- The operators' list of game process URLs (a live admin session): add one (idempotent; returns
-- whether it was new) ...
create or replace function game.allow_process_url(p_sid uuid, p_url text) returns boolean
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_admin uuid := auth_private.admin_of_session(p_sid);
  v_new boolean;
begin
  if p_url is null or length(p_url) > 500 or p_url !~ '^https?://[^[:space:]]+$' then
    perform game_private.refuse('invalid_table', 'a process url is http(s), at most 500 characters, no spaces');
  end if;
  insert into game.process_urls (url, added_by) values (p_url, v_admin) on conflict (url) do nothing;
  get diagnostics v_new = row_count;
  return v_new;
end;
$$;

-- ... remove one (returns whether it was there): clients are no longer sent there at once, and
-- no process registers with it again ...
create or replace function game.forbid_process_url(p_sid uuid, p_url text) returns boolean
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_admin uuid := auth_private.admin_of_session(p_sid);
  v_gone boolean;
begin
  delete from game.process_urls u where u.url = p_url;
  get diagnostics v_gone = row_count;
  return v_gone and v_admin is not null;
end;
$$;

-- ... and read it, with the live processes announcing each URL.
create or replace function game.process_url_list(p_sid uuid)
  returns table (url text, added_by uuid, added_at timestamptz, processes integer)
  language plpgsql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  perform auth_private.admin_of_session(p_sid);
  return query
    select u.url, u.added_by, u.added_at,
           (select count(*)::integer from game.game_processes gp where gp.url = u.url and game_private.process_present(gp.id))
      from game.process_urls u order by u.url;
end;
$$;
