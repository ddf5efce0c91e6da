// Job `cage_reconcile_cash`: the cash loop's reconciler, every CAGE_RECONCILE_INTERVAL_SECONDS
// (30 s by default) and once at startup. It settles what a request could not finish:
//   - deposits still pending after the grace period (the cage stopped mid-request, or the game
//     could not be reached to fund or cancel): the game is asked to cancel the credit, and the
//     deposit is confirmed (the seat holds the chips) or compensated (it does not);
//   - settled positions the game has not zeroed yet: the settlement is redelivered;
//   - positions the game stood up (leaving) that the cage never settled, because the stand-up's
//     answer was lost: settled as the withdraw route settles them (a cash-out to the user's cage
//     balance under the spec's key, its receipt, the zeroing), so a retry by the player replays it.
// Every step is idempotent, so two runs (or a run racing a request) change nothing more.
import type { Task } from 'graphile-worker';
import type pg from 'pg';
import type { Logger } from 'pino';
import type { ServiceClient } from '../server/http/service-client.ts';
import { loadReceiptSigner, type ReceiptSigner } from '../server/cage/receipts.ts';
import { deliverSettlement, resolveUncertainDeposit, settleStoodUp } from '../server/cage/seams.ts';

/**
 * How long a request may still be working on its own intent: a deposit makes at most two game
 * calls (fund, then cancel) and a withdrawal one (zero the seat), each bounded by
 * GAME_CALL_TIMEOUT_MS. The reconciler leaves younger intents alone (three call deadlines).
 */
export function graceSeconds(gameCallTimeoutMs: number) {
  return Math.max(1, Math.ceil((3 * gameCallTimeoutMs) / 1000));
}
const BATCH = 200;

export interface ReconcileResult {
  deposits: { confirmed: number; failed: number; unresolved: number };
  settlements: { delivered: number; undelivered: number };
  standUps: { settled: number; failed: number };
}

export interface ReconcileOptions {
  graceSeconds: number;
  /** The cage's receipt signer (default: the key kept in the database, as the cage loads it). */
  signer?: () => Promise<ReceiptSigner>;
  log?: Logger;
}

export async function reconcileCash(pool: pg.Pool, game: ServiceClient, options: ReconcileOptions) {
  const result: ReconcileResult = {
    deposits: { confirmed: 0, failed: 0, unresolved: 0 }, settlements: { delivered: 0, undelivered: 0 }, standUps: { settled: 0, failed: 0 },
  };
  const { rows: deposits } = await pool.query(
    `select ref_id, user_id, table_id, seat_index, amount from cage.deposit_intents
      where status = 'pending' and created_at < now() - make_interval(secs => $1)
      order by created_at limit $2`,
    [options.graceSeconds, BATCH],
  );
  for (const d of deposits) {
    const outcome = await resolveUncertainDeposit(pool, game, {
      refId: d.ref_id, userId: d.user_id, tableId: d.table_id, seatIndex: d.seat_index, amount: d.amount,
    });
    if (outcome.outcome === 'confirmed') result.deposits.confirmed++;
    else if (outcome.outcome === 'unresolved') result.deposits.unresolved++;
    else result.deposits.failed++;
  }
  const { rows: settlements } = await pool.query(
    `select idempotency_key, player_id, ledger_ref_id, settlement from cage.withdraw_intents
      where settled_at is null and created_at < now() - make_interval(secs => $1)
      order by created_at limit $2`,
    [options.graceSeconds, BATCH],
  );
  for (const s of settlements) {
    const ok = await deliverSettlement(pool, game, {
      idempotencyKey: s.idempotency_key, playerId: s.player_id.toString(), ledgerRefId: s.ledger_ref_id, settlement: s.settlement,
    });
    if (ok) result.settlements.delivered++;
    else result.settlements.undelivered++;
  }
  result.standUps = await settleLostStandUps(pool, game, options);
  return result;
}

async function settleLostStandUps(pool: pg.Pool, game: ServiceClient, options: ReconcileOptions) {
  const counts = { settled: 0, failed: 0 };
  const { rows } = await pool.query<{ player_id: bigint; user_id: string; table_id: string; chip_amount: bigint; history_hash: string }>(
    'select player_id, user_id, table_id, chip_amount, history_hash from cage.unsettled_stand_ups($1, $2)', [options.graceSeconds, BATCH],
  );
  if (rows.length === 0) return counts;
  const signer = await (options.signer ?? (() => loadReceiptSigner(pool)))();
  for (const r of rows) {
    const position = { userId: r.user_id, tableId: r.table_id, playerId: r.player_id.toString(), chipAmount: r.chip_amount, historyHash: r.history_hash };
    const zeroed = await settleStoodUp(pool, game, signer, position).catch((err: Error) => {
      // a refusal (the table frozen since, say) or the game unreachable: the next run tries again
      options.log?.warn({ err: err.message, ...position, chipAmount: r.chip_amount.toString() }, 'stand-up not settled');
      return false;
    });
    if (zeroed) counts.settled++;
    else counts.failed++;
  }
  return counts;
}

export function createCageReconcileCashTask(deps: {
  pool: pg.Pool; game: ServiceClient; log: Logger; intervalSeconds: number; graceSeconds: number; signer?: () => Promise<ReceiptSigner>;
}): Task {
  return async (_payload, helpers) => {
    try {
      const r = await reconcileCash(deps.pool, deps.game, { graceSeconds: deps.graceSeconds, signer: deps.signer, log: deps.log });
      const touched = r.deposits.confirmed + r.deposits.failed + r.deposits.unresolved + r.settlements.delivered + r.settlements.undelivered
        + r.standUps.settled + r.standUps.failed;
      if (touched > 0) {
        const level = r.deposits.unresolved + r.settlements.undelivered + r.standUps.failed > 0 ? 'warn' : 'info';
        deps.log[level]({ ...r }, 'cash reconciler');
      }
    } finally {
      // the next run, whatever happened to this one (one scheduled run at a time: the job key)
      await helpers.addJob('cage_reconcile_cash', {}, {
        jobKey: 'cage_reconcile_cash', jobKeyMode: 'replace', runAt: new Date(Date.now() + deps.intervalSeconds * 1000),
      });
    }
  };
}
