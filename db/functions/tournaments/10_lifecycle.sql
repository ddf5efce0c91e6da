-- The Sit-and-Go lifecycle (spec: "Tournament lifecycle"): every state is a column of the table
-- record, every transition one function here that refuses an illegal move with a coded error. The
-- timers are graphile-worker jobs queued in the transaction of the move that arms them (so a move
-- that rolls back arms nothing), keyed by the table: the 3 s grace (tournament_start), the blind
-- level deadline (tournament_blinds), an unpaid reserve's expiry (tournament_reserve_expiry) and
-- settlement (tournament_settle). Each move NOTIFYs `game_tournament` (sent at commit): the game
-- process holding the table's lease broadcasts it to the room (docs/tournaments.md).
--
-- The clock: every duration of a table (grace, level, reserve TTL) is divided by its clock factor
-- (game_private.sng_clock_factor, game/07_tournament_rules.sql), so the jobs' run_at and the
-- room's timers run on the same accelerated clock.

create or replace function game_private.epoch_ms(p_at timestamptz) returns bigint
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select (extract(epoch from p_at) * 1000)::bigint
$$;

-- A lifecycle event for the room (sent at commit; the payload carries the table id).
create or replace function game_private.tournament_notify(p_table_id text, p_event jsonb) returns void
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  select pg_notify('game_tournament', (jsonb_build_object('tableId', p_table_id) || p_event)::text)
$$;

-- The table row of a tournament, locked (one lock order: the table, then its seats).
create or replace function game_private.lock_tournament(p_table_id text) returns game.tables
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_table game.tables;
begin
  v_table := game_private.lock_table(p_table_id);
  if v_table.mode <> 'sng' then
    perform game_private.refuse('not_a_tournament', format('table %s is a cash table', p_table_id));
  end if;
  return v_table;
end;
$$;

-- The registrants changed (a reserve, an entry, a release, a refund): the room shows the count.
create or replace function game_private.registration_changed(p_table_id text) returns void
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  select game_private.tournament_notify(p_table_id, jsonb_build_object('type', 'registration',
    'registeredCount', game_private.registered_count(p_table_id)))
$$;

-- Reserves a server-assigned seat (uniformly random among the free ones) for a registrant: a human
-- (p_agent_id null; on copilot tables with its advisor) or an agent of the user. The reserve holds
-- the seat, without money, until its fee is paid (cage.open_tournament_entry) or it self-releases
-- at reserved_until. Concurrent registrations serialise on the table's lock: for the last seat,
-- exactly one wins and the others are refused tournament_full.
-- A registration is taken only while the tournament registers: one whose field filled (starting,
-- the last seat taken by a concurrent registrant) is tournament_full, any later state
-- tournament_not_in_registration.
create or replace function game_private.require_registering(v_table game.tables) returns void
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
begin
  if v_table.tournament_state = 'starting' then
    perform game_private.refuse('tournament_full', 'the field filled: the tournament is starting');
  end if;
  if v_table.tournament_state is distinct from 'registering' then
    perform game_private.refuse('tournament_not_in_registration', format('the tournament is %s', v_table.tournament_state));
  end if;
end;
$$;

-- The registrant is the player of the access JWT's grant p_sid (a human over the websocket, or an
-- agent's owner on its own connection), or, with no handle, the owner of the agent p_agent_id (the
-- internal route an agent's service calls with the service key): never a user id a caller names.
create or replace function game.tournament_reserve(
  p_table_id text, p_sid uuid, p_agent_id uuid, p_advisor_agent_id uuid, p_ttl_seconds integer
) returns table (player_id bigint, seat_index integer, reserved_until timestamptz, registered_count integer)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  p_user_id uuid;
  v_table game.tables;
  v_seats integer;
  v_seat integer;
  v_player game.table_players;
begin
  if p_sid is not null then
    p_user_id := auth_private.user_of_sid(p_sid);
    if p_agent_id is not null and not exists (select from game.agents a where a.id = p_agent_id and a.owner_user_id = p_user_id) then
      perform game_private.refuse('agent_not_found', 'the registrant''s own agent');
    end if;
  elsif p_agent_id is not null then
    select a.owner_user_id into p_user_id from game.agents a where a.id = p_agent_id;
    if p_user_id is null then
      perform game_private.refuse('agent_not_found');
    end if;
  else
    perform auth_private.refuse('session_required', 'a player''s grant, or an agent');
  end if;
  -- an unpaid reserve holds a seat for the spec's reserve TTL at most (a registration that is paid
  -- for at once): a login cannot hold the field's seats for longer
  if p_user_id is null or p_ttl_seconds is null or p_ttl_seconds not between 1 and game_private.reserve_ttl_seconds() then
    perform game_private.refuse('invalid_table', format('a user and a reserve TTL of 1..%s s', game_private.reserve_ttl_seconds()));
  end if;
  v_table := game_private.lock_tournament(p_table_id);
  perform game_private.require_registering(v_table);
  if p_agent_id is null and v_table.kind = 'agent' then
    perform game_private.refuse('humans_not_allowed_at_agent_table');
  end if;
  if p_agent_id is not null and v_table.kind = 'human_only' then
    perform game_private.refuse('agent_not_allowed_at_human_table');
  end if;
  if p_advisor_agent_id is not null and v_table.kind <> 'copilot' then
    perform game_private.refuse('advisor_on_non_copilot_kind');
  end if;
  if p_agent_id is null and v_table.kind = 'copilot' and p_advisor_agent_id is null then
    perform game_private.refuse('advisor_required');
  end if;
  if p_advisor_agent_id is not null
     and not exists (select from game.agents a where a.id = p_advisor_agent_id and a.owner_user_id = p_user_id) then
    perform game_private.refuse('agent_not_found', 'the advisor is one of the registrant''s own agents');
  end if;
  if exists (select from game.table_players p where p.table_id = p_table_id and p.user_id = p_user_id and p.status <> 'closed') then
    perform game_private.refuse('tournament_already_registered');
  end if;
  v_seats := game_private.setting_bigint(v_table.settings, 'seats')::integer;
  select s into v_seat from generate_series(0, v_seats - 1) s
   where not exists (select from game.table_players p where p.table_id = p_table_id and p.seat_index = s and p.status <> 'closed')
   order by random() limit 1;
  if v_seat is null then
    perform game_private.refuse('tournament_full', format('%s seats', v_seats));
  end if;
  insert into game.table_players as p (table_id, user_id, seat_index, chip_balance, history_hash, agent_id,
                                       copilot_advisor_agent_id, entry_state, reserved_until)
  values (p_table_id, p_user_id, v_seat, 0, '', p_agent_id, p_advisor_agent_id::text, 'reserved',
          now() + game_private.sng_interval(v_table.settings, p_ttl_seconds))
  returning p.* into v_player;
  update game.table_players p set history_hash = game_private.chain_genesis(p_table_id, p_user_id, v_player.id)
   where p.id = v_player.id;
  perform game_private.schedule_reserve_expiry(p_table_id, v_player.id, v_player.reserved_until);
  perform game_private.registration_changed(p_table_id);
  return query select v_player.id, v_player.seat_index, v_player.reserved_until, game_private.registered_count(p_table_id);
end;
$$;

-- Releases an unpaid reserve: the internal unregister (by user; a paid entry is refused
-- paid_registration_use_refund_path: its refund is the bank's) or the reserve's expiry (by
-- position; a reserve paid or gone meanwhile, or not yet due, is kept). Returns whether it released.
create or replace function game.tournament_release_reserve(p_table_id text, p_user_id uuid, p_player_id bigint)
  returns boolean
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_table game.tables;
  v_player game.table_players;
begin
  v_table := game_private.lock_tournament(p_table_id);
  select * into v_player from game.table_players p
   where p.table_id = p_table_id and p.status <> 'closed'
     and (p.user_id = p_user_id or p.id = p_player_id)
   for update;
  if p_player_id is not null then
    -- the expiry job: only a reserve still unpaid, and due
    if v_player.id is null or v_player.id <> p_player_id or v_player.entry_state <> 'reserved' or v_player.reserved_until > now() then
      return false;
    end if;
  else
    if v_player.id is null then
      perform game_private.refuse('tournament_not_registered');
    end if;
    if v_player.entry_state = 'paid' then
      perform game_private.refuse('paid_registration_use_refund_path');
    end if;
  end if;
  if v_table.tournament_state <> 'registering' then
    perform game_private.refuse('tournament_not_in_registration', format('the tournament is %s', v_table.tournament_state));
  end if;
  -- a chain-bank entry on its way (its permit deposit not resolved, or confirmed and not yet
  -- accepted) keeps its seat: the chain bank releases it if the chain refuses the deposit
  if exists (select from bank.deposit_intents d
              where d.table_id = p_table_id and d.user_id = v_player.user_id and d.mode = 'sng'
                and (d.status in ('pending', 'submitted') or (d.status = 'confirmed' and d.credited_at is null))) then
    if p_player_id is not null then
      return false;
    end if;
    perform game_private.refuse('entry_in_flight', 'an entry deposit of this player is on its way to the chain');
  end if;
  update game.table_players p set status = 'closed', closed_at = now() where p.id = v_player.id;
  perform game_private.cancel_reserve_expiry(v_player.id);
  perform game_private.registration_changed(p_table_id);
  return true;
end;
$$;

-- registering -> starting, when every seat is paid: the seats are assigned by a uniform random
-- shuffle (one statement; the one-seat rule is deferred to its end), the grace (start_grace_seconds) is armed.
create or replace function game_private.tournament_to_starting(p_table_id text) returns game.tables
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_table game.tables;
begin
  set constraints game.table_players_one_per_seat deferred;
  update game.table_players p set seat_index = s.seat
    from (select q.id, (row_number() over (order by random()) - 1)::integer as seat
            from game.table_players q where q.table_id = p_table_id and q.status <> 'closed') s
   where p.id = s.id;
  set constraints game.table_players_one_per_seat immediate;
  update game.tables t set tournament_state = 'starting', starts_at = now() + game_private.sng_interval(t.settings, game_private.start_grace_seconds())
   where t.table_id = p_table_id returning t.* into v_table;
  perform game_private.schedule_tournament_start(p_table_id, v_table.starts_at);
  perform game_private.tournament_notify(p_table_id, jsonb_build_object('type', 'tournament_state_changed',
    'state', 'starting', 'startsAt', game_private.epoch_ms(v_table.starts_at)));
  return v_table;
end;
$$;

-- The blind timer of the current level: one absolute deadline (level_started_at + the duration).
create or replace function game_private.arm_blind_timer(v_table game.tables) returns void
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  select graphile_worker.add_job('tournament_blinds',
    json_build_object('tableId', v_table.table_id, 'level', v_table.current_level),
    run_at => v_table.level_started_at + game_private.sng_level_interval(v_table.settings),
    job_key => game_private.tournament_job_key(v_table.table_id, 'blinds'), job_key_mode => 'replace', max_attempts => 1000);
$$;

-- starting -> playing, when the grace has elapsed: every entry gets startingStack tournament chips
-- (chip_balance stays the entry-fee claim), level 0 starts, its blind timer is armed. A replay (the
-- job run twice) changes nothing.
create or replace function game.tournament_begin_play(p_table_id text) returns game.tables
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_table game.tables;
begin
  v_table := game_private.lock_tournament(p_table_id);
  if v_table.tournament_state <> 'starting' then
    return v_table;
  end if;
  if v_table.starts_at > now() then
    -- early (a clock skew, a replayed job): the grace is the table's, wait for it
    perform game_private.schedule_tournament_start(p_table_id, v_table.starts_at);
    return v_table;
  end if;
  update game.table_players p set tournament_stack = game_private.setting_bigint(v_table.settings, 'startingStack')
   where p.table_id = p_table_id and p.status <> 'closed' and p.entry_state = 'paid';
  update game.tables t
     set tournament_state = 'playing', current_level = 0, play_started_at = now(), level_started_at = now()
   where t.table_id = p_table_id returning t.* into v_table;
  perform game_private.arm_blind_timer(v_table);
  perform game_private.tournament_notify(p_table_id, jsonb_build_object('type', 'tournament_state_changed',
    'state', 'playing', 'currentLevel', 0, 'levelStartedAt', game_private.epoch_ms(v_table.level_started_at)));
  return v_table;
end;
$$;

-- The blind timer fired for p_level: the next level starts at the deadline (not at now(): one
-- absolute deadline per level, so a late timer never shifts the schedule), the next deadline is
-- armed (at once when it is already past: a missed escalation fires immediately). A stale or
-- early firing changes nothing (an early one re-arms the deadline). Hand boundaries never move it.
create or replace function game.tournament_advance_level(p_table_id text, p_level integer)
  returns table (advanced boolean, current_level integer, level_started_at timestamptz)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_table game.tables;
  v_deadline timestamptz;
begin
  v_table := game_private.lock_tournament(p_table_id);
  if v_table.tournament_state <> 'playing' or v_table.current_level is distinct from p_level then
    return query select false, v_table.current_level, v_table.level_started_at;
    return;
  end if;
  v_deadline := v_table.level_started_at + game_private.sng_level_interval(v_table.settings);
  if v_deadline > now() then
    perform game_private.arm_blind_timer(v_table);
    return query select false, v_table.current_level, v_table.level_started_at;
    return;
  end if;
  update game.tables t set current_level = t.current_level + 1, level_started_at = v_deadline
   where t.table_id = p_table_id returning t.* into v_table;
  perform game_private.arm_blind_timer(v_table);
  perform game_private.tournament_notify(p_table_id, jsonb_build_object('type', 'blind_level_changed',
    'currentLevel', v_table.current_level, 'levelStartedAt', game_private.epoch_ms(v_table.level_started_at)));
  return query select true, v_table.current_level, v_table.level_started_at;
end;
$$;

-- Places for players leaving the field together (busted in one hand, or ranked at a force-end):
-- p_ranked are their position ids ordered best first, p_keys the value that orders them (the stack
-- at the start of the hand, or the stack at the force-end; equal keys tie), p_first the best place
-- among them. Writes elimination_order (distinct places) and tie_place (the best place of its tie).
create or replace function game_private.assign_places(p_ranked bigint[], p_keys bigint[], p_first integer) returns void
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  update game.table_players p
     set elimination_order = p_first + r.i - 1,
         tie_place = p_first + r.tie - 1
    from (select x.id, x.i, (rank() over (order by x.k desc))::integer as tie
            from unnest(p_ranked, p_keys) with ordinality as x(id, k, i)) r
   where p.id = r.id
$$;

-- playing -> ended: the survivor is 1st; settlement is queued.
create or replace function game_private.tournament_to_ended(p_table_id text, p_forced boolean) returns game.tables
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_table game.tables;
begin
  update game.tables t set tournament_state = 'ended', ended_at = now()
   where t.table_id = p_table_id returning t.* into v_table;
  perform game_private.disarm_blind_timer(p_table_id);
  perform game_private.schedule_tournament_settle(p_table_id);
  perform game_private.tournament_notify(p_table_id, jsonb_build_object('type', 'tournament_state_changed',
    'state', 'ended', 'forced', p_forced));
  return v_table;
end;
$$;

-- A tournament hand's stacks written (tournament chips: no money moves), its busts placed (biggest
-- stack at the hand's start first; equal stacks tie) and the table released; the last one alive
-- ends the tournament. Returns the positions the hand busted.
create or replace function game_private.write_tournament_end(v_table game.tables, p_stacks jsonb, p_auto_folds integer)
  returns bigint[]
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_before bigint;
  v_after bigint;
  v_listed integer;
  v_found integer;
  v_alive integer;
  v_busted bigint[];
  v_keys bigint[];
begin
  if not game_private.stacks_valid(p_stacks) or p_auto_folds is null or p_auto_folds < 0 then
    perform game_private.refuse('invalid_hand', 'stacks: { positionId: integer 0..2^53-1 }, auto-folds >= 0');
  end if;
  select count(*), count(p.id), coalesce(sum(p.tournament_stack), 0), coalesce(sum(h.stack), 0)
    into v_listed, v_found, v_before, v_after
    from game_private.stacks_of(p_stacks) h
    left join game.table_players p on p.id = h.player_id and p.table_id = v_table.table_id and p.status = 'seated'
                                   and p.tournament_stack > 0;
  if v_found <> v_listed or v_before <> v_after then
    perform game_private.refuse('invalid_hand', format('every listed position is alive at this table and chips are conserved (%s before, %s after)', v_before, v_after));
  end if;
  select count(*) into v_alive from game.table_players p where p.table_id = v_table.table_id and p.status = 'seated' and p.tournament_stack > 0;
  select array_agg(p.id order by p.tournament_stack desc, p.seat_index), array_agg(p.tournament_stack order by p.tournament_stack desc, p.seat_index)
    into v_busted, v_keys
    from game.table_players p
    join game_private.stacks_of(p_stacks) h on h.player_id = p.id
   where h.stack = 0;
  update game.table_players p set tournament_stack = h.stack
    from game_private.stacks_of(p_stacks) h
   where p.id = h.player_id and p.tournament_stack <> h.stack;
  if v_busted is not null then
    perform game_private.assign_places(v_busted, v_keys, v_alive - cardinality(v_busted) + 1);
    v_alive := v_alive - cardinality(v_busted);
  end if;
  update game.tables t set current_hand_id = null, current_hand_started_at = null, auto_fold_count = t.auto_fold_count + p_auto_folds
   where t.table_id = v_table.table_id;
  if v_alive <= 1 then
    update game.table_players p set elimination_order = 1, tie_place = 1
     where p.table_id = v_table.table_id and p.status = 'seated' and p.tournament_stack > 0;
    perform game_private.tournament_to_ended(v_table.table_id, false);
  end if;
  return coalesce(v_busted, '{}');
end;
$$;

-- A tournament hand's end (its stacks and places only; game.end_hand also stores its history):
-- its busts with their places, and the tournament's state after it (one row with no bust when
-- nobody busted).
create or replace function game.finish_tournament_hand(
  p_table_id text, p_hand_id text, p_stacks jsonb, p_auto_folds integer, p_epoch bigint default null
) returns table (player_id bigint, user_id uuid, seat_index integer, elimination_order integer, tie_place integer, state text)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_table game.tables;
  v_busted bigint[];
begin
  v_table := game_private.lock_hand(p_table_id, p_hand_id, p_epoch);
  if v_table.mode <> 'sng' then
    perform game_private.refuse('not_a_tournament', format('table %s is a cash table', p_table_id));
  end if;
  v_busted := game_private.write_tournament_end(v_table, p_stacks, p_auto_folds);
  select * into v_table from game.tables t where t.table_id = p_table_id;
  return query select p.id, p.user_id, p.seat_index, p.elimination_order, p.tie_place, v_table.tournament_state
                 from game.table_players p where p.id = any(v_busted)
                order by p.elimination_order;
  if cardinality(v_busted) = 0 then
    return query select null::bigint, null::uuid, null::integer, null::integer, null::integer, v_table.tournament_state;
  end if;
end;
$$;

-- playing -> ended by an operator: a hand in flight is abandoned (the stacks of its start stand),
-- the live seats are placed by stack, biggest first (equal stacks tie); settlement follows.
-- From any other state: cannot_force_end (409, the state in the detail).
create or replace function game.tournament_force_end(p_table_id text) returns game.tables
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_table game.tables;
  v_alive bigint[];
  v_keys bigint[];
begin
  v_table := game_private.lock_tournament(p_table_id);
  if v_table.tournament_state <> 'playing' then
    perform game_private.refuse('cannot_force_end', v_table.tournament_state);
  end if;
  if v_table.current_hand_id is not null then
    perform game_private.abandon_current_hand(v_table);
  end if;
  select array_agg(p.id order by p.tournament_stack desc, p.seat_index), array_agg(p.tournament_stack order by p.tournament_stack desc, p.seat_index)
    into v_alive, v_keys
    from game.table_players p where p.table_id = p_table_id and p.status = 'seated' and p.tournament_stack > 0;
  perform game_private.assign_places(v_alive, v_keys, 1);
  return game_private.tournament_to_ended(p_table_id, true);
end;
$$;

-- After a restart of the worker: every timer of a live tournament is armed again from the state
-- stored (the blind deadline from level_started_at: a missed escalation fires at once). The jobs
-- are durable, so this only replaces what is there; returns how many tournaments it touched.
create or replace function game.tournament_rearm() returns integer
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_table game.tables;
  v_count integer := 0;
  r record;
begin
  for v_table in select * from game.tables t where t.mode = 'sng' and t.tournament_state in ('registering', 'starting', 'playing', 'ended', 'settling') loop
    v_count := v_count + 1;
    case v_table.tournament_state
      when 'starting' then
        perform game_private.schedule_tournament_start(v_table.table_id, v_table.starts_at);
      when 'playing' then
        perform game_private.arm_blind_timer(v_table);
      when 'ended' then
        perform game_private.schedule_tournament_settle(v_table.table_id);
      when 'registering' then
        for r in select p.id, p.reserved_until from game.table_players p
                  where p.table_id = v_table.table_id and p.status <> 'closed' and p.entry_state = 'reserved' loop
          perform game_private.schedule_reserve_expiry(v_table.table_id, r.id, r.reserved_until);
        end loop;
      else
        null; -- settling: the payout reconciler re-posts what is unconfirmed
    end case;
  end loop;
  return v_count;
end;
$$;

-- The tournament.lifecycle span now recording this tournament (telemetry only: never a money step).
create or replace function game.set_tournament_trace(p_table_id text, p_trace jsonb) returns void
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
  update game.tables t set lifecycle_trace = p_trace
   where t.table_id = p_table_id and t.mode = 'sng' and jsonb_typeof(p_trace) = 'object' and length(p_trace::text) <= 1000
$$;

-- What a room announced of a tournament's lifecycle (its connections were told): the state and level
-- move only forward, the payouts only grow. Bookkeeping of the announcements; no chip moves.
create or replace function game.record_tournament_announced(p_table_id text, p_state text, p_level integer, p_payouts integer[])
  returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_order text[] := game_private.lifecycle_states();
begin
  if p_state is not null and array_position(v_order, p_state) is null then
    perform game_private.refuse('invalid_table', 'a lifecycle state');
  end if;
  update game.tables t
     set announced_state = case when coalesce(array_position(v_order, p_state), 0) > coalesce(array_position(v_order, t.announced_state), 0)
                                then p_state else t.announced_state end,
         announced_level = greatest(t.announced_level, p_level),
         announced_payouts = (select coalesce(array_agg(distinct x order by x), '{}') from unnest(t.announced_payouts || coalesce(p_payouts, '{}')) x)
   where t.table_id = p_table_id and t.mode = 'sng';
end;
$$;
