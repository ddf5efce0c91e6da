-- The chain bank's tournament money (issue 20): an SnG table of the chain bank holds its entry
-- fees in the vault (each entry a confirmed `bank.deposit_intents` row, mode 'sng'); it pays them
-- back on chain as a refund (a registrant leaving while the tournament registers) or as the places'
-- payouts (the game's payout rows, cage.payout_intents, computed by cage.settle_tournament). Each
-- such payment is one row here, moved only by the bank functions its login (poker_bank) may execute
-- (db/functions/bank/40_tournaments.sql); the chain's receipt (its vault event) confirms it.
create table bank.tournament_payments (
  -- 'payout:{tableId}:{position}' (the game's payout row's ref) or 'tournament-refund:{entry key}'
  payment_key text primary key,
  kind text not null,
  deployment_id bigint not null references bank.deployments (id) on delete restrict,
  table_id text not null references game.tables (table_id) on delete restrict,
  position integer,
  user_id uuid not null,
  player_id bigint not null,
  -- the entry's deposit: its wallet is the destination
  entry_key text not null references bank.deposit_intents (idempotency_key) on delete restrict,
  amount bigint not null,
  destination text not null,
  status text not null default 'pending',
  tx_hash text,
  block_number bigint,
  error text,
  submitted_at timestamptz,
  confirmed_at timestamptz,
  failed_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint tournament_payments_kind check (kind in ('payout', 'refund')),
  constraint tournament_payments_position check ((kind = 'payout') = (position is not null) and (position is null or position between 1 and 10)),
  constraint tournament_payments_amount check (amount > 0 and amount <= 9223372036854),
  constraint tournament_payments_destination check (destination ~ '^0x[0-9a-fA-F]{40}$'),
  constraint tournament_payments_status check (status in ('pending', 'submitted', 'confirmed', 'failed')),
  constraint tournament_payments_tx check (tx_hash is null or tx_hash ~ '^0x[0-9a-f]{64}$'),
  constraint tournament_payments_confirmed check ((status = 'confirmed') = (confirmed_at is not null)
                                                  and (status <> 'confirmed' or (tx_hash is not null and block_number is not null)))
);
comment on table bank.tournament_payments is 'Chain-bank tournament payouts and refunds, paid from the table''s vault balance. Written by bank.open_tournament_payout / refund_tournament_entry / advance_tournament_payment / retry_tournament_payment.';
create unique index tournament_payments_one_payout on bank.tournament_payments (table_id, position) where kind = 'payout';
create unique index tournament_payments_one_refund on bank.tournament_payments (entry_key) where kind = 'refund';
create index tournament_payments_open on bank.tournament_payments (updated_at) where status <> 'confirmed';
alter table bank.tournament_payments enable row level security;
