// Job `betting_reconcile_stakes`: the betting legs' reconciler, every CAGE_RECONCILE_INTERVAL_SECONDS
// (30 s by default) and once at startup, like the cash reconciler. It settles what a stake or an
// unbet request could not finish (the cage stopped between its steps):
//   - stakes still pending after the grace period (their notify's outcome unknown): the betting
//     service is asked whether it recorded the bet; found, the stake is confirmed; not found
//     (bet_not_found), it is compensated (cage.resolve_bet_stake decides under the stake's lock, so
//     a notify landing meanwhile is either seen or refused); no answer, it stays pending for the
//     next run;
//   - unbets the betting service made whose journal credit never came: credited (cage.credit_unbet,
//     backed by the removed bet row).
// Every step is idempotent, so two runs (or a run racing a request) change nothing more.
import type { Task } from 'graphile-worker';
import type pg from 'pg';
import type { Logger } from 'pino';
import type { ServiceClient } from '../server/http/service-client.ts';

const BATCH = 200;

export interface BetReconcileResult {
  stakes: { confirmed: number; compensated: number; unresolved: number };
  unbets: { credited: number };
}

export async function reconcileBets(pool: pg.Pool, betting: ServiceClient, options: { graceSeconds: number; log?: Logger }): Promise<BetReconcileResult> {
  const result: BetReconcileResult = { stakes: { confirmed: 0, compensated: 0, unresolved: 0 }, unbets: { credited: 0 } };
  const { rows: pending } = await pool.query<{ ref_id: string }>('select ref_id from cage.pending_bet_stakes($1, $2)', [options.graceSeconds, BATCH]);
  for (const s of pending) {
    const answer = await betting.get(`/internal/bets/${encodeURIComponent(s.ref_id)}`);
    const known = answer.ok || (!('unreachable' in answer) && answer.status === 404 && answer.body.error === 'bet_not_found');
    if (!known) {
      result.stakes.unresolved++;
      continue;
    }
    const { rows } = await pool.query<{ status: string }>('select status from cage.resolve_bet_stake($1, $2)', [s.ref_id, 'notify_unknown']);
    if (rows[0]?.status === 'confirmed') result.stakes.confirmed++;
    else if (rows[0]?.status === 'compensated') result.stakes.compensated++;
  }
  const { rows: unbets } = await pool.query<{ ref_id: string }>('select ref_id from cage.uncredited_unbets($1, $2)', [options.graceSeconds, BATCH]);
  for (const u of unbets) {
    const { rows } = await pool.query<{ replayed: boolean }>('select replayed from cage.credit_unbet($1)', [u.ref_id]);
    if (rows[0] && !rows[0].replayed) result.unbets.credited++;
  }
  return result;
}

export function createBettingReconcileStakesTask(deps: {
  pool: pg.Pool; betting: ServiceClient; log: Logger; intervalSeconds: number; graceSeconds: number;
}): Task {
  return async (_payload, helpers) => {
    try {
      const r = await reconcileBets(deps.pool, deps.betting, { graceSeconds: deps.graceSeconds, log: deps.log });
      const touched = r.stakes.confirmed + r.stakes.compensated + r.stakes.unresolved + r.unbets.credited;
      if (touched > 0) deps.log[r.stakes.unresolved > 0 ? 'warn' : 'info']({ ...r }, 'betting stake reconciler');
    } finally {
      // the next run, whatever happened to this one (one scheduled run at a time: the job key)
      await helpers.addJob('betting_reconcile_stakes', {}, {
        jobKey: 'betting_reconcile_stakes', jobKeyMode: 'replace', runAt: new Date(Date.now() + deps.intervalSeconds * 1000),
      });
    }
  };
}
