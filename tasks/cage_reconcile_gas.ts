// Job `cage_reconcile_gas`: every minute, gas withdrawals reserved longer than the grace (a cage
// that stopped between the reservation and the delivery) are refunded to the tanks they came from
// (db/functions/cage/87_gas_and_gate.sql). Only the withdrawal's ref is passed: the refund derives
// the user, the kind and the chips from the reservation's row, and a delivered one stays delivered.
import type { Task } from 'graphile-worker';
import type pg from 'pg';
import type { Logger } from 'pino';

export const GAS_RESERVATION_GRACE_SECONDS = 60;

export async function refundStaleGasWithdrawals(pool: pg.Pool, graceSeconds = GAS_RESERVATION_GRACE_SECONDS): Promise<string[]> {
  const { rows } = await pool.query<{ ref_id: string }>('select ref_id from cage.stale_gas_withdrawals($1, 100) as ref_id', [graceSeconds]);
  const refunded: string[] = [];
  for (const { ref_id } of rows) {
    const r = await pool.query<{ status: string; replayed: boolean }>('select status, replayed from cage.refund_gas_withdrawal($1, $2)', [ref_id, 'not_delivered']);
    if (r.rows[0]?.status === 'refunded' && !r.rows[0].replayed) refunded.push(ref_id);
  }
  return refunded;
}

export function createCageReconcileGasTask(deps: { pool: pg.Pool; log: Logger; graceSeconds?: number }): Task {
  return async () => {
    const refunded = await refundStaleGasWithdrawals(deps.pool, deps.graceSeconds);
    if (refunded.length) deps.log.warn({ refunded }, 'gas withdrawals left reserved were refunded');
  };
}
