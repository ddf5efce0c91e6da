-- The chain bank's deposits (spec: "Deposit (bank)"; server/bank/deposit.ts makes the calls):
--   open      bank.open_deposit: the player of the token grant, a chain table, the permit's
--             signer one of their linked EVM wallets; replay-once on the permit's key;
--   submit    bank.submit_deposit: the transaction the node accepted;
--   confirm   bank.confirm_deposit: its receipt, with the vault's Deposited event of this table,
--             wallet and amount, from submitted or from failed (a failure is the bank's claim; the
--             receipt overrides it). Not yet a credit: the game re-reads the transaction and its
--             event from the chain (game.record_chain_deposit) before it funds a seat;
--   fail      bank.fail_deposit: the chain refused it (the revert reason); the reconciler's scan of
--             the vault's events (server/bank/chain-audit.ts) names and confirms a failed deposit
--             whose tokens reached the vault;
--   credited  bank.mark_credited: the game funded the seat (game.seat_credits holds this key).

-- A chain deposit as it stands now, the one definition the read (GET /api/deposits/:key) and the
-- replay of a tournament entry answer from: the intent's own status, except that a tournament entry
-- whose refund was opened since (bank.tournament_payments, kind 'refund') is `refunded`, with the
-- refund's key and transaction.
create or replace view bank.deposit_states as
  select d.idempotency_key, d.user_id, d.table_id, d.seat_index, d.amount, d.wallet, d.mode,
         case when r.payment_key is not null then 'refunded' else d.status end as status,
         d.tx_hash, d.error, d.credited_at, r.payment_key as refund_key, r.tx_hash as refund_tx_hash, d.created_at, d.updated_at
    from bank.deposit_intents d
    left join bank.tournament_payments r on r.entry_key = d.idempotency_key and r.kind = 'refund';
comment on view bank.deposit_states is 'Chain deposits as they stand: the intent''s status, or refunded once a tournament entry''s refund was opened.';

-- The active deployment, or no_active_deployment.
create or replace function bank_private.active_deployment() returns bank.deployments
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_row bank.deployments;
begin
  select * into v_row from bank.deployments d where d.active;
  if v_row.id is null then
    perform bank_private.refuse('no_active_deployment', 'the chain bank has no contracts to talk to');
  end if;
  return v_row;
end;
$$;

-- The deployment the bank talks to from now on: an operator's act. Intents of an older deployment
-- keep theirs. A deployment decides where every new intent's tokens go and which contracts the
-- processes that re-read the chain trust, so the bank login cannot choose it (issue 31, class 7).
create or replace function bank_private.activate(
  p_admin uuid, p_chain_id bigint, p_token text, p_vault text, p_rpc_url text, p_from_block bigint
) returns bank.deployments
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_row bank.deployments;
begin
  if p_chain_id is null or p_chain_id <= 0 or p_token !~ '^0x[0-9a-fA-F]{40}$' or p_vault !~ '^0x[0-9a-fA-F]{40}$'
     or (p_rpc_url is not null and p_rpc_url !~ '^https?://[^\s]+$') or coalesce(p_from_block, 0) < 0 then
    perform bank_private.refuse('invalid_deployment', 'a chain id, two contract addresses, an http(s) URL or none, a block or none');
  end if;
  select * into v_row from bank.deployments d
   where d.active and d.chain_id = p_chain_id and lower(d.token) = lower(p_token) and lower(d.vault) = lower(p_vault);
  if v_row.id is not null then
    -- the same contracts again (a local anvil deploys to the same addresses at every start): where
    -- its chain is read now
    if p_rpc_url is not null and v_row.rpc_url is distinct from p_rpc_url then
      update bank.deployments d set rpc_url = p_rpc_url, from_block = coalesce(p_from_block, 0) where d.id = v_row.id returning * into v_row;
    end if;
    return v_row;
  end if;
  update bank.deployments d set active = false where d.active;
  insert into bank.deployments (chain_id, token, vault, activated_by, rpc_url, from_block)
  values (p_chain_id, p_token, p_vault, p_admin, p_rpc_url, coalesce(p_from_block, 0)) returning * into v_row;
  return v_row;
end;
$$;

-- An operator activates a deployment (p_admin_sid: their live admin session; the chain bank's
-- POST /api/operator/chain/deployment passes the sid of the operator's access JWT).
create or replace function bank.activate_deployment(
  p_admin_sid uuid, p_chain_id bigint, p_token text, p_vault text, p_from_block bigint
) returns bank.deployments
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_admin uuid := auth_private.admin_of_session(p_admin_sid);
begin
  return bank_private.activate(v_admin, p_chain_id, p_token, p_vault, null, p_from_block);
end;
$$;

-- The owner activates one (no service login may execute this): `npm start` in development, after
-- it deployed the contracts to its own local anvil, with that anvil's URL for the re-readers.
create or replace function bank_private.activate_deployment_as_owner(
  p_chain_id bigint, p_token text, p_vault text, p_rpc_url text, p_from_block bigint
) returns bank.deployments
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$ select bank_private.activate(null, p_chain_id, p_token, p_vault, p_rpc_url, p_from_block) $$;

-- A deposit opened for the player of the token grant p_sid. The key is the hash of the permit
-- ({ wallet, amount, deadline, v, r, s }): the same key again answers the deposit as it stands
-- (replayed), for another table, seat or amount idempotency_key_reused. Refused: a table of the
-- cage (not_a_chain_table), a frozen one (table_frozen), a wallet not linked to the player
-- (wallet_not_linked), a tournament entry of another amount than its entry fee; a tournament entry
-- holds the registrant's seat (bank_private.hold_entry_seat: the seat's gates are the game's).
create or replace function bank.open_deposit(
  p_sid uuid, p_key text, p_table_id text, p_seat_index integer, p_amount bigint, p_wallet text, p_deadline bigint
) returns table (idempotency_key text, status text, tx_hash text, error text, user_id uuid, table_id text, seat_index integer,
                 amount bigint, wallet text, mode text, credited boolean, replayed boolean)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_user uuid := auth_private.user_of_sid(p_sid);
  v_row bank.deposit_intents;
  v_table game.tables;
  v_deployment bank.deployments;
  v_seat integer := p_seat_index;
begin
  if p_key is null or p_key !~ '^0x[0-9a-f]{64}$' or p_wallet is null or p_wallet !~ '^0x[0-9a-fA-F]{40}$'
     or p_deadline is null or p_deadline <= 0 then
    perform bank_private.refuse('bad_request', 'a permit key, the signer address and the permit deadline');
  end if;
  if p_amount is null or p_amount <= 0 or p_amount > 9223372036854 then
    perform bank_private.refuse('invalid_amount', 'a positive whole number of chips');
  end if;
  select * into v_row from bank.deposit_intents d where d.idempotency_key = p_key;
  if v_row.idempotency_key is null then
    v_deployment := bank_private.active_deployment();
    select * into v_table from game.tables t where t.table_id = p_table_id;
    if v_table.table_id is null then
      perform bank_private.refuse('table_not_found');
    end if;
    if v_table.bank <> 'chain' then
      perform bank_private.refuse('not_a_chain_table', format('table %s keeps its money in the cage', p_table_id));
    end if;
    if v_table.status = 'frozen' then
      perform bank_private.refuse('table_frozen');
    end if;
    if v_table.mode = 'sng' and p_amount is distinct from game_private.setting_bigint(v_table.settings, 'entryFee') then
      perform bank_private.refuse('tournament_entry_fee_mismatch', 'a tournament deposit is its entry fee');
    end if;
    if v_table.mode = 'cash' and p_seat_index is null then
      perform bank_private.refuse('missing_seat_index');
    end if;
    -- the signer must be one of the player's linked EVM wallets (also asked of the auth role over
    -- HTTP, as the spec says; this is the check the bank's login cannot talk its way past)
    if not exists (select from auth.wallets w where w.user_id = v_user and w.chain = 'evm' and lower(w.address) = lower(p_wallet)) then
      perform bank_private.refuse('wallet_not_linked');
    end if;
    -- a tournament entry holds the registrant's seat while the chain confirms it (40_tournaments.sql)
    if v_table.mode = 'sng' then
      v_seat := bank_private.hold_entry_seat(p_sid, v_user, p_table_id, p_seat_index);
    end if;
    insert into bank.deposit_intents as d (idempotency_key, deployment_id, user_id, table_id, seat_index, wallet, amount, deadline, mode)
    values (p_key, v_deployment.id, v_user, p_table_id, v_seat, p_wallet, p_amount, p_deadline, v_table.mode)
    on conflict do nothing
    returning d.* into v_row;
    if v_row.idempotency_key is not null then
      return query select v_row.idempotency_key, v_row.status, v_row.tx_hash, v_row.error, v_row.user_id, v_row.table_id,
                          v_row.seat_index, v_row.amount, v_row.wallet, v_row.mode, false, false;
      return;
    end if;
    select * into v_row from bank.deposit_intents d where d.idempotency_key = p_key;
  end if;
  if v_row.user_id <> v_user or v_row.table_id <> p_table_id or v_row.amount <> p_amount
     or (v_row.seat_index is distinct from p_seat_index and (v_row.mode = 'cash' or p_seat_index is not null))
     or lower(v_row.wallet) <> lower(p_wallet) then
    perform bank_private.refuse('idempotency_key_reused', 'this permit was used for another deposit');
  end if;
  return query select v_row.idempotency_key, v_row.status, v_row.tx_hash, v_row.error, v_row.user_id, v_row.table_id,
                      v_row.seat_index, v_row.amount, v_row.wallet, v_row.mode, v_row.credited_at is not null, true;
end;
$$;

-- A deposit intent, locked for its next step, or deposit_not_found.
create or replace function bank_private.locked_deposit(p_key text) returns bank.deposit_intents
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_row bank.deposit_intents;
begin
  select * into v_row from bank.deposit_intents d where d.idempotency_key = p_key for update;
  if v_row.idempotency_key is null then
    perform bank_private.refuse('deposit_not_found');
  end if;
  return v_row;
end;
$$;

-- The node accepted the deposit's transaction (pending -> submitted, once).
create or replace function bank.submit_deposit(p_key text, p_tx_hash text) returns bank.deposit_intents
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_row bank.deposit_intents;
begin
  if p_tx_hash is null or p_tx_hash !~ '^0x[0-9a-f]{64}$' then
    perform bank_private.refuse('bad_request', 'a transaction hash');
  end if;
  v_row := bank_private.locked_deposit(p_key);
  -- pending, or failed before any transaction was recorded (a failure is a claim: the node took it)
  if v_row.status = 'pending' or (v_row.status = 'failed' and v_row.tx_hash is null) then
    update bank.deposit_intents d set status = 'submitted', tx_hash = p_tx_hash, error = null, updated_at = now()
     where d.idempotency_key = p_key returning * into v_row;
  elsif v_row.tx_hash is distinct from p_tx_hash then
    perform bank_private.refuse('deposit_state_conflict', format('deposit is %s with transaction %s', v_row.status, v_row.tx_hash));
  end if;
  return v_row;
end;
$$;

-- Its receipt confirmed it: the block and the vault's Deposited event (owner, amount in base units)
-- as the chain logged them; they must be this deposit's (deposit_event_mismatch). The table key
-- (keccak256 of the table id: SQL has no keccak) and the whole event are read back from the chain
-- by the bank's reconciler before it credits a seat from a row it did not confirm itself
-- (server/bank/reconcile.ts).
create or replace function bank.confirm_deposit(
  p_key text, p_tx_hash text, p_block_number bigint, p_owner text, p_base_units numeric
) returns bank.deposit_intents
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_row bank.deposit_intents;
begin
  v_row := bank_private.locked_deposit(p_key);
  if v_row.status = 'confirmed' then
    return v_row;
  end if;
  -- a deposit refunded to its owner is never credited as well (bank.open_vault_refund takes the same lock)
  perform pg_advisory_xact_lock(hashtextextended('bank.vault-deposit:' || coalesce(lower(p_tx_hash), ''), 0));
  if exists (select from bank.vault_refunds r where r.deposit_tx_hash = lower(p_tx_hash)) then
    perform bank_private.refuse('deposit_refunded', 'the tokens of this transaction were refunded to their owner');
  end if;
  -- submitted with this transaction; or failed: a failure is only the bank's claim, and the
  -- receipt of the deposit's transaction overrides it (the chain took the tokens: issue 31, class 7)
  if p_tx_hash is null or p_tx_hash !~ '^0x[0-9a-f]{64}$' or v_row.status not in ('submitted', 'failed')
     or (v_row.tx_hash is not null and v_row.tx_hash <> p_tx_hash) then
    perform bank_private.refuse('deposit_state_conflict', format('deposit is %s', v_row.status));
  end if;
  if p_block_number is null or p_block_number <= 0 or lower(p_owner) <> lower(v_row.wallet)
     or p_base_units is distinct from v_row.amount::numeric * cage_private.base_units() then
    perform bank_private.refuse('deposit_event_mismatch', 'the Deposited event is not this deposit''s wallet and amount');
  end if;
  update bank.deposit_intents d set status = 'confirmed', tx_hash = p_tx_hash, block_number = p_block_number, error = null, updated_at = now()
   where d.idempotency_key = p_key returning * into v_row;
  return v_row;
end;
$$;

-- The chain refused it (its revert reason), or it never reached the chain: failed, once.
create or replace function bank.fail_deposit(p_key text, p_error text) returns bank.deposit_intents
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_row bank.deposit_intents;
begin
  v_row := bank_private.locked_deposit(p_key);
  if v_row.status = 'failed' then
    return v_row;
  end if;
  if v_row.status = 'confirmed' then
    perform bank_private.refuse('deposit_state_conflict', 'a confirmed deposit does not fail');
  end if;
  update bank.deposit_intents d set status = 'failed', error = left(coalesce(p_error, 'failed'), 300), updated_at = now()
   where d.idempotency_key = p_key returning * into v_row;
  -- a tournament entry that will not be paid releases the seat it held (as the cage's overdraft does)
  if v_row.mode = 'sng' then
    perform bank_private.release_entry_seat(v_row.table_id, v_row.user_id);
  end if;
  return v_row;
end;
$$;

-- The game funded the seat: its seat credit under this key exists (the game's credit_seat accepts
-- only a confirmed deposit of this user, table, seat and amount). Idempotent.
create or replace function bank.mark_credited(p_key text) returns bank.deposit_intents
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_row bank.deposit_intents;
begin
  v_row := bank_private.locked_deposit(p_key);
  if v_row.credited_at is null then
    if not exists (select from game.seat_credits c where c.credit_key = p_key and c.status = 'credited') then
      perform bank_private.refuse('credit_not_found', 'the game holds no credit of this deposit');
    end if;
    update bank.deposit_intents d set credited_at = now(), updated_at = now() where d.idempotency_key = p_key returning * into v_row;
  end if;
  return v_row;
end;
$$;

-- Confirmed deposits whose credit never landed (the game was down, the answer lost): the
-- reconciler retries their callback, every 30 s and at startup.
create or replace function bank.uncredited_deposits(p_grace_seconds integer, p_limit integer)
  returns setof bank.deposit_intents
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select * from bank.deposit_intents d
   where d.status = 'confirmed' and d.credited_at is null
     and not exists (select from bank.vault_refunds r where r.deposit_key = d.idempotency_key)
     and d.updated_at < now() - make_interval(secs => greatest(coalesce(p_grace_seconds, 0), 0))
   order by d.updated_at
   limit least(greatest(coalesce(p_limit, 100), 1), 1000)
$$;

-- Deposits left pending or submitted (a bank that stopped mid-request, a chain that went away):
-- the reconciler reads their transaction's outcome from the chain.
create or replace function bank.unresolved_deposits(p_grace_seconds integer, p_limit integer)
  returns setof bank.deposit_intents
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select * from bank.deposit_intents d
   where d.status in ('pending', 'submitted')
     and d.updated_at < now() - make_interval(secs => greatest(coalesce(p_grace_seconds, 0), 0))
   order by d.updated_at
   limit least(greatest(coalesce(p_limit, 100), 1), 1000)
$$;
