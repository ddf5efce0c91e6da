-- The chain bank's tournament branch (spec: "Tournaments on the cage", the same interface on the
-- chain; server/bank/tournaments.ts makes the calls). An SnG table of the chain bank keeps its
-- entry fees in the vault, under the table's key:
--   entry     bank.open_deposit (mode 'sng') holds the registrant's seat (their reserve, or one
--             reserved now) while the permit deposit goes to the chain; once the chain confirmed it,
--             the game's credit_seat accepts the entry from that confirmed deposit alone; a deposit
--             the chain refused releases the held seat (bank.fail_deposit);
--   refund    bank.refund_tournament_entry: a paid registrant leaving while it registers: the
--             position closed and a refund payment to the wallet that signed the entry's permit;
--   payout    bank.open_tournament_payout: the game's payout row of a place (cage.settle_tournament
--             computed it), paid to the wallet that signed the winner's entry permit;
--   each payment moves by bank.advance_tournament_payment (submitted, confirmed with the vault
--   event the chain logged, failed) and bank.retry_tournament_payment; the last payout confirmed
--   closes the tournament.

-- The registrant's seat held for a chain entry of p_sid's player (in bank.open_deposit, under the
-- table's lock): their reserve, or a seat reserved now (the audience and advisor gates of
-- game.tournament_reserve apply); a seat index, when given, is the reserved seat. Returns the seat.
create or replace function bank_private.hold_entry_seat(p_sid uuid, p_user_id uuid, p_table_id text, p_seat_index integer)
  returns integer
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_table game.tables;
  v_player game.table_players;
begin
  v_table := game_private.lock_tournament(p_table_id);
  perform game_private.require_registering(v_table);
  select * into v_player from game.table_players p
   where p.table_id = p_table_id and p.user_id = p_user_id and p.status <> 'closed' for update;
  if v_player.entry_state = 'paid' then
    perform game_private.refuse('tournament_already_registered');
  end if;
  if exists (select from bank.deposit_intents d
              where d.table_id = p_table_id and d.user_id = p_user_id and d.mode = 'sng'
                and (d.status in ('pending', 'submitted') or (d.status = 'confirmed' and d.credited_at is null))) then
    perform game_private.refuse('entry_in_flight', 'an entry deposit of this player is on its way to the chain');
  end if;
  if v_player.id is null then
    -- no reserve yet: one now, for a human (an agent registers through the game's internal route first)
    perform game.tournament_reserve(p_table_id, p_sid, null, null, 120);
    select * into v_player from game.table_players p
     where p.table_id = p_table_id and p.user_id = p_user_id and p.status <> 'closed' for update;
  end if;
  if p_seat_index is not null and p_seat_index <> v_player.seat_index then
    perform game_private.refuse('invalid_seat_index', format('the reserved seat is %s (or omit seatIndex)', v_player.seat_index));
  end if;
  return v_player.seat_index;
end;
$$;

-- A chain entry that will not be paid (the chain refused its deposit, or never took it): the seat
-- it held is released, as the cage's overdraft releases it. A seat already paid is kept.
create or replace function bank_private.release_entry_seat(p_table_id text, p_user_id uuid) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_table game.tables;
  v_player_id bigint;
begin
  v_table := game_private.lock_table(p_table_id);
  if v_table.tournament_state is distinct from 'registering' then
    return;
  end if;
  update game.table_players p set status = 'closed', closed_at = now()
   where p.table_id = p_table_id and p.user_id = p_user_id and p.status <> 'closed' and p.entry_state = 'reserved'
  returning p.id into v_player_id;
  if v_player_id is not null then
    perform game_private.cancel_reserve_expiry(v_player_id);
    perform game_private.registration_changed(p_table_id);
  end if;
end;
$$;

-- The bank's POST /api/tournament/unregister on a chain table, for the player of the token grant
-- p_sid: an unpaid reserve is released; a paid entry is refunded: its position closed (chain link
-- `cash_out`, closing ref `tournament-refund:{entry key}`) and a refund payment opened to the wallet
-- that signed the entry's permit, for the entry fee it paid. Only while the tournament registers.
create or replace function bank.refund_tournament_entry(p_sid uuid, p_table_id text)
  returns table (outcome text, amount bigint, payment_key text, registered_count integer)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_user uuid := auth_private.user_of_sid(p_sid);
  v_table game.tables;
  v_player game.table_players;
  v_deposit bank.deposit_intents;
  v_key text;
begin
  v_table := game_private.lock_tournament(p_table_id);
  if v_table.bank <> 'chain' then
    perform bank_private.refuse('not_a_chain_table', format('table %s keeps its money in the cage', p_table_id));
  end if;
  v_player := game_private.leaving_registrant(v_table, v_user);
  if v_player.entry_state = 'reserved' then
    return query select 'released'::text, 0::bigint, null::text, game_private.registered_count(p_table_id);
    return;
  end if;
  -- the paid entry: the confirmed chain deposit the game accepted it from
  select * into v_deposit from bank.deposit_intents d
   where d.idempotency_key = v_player.entry_ref_id and d.status = 'confirmed' and d.mode = 'sng'
     and d.user_id = v_user and d.table_id = p_table_id;
  if v_deposit.idempotency_key is null then
    perform bank_private.refuse('deposit_not_found', 'the entry has no confirmed chain deposit');
  end if;
  v_key := cage.tournament_refund_ref(v_deposit.idempotency_key);
  perform game_private.extend_chain(v_player.id, 'cash_out', -v_player.chip_balance, v_key);
  update game.table_players p set chip_balance = 0, status = 'closed', closed_at = now(), closing_ref_id = v_key
   where p.id = v_player.id;
  insert into bank.tournament_payments (payment_key, kind, deployment_id, table_id, user_id, player_id, entry_key, amount, destination)
  values (v_key, 'refund', (bank_private.active_deployment()).id, p_table_id, v_user, v_player.id, v_deposit.idempotency_key,
          v_player.chip_balance, v_deposit.wallet);
  perform game_private.registration_changed(p_table_id);
  return query select 'refunded'::text, v_player.chip_balance, v_key, game_private.registered_count(p_table_id);
end;
$$;

-- The payoutIntent branch of the withdraw on a chain table (the service key's): the game's payout
-- row of this place (cage.settle_tournament computed it), its amount the row's; paid to the wallet
-- that signed the entry permit of the row's player. Replay-once: the place's payment as it stands.
create or replace function bank.open_tournament_payout(p_table_id text, p_position integer, p_amount bigint)
  returns table (payment_key text, kind text, table_id text, "position" integer, user_id uuid, amount bigint, destination text,
                 status text, tx_hash text, error text, replayed boolean)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_table game.tables;
  v_intent cage.payout_intents;
  v_pay bank.tournament_payments;
  v_player_id bigint;
  v_deposit bank.deposit_intents;
begin
  v_table := game_private.lock_tournament(p_table_id);
  if v_table.bank <> 'chain' then
    perform bank_private.refuse('not_a_chain_table', format('table %s keeps its money in the cage', p_table_id));
  end if;
  select * into v_intent from cage.payout_intents i where i.table_id = p_table_id and i.position = p_position for update;
  if v_intent.table_id is null then
    perform game_private.refuse('payout_not_found', format('no payout for place %s', p_position));
  end if;
  if p_amount is distinct from v_intent.amount then
    perform game_private.refuse('payout_amount_mismatch', format('the payout of place %s is %s', p_position, v_intent.amount));
  end if;
  select * into v_pay from bank.tournament_payments t where t.payment_key = v_intent.ref_id;
  if v_pay.payment_key is null then
    select d.* into v_deposit
      from game.table_players p
      join bank.deposit_intents d on d.idempotency_key = p.entry_ref_id and d.status = 'confirmed' and d.mode = 'sng'
                                 and d.user_id = p.user_id and d.table_id = p.table_id
     where p.table_id = p_table_id and p.user_id = v_intent.user_id and p.entry_state = 'paid'
       and p.elimination_order = p_position and p.closing_ref_id = cage.tournament_ref(p_table_id);
    select p.id into v_player_id from game.table_players p
     where p.table_id = p_table_id and p.entry_ref_id = v_deposit.idempotency_key;
    if v_deposit.idempotency_key is null or v_player_id is null then
      perform bank_private.refuse('no_destination', format('place %s has no confirmed chain entry to pay back to', p_position));
    end if;
    insert into bank.tournament_payments as t (payment_key, kind, deployment_id, table_id, position, user_id, player_id, entry_key, amount, destination)
    values (v_intent.ref_id, 'payout', (bank_private.active_deployment()).id, p_table_id, p_position, v_intent.user_id, v_player_id,
            v_deposit.idempotency_key, v_intent.amount, v_deposit.wallet)
    returning t.* into v_pay;
    update cage.payout_intents i set submitted_at = coalesce(i.submitted_at, now())
     where i.table_id = p_table_id and i.position = p_position;
    return query select v_pay.payment_key, v_pay.kind, v_pay.table_id, v_pay.position, v_pay.user_id, v_pay.amount, v_pay.destination,
                        v_pay.status, v_pay.tx_hash, v_pay.error, false;
    return;
  end if;
  return query select v_pay.payment_key, v_pay.kind, v_pay.table_id, v_pay.position, v_pay.user_id, v_pay.amount, v_pay.destination,
                      v_pay.status, v_pay.tx_hash, v_pay.error, true;
end;
$$;

-- A payment's transaction moves along: submitted (the node took it), confirmed (its receipt, with
-- the vault event the chain logged: this destination and amount), failed (the chain refused it).
-- Each only forward; a replay answers the row. A payout confirmed marks the game's payout row
-- confirmed (confirmedAt, the transaction) and, the last of its tournament, closes it
-- (settling -> closed, announced); a failed one marks its failedAt.
create or replace function bank.advance_tournament_payment(
  p_key text, p_status text, p_tx_hash text, p_block_number bigint, p_to text, p_base_units numeric, p_error text
) returns table (payment_key text, kind text, table_id text, "position" integer, user_id uuid, amount bigint, destination text,
                 status text, tx_hash text, error text, tournament_state text)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_row bank.tournament_payments;
  v_table game.tables;
begin
  select * into v_row from bank.tournament_payments t where t.payment_key = p_key;
  if v_row.payment_key is null then
    perform bank_private.refuse('payment_not_found');
  end if;
  -- one lock order: the table, then its rows
  v_table := game_private.lock_table(v_row.table_id);
  select * into v_row from bank.tournament_payments t where t.payment_key = p_key for update;
  if v_row.status = p_status and (p_status <> 'submitted' or v_row.tx_hash = p_tx_hash) then
    null;
  elsif p_status = 'submitted' and v_row.status = 'pending' and p_tx_hash ~ '^0x[0-9a-f]{64}$' then
    update bank.tournament_payments t set status = 'submitted', tx_hash = p_tx_hash, submitted_at = now(), updated_at = now()
     where t.payment_key = p_key returning * into v_row;
  -- confirmed from the receipt of its transaction or of one sent before a retry, from any state
  -- but confirmed (a failure is the bank's claim; the receipt wins)
  elsif p_status = 'confirmed' and v_row.status in ('pending', 'submitted', 'failed')
        and (v_row.tx_hash = p_tx_hash or p_tx_hash = any (v_row.prior_tx_hashes)) and p_block_number > 0
        and lower(p_to) = lower(v_row.destination) and p_base_units = v_row.amount::numeric * cage_private.base_units() then
    update bank.tournament_payments t
       set status = 'confirmed', tx_hash = p_tx_hash, block_number = p_block_number, confirmed_at = now(), failed_at = null, error = null, updated_at = now()
     where t.payment_key = p_key returning * into v_row;
    if v_row.kind = 'payout' then
      update cage.payout_intents i
         set submitted_at = coalesce(i.submitted_at, now()), confirmed_at = now(), tx_hash = v_row.tx_hash, failed_at = null, error = null
       where i.table_id = v_row.table_id and i.position = v_row.position and i.ref_id = p_key and i.confirmed_at is null;
      if v_table.tournament_state = 'settling'
         and not exists (select from cage.payout_intents i where i.table_id = v_row.table_id and i.confirmed_at is null) then
        update game.tables t set tournament_state = 'closed', closed_at = now() where t.table_id = v_row.table_id returning t.* into v_table;
        perform game_private.tournament_notify(v_row.table_id, jsonb_build_object('type', 'tournament_state_changed',
          'state', 'closed', 'closedAt', game_private.epoch_ms(v_table.closed_at)));
      end if;
    end if;
  elsif p_status = 'failed' and v_row.status in ('pending', 'submitted') then
    update bank.tournament_payments t set status = 'failed', error = left(coalesce(p_error, 'failed'), 300), failed_at = now(), updated_at = now()
     where t.payment_key = p_key returning * into v_row;
    if v_row.kind = 'payout' then
      update cage.payout_intents i set failed_at = now(), error = left(coalesce(p_error, 'failed'), 100)
       where i.table_id = v_row.table_id and i.position = v_row.position and i.ref_id = p_key and i.confirmed_at is null;
    end if;
  else
    perform bank_private.refuse('payment_state_conflict', format('payment is %s; asked %s', v_row.status, p_status));
  end if;
  return query select v_row.payment_key, v_row.kind, v_row.table_id, v_row.position, v_row.user_id, v_row.amount, v_row.destination,
                      v_row.status, v_row.tx_hash, v_row.error, v_table.tournament_state;
end;
$$;

-- A failed payment is tried again with a fresh transaction (pending again, failedAt cleared): the
-- chain refused it once (a nonce race, out of gas), not for good. Others are returned as they are.
create or replace function bank.retry_tournament_payment(p_key text) returns bank.tournament_payments
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_row bank.tournament_payments;
begin
  select * into v_row from bank.tournament_payments t where t.payment_key = p_key for update;
  if v_row.payment_key is null then
    perform bank_private.refuse('payment_not_found');
  end if;
  if v_row.status = 'failed' then
    update bank.tournament_payments t
       set status = 'pending', tx_hash = null, failed_at = null, updated_at = now(),
           prior_tx_hashes = case when t.tx_hash is null then t.prior_tx_hashes else t.prior_tx_hashes || t.tx_hash end
     where t.payment_key = p_key returning * into v_row;
    if v_row.kind = 'payout' then
      update cage.payout_intents i set failed_at = null
       where i.table_id = v_row.table_id and i.position = v_row.position and i.ref_id = p_key and i.confirmed_at is null;
    end if;
  end if;
  return v_row;
end;
$$;

-- The chain bank's reconciler: refunds not confirmed after p_seconds (30 when null). A chain table's
-- payout unconfirmed after 30 s is the worker's payout reconciler's, as a cage table's is (issue 32:
-- cage.repost_payout, posted again through POST /api/withdraw): one repost for both banks.
create or replace function bank.tournament_payments_to_resume(p_seconds integer, p_limit integer)
  returns table (kind text, table_id text, "position" integer, amount bigint, payment_key text)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select 'refund'::text, r.table_id, null::integer, r.amount, r.payment_key
    from bank.tournament_payments r
   where r.kind = 'refund' and r.status <> 'confirmed'
     and r.updated_at < now() - make_interval(secs => greatest(coalesce(p_seconds, 30), 0))
   order by r.updated_at
   limit least(greatest(coalesce(p_limit, 100), 1), 1000)
$$;
