// Job `cage_audit`: runs the cage's audit (cage.audit()) in one read-only snapshot, and checks every
// recorded custody release against the arbiter's key (which SQL cannot: server/cage/custody.ts,
// unverifiedReleases). On divergence it emits span `persistence.conservation.cage_divergence` and
// logs an error; it never writes, so running it twice changes nothing.
import { SpanStatusCode } from '@opentelemetry/api';
import type { Task } from 'graphile-worker';
import type { Logger } from 'pino';
import { auditOn } from '../server/cage/ledger.ts';
import { unverifiedReleases } from '../server/cage/custody.ts';
import { tracer } from '../server/telemetry/index.ts';

export function createCageAuditTask(log: Logger, options: { arbiterPublicKey?: string } = {}): Task {
  return async (_payload, helpers) => {
    const violations = [
      ...(await helpers.withPgClient(auditOn)),
      ...(await helpers.withPgClient((client) => unverifiedReleases(client, options.arbiterPublicKey))),
    ];
    if (violations.length === 0) {
      log.debug('cage audit clean');
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
    log.error({ violations: violations.slice(0, 50), count: violations.length, invariants }, 'cage divergence: the audit found violations');
  };
}
