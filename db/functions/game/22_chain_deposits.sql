-- A chain-bank deposit funds a seat only once the game role, which did not write it, has read its
-- evidence back from the chain itself (issue 31, class 7): the bank login records what it says the
-- chain did (bank.confirm_deposit), the game reads the transaction and the vault's Deposited event
-- (server/game/seats/chain-deposit.ts: mined, of this deployment's vault, the permit in its calldata
-- hashing to this deposit's key, the event's table, owner and amount this deposit's) and records
-- that it did; game.credit_seat and the chain entry's credit accept only a deposit so recorded. A
-- stolen bank login, with the service key as well, confirms a made-up deposit in vain.

-- What the game reads back before it funds a seat from deposit p_key: its claimed transaction, the
-- deposit's own fields and its deployment (the vault, the chain, where a local chain is read).
-- Nothing for a key that is no confirmed chain deposit (credit_seat then refuses it on its own).
create or replace function game.chain_deposit_to_verify(p_key text)
  returns table (tx_hash text, table_id text, wallet text, amount bigint, chain_id bigint, vault text, rpc_url text, verified boolean)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select d.tx_hash, d.table_id, d.wallet, d.amount, x.chain_id, x.vault, x.rpc_url, d.verified_at is not null
    from bank.deposit_intents d
    join bank.deployments x on x.id = d.deployment_id
   where d.idempotency_key = p_key and d.status = 'confirmed'
$$;

-- The game read deposit p_key's transaction p_tx_hash back from the chain: its Deposited event (in
-- block p_block_number, of owner p_owner and p_base_units) is this deposit's, and the permit in its
-- calldata hashes to this key. Recorded once (verified_at); the deposit's block is the one read.
create or replace function game.record_chain_deposit(
  p_key text, p_tx_hash text, p_block_number bigint, p_owner text, p_base_units numeric
) returns boolean
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_row bank.deposit_intents;
begin
  select * into v_row from bank.deposit_intents d where d.idempotency_key = p_key for update;
  if v_row.idempotency_key is null or v_row.status <> 'confirmed' or v_row.tx_hash is distinct from p_tx_hash
     or p_block_number is null or p_block_number <= 0 or lower(p_owner) is distinct from lower(v_row.wallet)
     or p_base_units is distinct from v_row.amount::numeric * cage_private.base_units() then
    perform game_private.refuse('credit_not_backed', format('the chain does not bear out deposit %s as recorded', p_key));
  end if;
  if v_row.verified_at is null then
    update bank.deposit_intents d set verified_at = now(), verified_block = p_block_number, block_number = p_block_number
     where d.idempotency_key = p_key;
  end if;
  return true;
end;
$$;
