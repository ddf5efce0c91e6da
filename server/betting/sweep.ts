// How the betting service learns of tournament state changes: a sweep on a timer inside the betting
// role (every BETTING_SWEEP_MS) moves every live market along (betting.sweep_markets: opened once its
// tournament plays, closed at the first elimination, settled or voided once the standings are
// final), and every request touching a market brings that market up to date first (on-demand
// reconciliation, betting.sync_market). The sweep has its own error boundary: a failed run (the
// database away) is logged and the next one runs on time; runs never overlap.
import type pg from 'pg';
import type { Logger } from 'pino';

export function startSweep(pool: pg.Pool, log: Logger, everyMs: number): { stop(): Promise<void> } {
  let running: Promise<void> | undefined;
  let stopped = false;
  const run = async () => {
    try {
      const { rows } = await pool.query<{ n: number }>('select betting.sweep_markets(200) as n');
      if ((rows[0]?.n ?? 0) > 0) log.debug({ markets: rows[0]!.n }, 'betting sweep');
    } catch (err) {
      if (!stopped) log.warn({ err: (err as Error).message }, 'betting sweep failed; the next run will retry');
    }
  };
  const tick = () => {
    if (running || stopped) return;
    running = run().finally(() => {
      running = undefined;
    });
  };
  const timer = setInterval(tick, everyMs);
  timer.unref();
  tick();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
