// The betting reads: a tournament's market with its pools and odds (parimutuel: what one chip on a
// runner would return if it won, before anything else is staked), as JSON, for the betting service
// and the cage's player routes alike (the SQL in ./sql.ts, through the read views).
import type pg from 'pg';
import { runnerPools, type MarketRow } from './sql.ts';

/** The decimal odds of a runner (pool / runner pool) with two decimals, or null while nobody backs it. */
export function decimalOdds(pool: bigint, runnerPool: bigint): string | null {
  if (runnerPool === 0n) return null;
  const hundredths = (pool * 100n) / runnerPool;
  return `${hundredths / 100n}.${(hundredths % 100n).toString().padStart(2, '0')}`;
}

/** A market as the routes answer it: its runners with their pools and odds, and the whole pool. */
export async function marketJson(pool: pg.Pool | pg.PoolClient, m: MarketRow) {
  const rows = await runnerPools(pool, m.market_id);
  const by = new Map(rows.map((r) => [r.runner_user_id, r]));
  const total = rows.reduce((s, r) => s + r.staked, 0n);
  return {
    marketId: m.market_id, tableId: m.table_id, kind: 'winner', moneyKind: m.money_kind, status: m.status,
    pool: total.toString(),
    runners: m.runners.map((userId) => {
      const staked = by.get(userId)?.staked ?? 0n;
      return { userId, pool: staked.toString(), bets: by.get(userId)?.bets ?? 0, odds: decimalOdds(total, staked) };
    }),
    winnerUserId: m.winner_user_id, voidReason: m.void_reason,
    openedAt: m.opened_at, closedAt: m.closed_at, settledAt: m.settled_at,
  };
}
