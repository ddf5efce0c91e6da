// Lost stand-ups, settled by the cage: a position the game stood up (`leaving`) whose settlement
// never reached the cage, because the stand-up's answer was lost. The worker's cash reconciler asks
// for it on its timer; the cage settles each as the withdraw route does (seams.ts settleStoodUp:
// the terminal row under the spec's key, the receipt signed with the cage's key, the zeroing), so a
// retry by the player replays the same settlement and two runs pay nothing twice.
//   POST /settlement/reconcile-stand-ups   x-service-key; `{ graceSeconds? }` -> `{ settled, failed }`
// And the receipts of busts (issue 32): a hand's end closes a busted cage position in its own
// transaction (game.end_hand, cage_private.close_bust), where no key may be; the cage signs their
// receipts afterwards with its receipt key, when the worker's job cage_sign_bust_receipts asks.
//   POST /settlement/sign-bust-receipts    x-service-key; `{}` -> `{ signed, failed }`
import type { Express } from 'express';
import type pg from 'pg';
import type { Logger } from 'pino';
import { z } from 'zod';
import { requireServiceKey } from '../http/service-key.ts';
import type { ServiceClient } from '../http/service-client.ts';
import type { ReceiptSigner } from './receipts.ts';
import { issueReceipt } from './receipts.ts';
import { settleStoodUp, settlementReceiptFields } from './seams.ts';
import { describeRoute } from '../http/openapi.ts';

const BATCH = 200;

export async function settleLostStandUps(
  deps: { pool: pg.Pool; game: ServiceClient; signer: ReceiptSigner; log: Logger },
  graceSeconds: number,
): Promise<{ settled: number; failed: number }> {
  const counts = { settled: 0, failed: 0 };
  const { rows } = await deps.pool.query<{ player_id: bigint; user_id: string; table_id: string; chip_amount: bigint; history_hash: string }>(
    'select player_id, user_id, table_id, chip_amount, history_hash from cage.unsettled_stand_ups($1, $2)', [graceSeconds, BATCH],
  );
  for (const r of rows) {
    const position = { userId: r.user_id, tableId: r.table_id, playerId: r.player_id.toString(), chipAmount: r.chip_amount, historyHash: r.history_hash };
    const zeroed = await settleStoodUp(deps.pool, deps.game, deps.signer, position).catch((err: Error) => {
      // a refusal (the table frozen since, say) or the game unreachable: the next run tries again
      deps.log.warn({ err: err.message, ...position, chipAmount: r.chip_amount.toString() }, 'stand-up not settled');
      return false;
    });
    if (zeroed) counts.settled++;
    else counts.failed++;
  }
  return counts;
}

interface UnsignedBust {
  ledger_ref_id: string; user_id: string; table_id: string; player_id: bigint; amount: bigint; settlement: string; history_hash: string; money_kind: string;
}

/**
 * Signs and stores the receipt of every bust settlement that has none (cage.unsigned_bust_receipts),
 * with the fields every settlement's receipt has (seams.ts settlementReceiptFields). Storing is
 * replay-once per settlement, so two runs at once store one receipt each.
 */
export async function signBustReceipts(deps: { pool: pg.Pool; signer: ReceiptSigner; log: Logger }): Promise<{ signed: number; failed: number }> {
  const counts = { signed: 0, failed: 0 };
  const { rows } = await deps.pool.query<UnsignedBust>(
    'select ledger_ref_id, user_id, table_id, player_id, amount, settlement, history_hash, money_kind from cage.unsigned_bust_receipts($1)', [BATCH],
  );
  for (const r of rows) {
    const fields = settlementReceiptFields(r.user_id, r.table_id, { ...r, custody_entry_id: null });
    const stored = await issueReceipt(deps.pool, deps.signer, fields).then(() => true, (err: Error) => {
      deps.log.warn({ err: err.message, ledgerRefId: r.ledger_ref_id }, 'bust receipt not signed');
      return false;
    });
    if (stored) counts.signed++;
    else counts.failed++;
  }
  return counts;
}

export const signBustReceiptsBody = z.object({}).strict();

export const reconcileStandUpsBody = z.object({ graceSeconds: z.number().int().min(0).max(86_400).optional() }).strict();

export const standUpReconcileRoutes = [
  describeRoute({
    method: 'post', path: '/settlement/reconcile-stand-ups', auth: 'service', summary: 'Settles the stand-ups a failed call left unsettled', body: reconcileStandUpsBody,
    responses: { 200: 'the stand-ups settled' },
  }),
  describeRoute({
    method: 'post', path: '/settlement/sign-bust-receipts', auth: 'service', summary: 'Signs the receipts of the busts the hands\' ends closed', body: signBustReceiptsBody,
    responses: { 200: '{ signed, failed }' },
  }),
];

export function installStandUpReconcileRoute(app: Express, deps: {
  pool: pg.Pool; game: ServiceClient; signer: ReceiptSigner; log: Logger; serviceKey: string | undefined; defaultGraceSeconds: number;
}) {
  app.post('/settlement/reconcile-stand-ups', requireServiceKey(deps.serviceKey), async (req, res) => {
    const { graceSeconds } = reconcileStandUpsBody.parse(req.body ?? {});
    const counts = await settleLostStandUps(deps, graceSeconds ?? deps.defaultGraceSeconds);
    if (counts.settled + counts.failed > 0) deps.log.info(counts, 'lost stand-ups reconciled');
    res.json(counts);
  });
  app.post('/settlement/sign-bust-receipts', requireServiceKey(deps.serviceKey), async (req, res) => {
    signBustReceiptsBody.parse(req.body ?? {});
    const counts = await signBustReceipts(deps);
    if (counts.failed > 0) deps.log.warn(counts, 'bust receipts not all signed');
    res.json(counts);
  });
}
