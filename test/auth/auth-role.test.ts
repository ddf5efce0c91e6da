// The auth role over real HTTP: closed creation paths, the JWKS (checked by jose's remote JWKS) and
// invite minting with its service-key rules and span.
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { startAuth } from '../../server/roles/auth.ts';
import { ed25519 } from '@noble/curves/ed25519.js';
import { createKeyStore } from '../../server/auth/keys.ts';
import { DEV_DB_ROLE_SECRET } from '../../server/db/roles.ts';
import { testRoleKey } from '../helpers/keys.ts';
import { loadConfig } from '../../server/config/index.ts';
import type { StartedRole } from '../../server/roles/types.ts';
import { finishedSpans, installTelemetry, resetSpans, shutdownTelemetry } from '../../server/telemetry/index.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { captureLogger, type LogLine } from '../helpers/logs.ts';

const SERVICE_KEY = 'auth-role-test-service-key-0123';
const SECRET = 'auth-role-test-secret-0123456789abcdef';
const env = { NODE_ENV: 'test', PORT: '0', SERVICE_KEY, AUTH_SECRET: SECRET, AUTH_BASE_URL: 'http://auth.test.local' };
let db: TestDatabase;
let role: StartedRole;
let lines: LogLine[];
beforeAll(async () => {
  await installTelemetry({ serviceName: 'auth-role-test', memory: true });
  db = await createTestDatabase();
  const captured = captureLogger('info');
  lines = captured.lines;
  role = await startAuth({ config: loadConfig(env), databaseUrl: db.url, log: captured.log });
});
afterAll(async () => {
  await role?.stop();
  await db?.drop();
  await shutdownTelemetry();
});
beforeEach(() => resetSpans());

const userCount = async () => (await db.owner.query('select count(*)::int as n from auth.users')).rows[0].n as number;

/** A raw request: the path goes on the wire exactly as written (fetch would normalise it). */
function raw(method: string, path: string, body?: string): Promise<{ status: number; body: string }> {
  const url = new URL(role.url!);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, method, path, headers: body ? { 'content-type': 'application/json' } : {} }, (res) => {
      let data = '';
      res.on('data', (c) => (data += c));
      res.on('end', () => resolve({ status: res.statusCode!, body: data }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('closed creation paths', () => {
  test.each([
    ['POST', '/api/auth/sign-up/email'],
    ['GET', '/api/auth/sign-up/email/'],
    ['PUT', '/API/AUTH/SIGN-UP/EMAIL'],
    ['POST', '/api/auth/sign%2Dup/email'],
    ['POST', '//api//auth/./sign-up/email'],
    ['POST', '/api/x/../auth/sign-up/email'],
    ['POST', '/api/auth/sign-up;a=b/email?c=d'],
    ['POST', '/api/auth/siwe/verify'],
    ['DELETE', '/api/auth/sign-in/social/'],
    ['POST', '/api/auth/callback/google'],
    ['OPTIONS', '/api/auth/callback%2Fgoogle'],
  ])('%s %s: 403 account_creation_disabled, a WARN with the marker, no row', async (method, path) => {
    const before = await userCount();
    const res = await raw(method, path, method === 'POST' ? '{"email":"a@b.c","password":"x"' : undefined);
    expect(res.status).toBe(403);
    expect(JSON.parse(res.body)).toEqual({ error: 'account_creation_disabled' });
    expect(lines.some((l) => l.level === 40 && l.marker === 'auth.blocked_path' && l.path === path)).toBe(true);
    expect(await userCount()).toBe(before);
  });
});

test('the JWKS verifies a token through jose\'s remote JWKS and holds no private part', async () => {
  const res = await fetch(`${role.url}/api/auth/jwks`);
  expect(res.status).toBe(200);
  const jwks = (await res.json()) as { keys: Record<string, unknown>[] };
  expect(jwks.keys.length).toBeGreaterThan(0);
  for (const k of jwks.keys) expect(k).not.toHaveProperty('d');
  const token = await createKeyStore(db.pool('poker_auth', 1), { privateKey: await testRoleKey('auth'), issuer: 'http://auth.test.local' }).sign({ sub: randomUUID() });
  const { payload } = await jwtVerify(token, createRemoteJWKSet(new URL(`${role.url}/api/auth/jwks`)), {
    issuer: 'http://auth.test.local', audience: 'http://auth.test.local', algorithms: ['EdDSA'], requiredClaims: ['exp', 'iat', 'sub'],
  });
  expect(payload.iss).toBe('http://auth.test.local');
});

describe('POST /admin/invite-codes', () => {
  /** The auth.invite.mint spans since the last reset: one per call, failed ones with invite_mint_failed. */
  const mintSpans = () => finishedSpans().filter((s) => s.name === 'auth.invite.mint').map((s) => s.attributes['error.code'] ?? 'ok');
  const mint = (body: unknown, key: string | null = SERVICE_KEY) =>
    fetch(`${role.url}/admin/invite-codes`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(key === null ? {} : { 'x-service-key': key }) },
      body: JSON.stringify(body),
    });

  test('201 with the spec defaults, and one auth.invite.mint span', async () => {
    const res = await mint({});
    expect(res.status).toBe(201);
    const invite = (await res.json()) as { code: string; maxUses: number; expiresAt: string | null; createdAt: string };
    expect(invite).toMatchObject({ maxUses: 1, expiresAt: null });
    expect(invite.code).toMatch(/^[\w-]{22}$/);
    expect(finishedSpans().filter((s) => s.name === 'auth.invite.mint')).toHaveLength(1);
    const row = (await db.owner.query('select created_by, current_uses from auth.invite_codes where code = $1', [invite.code])).rows[0];
    expect(row).toEqual({ created_by: 'admin', current_uses: 0 });
  });

  test('maxUses, a negative lifetime (already expired) and createdBy are honoured; extra fields are ignored', async () => {
    const res = await mint({ maxUses: 3, expiresInSeconds: -10, createdBy: 'ops-bot', role: 'admin' });
    expect(res.status).toBe(201);
    const invite = (await res.json()) as { maxUses: number; expiresAt: string };
    expect(invite.maxUses).toBe(3);
    expect(new Date(invite.expiresAt).getTime()).toBeLessThan(Date.now());
  });

  test.each([
    ['missing', null],
    ['wrong', 'wrong-service-key-0123456789abc'],
    ['short', 'x'],
    ['empty', ''],
  ])('a %s service key is 401 and mints nothing', async (_name, key) => {
    const before = (await db.owner.query('select count(*)::int as n from auth.invite_codes')).rows[0].n;
    resetSpans();
    const res = await mint({}, key);
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ error: 'invalid_service_key' });
    expect(mintSpans()).toEqual(['invite_mint_failed']);
    expect((await db.owner.query('select count(*)::int as n from auth.invite_codes')).rows[0].n).toBe(before);
  });

  test.each([
    [{ maxUses: 0 }],
    [{ maxUses: 1.5 }],
    [{ maxUses: '2' }],
    [{ expiresInSeconds: 'soon' }],
    [{ createdBy: '' }],
  ])('invalid body %o is a 400 with issues', async (body) => {
    resetSpans();
    const res = await mint(body);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: 'validation_failed', issues: [expect.objectContaining({ path: expect.any(Array) })] });
    expect(mintSpans()).toEqual(['invite_mint_failed']);
  });

  test('503 when no service key is configured', async () => {
    const other = await createTestDatabase();
    const unconfigured = await startAuth({
      config: loadConfig({ ...env, SERVICE_KEY: '' }), databaseUrl: other.url, log: captureLogger('silent').log,
    });
    try {
      resetSpans();
      const res = await fetch(`${unconfigured.url}/admin/invite-codes`, { method: 'POST', headers: { 'x-service-key': 'anything-at-all-000' } });
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({ error: 'service_key_not_configured' });
      expect(mintSpans()).toEqual(['invite_mint_failed']);
    } finally {
      await unconfigured.stop();
      await other.drop();
    }
  });
});

test('the role refuses to start without its JWT key in production, with an unpinned one, and in production without its base URL and domain', async () => {
  const log = captureLogger('silent').log;
  const production = { NODE_ENV: 'production', PORT: '0', DB_ROLE_SECRET: DEV_DB_ROLE_SECRET, AUTH_BASE_URL: 'https://auth.example.com', AUTH_DOMAIN: 'example.com' };
  await expect(startAuth({ config: loadConfig(production), databaseUrl: db.url, log })).rejects.toThrow(/AUTH_JWT_KEY: required in production/);
  // a key nobody pinned: the role signs nothing with it, and says how to pin it
  const unpinned = Buffer.from(ed25519.utils.randomSecretKey()).toString('hex');
  await expect(startAuth({ config: loadConfig({ ...production, AUTH_JWT_KEY: unpinned }), databaseUrl: db.url, log }))
    .rejects.toThrow(/jwt key from AUTH_JWT_KEY \(public key [0-9a-f]{64}\) is not pinned.*npm run ops -- keys pin jwt/);
  await expect(
    startAuth({ config: loadConfig({ NODE_ENV: 'production', PORT: '0', AUTH_JWT_KEY: unpinned, DB_ROLE_SECRET: 'd'.repeat(16) }), databaseUrl: db.url, log }),
  ).rejects.toThrow(/AUTH_BASE_URL[\s\S]*AUTH_DOMAIN/);
});
