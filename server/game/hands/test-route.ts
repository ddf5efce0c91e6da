// POST /internal/test/hand (x-service-key; mounted only while the test harness is permitted): a
// hand's boundaries as the dealer calls them, driven by a test: `begin`, or `finish` with the stacks
// and the rake. Like a room, it runs a table under this process's lease (taken when this process
// holds none; another process's live lease: 409 lease_lost): every hand boundary needs one.
import type { Express } from 'express';
import { z } from 'zod';
import { tableId } from '../../http/schemas.ts';
import { requireServiceKey } from '../../http/service-key.ts';
import { ApiError } from '../../http/errors.ts';
import type { GameProcess } from '../live/lease.ts';
import type { createHands } from './hands.ts';
import { describeRoute } from '../../http/openapi.ts';

export const handBody = z.discriminatedUnion('action', [
  z.object({ action: z.literal('begin'), tableId, handId: z.string().min(1).max(128) }),
  z.object({
    action: z.literal('finish'),
    tableId,
    handId: z.string().min(1).max(128),
    stacks: z.record(z.string().regex(/^[1-9][0-9]{0,17}$/), z.number().int().min(0).max(Number.MAX_SAFE_INTEGER)),
    rake: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).default(0),
  }),
]);

/** The contract of installTestHandRoute: mounted only while the test harness is permitted. */
export const testHandRoutes = [
  describeRoute({
    method: 'post', path: '/internal/test/hand', auth: 'service', summary: 'Test harness: a hand\'s begin or finish, as the dealer calls them', body: handBody,
    responses: { 200: '{ ok, ... } (finish: the settlement)', 409: 'lease_lost' },
  }),
];

export function installTestHandRoute(
  app: Express, deps: { hands: ReturnType<typeof createHands>; serviceKey: string | undefined; process: GameProcess },
) {
  app.post('/internal/test/hand', requireServiceKey(deps.serviceKey), async (req, res) => {
    const b = handBody.parse(req.body ?? {});
    if (deps.process.epochOf(b.tableId) === null) {
      const taken = await deps.process.take(b.tableId, () => undefined);
      if (!taken.granted) throw new ApiError(409, 'lease_lost');
    }
    if (b.action === 'begin') {
      await deps.hands.begin(b.tableId, b.handId);
      return void res.json({ ok: true });
    }
    const stacks = Object.fromEntries(Object.entries(b.stacks).map(([k, v]) => [k, BigInt(v)]));
    res.json({ ok: true, ...(await deps.hands.finish(b.tableId, b.handId, stacks, BigInt(b.rake))) });
  });
}
