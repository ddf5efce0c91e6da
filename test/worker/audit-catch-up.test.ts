// Issue 33: the periodic audit keeps pace with any rate of play. A run reads at most a batch of hands
// and of position links (server/audit/run.ts, AUDIT_BATCH); at 270 hands/s the tables make about
// 80,000 links a minute, four batches, so one run a minute fell further behind every minute. A clean
// run that read a full batch now queues the next at once (`cage_audit_catch_up`): one queued job covers
// everything written, however much. Shown with a batch of one link (the job's `limit`), run as the
// worker runs it (runOnce, as poker_worker), against seats whose credits made the links.
import { randomUUID } from 'node:crypto';
import { quickAddJob, runOnce } from 'graphile-worker';
import { createCageAuditTask } from '../../tasks/cage_audit.ts';
import { workerLogger } from '../../server/worker/logger.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { expectCleanAudit, fund, userAccount } from '../helpers/cage.ts';
import { captureLogger } from '../helpers/logs.ts';
import { eventually } from '../helpers/claims.ts';
import { createTable, creditSeat, openDeposit } from '../helpers/game.ts';

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

async function seatedPositions(n: number): Promise<string[]> {
  const cage = db.pool('poker_cage', 2);
  const tableId = (await createTable(cage)).table_id;
  const ids: string[] = [];
  for (let seat = 0; seat < n; seat++) {
    const u = await userAccount(db.owner);
    await fund(db.owner, u.id, 1000n);
    const deposit = await openDeposit(cage, u.userId, `sit-${randomUUID()}`, tableId, seat, 200n);
    ids.push(String((await creditSeat(db.pool('poker_game', 2), deposit.ref_id, tableId, u.userId, seat, 200n)).player_id));
  }
  return ids;
}

const periodicRuns = async () => (await db.owner.query<{ n: number }>('select count(*)::int as n from cage_private.audit_runs where periodic')).rows[0]!.n;

test('one queued periodic audit reads batch after batch until every link is covered, each run clean and recorded', async () => {
  const positions = await seatedPositions(3);
  const links = (await db.owner.query<{ links: number }>('select count(*)::int as links from game.position_links')).rows[0]!.links;
  expect(links).toBeGreaterThanOrEqual(3);
  const before = await periodicRuns();
  const { log } = captureLogger('debug');
  const pgPool = db.pool('poker_worker', 2);
  await quickAddJob({ pgPool }, 'cage_audit', { limit: 1 });
  // runOnce runs the jobs ready when it looks, the catch-up runs each queues included; run again while any is left (bounded)
  for (let i = 0; i < 4 * links; i++) {
    await runOnce({ pgPool, logger: workerLogger(log), taskList: { cage_audit: createCageAuditTask(log) } });
    const { rows: [q] } = await db.owner.query<{ n: number }>("select count(*)::int as n from graphile_worker.jobs where task_identifier = 'cage_audit'");
    if (q!.n === 0) break;
  }
  // one run per link (each read a full batch of one and queued the next), then one that found the rest empty
  expect((await periodicRuns()) - before).toBe(links + 1);
  const { rows } = await db.owner.query<{ player_id: string; seq: number; chain_length: number }>(
    `select p.id::text as player_id, m.seq, p.chain_length from game.table_players p
       left join cage_private.cause_position_marks m on m.player_id = p.id where p.id = any($1::bigint[])`, [positions]);
  for (const r of rows) expect(r.seq).toBe(r.chain_length);
  const { rows: [last] } = await db.owner.query<{ clean: boolean }>('select clean from cage_private.audit_runs where periodic order by id desc limit 1');
  expect(last!.clean).toBe(true);
  await expectCleanAudit(db.owner);
});

test('a periodic run that read less than its batch queues nothing', async () => {
  await seatedPositions(1);
  const { log } = captureLogger('debug');
  const pgPool = db.pool('poker_worker', 2);
  const before = await periodicRuns();
  await quickAddJob({ pgPool }, 'cage_audit', {});
  await runOnce({ pgPool, logger: workerLogger(log), taskList: { cage_audit: createCageAuditTask(log) } });
  expect((await periodicRuns()) - before).toBe(1);
  // runOnce can answer before the worker has deleted the job it ran (seen under load: the run's own
  // job still locked, attempts 1, no error): wait for it to go, then nothing is queued
  await eventually(async () => (await db.owner.query<{ n: number }>(
    "select count(*)::int as n from graphile_worker.jobs where task_identifier = 'cage_audit' and locked_at is not null")).rows[0]!.n === 0 || undefined, 10_000);
  const { rows: [q] } = await db.owner.query<{ n: number }>("select count(*)::int as n from graphile_worker.jobs where task_identifier = 'cage_audit'");
  expect(q!.n).toBe(0);
});
