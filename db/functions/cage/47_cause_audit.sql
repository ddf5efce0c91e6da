-- The audit of causes (issue 31; server/audit/): beside the sums of cage.audit(), every change of a
-- seat's stack must come from a hand whose signed record verifies against a pinned dealer key,
-- continues its table's chain and replays to that change. SQL has no ed25519 and no poker engine, so
-- the checks run in TypeScript; these functions hand them what is new since their marks
-- (cage_private.cause_table_marks, cause_position_marks: migration 000044), in one snapshot, and
-- record the run. The marks move only after a clean periodic run (cage.cause_audit_finish).

-- The hands after each table's mark (every hand with p_from_start), oldest first per table, at most
-- p_limit in all: the record and deal, what the stored history says the hand was dealt with (its
-- hand_started event, stored beside the compact history since issue 33: blinds, ante, blind seats), the table's settings and mode, the `hand` links the
-- end wrote (per position: delta and stack), and each of the record's positions' stack before the
-- hand (its last link before the hand ended). `latest`: the table's last finished hand, for which the
-- positions' stacks now are given (`now_stacks`: tournament stacks at a tournament table).
create or replace function cage.cause_audit_hands(p_from_start boolean, p_limit integer)
  returns table (
    table_id text, mode text, settings jsonb, mark_number bigint, mark_hash text, mark_stacks jsonb,
    hand_id text, hand_number bigint, status text, ended_at timestamptz, legacy boolean, deal jsonb, record text,
    record_hash text, record_signature text, dealer_key text, started jsonb, links jsonb, before jsonb,
    latest boolean, now_stacks jsonb
  )
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  with marked as (
    select t.table_id, t.mode::text as mode, t.settings, m.hand_number as mark_number, m.record_hash as mark_hash, coalesce(m.stacks, '{}') as mark_stacks
      from game.tables t
      left join cage_private.cause_table_marks m on m.table_id = t.table_id and not p_from_start
  ), picked as (
    -- each table's oldest hands first, taken in turns (every table's first, then every table's
    -- second, ...): whatever the limit cuts, each table keeps a prefix of its hands, so its mark can
    -- move to the last one read
    select k.*, h.*
      from marked k
      cross join lateral (
        select h.hand_id, h.hand_number, h.status, h.ended_at, h.deal, h.record, h.record_hash, h.record_signature, h.dealer_key, h.history, h.started,
               h.link_players, h.link_deltas, h.link_stacks,
               row_number() over (order by h.hand_number, h.hand_id) as turn
          from game.hand_histories h
         where h.table_id = k.table_id and h.hand_number > coalesce(k.mark_number, -1)
         order by h.hand_number, h.hand_id
         limit p_limit) h
     order by h.turn, k.table_id
     limit p_limit
  )
  select p.table_id, p.mode, p.settings, p.mark_number, p.mark_hash, p.mark_stacks,
         p.hand_id, p.hand_number, p.status, p.ended_at,
         p.ended_at < (select s.records_since from cage_private.cause_audit_settings s),
         p.deal, p.record, p.record_hash, p.record_signature, p.dealer_key,
         -- the engine's first event: written beside a compact history (issue 33), else read from the
         -- jsonb history of a hand stored before
         coalesce(p.started, case when p.history -> 0 ->> 'type' = 'hand_started' then p.history -> 0
                                  else (select e from jsonb_array_elements(p.history) e where e ->> 'type' = 'hand_started' limit 1) end),
         -- the links the hand's row carries (issue 33) and those of game.position_links naming it
         -- (a hand ended before the rows carried them, or by game.finish_hand)
         (select coalesce(jsonb_object_agg(k.player_id::text, jsonb_build_object('delta', k.delta::text, 'stack', k.stack::text)), '{}')
            from (select u.player_id, u.delta, u.stack from unnest(p.link_players, p.link_deltas, p.link_stacks) u (player_id, delta, stack)
                  union all
                  select l.player_id, l.delta, l.stack from game.position_links l where l.ref_id = p.hand_id and l.event = 'hand') k),
         case when p.record is not null and p.mode = 'cash' then
           -- a position the hand moved: its link's stack less its delta (the link check holds that to
           -- the link before it); one it did not: its last link before the hand, in either place
           (select coalesce(jsonb_object_agg(s ->> 'playerId',
                     coalesce((select (u.stack - u.delta)::text
                                 from unnest(p.link_players, p.link_deltas, p.link_stacks) u (player_id, delta, stack)
                                where u.player_id = (s ->> 'playerId')::bigint),
                              game_private.stack_before((s ->> 'playerId')::bigint, p.hand_number, p.ended_at)::text)), '{}')
              from jsonb_array_elements(case when jsonb_typeof(p.record::jsonb -> 'seats') = 'array' then p.record::jsonb -> 'seats' else '[]' end) s
             where s ->> 'playerId' ~ '^[0-9]{1,18}$')
         end,
         p.hand_number = (select max(h2.hand_number) from game.hand_histories h2 where h2.table_id = p.table_id and h2.status = 'finished'),
         (select coalesce(jsonb_object_agg(tp.id::text, coalesce(tp.tournament_stack, 0)::text), '{}')
            from game.table_players tp where tp.table_id = p.table_id and tp.status <> 'closed' and p.mode <> 'cash')
    from picked p
   order by p.table_id, p.hand_number, p.hand_id
$$;

-- The links of the positions' chains after each position's mark (every link with p_from_start), at
-- most p_limit, in chain order, from both places links are kept (game_private.position_chain: the
-- hand rows read from the hand the mark's last hand link was in), with the hand each `hand` link
-- names (null when there is none) and its number.
create or replace function cage.cause_audit_links(p_from_start boolean, p_limit integer)
  returns table (
    player_id bigint, table_id text, mark_seq integer, mark_stack bigint, seq integer, event text, delta bigint, stack bigint,
    ref_id text, hand_table text, hand_status text, chip_balance bigint, chain_length integer, position_status text,
    hand_number bigint
  )
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select p.id, p.table_id, m.seq, m.stack, l.seq, l.event, l.delta, l.stack, l.ref_id, h.table_id, h.status, p.chip_balance, p.chain_length, p.status,
         h.hand_number
    from game.table_players p
    left join cage_private.cause_position_marks m on m.player_id = p.id and not p_from_start
    cross join lateral game_private.position_chain(p.id, coalesce(m.seq, 0), m.hand_number) l
    left join game.hand_histories h on l.event = 'hand' and h.hand_id = l.ref_id
   where p.chain_length > coalesce(m.seq, 0)
   order by p.id, l.seq
   limit p_limit
$$;

-- A periodic run's end: recorded (clean or not: the liveness reads the last clean one); the marks of
-- the tables and positions where it found nothing move to what it covered (p_tables: [{table_id,
-- hand_number, record_hash, stacks}], p_positions: [{player_id, seq, stack, hand_number}]). A mark moves only
-- forward, and only to hands and links that exist.
create or replace function cage.cause_audit_finish(
  p_clean boolean, p_violations integer, p_tables jsonb, p_positions jsonb, p_hands integer, p_links integer
) returns timestamptz
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_at timestamptz;
begin
  if p_clean is not null then
    insert into cage_private.cause_table_marks as m (table_id, hand_number, record_hash, stacks)
    select x.table_id, x.hand_number, x.record_hash, coalesce(x.stacks, '{}')
      from jsonb_to_recordset(coalesce(p_tables, '[]')) as x (table_id text, hand_number bigint, record_hash text, stacks jsonb)
     where (x.hand_number = -1 and not exists (select from game.hand_histories h where h.table_id = x.table_id and h.status = 'finished'))
        or exists (select from game.hand_histories h where h.table_id = x.table_id and h.hand_number = x.hand_number)
    on conflict (table_id) do update set hand_number = excluded.hand_number, record_hash = excluded.record_hash,
                                         stacks = excluded.stacks, audited_at = now()
     where m.hand_number < excluded.hand_number;
    -- hand_number: the hand the position's last hand link read was in (where the next run starts
    -- reading the table's hands); a run that read none of its hand links keeps the mark's
    insert into cage_private.cause_position_marks as m (player_id, seq, stack, hand_number)
    select x.player_id, x.seq, x.stack, coalesce(x.hand_number, o.hand_number)
      from jsonb_to_recordset(coalesce(p_positions, '[]')) as x (player_id bigint, seq integer, stack bigint, hand_number bigint)
      left join cage_private.cause_position_marks o on o.player_id = x.player_id
     where exists (select from game_private.position_chain(x.player_id, x.seq - 1, coalesce(x.hand_number, o.hand_number)) l
                    where l.seq = x.seq and l.stack = x.stack)
    on conflict (player_id) do update set seq = excluded.seq, stack = excluded.stack, hand_number = excluded.hand_number
     where m.seq < excluded.seq;
  end if;
  insert into cage_private.audit_runs (periodic, clean, violations, hands_read, links_read, checkpoint)
  values (true, p_clean and coalesce(p_violations, 0) = 0, coalesce(p_violations, 0), coalesce(p_hands, 0), coalesce(p_links, 0),
          jsonb_build_object('cageEntryId', (select c.entry_id from cage_private.audit_checkpoint c),
                             'tables', jsonb_array_length(coalesce(p_tables, '[]')), 'positions', jsonb_array_length(coalesce(p_positions, '[]'))))
  returning ran_at into v_at;
  return v_at;
end;
$$;

-- The audit's liveness: when the periodic audit last ran clean, and when it last ran at all.
create or replace function cage.audit_liveness()
  returns table (last_clean_at timestamptz, last_run_at timestamptz, last_run_clean boolean)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select (select max(r.ran_at) from cage_private.audit_runs r where r.periodic and r.clean),
         r.ran_at, r.clean
    from (select null) x
    left join lateral (select r.ran_at, r.clean from cage_private.audit_runs r order by r.id desc limit 1) r on true
$$;

-- Whether the audit of causes has covered a table: it has a mark (a run found nothing there) and the
-- mark is at the table's last finished hand. Tournament payouts and bet settlements wait for it.
create or replace function cage_private.hands_audited(p_table_id text) returns boolean
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select coalesce((select m.hand_number from cage_private.cause_table_marks m where m.table_id = p_table_id)
                  >= coalesce((select max(h.hand_number) from game.hand_histories h where h.table_id = p_table_id and h.status = 'finished'), -1),
                  false)
$$;

-- The dealer's pinned keys, as the audit reads them (the same rows as game.dealer_public_keys()).
create or replace function cage.audit_dealer_keys()
  returns table (public_key text, pinned_at timestamptz, retired_at timestamptz)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select k.public_key, k.pinned_at, k.retired_at from game_private.dealer_public_keys k order by k.pinned_at, k.public_key
$$;

-- The tournaments whose stacks the hands decide (playing, ended, settling): per table, its starting
-- stack, its mark, its last finished hand and every entry's tournament stack now. A stack that no
-- hand the audit read ended with (a stack written by no hand at all) is the tournament check's to name.
create or replace function cage.cause_audit_tournaments(p_from_start boolean)
  returns table (table_id text, starting_stack text, mark_number bigint, mark_hash text, mark_stacks jsonb, last_hand bigint, now_stacks jsonb)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select t.table_id, t.settings ->> 'startingStack', m.hand_number, m.record_hash, coalesce(m.stacks, '{}'),
         (select max(h.hand_number) from game.hand_histories h where h.table_id = t.table_id and h.status = 'finished'),
         (select coalesce(jsonb_object_agg(p.id::text, coalesce(p.tournament_stack, 0)::text), '{}')
            from game.table_players p where p.table_id = t.table_id and p.entry_state = 'paid' and p.status <> 'closed')
    from game.tables t
    left join cage_private.cause_table_marks m on m.table_id = t.table_id and not p_from_start
   where t.mode = 'sng' and t.tournament_state in ('playing', 'ended', 'settling')
   order by t.table_id
$$;
