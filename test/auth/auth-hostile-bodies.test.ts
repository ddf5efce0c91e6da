// Every auth route, signed in (session JWT, trusted Origin, service key) so the bodies reach the
// auth-specific parsing behind the checks, fed hostile values in the shape each route expects and
// whole hostile bodies (seeded fast-check): never a 500 or an uncoded answer, and the process
// stays up. The cross-role fuzz suite covers the generic edge (NUL bytes, escapes, depth, gzip).
import fc from 'fast-check';
import { startAuth } from '../../server/roles/auth.ts';
import { loadConfig } from '../../server/config/index.ts';
import type { StartedRole } from '../../server/roles/types.ts';
import { bridgedUser } from '../helpers/auth.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { captureLogger } from '../helpers/logs.ts';
import { startLocalIssuer, type LocalIssuer } from '../helpers/oidc-issuer.ts';

const ISSUER = 'https://auth.poker.test';
const ORIGIN = 'https://poker.test';
const SECRET = 'hostile-bodies-test-secret-0123456789ab';
const SERVICE_KEY = 'hostile-bodies-service-key-012345678';
let db: TestDatabase;
let role: StartedRole;
let headers: Record<string, string>;
let userId: string;
let idp: LocalIssuer;
beforeAll(async () => {
  db = await createTestDatabase();
  idp = await startLocalIssuer();
  role = await startAuth({
    config: loadConfig({
      NODE_ENV: 'test', ENABLE_TEST_AUTH: 'true', PORT: '0', AUTH_SECRET: SECRET, AUTH_BASE_URL: ISSUER, AUTH_DOMAIN: 'poker.test',
      AUTH_TRUSTED_ORIGINS: ORIGIN, SERVICE_KEY, IDP_ISSUER: idp.issuer, IDP_JWKS_URL: idp.jwksUrl, IDP_AUDIENCE: idp.audience, AUTH_SIGN_IN_LIMIT_PER_PEER: '100000', AUTH_RECOVERY_LIMIT_PER_PEER: '100000',
    }),
    databaseUrl: db.url, log: captureLogger('silent').log,
  });
  const user = await bridgedUser(db, { issuer: ISSUER });
  userId = user.userId;
  headers = { authorization: `Bearer ${user.jwt}`, origin: ORIGIN, 'x-service-key': SERVICE_KEY, 'content-type': 'application/json' };
});
afterAll(async () => {
  await role?.stop();
  await idp?.close();
  await db?.drop();
});

// the fields each route reads, so hostile values reach past "not an object"
const ROUTES: { method: string; path: string; fields: string[] }[] = [
  { method: 'POST', path: '/api/auth/sign-in/email', fields: ['email', 'password'] },
  { method: 'POST', path: '/api/auth/sign-out', fields: [] },
  { method: 'GET', path: '/api/auth/get-session', fields: [] },
  { method: 'GET', path: '/api/auth/token', fields: [] },
  { method: 'GET', path: '/api/auth/jwks', fields: [] },
  { method: 'POST', path: '/api/auth/siwe/nonce', fields: ['walletAddress', 'chainId'] },
  { method: 'POST', path: '/api/link-wallet', fields: ['message', 'signature', 'walletAddress', 'chainId'] },
  { method: 'POST', path: '/api/auth/solana/nonce', fields: ['address'] },
  { method: 'POST', path: '/api/link-wallet/solana', fields: ['address', 'message', 'signature'] },
  { method: 'GET', path: '/api/wallets', fields: [] },
  { method: 'POST', path: '/api/wallets/set-primary', fields: ['walletAddress'] },
  { method: 'POST', path: '/api/auth/bridge', fields: ['idToken', 'inviteCode'] },
  { method: 'POST', path: '/api/dev/mint-jwt', fields: ['userId'] },
  { method: 'POST', path: '/api/auth/request-password-reset', fields: ['email', 'redirectTo'] },
  { method: 'POST', path: '/api/auth/reset-password', fields: ['newPassword', 'token'] },
  { method: 'POST', path: '/admin/invite-codes', fields: ['maxUses', 'expiresInSeconds', 'createdBy'] },
];
const PARAM_ROUTES = ['/api/wallets/', '/api/internal/user-wallets/', '/api/internal/user-wallets-solana/'];

const hostileString = fc.oneof(
  fc.string({ maxLength: 80 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(
    'test-idp-token:someone', 'test-idp-token:', 'a.b.c', 'eyJhbGciOiJub25lIn0.e30.', '0x', '0x' + 'ab'.repeat(65), '0xzz',
    '\ud800', '\udfff\ud800', '%', '%E0%A4%A', '../../etc/passwd', 'x'.repeat(5000), 'javascript:alert(1)', 'http://[::1', '//evil.test',
    'https://poker.test/%', 'ops@example.com', '@', '1e309', '-0', 'NaN', '00000000-0000-0000-0000-000000000000',
  ),
);
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: hostileString },
  fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.bigInt().map(String),
  fc.constantFrom(2 ** 31, -1, 0, Number.MAX_SAFE_INTEGER, 1e300),
  fc.array(fc.string({ maxLength: 8 }), { maxLength: 4 }), fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 }), { maxKeys: 3 }),
);

async function send(method: string, path: string, body?: unknown) {
  const res = await fetch(`${role.url}${path}`, { method, headers, body: body === undefined || method === 'GET' ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, text };
}
function expectCoded(r: { status: number; text: string }, what: string) {
  if (r.status >= 500) throw new Error(`${what} -> ${r.status} ${r.text.slice(0, 200)}`);
  if (r.status >= 400) expect(JSON.parse(r.text)).toMatchObject({ error: expect.any(String) });
}

test('hostile values in every field of every auth route are coded 4xx answers, never a 500', async () => {
  let requests = 0;
  for (const route of ROUTES) {
    const body = route.fields.length
      ? fc.record(Object.fromEntries(route.fields.map((f) => [f, hostileValue])), { requiredKeys: [] })
      : fc.constant(undefined);
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        requests++;
        expectCoded(await send(route.method, route.path, b), `${route.method} ${route.path} ${JSON.stringify(b)?.slice(0, 200)}`);
      }),
      { seed: 1010, numRuns: 40 },
    );
  }
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...PARAM_ROUTES), hostileString, async (prefix, param) => {
      requests++;
      const method = prefix === '/api/wallets/' ? 'DELETE' : 'GET';
      expectCoded(await send(method, prefix + encodeURIComponent(param.replace(/[\ud800-\udfff]/g, '\ufffd'))), `${method} ${prefix}${param.slice(0, 100)}`);
    }),
    { seed: 1011, numRuns: 60 },
  );
  expect(requests).toBe(ROUTES.length * 40 + 60);
  // still serving, and the user is still who they were
  const wallets = await send('GET', '/api/wallets');
  expect(wallets.status).toBe(200);
  expect((await db.owner.query('select count(*)::int as n from auth.users where id = $1', [userId])).rows[0].n).toBe(1);
});

test('whole hostile JSON bodies on every POST route are coded 4xx answers', async () => {
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...ROUTES.filter((r) => r.method === 'POST')), fc.jsonValue({ maxDepth: 3 }), async (route, body) => {
      expectCoded(await send(route.method, route.path, body), `${route.path} ${JSON.stringify(body).slice(0, 200)}`);
    }),
    { seed: 1012, numRuns: 150 },
  );
});

test('real ID tokens with hostile claims, and hostile invite codes, are coded answers at the bridge', async () => {
  const invite = 'inv_hostile_bodies_0001';
  await db.owner.query('select auth.mint_invite($1, 1000)', [invite]);
  await fc.assert(
    fc.asyncProperty(hostileString, hostileValue, fc.oneof(fc.constant(invite), hostileString), async (sub, email, inviteCode) => {
      const idToken = await idp.idToken({ sub, email: email as string, email_verified: true });
      expectCoded(await send('POST', '/api/auth/bridge', { idToken, inviteCode }), `bridge sub=${sub.slice(0, 80)} email=${JSON.stringify(email)?.slice(0, 80)}`);
    }),
    { seed: 1013, numRuns: 80 },
  );
});
