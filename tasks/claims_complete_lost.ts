// Job `claims_complete_lost`: every minute, claim intents open past the claim's timeout (the game
// process died between claims.open_claim and claims.finish_claim) are finished from their grant
// (db/functions/claims/20_claims.sql, claims.complete_lost_claims): the row written, the section
// marked claimed, when the claim was still due. An intent no grant backs is abandoned (nothing was
// minted; the user may claim again). A grant whose claim is no longer due is left and logged at
// error and recorded on its claim intent (cage.intents: stuck since when and why, `npm run ops --
// intents`); a grant no intent backs is never touched (the audit names it at once).
import type { Task } from 'graphile-worker';
import type pg from 'pg';
import type { Logger } from 'pino';
import { recordAttempt } from '../server/intents/framework.ts';

const BATCH = 500;

export async function completeLostClaims(pool: pg.Pool) {
  const { rows } = await pool.query<{ claim_id: string; user_id: string; section_key: string; period: string; amount: bigint; outcome: string }>(
    'select claim_id, user_id, section_key, period, amount, outcome from claims.complete_lost_claims($1)', [BATCH],
  );
  const undue = rows.filter((r) => r.outcome === 'not_due');
  for (const r of undue) await recordAttempt(pool, 'claim', r.claim_id, 'a grant whose claim is no longer due: left for an operator');
  return { completed: rows.filter((r) => r.outcome === 'completed'), abandoned: rows.filter((r) => r.outcome === 'abandoned'), undue };
}

export function createClaimsCompleteLostTask(deps: { pool: pg.Pool; log: Logger }): Task {
  return async () => {
    const run = await completeLostClaims(deps.pool);
    for (const r of run.completed) {
      deps.log.warn({ claimId: r.claim_id, userId: r.user_id, sectionKey: r.section_key, period: r.period }, 'claim completed from its grant');
    }
    for (const r of run.abandoned) {
      deps.log.info({ claimId: r.claim_id, userId: r.user_id, sectionKey: r.section_key, period: r.period }, 'claim abandoned: no grant came');
    }
    for (const r of run.undue) {
      deps.log.error({ claimId: r.claim_id, userId: r.user_id, sectionKey: r.section_key, period: r.period }, 'grant without a due claim: left for an operator');
    }
  };
}
