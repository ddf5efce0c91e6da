// Job `cage_audit`: the cage's periodic audit (cage.audit_since_checkpoint: the invariants of
// cage.audit(), reading of the journal only what was written since its last clean run, whose
// checkpoint it then moves), and a check of every recorded custody release against the arbiter's key
// (which SQL cannot: server/cage/custody.ts, unverifiedReleases). With payload `{ "full": true }` it
// runs the full audit instead, in one read-only snapshot. On divergence it emits span
// `persistence.conservation.cage_divergence` and logs an error; a run that finds a violation moves no
// checkpoint, so the next one reports it again.
import { SpanStatusCode } from '@opentelemetry/api';
import type { Task } from 'graphile-worker';
import type { Logger } from 'pino';
import { auditOn, auditSinceCheckpoint } from '../server/cage/ledger.ts';
import { unverifiedReleases } from '../server/cage/custody.ts';
import { tracer } from '../server/telemetry/index.ts';

export function createCageAuditTask(log: Logger, options: { arbiterPublicKey?: string } = {}): Task {
  return async (payload, helpers) => {
    const full = (payload as { full?: unknown } | null)?.full === true;
    const violations = [
      ...(await helpers.withPgClient((client) => (full ? auditOn(client) : auditSinceCheckpoint(client)))),
      ...(await helpers.withPgClient((client) => unverifiedReleases(client, options.arbiterPublicKey))),
    ];
    if (violations.length === 0) {
      log.debug({ full }, 'cage audit clean');
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
