// Job `cage_sign_bust_receipts` (issue 32): a hand's end closes each busted cage position in its own
// transaction (game.end_hand: the bust intent, its explicit-zero bust_close row, the closed seat),
// where no key may be; the receipt is the cage's to sign, with the key only the cage process holds
// (server/cage/receipts.ts loadReceiptSigner). The hand's end queues this job (job key
// cage_sign_bust_receipts) and the crontab runs it every minute besides: when a bust has no receipt
// yet it asks the cage (POST /settlement/sign-bust-receipts), which signs and stores them. The audit
// names a bust still unsigned past cage_private.bust_receipt_lag() (db/functions/cage/40_audit.sql).
import type { Task } from 'graphile-worker';
import type pg from 'pg';
import type { Logger } from 'pino';
import type { ServiceClient } from '../server/http/service-client.ts';

export interface SignBustReceiptsResult { signed: number; failed: number; unreachable?: true }

/** Asks the cage to sign the busts' receipts, when there is one to sign (the listing is a read the worker may make). */
export async function signBustReceipts(pool: pg.Pool, cage: ServiceClient, log?: Logger): Promise<SignBustReceiptsResult> {
  const { rows } = await pool.query('select 1 from cage.unsigned_bust_receipts(1)');
  if (rows.length === 0) return { signed: 0, failed: 0 };
  const answer = await cage.post('/settlement/sign-bust-receipts', {});
  const body = answer.body as { signed?: unknown; failed?: unknown; error?: unknown };
  if (!answer.ok || typeof body.signed !== 'number' || typeof body.failed !== 'number') {
    log?.warn({ status: answer.status, error: body.error }, 'bust receipts not signed: the cage did not answer');
    return { signed: 0, failed: 0, unreachable: true };
  }
  return { signed: body.signed, failed: body.failed };
}

export function createCageSignBustReceiptsTask(deps: { pool: pg.Pool; cage: ServiceClient; log: Logger }): Task {
  return async () => {
    const r = await signBustReceipts(deps.pool, deps.cage, deps.log);
    if (r.failed > 0 || r.unreachable) deps.log.warn({ ...r }, 'bust receipts');
    // a failure is thrown so graphile-worker retries it; the crontab tries again every minute as well
    if (r.unreachable) throw new Error('the cage did not sign the bust receipts');
  };
}
