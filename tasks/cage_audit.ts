// Job `cage_audit`: the periodic audit, the one list of checks (server/audit/checks.ts) that
// `npm run ops -- audit` runs too, so both give one verdict: the cage's sums (cage.audit_since_checkpoint:
// the invariants of cage.audit(), reading of the journal only what was written since its last clean
// run), every custody release and every new receipt against the keys pinned in the database (never
// this process's environment), the chain intents against the vault's events, and the audit of causes
// (every new hand's signed record against the pinned dealer keys, its chain, its replay, the stacks it
// moved; every new link of the positions' chains). Before the checks, the verdict on each custody
// release the cage recorded pending (verifyPendingReleases: only a valid one frees its entry). Each
// run is recorded (the audit's liveness: GET /health of the admin role); a clean one moves the marks.
// With payload `{ "full": true }` it reads everything from the start instead and moves nothing. A clean
// periodic run that read a full batch queues the next at once (`cage_audit_catch_up`), until caught up. On
// divergence it emits span `persistence.conservation.cage_divergence` and logs an error; a run that
// finds a violation moves no mark, so the next one reports it again.
import { SpanStatusCode } from '@opentelemetry/api';
import type { Task } from 'graphile-worker';
import type { Logger } from 'pino';
import { AUDIT_BATCH, auditOnce } from '../server/audit/run.ts';
import { verifyPendingReleases } from '../server/cage/custody.ts';
import { tracer } from '../server/telemetry/index.ts';

/** The hands and links a run reads at most: the payload's `limit` (a positive integer up to AUDIT_BATCH), else AUDIT_BATCH. */
function batchOf(payload: unknown): number {
  const limit = (payload as { limit?: unknown } | null)?.limit;
  return Number.isSafeInteger(limit) && (limit as number) >= 1 && (limit as number) <= AUDIT_BATCH ? (limit as number) : AUDIT_BATCH;
}

export function createCageAuditTask(log: Logger): Task {
  return async (payload, helpers) => {
    const full = (payload as { full?: unknown } | null)?.full === true;
    const limit = batchOf(payload);
    await helpers.withPgClient((client) => verifyPendingReleases(client, log));
    const { violations, covered, timings } = await helpers.withPgClient((client) => auditOnce(client, { mode: full ? 'full' : 'periodic', limit }));
    if (violations.length === 0) {
      log.debug({ full, hands: covered.hands, links: covered.links, timings }, 'cage audit clean');
      // a clean run that read a full batch left hands or links behind: the next run is queued now,
      // not a period later, so the audit keeps pace with any rate of play (issue 33: at 270 hands/s
      // the tables make about 80,000 position links a minute, four batches)
      if (!full && (covered.hands >= limit || covered.links >= limit)) {
        await helpers.addJob('cage_audit', limit === AUDIT_BATCH ? {} : { limit }, { jobKey: 'cage_audit_catch_up' });
      }
      return;
    }
    const invariants = [...new Set(violations.map((v) => v.invariant))].sort();
    tracer().startActiveSpan(
      'persistence.conservation.cage_divergence',
      { attributes: { 'cage.violations': violations.length, 'cage.invariants': invariants } },
      (span) => {
        span.setStatus({ code: SpanStatusCode.ERROR, message: `${violations.length} cage invariant violations` });
        span.end();
      },
    );
    log.error({ violations: violations.slice(0, 50), count: violations.length, invariants, full }, 'cage divergence: the audit found violations');
  };
}
