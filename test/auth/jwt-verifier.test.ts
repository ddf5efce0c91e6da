// The downstream verification path against the running auth role's JWKS.
import { randomUUID } from 'node:crypto';
import express from 'express';
import { SignJWT, UnsecuredJWT, generateKeyPair } from 'jose';
import { startAuth } from '../../server/roles/auth.ts';
import { createKeyStore } from '../../server/auth/keys.ts';
import { testRoleKey } from '../helpers/keys.ts';
import { loadConfig } from '../../server/config/index.ts';
import { errorHandler } from '../../server/http/errors.ts';
import { createJwtVerifier, VERIFIED_TTL_MS, verifiedTokens, type AccessClaims } from '../../server/http/jwt.ts';
import { listen, type Listening } from '../../server/http/app.ts';
import type { StartedRole } from '../../server/roles/types.ts';
import { createLogger } from '../../server/telemetry/index.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

const ISSUER = 'http://auth.test.local';
const SECRET = 'jwt-verifier-test-secret-0123456789ab';
let db: TestDatabase;
let auth: StartedRole;
let downstream: Listening;
let sign: (claims: Record<string, unknown> & { sub: string }, options?: { now?: number; ttlSeconds?: number }) => Promise<string>;
beforeAll(async () => {
  db = await createTestDatabase();
  auth = await startAuth({ config: loadConfig({ NODE_ENV: 'test', PORT: '0', AUTH_SECRET: SECRET, AUTH_BASE_URL: ISSUER }), databaseUrl: db.url, log: createLogger('silent') });
  const store = createKeyStore(db.pool('poker_auth', 1), { privateKey: await testRoleKey('auth'), issuer: ISSUER });
  sign = (claims, options) => store.sign(claims, options);
  const verifier = createJwtVerifier({ jwksUrl: `${auth.url}/api/auth/jwks`, issuer: ISSUER });
  const app = express();
  app.get('/me', verifier.require, (_req, res) => res.json({ sub: res.locals.claims.sub }));
  app.use(errorHandler(createLogger('silent')));
  downstream = await listen(app, '127.0.0.1', 0);
});
afterAll(async () => {
  await downstream?.close();
  await auth?.stop();
  await db?.drop();
});

const me = (authorization?: string) => fetch(`${downstream.url}/me`, { headers: authorization ? { authorization } : {} });

test('a token from the auth role is accepted', async () => {
  const sub = randomUUID();
  const res = await me(`Bearer ${await sign({ sub })}`);
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ sub });
});

test('no token: 401 missing_bearer_token', async () => {
  const res = await me();
  expect(res.status).toBe(401);
  expect(await res.json()).toEqual({ error: 'missing_bearer_token' });
});

test.each([
  ['expired', async () => sign({ sub: randomUUID() }, { now: Math.floor(Date.now() / 1000) - 7200 })],
  ['alg none', async () => new UnsecuredJWT({ sub: randomUUID() }).setIssuer(ISSUER).setAudience(ISSUER).setIssuedAt().setExpirationTime('5m').encode()],
  ['another issuer\'s key', async () => {
    const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
    return new SignJWT({ sub: randomUUID() }).setProtectedHeader({ alg: 'EdDSA', kid: 'x' }).setIssuer(ISSUER).setAudience(ISSUER).setIssuedAt().setExpirationTime('5m').sign(privateKey);
  }],
  ['a sub that is not a user id', async () => sign({ sub: 'admin' })],
  ['a flipped bit', async () => {
    const t = await sign({ sub: randomUUID() });
    const [h, p, s] = t.split('.');
    const sig = Buffer.from(s!, 'base64url');
    sig[0] = sig[0]! ^ 1;
    return `${h}.${p}.${sig.toString('base64url')}`;
  }],
  ['not a JWT', async () => 'abc'],
])('%s: 401 invalid_token', async (_name, token) => {
  const res = await me(`Bearer ${await token()}`);
  expect(res.status).toBe(401);
  expect(await res.json()).toEqual({ error: 'invalid_token' });
});

describe('verified tokens are remembered, never past their exp', () => {
  const rejects401 = (p: Promise<unknown>) => expect(p).rejects.toMatchObject({ status: 401, code: 'invalid_token' });

  test('a remembered token is refused once its exp passes, and a changed byte is verified afresh', async () => {
    let now = Date.now();
    const verifier = createJwtVerifier({ jwksUrl: `${auth.url}/api/auth/jwks`, issuer: ISSUER, now: () => now });
    const sub = randomUUID();
    const token = await sign({ sub }, { ttlSeconds: 30 });
    expect((await verifier.verify(token)).sub).toBe(sub);
    expect((await verifier.verify(token)).sub).toBe(sub);
    const [h, p, s] = token.split('.');
    const sig = Buffer.from(s!, 'base64url');
    sig[5] = sig[5]! ^ 1;
    await rejects401(verifier.verify(`${h}.${p}.${sig.toString('base64url')}`));
    now += 31_000;
    await rejects401(verifier.verify(token));
  });

  test('the claims handed out cannot be changed for the next caller', async () => {
    const verifier = createJwtVerifier({ jwksUrl: `${auth.url}/api/auth/jwks`, issuer: ISSUER });
    const sub = randomUUID();
    const token = await sign({ sub });
    const first = await verifier.verify(token);
    expect(() => {
      (first as { sub: string }).sub = randomUUID();
    }).toThrow(TypeError);
    expect((await verifier.verify(token)).sub).toBe(sub);
  });

  test('kept until min(exp, now + VERIFIED_TTL_MS), at most max tokens, the oldest forgotten first', () => {
    const kept = verifiedTokens(2);
    const now = 1_000_000_000_000;
    const claims = (expSeconds: number): AccessClaims => ({ sub: randomUUID(), exp: expSeconds, iat: now / 1000 });
    kept.keep('a', claims(now / 1000 + 3600), now);
    kept.keep('b', claims(now / 1000 + 10), now);
    expect(kept.get('a', now + VERIFIED_TTL_MS - 1)).toBeDefined();
    expect(kept.get('a', now + VERIFIED_TTL_MS)).toBeUndefined();
    expect(kept.get('b', now + 9_999)).toBeDefined();
    expect(kept.get('b', now + 10_000)).toBeUndefined();
    kept.keep('c', claims(now / 1000 + 3600), now);
    kept.keep('d', claims(now / 1000 + 3600), now);
    kept.keep('e', claims(now / 1000 + 3600), now);
    expect(kept.size).toBe(2);
    expect(kept.get('c', now)).toBeUndefined();
    expect(kept.get('d', now)).toBeDefined();
    expect(kept.get('e', now)).toBeDefined();
  });
});
