// The access JWT's claims on every minting path (the identity-provider bridge, the admin session's
// token, the harness's mint): `walletAddress` is the primary wallet when it is an EVM wallet, EIP-55
// checksummed, else null (never a Solana address); `role: "admin"` only on the admin session's token.
import { randomBytes, randomUUID } from 'node:crypto';
import { decodeJwt } from 'jose';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { startAuth } from '../../server/roles/auth.ts';
import { hashPassword } from '../../server/auth/passwords.ts';
import { loadConfig } from '../../server/config/index.ts';
import type { StartedRole } from '../../server/roles/types.ts';
import { solanaAddress } from '../helpers/claims.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { captureLogger } from '../helpers/logs.ts';

let db: TestDatabase;
let role: StartedRole;
beforeAll(async () => {
  db = await createTestDatabase();
  role = await startAuth({
    config: loadConfig({ NODE_ENV: 'test', PORT: '0', AUTH_SECRET: 'claims-test-secret-0123456789abcdefgh', AUTH_BASE_URL: 'http://auth.test.local', ENABLE_TEST_AUTH: 'true' }),
    databaseUrl: db.url, log: captureLogger('silent').log,
  });
});
afterAll(async () => {
  await role?.stop();
  await db?.drop();
});

const post = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
  const res = await fetch(`${role.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
};

/** The three ways a token is minted for one user: the bridge (test token), the harness's mint, and (admins only) the session. */
async function bridgeToken(sub: string) {
  const invite = `inv_${randomBytes(12).toString('hex')}`;
  await db.owner.query('select auth.mint_invite($1)', [invite]);
  const r = await post('/api/auth/bridge', { idToken: `test-idp-token:${sub}`, inviteCode: invite });
  expect(r.status).toBe(200);
  return { userId: r.body.user.id as string, token: r.body.token as string };
}
const minted = async (userId: string, extra: Record<string, unknown> = {}) => (await post('/api/dev/mint-jwt', { userId, ...extra })).body.token as string;
const link = (userId: string, address: string, chain: 'evm' | 'solana', chainId: number) =>
  db.owner.query('select * from auth.link_wallet($1, $2, $3, $4)', [userId, address, chain, chainId]);

test('a Solana primary is never the walletAddress: null, or the EVM primary once set; EVM addresses are checksummed', async () => {
  const sub = `claims-${randomUUID()}`;
  const { userId, token } = await bridgeToken(sub);
  expect(decodeJwt(token).walletAddress).toBeNull();

  // the first wallet, a Solana one, becomes the primary
  await link(userId, solanaAddress(), 'solana', 0);
  expect((await db.owner.query("select chain from auth.wallets where user_id = $1 and is_primary", [userId])).rows[0].chain).toBe('solana');
  expect(decodeJwt((await bridgeToken(sub)).token).walletAddress).toBeNull();
  expect(decodeJwt(await minted(userId)).walletAddress).toBeNull();

  // an EVM wallet stored lower-cased, made primary: the claim is its EIP-55 form
  const evm = privateKeyToAccount(generatePrivateKey()).address;
  await link(userId, evm.toLowerCase(), 'evm', 1);
  await db.owner.query('select auth.set_primary_wallet($1, $2)', [userId, evm.toLowerCase()]);
  for (const token of [(await bridgeToken(sub)).token, await minted(userId)]) {
    expect(decodeJwt(token).walletAddress).toBe(evm);
  }
});

test("only the admin session's token carries role admin; the bridge and the harness's mint never do", async () => {
  const email = `ops-${randomUUID().slice(0, 8)}@example.com`;
  const adminId = (await db.owner.query('select auth.create_admin($1, $2) as id', [email, await hashPassword('operator-password')])).rows[0].id;
  await link(adminId, solanaAddress(), 'solana', 0);
  const session = await post('/api/auth/sign-in/email', { email, password: 'operator-password' });
  const res = await fetch(`${role.url}/api/auth/token`, { headers: { authorization: `Bearer ${session.body.token}` } });
  const operator = decodeJwt(((await res.json()) as { token: string }).token);
  expect(operator).toMatchObject({ sub: adminId, role: 'admin', walletAddress: null });

  expect(decodeJwt(await minted(adminId, { role: 'admin' })).role).toBeUndefined();
  const { token } = await bridgeToken(`claims-${randomUUID()}`);
  expect(decodeJwt(token).role).toBeUndefined();
});
