// The graphile-worker job `cage_audit`: silent on clean books; on a corrupted projection it emits
// span `persistence.conservation.cage_divergence` and an error log; `cage.rebuild_projection()`
// repairs the books and the audit is clean again. The job is the periodic audit (what changed since
// its checkpoint); with `{ full: true }` the full one. Run through `runOnce` (the task list as the worker
// role builds it) and through the real worker role's startup job, which must then stop cleanly.
import { quickAddJob, runOnce } from 'graphile-worker';
import type { Runner } from 'graphile-worker';
import { createCageAuditTask } from '../../tasks/cage_audit.ts';
import { workerLogger } from '../../server/worker/logger.ts';
import { finishedSpans, installTelemetry, resetSpans, shutdownTelemetry } from '../../server/telemetry/index.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { fund, userAccount } from '../helpers/cage.ts';
import { captureLogger, LEVEL, waitForLine, type LogLine } from '../helpers/logs.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { SpanStatusCode } from '@opentelemetry/api';
import type pg from 'pg';

const DIVERGENCE = 'persistence.conservation.cage_divergence';

let db: TestDatabase;
let account: bigint;
let platform: TestPlatform | undefined;
let workerPool: pg.Pool | undefined;

const divergenceSpans = () => finishedSpans().filter((s) => s.name === DIVERGENCE);
const divergenceLogs = (lines: LogLine[]) => lines.filter((l) => l.msg === 'cage divergence: the audit found violations');

/** Queues one `cage_audit` job and runs the queue to empty with the worker's own task, as poker_worker. */
async function runAudit(payload: { full?: boolean } = {}) {
  const { log, lines } = captureLogger('debug');
  workerPool ??= db.pool('poker_worker', 2);
  const pgPool = workerPool;
  await quickAddJob({ pgPool }, 'cage_audit', payload);
  // runOnce takes the jobs that are ready when it looks; a job queued in the same millisecond can
  // be missed, so run again until the queue is empty (bounded)
  for (let i = 0; i < 5; i++) {
    await runOnce({ pgPool, logger: workerLogger(log), taskList: { cage_audit: createCageAuditTask(log) } });
    if ((await queuedAudits()) === 0) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const failed = lines.filter((l) => /failed|error/i.test(l.msg) && l.component === 'graphile-worker');
  expect(failed).toEqual([]);
  return lines;
}

async function auditRows() {
  const { rows } = await db.owner.query<{ invariant: string; subject: string }>('select invariant, subject from cage.audit()');
  return rows;
}

const queuedAudits = async () =>
  Number((await db.owner.query<{ n: string }>("select count(*) as n from graphile_worker.jobs where task_identifier = 'cage_audit'")).rows[0]!.n);

beforeAll(async () => {
  await installTelemetry({ serviceName: 'worker-audit-test', memory: true });
  db = await createTestDatabase();
  const cage = db.owner;
  account = (await userAccount(cage)).id;
  await fund(cage, account, 500n);
});

afterAll(async () => {
  await platform?.stop();
  await db?.drop();
  await shutdownTelemetry();
});

beforeEach(() => resetSpans());

test('clean books: the job runs, no divergence span, no error log', async () => {
  expect(await auditRows()).toEqual([]);
  const lines = await runAudit();
  expect(lines.some((l) => l.msg === 'cage audit clean')).toBe(true);
  expect(lines.filter((l) => l.level >= LEVEL.error)).toEqual([]);
  expect(divergenceSpans()).toEqual([]);
  expect(await queuedAudits()).toBe(0);
});

test('a corrupted projection: the span and an error log name the violation', async () => {
  await db.owner.query('update cage.cage_accounts set balance = balance + 1 where id = $1', [account]);
  const lines = await runAudit();

  const spans = divergenceSpans();
  expect(spans).toHaveLength(1);
  expect(spans[0]!.attributes).toEqual({ 'cage.violations': 1, 'cage.invariants': ['account_balance'] });
  expect(spans[0]!.status.code).toBe(SpanStatusCode.ERROR);

  const errors = divergenceLogs(lines);
  expect(errors).toHaveLength(1);
  expect(errors[0]).toMatchObject({
    level: LEVEL.error,
    count: 1,
    invariants: ['account_balance'],
    violations: [{ invariant: 'account_balance', subject: `account:${account}`, detail: { balance: 501, journal: 500 } }],
  });
  // a run that finds a violation writes nothing: the job succeeded and the corruption is still there
  expect(await queuedAudits()).toBe(0);
  expect(await auditRows()).toEqual([{ invariant: 'account_balance', subject: `account:${account}` }]);
});

test('an audit that finds a violation writes nothing: running it again reports the same and changes nothing', async () => {
  const checkpoint = (await db.owner.query('select * from cage_private.audit_checkpoint')).rows;
  const before = (await db.owner.query('select id, balance, version from cage.cage_accounts order by id')).rows;
  const lines = await runAudit();
  expect(divergenceSpans()).toHaveLength(1);
  expect(divergenceLogs(lines)).toHaveLength(1);
  expect((await db.owner.query('select id, balance, version from cage.cage_accounts order by id')).rows).toEqual(before);
  expect((await db.owner.query('select * from cage_private.audit_checkpoint')).rows).toEqual(checkpoint);
});

test('cage.rebuild_projection() repairs the books and the audit is clean again', async () => {
  const { rows } = await db.owner.query('select * from cage.rebuild_projection()');
  expect(rows).toEqual([{ account_id: account, old_balance: 501n, new_balance: 500n, old_version: 1n, new_version: 1n }]);
  expect(await auditRows()).toEqual([]);
  const lines = await runAudit();
  expect(divergenceSpans()).toEqual([]);
  expect(divergenceLogs(lines)).toEqual([]);
  expect(lines.some((l) => l.msg === 'cage audit clean')).toBe(true);
});

test('the worker role audits at startup, reports a divergence, and stops with nothing left open', async () => {
  await db.owner.query('update cage.cage_accounts set balance = balance + 7 where id = $1', [account]);
  const { log, lines } = captureLogger('debug');
  platform = await startTestPlatform({ databaseUrl: db.url, roles: ['worker'], log });
  const runner = platform.role<{ role: string; runner: Runner; stop(): Promise<void> }>('worker').runner;

  const error = await waitForLine(lines, (l) => l.msg === 'cage divergence: the audit found violations');
  expect(error).toMatchObject({ level: LEVEL.error, violations: [{ subject: `account:${account}`, detail: { balance: 507, journal: 500 } }] });
  await waitForLine(lines, (l) => l.component === 'graphile-worker' && /^Completed task \d+ \(cage_audit/.test(l.msg));
  expect(divergenceSpans().map((s) => s.attributes['cage.violations'])).toEqual([1]);

  const connections = async () =>
    Number((await db.owner.query<{ n: string }>(
      "select count(*) as n from pg_stat_activity where datname = current_database() and application_name = 'worker'",
    )).rows[0]!.n);
  // a job on the worker's own pool now, so that its connection is open (an idle one closes after 10 s,
  // and a loaded machine can take that long over the audit)
  const job = await runner.addJob('tournament_rearm', {}, { jobKey: 'audit-test-rearm' });
  await waitForLine(lines, (l) => l.component === 'graphile-worker' && l.msg.startsWith(`Completed task ${job.id} (tournament_rearm`));
  expect(await connections()).toBeGreaterThan(0);

  await platform.stop();
  platform = undefined;
  await expect(runner.promise).resolves.toBeUndefined();
  // the pool is ended; its backends leave pg_stat_activity a moment after their client hung up
  const deadline = Date.now() + 5000;
  while ((await connections()) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
  expect(await connections()).toBe(0);
  expect(lines.filter((l) => l.level >= LEVEL.warn && l.msg !== error.msg)).toEqual([]);

  await db.owner.query('select * from cage.rebuild_projection()');
  expect(await auditRows()).toEqual([]);
});

test('the periodic job reads only what was posted since its checkpoint; the full one reads the whole journal', async () => {
  const newer = (await userAccount(db.owner)).id;
  await fund(db.owner, newer, 20n);
  expect((await runAudit()).some((l) => l.msg === 'cage audit clean')).toBe(true);
  const { rows } = await db.owner.query<{ entry_id: bigint; entries_read: bigint }>('select entry_id, entries_read from cage_private.audit_checkpoint');
  expect(rows[0]!.entries_read).toBe(1n);

  // a posting forged under an entry the checkpoint covers: history, which only the full audit re-reads
  const house = (await db.owner.query<{ id: bigint }>("select cage.ensure_account('house', null, null, 'play') as id")).rows[0]!.id;
  await db.owner.query(
    `insert into cage.cage_ledger (entry_id, account_id, money_kind, kind, ref_id, amount)
     select e.id, $2, e.money_kind, e.kind, e.ref_id, 1 from cage.cage_entries e where e.id = $1`, [rows[0]!.entry_id, house],
  );
  expect(divergenceLogs(await runAudit())).toEqual([]);
  const errors = divergenceLogs(await runAudit({ full: true }));
  expect(errors).toHaveLength(1);
  expect(errors[0]).toMatchObject({ full: true, invariants: ['transaction_balance'] });
});
