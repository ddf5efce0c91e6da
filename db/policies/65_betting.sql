-- Betting (issue 19): the betting role's login (poker_betting) reads its own schema and writes it only
-- through the betting functions; the cage executes its legs of a bet; the worker reconciles stakes
-- whose notify outcome is unknown and unbets whose credit never came. Nobody else sees a row.
revoke all on schema betting, betting_private from public;
revoke all on all tables in schema betting, betting_private from public;
revoke all on all functions in schema betting, betting_private from public;
alter default privileges in schema betting, betting_private revoke execute on functions from public;

grant usage on schema betting to poker_betting;
grant select on betting.markets, betting.bets, betting.payouts to poker_betting;
grant execute on function
  betting.sync_market(text),
  betting.sweep_markets(integer),
  betting.record_bet(text),
  betting.remove_bet(uuid, text),
  betting.claim_quote(uuid, text)
  to poker_betting;

drop policy if exists markets_betting_read on betting.markets;
create policy markets_betting_read on betting.markets for select to poker_betting using (true);
drop policy if exists bets_betting_read on betting.bets;
create policy bets_betting_read on betting.bets for select to poker_betting using (true);
drop policy if exists payouts_betting_read on betting.payouts;
create policy payouts_betting_read on betting.payouts for select to poker_betting using (true);

-- the cage's legs: a stake, its resolution, an unbet's credit, a claim; it reads its own stakes
grant select on cage.bet_stakes to poker_cage;
drop policy if exists bet_stakes_cage_read on cage.bet_stakes;
create policy bet_stakes_cage_read on cage.bet_stakes for select to poker_cage using (true);
grant execute on function
  cage.open_bet_stake(uuid, text, text, uuid, bigint),
  cage.resolve_bet_stake(text, text),
  cage.credit_unbet(text),
  cage.claim_bet_payout(uuid, text)
  to poker_cage;

-- the worker's stake reconciler (tasks/betting_reconcile_stakes.ts)
grant execute on function
  cage.pending_bet_stakes(integer, integer),
  cage.uncredited_unbets(integer, integer),
  cage.resolve_bet_stake(text, text),
  cage.credit_unbet(text)
  to poker_worker;
