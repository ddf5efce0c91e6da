// Password recovery under attack (issue 10): reset-password looks at the token before it hashes
// anything (an unknown, expired or used token costs no scrypt), and both recovery routes are
// limited per client address in the store every auth process shares.
import { randomBytes } from 'node:crypto';
import express from 'express';
import { startAuth } from '../../server/roles/auth.ts';
import { installPasswordResetRoutes } from '../../server/auth/password-reset.ts';
import { hashPassword } from '../../server/auth/passwords.ts';
import { createAttemptLimiter } from '../../server/auth/rate-limit.ts';
import { loadConfig } from '../../server/config/index.ts';
import { listen, type Listening } from '../../server/http/app.ts';
import { errorHandler } from '../../server/http/errors.ts';
import type { StartedRole } from '../../server/roles/types.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { captureLogger } from '../helpers/logs.ts';
import { pinTestMailKey, testMailKeyPem } from '../helpers/platform.ts';
import { loadMailKey } from '../../server/worker/mail-key.ts';
import { openResetLink } from '../../tasks/send_password_reset.ts';

const ORIGIN = 'https://admin.poker.test';
const log = captureLogger('silent').log;
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
  await db.owner.query('select auth.create_admin($1, $2)', ['admin@example.com', await hashPassword('the-old-password')]);
  await pinTestMailKey(db.url);
});
afterAll(async () => {
  await db?.drop();
});

const post = (url: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
/** A reset token for the admin, as the request makes it (in SQL), opened from the mail job it queued with the worker's key. */
async function issuedToken(ttlSeconds = 600) {
  await db.owner.query('select auth.request_password_reset($1, $2, $3)', ['admin@example.com', `${ORIGIN}/reset`, ttlSeconds]);
  const { rows } = await db.owner.query(
    `select j.payload from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
      where t.identifier = 'send_password_reset' order by j.id desc limit 1`,
  );
  const key = (await loadMailKey({ configuredPem: testMailKeyPem(), nodeEnv: 'test', pgDataDir: '' }))!;
  return new URL(openResetLink(key, rows[0].payload)!).searchParams.get('token')!;
}

describe('the token is looked at before the password is hashed', () => {
  let server: Listening;
  let hashes = 0;
  beforeAll(async () => {
    const pool = db.pool('poker_auth', 5);
    const app = express();
    app.use(express.json());
    installPasswordResetRoutes(app, {
      pool, log, ttlSeconds: 600,
      settings: { baseUrl: ORIGIN, domain: 'admin.poker.test', trustedOrigins: new Set([ORIGIN]) },
      limiter: createAttemptLimiter(pool, { windowSeconds: 900, signInPerAccount: 10, signInPerPeer: 100, recoveryPerPeer: 1000 }, log),
      hashPassword: (password) => {
        hashes++;
        return hashPassword(password);
      },
    });
    app.use(errorHandler(log));
    server = await listen(app, '127.0.0.1', 0);
  });
  afterAll(async () => {
    await server?.close();
  });

  test('unknown, expired and used tokens answer their codes without hashing; a live one hashes once', async () => {
    const reset = (token: string) => post(server.url, '/api/auth/reset-password', { newPassword: 'a-brand-new-password', token });
    const unknown = await Promise.all(Array.from({ length: 20 }, () => reset(randomBytes(32).toString('base64url'))));
    expect(unknown.map((r) => r.status)).toEqual(Array(20).fill(400));
    expect(await unknown[0]!.json()).toEqual({ error: 'reset_token_invalid' });

    const expired = await issuedToken();
    await db.owner.query("update auth_private.verifications set expires_at = now() - interval '1 second' where identifier like 'reset:%'");
    expect(await (await reset(expired)).json()).toEqual({ error: 'reset_token_expired' });
    expect(hashes).toBe(0);

    const live = await issuedToken();
    expect((await reset(live)).status).toBe(200);
    expect(hashes).toBe(1);
    expect(await (await reset(live)).json()).toEqual({ error: 'reset_token_invalid' });
    expect(hashes).toBe(1);
  });
});

describe('both recovery routes are limited per client address', () => {
  let role: StartedRole;
  beforeAll(async () => {
    role = await startAuth({
      config: loadConfig({
        NODE_ENV: 'test', PORT: '0', AUTH_SECRET: 'reset-limit-secret-0123456789abcdefghij', AUTH_BASE_URL: 'https://auth.poker.test',
        AUTH_TRUSTED_ORIGINS: ORIGIN, AUTH_RECOVERY_LIMIT_PER_PEER: '4', TRUST_PROXY: 'loopback',
      }),
      databaseUrl: db.url, log,
    });
  });
  afterAll(async () => {
    await role?.stop();
  });

  test('a peer over its budget gets 429 with Retry-After on either route; another peer does not', async () => {
    const attacker = { 'x-forwarded-for': '198.51.100.31' };
    const guess = () => post(role.url!, '/api/auth/reset-password', { newPassword: 'a-brand-new-password', token: randomBytes(32).toString('base64url') }, attacker);
    const answers = await Promise.all(Array.from({ length: 30 }, guess));
    expect(answers.filter((r) => r.status === 400)).toHaveLength(4);
    expect(answers.filter((r) => r.status === 429)).toHaveLength(26);
    const refused = answers.find((r) => r.status === 429)!;
    expect(await refused.json()).toEqual({ error: 'too_many_attempts' });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);

    const mailBomb = await post(role.url!, '/api/auth/request-password-reset', { email: 'admin@example.com', redirectTo: `${ORIGIN}/r` }, attacker);
    expect(mailBomb.status).toBe(429);

    const owner = { 'x-forwarded-for': '203.0.113.31' };
    expect((await post(role.url!, '/api/auth/request-password-reset', { email: 'admin@example.com', redirectTo: `${ORIGIN}/r` }, owner)).status).toBe(200);
    const live = await issuedToken();
    expect((await post(role.url!, '/api/auth/reset-password', { newPassword: 'a-brand-new-password', token: live }, owner)).status).toBe(200);
  });
});
