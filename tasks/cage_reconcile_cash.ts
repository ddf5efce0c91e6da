// Job `cage_reconcile_cash`: the cash loop's reconciler, every CAGE_RECONCILE_INTERVAL_SECONDS
// (30 s by default) and once at startup (server/intents/periodic.ts). It settles what a request
// could not finish, the first two as intents of the reconciler framework (server/intents/framework.ts:
// due from cage.intents, each under its own error boundary, its outcome recorded for operators):
//   - deposits still pending after the grace period (the cage stopped mid-request, or the game
//     could not be reached to fund or cancel): the game is asked to cancel the credit, and the
//     deposit is confirmed (the seat holds the chips) or compensated (it does not);
//   - settled positions the game has not zeroed yet: the settlement is redelivered;
//   - positions the game stood up (leaving) that the cage never settled, because the stand-up's
//     answer was lost: the cage is asked to settle them as the withdraw route does (a cash-out to
//     the user's cage balance under the spec's key, its receipt, the zeroing), so a retry by the
//     player replays it.
// Every step is idempotent, so two runs (or a run racing a request) change nothing more.
import type { Task } from 'graphile-worker';
import type pg from 'pg';
import type { Logger } from 'pino';
import type { ServiceClient } from '../server/http/service-client.ts';
import { deliverSettlement, resolveUncertainDeposit } from '../server/cage/seams.ts';
import { runReconcilers, type Reconciler } from '../server/intents/framework.ts';

export { graceSeconds } from '../server/cage/seams.ts';

export interface ReconcileResult {
  deposits: { confirmed: number; failed: number; unresolved: number };
  settlements: { delivered: number; undelivered: number };
  standUps: { settled: number; failed: number; unreachable?: true };
}

export interface ReconcileOptions {
  graceSeconds: number;
  /** The cage role, which settles lost stand-ups. */
  cage: ServiceClient;
  log?: Logger;
}

/** `cage_deposit` intents: the game asked to cancel the credit; confirmed (the seat holds the chips) or compensated. */
function depositReconciler(pool: pg.Pool, game: ServiceClient, graceSeconds: number, result: ReconcileResult): Reconciler {
  return {
    kind: 'cage_deposit',
    graceSeconds,
    async step(intent) {
      const { rows: [d] } = await pool.query(
        "select ref_id, user_id, table_id, seat_index, amount from cage.deposit_records where ref_id = $1 and status = 'pending'", [intent.key],
      );
      if (!d) return { done: true };
      const outcome = await resolveUncertainDeposit(pool, game, { refId: d.ref_id, userId: d.user_id, tableId: d.table_id, seatIndex: d.seat_index, amount: d.amount });
      if (outcome.outcome === 'unresolved') {
        result.deposits.unresolved++;
        return { failed: 'the game did not answer the cancel of the credit' };
      }
      if (outcome.outcome === 'confirmed') result.deposits.confirmed++;
      else result.deposits.failed++;
      return { done: true };
    },
  };
}

/** `cage_withdrawal` intents: a settlement the game has not zeroed yet, redelivered. */
function settlementReconciler(pool: pg.Pool, game: ServiceClient, graceSeconds: number, result: ReconcileResult): Reconciler {
  return {
    kind: 'cage_withdrawal',
    graceSeconds,
    async step(intent) {
      const { rows: [s] } = await pool.query(
        'select idempotency_key, player_id, ledger_ref_id, settlement from cage.withdrawal_records where ledger_ref_id = $1 and settled_at is null', [intent.key],
      );
      if (!s) return { done: true };
      const ok = await deliverSettlement(pool, game, {
        idempotencyKey: s.idempotency_key, playerId: s.player_id.toString(), ledgerRefId: s.ledger_ref_id, settlement: s.settlement,
      });
      if (!ok) {
        result.settlements.undelivered++;
        return { failed: 'the game did not take the settlement' };
      }
      result.settlements.delivered++;
      return { done: true };
    },
  };
}

export async function reconcileCash(pool: pg.Pool, game: ServiceClient, options: ReconcileOptions) {
  const result: ReconcileResult = {
    deposits: { confirmed: 0, failed: 0, unresolved: 0 }, settlements: { delivered: 0, undelivered: 0 }, standUps: { settled: 0, failed: 0 },
  };
  await runReconcilers(pool, [
    depositReconciler(pool, game, options.graceSeconds, result), settlementReconciler(pool, game, options.graceSeconds, result),
  ], options.log);
  result.standUps = await settleLostStandUps(pool, options.cage, options);
  return result;
}

/**
 * Lost stand-ups are settled by the cage itself (`POST /settlement/reconcile-stand-ups`): the
 * settlement row and its receipt are the cage's to write and sign, never the worker's.
 */
async function settleLostStandUps(pool: pg.Pool, cage: ServiceClient, options: ReconcileOptions): Promise<ReconcileResult['standUps']> {
  // the listing is a read the worker may make: the cage is asked only when there is work for it
  const { rows } = await pool.query('select 1 from cage.unsettled_stand_ups($1, 1)', [options.graceSeconds]);
  if (rows.length === 0) return { settled: 0, failed: 0 };
  const answer = await cage.post('/settlement/reconcile-stand-ups', { graceSeconds: options.graceSeconds });
  const body = answer.body as { settled?: unknown; failed?: unknown; error?: unknown };
  if (!answer.ok || typeof body.settled !== 'number' || typeof body.failed !== 'number') {
    options.log?.warn({ status: answer.status, error: body.error }, 'lost stand-ups not reconciled: the cage did not answer');
    return { settled: 0, failed: 0, unreachable: true };
  }
  return { settled: body.settled, failed: body.failed };
}

export function createCageReconcileCashTask(deps: {
  pool: pg.Pool; game: ServiceClient; cage: ServiceClient; log: Logger; graceSeconds: number;
}): Task {
  return async () => {
    const r = await reconcileCash(deps.pool, deps.game, { graceSeconds: deps.graceSeconds, cage: deps.cage, log: deps.log });
    const touched = r.deposits.confirmed + r.deposits.failed + r.deposits.unresolved + r.settlements.delivered + r.settlements.undelivered
      + r.standUps.settled + r.standUps.failed + (r.standUps.unreachable ? 1 : 0);
    if (touched > 0) {
      const level = r.deposits.unresolved + r.settlements.undelivered + r.standUps.failed + (r.standUps.unreachable ? 1 : 0) > 0 ? 'warn' : 'info';
      deps.log[level]({ ...r }, 'cash reconciler');
    }
  };
}
