// POST /api/link-wallet in the spec's order, with wallets that sign as a browser wallet would
// (viem private-key accounts signing EIP-4361 messages).
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import fc from 'fast-check';
import { createSiweMessage } from 'viem/siwe';
import { startAuth } from '../../server/roles/auth.ts';
import { bridgedUser } from '../helpers/auth.ts';
import { loadConfig } from '../../server/config/index.ts';
import type { StartedRole } from '../../server/roles/types.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { captureLogger, type LogLine } from '../helpers/logs.ts';

const ISSUER = 'https://auth.poker.test';
const DOMAIN = 'poker.test';
const ORIGIN = 'https://poker.test';
const SECRET = 'link-wallet-test-secret-0123456789abcd';
let db: TestDatabase;
let role: StartedRole;
let lines: LogLine[];
beforeAll(async () => {
  db = await createTestDatabase();
  const captured = captureLogger('info');
  lines = captured.lines;
  role = await startAuth({
    config: loadConfig({ NODE_ENV: 'test', PORT: '0', AUTH_SECRET: SECRET, AUTH_BASE_URL: ISSUER, AUTH_DOMAIN: DOMAIN, AUTH_TRUSTED_ORIGINS: ORIGIN }),
    databaseUrl: db.url, log: captured.log,
  });
});
afterAll(async () => {
  await role?.stop();
  await db?.drop();
});

async function pokerUser() {
  const { userId, jwt } = await bridgedUser(db, { issuer: ISSUER });
  return { userId, headers: { authorization: `Bearer ${jwt}`, origin: ORIGIN, 'content-type': 'application/json' } as Record<string, string> };
}
const post = (path: string, headers: Record<string, string>, body: unknown) =>
  fetch(`${role.url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });

async function nonceFor(headers: Record<string, string>, address: string, chainId = 1) {
  const res = await post('/api/auth/siwe/nonce', headers, { walletAddress: address, chainId });
  expect(res.status).toBe(200);
  return ((await res.json()) as { nonce: string }).nonce;
}
function siwe(account: PrivateKeyAccount, nonce: string, overrides: Partial<Parameters<typeof createSiweMessage>[0]> = {}) {
  return createSiweMessage({ address: account.address, chainId: 1, domain: DOMAIN, nonce, uri: `https://${DOMAIN}/wallets`, version: '1', ...overrides });
}
async function linkBody(account: PrivateKeyAccount, nonce: string, overrides = {}, signer: PrivateKeyAccount = account) {
  const message = siwe(account, nonce, overrides);
  return { message, signature: await signer.signMessage({ message }), walletAddress: account.address.toLowerCase(), chainId: 1 };
}

test('a first wallet links as primary, a second not; linking one again is alreadyLinked', async () => {
  const user = await pokerUser();
  const [w1, w2] = [privateKeyToAccount(generatePrivateKey()), privateKeyToAccount(generatePrivateKey())];
  const r1 = await post('/api/link-wallet', user.headers, await linkBody(w1, await nonceFor(user.headers, w1.address)));
  expect(r1.status).toBe(200);
  expect(await r1.json()).toEqual({ ok: true, walletAddress: w1.address, chainId: 1, isPrimary: true });
  const r2 = await post('/api/link-wallet', user.headers, await linkBody(w2, await nonceFor(user.headers, w2.address)));
  expect(await r2.json()).toEqual({ ok: true, walletAddress: w2.address, chainId: 1, isPrimary: false });
  const again = await post('/api/link-wallet', user.headers, await linkBody(w1, await nonceFor(user.headers, w1.address)));
  expect(await again.json()).toEqual({ ok: true, walletAddress: w1.address, chainId: 1, isPrimary: true, alreadyLinked: true });
  expect(lines.some((l) => l.msg === 'wallet linked' && l.address === w1.address)).toBe(true);
  // the nonce is gone after a successful link
  expect((await db.owner.query('select count(*)::int as n from auth_private.verifications where identifier = $1', [`siwe:${w1.address}:1`])).rows[0].n).toBe(0);
});

test('1: no session -> 401 not signed in; no trusted Origin -> 403', async () => {
  const w = privateKeyToAccount(generatePrivateKey());
  const res = await post('/api/link-wallet', { 'content-type': 'application/json', origin: ORIGIN }, { message: 'x', signature: '0x00', walletAddress: w.address, chainId: 1 });
  expect(res.status).toBe(401);
  expect(await res.json()).toEqual({ error: 'not signed in', code: 'not_signed_in' });
  const user = await pokerUser();
  for (const origin of [undefined, 'null', 'http://poker.test', 'https://poker.test.evil.test']) {
    const headers = { ...user.headers };
    if (origin === undefined) delete headers.origin;
    else headers.origin = origin;
    expect((await post('/api/link-wallet', headers, {})).status).toBe(403);
  }
});

test('2: a bad address -> 400 invalid walletAddress', async () => {
  const user = await pokerUser();
  for (const walletAddress of ['0x123', 'not-an-address', '0x' + 'g'.repeat(40)]) {
    const res = await post('/api/link-wallet', user.headers, { message: 'm', signature: '0x00', walletAddress, chainId: 1 });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: 'invalid walletAddress', code: 'invalid_wallet_address' });
  }
});

test('3: no nonce, a replayed nonce, a nonce for another chain -> 401 no nonce', async () => {
  const user = await pokerUser();
  const w = privateKeyToAccount(generatePrivateKey());
  const never = await post('/api/link-wallet', user.headers, await linkBody(w, 'abcdefgh12345678'));
  expect(await never.json()).toEqual({ error: 'no nonce', code: 'no_nonce' });
  const nonce = await nonceFor(user.headers, w.address);
  const body = await linkBody(w, nonce);
  expect((await post('/api/link-wallet', user.headers, body)).status).toBe(200);
  const replay = await post('/api/link-wallet', user.headers, body);
  expect(replay.status).toBe(401);
  expect(await replay.json()).toEqual({ error: 'no nonce', code: 'no_nonce' });
  const otherChain = await nonceFor(user.headers, w.address, 137);
  expect(await (await post('/api/link-wallet', user.headers, await linkBody(w, otherChain))).json()).toEqual({ error: 'no nonce', code: 'no_nonce' });
});

test('4: a message without the issued nonce -> 401, and the nonce is spent', async () => {
  const user = await pokerUser();
  const w = privateKeyToAccount(generatePrivateKey());
  const nonce = await nonceFor(user.headers, w.address);
  const res = await post('/api/link-wallet', user.headers, await linkBody(w, 'someothernonce123'));
  expect(res.status).toBe(401);
  expect(await res.json()).toEqual({ error: 'message does not contain issued nonce', code: 'nonce_not_in_message' });
  expect(await (await post('/api/link-wallet', user.headers, await linkBody(w, nonce))).json()).toEqual({ error: 'no nonce', code: 'no_nonce' });
});

test.each([
  ['another domain', { domain: 'evil.test' }],
  ['another URI host', { uri: 'https://evil.test/login' }],
  ['an expired message', { expirationTime: new Date(Date.now() - 60_000) }],
  ['a not-yet-valid message', { notBefore: new Date(Date.now() + 3_600_000) }],
  ['another chain in the message', { chainId: 5 }],
])('5: %s -> 401 invalid signature', async (_name, overrides) => {
  const user = await pokerUser();
  const w = privateKeyToAccount(generatePrivateKey());
  const res = await post('/api/link-wallet', user.headers, await linkBody(w, await nonceFor(user.headers, w.address), overrides));
  expect(res.status).toBe(401);
  expect(await res.json()).toEqual({ error: 'invalid signature', code: 'invalid_signature' });
});

test('5: another key\'s signature -> 401 invalid signature, logged at warn; a valid signature over a non-SIWE message is 400 invalid message', async () => {
  const user = await pokerUser();
  const [w, thief] = [privateKeyToAccount(generatePrivateKey()), privateKeyToAccount(generatePrivateKey())];
  const res = await post('/api/link-wallet', user.headers, await linkBody(w, await nonceFor(user.headers, w.address), {}, thief));
  expect(await res.json()).toEqual({ error: 'invalid signature', code: 'invalid_signature' });
  const nonce = await nonceFor(user.headers, w.address);
  const plain = `please link ${nonce}`;
  const res2 = await post('/api/link-wallet', user.headers, { message: plain, signature: await w.signMessage({ message: plain }), walletAddress: w.address, chainId: 1 });
  expect(res2.status).toBe(400);
  expect(await res2.json()).toEqual({ error: 'invalid message', code: 'invalid_message' });
  expect(lines.some((l) => l.level === 40 && l.marker === 'auth.wallet.signature_failed')).toBe(true);
});

test('6: a wallet linked to another account -> 409, logged at warn', async () => {
  const [alice, bob] = [await pokerUser(), await pokerUser()];
  const w = privateKeyToAccount(generatePrivateKey());
  expect((await post('/api/link-wallet', alice.headers, await linkBody(w, await nonceFor(alice.headers, w.address)))).status).toBe(200);
  const res = await post('/api/link-wallet', bob.headers, await linkBody(w, await nonceFor(bob.headers, w.address)));
  expect(res.status).toBe(409);
  expect(await res.json()).toEqual({ error: 'wallet already linked to another account', code: 'wallet_already_linked' });
  expect(lines.some((l) => l.level === 40 && l.marker === 'auth.wallet.sybil')).toBe(true);
});

test('two concurrent links with one nonce: one wins', async () => {
  const user = await pokerUser();
  const w = privateKeyToAccount(generatePrivateKey());
  const body = await linkBody(w, await nonceFor(user.headers, w.address));
  const results = await Promise.all(Array.from({ length: 5 }, () => post('/api/link-wallet', user.headers, body)));
  expect(results.map((r) => r.status).sort()).toEqual([200, 401, 401, 401, 401]);
});

// A message that is not a well-formed SIWE message is a 400 `invalid message` at step 2 (the body),
// before the nonce is looked up: it spends nothing, and the same nonce still links a proper message
// (issue 10: a URI that is not a URL threw inside the handler; issue 11: a 400, never after the nonce
// is spent).
const rawSiwe = (f: { domain?: string; address: string; uri: string; chainId?: string; nonce: string; issuedAt?: string; extra?: string }) =>
  `${f.domain ?? DOMAIN} wants you to sign in with your Ethereum account:\n${f.address}\n\nURI: ${f.uri}\nVersion: 1\n` +
  `Chain ID: ${f.chainId ?? '1'}\nNonce: ${f.nonce}\nIssued At: ${f.issuedAt ?? new Date().toISOString()}${f.extra ?? ''}`;

test.each([
  ['a URI that is not a URL', { uri: 'not a url' }],
  ['a URI with a broken host', { uri: 'http://[::1' }],
  ['a URI of only a scheme', { uri: 'https:' }],
  ['an Issued At that is not a date', { uri: `https://${DOMAIN}/`, issuedAt: 'yesterday' }],
  ['an Expiration Time that is not a date', { uri: `https://${DOMAIN}/`, extra: '\nExpiration Time: 9999-99-99T99:99:99Z' }],
  ['a Not Before that is not a date', { uri: `https://${DOMAIN}/`, extra: '\nNot Before: soon' }],
  ['a chain id beyond any integer', { uri: `https://${DOMAIN}/`, chainId: '9'.repeat(400) }],
  ['a URI with spaces', { uri: 'https://a b.test/' }],
])('2: a signed message with %s -> 400 invalid message, the nonce not spent', async (_name, fields) => {
  const user = await pokerUser();
  const w = privateKeyToAccount(generatePrivateKey());
  const nonce = await nonceFor(user.headers, w.address);
  const message = rawSiwe({ address: w.address, nonce, ...fields });
  const res = await post('/api/link-wallet', user.headers, { message, signature: await w.signMessage({ message }), walletAddress: w.address, chainId: 1 });
  expect(res.status).toBe(400);
  expect(await res.json()).toEqual({ error: 'invalid message', code: 'invalid_message' });
  // the nonce still stands: a proper message under it links
  const proper = rawSiwe({ address: w.address, nonce, uri: `https://${DOMAIN}/` });
  const linked = await post('/api/link-wallet', user.headers, { message: proper, signature: await w.signMessage({ message: proper }), walletAddress: w.address, chainId: 1 });
  expect(linked.status).toBe(200);
});

test('5: any signed text carrying the issued nonce, however malformed, is a coded 4xx (property, seeded)', async () => {
  const user = await pokerUser();
  const w = privateKeyToAccount(generatePrivateKey());
  const line = fc.string({ maxLength: 60 }).map((s) => s.replace(/[\r\n]/g, ' '));
  await fc.assert(
    fc.asyncProperty(
      fc.record({ domain: fc.option(line, { nil: undefined }), uri: line, chainId: fc.option(fc.stringMatching(/^\d{1,30}$/), { nil: undefined }),
        issuedAt: fc.option(line, { nil: undefined }), extra: fc.option(line.map((s) => `\n${s}`), { nil: undefined }) }),
      async (fields) => {
        const message = rawSiwe({ address: w.address, nonce: await nonceFor(user.headers, w.address), ...fields });
        const res = await post('/api/link-wallet', user.headers, { message, signature: await w.signMessage({ message }), walletAddress: w.address, chainId: 1 });
        expect([200, 400, 401]).toContain(res.status);
        expect(await res.json()).toMatchObject(res.status === 200 ? { ok: true } : { error: expect.any(String) });
        if (res.status === 200) await fetch(`${role.url}/api/wallets/${w.address}`, { method: 'DELETE', headers: user.headers });
      },
    ),
    { seed: 10, numRuns: 60 },
  );
});
