-- Betting (issue 19): parimutuel markets on who wins a Sit-and-Go, served by the betting role
-- (its own login, poker_betting, and its own schema: `betting` holds the tables and the API
-- functions, `betting_private` the helpers), and the cage's legs of a bet (spec: "Cage -> Betting"):
--   a stake    a `bet_stake` debit (user -> the cage's betting account), recorded in cage.bet_stakes,
--              then the betting service is notified; its bet row is bound to the stake row;
--   a refund   `bet_refund` (betting account -> user): a stake compensated (its notify failed) or
--              taken back while its market is open (an unbet), backed by the row it reverses;
--   a claim    `bet_payout` (betting account -> user), ref `bet-claim:{marketId}:{userId}`, of the
--              amount the betting service computed and recorded in betting.payouts.

create schema betting;
create schema betting_private;
revoke all on schema betting, betting_private from public;

alter type cage.movement_kind add value if not exists 'bet_refund';

-- the refusal registry takes the betting domain (class BT)
alter table poker_refusals.codes drop constraint codes_domain;
alter table poker_refusals.codes add constraint codes_domain check (domain in ('auth', 'cage', 'claims', 'game', 'betting'));

-- A stake on the cage: one per (user, idempotency key). pending until the betting service's bet
-- row is known to exist (confirmed) or known not to (compensated: the debit reversed); unbet once
-- its bet was taken back and the stake credited back.
create table cage.bet_stakes (
  ref_id text primary key,
  idempotency_key text not null,
  user_id uuid not null,
  market_id text not null,
  runner_user_id uuid not null,
  amount bigint not null,
  money_kind cage.money_kind not null,
  status text not null default 'pending',
  error text,
  refund_ref_id text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint bet_stakes_status check (status in ('pending', 'confirmed', 'compensated', 'unbet')),
  constraint bet_stakes_amount check (amount > 0),
  constraint bet_stakes_refund check ((status in ('compensated', 'unbet')) = (refund_ref_id is not null))
);
comment on table cage.bet_stakes is 'Bet stakes on the cage (bet_stake debits). Written by cage.open_bet_stake, cage.resolve_bet_stake and cage.credit_unbet only.';
create index bet_stakes_pending on cage.bet_stakes (created_at) where status = 'pending';
create index bet_stakes_user on cage.bet_stakes (user_id, created_at);
create index bet_stakes_market on cage.bet_stakes (market_id);
alter table cage.bet_stakes enable row level security;

-- One market per Sit-and-Go: who finishes first. Opened when the tournament starts playing, closed at
-- its first elimination, then settled from the final standings or voided.
create table betting.markets (
  market_id text primary key,
  table_id text not null references game.tables (table_id) on delete restrict,
  money_kind cage.money_kind not null,
  runners uuid[] not null,
  status text not null default 'open',
  winner_user_id uuid,
  void_reason text,
  opened_at timestamptz not null default now(),
  closed_at timestamptz,
  settled_at timestamptz,
  constraint markets_one_per_table unique (table_id),
  constraint markets_status check (status in ('open', 'closed', 'settled', 'void')),
  constraint markets_outcome check ((status = 'settled') = (winner_user_id is not null) and (status = 'void') = (void_reason is not null))
);
comment on table betting.markets is 'Parimutuel winner markets of Sit-and-Go tournaments. Written by betting.sync_market only.';
alter table betting.markets enable row level security;

-- A bet: the betting service's record of one cage stake (same ref, user, market, runner and amount,
-- all read from the stake row: a bet without its bet_stake movement cannot be written).
create table betting.bets (
  stake_ref text primary key references cage.bet_stakes (ref_id) on delete restrict,
  market_id text not null references betting.markets (market_id) on delete restrict,
  user_id uuid not null,
  runner_user_id uuid not null,
  amount bigint not null,
  status text not null default 'active',
  created_at timestamptz not null default now(),
  unbet_at timestamptz,
  constraint bets_amount check (amount > 0),
  constraint bets_status check (status in ('active', 'unbet')),
  constraint bets_unbet_at check ((status = 'unbet') = (unbet_at is not null))
);
comment on table betting.bets is 'Bets, one per cage stake. Written by betting.record_bet and betting.remove_bet only.';
create index bets_market on betting.bets (market_id);
create index bets_user on betting.bets (user_id);
alter table betting.bets enable row level security;

-- What each bettor is owed by a settled (winnings) or void (stakes back) market: the service's own
-- computation, written once when the market settles. The cage credits exactly this.
create table betting.payouts (
  market_id text not null references betting.markets (market_id) on delete restrict,
  user_id uuid not null,
  amount bigint not null,
  created_at timestamptz not null default now(),
  primary key (market_id, user_id),
  constraint payouts_amount check (amount > 0)
);
comment on table betting.payouts is 'Amounts owed per bettor of a settled or void market. Written by betting.sync_market only.';
alter table betting.payouts enable row level security;
