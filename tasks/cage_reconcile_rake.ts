// Job `cage_reconcile_rake`: on CAGE_RAKE_RECONCILE_CRON (hourly by default), every table's rake
// taken since the last run is reconciled: its house rows claimed and its rake chain extended, no
// chip moved (db/functions/cage/80_rake.sql). A table whose books diverge is left as it is and
// logged at error (the audit reports it too); the others go on. Running it twice changes nothing
// more: a second run finds no unclaimed row.
import type { Task } from 'graphile-worker';
import type pg from 'pg';
import type { Logger } from 'pino';
import { reconcileRake } from '../server/cage/rake.ts';

export function createCageReconcileRakeTask(deps: { pool: pg.Pool; log: Logger }): Task {
  return async () => {
    const run = await reconcileRake(deps.pool);
    if (run.reconciled.length) {
      deps.log.info({ tables: run.reconciled.length, amount: run.reconciled.reduce((t, r) => t + r.amount, 0) }, 'rake reconciled');
    }
    for (const r of run.refused) deps.log.error({ tableId: r.tableId, error: r.error }, 'rake not reconciled: the table\'s rake books diverge');
  };
}
