-- The read views of betting (issue 32): what the cage's player routes and the betting service read of
-- markets, pools, bets and stakes, instead of reading betting.markets, betting.bets and
-- cage.bet_stakes. They run with their owner's rights (not security_invoker), like game's read views
-- (db/functions/game/60_read_views.sql): a login granted a view reads it and nothing else of the
-- tables (db/policies/65_betting.sql). A column may be added at the end; one renamed, retyped or
-- removed needs a drop in a migration first.

-- Every market, its money kind and runners as text.
create or replace view betting.market_records as
select m.market_id, m.table_id, m.money_kind::text as money_kind, m.runners::text[] as runners, m.status,
       m.winner_user_id, m.void_reason, m.opened_at, m.closed_at, m.settled_at
  from betting.markets m;

-- Each runner's pool in each market: the bets still in it (taken-back ones left out).
create or replace view betting.runner_pools as
select b.market_id, b.runner_user_id, sum(b.amount)::bigint as staked, count(*)::integer as bets
  from betting.bets b
 where b.status = 'active'
 group by b.market_id, b.runner_user_id;

-- Every bet as the betting service recorded it.
create or replace view betting.bet_records as
select b.stake_ref, b.market_id, b.user_id, b.runner_user_id, b.amount, b.status, b.created_at, b.unbet_at
  from betting.bets b;

-- Every stake as the cage took it (the player's bets list; filtered by the caller's user id).
create or replace view betting.stakes as
select s.ref_id, s.idempotency_key, s.user_id, s.market_id, s.runner_user_id, s.amount, s.money_kind::text as money_kind,
       s.status, s.error, s.refund_ref_id, s.created_at, s.updated_at
  from cage.bet_stakes s;
