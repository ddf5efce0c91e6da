// One run of the audit (checks.ts): every check on the caller's connection, then, for the periodic
// job, the run recorded and the marks moved (cage.cause_audit_finish): a table's and a position's only
// when nothing was found there, so a forged hand holds its own table's payouts, not every table's. The
// hand and link checks read in one REPEATABLE READ READ ONLY snapshot; the cage's sums take their own.
import type pg from 'pg';
import { AUDIT_CHECKS } from './checks.ts';
import type { AuditCheck, AuditMode, Covered, Violation } from './types.ts';

export interface AuditRun {
  violations: Violation[];
  covered: Covered;
  /** Per check, how long it took (ms). */
  timings: Record<string, number>;
}

/** At most this many hands and links per run; a run that reads as many leaves the rest to the next. */
export const AUDIT_BATCH = 20_000;

async function inSnapshot<T>(client: pg.ClientBase, work: () => Promise<T>): Promise<T> {
  await client.query('begin isolation level repeatable read read only');
  try {
    const out = await work();
    await client.query('commit');
    return out;
  } catch (err) {
    await client.query('rollback').catch(() => undefined);
    throw err;
  }
}

export async function auditOnce(
  client: pg.ClientBase,
  options: { mode: AuditMode; limit?: number; checks?: readonly AuditCheck[] },
): Promise<AuditRun> {
  const covered: Covered = { hands: 0, links: 0, tables: [], positions: [], dirty: new Set() };
  const scope = { mode: options.mode, limit: options.limit ?? AUDIT_BATCH, covered };
  const violations: Violation[] = [];
  const timings: Record<string, number> = {};
  const checks = options.checks ?? AUDIT_CHECKS;
  const snapshot = checks.filter((c) => c.snapshot === true);
  for (const check of checks.filter((c) => !snapshot.includes(c))) {
    const started = performance.now();
    violations.push(...(await check.run(client, scope)));
    timings[check.name] = performance.now() - started;
  }
  await inSnapshot(client, async () => {
    for (const check of snapshot) {
      const started = performance.now();
      violations.push(...(await check.run(client, scope)));
      timings[check.name] = performance.now() - started;
    }
  });
  if (options.mode === 'periodic') {
    await client.query('select cage.cause_audit_finish($1, $2, $3, $4, $5, $6)', [
      violations.length === 0, violations.length, JSON.stringify(covered.tables.filter((t) => !covered.dirty.has(t.table_id))),
      JSON.stringify(covered.positions), covered.hands, covered.links,
    ]);
  }
  return { violations, covered, timings };
}
