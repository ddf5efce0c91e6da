// Issue 31, class 5 ("Limits that live in TypeScript"): the sign-in attempt limit is enforced inside
// the SQL that checks the secret. Tried as a thief holding only the auth login's password (connected
// from outside with loginUrl): unlimited password guesses straight through the SQL (made-up addresses,
// raised limits, a check rolled back with its count, a ticket reused for another key), and the
// counters used to lock the real admin out. Before the fix auth.create_session(email, key, ...) took
// any number of guesses and auth.count_attempt counted any key (the admin's address's): both attacks
// succeeded (this file's first version, in git history).
import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import { derivePasswordKey, hashPassword } from '../../server/auth/passwords.ts';
import { loadConfig } from '../../server/config/index.ts';
import { loginUrl } from '../../server/db/roles.ts';
import { startAuth } from '../../server/roles/auth.ts';
import type { StartedRole } from '../../server/roles/types.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { captureLogger } from '../helpers/logs.ts';

let db: TestDatabase;
let thief: pg.Client;
let role: StartedRole;
const EMAIL = 'the-admin@example.com';
const PASSWORD = 'the-admins-real-password';
const ACCOUNT_CEILING = 30; // failures per hour per account whatever the address (db/functions/auth/70_attempt_limits.sql)

beforeAll(async () => {
  db = await createTestDatabase();
  await db.owner.query('select auth.create_admin($1, $2)', [EMAIL, await hashPassword(PASSWORD)]);
  thief = new pg.Client({ connectionString: loginUrl(db.url, 'poker_auth', undefined) });
  await thief.connect();
  role = await startAuth({
    config: loadConfig({ NODE_ENV: 'test', PORT: '0', AUTH_SECRET: 'attacks-limits-secret-0123456789abcdef', AUTH_BASE_URL: 'http://auth.test.local' }),
    databaseUrl: db.url, log: captureLogger('silent').log,
  });
});
afterAll(async () => {
  await role?.stop();
  await thief?.end();
  await db?.drop();
});

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest();
async function keyOf(password: string) {
  const { rows } = await thief.query<{ params: string }>('select params from auth.admin_password_params($1)', [EMAIL]);
  return derivePasswordKey(password, rows[0]!.params);
}
/** Counts an attempt as the thief (made-up address, the largest limits he may name) and binds it to a key. */
async function count(key: Buffer, peer = `203.0.113.${Math.floor(Math.random() * 250)}`, client: pg.Client | pg.PoolClient = thief) {
  const { rows } = await client.query<{ ticket: string | null; retry_after: number }>(
    'select * from auth.count_sign_in($1, $2, null, 2147483647, 2147483647, 1)', [EMAIL, peer],
  );
  if (rows[0]!.ticket) await client.query('select auth.bind_sign_in($1, $2)', [rows[0]!.ticket, sha256(key)]);
  return rows[0]!;
}
const open = (ticket: string | null, key: Buffer, client: pg.Client | pg.PoolClient = thief) =>
  client.query('select * from auth.create_session($1, $2, $3, 3600, null)', [ticket, key, sha256(randomBytes(32))])
    .then(() => 'ok', (err: { message: string }) => err.message);
const signIn = (password: string, cookie?: string) =>
  fetch(`${role.url}/api/auth/sign-in/email`, {
    method: 'POST', headers: { 'content-type': 'application/json', ...(cookie ? { cookie } : {}) }, body: JSON.stringify({ email: EMAIL, password }),
  });

test('class 5: the auth login cannot guess an admin\'s password without limit through the SQL that checks it', async () => {
  // an admin's browser signed in once before the attack: it holds a device cookie
  const first = await signIn(PASSWORD);
  expect(first.status).toBe(200);
  const device = /poker_device=([\w-]{43})/.exec(first.headers.getSetCookie().join('\n'))![1]!;

  const wrong = await keyOf('not-the-password');
  // a check without a counted attempt, or rolled back with its count, or a ticket reused for another key
  expect(await open(null, wrong)).toBe('invalid_attempt');
  const tx = await db.pool('poker_auth', 1).connect();
  try {
    await tx.query('begin');
    const counted = await count(wrong, '198.51.100.1', tx);
    expect(await open(counted.ticket, wrong, tx)).toBe('invalid_attempt');
    await tx.query('rollback');
  } finally {
    tx.release();
  }
  const ticket = (await count(wrong)).ticket;
  expect(await open(ticket, await keyOf(PASSWORD))).toBe('invalid_attempt');
  const rebound = await thief.query('select auth.bind_sign_in($1, $2)', [ticket, sha256(await keyOf(PASSWORD))])
    .then(() => 'bound', (err: { message: string }) => err.message);
  expect(rebound).toBe('invalid_attempt');

  // guesses spread over made-up addresses with the largest limits: the account's ceiling holds
  const answers: string[] = [];
  for (let i = 0; i < 60; i++) {
    const c = await count(wrong);
    answers.push(c.ticket ? await open(c.ticket, wrong) : `wait ${c.retry_after > 0}`);
  }
  expect(answers.filter((a) => a === 'invalid_credentials').length).toBeLessThanOrEqual(ACCOUNT_CEILING);
  expect(answers.at(-1)).toBe('wait true');
  // the right password, tried now, is never checked: the thief cannot tell it is right
  const right = await keyOf(PASSWORD);
  const last = await count(right);
  expect(last.ticket).toBeNull();
  // over HTTP without the device cookie the admin waits too (the trade-off, docs/decisions.md) ...
  expect((await signIn(PASSWORD)).status).toBe(429);
  // ... but from the browser she signed in with before, the flood of failures does not lock her out
  expect((await signIn(PASSWORD, `poker_device=${device}`)).status).toBe(200);
});

test('class 5: no service login counts or clears an account\'s sign-in attempts outside the sign-in flow', async () => {
  const accountKey = createHash('sha256').update(EMAIL).digest('base64url');
  const counted = await thief.query('select auth.count_attempt($1, 900)', [`sign-in:account:127.0.0.1:${accountKey}`])
    .then(() => 'counted', (err: { message: string }) => err.message);
  expect(counted).toBe('invalid_attempt');
  const cleared = await thief.query("select auth.clear_sign_in_attempts(decode(repeat('ab', 32), 'hex'), 'sign-in:account:x')")
    .then(() => 'cleared', (err: { code: string }) => err.code);
  expect(cleared).toBe('42883');
  for (const table of ['auth_private.sign_in_attempts', 'auth_private.sign_in_tickets', 'auth_private.sign_in_devices', 'auth_private.mail_keys']) {
    for (const login of ['poker_auth', 'poker_worker', 'poker_cage', 'poker_game'] as const) {
      await expect(db.pool(login, 1).query(`select * from ${table}`)).rejects.toMatchObject({ code: '42501' });
    }
  }
  // a device is known only by a success: a guessed or made-up cookie is no device
  const { rows } = await thief.query<{ bucket: string }>(
    "select 1 from auth.count_sign_in($1, '192.0.2.9', $2, 10, 10, 60)", [EMAIL, randomBytes(32).toString('base64url')],
  );
  expect(rows).toHaveLength(1);
  expect((await db.owner.query("select count(*)::int as n from auth_private.sign_in_attempts where bucket like 'device:%'")).rows[0].n).toBe(0);
});
