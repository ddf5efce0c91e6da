-- Seats: funding (sit, top-up), the cancellation of a funding the cage could not confirm,
-- stand-up and settlement. Every function locks the table row first (one lock order: table, then
-- its seats), so seat changes of one table are serial and never interleave with a hand boundary.

-- The table row, locked; refuses a missing table. Frozen and mid-hand are the caller's to judge.
create or replace function game_private.lock_table(p_table_id text) returns game.tables
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_table game.tables;
begin
  select * into v_table from game.tables where table_id = p_table_id for update;
  if v_table.table_id is null then
    perform game_private.refuse('table_not_found', format('table %s', p_table_id));
  end if;
  return v_table;
end;
$$;

-- The seats of a table changed: the game process running its room re-reads them at once (it
-- LISTENs on game_seats), whichever process the cage's call landed on. Sent at commit.
create or replace function game_private.seats_changed(p_table_id text) returns void
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  select pg_notify('game_seats', p_table_id)
$$;

-- A cash move (a seat credit or its cancellation, a stand-up, a seat settlement, a cash hand end) is
-- refused on a Sit-and-Go table: its chips are tournament chips, moved only by the tournament's own
-- functions (entries, tournament hand ends, places and payouts). p_what names the move.
create or replace function game_private.require_cash_table(v_table game.tables, p_what text) returns game.tables
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
begin
  if v_table.mode = 'sng' then
    if p_what = 'stand_up' then
      perform game_private.refuse('stand_up_not_allowed_in_tournament', format('table %s is a tournament', v_table.table_id));
    end if;
    perform game_private.refuse('not_a_cash_table', format('%s on table %s, a tournament', p_what, v_table.table_id));
  end if;
  return v_table;
end;
$$;

-- Whether a seat of p_table can take a credit of p_amount for the player whose open position is
-- p_player (none: a new seat at p_seat_index): null, or the refusal game.credit_seat raises. One
-- judgment, made twice: by the cage before its buy-in writes anything (cage.open_deposit: a deposit
-- the seat would refuse writes no debit and no reversal) and by game.credit_seat under its locks.
-- A hand holds the table unless the process that dealt it is gone (game_private.recover_orphaned_hand
-- frees such a table before the credit).
create or replace function game_private.seat_credit_problem(
  p_table game.tables, p_player game.table_players, p_seat_index integer, p_amount bigint
) returns text
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
begin
  return case
    when p_table.status = 'frozen' then 'table_frozen'
    when p_table.current_hand_id is not null
         and not exists (select from game.table_leases l where l.table_id = p_table.table_id and not game_private.lease_live(l)) then 'hand_in_progress'
    when p_player.id is not null and p_player.status = 'leaving' then 'seat_leaving'
    when p_player.id is not null and p_player.seat_index <> p_seat_index then 'already_seated'
    when p_player.id is not null then game_private.buy_in_problem(p_table.settings, p_player.chip_balance, false, p_amount)
    when p_seat_index is null or p_seat_index < 0
         or p_seat_index >= coalesce(game_private.setting_bigint(p_table.settings, 'maxPlayers'), 9) then 'invalid_seat_index'
    when game_private.buy_in_problem(p_table.settings, 0, true, p_amount) is not null then game_private.buy_in_problem(p_table.settings, 0, true, p_amount)
    when exists (select from game.table_players p
                  where p.table_id = p_table.table_id and p.seat_index = p_seat_index and p.status <> 'closed') then 'seat_taken'
  end;
end;
$$;

-- Funds a seat with chips the cage has already moved into the table's escrow (p_key = the
-- deposit's ledger ref id). A new seat is a new position (chain genesis + buy_in link); a player
-- already seated tops up (top_up link). Idempotent per key: the same key again returns the seat as
-- it is ('replayed'); a key cancelled before it arrived is refused (credit_cancelled). On a cage
-- table the cage's deposit is confirmed in the same transaction (cage_private.confirm_credited_deposit).
-- The funding itself is game_private.fund_seat's, as for the cage's one-transaction sit.
-- Long because: its checks come in one order under the table's lock (the key's replay and
-- tombstone, the deposit backing it on either bank, the seat's judgment) before the funding.
create or replace function game.credit_seat(
  p_key text, p_table_id text, p_user_id uuid, p_seat_index integer, p_amount bigint
) returns table (player_id bigint, seat_index integer, chip_balance bigint, history_hash text, status text)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_table game.tables;
  v_credit game.seat_credits;
  v_player game.table_players;
  v_problem text;
begin
  if p_key is null or length(p_key) not between 1 and 200 or p_user_id is null or p_seat_index is null
     or p_amount is null or p_amount <= 0 then
    perform game_private.refuse('invalid_credit', 'key (1..200 chars), user, seat index and a positive amount');
  end if;
  v_table := game_private.lock_table(p_table_id);
  -- a chain-bank tournament's entry: accepted only from the chain bank's confirmed deposit (tournaments/20_money.sql)
  if v_table.mode = 'sng' and v_table.bank = 'chain' then
    return query select * from game_private.credit_chain_entry(v_table, p_key, p_user_id, p_seat_index, p_amount);
    return;
  end if;
  -- a hand left by a game process that is gone does not hold the table (35_leases.sql)
  v_table := game_private.recover_orphaned_hand(game_private.require_cash_table(v_table, 'credit_seat'));

  select * into v_credit from game.seat_credits c where c.credit_key = p_key;
  if v_credit.credit_key is not null then
    if v_credit.status <> 'credited' then
      perform game_private.refuse('credit_cancelled', format('credit %s was %s', p_key, v_credit.status));
    end if;
    if v_credit.table_id <> p_table_id or v_credit.user_id <> p_user_id or v_credit.amount <> p_amount then
      perform game_private.refuse('invalid_credit', format('credit %s was for other values', p_key));
    end if;
    return query select p.id, p.seat_index, p.chip_balance, p.history_hash, 'replayed'::text
                   from game.table_players p where p.id = v_credit.player_id;
    return;
  end if;

  -- A seat is funded only by a live cage deposit: the key is the deposit's ledger ref, and the
  -- deposit (its buy-in already posted into this table's escrow) is still pending for this user,
  -- table, seat and amount. Whatever the game role's database role or the service key sends,
  -- chips reach a seat only from a buy-in.
  -- On a chain-bank table the deposit is the chain bank's, confirmed on chain (its receipt's
  -- Deposited event), read back from the chain by the game itself (verified_at:
  -- game.record_chain_deposit, 22_chain_deposits.sql) and not credited yet.
  if v_table.bank = 'chain' then
    if not exists (select from bank.deposit_intents d
                    where d.idempotency_key = p_key and d.status = 'confirmed' and d.verified_at is not null
                      and d.credited_at is null and d.mode = 'cash'
                      and not exists (select from bank.vault_refunds r where r.deposit_key = d.idempotency_key)
                      and d.user_id = p_user_id and d.table_id = p_table_id and d.seat_index = p_seat_index and d.amount = p_amount) then
      perform game_private.refuse('credit_not_backed',
        format('no confirmed chain deposit %s for this user, table, seat and amount', p_key));
    end if;
  else
    -- locked (table, then the deposit, then the credit: the order cage.fail_deposit and
    -- cage.confirm_deposit take deposit and credit in), since this transaction confirms it below
    perform from cage.deposit_intents d
     where d.ref_id = p_key and d.status = 'pending' and d.user_id = p_user_id
       and d.table_id = p_table_id and d.seat_index = p_seat_index and d.amount = p_amount
       for update;
    if not found then
      perform game_private.refuse('credit_not_backed',
        format('no pending deposit %s for this user, table, seat and amount', p_key));
    end if;
  end if;
  select * into v_player from game.table_players p
   where p.table_id = p_table_id and p.user_id = p_user_id and p.status <> 'closed'
   for update;
  v_problem := game_private.seat_credit_problem(v_table, v_player, p_seat_index, p_amount);
  if v_problem is not null then
    perform game_private.refuse(v_problem, format('seat %s of table %s cannot take %s chips for this player', p_seat_index, p_table_id, p_amount));
  end if;
  v_player := game_private.fund_seat(v_table, v_player, p_key, p_user_id, p_seat_index, p_amount);
  if v_table.bank = 'cage' then
    perform cage_private.confirm_credited_deposit(p_key);
  end if;
  return query select v_player.id, v_player.seat_index, v_player.chip_balance, v_player.history_hash, 'credited'::text;
end;
$$;

-- A seat funded with p_amount chips already in the table's escrow under the credit key p_key (the
-- deposit's ledger ref), once its caller judged it (game_private.seat_credit_problem under the
-- table's lock, the deposit backing it checked or made in this transaction): a new position for
-- the player with no open one at the table (its chain's genesis and buy-in link), else a top-up of
-- that position (p_player, locked by the table's lock, under which every seat change is made); the
-- credit row (kept at once on a cage table, whose deposit is confirmed in the same transaction);
-- the rooms told through game_seats. Refused credit_cancelled when a tombstone for the key was
-- written meanwhile. Answers the position as it is now. The one funding of a seat, whichever path
-- judged it (game.credit_seat, cage.deposit_to_seat).
create or replace function game_private.fund_seat(
  p_table game.tables, p_player game.table_players, p_key text, p_user_id uuid, p_seat_index integer, p_amount bigint
) returns game.table_players
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_player game.table_players := p_player;
  v_id bigint;
  v_genesis text;
  v_hash text;
begin
  if v_player.id is not null then
    update game.table_players p set chip_balance = p.chip_balance + p_amount where p.id = v_player.id;
    perform game_private.extend_chain(v_player.id, 'top_up', p_amount, p_key);
    select * into v_player from game.table_players p where p.id = v_player.id;
  else
    -- a new position, written once with its chain's first link (issue 33: its id is drawn first, as
    -- the genesis binds it; it was inserted, then given its genesis, then its link, three writes of
    -- one row): the genesis, then the buy-in's link (game_private.link_hash, as extend_chain makes it)
    v_id := nextval('game.table_players_id_seq'::regclass);
    v_genesis := game_private.chain_genesis(p_table.table_id, p_user_id, v_id);
    v_hash := game_private.link_hash(v_genesis, 1, 'buy_in', p_amount, p_amount, p_key);
    insert into game.table_players as p (id, table_id, user_id, seat_index, chip_balance, history_hash, chain_length)
    overriding system value
    values (v_id, p_table.table_id, p_user_id, p_seat_index, p_amount, v_hash, 1)
    returning p.* into v_player;
    insert into game.position_links (player_id, seq, event, delta, stack, ref_id, prev_hash, hash)
    values (v_id, 1, 'buy_in', p_amount, p_amount, p_key, v_genesis, v_hash);
  end if;

  -- A tombstone written since the caller looked wins, and all of this rolls back. (On a cage table
  -- the deposit, locked or made by the caller, keeps cage.fail_deposit, which takes it first, from
  -- writing one meanwhile; game.cancel_credit waits for the table.)
  -- On a cage table the credit is kept at once (game.cancel_credit can no longer take it back), as
  -- its deposit is confirmed in the same transaction: a seat is funded exactly when its deposit is
  -- confirmed.
  insert into game.seat_credits (credit_key, table_id, user_id, player_id, amount, status, kept_at)
  values (p_key, p_table.table_id, p_user_id, v_player.id, p_amount, 'credited', case when p_table.bank = 'cage' then now() end)
  on conflict (credit_key) do nothing;
  if not found then
    perform game_private.refuse('credit_cancelled', format('credit %s was cancelled meanwhile', p_key));
  end if;
  perform game_private.seats_changed(p_table.table_id);
  return v_player;
end;
$$;

-- The cage could not confirm a funding (its push failed or its answer was lost) and wants its
-- chips back. Answers what the game did with the key:
--   'cancelled'  it never arrived: a tombstone now refuses it if it arrives later;
--   'reverted'   it arrived and nothing has happened since: it is taken off the seat again
--                (a seat it opened is closed). Only a credit not kept can be: game.credit_seat keeps
--                a cage table's credit at once, confirming its deposit, so this is left for credits
--                written before it did;
--   'credited'   it arrived and the seat has moved on (a hand, a later top-up, a stand-up):
--                it stands, and the cage must treat the deposit as confirmed.
-- Asking again answers the same ('credited' is marked kept, so it holds even when the hand that
-- made it so left no link). The cage compensates only on 'cancelled' or 'reverted'.
create or replace function game.cancel_credit(p_key text, p_table_id text, p_user_id uuid, p_amount bigint) returns text
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_table game.tables;
  v_credit game.seat_credits;
  v_player game.table_players;
begin
  if p_key is null or length(p_key) not between 1 and 200 or p_user_id is null or p_amount is null or p_amount <= 0 then
    perform game_private.refuse('invalid_credit', 'key (1..200 chars), user and a positive amount');
  end if;
  v_table := game_private.require_cash_table(game_private.lock_table(p_table_id), 'cancel_credit');
  select * into v_credit from game.seat_credits c where c.credit_key = p_key for update;
  if v_credit.credit_key is null then
    insert into game.seat_credits (credit_key, table_id, user_id, amount, status)
    values (p_key, p_table_id, p_user_id, p_amount, 'cancelled')
    on conflict (credit_key) do nothing;
    if found then
      return 'cancelled';
    end if;
    -- cage.fail_deposit tombstones the key without the table lock: it did so since we looked (a
    -- credit_seat of it would have waited for our table lock). Answer from its row, not with a
    -- unique violation.
    select * into v_credit from game.seat_credits c where c.credit_key = p_key for update;
  end if;
  if v_credit.table_id <> p_table_id or v_credit.user_id <> p_user_id or v_credit.amount <> p_amount then
    perform game_private.refuse('invalid_credit', format('credit %s was for other values', p_key));
  end if;
  if v_credit.status <> 'credited' then
    return case v_credit.status when 'cancelled' then 'cancelled' else 'reverted' end;
  end if;
  if v_credit.kept_at is not null then
    return 'credited';
  end if;

  select * into v_player from game.table_players p where p.id = v_credit.player_id for update;
  if v_player.status <> 'seated' or v_table.current_hand_id is not null
     or (select l.ref_id from game.position_links l where l.player_id = v_player.id order by l.seq desc limit 1)
        is distinct from p_key then
    -- The answer is final: the cage confirms on it. Without the mark, a credit found mid-hand
    -- (no link written for a player who folded for free) would read as revertible afterwards.
    update game.seat_credits c set kept_at = now(), updated_at = now() where c.credit_key = p_key;
    return 'credited';
  end if;

  if v_player.chain_length = 1 then
    -- this credit opened the seat: the sitting never happened
    update game.table_players p set chip_balance = 0, status = 'closed', closed_at = now(), closing_ref_id = p_key
     where p.id = v_player.id;
  else
    update game.table_players p set chip_balance = p.chip_balance - v_credit.amount where p.id = v_player.id;
  end if;
  perform game_private.extend_chain(v_player.id, 'reverted', -v_credit.amount, p_key);
  update game.seat_credits c set status = 'reverted', updated_at = now() where c.credit_key = p_key;
  perform game_private.seats_changed(p_table_id);
  return 'reverted';
end;
$$;

-- The three stand-ups, one per authority (a service login names no player it could not prove):
--   game.stand_up(table, sid)             the player's own: the user of the access JWT's live grant
--   game.stand_up_busted(table, user)     a bust: only a position with nothing left
--   game.stand_up_idle(table, user)       the spec's sit-out timeout: only a position the dealer sat
--                                         out at least the house's idle_kick_seconds ago
-- Each freezes the position (`leaving`) for its settlement and returns its stack and chain head;
-- standing up again returns the same.
create or replace function game_private.stand_up_position(p_table_id text, p_user_id uuid, p_reason text)
  returns table (player_id bigint, seat_index integer, chip_balance bigint, history_hash text, money_kind text)
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_table game.tables;
  v_player game.table_players;
  v_idle integer;
begin
  -- a hand left by a game process that is gone does not hold the table (35_leases.sql)
  v_table := game_private.recover_orphaned_hand(game_private.require_cash_table(game_private.lock_table(p_table_id), 'stand_up'));
  select * into v_player from game.table_players p
   where p.table_id = p_table_id and p.user_id = p_user_id and p.status <> 'closed'
   for update;
  if v_player.id is null then
    perform game_private.refuse('not_at_table');
  end if;
  if v_player.status = 'seated' then
    if p_reason = 'bust' and v_player.chip_balance <> 0 then
      perform game_private.refuse('not_busted', format('the stack is %s', v_player.chip_balance));
    end if;
    if p_reason = 'idle' then
      select h.idle_kick_seconds into v_idle from game.house_rules h;
      if v_player.sat_out_at is null or v_player.sat_out_at > now() - make_interval(secs => coalesce(v_idle, 300)) then
        perform game_private.refuse('player_not_idle', case when v_player.sat_out_at is null then 'the player is dealt in'
          else format('sat out since %s; the house removes after %s s', v_player.sat_out_at, v_idle) end);
      end if;
    end if;
    if v_table.current_hand_id is not null then
      perform game_private.refuse('hand_in_progress', format('hand %s', v_table.current_hand_id));
    end if;
    update game.table_players p set status = 'leaving', leaving_at = now() where p.id = v_player.id;
    perform game_private.seats_changed(p_table_id);
  elsif p_reason = 'bust' and v_player.chip_balance <> 0 then
    perform game_private.refuse('not_busted', format('the stack is %s', v_player.chip_balance));
  end if;
  return query select v_player.id, v_player.seat_index, v_player.chip_balance, v_player.history_hash, v_table.money_kind::text;
end;
$$;

create or replace function game.stand_up(p_table_id text, p_sid uuid)
  returns table (player_id bigint, seat_index integer, chip_balance bigint, history_hash text, money_kind text)
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
  select * from game_private.stand_up_position(p_table_id, auth_private.user_of_sid(p_sid), 'voluntary')
$$;

create or replace function game.stand_up_busted(p_table_id text, p_user_id uuid)
  returns table (player_id bigint, seat_index integer, chip_balance bigint, history_hash text, money_kind text)
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
  select * from game_private.stand_up_position(p_table_id, p_user_id, 'bust')
$$;

create or replace function game.stand_up_idle(p_table_id text, p_user_id uuid)
  returns table (player_id bigint, seat_index integer, chip_balance bigint, history_hash text, money_kind text)
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
  select * from game_private.stand_up_position(p_table_id, p_user_id, 'idle')
$$;

-- The dealer sits a seated player out (turn timeouts, or their own sit_out) or deals them in again,
-- under the table's lease (the epoch of the room that deals it). Sitting out keeps the time it
-- began; returns false when the user has no seated position here.
create or replace function game.set_sitting_out(p_table_id text, p_user_id uuid, p_out boolean, p_epoch bigint)
  returns boolean
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  perform game_private.check_lease(p_table_id, p_epoch);
  update game.table_players p set sat_out_at = case when coalesce(p_out, false) then coalesce(p.sat_out_at, now()) end
   where p.table_id = p_table_id and p.user_id = p_user_id and p.status = 'seated';
  return found;
end;
$$;

-- The seated players of a table sat out for at least the house's idle time: the ones the dealer
-- removes (a forced withdraw, to custody) between hands.
create or replace function game.idle_players(p_table_id text) returns setof uuid
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select p.user_id from game.table_players p, game.house_rules h
   where p.table_id = p_table_id and p.status = 'seated' and p.sat_out_at <= now() - make_interval(secs => h.idle_kick_seconds)
   order by p.seat_index
$$;

-- Zeroes a settled position: the cage has written its terminal ledger row (p_ledger_ref_id).
-- The chain gets its last link (cash_out, custody or bust) and the seat is free again.
-- Settling again with the same ref is a no-op that returns the final head.
create or replace function game.settle_seat(p_player_id bigint, p_ledger_ref_id text, p_settlement text)
  returns table (player_id bigint, history_hash text, status text)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_table game.tables;
  v_player game.table_players;
begin
  if p_settlement is null or p_settlement not in ('cash_out', 'custody', 'bust') or p_ledger_ref_id is null then
    perform game_private.refuse('invalid_credit', 'settlement is cash_out, custody or bust, with its ledger ref');
  end if;
  select * into v_player from game.table_players p where p.id = p_player_id;
  if v_player.id is null then
    perform game_private.refuse('not_at_table');
  end if;
  v_table := game_private.require_cash_table(game_private.lock_table(v_player.table_id), 'settle_seat');
  select * into v_player from game.table_players p where p.id = p_player_id for update;
  if v_player.status = 'closed' then
    if v_player.closing_ref_id is distinct from p_ledger_ref_id then
      perform game_private.refuse('not_at_table', 'this position was closed by another settlement');
    end if;
    return query select v_player.id, v_player.history_hash, 'settled'::text;
    return;
  end if;
  if v_player.status <> 'leaving' then
    perform game_private.refuse('seat_not_leaving', 'stand the player up first');
  end if;
  -- The seat closes only on the cage's terminal entry for this position: the settlement the cage
  -- wrote for this player, with this ledger ref and kind, for the stack and chain head the seat
  -- froze when it stood up. Any other ref would close the seat with its chips left in escrow.
  -- (on a chain-bank table, the chain bank's: paid on chain (confirmed), or a bust; its key is the ledger ref)
  if (v_table.bank = 'chain' and not exists (select from bank.withdraw_intents w
                            where w.player_id = p_player_id and w.idempotency_key = p_ledger_ref_id and w.status = 'confirmed'
                              and w.settlement = p_settlement and w.amount = v_player.chip_balance
                              and w.history_hash = v_player.history_hash))
     or (v_table.bank = 'cage' and not exists (select from cage.withdraw_intents w
                  where w.player_id = p_player_id and w.ledger_ref_id = p_ledger_ref_id and w.settlement = p_settlement
                    and w.amount = v_player.chip_balance and w.history_hash = v_player.history_hash)) then
    perform game_private.refuse('settlement_not_found',
      format('the cage has no %s settlement %s of position %s', p_settlement, p_ledger_ref_id, p_player_id));
  end if;
  perform game_private.seats_changed(v_player.table_id);
  return query select p_player_id, game_private.close_position(v_player, p_ledger_ref_id, p_settlement), 'closed'::text;
end;
$$;

-- Closes a stood-up position on its terminal ledger row: the stack to zero, the chain's last link
-- (cash_out, custody, bust or escape), the seat free. Answers the final head. The caller holds the
-- table's lock and has checked that the settlement exists for this stack and chain head:
-- game.settle_seat, or the cage's settlement itself (cage.settle_position), which closes the seat in
-- the transaction that writes the row, a hand end's bust (close_busts), or a table's escape
-- (cage.escape_table, its custody hold written first). The callers outside a hand end tell the
-- rooms (game_private.seats_changed); a hand end's room reads its seats after the end itself (issue
-- 33: the notice made it read them twice and send everyone a state twice per bust).
create or replace function game_private.close_position(v_player game.table_players, p_ledger_ref_id text, p_settlement text)
  returns text
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  -- last_hand: the last hand of the table that can carry a link of the position (game_private.
  -- position_chain reads up to it). Closed, it moves in no hand after the table's latest: no hand
  -- holds a position that is settled, an escaped table is frozen, and a bust set it to the hand
  -- that busted it.
  update game.table_players p set chip_balance = 0, status = 'closed', closed_at = now(), closing_ref_id = p_ledger_ref_id,
                                  last_hand = coalesce(p.last_hand, (select h.hand_number from game.hand_histories h
                                                                      where h.table_id = p.table_id order by h.hand_number desc limit 1))
   where p.id = v_player.id;
  return game_private.extend_chain(v_player.id, p_settlement, -v_player.chip_balance, p_ledger_ref_id);
end;
$$;

-- The cage confirmed the deposit whose buy-in funded this credit: the credit is kept, so
-- game.cancel_credit can no longer take it back off the seat. True when the game holds the credit
-- (now kept); false when it does not (never arrived, cancelled or reverted). Called by
-- cage.confirm_deposit, in its transaction: the game's table is written only by the game's SQL.
create or replace function game_private.keep_credit(p_key text) returns boolean
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  -- locks the credit row: a concurrent game.cancel_credit either reverted it first (no row
  -- matches) or waits and then finds it kept
  update game.seat_credits c set kept_at = coalesce(c.kept_at, now()), updated_at = now()
   where c.credit_key = p_key and c.status = 'credited';
  return found;
end;
$$;

-- The cage is failing a deposit: the key is tombstoned unless the game already holds it, and the
-- credit's status is answered under a lock ('credited' stands: the cage confirms instead of
-- reversing). Called by cage.fail_deposit in its transaction.
--
-- A concurrent game.credit_seat of this key holds its insert: the insert here waits for it, then
-- sees it. The row is then locked in the mode keep_credit's update takes next (no upgrade).
-- game.cancel_credit locks the row FOR UPDATE before it reverts it: it either reverted first (this
-- waits, then reads 'reverted') or waits for this transaction and then finds the credit kept.
-- Waiting here cannot close a cycle: when the row is another transaction's, the only row the
-- caller holds yet is its deposit intent, and no function that locks a seat credit (cancel_credit:
-- table, credit, seat; confirm_deposit: the intent first) waits for a deposit intent meanwhile.
create or replace function game_private.tombstone_credit(p_key text, p_table_id text, p_user_id uuid, p_amount bigint)
  returns text
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_status text;
begin
  insert into game.seat_credits (credit_key, table_id, user_id, amount, status)
  values (p_key, p_table_id, p_user_id, p_amount, 'cancelled')
  on conflict (credit_key) do nothing;
  select c.status into v_status from game.seat_credits c where c.credit_key = p_key for no key update;
  return v_status;
end;
$$;

-- A hand begun (the table held under its lease, as game.begin_hand holds it) and the seats it is
-- dealt from, read under the table's lock in the same transaction: one round trip at every deal.
-- p_deal: the hand's committed deal, sealed, with the contributions it has (what an abandonment
-- reveals); it must be the table's committed next deal (deal_next: its commitment). p_next: the deal
-- committed for the hand after it (drawn now, published after this answer). Both ride this write,
-- so keeping every committed seed costs no round trip. A table with an abandoned deal not revealed
-- yet deals nothing (deal_unrevealed): its room reveals it first, so the chain has no hole.
--
-- A deal moves no chip, so its commit does not wait for the WAL flush (synchronous_commit off for
-- this transaction only; the hand's end, which writes the stacks, waits as every money write does,
-- and its flush carries the deal's record with it). What a crash of the database can lose is the
-- mark of a hand in progress and the deals written with it, within the WAL writer's delay: the
-- hand's end is then refused (no_hand_in_progress) and the stacks of its start stand, as for an
-- abandoned hand. Only when the transaction wrote nothing before it (the dealer sends it alone,
-- server/game/hands/hands.ts); a caller must not write money after it in the same transaction.
-- Generic plans, as game.end_hand's (db/functions/game/30_hands.sql).
create or replace function game.deal_hand(p_table_id text, p_hand_id text, p_epoch bigint, p_deal jsonb, p_next jsonb)
  returns table (id text, user_id uuid, agent_id uuid, seat_index integer, chip_balance text, status text, sat_out boolean)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_generic_plan
  set enable_seqscan = off -- by key only, as game.end_hand
as $$
declare
  v_table game.tables;
begin
  if pg_current_xact_id_if_assigned() is null then
    perform set_config('synchronous_commit', 'off', true);
  end if;
  if p_hand_id is null or length(p_hand_id) not between 1 and 128 then
    perform game_private.refuse('invalid_hand', 'hand id 1..128 chars');
  end if;
  v_table := game_private.lock_leased(p_table_id, p_epoch);
  if v_table.mode = 'sng' and v_table.tournament_state is distinct from 'playing' then
    perform game_private.refuse('tournament_not_playing', format('the tournament is %s', v_table.tournament_state));
  end if;
  if v_table.current_hand_id is not null then
    perform game_private.refuse('hand_in_progress', format('hand %s', v_table.current_hand_id));
  end if;
  if v_table.unrevealed_deals > 0 then
    perform game_private.refuse('deal_unrevealed', format('table %s has %s abandoned deals to reveal first', p_table_id, v_table.unrevealed_deals));
  end if;
  perform game_private.check_deals(v_table, p_hand_id, p_deal, p_next);
  update game.tables t set current_hand_id = p_hand_id, current_hand_started_at = now(), deal_current = p_deal, deal_next = p_next
   where t.table_id = p_table_id;
  return query select * from game.seats_of(p_table_id);
end;
$$;