-- The chain bank's withdrawals (spec: "Withdraw (bank)"; server/bank/withdraw.ts makes the calls).
-- A position stood up by the game (its stack and chain head frozen) is paid out of the table's
-- vault balance to its destination: a voluntary one to a linked EVM wallet of the player (default:
-- the wallet that signed their last confirmed deposit at this table), a forced one to that last
-- permit signer; a bust pays nothing and is confirmed at once.

-- The wallet that signed the player's last confirmed deposit at this table, or null.
create or replace function bank_private.last_signer(p_user_id uuid, p_table_id text) returns text
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select d.wallet from bank.deposit_intents d
   where d.user_id = p_user_id and d.table_id = p_table_id and d.status = 'confirmed'
   order by d.block_number desc, d.created_at desc
   limit 1
$$;

-- Opens the settlement of a stood-up position (the game's stand_up answer), replay-once on its key
-- keccak256(userId:tableId:historyHash:chipAmount). The position must be this user's at this chain
-- table, leaving, with this stack and chain head (state the bank's login cannot forge). The
-- destination: a voluntary withdrawal names a linked EVM wallet of the user or takes the last
-- permit signer; a forced one always takes the last permit signer; a bust has none.
create or replace function bank.open_withdrawal(
  p_user_id uuid, p_table_id text, p_player_id bigint, p_amount bigint, p_history_hash text,
  p_key text, p_settlement text, p_forced boolean, p_destination text
) returns table (idempotency_key text, status text, tx_hash text, error text, amount bigint, destination text,
                 settlement text, history_hash text, player_id bigint, replayed boolean)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_row bank.withdraw_intents;
  v_destination text;
  v_deployment bank.deployments;
begin
  if p_user_id is null or p_player_id is null or p_history_hash is null or p_history_hash !~ '^[0-9a-f]{64}$'
     or p_key is null or p_key !~ '^0x[0-9a-f]{64}$' or p_settlement is null or p_settlement not in ('cash_out', 'bust')
     or p_amount is null or p_amount < 0 or p_amount > 9223372036854
     or (p_destination is not null and p_destination !~ '^0x[0-9a-fA-F]{40}$') then
    perform bank_private.refuse('bad_request', 'user, position, chain head, key, settlement, amount and a 0x address');
  end if;
  select * into v_row from bank.withdraw_intents w where w.idempotency_key = p_key;
  if v_row.idempotency_key is null then
    if exists (select from bank.withdraw_intents w where w.player_id = p_player_id) then
      perform bank_private.refuse('seat_already_settled', format('position %s was settled under another key', p_player_id));
    end if;
    if (p_settlement = 'bust') <> (p_amount = 0) then
      perform bank_private.refuse(case when p_amount = 0 then 'nothing_to_withdraw' else 'bad_request' end);
    end if;
    if not exists (select from game.tables t where t.table_id = p_table_id and t.bank = 'chain') then
      perform bank_private.refuse('not_a_chain_table');
    end if;
    if not exists (select from game.table_players p
                    where p.id = p_player_id and p.table_id = p_table_id and p.user_id = p_user_id
                      and p.status = 'leaving' and p.chip_balance = p_amount and p.history_hash = p_history_hash) then
      perform bank_private.refuse('bad_request',
        format('position %s is not a stood-up position of this user at this table with this stack and chain head', p_player_id));
    end if;
    if p_settlement = 'cash_out' then
      if p_destination is not null and not coalesce(p_forced, false) then
        if not exists (select from auth.wallets w where w.user_id = p_user_id and w.chain = 'evm' and lower(w.address) = lower(p_destination)) then
          perform bank_private.refuse('wallet_not_linked', 'the destination is not a linked wallet of the player');
        end if;
        v_destination := p_destination;
      else
        v_destination := bank_private.last_signer(p_user_id, p_table_id);
        if v_destination is null then
          perform bank_private.refuse('no_destination', 'no confirmed deposit of this player at this table names a wallet');
        end if;
      end if;
    end if;
    v_deployment := bank_private.active_deployment();
    insert into bank.withdraw_intents as w (idempotency_key, deployment_id, user_id, table_id, player_id, amount, history_hash,
                                            destination, forced, settlement, status)
    values (p_key, v_deployment.id, p_user_id, p_table_id, p_player_id, p_amount, p_history_hash, v_destination,
            coalesce(p_forced, false), p_settlement, case when p_settlement = 'bust' then 'confirmed' else 'pending' end)
    on conflict do nothing
    returning w.* into v_row;
    if v_row.idempotency_key is not null then
      return query select v_row.idempotency_key, v_row.status, v_row.tx_hash, v_row.error, v_row.amount, v_row.destination,
                          v_row.settlement, v_row.history_hash, v_row.player_id, false;
      return;
    end if;
    select * into v_row from bank.withdraw_intents w where w.idempotency_key = p_key;
  end if;
  if v_row.user_id <> p_user_id or v_row.table_id <> p_table_id or v_row.player_id <> p_player_id
     or v_row.amount <> p_amount or v_row.history_hash <> p_history_hash then
    perform bank_private.refuse('idempotency_key_reused', 'this idempotency key was used for another settlement');
  end if;
  return query select v_row.idempotency_key, v_row.status, v_row.tx_hash, v_row.error, v_row.amount, v_row.destination,
                      v_row.settlement, v_row.history_hash, v_row.player_id, true;
end;
$$;

-- A withdrawal intent, locked for its next step, or withdrawal_not_found.
create or replace function bank_private.locked_withdrawal(p_key text) returns bank.withdraw_intents
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_row bank.withdraw_intents;
begin
  select * into v_row from bank.withdraw_intents w where w.idempotency_key = p_key for update;
  if v_row.idempotency_key is null then
    perform bank_private.refuse('withdrawal_not_found');
  end if;
  return v_row;
end;
$$;

-- The withdrawal, locked for its one sender until the calling transaction ends (issue 31, class 7):
-- the chain bank takes it, sends its transaction and records it submitted in that one transaction
-- (server/bank/one-sender.ts), so a second process waits, then reads it submitted and sends nothing.
-- Changes nothing; withdrawal_not_found for an unknown key.
create or replace function bank.take_withdrawal(p_key text) returns bank.withdraw_intents
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  return bank_private.locked_withdrawal(p_key);
end;
$$;

-- The withdrawal's transaction moves along: submitted (the node took it), confirmed (its receipt,
-- with the vault's Withdrawn event of this destination and amount),
-- failed (the chain refused it). Each only forward; replays answer the row. The event is read back
-- from the chain by the bank's reconciler before it settles a seat from a row it did not confirm itself.
create or replace function bank.advance_withdrawal(
  p_key text, p_status text, p_tx_hash text, p_block_number bigint, p_to text, p_base_units numeric, p_error text
) returns bank.withdraw_intents
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_row bank.withdraw_intents;
begin
  v_row := bank_private.locked_withdrawal(p_key);
  if v_row.status = p_status and (p_status <> 'submitted' or v_row.tx_hash = p_tx_hash) then
    return v_row;
  end if;
  if p_status = 'submitted' and v_row.status = 'pending' and p_tx_hash ~ '^0x[0-9a-f]{64}$' then
    update bank.withdraw_intents w set status = 'submitted', tx_hash = p_tx_hash, updated_at = now()
     where w.idempotency_key = p_key returning * into v_row;
  -- confirmed from the receipt of its transaction, or of one it was sent in before a retry: from
  -- submitted, or from failed or pending again (a failure is the bank's claim; the receipt wins)
  elsif p_status = 'confirmed' and v_row.status in ('pending', 'submitted', 'failed')
        and (v_row.tx_hash = p_tx_hash or p_tx_hash = any (v_row.prior_tx_hashes)) and p_block_number > 0
        and lower(p_to) = lower(v_row.destination) and p_base_units = v_row.amount::numeric * cage_private.base_units() then
    update bank.withdraw_intents w set status = 'confirmed', tx_hash = p_tx_hash, block_number = p_block_number, error = null, updated_at = now()
     where w.idempotency_key = p_key returning * into v_row;
  elsif p_status = 'failed' and v_row.status in ('pending', 'submitted') then
    update bank.withdraw_intents w set status = 'failed', error = left(coalesce(p_error, 'failed'), 300), updated_at = now()
     where w.idempotency_key = p_key returning * into v_row;
  else
    perform bank_private.refuse('withdrawal_state_conflict', format('withdrawal is %s; asked %s', v_row.status, p_status));
  end if;
  return v_row;
end;
$$;

-- A failed withdrawal is tried again with a fresh transaction (pending again; the position stays
-- leaving until it is paid): the chain refused it once (out of gas, a nonce race), not for good.
-- The transaction it was sent in is kept (prior_tx_hashes): the bank reads each on chain before it
-- sends another (server/bank/payments.ts), and any of their receipts confirms it.
create or replace function bank.retry_withdrawal(p_key text) returns bank.withdraw_intents
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_row bank.withdraw_intents;
begin
  v_row := bank_private.locked_withdrawal(p_key);
  if v_row.status = 'failed' then
    update bank.withdraw_intents w
       set status = 'pending', tx_hash = null, updated_at = now(),
           prior_tx_hashes = case when w.tx_hash is null then w.prior_tx_hashes else w.prior_tx_hashes || w.tx_hash end
     where w.idempotency_key = p_key returning * into v_row;
  end if;
  return v_row;
end;
$$;

-- The game zeroed the settled seat (its position closed under this key). Idempotent.
create or replace function bank.mark_withdrawal_settled(p_key text) returns bank.withdraw_intents
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_row bank.withdraw_intents;
begin
  v_row := bank_private.locked_withdrawal(p_key);
  if v_row.settled_at is null then
    if not exists (select from game.table_players p where p.id = v_row.player_id and p.status = 'closed' and p.closing_ref_id = p_key) then
      perform bank_private.refuse('withdrawal_state_conflict', 'the game has not closed this position under this settlement');
    end if;
    update bank.withdraw_intents w set settled_at = now(), updated_at = now() where w.idempotency_key = p_key returning * into v_row;
  end if;
  return v_row;
end;
$$;

-- Confirmed withdrawals whose settle callback never landed (the retry worker redelivers them).
create or replace function bank.unsettled_withdrawals(p_grace_seconds integer, p_limit integer)
  returns setof bank.withdraw_intents
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select * from bank.withdraw_intents w
   where w.status = 'confirmed' and w.settled_at is null
     and w.updated_at < now() - make_interval(secs => greatest(coalesce(p_grace_seconds, 0), 0))
   order by w.updated_at
   limit least(greatest(coalesce(p_limit, 100), 1), 1000)
$$;
