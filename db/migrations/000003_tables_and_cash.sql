-- Tables, seats and the cash money loop (issue 4).
--
-- The game schema holds what the game role owns: table records, the seats (table-player records),
-- each seat's position chain, and the credits it accepted from the cage. The cage schema gains the
-- bank's intents (deposits and withdrawals, journal-native) and custody entries. Writes go through
-- the functions in db/functions/game and db/functions/cage only.

create schema game;
create schema game_private;

create table game.tables (
  table_id text primary key,
  game_type text not null,
  settings jsonb not null,
  -- which economy the table plays in; its escrow is the cage account (table_escrow, table_id, money_kind)
  money_kind cage.money_kind not null default 'play',
  status text not null default 'active',
  mode text not null default 'cash',
  kind text not null default 'open',
  tournament_state text,
  current_level integer,
  level_started_at timestamptz,
  -- set by the dealer while a hand is being played; seat funding and stand-up wait for the boundary
  current_hand_id text,
  -- rake taken from pots and not yet moved from the escrow to the house (invariant 4)
  unreconciled_rake bigint not null default 0,
  created_by uuid,
  created_at timestamptz not null default now(),
  constraint tables_table_id_shape check (table_id ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$'),
  constraint tables_game_type check (game_type in ('poker', 'arena')),
  constraint tables_settings_object check (jsonb_typeof(settings) = 'object'),
  constraint tables_status check (status in ('active', 'pending', 'frozen')),
  constraint tables_mode check (mode in ('cash', 'sng')),
  constraint tables_kind check (kind in ('open', 'human_only', 'agent', 'copilot')),
  constraint tables_tournament_state check (
    tournament_state is null or tournament_state in ('registering', 'starting', 'playing', 'ended', 'settling', 'closed')),
  constraint tables_rake_nonnegative check (unreconciled_rake >= 0)
);
comment on table game.tables is
  'Table records (spec: Table records). Created by game.create_table (the bank''s POST /api/tables); read by the game role.';

-- One row per sitting: a player seated at a table from buy-in to settlement. The row id is the
-- position; its chain (game.position_links) runs from the buy-in through every stack change.
create table game.table_players (
  id bigint generated always as identity primary key,
  table_id text not null references game.tables (table_id) on delete restrict,
  user_id uuid not null,
  seat_index integer not null,
  chip_balance bigint not null default 0,
  -- seated -> leaving (stood up, stack frozen, settlement pending) -> closed (settled, zeroed)
  status text not null default 'seated',
  history_hash text not null,
  chain_length integer not null default 0,
  elimination_order integer,
  copilot_advisor_agent_id text,
  seated_at timestamptz not null default now(),
  closed_at timestamptz,
  closing_ref_id text,
  constraint table_players_seat_index check (seat_index between 0 and 9),
  constraint table_players_chips_nonnegative check (chip_balance >= 0),
  constraint table_players_status check (status in ('seated', 'leaving', 'closed')),
  constraint table_players_closed_zero check (status <> 'closed' or chip_balance = 0)
);
comment on table game.table_players is 'Table-player records: one per sitting. Written by the game functions only.';
create unique index table_players_one_per_seat on game.table_players (table_id, seat_index) where status <> 'closed';
create unique index table_players_one_seat_per_user on game.table_players (table_id, user_id) where status <> 'closed';
create index table_players_user_idx on game.table_players (user_id) where status <> 'closed';

-- The position chain of a sitting: link n hashes link n-1 with what changed.
create table game.position_links (
  player_id bigint not null references game.table_players (id) on delete restrict,
  seq integer not null,
  event text not null,
  delta bigint not null,
  stack bigint not null,
  ref_id text,
  prev_hash text not null,
  hash text not null,
  created_at timestamptz not null default now(),
  primary key (player_id, seq),
  constraint position_links_event check (event in ('buy_in', 'top_up', 'reverted', 'hand', 'cash_out', 'custody', 'bust'))
);
comment on table game.position_links is 'Per-position hash chains; the head is the historyHash a settlement receipt binds. Append-only.';

-- Seat credits the game accepted from the cage, by the cage's key (the deposit's ledger ref id).
-- A cancelled key is a tombstone: a credit that arrives after its cancellation is refused.
create table game.seat_credits (
  credit_key text primary key,
  table_id text not null,
  user_id uuid not null,
  player_id bigint references game.table_players (id) on delete restrict,
  amount bigint not null,
  status text not null,
  -- set when the cage relies on the credit: cage.confirm_deposit confirmed its deposit, or
  -- game.cancel_credit answered 'credited' (the cage confirms on that answer). A kept credit is
  -- never reverted afterwards.
  kept_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint seat_credits_status check (status in ('credited', 'reverted', 'cancelled')),
  constraint seat_credits_amount check (amount > 0),
  constraint seat_credits_kept_credited check (kept_at is null or status = 'credited')
);
comment on table game.seat_credits is 'Seat fundings pushed by the cage (idempotent per key), and cancelled keys.';

create trigger tg_position_links__append_only before update or delete on game.position_links
  for each row execute function cage_private.tg_refuse_change();
create trigger tg_position_links__no_truncate before truncate on game.position_links
  for each statement execute function cage_private.tg_refuse_change();

alter table game.tables enable row level security;
alter table game.table_players enable row level security;
alter table game.position_links enable row level security;
alter table game.seat_credits enable row level security;

-- A redemption: real chips leaving the cage for the outside world.
alter type cage.movement_kind add value if not exists 'redemption';

-- The bank's deposit intents, journal-native: the buy-in is posted when the intent is opened
-- (status pending), then the seat is funded over HTTP (confirmed, credited_at) or the buy-in is
-- reversed (failed, reversal_ref_id). ref_id is the ledger ref of the buy-in and the credit key.
create table cage.deposit_intents (
  ref_id text primary key,
  idempotency_key text not null,
  user_id uuid not null,
  table_id text not null,
  seat_index integer not null,
  amount bigint not null,
  money_kind cage.money_kind not null,
  status text not null default 'pending',
  error text,
  credited_at timestamptz,
  reversal_ref_id text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint deposit_intents_status check (status in ('pending', 'confirmed', 'failed')),
  constraint deposit_intents_amount check (amount > 0)
);
comment on table cage.deposit_intents is 'Deposits (sit and top-up) on the cage. Written by cage.open_deposit / confirm_deposit / fail_deposit.';
create index deposit_intents_pending_idx on cage.deposit_intents (table_id) where status = 'pending';
create index deposit_intents_user_idx on cage.deposit_intents (user_id, table_id, created_at desc);

-- The bank's withdrawal intents: one terminal settlement per sitting (position), keyed by
-- keccak256(userId:tableId:historyHash:chipAmount). settled_at is set when the game zeroed the seat.
create table cage.withdraw_intents (
  idempotency_key text primary key,
  ledger_ref_id text not null unique,
  user_id uuid not null,
  table_id text not null,
  player_id bigint not null unique,
  amount bigint not null,
  history_hash text not null,
  settlement text not null,
  forced boolean not null default false,
  custody_entry_id bigint,
  settled_at timestamptz,
  created_at timestamptz not null default now(),
  constraint withdraw_intents_settlement check (settlement in ('cash_out', 'custody', 'bust')),
  constraint withdraw_intents_amount check (amount >= 0 and (settlement <> 'bust' or amount = 0))
);
comment on table cage.withdraw_intents is 'Stand-ups, forced withdrawals and busts on the cage. Written by cage.settle_position / mark_withdrawal_settled.';
create index withdraw_intents_unsettled_idx on cage.withdraw_intents (created_at) where settled_at is null;

-- Custody entries written by the cage: chain 'cage', amounts in token base units (chips x 10^6).
create table cage.custody_entries (
  id bigint generated always as identity primary key,
  ref_id text not null unique,
  user_id uuid not null,
  table_id text,
  money_kind cage.money_kind not null,
  chain text not null default 'cage',
  amount bigint not null,
  status text not null default 'free',
  source_ref_id text not null,
  claim_ref_id text,
  created_at timestamptz not null default now(),
  claimed_at timestamptz,
  constraint custody_entries_chain check (chain = 'cage'),
  constraint custody_entries_amount check (amount >= 0 and amount % 1000000 = 0),
  constraint custody_entries_status check (status in ('free', 'claimed', 'disputed', 'needs_reconciliation'))
);
comment on table cage.custody_entries is 'Custody held by the cage for a user (forced idle-kick withdrawals); a FREE entry is claimable by its owner.';
create index custody_entries_user_idx on cage.custody_entries (user_id, id);

alter table cage.deposit_intents enable row level security;
alter table cage.withdraw_intents enable row level security;
alter table cage.custody_entries enable row level security;

-- Table books were reported numbers; the escrow invariant now reads the seats, the in-flight
-- deposits and the unreconciled rake themselves (cage.audit), so there is nothing to report.
drop function if exists cage.record_table_books(text, text, bigint, bigint, text);
drop table cage.table_books;
