// A token issued in the future is refused (issue 10): the platform allows 60 s of clock skew on
// `iat` and no more, on every path that verifies its own access JWTs (the downstream verifier of
// the game and cage roles, and the auth role's own Bearer check on the wallet routes).
import { startAuth } from '../../server/roles/auth.ts';
import { createKeyStore } from '../../server/auth/keys.ts';
import { testRoleKey } from '../helpers/keys.ts';
import { loadConfig } from '../../server/config/index.ts';
import { createJwtVerifier, JWT_CLOCK_SKEW_SECONDS } from '../../server/http/jwt.ts';
import type { StartedRole } from '../../server/roles/types.ts';
import { bridgedUser } from '../helpers/auth.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { captureLogger } from '../helpers/logs.ts';

const ISSUER = 'http://auth.test.local';
const SECRET = 'future-iat-test-secret-0123456789abcdef';
let db: TestDatabase;
let auth: StartedRole;
let userId: string;
let signAt: (now: number) => Promise<string>;
beforeAll(async () => {
  db = await createTestDatabase();
  auth = await startAuth({ config: loadConfig({ NODE_ENV: 'test', PORT: '0', AUTH_SECRET: SECRET, AUTH_BASE_URL: ISSUER }), databaseUrl: db.url, log: captureLogger('silent').log });
  ({ userId } = await bridgedUser(db, { issuer: ISSUER }));
  const keys = createKeyStore(db.pool('poker_auth', 1), { privateKey: await testRoleKey('auth'), issuer: ISSUER });
  signAt = (now) => keys.sign({ sub: userId, walletAddress: null }, { now });
});
afterAll(async () => {
  await auth?.stop();
  await db?.drop();
});

const nowSeconds = () => Math.floor(Date.now() / 1000);

test('the documented skew is 60 s', () => {
  expect(JWT_CLOCK_SKEW_SECONDS).toBe(60);
});

test.each([
  ['the downstream verifier', async (token: string) => {
    const verifier = createJwtVerifier({ jwksUrl: `${auth.url}/api/auth/jwks`, issuer: ISSUER });
    return verifier.verify(token).then(() => 200, (err: { status: number }) => err.status);
  }],
  ['the auth role\'s own Bearer check', async (token: string) =>
    (await fetch(`${auth.url}/api/wallets`, { headers: { authorization: `Bearer ${token}` } })).status],
])('%s: iat within the skew is accepted, iat beyond it is refused', async (_name, statusOf) => {
  expect(await statusOf(await signAt(nowSeconds()))).toBe(200);
  expect(await statusOf(await signAt(nowSeconds() + 30))).toBe(200);
  expect(await statusOf(await signAt(nowSeconds() + 120))).toBe(401);
  expect(await statusOf(await signAt(nowSeconds() + 86_400))).toBe(401);
});
