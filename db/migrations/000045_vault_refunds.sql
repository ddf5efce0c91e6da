-- Issue 31, "Chain intents": a vault deposit no intent backs (made outside the bank, or confirmed
-- and funding nothing ten minutes on) is refunded by the chain bank's reconciler to the wallet the
-- tokens came from, once. A refund is keyed by the deposit's transaction and log index (one refund
-- per Deposited event, and one per deposit intent); SQL records that evidence and refuses a second
-- refund or a refund of a deposit that funded a seat; the reconciler pays only a refund whose
-- deposit it re-read on chain, and the chain audit names a refund whose deposit the chain does not
-- show (server/bank/chain-audit.ts). Written by bank.open_vault_refund and bank.advance_vault_refund
-- (db/functions/bank/50_vault_refunds.sql).
create table bank.vault_refunds (
  -- 'vault-refund:{deposit tx hash}:{log index}'
  refund_key text primary key,
  deployment_id bigint not null references bank.deployments (id) on delete restrict,
  deposit_tx_hash text not null,
  deposit_log_index integer not null,
  -- the deposit intent it refunds (a confirmed deposit that funded nothing); null: no intent at all
  deposit_key text references bank.deposit_intents (idempotency_key) on delete restrict,
  -- the Deposited event's table key (keccak256 of a table id: a deposit outside the bank may name no table)
  table_key text not null,
  -- the Deposited event's owner: the wallet the tokens came from
  destination text not null,
  -- the Deposited event's amount, in token base units (a deposit outside the bank is any amount)
  base_units numeric not null,
  status text not null default 'pending',
  tx_hash text,
  block_number bigint,
  error text,
  prior_tx_hashes text[] not null default '{}',
  submitted_at timestamptz,
  confirmed_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint vault_refunds_deposit_tx check (deposit_tx_hash ~ '^0x[0-9a-f]{64}$'),
  constraint vault_refunds_log_index check (deposit_log_index >= 0),
  constraint vault_refunds_table_key check (table_key ~ '^0x[0-9a-f]{64}$'),
  constraint vault_refunds_destination check (destination ~ '^0x[0-9a-f]{40}$'),
  constraint vault_refunds_amount check (base_units > 0 and base_units = trunc(base_units) and base_units < 1e30),
  constraint vault_refunds_status check (status in ('pending', 'submitted', 'confirmed')),
  constraint vault_refunds_tx check (tx_hash is null or tx_hash ~ '^0x[0-9a-f]{64}$'),
  constraint vault_refunds_confirmed check ((status = 'confirmed') = (confirmed_at is not null)
                                            and (status = 'pending' or tx_hash is not null)
                                            and (status <> 'confirmed' or block_number is not null))
);
comment on table bank.vault_refunds is 'Refunds of vault deposits no intent backs (no intent, or confirmed and funding nothing), one per Deposited event. Written by bank.open_vault_refund / advance_vault_refund.';
create unique index vault_refunds_one_per_event on bank.vault_refunds (deployment_id, deposit_tx_hash, deposit_log_index);
create unique index vault_refunds_one_per_intent on bank.vault_refunds (deposit_key) where deposit_key is not null;
create index vault_refunds_by_tx on bank.vault_refunds (deposit_tx_hash);
create index vault_refunds_payment_tx on bank.vault_refunds (tx_hash) where tx_hash is not null;
alter table bank.vault_refunds enable row level security;
