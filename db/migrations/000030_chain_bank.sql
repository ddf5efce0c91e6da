-- The chain bank (issue 20): the bank interface on an EVM chain. Its intents are rows of its own
-- schema, moved only by the SQL functions its login (poker_bank) may execute
-- (db/functions/bank/); the chain's receipts and events are the authority for a confirmation, and
-- the bank's reconciler reads each one back from the chain before it credits or settles a seat.
create schema bank;
create schema bank_private;
revoke all on schema bank, bank_private from public;

-- Which bank holds a table's money: the cage (journal) or the chain bank (the vault contract). A
-- table is funded and settled only by its own bank.
alter table game.tables add column bank text not null default 'cage';
alter table game.tables add constraint tables_bank check (bank in ('cage', 'chain'));

-- The contracts the bank talks to: one active deployment (a local anvil gets a fresh one per start).
create table bank.deployments (
  id bigint generated always as identity primary key,
  chain_id bigint not null,
  token text not null,
  vault text not null,
  active boolean not null default true,
  created_at timestamptz not null default now(),
  constraint deployments_addresses check (token ~ '^0x[0-9a-fA-F]{40}$' and vault ~ '^0x[0-9a-fA-F]{40}$')
);
create unique index deployments_one_active on bank.deployments (active) where active;
comment on table bank.deployments is 'The chain bank''s contract deployments; one active. Written by bank.activate_deployment.';

-- Deposits: keyed by the hash of { wallet, amount, deadline, v, r, s } (spec: Deposit (bank)).
create table bank.deposit_intents (
  idempotency_key text primary key,
  deployment_id bigint not null references bank.deployments (id) on delete restrict,
  user_id uuid not null,
  table_id text not null references game.tables (table_id) on delete restrict,
  seat_index integer,
  wallet text not null,
  amount bigint not null,
  deadline bigint not null,
  nonce numeric,
  mode text not null default 'cash',
  status text not null default 'pending',
  tx_hash text,
  block_number bigint,
  error text,
  credited_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint deposit_intents_key check (idempotency_key ~ '^0x[0-9a-f]{64}$'),
  constraint deposit_intents_wallet check (wallet ~ '^0x[0-9a-fA-F]{40}$'),
  constraint deposit_intents_amount check (amount > 0 and amount <= 9223372036854),
  constraint deposit_intents_status check (status in ('pending', 'submitted', 'confirmed', 'failed')),
  constraint deposit_intents_mode check (mode in ('cash', 'sng')),
  constraint deposit_intents_tx check (tx_hash is null or tx_hash ~ '^0x[0-9a-f]{64}$'),
  constraint deposit_intents_confirmed check (status <> 'confirmed' or (tx_hash is not null and block_number is not null))
);
comment on table bank.deposit_intents is 'Chain-bank deposits (permit funded). Written by bank.open_deposit / submit / confirm / fail / mark_credited.';
create index bank_deposit_intents_uncredited on bank.deposit_intents (updated_at) where status = 'confirmed' and credited_at is null;
create index bank_deposit_intents_open on bank.deposit_intents (updated_at) where status in ('pending', 'submitted');
create index bank_deposit_intents_user on bank.deposit_intents (user_id, table_id, created_at desc);

-- Withdrawals: one terminal settlement per position, keyed by keccak256(userId:tableId:historyHash:chipAmount).
create table bank.withdraw_intents (
  idempotency_key text primary key,
  deployment_id bigint not null references bank.deployments (id) on delete restrict,
  user_id uuid not null,
  table_id text not null references game.tables (table_id) on delete restrict,
  player_id bigint not null unique,
  amount bigint not null,
  history_hash text not null,
  destination text,
  forced boolean not null default false,
  settlement text not null,
  status text not null default 'pending',
  tx_hash text,
  block_number bigint,
  error text,
  settled_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint withdraw_intents_key check (idempotency_key ~ '^0x[0-9a-f]{64}$'),
  constraint withdraw_intents_settlement check (settlement in ('cash_out', 'bust')),
  constraint withdraw_intents_amount check (amount >= 0 and (settlement <> 'bust' or amount = 0) and (settlement <> 'cash_out' or amount > 0)),
  constraint withdraw_intents_destination check (destination is null or destination ~ '^0x[0-9a-fA-F]{40}$'),
  constraint withdraw_intents_status check (status in ('pending', 'submitted', 'confirmed', 'failed')),
  constraint withdraw_intents_confirmed check (status <> 'confirmed' or settlement = 'bust' or (tx_hash is not null and block_number is not null))
);
comment on table bank.withdraw_intents is 'Chain-bank stand-ups, forced withdrawals and busts. Written by bank.open_withdrawal / submit / confirm / fail / mark_settled.';
create index bank_withdraw_intents_unsettled on bank.withdraw_intents (updated_at) where status = 'confirmed' and settled_at is null;

alter table bank.deployments enable row level security;
alter table bank.deposit_intents enable row level security;
alter table bank.withdraw_intents enable row level security;

-- the registry knows the bank's refusals (class BK)
alter table poker_refusals.codes drop constraint codes_domain;
alter table poker_refusals.codes add constraint codes_domain check (domain in ('auth', 'cage', 'claims', 'game', 'betting', 'bank'));
