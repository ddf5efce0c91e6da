-- Issue 31, class 7: chain intents moved by the bank login alone. The bank login (poker_bank) writes
-- what it claims the chain did (a transaction hash, a receipt's block, a revert); a seat is funded
-- from a chain deposit only once a process that did not write that claim (the game role, poker_game)
-- has read the deposit's transaction and its vault event back from the chain itself and recorded
-- it here (game.record_chain_deposit, db/functions/game/25_chain_evidence.sql). A column the bank
-- login cannot write: it has no UPDATE on the table and no bank function sets it.
alter table bank.deposit_intents add column verified_at timestamptz;
alter table bank.deposit_intents add column verified_block bigint;
alter table bank.deposit_intents add constraint deposit_intents_verified
  check (verified_at is null or (status = 'confirmed' and verified_block is not null));
comment on column bank.deposit_intents.verified_at is 'When the game role read this deposit''s transaction and Deposited event back from the chain (game.record_chain_deposit); a chain seat is credited only after it.';

-- Deployments are an operator's act (a live admin session, bank.activate_deployment) or the owner's
-- (bank_private.activate_deployment_as_owner: `npm start` in development after it deployed to its
-- local anvil); never the bank login's alone. Who activated it, where its chain is read (for the
-- processes that re-read the chain without EVM_RPC_URL of their own: a local anvil) and the first
-- block to scan for its vault's events.
alter table bank.deployments add column activated_by uuid;
alter table bank.deployments add column rpc_url text;
alter table bank.deployments add column from_block bigint not null default 0;
alter table bank.deployments add constraint deployments_rpc_url check (rpc_url is null or rpc_url ~ '^https?://[^\s]+$');
alter table bank.deployments add constraint deployments_from_block check (from_block >= 0);
comment on column bank.deployments.activated_by is 'The admin whose live session activated it; null: the owner (a migration, `npm start`''s local chain).';

drop function if exists bank.activate_deployment(bigint, text, text);

-- A payment tried again keeps the transactions it was sent in before (retry_withdrawal,
-- retry_tournament_payment): a failure is the bank's claim, and an earlier transaction may still
-- mine. Its receipt confirms the payment (advance_* accept any of them), and the bank checks them
-- on chain before it sends a new one, so a failure written while the first mines never pays twice.
alter table bank.withdraw_intents add column prior_tx_hashes text[] not null default '{}';
alter table bank.tournament_payments add column prior_tx_hashes text[] not null default '{}';
