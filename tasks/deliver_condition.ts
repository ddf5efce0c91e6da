// Job `deliver_condition`: a claim-board condition met on another role, delivered to the game role
// (POST /internal/claim-board/condition-met, x-service-key). Queued in the transaction that made it
// true (today: auth.link_wallet queues `wallet_linked` for a Solana link), so none is lost to a game
// role that was down. A game that cannot answer (unreachable, 5xx) fails the job, which
// graphile-worker retries with its exponential backoff up to the job's max_attempts (1000: about
// a week of tries); a coded refusal (4xx) cannot succeed later and is logged, not retried.
import type { Task } from 'graphile-worker';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { ServiceClient } from '../server/http/service-client.ts';

const payload = z.object({
  userId: z.uuid(),
  conditionKey: z.string().regex(/^[a-z0-9][a-z0-9_.:-]{0,63}$/),
  idempotencyKey: z.string().min(1).max(200),
});

export function createDeliverConditionTask(deps: { game: ServiceClient; log: Logger }): Task {
  return async (raw) => {
    const parsed = payload.safeParse(raw);
    if (!parsed.success) {
      deps.log.error({ payload: raw }, 'condition not delivered: malformed job payload');
      return;
    }
    const answer = await deps.game.post<{ active?: boolean; lit?: string[] }>('/internal/claim-board/condition-met', parsed.data);
    if ('unreachable' in answer) throw new Error(`the game role did not answer (${answer.reason}); retried`);
    if (!answer.ok) {
      deps.log.error({ ...parsed.data, status: answer.status, error: answer.body.error }, 'condition refused by the game role; not retried');
      return;
    }
    deps.log.info({ ...parsed.data, active: answer.body.active, lit: answer.body.lit }, 'condition delivered');
  };
}
