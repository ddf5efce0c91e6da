// Job `claims_complete_lost`: every minute, claims whose grant minted but whose ledger row never came
// (the game process died between the cage's grant and claims.finish_claim) are completed from the
// grant (db/functions/claims/20_claims.sql, claims.complete_lost_claims): the row written, the
// section marked claimed, when the claim was still due. A grant that was not due is left incomplete
// and logged at error; the audit names it once it is older than the claim's report window.
import type { Task } from 'graphile-worker';
import type pg from 'pg';
import type { Logger } from 'pino';

const BATCH = 500;

export async function completeLostClaims(pool: pg.Pool) {
  const { rows } = await pool.query<{ claim_id: string; user_id: string; section_key: string; period: string; amount: bigint; completed: boolean }>(
    'select claim_id, user_id, section_key, period, amount, completed from claims.complete_lost_claims($1)', [BATCH],
  );
  return { completed: rows.filter((r) => r.completed), undue: rows.filter((r) => !r.completed) };
}

export function createClaimsCompleteLostTask(deps: { pool: pg.Pool; log: Logger }): Task {
  return async () => {
    const run = await completeLostClaims(deps.pool);
    for (const r of run.completed) {
      deps.log.warn({ claimId: r.claim_id, userId: r.user_id, sectionKey: r.section_key, period: r.period }, 'claim completed from its grant');
    }
    for (const r of run.undue) {
      deps.log.error({ claimId: r.claim_id, userId: r.user_id, sectionKey: r.section_key, period: r.period }, 'grant without a due claim: left for an operator');
    }
  };
}
