-- Sit-and-Go tournaments (issue 13): the lifecycle's clocks on the table record, a registration's
-- state and tournament stack on the table-player record, and the payout intents of the cage.
--
-- A registrant is a table-player row from the reserve on: `entry_state` reserved (a seat held, no
-- money: it self-releases at `reserved_until`) then paid (`chip_balance` = the entry fee: the entry
-- claim, backed by the table's tournament pool in the cage). Tournament chips live in
-- `tournament_stack` (set when play starts), never in `chip_balance`; `elimination_order` is the
-- finishing place (1 = the winner) and `tie_place` the best place of a tie group (players busted
-- in the same hand with equal stacks at its start share the prizes of the places they occupy).

alter type cage.movement_kind add value if not exists 'tournament_refund';

alter table game.tables
  add column starts_at timestamptz,
  add column play_started_at timestamptz,
  add column ended_at timestamptz,
  add column closed_at timestamptz,
  add column auto_fold_count integer not null default 0,
  add constraint tables_sng_state check ((mode = 'sng') = (tournament_state is not null));
comment on column game.tables.level_started_at is
  'When the current blind level began: the play start plus the durations of the levels before it (one absolute deadline per level).';

alter table game.table_players
  add column tournament_stack bigint,
  add column entry_state text,
  add column reserved_until timestamptz,
  add column entry_ref_id text,
  add column tie_place integer,
  add constraint table_players_entry_state check (entry_state is null or entry_state in ('reserved', 'paid')),
  add constraint table_players_tournament_stack check (tournament_stack is null or tournament_stack >= 0),
  add constraint table_players_reserve_unpaid check (entry_state is distinct from 'reserved' or chip_balance = 0);
create unique index table_players_entry_ref on game.table_players (entry_ref_id) where entry_ref_id is not null;

-- One seat per player is still the rule, but the seat shuffle at the starting move permutes the
-- seats of a table in one statement: the rule becomes a deferrable exclusion (same meaning as the
-- unique index it replaces), deferred only inside that statement's transaction.
drop index game.table_players_one_per_seat;
alter table game.table_players add constraint table_players_one_per_seat
  exclude using btree (table_id with =, seat_index with =) where (status <> 'closed') deferrable initially immediate;

alter table game.position_links drop constraint position_links_event;
alter table game.position_links add constraint position_links_event
  check (event in ('buy_in', 'top_up', 'reverted', 'hand', 'cash_out', 'custody', 'bust', 'tournament_result'));

-- One per paid place of a tournament: written when settlement begins, paid by the payoutIntent
-- branch of the cage's withdraw (a tournament_payout credit, ref `payout:{tableId}:{position}`).
create table cage.payout_intents (
  table_id text not null references game.tables (table_id) on delete restrict,
  position integer not null,
  user_id uuid not null,
  amount bigint not null,
  money_kind cage.money_kind not null,
  ref_id text not null,
  created_at timestamptz not null default now(),
  submitted_at timestamptz,
  confirmed_at timestamptz,
  failed_at timestamptz,
  error text,
  tx_hash text,
  primary key (table_id, position),
  constraint payout_intents_position check (position between 1 and 10),
  constraint payout_intents_amount check (amount >= 0),
  constraint payout_intents_ref unique (ref_id),
  constraint payout_intents_confirmed check (confirmed_at is null or tx_hash is not null)
);
comment on table cage.payout_intents is 'Tournament payout intents, unique on (table_id, position). Written and paid by the cage''s tournament functions only.';
create index payout_intents_unconfirmed on cage.payout_intents (created_at) where confirmed_at is null;
alter table cage.payout_intents enable row level security;

-- table creation takes the mode and the kind (a new signature: the old one goes here, db/README)
drop function if exists game.create_table(text, text, jsonb, text, uuid, integer, integer);

-- The tournament.lifecycle span of the tournament (trace and span ids), so that a game process
-- taking the table over after a restart opens a continuation span linked to it.
alter table game.tables add column lifecycle_trace jsonb;
