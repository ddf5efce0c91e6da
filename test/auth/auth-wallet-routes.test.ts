// Wallet routes over HTTP, for a poker user holding only this service's access JWT (the bridge
// gives no session) and for an admin session; and the internal reads behind the service key.
import { randomUUID } from 'node:crypto';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { startAuth } from '../../server/roles/auth.ts';
import { createKeyStore } from '../../server/auth/keys.ts';
import { testRoleKey } from '../helpers/keys.ts';
import { bridgedUser } from '../helpers/auth.ts';
import { loadConfig } from '../../server/config/index.ts';
import type { StartedRole } from '../../server/roles/types.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { captureLogger, type LogLine } from '../helpers/logs.ts';

const ISSUER = 'http://auth.test.local';
const SECRET = 'wallet-routes-test-secret-0123456789ab';
const SERVICE_KEY = 'wallet-routes-service-key-0123456';
let db: TestDatabase;
let role: StartedRole;
let lines: LogLine[];
beforeAll(async () => {
  db = await createTestDatabase();
  const captured = captureLogger('info');
  lines = captured.lines;
  role = await startAuth({
    config: loadConfig({ NODE_ENV: 'test', PORT: '0', AUTH_SECRET: SECRET, AUTH_BASE_URL: ISSUER, SERVICE_KEY }),
    databaseUrl: db.url, log: captured.log,
  });
});
afterAll(async () => {
  await role?.stop();
  await db?.drop();
});

async function pokerUser() {
  const { userId, jwt } = await bridgedUser(db, { issuer: ISSUER });
  return { userId, auth: { authorization: `Bearer ${jwt}` } };
}
const evm = () => privateKeyToAccount(generatePrivateKey()).address;
const link = (userId: string, address: string, chain = 'evm', chainId = 1) =>
  db.owner.query('select * from auth.link_wallet($1, $2, $3, $4)', [userId, address, chain, chainId]);
const call = (method: string, path: string, headers: Record<string, string>, body?: unknown) =>
  fetch(`${role.url}${path}`, { method, headers: { 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });

test('list, set-primary (and its idempotent form), unlink with promotion, for a bridged user with a JWT', async () => {
  const { userId, auth } = await pokerUser();
  const [a, b] = [evm(), evm()];
  await link(userId, a);
  await link(userId, b);
  const list = (await (await call('GET', '/api/wallets', auth)).json()) as { wallets: { address: string; chainId: number; isPrimary: boolean; createdAt: string }[] };
  expect(list.wallets.map((w) => [w.address, w.chainId, w.isPrimary])).toEqual([[a, 1, true], [b, 1, false]]);

  const set = await call('POST', '/api/wallets/set-primary', auth, { walletAddress: b.toLowerCase() });
  expect(await set.json()).toEqual({ ok: true, primary: b });
  expect(await (await call('POST', '/api/wallets/set-primary', auth, { walletAddress: b })).json()).toEqual({ ok: true, primary: b, alreadyPrimary: true });
  expect(lines.some((l) => l.msg === 'primary wallet changed' && l.primary === b)).toBe(true);

  const del = await call('DELETE', `/api/wallets/${b}`, auth);
  expect(await del.json()).toEqual({ ok: true, unlinked: b, wasPrimary: true });
  const after = (await (await call('GET', '/api/wallets', auth)).json()) as { wallets: { address: string; isPrimary: boolean }[] };
  expect(after.wallets).toEqual([expect.objectContaining({ address: a, isPrimary: true })]);
  expect(lines.some((l) => l.msg === 'wallet unlinked' && l.unlinked === b)).toBe(true);
});

test('another user\'s wallet is 404 for set-primary and delete', async () => {
  const [alice, bob] = [await pokerUser(), await pokerUser()];
  const a = evm();
  await link(alice.userId, a);
  for (const res of [await call('POST', '/api/wallets/set-primary', bob.auth, { walletAddress: a }), await call('DELETE', `/api/wallets/${a}`, bob.auth)]) {
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: 'wallet_not_found' });
  }
});

test('no session and no valid JWT: 401 not signed in', async () => {
  const other = await createKeyStore(db.pool('poker_auth', 1), { privateKey: await testRoleKey('auth'), issuer: 'http://someone-else' }).sign({ sub: randomUUID() });
  for (const headers of [{} as Record<string, string>, { authorization: 'Bearer nonsense' }, { authorization: `Bearer ${other}` }, { cookie: 'poker_session=' + 'x'.repeat(43) }]) {
    const res = await call('GET', '/api/wallets', headers);
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ error: 'not signed in', code: 'not_signed_in' });
  }
});

test('state-changing wallet calls from an untrusted origin are refused', async () => {
  const { userId, auth } = await pokerUser();
  const a = evm();
  await link(userId, a);
  const res = await call('DELETE', `/api/wallets/${a}`, { ...auth, origin: 'http://evil.test' });
  expect(res.status).toBe(403);
  expect((await call('GET', '/api/wallets', auth)).status).toBe(200);
});

test('internal reads: EVM wallets and Solana wallets apart, behind the service key', async () => {
  const { userId } = await pokerUser();
  const a = evm();
  const sol = '7' + 'x'.repeat(10) + 'A'.repeat(32);
  await link(userId, a);
  await link(userId, sol, 'solana', 0);
  const headers = { 'x-service-key': SERVICE_KEY };
  const evmRes = (await (await call('GET', `/api/internal/user-wallets/${userId}`, headers)).json()) as { wallets: { address: string }[] };
  expect(evmRes.wallets.map((w) => w.address)).toEqual([a]);
  expect(await (await call('GET', `/api/internal/user-wallets-solana/${userId}`, headers)).json()).toEqual({ wallets: [{ address: sol }] });
  for (const h of [{} as Record<string, string>, { 'x-service-key': 'wrong-wrong-wrong-wrong' }]) {
    expect((await call('GET', `/api/internal/user-wallets/${userId}`, h)).status).toBe(401);
    expect((await call('GET', `/api/internal/user-wallets-solana/${userId}`, h)).status).toBe(401);
  }
  expect((await call('GET', '/api/internal/user-wallets/not-a-uuid', headers)).status).toBe(404);
  expect(await (await call('GET', `/api/internal/user-wallets/${randomUUID()}`, headers)).json()).toEqual({ wallets: [] });
});
