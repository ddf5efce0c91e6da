-- Refunds of vault deposits no intent backs (issue 31, "Chain intents"; the table:
-- db/migrations/000045_vault_refunds.sql). The chain bank's reconciler reads the vault's Deposited
-- events (server/bank/chain-audit.ts) and refunds, to the event's owner, a deposit that has no
-- intent at all, or whose intent is confirmed and funded nothing ten minutes on. SQL cannot read
-- the chain: it records the event the refund stands for (transaction, log index, table key, owner,
-- amount), refuses a refund of a deposit that funded a seat or is refunded already, and never lets
-- the deposit be credited once refunded. Paying needs the vault's operator key, which only the
-- chain-bank process holds, and it pays only a refund whose deposit it re-read on chain; a refund
-- the chain does not bear out is named by the chain audit (chain_refund_without_deposit).

-- Whether the deposit (its intent, or none) is owed a refund; refuses refund_not_owed otherwise.
create or replace function bank_private.refund_owed(p_intent bank.deposit_intents, p_tx_hash text, p_owner text, p_base_units numeric)
  returns void
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
begin
  if p_intent.idempotency_key is null then
    -- no intent at all: no intent may record this transaction (a failed one's tokens are credited
    -- by the reconciler's repair, bank.confirm_deposit, not refunded)
    if exists (select from bank.deposit_intents d where d.tx_hash = p_tx_hash) then
      perform bank_private.refuse('refund_not_owed', 'a deposit intent records this transaction');
    end if;
    return;
  end if;
  if p_intent.status <> 'confirmed' or p_intent.tx_hash is distinct from p_tx_hash or lower(p_intent.wallet) <> p_owner
     or p_intent.amount::numeric * cage_private.base_units() <> p_base_units then
    perform bank_private.refuse('refund_not_owed', 'not this confirmed deposit''s transaction, wallet and amount');
  end if;
  -- funded nothing: not credited (nor credited by the game with the answer lost, nor reverted:
  -- only a credit cancelled before it landed lets a refund through), no tournament refund of it,
  -- no refund of it yet, and confirmed ten minutes ago (the audit's grace)
  if p_intent.credited_at is not null
     or exists (select from game.seat_credits c where c.credit_key = p_intent.idempotency_key and c.status <> 'cancelled')
     or exists (select from bank.tournament_payments t where t.entry_key = p_intent.idempotency_key and t.kind = 'refund')
     or exists (select from bank.vault_refunds r where r.deposit_key = p_intent.idempotency_key)
     or p_intent.updated_at >= now() - interval '600 seconds' then
    perform bank_private.refuse('refund_not_owed', 'the deposit funded a seat, is refunded, or may still be credited');
  end if;
end;
$$;

-- The refund of the vault's Deposited event (p_tx_hash, p_log_index) to its owner: opened once
-- (pending), or the refund already opened for it (the same values; refund_state_conflict for
-- others). p_deposit_key: the confirmed intent it refunds, or null for a deposit with no intent.
create or replace function bank.open_vault_refund(
  p_tx_hash text, p_log_index integer, p_table_key text, p_owner text, p_base_units numeric, p_deposit_key text
) returns bank.vault_refunds
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_tx text := lower(p_tx_hash);
  v_owner text := lower(p_owner);
  v_table_key text := lower(p_table_key);
  v_key text;
  v_row bank.vault_refunds;
  v_intent bank.deposit_intents;
begin
  if v_tx is null or v_tx !~ '^0x[0-9a-f]{64}$' or p_log_index is null or p_log_index < 0
     or v_table_key is null or v_table_key !~ '^0x[0-9a-f]{64}$' or v_owner is null or v_owner !~ '^0x[0-9a-f]{40}$'
     or p_base_units is null or p_base_units <= 0 or p_base_units <> trunc(p_base_units) or p_base_units >= 1e30 then
    perform bank_private.refuse('bad_request', 'a refund names a deposit transaction, log index, table key, owner and amount');
  end if;
  -- one decision per deposit transaction at a time: this, and bank.confirm_deposit of it
  perform pg_advisory_xact_lock(hashtextextended('bank.vault-deposit:' || v_tx, 0));
  if p_deposit_key is not null then
    select * into v_intent from bank.deposit_intents d where d.idempotency_key = p_deposit_key;
    if v_intent.idempotency_key is null then
      perform bank_private.refuse('deposit_not_found');
    end if;
    -- one lock order with the game's credit of it (game.credit_seat): the table, then the deposit
    perform game_private.lock_table(v_intent.table_id);
    v_intent := bank_private.locked_deposit(p_deposit_key);
  end if;
  v_key := format('vault-refund:%s:%s', v_tx, p_log_index);
  select * into v_row from bank.vault_refunds r where r.refund_key = v_key for update;
  if v_row.refund_key is not null then
    if v_row.deposit_key is distinct from p_deposit_key or v_row.table_key <> v_table_key
       or v_row.destination <> v_owner or v_row.base_units <> p_base_units then
      perform bank_private.refuse('refund_state_conflict', 'this deposit''s refund was opened with other values');
    end if;
    return v_row;
  end if;
  perform bank_private.refund_owed(v_intent, v_tx, v_owner, p_base_units);
  insert into bank.vault_refunds (refund_key, deployment_id, deposit_tx_hash, deposit_log_index, deposit_key, table_key, destination, base_units)
  values (v_key, (bank_private.active_deployment()).id, v_tx, p_log_index, p_deposit_key, v_table_key, v_owner, p_base_units)
  returning * into v_row;
  return v_row;
end;
$$;

-- A refund's transaction moves along: submitted (the node took it), confirmed (its receipt, with the
-- vault's Withdrawn event of this destination and amount, of its transaction or one sent before),
-- failed (the chain refused or dropped it: pending again, its transaction kept in prior_tx_hashes,
-- which the bank reads back before it sends another). Each only forward; a replay answers the row.
create or replace function bank.advance_vault_refund(
  p_key text, p_status text, p_tx_hash text, p_block_number bigint, p_to text, p_base_units numeric, p_error text
) returns bank.vault_refunds
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_row bank.vault_refunds;
begin
  select * into v_row from bank.vault_refunds r where r.refund_key = p_key for update;
  if v_row.refund_key is null then
    perform bank_private.refuse('payment_not_found');
  end if;
  if v_row.status = p_status and (p_status <> 'submitted' or v_row.tx_hash = p_tx_hash) then
    null;
  elsif p_status = 'submitted' and v_row.status = 'pending' and p_tx_hash ~ '^0x[0-9a-f]{64}$' then
    update bank.vault_refunds r set status = 'submitted', tx_hash = p_tx_hash, submitted_at = now(), updated_at = now()
     where r.refund_key = p_key returning * into v_row;
  elsif p_status = 'confirmed' and v_row.status in ('pending', 'submitted')
        and (v_row.tx_hash = p_tx_hash or p_tx_hash = any (v_row.prior_tx_hashes)) and p_block_number > 0
        and lower(p_to) = v_row.destination and p_base_units = v_row.base_units then
    update bank.vault_refunds r
       set status = 'confirmed', tx_hash = p_tx_hash, block_number = p_block_number, confirmed_at = now(), error = null, updated_at = now()
     where r.refund_key = p_key returning * into v_row;
  elsif p_status = 'failed' and v_row.status in ('pending', 'submitted') then
    update bank.vault_refunds r
       set status = 'pending', tx_hash = null, error = left(coalesce(p_error, 'failed'), 300), updated_at = now(),
           prior_tx_hashes = case when r.tx_hash is null then r.prior_tx_hashes else r.prior_tx_hashes || r.tx_hash end
     where r.refund_key = p_key returning * into v_row;
  else
    perform bank_private.refuse('refund_state_conflict', format('refund is %s; asked %s', v_row.status, p_status));
  end if;
  return v_row;
end;
$$;
