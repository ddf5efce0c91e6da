// Job `chain_bank_reconcile` (periodic: server/intents/periodic.ts, every CHAIN_RECONCILE_INTERVAL_SECONDS):
// the chain bank's reconciler (server/bank/reconcile.ts) runs inside the chain-bank role, which holds
// the chain client and the operator key; this job only asks it, over its service route POST
// /internal/reconcile, as the cash reconciler asks the cage to settle lost stand-ups. With no active
// chain deployment there is no chain intent to reconcile, and nothing is asked. Without SERVICE_KEY no
// role may ask another (every service route answers 503): the job says so once and asks nothing (the
// chain bank still reconciles once at its start).
import type { Task } from 'graphile-worker';
import type pg from 'pg';
import type { Logger } from 'pino';
import type { ServiceClient } from '../server/http/service-client.ts';

export function createChainBankReconcileTask(deps: { pool: pg.Pool; chainBank: ServiceClient; log: Logger; serviceKeySet: boolean }): Task {
  let said = false;
  return async () => {
    if (!deps.serviceKeySet) {
      if (!said) deps.log.info('SERVICE_KEY unset: the chain bank\'s periodic reconcile is not asked (it reconciles at its start only)');
      said = true;
      return;
    }
    const { rows } = await deps.pool.query('select 1 from bank.deployment_records where active limit 1');
    if (rows.length === 0) return;
    const answer = await deps.chainBank.post('/internal/reconcile', {});
    if (!answer.ok) deps.log.warn({ status: answer.status, error: answer.body.error }, 'the chain bank did not reconcile; the next run asks again');
  };
}
