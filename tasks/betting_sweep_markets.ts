// Job `betting_sweep_markets` (periodic: server/intents/periodic.ts, every BETTING_SWEEP_MS): moves
// every live market along with its tournament (betting.sweep_markets: opened once its tournament
// plays, closed at the first elimination, settled or voided once the standings are final). Every
// request that touches a market also brings that market up to date first (betting.sync_market), so
// the sweep is what moves the markets nobody is looking at. A failed run is the job's (graphile-worker
// records it); the next period runs on time (the period wrapper queues it again whatever happened).
import type { Task } from 'graphile-worker';
import type pg from 'pg';
import type { Logger } from 'pino';

/** How many markets one run moves at most (the next run takes the rest). */
export const SWEEP_BATCH = 200;

export async function sweepMarkets(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query<{ n: number }>('select betting.sweep_markets($1) as n', [SWEEP_BATCH]);
  return rows[0]?.n ?? 0;
}

export function createBettingSweepMarketsTask(deps: { pool: pg.Pool; log: Logger }): Task {
  return async () => {
    const moved = await sweepMarkets(deps.pool);
    if (moved > 0) deps.log.debug({ markets: moved }, 'betting sweep');
  };
}
