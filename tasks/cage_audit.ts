// Job `cage_audit`: the cage's periodic audit (cage.audit_since_checkpoint: the invariants of
// cage.audit(), reading of the journal only what was written since its last clean run, whose
// checkpoint it then moves), and what SQL cannot check, ed25519, against the keys pinned in the
// database (never this process's environment, so every run and `ops audit` agree): first the
// verdict on each custody release the cage recorded pending (verifyPendingReleases: only a valid one
// frees its entry), then every release (releaseViolations) and every receipt new since the last
// clean run (receiptViolations). With payload `{ "full": true }` it runs the full audit instead, in
// one read-only snapshot, and checks every receipt. On divergence it emits span
// `persistence.conservation.cage_divergence` and logs an error; a run that finds a violation moves no
// checkpoint, so the next one reports it again.
import { SpanStatusCode } from '@opentelemetry/api';
import type { Task } from 'graphile-worker';
import type { Logger } from 'pino';
import { auditOn, auditSinceCheckpoint } from '../server/cage/ledger.ts';
import { releaseViolations, verifyPendingReleases } from '../server/cage/custody.ts';
import { receiptViolations } from '../server/cage/receipts.ts';
import { tracer } from '../server/telemetry/index.ts';

export function createCageAuditTask(log: Logger): Task {
  // the receipts checked clean by this process (append-only: a clean receipt stays clean)
  let receiptsCleanThrough = 0n;
  return async (payload, helpers) => {
    const full = (payload as { full?: unknown } | null)?.full === true;
    await helpers.withPgClient((client) => verifyPendingReleases(client, log));
    const receipts = await helpers.withPgClient((client) => receiptViolations(client, { afterId: full ? 0n : receiptsCleanThrough }));
    if (receipts.violations.length === 0) receiptsCleanThrough = receipts.lastId;
    const violations = [
      ...(await helpers.withPgClient((client) => (full ? auditOn(client) : auditSinceCheckpoint(client)))),
      ...(await helpers.withPgClient((client) => releaseViolations(client))),
      ...receipts.violations,
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
