// Issue 31, class 6 ("The job queue as an attack surface"), tried as a thief holding only the worker
// login's password (poker_worker, connected from outside with loginUrl) and the public HTTP routes:
// (a) read the password-reset job's payload, reset the operator's password with what it holds, sign
//     in as the operator and switch real money on;
// (b) rename a task so its jobs park under a running worker (the periodic audit falls silent);
// (c) re-route, re-key, re-time or rewrite the payload of another task's job; rewrite the queue's
//     bookkeeping (tasks, crontab marks, migrations); run graphile-worker's admin functions.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { hashPassword } from '../../server/auth/passwords.ts';
import { loginUrl } from '../../server/db/roles.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { captureLogger } from '../helpers/logs.ts';
import { pinTestMailKey, startTestPlatform, type TestPlatform } from '../helpers/platform.ts';

const ORIGIN = 'https://admin.poker.test';
const EMAIL = 'operator@example.com';
let db: TestDatabase;
let platform: TestPlatform;
let thief: pg.Client;

beforeAll(async () => {
  db = await createTestDatabase();
  await db.owner.query('select auth.create_admin($1, $2)', [EMAIL, await hashPassword('the-operators-password')]);
  await db.owner.query("insert into cage.switches (name, enabled) values ('real_money', false) on conflict (name) do update set enabled = false");
  platform = await startTestPlatform({
    databaseUrl: db.url, roles: ['auth', 'cage'], log: captureLogger('silent').log,
    env: { AUTH_SECRET: 'queue-attack-secret-0123456789abcdefgh', AUTH_BASE_URL: 'https://auth.poker.test', AUTH_TRUSTED_ORIGINS: ORIGIN },
  });
  // the worker's mail key, pinned by the owner as the migrating process does (no worker runs yet: the
  // reset job waits in the queue, as it does whenever the worker is down, busy or parked)
  await pinTestMailKey(db.url);
  thief = new pg.Client({ connectionString: loginUrl(db.url, 'poker_worker', undefined) });
  await thief.connect();
});
afterAll(async () => {
  await thief?.end();
  await platform?.stop();
  await db?.drop();
});

const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
/** 'ok', or the SQLSTATE the statement met. */
const outcome = (sql: string, params: unknown[] = []) => thief.query(sql, params).then(() => 'ok', (err: { code: string }) => err.code);

test('class 6 (a): the worker login reads a reset token from the mail job, takes the operator over and switches real money on', async () => {
  const auth = platform.url('auth');
  expect((await post(`${auth}/api/auth/request-password-reset`, { email: EMAIL, redirectTo: `${ORIGIN}/reset` })).status).toBe(200);
  // the thief reads every job's payload and tries every token-shaped string in it
  const { rows } = await thief.query<{ payload: string }>('select payload::text from graphile_worker._private_jobs');
  expect(rows.length).toBeGreaterThan(0);
  const candidates = [...new Set(rows.flatMap((r) => r.payload.match(/[\w-]{43}/g) ?? []))];
  const taken: string[] = [];
  for (const token of candidates) {
    const res = await post(`${auth}/api/auth/reset-password`, { newPassword: 'the-thiefs-password', token });
    if (res.status === 200) taken.push(token);
  }
  const session = await post(`${auth}/api/auth/sign-in/email`, { email: EMAIL, password: 'the-thiefs-password' });
  if (session.status === 200) {
    const { token } = (await session.json()) as { token: string };
    const jwt = (await (await fetch(`${auth}/api/auth/token`, { headers: { authorization: `Bearer ${token}` } })).json()) as { token: string };
    await post(`${platform.url('cage')}/api/operator/switches`, { name: 'real_money', enabled: true }, { authorization: `Bearer ${jwt.token}` });
  }
  expect({ taken, signedIn: session.status }).toEqual({ taken: [], signedIn: 401 });
  const { rows: [sw] } = await db.owner.query("select enabled from cage.switches where name = 'real_money'");
  expect(sw.enabled).toBe(false);
});

test('class 6 (c): the worker login cannot re-route, re-key, re-time or rewrite another task\'s job', async () => {
  const key = `tournament:attack-${randomUUID().slice(0, 8)}:settle`;
  // a job as SQL queues it (the owner's function), due in an hour
  await db.owner.query(
    "select graphile_worker.add_job('tournament_settle', json_build_object('tableId', 'real-table'), run_at => now() + interval '1 hour', job_key => $1, max_attempts => 1000)",
    [key],
  );
  const job = async () => (await db.owner.query(
    'select j.task_id, t.identifier, j.payload::text, j.key, j.job_queue_id, j.max_attempts, j.priority, j.flags from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id where j.key = $1',
    [key],
  )).rows[0];
  const before = await job();
  await thief.query("select graphile_worker.add_job('deliver_condition', '{}'::json, run_at => now() + interval '1 hour')").catch(() => undefined);
  const attempts = {
    retask: await outcome("update graphile_worker._private_jobs set task_id = (select id from graphile_worker._private_tasks where identifier = 'deliver_condition') where key = $1", [key]),
    requeue: await outcome("with q as (insert into graphile_worker._private_job_queues (queue_name) values ('parked-' || gen_random_uuid()) returning id) update graphile_worker._private_jobs set job_queue_id = (select id from q) where key = $1", [key]),
    postpone: await outcome("update graphile_worker._private_jobs set run_at = now() + interval '100 years' where key = $1", [key]),
    rekey: await outcome("update graphile_worker._private_jobs set key = 'somewhere-else' where key = $1", [key]),
    repayload: await outcome("update graphile_worker._private_jobs set payload = '{\"tableId\":\"forged\"}' where key = $1", [key]),
    reroute: await outcome("select graphile_worker.add_job('deliver_condition', '{}'::json, job_key => $1)", [key]),
    relock: await outcome("update graphile_worker._private_jobs set locked_at = now() + interval '100 years', locked_by = 'thief' where key = $1", [key]),
    // the same task under the same key with a forged payload, put off for a century
    rewrite: await outcome("select graphile_worker.add_job('tournament_settle', '{\"tableId\":\"forged\"}'::json, job_key => $1, run_at => now() + interval '100 years', max_attempts => 1)", [key]),
    // ... or due now: graphile-worker's own replace, which refreshes the schedule and keeps the payload
    rewriteNow: await outcome("select graphile_worker.add_job('tournament_settle', '{\"tableId\":\"forged\"}'::json, job_key => $1, max_attempts => 1, priority => -100)", [key]),
  };
  // a direct payload write and a replace by key are accepted and change nothing of the payload
  expect(attempts).toEqual({
    retask: 'CGJRW', requeue: 'CGJRW', postpone: 'CGJRW', rekey: 'CGJRW', repayload: 'ok', reroute: 'CGJRW', relock: 'CGJRW', rewrite: 'CGJRW', rewriteNow: 'ok',
  });
  expect(await job()).toEqual(before);
});

test('class 6 (b): a task renamed under a running worker parks its jobs: the periodic audit falls silent', async () => {
  const worker = await startTestPlatform({ databaseUrl: db.url, roles: ['worker'], log: captureLogger('silent').log });
  try {
    const pending = async () => (await db.owner.query(
      "select count(*)::int as n from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id where t.identifier = 'cage_audit' and j.run_at <= now()",
    )).rows[0].n as number;
    const drained = async () => {
      for (let i = 0; i < 300 && (await pending()) > 0; i++) await new Promise((r) => setTimeout(r, 50));
      return pending();
    };
    expect(await drained()).toBe(0); // the startup audit ran
    const rename = await outcome("update graphile_worker._private_tasks set identifier = 'cage_audit_parked' where identifier = 'cage_audit'");
    // the next audit, queued as the crontab queues it
    await db.owner.query("select graphile_worker.add_job('cage_audit', '{}'::json)");
    expect({ rename, pendingAudits: await drained() }).toEqual({ rename: '42501', pendingAudits: 0 });
  } finally {
    await worker.stop();
  }
});

test('class 6 (b): a NOTIFY any login may send does not stop the running worker (graphile-worker shuts down on a "breaking migration" notice)', async () => {
  const worker = await startTestPlatform({ databaseUrl: db.url, roles: ['worker'], log: captureLogger('silent').log });
  const game = new pg.Client({ connectionString: loginUrl(db.url, 'poker_game', undefined) });
  await game.connect();
  try {
    const pending = async () => (await db.owner.query(
      "select count(*)::int as n from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id where t.identifier = 'cage_audit' and j.run_at <= now()",
    )).rows[0].n as number;
    const drained = async () => {
      for (let i = 0; i < 300 && (await pending()) > 0; i++) await new Promise((r) => setTimeout(r, 50));
      return pending();
    };
    expect(await drained()).toBe(0);
    // the game login (any login: NOTIFY takes no privilege) announces a breaking migration that never happened
    await game.query(`select pg_notify('worker:migrate', '{"migrationNumber": 999, "breaking": true}')`);
    await game.query(`notify "worker:migrate", '{"migrationNumber": 998, "breaking": true}'`);
    // the worker's listener has had them when a job queued after them is taken; then the next audit
    await db.owner.query("select graphile_worker.add_job('cage_audit', '{}'::json)");
    expect(await drained()).toBe(0);
    await db.owner.query("select graphile_worker.add_job('cage_audit', '{}'::json)");
    expect(await drained()).toBe(0);
  } finally {
    await game.end();
    await worker.stop().catch(() => undefined);
  }
});

test('class 6 (b, c): the worker login cannot rename, delete or add to the queue\'s bookkeeping, nor run its admin functions', async () => {
  // a task row exists for every identifier a job was ever queued under
  await db.owner.query("select graphile_worker.add_job('cage_audit', '{}'::json, run_at => now() + interval '1 hour')");
  const tasks = async () => (await db.owner.query('select id, identifier from graphile_worker._private_tasks order by id')).rows;
  const before = await tasks();
  const attempts = {
    rename: await outcome("update graphile_worker._private_tasks set identifier = identifier || '_parked'"),
    deleteTasks: await outcome('delete from graphile_worker._private_tasks'),
    crontabFuture: await outcome("insert into graphile_worker._private_known_crontabs (identifier, known_since, last_execution) values ('cage_audit', now(), now() + interval '100 years') on conflict (identifier) do update set last_execution = excluded.last_execution"),
    migrations: await outcome('delete from graphile_worker.migrations'),
    removeJob: await outcome("select graphile_worker.remove_job('x')"),
    reschedule: await outcome("select graphile_worker.reschedule_jobs(array(select id from graphile_worker._private_jobs), run_at => now() + interval '100 years')"),
    failJobs: await outcome('select graphile_worker.permanently_fail_jobs(array(select id from graphile_worker._private_jobs))'),
    completeJobs: await outcome('select graphile_worker.complete_jobs(array(select id from graphile_worker._private_jobs))'),
  };
  expect(attempts).toEqual({
    rename: '42501', deleteTasks: '42501', crontabFuture: 'CGJRW', migrations: '42501',
    removeJob: '42501', reschedule: '42501', failJobs: '42501', completeJobs: '42501',
  });
  expect(await tasks()).toEqual(before);
});
