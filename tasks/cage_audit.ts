// Job `cage_audit`: the periodic audit, the one list of checks (server/audit/checks.ts) that
// `npm run ops -- audit` runs too, so both give one verdict: the cage's sums (cage.audit_since_checkpoint:
// the invariants of cage.audit(), reading of the journal only what was written since its last clean
// run), every recorded custody release against the arbiter's key, and the audit of causes (every new
// hand's signed record against the pinned dealer keys, its chain, its replay, the stacks it moved; every
// new link of the positions' chains). Each run is recorded (the audit's liveness: GET /health of the
// admin role); a clean one moves the marks. With payload `{ "full": true }` it reads everything from the
// start instead and moves nothing. On divergence it emits span `persistence.conservation.cage_divergence`
// and logs an error; a run that finds a violation moves no mark, so the next one reports it again.
import { SpanStatusCode } from '@opentelemetry/api';
import type { Task } from 'graphile-worker';
import type { Logger } from 'pino';
import { auditOnce } from '../server/audit/run.ts';
import { tracer } from '../server/telemetry/index.ts';

export function createCageAuditTask(log: Logger, options: { arbiterPublicKey?: string } = {}): Task {
  return async (payload, helpers) => {
    const full = (payload as { full?: unknown } | null)?.full === true;
    const { violations, covered, timings } = await helpers.withPgClient((client) =>
      auditOnce(client, { mode: full ? 'full' : 'periodic', arbiterPublicKey: options.arbiterPublicKey }));
    if (violations.length === 0) {
      log.debug({ full, hands: covered.hands, links: covered.links, timings }, 'cage audit clean');
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
