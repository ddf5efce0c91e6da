// Legacy password recovery for admin accounts, with a local stand-in for the mail API. The token is
// made in SQL and mailed by the worker (the auth role never holds it): both roles run here.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hashPassword } from '../../server/auth/passwords.ts';
import { finishedSpans, installTelemetry, shutdownTelemetry } from '../../server/telemetry/index.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { captureLogger } from '../helpers/logs.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';

const ORIGIN = 'https://admin.poker.test';
let db: TestDatabase;
let platform: TestPlatform;
let role: { url: string };
let mail: Server;
let mailUp = true;
const sent: { to: string; text: string }[] = [];
beforeAll(async () => {
  await installTelemetry({ serviceName: 'reset-test', memory: true });
  db = await createTestDatabase();
  await db.owner.query('select auth.create_admin($1, $2)', ['admin@example.com', await hashPassword('the-old-password')]);
  mail = createServer((req, res) => {
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => {
      if (!mailUp) return void res.writeHead(503).end();
      sent.push(JSON.parse(data));
      res.writeHead(202).end();
    });
  });
  await new Promise<void>((r) => mail.listen(0, '127.0.0.1', r));
  platform = await startTestPlatform({
    databaseUrl: db.url, roles: ['auth', 'worker'], log: captureLogger('silent').log,
    env: {
      AUTH_SECRET: 'reset-test-secret-0123456789abcdefghij', AUTH_BASE_URL: 'https://auth.poker.test',
      AUTH_TRUSTED_ORIGINS: ORIGIN, AUTH_MAIL_WEBHOOK_URL: `http://127.0.0.1:${(mail.address() as AddressInfo).port}/send`,
    },
  });
  role = { url: platform.url('auth') };
});
afterAll(async () => {
  await platform?.stop();
  await new Promise((r) => mail.close(r));
  await db?.drop();
  await shutdownTelemetry();
});

const post = (path: string, body: unknown) =>
  fetch(`${role.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const request = (email: string) => post('/api/auth/request-password-reset', { email, redirectTo: `${ORIGIN}/reset` });
async function tokenFromMail(count: number) {
  const deadline = Date.now() + 15_000;
  while (sent.length < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  return new URL(/https:\/\/\S+/.exec(sent[count - 1]!.text)![0]).searchParams.get('token')!;
}
const signIn = (password: string) => post('/api/auth/sign-in/email', { email: 'admin@example.com', password });

test('known and unknown emails get the same answer; only the known one gets mail', async () => {
  const known = await request('admin@example.com');
  const unknown = await request('nobody@example.com');
  expect([known.status, unknown.status]).toEqual([200, 200]);
  expect(await known.json()).toEqual(await unknown.json());
  await tokenFromMail(1);
  expect(sent.map((m) => m.to)).toEqual(['admin@example.com']);
});

test('a reset sets the password, revokes the sessions, and the token works once', async () => {
  const session = (await (await signIn('the-old-password')).json()) as { token: string };
  const before = sent.length;
  await request('admin@example.com');
  const token = await tokenFromMail(before + 1);
  expect((await post('/api/auth/reset-password', { newPassword: 'the-new-password', token })).status).toBe(200);
  expect((await signIn('the-old-password')).status).toBe(401);
  expect((await signIn('the-new-password')).status).toBe(200);
  const old = await fetch(`${role.url}/api/auth/get-session`, { headers: { authorization: `Bearer ${session.token}` } });
  expect(await old.json()).toBeNull();
  const reused = await post('/api/auth/reset-password', { newPassword: 'another-new-password', token });
  expect(reused.status).toBe(400);
  expect(await reused.json()).toEqual({ error: 'reset_token_invalid' });
});

test('an expired token is coded', async () => {
  const before = sent.length;
  await request('admin@example.com');
  const token = await tokenFromMail(before + 1);
  await db.owner.query("update auth_private.verifications set expires_at = now() - interval '1 second' where identifier like 'reset:%'");
  const res = await post('/api/auth/reset-password', { newPassword: 'yet-another-password', token });
  expect(res.status).toBe(400);
  expect(await res.json()).toEqual({ error: 'reset_token_expired' });
});

test('a transport outage changes nothing in the answer and shows in telemetry', async () => {
  mailUp = false;
  try {
    const res = await request('admin@example.com');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: true });
    const deadline = Date.now() + 15_000;
    while (!finishedSpans().some((s) => s.attributes['error.code'] === 'mail_transport_failed') && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(finishedSpans().some((s) => s.name === 'auth.password_reset.mail' && s.attributes['error.code'] === 'mail_transport_failed')).toBe(true);
  } finally {
    mailUp = true;
  }
});

test('an untrusted redirect and a malformed token are 400s', async () => {
  expect((await post('/api/auth/request-password-reset', { email: 'admin@example.com', redirectTo: 'https://evil.test/x' })).status).toBe(400);
  expect((await post('/api/auth/request-password-reset', { email: 'admin@example.com', redirectTo: '/relative' })).status).toBe(400);
  expect((await post('/api/auth/reset-password', { newPassword: 'long-enough-password', token: 'short' })).status).toBe(400);
});

test('the auth role never holds a reset token: it is made in SQL and leaves only in the worker\'s mail job', async () => {
  const before = sent.length;
  const auth = db.pool('poker_auth', 1);
  // the auth login asks for a reset: it gets no token back, and reads no job
  const { rows } = await auth.query("select auth.request_password_reset('admin@example.com', $1, 3600) as queued", [`${ORIGIN}/reset`]);
  expect(rows).toEqual([{ queued: true }]);
  await expect(auth.query('select payload from graphile_worker._private_jobs')).rejects.toMatchObject({ code: '42501' });
  await expect(auth.query('select * from auth_private.verifications')).rejects.toMatchObject({ code: '42501' });
  // the mail carries it; only its hash is stored
  const token = await tokenFromMail(before + 1);
  expect(token).toMatch(/^[\w-]{43}$/);
  const { rows: stored } = await db.owner.query("select identifier from auth_private.verifications where identifier like 'reset:%'");
  expect(stored.some((r) => r.identifier.includes(token))).toBe(false);
});

test('issue 31, class 6: the worker login reads the job but no token; a seal copied into a forged job mails nothing to the thief', async () => {
  const thief = db.pool('poker_worker', 1);
  // a reset whose job waits (the owner puts it off, as a busy or stopped worker would leave it)
  const client = await db.owner.connect();
  try {
    await client.query('begin');
    await client.query("select auth.request_password_reset('admin@example.com', $1, 3600)", [`${ORIGIN}/reset`]);
    await client.query(`update graphile_worker._private_jobs set run_at = now() + interval '1 hour'
                         where task_id = (select id from graphile_worker._private_tasks where identifier = 'send_password_reset')`);
    await client.query('commit');
  } finally {
    client.release();
  }
  const { rows: [job] } = await thief.query<{ id: string; payload: { to: string; redirect: string; sealed: string } }>(
    "select j.id::text, j.payload from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id where t.identifier = 'send_password_reset'",
  );
  expect(Object.keys(job!.payload).sort()).toEqual(['redirect', 'sealed', 'to']);
  expect(JSON.stringify(job!.payload)).not.toMatch(/token=/);
  // the thief re-addresses the waiting job: its payload is the queuer's
  await thief.query("update graphile_worker._private_jobs set payload = jsonb_set(payload::jsonb, '{to}', '\"thief@example.com\"')::json where id = $1", [job!.id]);
  // ... and forges jobs from the copied seal: to the thief, and to the admin with the thief's link
  const before = sent.length;
  for (const forged of [{ ...job!.payload, to: 'thief@example.com' }, { ...job!.payload, redirect: 'https://evil.test/reset' }]) {
    const { rows } = await thief.query<{ id: string }>("select (graphile_worker.add_job('send_password_reset', $1::json, max_attempts => 1)).id::text as id", [JSON.stringify(forged)]);
    for (let i = 0; i < 300; i++) {
      if ((await db.owner.query('select 1 from graphile_worker._private_jobs where id = $1', [rows[0]!.id])).rowCount === 0) break;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  // the real job, due now, mails the admin a token that works
  await db.owner.query('update graphile_worker._private_jobs set run_at = now() where id = $1', [job!.id]);
  const token = await tokenFromMail(before + 1);
  expect(sent.slice(before).map((m) => m.to)).toEqual(['admin@example.com']);
  expect(sent.slice(before).some((m) => m.text.includes('evil.test'))).toBe(false);
  expect((await post('/api/auth/reset-password', { newPassword: 'a-password-after-the-attack', token })).status).toBe(200);
});
