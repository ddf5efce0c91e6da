-- Betting (issue 19; one boundary since issue 32): the betting role's login (poker_betting) reads its
-- markets, pools and bets through the read views (db/functions/betting/30_read_views.sql) and writes
-- only through the betting functions; the cage's login executes the player's steps of a bet (a stake,
-- an unbet, a claim: each one transaction across the two schemas) and reads the same views. Nobody
-- reads a base table; no process mends a hop between the two (there is none).
revoke all on schema betting, betting_private from public;
revoke all on all tables in schema betting, betting_private from public;
revoke all on all functions in schema betting, betting_private from public;
alter default privileges in schema betting, betting_private revoke execute on functions from public;

-- no login reads the tables themselves (the views below are what they read)
revoke all on betting.markets, betting.bets, betting.payouts from poker_betting, poker_cage;
revoke all on cage.bet_stakes from poker_cage, poker_betting;
drop policy if exists markets_betting_read on betting.markets;
drop policy if exists bets_betting_read on betting.bets;
drop policy if exists payouts_betting_read on betting.payouts;
drop policy if exists bet_stakes_cage_read on cage.bet_stakes;

grant usage on schema betting to poker_betting, poker_cage, poker_worker;
grant select on betting.market_records, betting.runner_pools, betting.bet_records to poker_betting, poker_cage;
grant select on betting.stakes to poker_cage;
grant execute on function
  betting.sync_market(text),
  betting.record_bet(text),
  betting.remove_bet(uuid, text),
  betting.claim_quote(uuid, text)
  to poker_betting;

-- the cage's steps: a stake, an unbet (the same function as the betting service's), a claim, and
-- the market brought up to date before the player's market reads
grant execute on function
  cage.open_bet_stake(uuid, text, text, uuid, bigint),
  betting.remove_bet(uuid, text),
  cage.claim_bet_payout(uuid, text),
  betting.sync_market(text)
  to poker_cage;

-- the markets nobody touches, moved along by the worker's periodic sweep (tasks/betting_sweep_markets.ts)
revoke execute on function betting.sweep_markets(integer) from poker_betting;
grant execute on function betting.sweep_markets(integer) to poker_worker;
