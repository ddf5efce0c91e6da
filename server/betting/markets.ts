// The betting reads: a tournament's market with its pools and odds (parimutuel: what one chip on a
// runner would return if it won, before anything else is staked), as JSON. Read through the views
// (betting.market_records, betting.runner_pools: db/functions/betting/30_read_views.sql) by the
// betting service and the cage's player routes alike.
import type pg from 'pg';

export interface MarketRow {
  market_id: string;
  table_id: string;
  money_kind: string;
  runners: string[];
  status: string;
  winner_user_id: string | null;
  void_reason: string | null;
  opened_at: Date;
  closed_at: Date | null;
  settled_at: Date | null;
}

const MARKET_COLUMNS = 'market_id, table_id, money_kind, runners, status, winner_user_id, void_reason, opened_at, closed_at, settled_at';

/** The decimal odds of a runner (pool / runner pool) with two decimals, or null while nobody backs it. */
export function decimalOdds(pool: bigint, runnerPool: bigint): string | null {
  if (runnerPool === 0n) return null;
  const hundredths = (pool * 100n) / runnerPool;
  return `${hundredths / 100n}.${(hundredths % 100n).toString().padStart(2, '0')}`;
}

/** A market as the routes answer it: its runners with their pools and odds, and the whole pool. */
export async function marketJson(pool: pg.Pool | pg.PoolClient, m: MarketRow) {
  const { rows } = await pool.query<{ runner_user_id: string; staked: bigint; bets: number }>(
    'select runner_user_id, staked, bets from betting.runner_pools where market_id = $1',
    [m.market_id],
  );
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

/** The market of a tournament, brought up to date first (on-demand reconciliation); null when none. */
export async function syncedMarketOfTable(pool: pg.Pool, tableId: string): Promise<MarketRow | null> {
  const { rows } = await pool.query<{ market_id: string | null }>('select (betting.sync_market($1)).market_id', [tableId]);
  if (!rows[0]?.market_id) return null;
  return marketById(pool, rows[0].market_id);
}

export async function marketById(pool: pg.Pool, marketId: string): Promise<MarketRow | null> {
  const { rows } = await pool.query<MarketRow>(`select ${MARKET_COLUMNS} from betting.market_records where market_id = $1`, [marketId]);
  return rows[0] ?? null;
}
