-- Hand boundaries, as the dealer reports them. A hand locks its table for its duration (seat
-- funding and stand-up answer 409 hand_in_progress); its end writes every changed stack, one
-- position link each, and the rake it took, in one transaction.

-- p_epoch: the lease epoch of the room that deals (db/functions/game/35_leases.sql: the fence).
create or replace function game.begin_hand(p_table_id text, p_hand_id text, p_epoch bigint default null) returns game.tables
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_table game.tables;
begin
  if p_hand_id is null or length(p_hand_id) not between 1 and 128 then
    perform game_private.refuse('invalid_hand', 'hand id 1..128 chars');
  end if;
  v_table := game_private.lock_leased(p_table_id, p_epoch);
  -- a tournament deals only while it is playing (a registering one has entry fees, no chips)
  if v_table.mode = 'sng' and v_table.tournament_state is distinct from 'playing' then
    perform game_private.refuse('tournament_not_playing', format('the tournament is %s', v_table.tournament_state));
  end if;
  if v_table.current_hand_id is not null then
    perform game_private.refuse('hand_in_progress', format('hand %s', v_table.current_hand_id));
  end if;
  update game.tables t set current_hand_id = p_hand_id, current_hand_started_at = now()
   where t.table_id = p_table_id returning t.* into v_table;
  return v_table;
end;
$$;

-- A hand end's stacks: { positionId: integer 0..2^53-1 } (position ids as decimal keys).
create or replace function game_private.stacks_valid(p_stacks jsonb) returns boolean
  language sql immutable
  set search_path = pg_catalog, pg_temp
as $$
  select p_stacks is not null and jsonb_typeof(p_stacks) = 'object'
     and not exists (select from jsonb_each(p_stacks) e
                      where jsonb_typeof(e.value) <> 'number' or length(e.key) not between 1 and 18 or e.key ~ '[^0-9]'
                         or (e.value)::numeric < 0 or (e.value)::numeric > 9007199254740991
                         or (e.value)::numeric <> trunc((e.value)::numeric))
$$;

-- The stacks of a valid hand end as rows. `rows 10`: a table seats at most ten, and the planner
-- must know it (its default of 1,000 rows turns every join on the positions into a scan of them all).
create or replace function game_private.stacks_of(p_stacks jsonb) returns table (player_id bigint, stack bigint)
  language sql immutable rows 10
  set search_path = pg_catalog, pg_temp
as $$
  select e.key::bigint, (e.value)::numeric::bigint from jsonb_each(p_stacks) e
$$;

-- The table of a hand ending, locked, under the caller's lease, holding that hand (else refused).
create or replace function game_private.lock_hand(p_table_id text, p_hand_id text, p_epoch bigint) returns game.tables
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_table game.tables;
begin
  v_table := game_private.lock_leased(p_table_id, p_epoch);
  -- `is distinct from`: a null hand id must not slip through as "not unequal"
  if p_hand_id is null or v_table.current_hand_id is distinct from p_hand_id then
    perform game_private.refuse('no_hand_in_progress', format('hand %s is not in progress', p_hand_id));
  end if;
  return v_table;
end;
$$;

-- A committed deal as the room persists it, sealed (server/game/live/deal-seal.ts): the hand it is
-- for, its algorithm and commitment, the sealed seed (hex) and, for the hand being dealt, the
-- players' contributions it has.
create or replace function game_private.sealed_deal_valid(p_deal jsonb) returns boolean
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  -- never null (a null would read as "not invalid" to a caller's `not`): a missing field is false
  select coalesce(p_deal is not null and jsonb_typeof(p_deal) = 'object'
     and p_deal ->> 'algorithm' in ('sha256-fisher-yates-v2', 'seeded-v1')
     -- lengths and a negated class, never a counted repetition: '^[0-9a-f]{64}$' costs Postgres's
     -- regex engine about 12 microseconds a string and '^.{1,128}$' 17, the forms below under 1 (issue 33)
     and length(coalesce(p_deal ->> 'handId', '')) between 1 and 128
     and length(coalesce(p_deal ->> 'handNumber', '')) between 1 and 9 and coalesce(p_deal ->> 'handNumber', '') !~ '[^0-9]'
     and length(coalesce(p_deal ->> 'commitment', '')) = 64 and coalesce(p_deal ->> 'commitment', '') !~ '[^0-9a-f]'
     and length(coalesce(p_deal ->> 'sealed', '')) between 58 and 512 and coalesce(p_deal ->> 'sealed', '') !~ '[^0-9a-f]'
     and coalesce(jsonb_typeof(p_deal -> 'contributions'), 'array') = 'array', false)
$$;

-- The deals a deal writes (game.deal_hand): the hand dealt is the one its table committed (the
-- commitment published before any contribution), and the next one is committed for the hand after.
create or replace function game_private.check_deals(p_table game.tables, p_hand_id text, p_deal jsonb, p_next jsonb) returns void
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
begin
  if not game_private.sealed_deal_valid(p_deal) or not game_private.sealed_deal_valid(p_next)
     or p_deal ->> 'handId' is distinct from p_hand_id or p_deal -> 'contributions' is null
     or (p_next ->> 'handNumber')::bigint <> (p_deal ->> 'handNumber')::bigint + 1 then
    perform game_private.refuse('invalid_hand', 'a deal carries its sealed deal (with its contributions) and the next hand''s');
  end if;
  if p_table.deal_next is null or (p_table.deal_next ->> 'commitment') is distinct from (p_deal ->> 'commitment')
     or (p_table.deal_next ->> 'handId') is distinct from p_hand_id then
    perform game_private.refuse('deal_not_committed', format('hand %s is not the deal table %s committed', p_hand_id, p_table.table_id));
  end if;
end;
$$;

-- The commitment of a revealed deal (server/game/poker/fair-deal.ts): v2 names the hand (table,
-- number, id) beside the seed; seeded-v1 is the SHA-256 of the seed alone.
create or replace function game_private.deal_commitment(p_algorithm text, p_seed bytea, p_table_id text, p_hand_number bigint, p_hand_id text)
  returns text
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select encode(sha256(case when p_algorithm = 'sha256-fisher-yates-v2' then
           convert_to('poker-commit-v2', 'UTF8') || '\x00'::bytea || p_seed
           || substring(int4send(octet_length(convert_to(p_table_id, 'UTF8'))) from 3 for 2) || convert_to(p_table_id, 'UTF8')
           || int4send(p_hand_number::integer)
           || substring(int4send(octet_length(convert_to(p_hand_id, 'UTF8'))) from 3 for 2) || convert_to(p_hand_id, 'UTF8')
         else p_seed end), 'hex')
$$;

-- A committed deal that will never be played to its end, stored as an abandoned hand: its real
-- number, the players holding funded seats (their stacks, which no hand moved since), its sealed
-- deal, to be revealed by the next room of the table (game.reveal_abandoned). Counted.
create or replace function game_private.store_abandoned(p_table_id text, p_deal jsonb, p_started_at timestamptz) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_seats jsonb;
  v_players uuid[];
begin
  select coalesce(jsonb_agg(jsonb_build_object('seat', s.seat_index, 'playerId', s.id, 'stack', s.chip_balance) order by s.seat_index), '[]'),
         coalesce(array_agg(distinct s.user_id), '{}')
    into v_seats, v_players
    from game.seats_of(p_table_id) s where s.chip_balance::numeric > 0;
  insert into game.hand_histories (hand_id, table_id, hand_number, status, players, started_at, ended_at, sealed_deal)
  values (p_deal ->> 'handId', p_table_id, (p_deal ->> 'handNumber')::bigint, 'abandoned', v_players, least(p_started_at, now()), now(),
          p_deal || jsonb_build_object('seats', v_seats, 'contributions', coalesce(p_deal -> 'contributions', '[]')))
  on conflict (hand_id) do nothing;
  if found then
    update game.tables t set abandoned_deals = t.abandoned_deals + 1, unrevealed_deals = t.unrevealed_deals + 1 where t.table_id = p_table_id;
  end if;
end;
$$;

-- The hand holding the table will not be played to its end: recorded as abandoned (the stacks of its
-- start stand, as no stack is written before a hand's end) with its sealed deal, and the table
-- released. A hand dealt before deals were kept sealed is recorded as it always was (number 0).
create or replace function game_private.abandon_current_hand(v_table game.tables) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  if v_table.current_hand_id is null then
    return;
  end if;
  if v_table.deal_current ->> 'handId' is not distinct from v_table.current_hand_id then
    perform game_private.store_abandoned(v_table.table_id, v_table.deal_current, coalesce(v_table.current_hand_started_at, now()));
  else
    insert into game.hand_histories (hand_id, table_id, hand_number, status, started_at, ended_at)
    values (v_table.current_hand_id, v_table.table_id, 0, 'abandoned', coalesce(v_table.current_hand_started_at, now()), now())
    on conflict (hand_id) do update set status = 'abandoned', ended_at = now();
  end if;
  update game.tables t set current_hand_id = null, current_hand_started_at = null, deal_current = null where t.table_id = v_table.table_id;
end;
$$;
-- A cash hand's stacks written: p_stacks maps position ids (table_players.id, as text) to their
-- stacks after the hand. Chips are conserved: the listed positions' stacks before = after + p_rake.
-- Every changed stack gets its `hand` link, all in one statement (not a statement per position: a
-- hand end is the busiest write of the platform). With the hand's number (game.end_hand, which
-- stores the hand's row), the links are answered for that row to carry (link_*: issue 33,
-- migration 000058), a position's first_hand is set at its first move and a busted position's
-- last_hand is this hand (game_private.position_chain reads the range); without it
-- (game.finish_hand, which stores no hand row) they are rows of game.position_links. The table is
-- released with the rake kept. The positions it left with no chips are closed with it
-- (game_private.close_busts) and answered (busted).
create or replace function game_private.write_cash_end(
  p_table_id text, p_hand_id text, p_stacks jsonb, p_rake bigint, p_hand_number bigint,
  out busted bigint[], out link_players bigint[], out link_seqs integer[], out link_deltas bigint[],
  out link_stacks bigint[], out link_hashes text[]
)
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
  -- by key only (db/tests/game/by_key_plans.test.ts): the statements below join a hand's few
  -- positions to game.table_players on generic plans (game.end_hand's), and a plan made while the
  -- positions were a few hundred hash-joined them to every position ever opened, read through the
  -- whole primary key at every hand end
  set enable_hashjoin = off
  set enable_mergejoin = off
as $$
declare
  v_before bigint;
  v_after bigint;
  v_listed int;
  v_found int;
  v_ids bigint[];
  v_stacks bigint[];
begin
  if not game_private.stacks_valid(p_stacks) or p_rake is null or p_rake < 0 then
    perform game_private.refuse('invalid_hand', 'stacks: { positionId: integer 0..2^53-1 }, rake >= 0');
  end if;
  -- the stacks parsed once: every statement below reads these arrays, not the JSON again
  select coalesce(array_agg(h.player_id), '{}'), coalesce(array_agg(h.stack), '{}') into v_ids, v_stacks
    from game_private.stacks_of(p_stacks) h;
  select count(*), count(p.id), coalesce(sum(p.chip_balance), 0), coalesce(sum(h.stack), 0)
    into v_listed, v_found, v_before, v_after
    from unnest(v_ids, v_stacks) h (player_id, stack)
    left join game.table_players p on p.id = h.player_id and p.table_id = p_table_id and p.status = 'seated';
  if v_found <> v_listed then
    perform game_private.refuse('invalid_hand', 'every listed position must be seated at this table');
  end if;
  if v_before <> v_after + p_rake then
    perform game_private.refuse('invalid_hand', format('chips not conserved: %s before, %s after + %s rake', v_before, v_after, p_rake));
  end if;

  if p_hand_number is not null then
    with moved as (
      select p.id, h.stack, h.stack - p.chip_balance as delta, p.chain_length + 1 as seq, p.history_hash as prev
        from unnest(v_ids, v_stacks) h (player_id, stack)
        join game.table_players p on p.id = h.player_id
       where h.stack <> p.chip_balance
    ), linked as materialized (
      -- (materialized: each hash made once, though the update reads it twice, to set and to answer)
      select m.*, game_private.link_hash(m.prev, m.seq, 'hand', m.delta, m.stack, p_hand_id) as hash from moved m
    ), moved_heads as (
      -- last_hand is set only for a position this hand busts (it closes below): a position still
      -- seated keeps it null, its links in any hand of the table from first_hand on (issue 33: a
      -- row's update is logged from its first changed column to its last, and last_hand is the
      -- row's last: about 90 bytes of WAL a moved position)
      update game.table_players p set chip_balance = l.stack, history_hash = l.hash, chain_length = l.seq,
                                      first_hand = coalesce(p.first_hand, p_hand_number),
                                      last_hand = case when l.stack = 0 then p_hand_number else p.last_hand end
        from linked l where p.id = l.id
      returning l.id, l.seq, l.delta, l.stack, l.hash
    )
    select array_agg(m.id order by m.id), array_agg(m.seq order by m.id), array_agg(m.delta order by m.id),
           array_agg(m.stack order by m.id), array_agg(m.hash order by m.id)
      into link_players, link_seqs, link_deltas, link_stacks, link_hashes
      from moved_heads m;
  else
    -- (the same links as rows of game.position_links: a statement of its own, so that the hand end's
    -- above carries no insert into that table, idle or not)
    with moved as (
      select p.id, h.stack, h.stack - p.chip_balance as delta, p.chain_length + 1 as seq, p.history_hash as prev
        from unnest(v_ids, v_stacks) h (player_id, stack)
        join game.table_players p on p.id = h.player_id
       where h.stack <> p.chip_balance
    ), linked as (
      select m.*, game_private.link_hash(m.prev, m.seq, 'hand', m.delta, m.stack, p_hand_id) as hash from moved m
    ), links as (
      insert into game.position_links (player_id, seq, event, delta, stack, ref_id, prev_hash, hash)
      select l.id, l.seq, 'hand', l.delta, l.stack, p_hand_id, l.prev, l.hash from linked l
    )
    update game.table_players p set chip_balance = l.stack, history_hash = l.hash, chain_length = l.seq
      from linked l where p.id = l.id;
  end if;

  update game.tables t set current_hand_id = null, current_hand_started_at = null, unreconciled_rake = t.unreconciled_rake + p_rake
   where t.table_id = p_table_id;
  -- the house row of this hand's rake, claimed later by a rake reconciliation (cage.reconcile_rake)
  if p_rake > 0 then
    insert into game.rake_rows (hand_id, table_id, amount) values (p_hand_id, p_table_id, p_rake);
  end if;
  select coalesce(array_agg(p.id order by p.id), '{}') into busted
    from game.table_players p where p.table_id = p_table_id and p.status = 'seated' and p.chip_balance = 0;
  if cardinality(busted) > 0 then
    perform game_private.close_busts(p_table_id, busted);
  end if;
end;
$$;

-- The busts of a cash hand settled in its end (issue 32): each position the hand left with no chips
-- is closed in this transaction by its table's bank, with no round trip to it. A cage table: the
-- cage's explicit-zero settlement (cage_private.close_bust: the bust intent, the bust_close row,
-- the chain's last link); its receipt is signed afterwards by the cage, which the job queued here
-- asks (tasks/cage_sign_bust_receipts.ts). A chain-bank table: the chain bank's bust, which pays
-- nothing (bank_private.close_bust). The caller holds the table's lock.
create or replace function game_private.close_busts(p_table_id text, p_busted bigint[]) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_table game.tables;
  v_player game.table_players;
begin
  select * into v_table from game.tables t where t.table_id = p_table_id;
  for v_player in
    select * from game.table_players p
     where p.id = any(p_busted) and p.table_id = p_table_id and p.status = 'seated' and p.chip_balance = 0
     order by p.id for update
  loop
    if v_table.bank = 'cage' then
      perform cage_private.close_bust(v_player, v_table.money_kind::text);
    else
      perform bank_private.close_bust(v_player);
    end if;
  end loop;
  if v_table.bank = 'cage' then
    -- one run signs every bust of the second: a job already waiting keeps its time (the receipts
    -- wait at most about a second; the audit allows 5 minutes). Queued for now, it ran about once a
    -- bust (issue 33's soak: 10,000 runs in eight minutes, each a job, a call to the cage and a read).
    -- A job waiting (not yet taken by a worker) signs this bust too: it reads the unsigned busts when
    -- it runs, after this commits, so it is not rewritten (add_job on its key updated its row at every
    -- bust: about half a millisecond and a new row version each). One running may have read them
    -- already, and one that failed for good never runs again: either way add_job queues the next run.
    -- (The crontab's run every minute is the net under all of them.)
    if not exists (select from graphile_worker.jobs j
                    where j.key = 'cage_sign_bust_receipts' and j.locked_at is null and j.attempts < j.max_attempts) then
      perform graphile_worker.add_job('cage_sign_bust_receipts', '{}'::json, run_at => now() + interval '1 second',
                                      job_key => 'cage_sign_bust_receipts', job_key_mode => 'preserve_run_at');
    end if;
  end if;
end;
$$;

-- Ends a cash hand (its stacks and rake only; game.end_hand also stores its history). Returns the
-- positions left with no chips (busted), closed with it.
create or replace function game.finish_hand(p_table_id text, p_hand_id text, p_stacks jsonb, p_rake bigint, p_epoch bigint default null)
  returns table (player_id bigint, user_id uuid)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_busted bigint[];
begin
  perform game_private.require_cash_table(game_private.lock_hand(p_table_id, p_hand_id, p_epoch), 'finish_hand');
  v_busted := (game_private.write_cash_end(p_table_id, p_hand_id, p_stacks, p_rake, null)).busted;
  return query select p.id, p.user_id from game.table_players p where p.id = any(v_busted) order by p.id;
end;
$$;

-- What a hand end answers (the first time and on a replay alike): the positions it left with no
-- chips, with their owners, seats and, at a tournament, the places they took; the tournament's
-- state after it (null at a cash table).
create or replace function game_private.hand_end_answer(p_table_id text, p_busted bigint[], p_replayed boolean) returns jsonb
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select jsonb_build_object(
    'replayed', p_replayed,
    'state', t.tournament_state,
    'busted', coalesce((select jsonb_agg(jsonb_build_object('playerId', p.id::text, 'userId', p.user_id, 'seat', p.seat_index,
                                                            'place', p.elimination_order, 'tiePlace', p.tie_place)
                                         order by p.elimination_order nulls last, p.id)
                          from game.table_players p where p.id = any(p_busted)), '[]'::jsonb))
    from game.tables t where t.table_id = p_table_id
$$;

-- A hand's signed record (server/game/hands/hand-record.ts), checked as the table's chain needs it
-- before it is stored with the hand: the deal and the record come together (or neither: a caller
-- that keeps no records), the record is the hand's and names as `prev` the hash of the table's
-- latest record (64 zeros for its first), so the chain never forks; the hash is computed here, the
-- signature is the dealer's (its key is checked by whoever verifies, not by SQL). Runs under the
-- table's lock (game.end_hand). Answers the record's hash, or null when there is none.
create or replace function game_private.chained_record_hash(
  p_table_id text, p_hand_id text, p_deal jsonb, p_record text, p_signature text, p_dealer_key text
) returns text
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_record jsonb;
  v_head text;
begin
  if p_deal is null and p_record is null and p_signature is null and p_dealer_key is null then
    return null;
  end if;
  if p_deal is null or jsonb_typeof(p_deal) <> 'object' or p_record is null or p_signature is null or p_dealer_key is null then
    perform game_private.refuse('invalid_hand', 'a hand record comes with its deal, signature and dealer key');
  end if;
  begin
    v_record := p_record::jsonb;
  exception when others then
    perform game_private.refuse('invalid_hand', 'the record is not JSON');
  end;
  if v_record ->> 'handId' is distinct from p_hand_id or v_record ->> 'tableId' is distinct from p_table_id
     or (v_record -> 'deal') is distinct from p_deal then
    perform game_private.refuse('invalid_hand', 'the record is not this hand''s');
  end if;
  select h.record_hash into v_head from game.hand_histories h
   where h.table_id = p_table_id and h.record_hash is not null
   order by h.hand_number desc limit 1;
  if v_record ->> 'prev' is distinct from coalesce(v_head, repeat('0', 64)) then
    perform game_private.refuse('record_not_in_chain', format('the record names %s before it; the table''s latest is %s',
      v_record ->> 'prev', coalesce(v_head, repeat('0', 64))));
  end if;
  return encode(sha256(convert_to(p_record, 'UTF8')), 'hex');
end;
$$;

-- The one hand end the dealer calls, cash or tournament: the stacks (and a cash hand's rake, a
-- tournament hand's auto-folds and places), the history and the result as one compact value the
-- process compressed (p_compact: game_private.compact_valid; never parsed here) with the hand's
-- hand_started event beside it (p_started: what the audit replays with; without the seats and the
-- hand id when the record holds them, game_private.started_of), in one transaction under
-- the table's lease. The hand the table holds is ended; an end already committed for this hand (an
-- earlier attempt whose answer was lost) is answered again from what it committed ("replayed");
-- a hand abandoned meanwhile (a force-end, a lost tenure) is refused hand_abandoned (its start
-- stacks stand); any other hand no_hand_in_progress.
--
-- plan_cache_mode: every statement of a hand end (and of the functions it calls) runs on its generic
-- plan, planned once per connection. Their custom plans were no better (each reads a few rows by key)
-- and planning them again at every end cost more than executing them.
-- enable_seqscan off: every read and write of a hand end is by key, and a generic plan is made once
-- per connection; made on a fresh database, whose tables the planner judged too small for an index,
-- it kept scanning them as they grew (issue 33: the positions' join read every position at every
-- hand end on a connection opened early).
create or replace function game.end_hand(
  p_table_id text, p_hand_id text, p_hand_number bigint, p_stacks jsonb, p_rake bigint, p_auto_folds integer,
  p_compact bytea, p_started jsonb, p_agents uuid[], p_started_at timestamptz, p_epoch bigint,
  p_deal jsonb, p_record text, p_record_signature text, p_dealer_key text
) returns jsonb
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_generic_plan
  set enable_seqscan = off
as $$
declare
  v_table game.tables;
  v_done game.hand_histories;
  v_busted bigint[];
  -- a cash hand's links, carried by its row (game_private.write_cash_end)
  v_link_players bigint[];
  v_link_seqs integer[];
  v_link_deltas bigint[];
  v_link_stacks bigint[];
  v_link_hashes text[];
  v_record_hash text;
begin
  v_table := game_private.lock_leased(p_table_id, p_epoch);
  if p_hand_id is null or v_table.current_hand_id is distinct from p_hand_id then
    select * into v_done from game.hand_histories h where h.hand_id = p_hand_id and h.table_id = p_table_id;
    if v_done.status = 'finished' and v_done.busted is not null then
      return game_private.hand_end_answer(p_table_id, v_done.busted, true);
    elsif v_done.status = 'abandoned' then
      perform game_private.refuse('hand_abandoned', format('hand %s was abandoned: the stacks of its start stand', p_hand_id));
    end if;
    perform game_private.refuse('no_hand_in_progress', format('hand %s is not in progress', p_hand_id));
  end if;
  if not game_private.compact_valid(p_compact) then
    perform game_private.refuse('invalid_hand', 'history: a compact history (format 1, 6 bytes to 64 KiB, inflating to 2 bytes to 1 MiB)');
  end if;
  if p_started is null or jsonb_typeof(p_started) <> 'object' or p_started ->> 'type' is distinct from 'hand_started'
     or pg_column_size(p_started) > 8192 then
    perform game_private.refuse('invalid_hand', 'started: the hand''s hand_started event');
  end if;
  v_record_hash := game_private.chained_record_hash(p_table_id, p_hand_id, p_deal, p_record, p_record_signature, p_dealer_key);
  if v_table.mode = 'sng' then
    v_busted := game_private.write_tournament_end(v_table, p_stacks, p_auto_folds);
  else
    select * into v_busted, v_link_players, v_link_seqs, v_link_deltas, v_link_stacks, v_link_hashes
      from game_private.write_cash_end(p_table_id, p_hand_id, p_stacks, p_rake, coalesce(p_hand_number, 0));
  end if;
  insert into game.hand_histories (hand_id, table_id, hand_number, status, compact, started, agents, players, started_at, ended_at, busted,
                                   deal, record, record_hash, record_signature, dealer_key,
                                   link_players, link_seqs, link_deltas, link_stacks, link_hashes)
  values (p_hand_id, p_table_id, coalesce(p_hand_number, 0), 'finished', p_compact, p_started,
          coalesce((select array_agg(distinct a order by a) from unnest(p_agents) a where a is not null), '{}'),
          -- the owners of the positions the hand dealt in (every one of them has a stack at its end)
          coalesce((select array_agg(distinct p.user_id order by p.user_id)
                      from game.table_players p where p.id = any (array(select k::bigint from jsonb_object_keys(p_stacks) k))), '{}'),
          least(coalesce(p_started_at, v_table.current_hand_started_at, now()), now()), now(), v_busted,
          p_deal, p_record, v_record_hash, p_record_signature, p_dealer_key,
          v_link_players, v_link_seqs, v_link_deltas, v_link_stacks, v_link_hashes);
  -- most hands bust nobody: at a cash table (no tournament state) that answer needs no read
  if v_table.mode = 'cash' and cardinality(v_busted) = 0 then
    return jsonb_build_object('replayed', false, 'state', null, 'busted', '[]'::jsonb);
  end if;
  return game_private.hand_end_answer(p_table_id, v_busted, false);
end;
$$;

-- Issue 33: a group commit's batch of hand boundaries (server/game/hands/group-commit.ts) in ONE
-- call: every hand end given (game.end_hand's arguments, an array each, one entry per end; the
-- agents as uuid[] literals), then every deal (game.deal_hand's), in the order given, in the one
-- transaction of this statement. One round trip for the batch where a statement each made two per
-- boundary plus begin and commit: under load a round trip waits for a core, and the whole process's
-- boundaries wait for the batch in flight. It adds nothing to what the caller may do: each boundary
-- is written by the same function the caller may call alone, with the same checks (the table's
-- lock, its lease, its hand; neither reads who calls); a refusal of any of them refuses the whole call (nothing is
-- written) and the caller writes each boundary alone. Answers one row per boundary, in order: an
-- end's answer (game.end_hand's), a deal's seats (game.deal_hand's rows, as a JSON array).
create or replace function game.write_boundaries(
  e_table text[], e_hand text[], e_number bigint[], e_stacks jsonb[], e_rake bigint[], e_auto_folds integer[],
  e_compact bytea[], e_started jsonb[], e_agents text[], e_started_at timestamptz[], e_epoch bigint[],
  e_deal jsonb[], e_record text[], e_signature text[], e_dealer_key text[],
  d_table text[], d_hand text[], d_epoch bigint[], d_deal jsonb[], d_next jsonb[]
) returns table (kind text, ord integer, answer jsonb)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_ends integer := coalesce(cardinality(e_table), 0);
  v_deals integer := coalesce(cardinality(d_table), 0);
begin
  if v_ends + v_deals = 0 then
    return;
  end if;
  -- every array of a kind has one entry per boundary of that kind
  if cardinality(array_remove(array[cardinality(e_hand), cardinality(e_number), cardinality(e_stacks), cardinality(e_rake),
       cardinality(e_auto_folds), cardinality(e_compact), cardinality(e_started), cardinality(e_agents), cardinality(e_started_at),
       cardinality(e_epoch), cardinality(e_deal), cardinality(e_record), cardinality(e_signature), cardinality(e_dealer_key)], v_ends)) > 0
     or cardinality(array_remove(array[cardinality(d_hand), cardinality(d_epoch), cardinality(d_deal), cardinality(d_next)], v_deals)) > 0 then
    perform game_private.refuse('bad_request', 'a batch of boundaries names one entry of each argument per boundary');
  end if;
  for i in 1 .. v_ends loop
    kind := 'end';
    ord := i;
    answer := game.end_hand(e_table[i], e_hand[i], e_number[i], e_stacks[i], e_rake[i], e_auto_folds[i], e_compact[i], e_started[i],
      e_agents[i]::uuid[], e_started_at[i], e_epoch[i], e_deal[i], e_record[i], e_signature[i], e_dealer_key[i]);
    return next;
  end loop;
  for i in 1 .. v_deals loop
    kind := 'deal';
    ord := i;
    select coalesce(jsonb_agg(to_jsonb(s)), '[]'::jsonb) into answer
      from game.deal_hand(d_table[i], d_hand[i], d_epoch[i], d_deal[i], d_next[i]) s;
    return next;
  end loop;
end
$$;

-- A compact history as game.end_hand takes it (server/game/hands/compact.ts): format byte 1, the
-- inflated length (4 bytes, big-endian: 2 bytes to 1 MiB, so no reader is asked to inflate more),
-- then the deflated bytes; 6 bytes to 64 KiB in all. SQL cannot inflate: what it checks is the
-- shape; a reader that cannot inflate it answers the hand as having no readable history.
create or replace function game_private.compact_valid(p_compact bytea) returns boolean
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  -- a case, not an `and`: SQL does not promise to test the length before reading the bytes
  select case when p_compact is null or octet_length(p_compact) not between 6 and 65536 then false
              else get_byte(p_compact, 0) = 1
                   -- (parenthesised: << and | share one precedence in SQL)
                   and ((get_byte(p_compact, 1)::bigint << 24) | (get_byte(p_compact, 2) << 16) | (get_byte(p_compact, 3) << 8) | get_byte(p_compact, 4))
                       between 2 and 1048576 end
$$;

-- A history's hand_started event (a hand stored before issue 33 keeps it in its jsonb history; one
-- stored since has it in `started`): the engine's first event, read without unpacking the history.
create or replace function game_private.started_event(p_history jsonb) returns jsonb
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select case when jsonb_typeof(p_history) <> 'array' then null
              when p_history -> 0 ->> 'type' = 'hand_started' then p_history -> 0
              else (select e from jsonb_array_elements(p_history) e where e ->> 'type' = 'hand_started' limit 1) end
$$;

-- A stored hand's hand_started event, whole. Since issue 33 a hand keeps it in `started` (before, in
-- its jsonb history); since its sixth part a hand with a signed record stores it without the seats
-- and the hand id (server/game/live/wire.ts startedJson), which the record holds: read back from it.
create or replace function game_private.started_of(p_started jsonb, p_history jsonb, p_record text) returns jsonb
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select case when s is null or s ? 'seats' or p_record is null then s
              else s || (select jsonb_build_object('seats', r -> 'seats', 'handId', r -> 'handId') from (select p_record::jsonb r) x) end
    from (select coalesce(p_started, game_private.started_event(p_history)) s) y
$$;

-- The seats a hand dealt in and the users who own them, read from its hand_started event (which
-- names each seat's position id).
create or replace function game_private.hand_positions(p_table_id text, p_started jsonb)
  returns table (seat_index integer, user_id uuid)
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select (st ->> 'seat')::integer, p.user_id
    from jsonb_array_elements(case when jsonb_typeof(p_started -> 'seats') = 'array' then p_started -> 'seats' else '[]' end) st
    join game.table_players p on p.table_id = p_table_id
     and p.id = case when st ->> 'playerId' ~ '^[0-9]{1,18}$' then (st ->> 'playerId')::bigint end
   where p_started ->> 'type' = 'hand_started'
$$;

-- A hand as one of the users dealt into it reads it (GET /api/hands/:handId): the row and that
-- user's seats in it; no row for a hand the user did not play. The row's compact history is
-- inflated by the reader (server/game/hands/compact.ts).
create or replace function game.hand_for_player(p_hand_id text, p_user_id uuid)
  returns table (hand game.hand_histories, seats integer[])
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select h, coalesce((select array_agg(d.seat_index order by d.seat_index)
                        from game_private.hand_positions(h.table_id, game_private.started_of(h.started, h.history, h.record)) d
                       where d.user_id = p_user_id), '{}')
    from game.hand_histories h
   where h.hand_id = p_hand_id and h.players @> array[p_user_id]
$$;

-- The hand's history and result, stored at its end (same transaction as finish_hand when the
-- caller wraps them; a replay of the same hand id changes nothing). p_started_at: when the dealer
-- dealt it (the row is written at its end, so now() is the end), never after the end.
create or replace function game.record_hand(
  p_table_id text, p_hand_id text, p_hand_number bigint, p_status text, p_history jsonb, p_result jsonb,
  p_agents uuid[] default '{}', p_started_at timestamptz default null
) returns game.hand_histories
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_row game.hand_histories;
begin
  if p_hand_id is null or length(p_hand_id) not between 1 and 128 or p_status not in ('finished', 'abandoned')
     or p_history is null or jsonb_typeof(p_history) <> 'array' then
    perform game_private.refuse('invalid_hand', 'hand id, status finished|abandoned, history array');
  end if;
  insert into game.hand_histories as h (hand_id, table_id, hand_number, status, history, result, agents, players, started_at, ended_at)
  values (p_hand_id, p_table_id, coalesce(p_hand_number, 0), p_status, p_history, p_result,
          coalesce((select array_agg(distinct a order by a) from unnest(p_agents) a where a is not null), '{}'),
          -- the owners of the positions the hand dealt in
          coalesce((select array_agg(distinct d.user_id order by d.user_id)
                      from game_private.hand_positions(p_table_id, game_private.started_event(p_history)) d), '{}'),
          least(coalesce(p_started_at, now()), now()), now())
  on conflict (hand_id) do nothing
  returning h.* into v_row;
  if v_row.hand_id is null then
    select * into v_row from game.hand_histories h where h.hand_id = p_hand_id;
  end if;
  return v_row;
end;
$$;

-- A hand the process did not finish (it stopped mid-hand): the table is released with the stacks
-- of the hand's start, which are the ones stored (a hand writes stacks only at its end), so no
-- chip moves and none is lost.
create or replace function game.abandon_hand(p_table_id text, p_epoch bigint default null) returns text
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_table game.tables;
begin
  v_table := game_private.lock_leased(p_table_id, p_epoch);
  if v_table.current_hand_id is null then
    return null;
  end if;
  perform game_private.abandon_current_hand(v_table);
  return v_table.current_hand_id;
end;
$$;

-- A hand begun but never dealt (the seats read under the table's lock left fewer than two players
-- to deal to): the table is released and nothing is recorded, as no card was dealt and no chip
-- moved; its committed deal is the table's next again (the one the deal committed after it was never
-- published).
create or replace function game.release_hand(p_table_id text, p_hand_id text, p_epoch bigint default null) returns boolean
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_table game.tables;
begin
  v_table := game_private.lock_leased(p_table_id, p_epoch);
  if p_hand_id is null or v_table.current_hand_id is distinct from p_hand_id then
    return false;
  end if;
  update game.tables t set current_hand_id = null, current_hand_started_at = null, deal_current = null,
         deal_next = case when t.deal_current ->> 'handId' = p_hand_id then t.deal_current - 'contributions' else t.deal_next end
   where t.table_id = p_table_id;
  return true;
end;
$$;

-- A room opens its table (under its lease): a hand left in play is abandoned (the stacks of its start
-- stand), and so is the deal the previous room committed and never dealt: its seed was published as
-- a commitment, so it is revealed rather than reused or dropped (docs/dealer.md). Answers the number
-- of the table's latest hand, its chain head and the abandoned deals to reveal, in order.
create or replace function game.open_deals(p_table_id text, p_epoch bigint)
  returns table (hand_number bigint, head text, pending jsonb)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_table game.tables;
begin
  v_table := game_private.lock_leased(p_table_id, p_epoch);
  perform game_private.abandon_current_hand(v_table);
  select * into v_table from game.tables t where t.table_id = p_table_id;
  if v_table.deal_next is not null then
    perform game_private.store_abandoned(p_table_id, v_table.deal_next - 'contributions', now());
    update game.tables t set deal_next = null where t.table_id = p_table_id;
  end if;
  return query select
    (select count(*) from game.hand_histories h where h.table_id = p_table_id),
    (select h.record_hash from game.hand_histories h where h.table_id = p_table_id and h.record_hash is not null
      order by h.hand_number desc limit 1),
    (select coalesce(jsonb_agg(jsonb_build_object('handId', h.hand_id, 'handNumber', h.hand_number, 'deal', h.sealed_deal) order by h.hand_number), '[]')
       from game.hand_histories h where h.table_id = p_table_id and h.sealed_deal is not null);
end;
$$;

-- The next hand's deal committed by the room that runs the table, before its commitment is published
-- (a room that opens; game.deal_hand commits the following ones). A table holds one committed deal:
-- a second is refused (deal_already_committed), so a room cannot draw again a seed it published.
create or replace function game.commit_deal(p_table_id text, p_epoch bigint, p_next jsonb) returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_table game.tables;
begin
  v_table := game_private.lock_leased(p_table_id, p_epoch);
  if not game_private.sealed_deal_valid(p_next) then
    perform game_private.refuse('invalid_hand', 'a committed deal: {algorithm, handNumber, handId, commitment, sealed}');
  end if;
  if v_table.deal_next is not null or v_table.current_hand_id is not null then
    perform game_private.refuse('deal_already_committed', format('table %s already holds a committed deal', p_table_id));
  end if;
  update game.tables t set deal_next = p_next - 'contributions' where t.table_id = p_table_id;
end;
$$;
-- An abandoned deal's reveal (the record's shape: server/game/hands/hand-record.ts abandonedRecord):
-- the deal as sealed, its seed (which must hash to the commitment: a login that cannot open the
-- seal cannot reveal a seed of its own), and a record that says no chip moved. An empty seed says
-- the seal could not be opened (the dealer key changed): the record says so, and verify:hand fails
-- that hand's commitment check in plain view.
create or replace function game_private.abandoned_reveal_valid(p_row game.hand_histories, p_deal jsonb, p_record jsonb) returns boolean
  language sql immutable
  set search_path = pg_catalog, pg_temp
as $$
  select p_deal ->> 'algorithm' = p_row.sealed_deal ->> 'algorithm' and p_deal ->> 'commitment' = p_row.sealed_deal ->> 'commitment'
     and p_deal -> 'contributions' = p_row.sealed_deal -> 'contributions'
     and (p_deal ->> 'serverSeed' = '' or (p_deal ->> 'serverSeed' ~ '^([0-9a-f]{2})+$' and length(p_deal ->> 'serverSeed') <= 400
          and game_private.deal_commitment(p_deal ->> 'algorithm', decode(p_deal ->> 'serverSeed', 'hex'), p_row.table_id, p_row.hand_number, p_row.hand_id)
              = p_deal ->> 'commitment'))
     and p_record -> 'abandoned' = 'true'::jsonb and (p_record ->> 'handNumber')::bigint = p_row.hand_number
     and p_record -> 'seats' = p_row.sealed_deal -> 'seats' and p_record ->> 'rake' = '0'
     and p_record -> 'stacks' = (select coalesce(jsonb_agg(jsonb_build_object('seat', s -> 'seat', 'stack', s -> 'stack')), '[]')
                                   from jsonb_array_elements(p_row.sealed_deal -> 'seats') s)
     and p_record -> 'actions' = '[]'::jsonb and p_record -> 'shown' = '[]'::jsonb and p_record ->> 'board' = ''
$$;

-- The room that runs the table reveals an abandoned deal it found (game.open_deals) or left (a hand
-- dropped): the revealed deal and the signed record (abandoned: true) are stored on the abandoned
-- hand, chained to the table's latest record, in hand order. The table deals again once none is left.
create or replace function game.reveal_abandoned(
  p_table_id text, p_hand_id text, p_epoch bigint, p_deal jsonb, p_record text, p_record_signature text, p_dealer_key text
) returns text
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_row game.hand_histories;
  v_hash text;
  v_record jsonb;
begin
  perform game_private.lock_leased(p_table_id, p_epoch);
  select * into v_row from game.hand_histories h
   where h.table_id = p_table_id and h.sealed_deal is not null order by h.hand_number limit 1;
  if v_row.hand_id is distinct from p_hand_id then
    perform game_private.refuse('record_not_in_chain', format('the next abandoned deal of table %s to reveal is %s', p_table_id, coalesce(v_row.hand_id, 'none')));
  end if;
  begin
    v_record := p_record::jsonb;
  exception when others then
    perform game_private.refuse('invalid_hand', 'the record is not JSON');
  end;
  if p_deal is null or jsonb_typeof(p_deal) <> 'object' or not game_private.abandoned_reveal_valid(v_row, p_deal, v_record) then
    perform game_private.refuse('invalid_hand', 'an abandoned deal reveals its sealed deal and a record in which no chip moved');
  end if;
  v_hash := game_private.chained_record_hash(p_table_id, p_hand_id, p_deal, p_record, p_record_signature, p_dealer_key);
  update game.hand_histories h set deal = p_deal, record = p_record, record_hash = v_hash, record_signature = p_record_signature,
         dealer_key = p_dealer_key, sealed_deal = null
   where h.hand_id = p_hand_id;
  update game.tables t set unrevealed_deals = greatest(t.unrevealed_deals - 1, 0) where t.table_id = p_table_id;
  return v_hash;
end;
$$;
