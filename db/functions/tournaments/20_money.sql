-- The tournament table of a cage call, locked: a chain-bank tournament's money is in its vault,
-- paid in and out by the chain bank alone (db/functions/bank/40_tournaments.sql).
create or replace function cage_private.cage_tournament(p_table_id text) returns game.tables
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_table game.tables;
begin
  v_table := game_private.lock_tournament(p_table_id);
  if v_table.bank <> 'cage' then
    perform cage_private.refuse('not_a_cage_table', format('table %s keeps its money on chain', p_table_id));
  end if;
  return v_table;
end;
$$;

-- A registration paid (the table locked, the registrant's row a reserve): its entry claim is the
-- fee (chip_balance), its chain link the buy-in under the entry's ref, its expiry job gone; the
-- entry completing the field moves the tournament to starting. Both banks' entries end here.
create or replace function game_private.accept_tournament_entry(v_table game.tables, p_player_id bigint, p_amount bigint, p_ref text)
  returns game.tables
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_seats integer;
begin
  update game.table_players p
     set chip_balance = p_amount, entry_state = 'paid', entry_ref_id = p_ref, reserved_until = null
   where p.id = p_player_id;
  perform game_private.extend_chain(p_player_id, 'buy_in', p_amount, p_ref);
  perform game_private.cancel_reserve_expiry(p_player_id);
  v_seats := game_private.setting_bigint(v_table.settings, 'seats')::integer;
  if (select count(*) from game.table_players p where p.table_id = v_table.table_id and p.status <> 'closed' and p.entry_state = 'paid') >= v_seats then
    return game_private.tournament_to_starting(v_table.table_id);
  end if;
  perform game_private.registration_changed(v_table.table_id);
  return v_table;
end;
$$;

-- The entry of a chain-bank tournament (game.credit_seat's branch for it, the chain bank's credit
-- callback): accepted only from the chain bank's deposit under p_key, confirmed on chain, not
-- credited yet, mode sng, of this user, table, seat and amount (its seat the reserve it held).
-- The registrant's reserve becomes the paid entry (game_private.accept_tournament_entry); the credit
-- is recorded in game.seat_credits (replay-once per key, as a cash credit).
create or replace function game_private.credit_chain_entry(
  v_table game.tables, p_key text, p_user_id uuid, p_seat_index integer, p_amount bigint
) returns table (player_id bigint, seat_index integer, chip_balance bigint, history_hash text, status text)
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_credit game.seat_credits;
  v_player game.table_players;
begin
  select * into v_credit from game.seat_credits c where c.credit_key = p_key;
  if v_credit.credit_key is not null then
    if v_credit.table_id <> v_table.table_id or v_credit.user_id <> p_user_id or v_credit.amount <> p_amount then
      perform game_private.refuse('invalid_credit', format('credit %s was for other values', p_key));
    end if;
    return query select p.id, p.seat_index, p.chip_balance, p.history_hash, 'replayed'::text
                   from game.table_players p where p.id = v_credit.player_id;
    return;
  end if;
  if not exists (select from bank.deposit_intents d
                  where d.idempotency_key = p_key and d.status = 'confirmed' and d.verified_at is not null
                    and d.credited_at is null and d.mode = 'sng'
                      and not exists (select from bank.vault_refunds r where r.deposit_key = d.idempotency_key)
                    and d.user_id = p_user_id and d.table_id = v_table.table_id and d.seat_index = p_seat_index and d.amount = p_amount) then
    perform game_private.refuse('credit_not_backed',
      format('no confirmed chain entry deposit %s for this user, table, seat and amount', p_key));
  end if;
  select * into v_player from game.table_players p
   where p.table_id = v_table.table_id and p.user_id = p_user_id and p.status <> 'closed' for update;
  if v_player.id is null then
    perform game_private.refuse('tournament_not_registered', 'the seat this entry held is gone');
  end if;
  if v_player.entry_state = 'paid' then
    perform game_private.refuse('tournament_already_registered');
  end if;
  perform game_private.require_registering(v_table);
  if p_amount <> game_private.setting_bigint(v_table.settings, 'entryFee') then
    perform game_private.refuse('tournament_entry_fee_mismatch', format('the entry fee is %s', v_table.settings ->> 'entryFee'));
  end if;
  perform game_private.accept_tournament_entry(v_table, v_player.id, p_amount, p_key);
  insert into game.seat_credits (credit_key, table_id, user_id, player_id, amount, status)
  values (p_key, v_table.table_id, p_user_id, v_player.id, p_amount, 'credited');
  return query select p.id, p.seat_index, p.chip_balance, p.history_hash, 'credited'::text
                 from game.table_players p where p.id = v_player.id;
end;
$$;

-- Tournament money on the cage (spec: "Tournaments on the cage"). The table's tournament pool
-- (cage account tournament_pool, scope = the table id) takes each entry fee (tournament_entry,
-- user -> pool), gives a refund back (tournament_refund, pool -> user) and pays the places
-- (tournament_payout, pool -> user, ref `payout:{tableId}:{position}`). The house fee is never moved:
-- a closed tournament's pool holds exactly rakeFee x seats (the audit checks it).

-- The sng branch of the deposit: the entry fee of a registration. Replay-once per (user,
-- idempotency key) like a cash deposit (the same key again: the intent as it stands). Gates, in
-- order: the table is a tournament still registering, not frozen; the amount is the entry fee; the
-- caller's reserve (or, with none, a seat reserved now: the audience and advisor gates apply); the
-- seat index, when given, is the reserved seat. With too little on the cage balance nothing is
-- written, but a seat held from before is released (outcome `insufficient`, the route's 402): the
-- function returns instead of raising so that the release commits. A paid entry completing the field moves
-- the tournament to starting.
create or replace function cage.open_tournament_entry(
  p_sid uuid, p_idempotency_key text, p_table_id text, p_seat_index integer, p_amount bigint, p_reserve_ttl_seconds integer
) returns table (ref_id text, outcome text, seat_index integer, tournament_state text, registered_count integer)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  -- the player: the user of the access JWT's live grant (never an id the caller names)
  v_user uuid := auth_private.user_of_sid(p_sid);
  v_ref text;
  v_intent cage.deposit_intents;
  v_table game.tables;
  v_player game.table_players;
  v_user_account bigint;
  v_pool bigint;
begin
  if v_user is null or p_idempotency_key is null or p_idempotency_key !~ '^[\x21-\x7e]{1,128}$'
     or (p_seat_index is not null and p_seat_index not between 0 and 9) then
    perform cage_private.refuse('bad_request', 'idempotency key: 1..128 printable characters; seat index 0..9');
  end if;
  if p_amount is null or p_amount <= 0 or p_amount > cage_private.max_amount() then
    perform cage_private.refuse('invalid_amount', 'a positive whole number of chips');
  end if;
  v_ref := cage.deposit_ref(v_user, p_idempotency_key);
  v_table := cage_private.cage_tournament(p_table_id);
  select * into v_intent from cage.deposit_intents d where d.ref_id = v_ref;
  if v_intent.ref_id is null then
    perform cage_private.require_real_money(v_table.money_kind::text);
  end if;
  if v_intent.ref_id is not null then
    if v_intent.table_id <> p_table_id or v_intent.amount <> p_amount then
      perform cage_private.refuse('idempotency_key_reused', 'this idempotency key was used for another deposit');
    end if;
    -- a replay answers what is true now, as the read does (cage.deposit_states): the entry stands, or it was refunded
    return query select v_ref,
      case when (select d.status from cage.deposit_states d where d.ref_id = v_ref) = 'refunded' then 'replayed_refunded' else 'replayed' end,
      v_intent.seat_index, v_table.tournament_state, game_private.registered_count(p_table_id);
    return;
  end if;
  if v_table.status = 'frozen' then
    perform cage_private.refuse('table_frozen');
  end if;
  perform game_private.require_registering(v_table);
  if p_amount <> game_private.setting_bigint(v_table.settings, 'entryFee') then
    perform game_private.refuse('tournament_entry_fee_mismatch', format('the entry fee is %s', v_table.settings ->> 'entryFee'));
  end if;
  select * into v_player from game.table_players p
   where p.table_id = p_table_id and p.user_id = v_user and p.status <> 'closed' for update;
  if v_player.entry_state = 'paid' then
    perform game_private.refuse('tournament_already_registered');
  end if;
  -- The balance is judged before a seat is reserved: without a reserve, too little writes nothing
  -- (no reserve made and closed again, so refused retries add no rows). A reserve held from before
  -- is released below, as the overdraft of a held seat is (spec).
  if v_player.id is null
     and coalesce((select a.balance from cage.cage_accounts a
                    where a.id = cage_private.find_account('user', v_user, null, v_table.money_kind)), 0) < p_amount then
    return query select null::text, 'insufficient'::text, null::integer, v_table.tournament_state, game_private.registered_count(p_table_id);
    return;
  end if;
  if v_player.id is null then
    -- no reserve yet: one now, for a human (an agent registers through the internal route first)
    perform game.tournament_reserve(p_table_id, p_sid, null, null, p_reserve_ttl_seconds);
    select * into v_player from game.table_players p
     where p.table_id = p_table_id and p.user_id = v_user and p.status <> 'closed' for update;
  end if;
  if p_seat_index is not null and p_seat_index <> v_player.seat_index then
    perform game_private.refuse('invalid_seat_index', format('the reserved seat is %s (or omit seatIndex)', v_player.seat_index));
  end if;

  v_user_account := cage.ensure_account('user', v_user, null, v_table.money_kind::text);
  if (select a.balance from cage.cage_accounts a where a.id = v_user_account) < p_amount then
    -- the overdraft releases the held seat; no money moves and no intent is written
    update game.table_players p set status = 'closed', closed_at = now() where p.id = v_player.id;
    perform game_private.cancel_reserve_expiry(v_player.id);
    perform game_private.registration_changed(p_table_id);
    return query select null::text, 'insufficient'::text, v_player.seat_index, v_table.tournament_state, game_private.registered_count(p_table_id);
    return;
  end if;
  v_pool := cage.ensure_account('tournament_pool', null, p_table_id, v_table.money_kind::text);
  insert into cage.deposit_intents (ref_id, idempotency_key, user_id, table_id, seat_index, amount, money_kind, status, credited_at)
  values (v_ref, p_idempotency_key, v_user, p_table_id, v_player.seat_index, p_amount, v_table.money_kind, 'confirmed', now());
  perform cage.post_movement(v_ref, 'tournament_entry', v_table.money_kind::text,
    array[v_user_account, v_pool], array[-p_amount, p_amount],
    jsonb_build_object('table_id', p_table_id, 'player_id', v_player.id));
  v_table := game_private.accept_tournament_entry(v_table, v_player.id, p_amount, v_ref);
  select p.seat_index into v_player.seat_index from game.table_players p where p.id = v_player.id;
  return query select v_ref, 'paid'::text, v_player.seat_index, v_table.tournament_state, game_private.registered_count(p_table_id);
end;
$$;

-- A registrant leaving a registering tournament (either bank's unregister; the caller holds the
-- table's lock): their open position, locked. An unpaid reserve is released here and returned as
-- it was (entry_state 'reserved'); a paid one is left to the caller's refund. Refused
-- tournament_not_registered, or tournament_not_in_registration once it started.
create or replace function game_private.leaving_registrant(p_table game.tables, p_user_id uuid) returns game.table_players
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_player game.table_players;
begin
  select * into v_player from game.table_players p
   where p.table_id = p_table.table_id and p.user_id = p_user_id and p.status <> 'closed' for update;
  if v_player.id is null then
    perform game_private.refuse('tournament_not_registered');
  end if;
  if p_table.tournament_state <> 'registering' then
    perform game_private.refuse('tournament_not_in_registration', format('the tournament is %s', p_table.tournament_state));
  end if;
  if v_player.entry_state = 'reserved' then
    perform game.tournament_release_reserve(p_table.table_id, p_user_id, null);
  end if;
  return v_player;
end;
$$;

-- The bank's POST /api/tournament/unregister: a registrant leaves while the tournament registers.
-- A paid entry is refunded (tournament_refund, pool -> user, ref `tournament-refund:{entry ref}`)
-- and its position closed; an unpaid reserve is released. Anything later: not in registration.
create or replace function cage.refund_tournament_entry(p_sid uuid, p_table_id text)
  returns table (outcome text, amount bigint, ref_id text, registered_count integer)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  -- the player: the user of the access JWT's live grant (never an id the caller names)
  v_user uuid := auth_private.user_of_sid(p_sid);
  v_table game.tables;
  v_player game.table_players;
  v_ref text;
begin
  v_table := cage_private.cage_tournament(p_table_id);
  v_player := game_private.leaving_registrant(v_table, v_user);
  if v_player.entry_state = 'reserved' then
    return query select 'released'::text, 0::bigint, null::text, game_private.registered_count(p_table_id);
    return;
  end if;
  v_ref := cage.tournament_refund_ref(v_player.entry_ref_id);
  perform cage.post_movement(v_ref, 'tournament_refund', v_table.money_kind::text,
    array[cage.ensure_account('tournament_pool', null, p_table_id, v_table.money_kind::text),
          cage.ensure_account('user', v_user, null, v_table.money_kind::text)],
    array[-v_player.chip_balance, v_player.chip_balance],
    jsonb_build_object('table_id', p_table_id, 'player_id', v_player.id, 'refunds', v_player.entry_ref_id));
  perform game_private.extend_chain(v_player.id, 'cash_out', -v_player.chip_balance, v_ref);
  update game.table_players p set chip_balance = 0, status = 'closed', closed_at = now(), closing_ref_id = v_ref
   where p.id = v_player.id;
  perform game_private.registration_changed(p_table_id);
  return query select 'refunded'::text, v_player.chip_balance, v_ref, game_private.registered_count(p_table_id);
end;
$$;

-- ended -> settling: the payout rows. Each player's prize is its place's (game_private.sng_place_amounts
-- in game/07_tournament_rules.sql); a tie group (equal stacks leaving together) shares the prizes of
-- the places it occupies: their sum split equally, the remainder one chip each to the better-placed
-- rows of the group. The entry claims close (their money is now the pool's to pay out). One payout
-- intent per place with a prize, and its payout job; tournament_ended carries the standings and
-- the payouts.
create or replace function cage.settle_tournament(p_table_id text) returns game.tables
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_table game.tables;
  r record;
begin
  v_table := game_private.lock_tournament(p_table_id);
  if v_table.tournament_state <> 'ended' then
    return v_table;
  end if;
  -- the places were decided by hands: nothing is paid before the audit of causes has covered every
  -- one of them (issue 31; cage_private.hands_audited). Until then: an audit soon, this job again in 5 s.
  if not cage_private.hands_audited(p_table_id) then
    perform graphile_worker.add_job('cage_audit', '{}'::json, job_key => 'cage_audit:settle');
    perform graphile_worker.add_job('tournament_settle', json_build_object('tableId', p_table_id),
      job_key => game_private.tournament_job_key(p_table_id, 'settle'), run_at => now() + interval '5 seconds', max_attempts => 1000);
    return v_table;
  end if;
  insert into cage.payout_intents (table_id, position, user_id, amount, money_kind, ref_id)
  select p_table_id, s.elimination_order, s.user_id, s.amount, v_table.money_kind, cage.payout_ref(p_table_id, s.elimination_order)
    from (
      select p.elimination_order, p.user_id,
             g.total / g.members
               + case when (row_number() over (partition by p.tie_place order by p.elimination_order)) <= g.total % g.members then 1 else 0 end as amount
        from game.table_players p
        join (select q.tie_place, count(*) as members,
                     coalesce(sum((select a.amount from game_private.sng_place_amounts(v_table.settings) a where a.place = q.elimination_order)), 0)::bigint as total
                from game.table_players q
               where q.table_id = p_table_id and q.status <> 'closed' and q.entry_state = 'paid'
               group by q.tie_place) g on g.tie_place = p.tie_place
       where p.table_id = p_table_id and p.status <> 'closed' and p.entry_state = 'paid'
    ) s
   where s.amount > 0;
  for r in select p.id, p.chip_balance from game.table_players p
            where p.table_id = p_table_id and p.status <> 'closed' order by p.id loop
    perform game_private.extend_chain(r.id, 'tournament_result', -r.chip_balance, cage.tournament_ref(p_table_id));
    update game.table_players p set chip_balance = 0, status = 'closed', closed_at = now(), closing_ref_id = cage.tournament_ref(p_table_id)
     where p.id = r.id;
  end loop;
  update game.tables t set tournament_state = 'settling' where t.table_id = p_table_id returning t.* into v_table;
  for r in select i.position, i.amount from cage.payout_intents i where i.table_id = p_table_id loop
    perform game_private.schedule_tournament_payout(p_table_id, r.position, r.amount, v_table.bank);
  end loop;
  perform game_private.tournament_notify(p_table_id, jsonb_build_object('type', 'tournament_state_changed', 'state', 'settling'));
  perform game_private.tournament_notify(p_table_id, jsonb_build_object('type', 'tournament_ended',
    'finalStandings', (select coalesce(jsonb_agg(jsonb_build_object('position', p.elimination_order, 'userId', p.user_id,
                                          'agentId', p.agent_id, 'tiedFrom', p.tie_place) order by p.elimination_order), '[]')
                          from game.table_players p where p.table_id = p_table_id and p.entry_state = 'paid'
                           and p.closing_ref_id = cage.tournament_ref(p_table_id)),
    'payouts', (select coalesce(jsonb_agg(jsonb_build_object('position', i.position, 'userId', i.user_id, 'amount', i.amount::text)
                                          order by i.position), '[]')
                  from cage.payout_intents i where i.table_id = p_table_id)));
  return v_table;
end;
$$;

-- The payoutIntent branch of the withdraw: pays one place (tournament_payout, pool -> the payout
-- row's own user) once; the amount must be the row's. The last confirmation closes the tournament
-- (settling -> closed), in the same transaction. A replay returns the payout as it stands.
create or replace function cage.pay_tournament_payout(p_table_id text, p_position integer, p_amount bigint)
  returns table (ref_id text, user_id uuid, amount bigint, confirmed_at timestamptz, replayed boolean,
                 tournament_state text, closed_at timestamptz)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_table game.tables;
  v_intent cage.payout_intents;
begin
  v_table := cage_private.cage_tournament(p_table_id);
  select * into v_intent from cage.payout_intents i where i.table_id = p_table_id and i.position = p_position for update;
  if v_intent.table_id is null then
    perform game_private.refuse('payout_not_found', format('no payout for place %s', p_position));
  end if;
  if p_amount is distinct from v_intent.amount then
    perform game_private.refuse('payout_amount_mismatch', format('the payout of place %s is %s', p_position, v_intent.amount));
  end if;
  if v_intent.confirmed_at is not null then
    return query select v_intent.ref_id, v_intent.user_id, v_intent.amount, v_intent.confirmed_at, true, v_table.tournament_state, v_table.closed_at;
    return;
  end if;
  perform cage.post_movement(v_intent.ref_id, 'tournament_payout', v_intent.money_kind::text,
    array[cage.ensure_account('tournament_pool', null, p_table_id, v_intent.money_kind::text),
          cage.ensure_account('user', v_intent.user_id, null, v_intent.money_kind::text)],
    array[-v_intent.amount, v_intent.amount],
    jsonb_build_object('table_id', p_table_id, 'position', p_position));
  update cage.payout_intents i
     set submitted_at = coalesce(i.submitted_at, now()), confirmed_at = now(), tx_hash = i.ref_id, failed_at = null, error = null
   where i.table_id = p_table_id and i.position = p_position
  returning i.* into v_intent;
  if v_table.tournament_state = 'settling'
     and not exists (select from cage.payout_intents i where i.table_id = p_table_id and i.confirmed_at is null) then
    update game.tables t set tournament_state = 'closed', closed_at = now() where t.table_id = p_table_id returning t.* into v_table;
    perform game_private.tournament_notify(p_table_id, jsonb_build_object('type', 'tournament_state_changed',
      'state', 'closed', 'closedAt', game_private.epoch_ms(v_table.closed_at)));
  end if;
  return query select v_intent.ref_id, v_intent.user_id, v_intent.amount, v_intent.confirmed_at, false, v_table.tournament_state, v_table.closed_at;
end;
$$;

-- A payout attempt that did not complete (the reconciler posts it again and clears failedAt).
create or replace function cage.mark_payout_failed(p_table_id text, p_position integer, p_error text) returns void
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
  update cage.payout_intents i
     set failed_at = now(), submitted_at = coalesce(i.submitted_at, now()), error = left(coalesce(p_error, 'failed'), 100)
   where i.table_id = p_table_id and i.position = p_position and i.confirmed_at is null
$$;

-- A payout posted again by the payout reconciler (the worker's, for both banks: server/intents/): an
-- unconfirmed `cage_payout` intent older than its grace (30 s, spec: Limits) is marked submitted, its
-- failedAt cleared, and returned with its table's bank; anything else returns no row. Its key is the
-- intent's (`tableId:position`).
create or replace function cage.repost_payout(p_key text)
  returns table (table_id text, "position" integer, amount bigint, bank text)
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
  update cage.payout_intents i set submitted_at = now(), failed_at = null
    from game.tables t
   where i.table_id || ':' || i.position = p_key and t.table_id = i.table_id and i.confirmed_at is null
     and i.created_at < now() - cage.intent_grace('cage_payout')
  returning i.table_id, i.position, i.amount, t.bank
$$;

-- The payout rows of a tournament, for the game role's reads (game_state, the admin detail).
create or replace function game.tournament_payouts(p_table_id text)
  returns table ("position" integer, user_id uuid, amount bigint, submitted_at timestamptz, confirmed_at timestamptz,
                 failed_at timestamptz, tx_hash text)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select i.position, i.user_id, i.amount, i.submitted_at, i.confirmed_at, i.failed_at, i.tx_hash
    from cage.payout_intents i where i.table_id = p_table_id order by i.position
$$;
