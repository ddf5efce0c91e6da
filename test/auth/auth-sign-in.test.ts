// Admin sign-in over HTTP: sessions by cookie or Bearer, a JWT for the session, same answer for an
// unknown email and a wrong password, brute force limited, cross-origin calls checked.
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { startAuth } from '../../server/roles/auth.ts';
import { hashPassword } from '../../server/auth/passwords.ts';
import { loadConfig } from '../../server/config/index.ts';
import type { StartedRole } from '../../server/roles/types.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { captureLogger } from '../helpers/logs.ts';

const ISSUER = 'http://auth.test.local';
const env = {
  NODE_ENV: 'test', PORT: '0', AUTH_SECRET: 'sign-in-test-secret-0123456789abcdef', AUTH_BASE_URL: ISSUER,
  AUTH_TRUSTED_ORIGINS: 'http://poker-ui.test.local', AUTH_SIGN_IN_LIMIT_PER_ACCOUNT: '5',
};
let db: TestDatabase;
let role: StartedRole;
let adminId: string;
beforeAll(async () => {
  db = await createTestDatabase();
  adminId = (await db.owner.query('select auth.create_admin($1, $2) as id', ['ops@example.com', await hashPassword('right-password')])).rows[0].id;
  role = await startAuth({ config: loadConfig(env), databaseUrl: db.url, log: captureLogger('silent').log });
});
afterAll(async () => {
  await role?.stop();
  await db?.drop();
});

const signIn = (email: string, password: string, headers: Record<string, string> = {}, path = '/api/auth/sign-in/email') =>
  fetch(`${role.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ email, password }) });

test('sign in, read the session by cookie and by Bearer, get a JWT for it, sign out', async () => {
  const res = await signIn('OPS@example.com', 'right-password');
  expect(res.status).toBe(200);
  const body = (await res.json()) as { token: string; user: { id: string }; expiresAt: string };
  expect(body.user.id).toBe(adminId);
  expect(body.token).toMatch(/^[\w-]{43}$/);
  const setCookie = res.headers.getSetCookie().find((c) => c.startsWith('poker_session='))!;
  expect(setCookie).toMatch(/^poker_session=[\w-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=43200$/);
  // and the browser's device cookie (issue 31): its own sign-in attempts are never locked out by others' failures
  expect(res.headers.getSetCookie().find((c) => c.startsWith('poker_device='))).toMatch(/^poker_device=[\w-]{43}; Path=\/api\/auth; HttpOnly; SameSite=Strict; Max-Age=15552000$/);
  const cookie = setCookie.split(';')[0]!;

  for (const headers of [{ cookie }, { authorization: `Bearer ${body.token}` }]) {
    const s = await fetch(`${role.url}/api/auth/get-session`, { headers });
    expect(await s.json()).toMatchObject({ user: { id: adminId, email: 'ops@example.com' } });
  }

  const tokenRes = await fetch(`${role.url}/api/auth/token`, { headers: { cookie } });
  const { token } = (await tokenRes.json()) as { token: string };
  const { payload } = await jwtVerify(token, createRemoteJWKSet(new URL(`${role.url}/api/auth/jwks`)), {
    issuer: ISSUER, audience: ISSUER, algorithms: ['EdDSA'], requiredClaims: ['exp', 'iat', 'sub'],
  });
  expect(payload).toMatchObject({ sub: adminId, email: 'ops@example.com', walletAddress: null, authMethod: 'email' });

  const out = await fetch(`${role.url}/api/auth/sign-out`, { method: 'POST', headers: { cookie } });
  expect(out.status).toBe(200);
  expect(out.headers.get('set-cookie')).toMatch(/^poker_session=; .*Max-Age=0/);
  expect(await (await fetch(`${role.url}/api/auth/get-session`, { headers: { cookie } })).json()).toBeNull();
  const after = await fetch(`${role.url}/api/auth/token`, { headers: { cookie } });
  expect(after.status).toBe(401);
  expect(await after.json()).toEqual({ error: 'not signed in', code: 'not_signed_in' });
});

test('an unknown email and a wrong password get the same answer', async () => {
  const unknown = await signIn('nobody@example.com', 'whatever');
  const wrong = await signIn('ops@example.com', 'wrong-password');
  expect([unknown.status, wrong.status]).toEqual([401, 401]);
  expect(await unknown.json()).toEqual(await wrong.json());
});

test('a malformed body is a 400, never a 500', async () => {
  const res = await fetch(`${role.url}/api/auth/sign-in/email`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"email":1}' });
  expect(res.status).toBe(400);
  expect(await res.json()).toMatchObject({ error: 'validation_failed' });
});

test('cross-origin session calls from an untrusted origin are refused; trusted ones pass', async () => {
  for (const origin of ['http://evil.test', 'null', 'http://poker-ui.test.local.evil.test', 'https://poker-ui.test.local']) {
    const res = await signIn('ops@example.com', 'right-password', { origin });
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({ error: 'untrusted_origin' });
  }
  expect((await signIn('ops@example.com', 'right-password', { origin: 'http://poker-ui.test.local' })).status).toBe(200);
  expect((await signIn('ops@example.com', 'right-password', { origin: ISSUER })).status).toBe(200);
});

test('brute force gets 429 with Retry-After; path spellings and forwarding headers do not reset it', async () => {
  await db.owner.query('select auth.create_admin($1, $2)', ['target@example.com', await hashPassword('the-real-one')]);
  const paths = ['/api/auth/sign-in/email', '/api/auth/sign-in/email/', '/API/auth/sign-in/EMAIL'];
  for (let i = 0; i < 5; i++) {
    const res = await signIn('target@example.com', `guess-${i}`, { 'x-forwarded-for': `10.0.0.${i}` }, paths[i % 3]);
    expect(res.status).toBe(401);
  }
  for (const path of paths) {
    const res = await signIn('Target@Example.com', 'the-real-one', { 'x-forwarded-for': '203.0.113.9', 'x-real-ip': '203.0.113.9' }, path);
    expect(res.status).toBe(429);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await res.json()).toEqual({ error: 'too_many_attempts' });
  }
});
