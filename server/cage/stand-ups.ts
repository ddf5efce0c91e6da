// Lost stand-ups, settled by the cage: a position the game stood up (`leaving`) whose settlement
// never reached the cage, because the stand-up's answer was lost. The worker's cash reconciler asks
// for it on its timer; the cage settles each as the withdraw route does (seams.ts settleStoodUp:
// the terminal row under the spec's key, the receipt signed with the cage's key, the zeroing), so a
// retry by the player replays the same settlement and two runs pay nothing twice.
//   POST /settlement/reconcile-stand-ups   x-service-key; `{ graceSeconds? }` -> `{ settled, failed }`
import type { Express } from 'express';
import type pg from 'pg';
import type { Logger } from 'pino';
import { z } from 'zod';
import { requireServiceKey } from '../http/service-key.ts';
import type { ServiceClient } from '../http/service-client.ts';
import type { ReceiptSigner } from './receipts.ts';
import { settleStoodUp } from './seams.ts';
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

export const reconcileStandUpsBody = z.object({ graceSeconds: z.number().int().min(0).max(86_400).optional() }).strict();

export const standUpReconcileRoutes = [
  describeRoute({
    method: 'post', path: '/settlement/reconcile-stand-ups', auth: 'service', summary: 'Settles the stand-ups a failed call left unsettled', body: reconcileStandUpsBody,
    responses: { 200: 'the stand-ups settled' },
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
}
