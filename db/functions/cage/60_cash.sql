-- The cash loop on the cage: deposit (sit, top-up) and the terminal settlement of a position
-- (stand-up, forced withdrawal to custody, bust). Each money step is one journal transaction. A sit
-- is two writes: the buy-in here (cage.open_deposit), then the game's seat credit over HTTP, which
-- confirms the deposit in its own transaction (game.credit_seat). A stand is two: the game's
-- stand-up over HTTP, then the settlement here, which closes the seat in its transaction
-- (cage.settle_position). confirm_deposit, fail_deposit and mark_withdrawal_settled remain for
-- the paths where a call's fate is unknown (server/cage/seams.ts, the reconcilers).

-- A deposit as it stands now, the one definition the read (GET /api/deposits/:key) and the replay of
-- a tournament entry (cage.open_tournament_entry) both answer from: the intent's own status, except
-- that a tournament entry refunded since (its `tournament-refund:{ref}` entry in the journal) is
-- `refunded`, with the refund's ref.
create or replace view cage.deposit_states as
  select d.ref_id, d.idempotency_key, d.user_id, d.table_id, d.seat_index, d.amount, d.money_kind,
         case when r.ref_id is not null then 'refunded' else d.status end as status,
         d.error, r.ref_id as refund_ref_id, d.created_at, d.updated_at
    from cage.deposit_intents d
    left join cage.cage_entries r on r.ref_id = cage.tournament_refund_ref(d.ref_id);
comment on view cage.deposit_states is 'Deposits as they stand: the intent''s status, or refunded once a tournament entry was refunded.';

-- The table as the cage sees it, or a refusal.
create or replace function cage_private.table_for_money(p_table_id text, p_refuse_frozen boolean) returns game.tables
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_table game.tables;
begin
  select * into v_table from game.tables t where t.table_id = p_table_id;
  if v_table.table_id is null then
    perform cage_private.refuse('table_not_found', format('table %s', p_table_id));
  end if;
  -- a chain-bank table's money is in its vault: the cage neither funds nor settles it
  if v_table.bank <> 'cage' then
    perform cage_private.refuse('not_a_cage_table', format('table %s keeps its money on chain', p_table_id));
  end if;
  if p_refuse_frozen and v_table.status = 'frozen' then
    perform cage_private.refuse('table_frozen');
  end if;
  return v_table;
end;
$$;

-- A deposit opened: the buy-in (user -> the table's escrow) is posted now, in this transaction.
-- Replay-once per (user, idempotency key): the same key again returns the intent as it stands
-- (replayed = true), whatever its status; with another table, seat or amount it is refused.
-- For the user the caller derived from its grant (never from an argument of a
-- login's), opened as p_status: 'pending' for a seat the game funds afterwards, 'confirmed' when the
-- caller funds it in this transaction (cage.deposit_to_seat: a refusal of the funding rolls this
-- back with it), so its intent is written once.
create or replace function cage_private.open_deposit_for(
  v_user uuid, p_idempotency_key text, p_table_id text, p_seat_index integer, p_amount bigint, p_status text
) returns table (ref_id text, status text, error text, amount bigint, table_id text, seat_index integer,
                 money_kind text, replayed boolean, created_at timestamptz)
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_ref text;
  v_intent cage.deposit_intents;
  v_table game.tables;
  v_player game.table_players;
  v_problem text;
  v_user_account bigint;
  v_escrow bigint;
begin
  if v_user is null or p_idempotency_key is null or length(p_idempotency_key) not between 1 and 128 or p_idempotency_key ~ '[^\x21-\x7e]'
     or p_seat_index is null or p_seat_index not between 0 and 9 then
    perform cage_private.refuse('bad_request', 'idempotency key: 1..128 printable characters; seat index 0..9');
  end if;
  if p_amount is null or p_amount <= 0 or p_amount > cage_private.max_amount() then
    perform cage_private.refuse('invalid_amount', 'a positive whole number of chips');
  end if;
  v_ref := cage.deposit_ref(v_user, p_idempotency_key);

  select * into v_intent from cage.deposit_intents d where d.ref_id = v_ref;
  if v_intent.ref_id is null then
    v_table := cage_private.table_for_money(p_table_id, false);
    perform cage_private.require_real_money(v_table.money_kind::text);

    -- Claim the key before judging the deposit on the table's state. Judged first, a twin under
    -- this key that commits after the read above (and whose seat the game funds meanwhile) would
    -- have this call refused on the state the twin made (a top-up past maxBuyIn, say) instead of
    -- replayed. A refusal below rolls the claim back.
    insert into cage.deposit_intents as d (ref_id, idempotency_key, user_id, table_id, seat_index, amount, money_kind, status, credited_at)
    values (v_ref, p_idempotency_key, v_user, p_table_id, p_seat_index, p_amount, v_table.money_kind,
            p_status, case when p_status = 'confirmed' then now() end)
    on conflict on constraint deposit_intents_pkey do nothing
    returning d.* into v_intent;
    if v_intent.ref_id is not null then
      -- A deposit the seat would refuse (frozen, a hand in play, the seat taken, the player seated
      -- elsewhere or leaving, a buy-in out of range) is refused here, before the debit: the game's own
      -- judgment (game_private.seat_credit_problem, which game.credit_seat applies again under its
      -- locks), so a refusal known now writes nothing, neither a debit nor its reversal.
      select * into v_player from game.table_players p
       where p.table_id = p_table_id and p.user_id = v_user and p.status <> 'closed';
      v_problem := game_private.seat_credit_problem(v_table, v_player, p_seat_index, p_amount);
      if v_problem is not null then
        perform cage_private.refuse(v_problem, format('seat %s of table %s cannot take %s chips for this player', p_seat_index, p_table_id, p_amount));
      end if;

      v_user_account := cage.ensure_account('user', v_user, null, v_table.money_kind::text);
      v_escrow := cage.ensure_account('table_escrow', null, p_table_id, v_table.money_kind::text);
      perform cage.post_movement(v_ref, 'table_buy_in', v_table.money_kind::text,
        array[v_user_account, v_escrow], array[-p_amount, p_amount],
        jsonb_build_object('table_id', p_table_id, 'seat_index', p_seat_index));
      return query select v_intent.ref_id, v_intent.status, v_intent.error, v_intent.amount, v_intent.table_id,
                          v_intent.seat_index, v_intent.money_kind::text, false, v_intent.created_at;
      return;
    end if;
    -- a concurrent twin opened it first
    select * into v_intent from cage.deposit_intents d where d.ref_id = v_ref;
  end if;

  if v_intent.table_id <> p_table_id or v_intent.seat_index <> p_seat_index or v_intent.amount <> p_amount then
    perform cage_private.refuse('idempotency_key_reused', 'this idempotency key was used for another deposit');
  end if;
  return query select v_intent.ref_id, v_intent.status, v_intent.error, v_intent.amount, v_intent.table_id,
                      v_intent.seat_index, v_intent.money_kind::text, true, v_intent.created_at;
end;
$$;

-- Opens a deposit: the buy-in (user -> the table's escrow) is posted now, in this transaction;
-- the seat is funded afterwards by the game (game.credit_seat) with the returned ref_id as the
-- credit key. No route opens one this way since issue 33 (a sit is cage.deposit_to_seat); it stays
-- for the reconcilers' paths and what an older release left pending.
-- Replay-once per (user, idempotency key): the same key again returns the intent as it stands
-- (replayed = true), whatever its status; with another table, seat or amount it is refused.
create or replace function cage.open_deposit(
  p_sid uuid, p_idempotency_key text, p_table_id text, p_seat_index integer, p_amount bigint
) returns table (ref_id text, status text, error text, amount bigint, table_id text, seat_index integer,
                 money_kind text, replayed boolean, created_at timestamptz)
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
  -- the player: the user of the access JWT's live grant (never an id the caller names)
  select * from cage_private.open_deposit_for(auth_private.user_of_sid(p_sid), p_idempotency_key, p_table_id, p_seat_index, p_amount, 'pending')
$$;

-- Issue 33: a sit at a cage table in ONE transaction (POST /api/deposit). The buy-in is posted
-- (cage_private.open_deposit_for: the player is the token's grant's user, never an id the caller
-- names; the seat judged by the game's own rule before the debit; the deposit written confirmed)
-- and the seat funded as the game funds one (game_private.fund_seat: the position and its chain,
-- the credit kept, the rooms told through game_seats) under the table's lock, taken first and held
-- to the commit, so the judgment stands: one commit, no call between roles and nothing in flight to reconcile, as the cage's
-- withdrawal closes its seat in its own transaction (cage.settle_position). A refusal of either
-- writes nothing (no debit, no compensation). The table is locked first, as every seat change takes
-- it before the accounts (a hand end that busts someone locks the table, then the escrow). A key
-- used before answers its deposit as it stands (replayed). The chain bank's deposits, whose money
-- is on chain, keep the game's own reading of the chain (/internal/credit-chips).
create or replace function cage.deposit_to_seat(
  p_sid uuid, p_idempotency_key text, p_table_id text, p_seat_index integer, p_amount bigint
) returns table (ref_id text, status text, error text, amount bigint, replayed boolean, seat_index integer, chip_balance bigint)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  -- the player: the user of the access JWT's live grant (never an id the caller names)
  v_user uuid := auth_private.user_of_sid(p_sid);
  v_table game.tables;
  v_intent record;
  v_player game.table_players;
begin
  v_table := game_private.lock_table(p_table_id);
  -- (a tournament's seats are its entries': refused before anything is written)
  if v_table.bank = 'cage' then
    perform game_private.require_cash_table(v_table, 'credit_seat');
  end if;
  -- the buy-in, judged first by the seat's own rule (game_private.seat_credit_problem) under the
  -- table's lock held to the commit: nothing can change the seat between that judgment and the
  -- funding below, which game.credit_seat would otherwise make again
  select * into v_intent from cage_private.open_deposit_for(v_user, p_idempotency_key, p_table_id, p_seat_index, p_amount, 'confirmed');
  if v_intent.replayed then
    return query select v_intent.ref_id, v_intent.status, v_intent.error, v_intent.amount, true, null::integer, null::bigint;
    return;
  end if;
  -- a hand left by a game process that is gone does not hold the table (the judgment let it through)
  v_table := game_private.recover_orphaned_hand(v_table);
  select * into v_player from game.table_players p
   where p.table_id = p_table_id and p.user_id = v_user and p.status <> 'closed';
  v_player := game_private.fund_seat(v_table, v_player, v_intent.ref_id, v_user, p_seat_index, p_amount);
  return query select v_intent.ref_id, v_intent.status, v_intent.error, v_intent.amount, false, v_player.seat_index, v_player.chip_balance;
end;
$$;

-- The game funded the seat: the deposit is confirmed. Idempotent. Only a deposit whose seat credit
-- the game holds is confirmed (a confirmed deposit is no longer in flight, so its chips must be on
-- a seat); otherwise the intent is returned as it stands, still pending, for the caller to cancel
-- and compensate (cage.fail_deposit) or for the reconciler to settle. Confirming marks the credit
-- kept, so game.cancel_credit can no longer take it back off the seat: the two cannot both win.
create or replace function cage.confirm_deposit(p_ref_id text) returns cage.deposit_intents
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_intent cage.deposit_intents;
begin
  select * into v_intent from cage.deposit_intents d where d.ref_id = p_ref_id for update;
  if v_intent.ref_id is null then
    perform cage_private.refuse('deposit_not_found', p_ref_id);
  end if;
  if v_intent.status <> 'pending' then
    return v_intent;
  end if;
  -- the game keeps the credit if it holds it (game_private.keep_credit locks the credit row: a
  -- concurrent game.cancel_credit either reverted it first, and the deposit stays pending, or
  -- waits and then finds it kept)
  if not game_private.keep_credit(p_ref_id) then
    return v_intent;
  end if;
  update cage.deposit_intents d set status = 'confirmed', credited_at = now(), updated_at = now()
   where d.ref_id = p_ref_id
  returning d.* into v_intent;
  return v_intent;
end;
$$;

-- The game funded the seat of a pending deposit (game.credit_seat, in its transaction, after it
-- locked the intent and wrote the credit as kept): the deposit is confirmed with it, so a sit is
-- one write transaction on each side. The cage's table is written only by the cage's SQL; the
-- authority is the credit just written for this deposit's own user, table, seat and amount.
create or replace function cage_private.confirm_credited_deposit(p_ref_id text) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  update cage.deposit_intents d set status = 'confirmed', credited_at = now(), updated_at = now()
   where d.ref_id = p_ref_id and d.status = 'pending'
     and exists (select from game.seat_credits c
                  where c.credit_key = p_ref_id and c.status = 'credited' and c.kept_at is not null
                    and c.user_id = d.user_id and c.table_id = d.table_id and c.amount = d.amount);
  if not found then
    perform cage_private.refuse('deposit_not_found', format('no pending deposit %s with a kept credit', p_ref_id));
  end if;
end;
$$;

-- The seat was not funded (the game refused, or the cage cancelled the credit): the buy-in is
-- reversed by a compensating entry (escrow -> user, ref `{ref}:reversal`) and the intent fails
-- with the code. Idempotent; a confirmed deposit is left as it is.
--
-- The seat credit is settled here too, whoever calls (the cage after game.cancel_credit, or the
-- worker's reconciler, which cannot ask the game): the key is tombstoned on the game side unless
-- the game already holds it. A push still in flight is then refused (credit_cancelled); a credit
-- the game holds (the push landed, its answer was lost) stands, and the deposit is confirmed
-- instead of reversed, so the chips are never both on the seat and back in the user's balance.
create or replace function cage.fail_deposit(p_ref_id text, p_error text) returns cage.deposit_intents
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_intent cage.deposit_intents;
  v_reversal text;
  v_credit_status text;
begin
  select * into v_intent from cage.deposit_intents d where d.ref_id = p_ref_id for update;
  if v_intent.ref_id is null then
    perform cage_private.refuse('deposit_not_found', p_ref_id);
  end if;
  if v_intent.status <> 'pending' then
    return v_intent;
  end if;

  -- the key is tombstoned on the game side unless the game already holds it (the game's function
  -- answers under the credit row's lock: 20_seats.sql, game_private.tombstone_credit)
  v_credit_status := game_private.tombstone_credit(p_ref_id, v_intent.table_id, v_intent.user_id, v_intent.amount);
  if v_credit_status = 'credited' then
    return cage.confirm_deposit(p_ref_id);
  end if;
  v_reversal := p_ref_id || ':reversal';
  perform cage.post_movement(v_reversal, 'adjustment', v_intent.money_kind::text,
    array[cage.ensure_account('table_escrow', null, v_intent.table_id, v_intent.money_kind::text),
          cage.ensure_account('user', v_intent.user_id, null, v_intent.money_kind::text)],
    array[-v_intent.amount, v_intent.amount],
    jsonb_build_object('reverses', p_ref_id, 'table_id', v_intent.table_id, 'reason', left(coalesce(p_error, 'failed'), 100)));
  update cage.deposit_intents d
     set status = 'failed', error = left(coalesce(p_error, 'failed'), 100), reversal_ref_id = v_reversal, updated_at = now()
   where d.ref_id = p_ref_id
  returning d.* into v_intent;
  return v_intent;
end;
$$;

-- The terminal settlement of a position (one sitting), after the game stood it up and reported
-- its stack and chain head:
--   cash_out  the stack goes from the escrow back to the user's cage balance (table_cash_out);
--   custody   a forced idle-kick: the stack goes to a FREE custody entry for the user (chain
--             'cage', base units = chips x 10^6), claimable later;
--   bust      nothing is left: an explicit zero bust_close row closes the position.
-- Replay-once on the idempotency key (keccak256 of userId:tableId:historyHash:chipAmount): the same
-- key for the same position, stack and head returns the original settlement (replayed = true),
-- whatever settlement or forced flag it asks for now; for other values it is refused
-- (idempotency_key_reused). One settlement per position, ever. The seat is closed (zeroed, the
-- chain's last link written) and the withdrawal marked settled in the same transaction.
-- Long because: one transaction does the whole settlement (locks, the replay check, the three
-- settlements' postings, the receipt and the seat's closing), so a stand-up costs one commit here.
create or replace function cage.settle_position(
  p_user_id uuid, p_table_id text, p_player_id bigint, p_amount bigint, p_history_hash text,
  p_idempotency_key text, p_settlement text, p_forced boolean
) returns table (idempotency_key text, ledger_ref_id text, amount bigint, settlement text, custody_entry_id bigint,
                 history_hash text, money_kind text, player_id bigint, replayed boolean, created_at timestamptz)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_intent cage.withdraw_intents;
  v_table game.tables;
  v_player game.table_players;
  v_ref text;
  v_escrow bigint;
  v_user_account bigint;
  v_custody bigint;
  v_entry_id bigint;
  v_kind text;
begin
  if p_user_id is null or p_player_id is null or p_history_hash is null or length(p_history_hash) <> 64 or p_history_hash ~ '[^0-9a-f]'
     or p_idempotency_key is null or length(p_idempotency_key) <> 66 or p_idempotency_key !~ '^0x' or substr(p_idempotency_key, 3) ~ '[^0-9a-f]'
     or p_settlement is null or p_settlement not in ('cash_out', 'custody', 'bust') or p_amount is null
     or p_amount < 0 or p_amount > cage_private.max_amount() then
    perform cage_private.refuse('bad_request', 'user, position, chain head, key, settlement and a non-negative amount');
  end if;

  select * into v_intent from cage.withdraw_intents w where w.idempotency_key = p_idempotency_key;
  if v_intent.idempotency_key is null then
    if exists (select from cage.withdraw_intents w where w.player_id = p_player_id) then
      -- settled already: by a twin under this key that committed after the read above (a replay),
      -- or under another key
      select * into v_intent from cage.withdraw_intents w where w.idempotency_key = p_idempotency_key;
      if v_intent.idempotency_key is null then
        perform cage_private.refuse('seat_already_settled', format('position %s was settled under another key', p_player_id));
      end if;
    end if;
  end if;
  if v_intent.idempotency_key is null then
    if p_settlement = 'bust' and p_amount <> 0 then
      perform cage_private.refuse('bad_request', 'a bust settles a zero stack');
    end if;
    if p_settlement <> 'bust' and p_amount = 0 then
      perform cage_private.refuse('nothing_to_withdraw');
    end if;
    if p_settlement = 'custody' and p_amount > 9223372036854 then
      perform cage_private.refuse('amount_out_of_range', 'custody holds base units (chips x 10^6) in a bigint');
    end if;
    perform cage_private.table_for_money(p_table_id, false);
    -- the table first, as every seat change takes it (20_seats.sql): this transaction closes the seat
    v_table := game_private.lock_table(p_table_id);
    v_ref := case p_settlement when 'bust' then 'bust:' else 'withdraw:' end || p_idempotency_key;

    -- Claim the key (and the position) before judging the position on the game's state. Judged
    -- first, a twin under this key that commits after the reads above, and whose seat the game
    -- then zeroes (or whose table is frozen meanwhile), would have this call refused on the state
    -- the twin made instead of replayed. A refusal below rolls the claim back.
    insert into cage.withdraw_intents as w (idempotency_key, ledger_ref_id, user_id, table_id, player_id, amount,
                                            history_hash, settlement, forced)
    values (p_idempotency_key, v_ref, p_user_id, p_table_id, p_player_id, p_amount, p_history_hash, p_settlement, coalesce(p_forced, false))
    on conflict do nothing
    returning w.* into v_intent;
    if v_intent.idempotency_key is null then
      -- a concurrent twin settled it first: under its key (a replay below) or under another
      select * into v_intent from cage.withdraw_intents w where w.idempotency_key = p_idempotency_key;
      if v_intent.idempotency_key is null then
        perform cage_private.refuse('seat_already_settled', format('position %s was settled under another key', p_player_id));
      end if;
    else
      if p_settlement <> 'bust' and v_table.status = 'frozen' then
        perform cage_private.refuse('table_frozen');
      end if;
      -- The escrow pays out only what the game froze: this user's position at this table, stood up
      -- (a seated stack is still in play), with this stack and this chain head. A leaving position
      -- changes no more on the game side until it is settled, so the read needs no lock.
      select * into v_player from game.table_players p
       where p.id = p_player_id and p.table_id = p_table_id and p.user_id = p_user_id
         and p.status = 'leaving' and p.chip_balance = p_amount and p.history_hash = p_history_hash
         for update;
      if v_player.id is null then
        perform cage_private.refuse('bad_request',
          format('position %s is not a stood-up position of this user at this table with this stack and chain head', p_player_id));
      end if;
      v_escrow := cage.ensure_account('table_escrow', null, p_table_id, v_table.money_kind::text);
      v_user_account := cage.ensure_account('user', p_user_id, null, v_table.money_kind::text);
      if p_settlement = 'custody' then
        v_custody := cage.ensure_account('custody', null, null, v_table.money_kind::text);
        perform cage.post_movement(v_ref, 'table_cash_out', v_table.money_kind::text,
          array[v_escrow, v_custody], array[-p_amount, p_amount],
          jsonb_build_object('table_id', p_table_id, 'position', p_player_id, 'settlement', 'custody', 'user_id', p_user_id));
        insert into cage.custody_entries (ref_id, user_id, table_id, money_kind, amount, source_ref_id)
        values ('custody:' || p_idempotency_key, p_user_id, p_table_id, v_table.money_kind, p_amount * cage_private.base_units(), v_ref)
        returning id into v_entry_id;
        update cage.withdraw_intents w set custody_entry_id = v_entry_id where w.idempotency_key = p_idempotency_key
        returning w.* into v_intent;
      else
        v_kind := case p_settlement when 'bust' then 'bust_close' else 'table_cash_out' end;
        perform cage.post_movement(v_ref, v_kind, v_table.money_kind::text,
          array[v_escrow, v_user_account], array[-p_amount, p_amount],
          jsonb_build_object('table_id', p_table_id, 'position', p_player_id, 'settlement', p_settlement));
      end if;
      -- The seat closes with its terminal row, in this transaction (the game's table written by the
      -- game's SQL): a stand is the game's stand-up and this, one write each. The withdrawal is
      -- settled at once; no zeroing is left for the game to be told about or the reconciler to redeliver.
      perform game_private.close_position(v_player, v_ref, p_settlement);
      perform game_private.seats_changed(p_table_id);
      update cage.withdraw_intents w set settled_at = now() where w.idempotency_key = p_idempotency_key
      returning w.* into v_intent;
      return query select v_intent.idempotency_key, v_intent.ledger_ref_id, v_intent.amount, v_intent.settlement,
                          v_intent.custody_entry_id, v_intent.history_hash, v_table.money_kind::text, v_intent.player_id,
                          false, v_intent.created_at;
      return;
    end if;
  end if;

  -- the key stands for (user, table, chain head, amount) of one position: anything else is not a replay
  if v_intent.user_id <> p_user_id or v_intent.table_id is distinct from p_table_id or v_intent.player_id <> p_player_id
     or v_intent.amount <> p_amount or v_intent.history_hash <> p_history_hash then
    perform cage_private.refuse('idempotency_key_reused', 'this idempotency key was used for another settlement');
  end if;
  return query select v_intent.idempotency_key, v_intent.ledger_ref_id, v_intent.amount, v_intent.settlement,
                      v_intent.custody_entry_id, v_intent.history_hash,
                      (select t.money_kind::text from game.tables t where t.table_id = v_intent.table_id),
                      v_intent.player_id, true, v_intent.created_at;
end;
$$;

-- The game zeroed the settled seat. Idempotent.
create or replace function cage.mark_withdrawal_settled(p_idempotency_key text) returns cage.withdraw_intents
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_intent cage.withdraw_intents;
begin
  -- settled only once the game really zeroed the position with this settlement's ledger row
  update cage.withdraw_intents w set settled_at = coalesce(w.settled_at, now())
   where w.idempotency_key = p_idempotency_key
     and exists (select from game.table_players p
                  where p.id = w.player_id and p.status = 'closed' and p.closing_ref_id = w.ledger_ref_id)
  returning w.* into v_intent;
  if v_intent.idempotency_key is null then
    select * into v_intent from cage.withdraw_intents w where w.idempotency_key = p_idempotency_key;
    if v_intent.idempotency_key is null then
      perform cage_private.refuse('bad_request', format('no withdrawal %s', p_idempotency_key));
    end if;
  end if;
  return v_intent;
end;
$$;

-- Positions stood up (leaving) whose settlement the cage never wrote: the game stood the seat up
-- but the answer was lost, so no request went on to settle it and no intent points to it. Only
-- those stood up more than p_grace_seconds ago (a request may still be finishing a younger one).
-- The cash reconciler settles each through cage.settle_position as a cash-out to the user's cage
-- balance (a bust when empty); a frozen or tournament table keeps its chips until looked into.
create or replace function cage.unsettled_stand_ups(p_grace_seconds integer, p_limit integer)
  returns table (player_id bigint, user_id uuid, table_id text, chip_amount bigint, history_hash text)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select p.id, p.user_id, p.table_id, p.chip_balance, p.history_hash
    from game.table_players p
    join game.tables t on t.table_id = p.table_id
   where p.status = 'leaving'
     and (p.leaving_at is null or p.leaving_at < now() - make_interval(secs => greatest(coalesce(p_grace_seconds, 0), 0)))
     and (p.chip_balance = 0 or (t.mode = 'cash' and t.status <> 'frozen'))
     and not exists (select from cage.withdraw_intents w where w.player_id = p.id)
   order by p.leaving_at nulls first, p.id
   limit greatest(coalesce(p_limit, 0), 0)
$$;
