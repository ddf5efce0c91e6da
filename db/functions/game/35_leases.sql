-- One table, one dealer: game processes, table leases and the fence on hand boundaries.
--
-- A process is present while its presence lock (a session advisory lock on its own connection) is
-- held: Postgres frees it the moment that connection dies, so a killed process is gone at once.
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

-- Whether the process holds its presence lock now (in this database).
create or replace function game_private.process_present(p_process uuid) returns boolean
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select exists (
    select from game.game_processes gp
      join pg_locks l on l.locktype = 'advisory' and l.granted and l.objsubid = 2
       and l.database = (select d.oid from pg_database d where d.datname = current_database())
       and l.classid = game_private.presence_namespace()::oid and l.objid = gp.lock_key::oid
     where gp.id = p_process)
$$;

-- Whether a lease still binds its table: a present holder that has renewed in time.
create or replace function game_private.lease_live(p_lease game.table_leases) returns boolean
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select p_lease.holder is not null and p_lease.expires_at > now() and game_private.process_present(p_lease.holder)
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

-- Registers a game process (or re-registers it after its connection was lost) and takes its
-- presence lock on the calling connection, which the process keeps open for its life. Processes
-- that are gone are forgotten (their leases lose their holder).
create or replace function game.register_process(p_url text, p_process uuid default null)
  returns table (process_id uuid, lock_key integer)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_process game.game_processes;
begin
  if p_url is not null and (length(p_url) > 500 or p_url !~ '^https?://') then
    perform game_private.refuse('invalid_table', 'a process url is http(s), at most 500 characters');
  end if;
  delete from game.game_processes gp
   where gp.id is distinct from p_process and not game_private.process_present(gp.id);
  select * into v_process from game.game_processes gp where gp.id = p_process;
  if v_process.id is null then
    insert into game.game_processes as gp (id, url) values (coalesce(p_process, gen_random_uuid()), p_url)
    returning gp.* into v_process;
  elsif p_url is not null then
    update game.game_processes gp set url = p_url where gp.id = p_process returning gp.* into v_process;
  end if;
  if not pg_try_advisory_lock(game_private.presence_namespace(), v_process.lock_key) then
    perform game_private.refuse('game_process_gone', format('process %s is present on another connection', v_process.id));
  end if;
  return query select v_process.id, v_process.lock_key;
end;
$$;

-- The URL clients are sent to for the tables this process runs (known once it listens).
create or replace function game.set_process_url(p_process uuid, p_url text) returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  if p_url is null or length(p_url) > 500 or p_url !~ '^https?://' then
    perform game_private.refuse('invalid_table', 'a process url is http(s), at most 500 characters');
  end if;
  update game.game_processes gp set url = p_url where gp.id = p_process;
end;
$$;

-- A clean stop: the process's row goes (its leases lose their holder; release them first).
create or replace function game.unregister_process(p_process uuid) returns void
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
  delete from game.game_processes gp where gp.id = p_process
$$;

-- A room loads: p_process takes the table for a new tenure (epoch + 1) unless another process
-- holds a live lease on it (granted = false, with that holder's URL). A hand the previous tenure
-- left is abandoned (recovered_hand): the stacks of its start stand.
create or replace function game.take_lease(p_table_id text, p_process uuid, p_ttl_seconds integer)
  returns table (granted boolean, epoch bigint, holder_url text, recovered_hand text)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_table game.tables;
  v_lease game.table_leases;
  v_hand text;
begin
  if p_ttl_seconds is null or p_ttl_seconds not between 1 and 3600 then
    perform game_private.refuse('invalid_table', 'a lease lasts 1..3600 seconds');
  end if;
  v_table := game_private.lock_table(p_table_id);
  if not game_private.process_present(p_process) then
    perform game_private.refuse('game_process_gone', format('process %s holds no presence lock', p_process));
  end if;
  insert into game.table_leases (table_id) values (p_table_id) on conflict (table_id) do nothing;
  select * into v_lease from game.table_leases l where l.table_id = p_table_id for update;
  if v_lease.holder is distinct from p_process and game_private.lease_live(v_lease) then
    return query select false, v_lease.epoch, (select gp.url from game.game_processes gp where gp.id = v_lease.holder), null::text;
    return;
  end if;
  if v_table.current_hand_id is not null then
    v_hand := game.abandon_hand(p_table_id, v_lease.epoch);
  end if;
  update game.table_leases l
     set holder = p_process, epoch = l.epoch + 1, taken_at = now(), expires_at = now() + make_interval(secs => p_ttl_seconds)
   where l.table_id = p_table_id
  returning l.* into v_lease;
  return query select true, v_lease.epoch, (select gp.url from game.game_processes gp where gp.id = p_process), v_hand;
end;
$$;

-- The holder renews the leases it runs (one call for all of them); returns the tables it has lost
-- (taken over, or recovered after expiring), whose rooms must stop.
create or replace function game.renew_leases(p_process uuid, p_table_ids text[], p_epochs bigint[], p_ttl_seconds integer)
  returns setof text
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
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
            where l.table_id = m.table_id and l.epoch = m.epoch and l.holder = p_process
           returning l.table_id)
    select m.table_id from mine m where m.table_id not in (select r.table_id from renewed r) order by m.table_id;
end;
$$;

-- The room stops (a clean stop, or it unloads): the lease is let go, and a hand still in progress
-- is abandoned now rather than left for a recovery (the stacks of its start stand). Releasing a
-- lease that is no longer this tenure's changes nothing. Returns the abandoned hand.
create or replace function game.release_lease(p_table_id text, p_process uuid, p_epoch bigint) returns text
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_table game.tables;
  v_hand text;
begin
  v_table := game_private.lock_table(p_table_id);
  if not exists (select from game.table_leases l where l.table_id = p_table_id and l.holder = p_process and l.epoch = p_epoch) then
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

-- Who runs a table now: the live holder's URL, or null (any game process may take it).
create or replace function game.lease_holder(p_table_id text)
  returns table (epoch bigint, holder uuid, holder_url text)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select l.epoch, l.holder, gp.url
    from game.table_leases l left join game.game_processes gp on gp.id = l.holder
   where l.table_id = p_table_id and game_private.lease_live(l)
$$;
