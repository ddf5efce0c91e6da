// Job `cage_reconcile_gas` (periodic: server/intents/periodic.ts): gas withdrawals reserved longer than
// their grace (a cage that stopped between the reservation and the delivery) are refunded to the
// tanks they came from (db/functions/cage/87_gas_and_gate.sql), each one a `gas_withdrawal` intent
// of the reconciler framework (server/intents/framework.ts: due from cage.intents, its own error
// boundary, its outcome recorded). Only the withdrawal's ref is passed: the refund derives the user,
// the kind and the chips from the reservation's row, and a delivered one stays delivered.
import type { Task } from 'graphile-worker';
import type pg from 'pg';
import type { Logger } from 'pino';
import { runReconcilers, type Reconciler } from '../server/intents/framework.ts';

/** The gas reconciler: refunds each due reservation; `refunded` collects the refs it refunded. */
export function gasReconciler(pool: pg.Pool, refunded: string[], graceSeconds?: number): Reconciler {
  return {
    kind: 'gas_withdrawal',
    graceSeconds: graceSeconds ?? null,
    async step(intent) {
      const r = await pool.query<{ status: string; replayed: boolean }>('select status, replayed from cage.refund_gas_withdrawal($1, $2)', [intent.key, 'not_delivered']);
      if (r.rows[0]?.status === 'refunded' && !r.rows[0].replayed) refunded.push(intent.key);
    },
  };
}

export async function refundStaleGasWithdrawals(pool: pg.Pool, graceSeconds?: number, log?: Logger): Promise<string[]> {
  const refunded: string[] = [];
  await runReconcilers(pool, [gasReconciler(pool, refunded, graceSeconds)], log);
  return refunded;
}

export function createCageReconcileGasTask(deps: { pool: pg.Pool; log: Logger; graceSeconds?: number }): Task {
  return async () => {
    const refunded = await refundStaleGasWithdrawals(deps.pool, deps.graceSeconds, deps.log);
    if (refunded.length) deps.log.warn({ refunded }, 'gas withdrawals left reserved were refunded');
  };
}
