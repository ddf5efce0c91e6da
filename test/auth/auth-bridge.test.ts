// The bridge over HTTP against a real local OIDC issuer: invite-gated first sign-in, returning users
// without a code, every error row of the spec, the test-token rule, the span.
import { randomBytes, randomUUID } from 'node:crypto';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { startAuth } from '../../server/roles/auth.ts';
import { loadConfig } from '../../server/config/index.ts';
import type { StartedRole } from '../../server/roles/types.ts';
import { finishedSpans, installTelemetry, resetSpans, shutdownTelemetry } from '../../server/telemetry/index.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { captureLogger } from '../helpers/logs.ts';
import { startLocalIssuer, type LocalIssuer } from '../helpers/oidc-issuer.ts';

const ISSUER = 'http://auth.test.local';
let db: TestDatabase;
let idp: LocalIssuer;
let role: StartedRole;
const baseEnv = { NODE_ENV: 'test', PORT: '0', AUTH_SECRET: 'bridge-test-secret-0123456789abcdefgh', AUTH_BASE_URL: ISSUER };
beforeAll(async () => {
  await installTelemetry({ serviceName: 'bridge-test', memory: true });
  db = await createTestDatabase();
  idp = await startLocalIssuer();
  role = await startAuth({
    config: loadConfig({ ...baseEnv, IDP_ISSUER: idp.issuer, IDP_JWKS_URL: idp.jwksUrl, IDP_AUDIENCE: idp.audience }),
    databaseUrl: db.url, log: captureLogger('silent').log,
  });
});
afterAll(async () => {
  await role?.stop();
  await idp?.close();
  await db?.drop();
  await shutdownTelemetry();
});
beforeEach(() => resetSpans());

const invite = async (maxUses = 1, expiresInSeconds: number | null = null) => {
  const code = `inv_${randomBytes(12).toString('hex')}`;
  await db.owner.query('select auth.mint_invite($1, $2, $3)', [code, maxUses, expiresInSeconds]);
  return code;
};
const bridge = (url: string, body: unknown) =>
  fetch(`${url}/api/auth/bridge`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const users = async () => (await db.owner.query('select count(*)::int as n from auth.users')).rows[0].n as number;

test('first sign-in with a code creates the account and returns a JWT; the returning user needs no code', async () => {
  const sub = randomUUID();
  const idToken = await idp.idToken({ sub, email: 'player@example.com', email_verified: true });
  const first = await bridge(role.url!, { idToken, inviteCode: await invite() });
  expect(first.status).toBe(200);
  const body = (await first.json()) as { token: string; user: { id: string; email: string }; created: boolean };
  expect(body).toMatchObject({ created: true, user: { email: 'player@example.com' } });
  const { payload } = await jwtVerify(body.token, createRemoteJWKSet(new URL(`${role.url}/api/auth/jwks`)), {
    issuer: ISSUER, audience: ISSUER, algorithms: ['EdDSA'], requiredClaims: ['exp', 'iat', 'sub'],
  });
  expect(payload).toMatchObject({ sub: body.user.id, email: 'player@example.com', walletAddress: null, authMethod: 'google' });
  const again = await bridge(role.url!, { idToken: await idp.idToken({ sub }) });
  expect(await again.json()).toMatchObject({ created: false, user: { id: body.user.id } });
  const span = finishedSpans().filter((s) => s.name === 'auth.idp.bridge').at(-1);
  expect(span?.attributes).toMatchObject({ 'auth.created': false, 'auth.user_id': body.user.id });
});

test.each([
  ['no token', async () => ({}), 400, 'idp_token_missing'],
  ['a token for another audience', async () => ({ idToken: await idp.idToken({ sub: randomUUID() }, { audience: 'someone-else' }) }), 401, 'idp_token_invalid'],
  ['a token from another issuer', async () => ({ idToken: await idp.idToken({ sub: randomUUID() }, { issuer: 'http://evil.test' }) }), 401, 'idp_token_invalid'],
  ['an expired token', async () => ({ idToken: await idp.idToken({ sub: randomUUID() }, { expiresIn: '-5m' }) }), 401, 'idp_token_invalid'],
  ['a token signed by another key', async () => ({ idToken: await idp.idToken({ sub: randomUUID() }, { foreignKey: true }) }), 401, 'idp_token_invalid'],
  ['garbage', async () => ({ idToken: 'not.a.jwt' }), 401, 'idp_token_invalid'],
  ['a first sign-in without a code', async () => ({ idToken: await idp.idToken({ sub: randomUUID() }) }), 403, 'invite_required'],
  ['an unknown code', async () => ({ idToken: await idp.idToken({ sub: randomUUID() }), inviteCode: 'inv_unknown_code_123' }), 403, 'invite_invalid'],
  ['an expired code', async () => ({ idToken: await idp.idToken({ sub: randomUUID() }), inviteCode: await invite(5, -1) }), 403, 'invite_invalid'],
  ['an exhausted code', async () => {
    const code = await invite(1);
    expect((await bridge(role.url!, { idToken: await idp.idToken({ sub: randomUUID() }), inviteCode: code })).status).toBe(200);
    return { idToken: await idp.idToken({ sub: randomUUID() }), inviteCode: code };
  }, 403, 'invite_invalid'],
  ['the test token while the harness is off', async () => ({ idToken: `test-idp-token:${randomUUID()}`, inviteCode: await invite() }), 401, 'idp_token_invalid'],
])('%s: refused, and no account', async (_name, body, status, error) => {
  const request = await body();
  resetSpans();
  const before = await users();
  const res = await bridge(role.url!, request);
  expect(res.status).toBe(status);
  expect(await res.json()).toEqual({ error });
  expect(await users()).toBe(before);
  expect(finishedSpans().find((s) => s.name === 'auth.idp.bridge')?.attributes['error.code']).toBe(error);
});

test('the test token works only while the harness is permitted', async () => {
  const harness = await startAuth({
    config: loadConfig({ ...baseEnv, ENABLE_TEST_AUTH: 'true' }), databaseUrl: db.url, log: captureLogger('silent').log,
  });
  try {
    const sub = `tester-${randomUUID()}`;
    const res = await bridge(harness.url!, { idToken: `test-idp-token:${sub}`, inviteCode: await invite() });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ created: true });
    const userId = ((await (await bridge(harness.url!, { idToken: `test-idp-token:${sub}` })).json()) as { user: { id: string } }).user.id;
    const minted = await fetch(`${harness.url}/api/dev/mint-jwt`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ userId }) });
    expect(minted.status).toBe(200);
    const { payload } = await jwtVerify(((await minted.json()) as { token: string }).token, createRemoteJWKSet(new URL(`${harness.url}/api/auth/jwks`)), {
      issuer: ISSUER, audience: ISSUER, algorithms: ['EdDSA'],
    });
    expect(payload.sub).toBe(userId);
    const unknown = await fetch(`${harness.url}/api/dev/mint-jwt`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ userId: randomUUID() }) });
    expect(unknown.status).toBe(404);
    // without a configured provider, a real-looking token is a 503, not a pass
    const real = await bridge(harness.url!, { idToken: await idp.idToken({ sub: randomUUID() }), inviteCode: await invite() });
    expect(real.status).toBe(503);
  } finally {
    await harness.stop();
  }
});

test('/api/dev/mint-jwt does not exist while the harness is off', async () => {
  const res = await fetch(`${role.url}/api/dev/mint-jwt`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ userId: randomUUID() }) });
  expect(res.status).toBe(404);
  expect(await res.json()).toEqual({ error: 'not_found' });
});

test('50 concurrent first sign-ins against caps 1 and 10 create exactly the cap', async () => {
  for (const cap of [1, 10]) {
    const code = await invite(cap);
    const before = await users();
    const results = await Promise.all(
      Array.from({ length: 50 }, async () => bridge(role.url!, { idToken: await idp.idToken({ sub: randomUUID() }), inviteCode: code })),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(cap);
    expect(results.filter((r) => r.status === 403)).toHaveLength(50 - cap);
    expect(await users()).toBe(before + cap);
  }
});
