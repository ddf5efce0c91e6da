// A link nonce belongs to the user who asked for it (issue 10): another user who asks for the nonce
// of your wallet neither replaces nor takes yours (griefing), and cannot link your wallet to
// themselves by submitting the message your wallet signed (hijack), for SIWE and for Solana alike.
import { ed25519 } from '@noble/curves/ed25519.js';
import { base58 } from '@scure/base';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { createSiweMessage } from 'viem/siwe';
import { startAuth } from '../../server/roles/auth.ts';
import { loadConfig } from '../../server/config/index.ts';
import type { StartedRole } from '../../server/roles/types.ts';
import { bridgedUser, queuedConditions } from '../helpers/auth.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { captureLogger } from '../helpers/logs.ts';

const ISSUER = 'https://auth.poker.test';
const DOMAIN = 'poker.test';
const ORIGIN = 'https://poker.test';
const SECRET = 'nonce-owner-test-secret-0123456789abcd';
const SERVICE_KEY = 'nonce-owner-service-key-0123456789';
let db: TestDatabase;
let role: StartedRole;
beforeAll(async () => {
  db = await createTestDatabase();
  role = await startAuth({
    config: loadConfig({
      NODE_ENV: 'test', PORT: '0', AUTH_SECRET: SECRET, AUTH_BASE_URL: ISSUER, AUTH_DOMAIN: DOMAIN, AUTH_TRUSTED_ORIGINS: ORIGIN,
      SERVICE_KEY,
    }),
    databaseUrl: db.url, log: captureLogger('silent').log,
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
const walletsOf = async (userId: string) =>
  (await db.owner.query('select address from auth.wallets where user_id = $1', [userId])).rows.map((r) => r.address as string);

describe('SIWE', () => {
  async function nonceFor(headers: Record<string, string>, address: string) {
    const res = await post('/api/auth/siwe/nonce', headers, { walletAddress: address, chainId: 1 });
    expect(res.status).toBe(200);
    return ((await res.json()) as { nonce: string }).nonce;
  }
  async function signedLink(account: PrivateKeyAccount, nonce: string) {
    const message = createSiweMessage({ address: account.address, chainId: 1, domain: DOMAIN, nonce, uri: `https://${DOMAIN}/wallets`, version: '1' });
    return { message, signature: await account.signMessage({ message }), walletAddress: account.address, chainId: 1 };
  }

  test('hijack: another user who asks for a nonce and submits the message your wallet signed links nothing', async () => {
    const [alice, mallory] = [await pokerUser(), await pokerUser()];
    const wallet = privateKeyToAccount(generatePrivateKey());
    await nonceFor(mallory.headers, wallet.address);
    const signedByAlice = await signedLink(wallet, await nonceFor(alice.headers, wallet.address));
    const stolen = await post('/api/link-wallet', mallory.headers, signedByAlice);
    expect(stolen.status).toBe(401);
    expect(await stolen.json()).toEqual({ error: 'message does not contain issued nonce', code: 'nonce_not_in_message' });
    const again = await post('/api/link-wallet', mallory.headers, signedByAlice);
    expect(await again.json()).toEqual({ error: 'no nonce', code: 'no_nonce' });
    expect(await walletsOf(mallory.userId)).toEqual([]);
    // Alice's nonce survived the attempt: her own submission links the wallet to her
    const own = await post('/api/link-wallet', alice.headers, signedByAlice);
    expect(own.status).toBe(200);
    expect(await walletsOf(alice.userId)).toEqual([wallet.address]);
  });

  test('griefing: another user asking for the nonce of your wallet leaves yours valid', async () => {
    const [alice, mallory] = [await pokerUser(), await pokerUser()];
    const wallet = privateKeyToAccount(generatePrivateKey());
    const aliceNonce = await nonceFor(alice.headers, wallet.address);
    for (let i = 0; i < 3; i++) await nonceFor(mallory.headers, wallet.address);
    const res = await post('/api/link-wallet', alice.headers, await signedLink(wallet, aliceNonce));
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ ok: true, walletAddress: wallet.address, isPrimary: true });
    expect(await walletsOf(mallory.userId)).toEqual([]);
  });
});

describe('Solana', () => {
  function wallet() {
    const secret = ed25519.utils.randomSecretKey();
    return { secret, address: base58.encode(ed25519.getPublicKey(secret)) };
  }
  async function challenge(headers: Record<string, string>, address: string) {
    const res = await post('/api/auth/solana/nonce', headers, { address });
    expect(res.status).toBe(200);
    return ((await res.json()) as { message: string }).message;
  }
  const signed = (w: ReturnType<typeof wallet>, message: string) => ({
    address: w.address, message, signature: base58.encode(ed25519.sign(new TextEncoder().encode(message), w.secret)),
  });

  test('hijack: another user submitting the message your wallet signed links nothing and claims no wallet_linked', async () => {
    const [alice, mallory] = [await pokerUser(), await pokerUser()];
    const w = wallet();
    await challenge(mallory.headers, w.address);
    const signedByAlice = signed(w, await challenge(alice.headers, w.address));
    const stolen = await post('/api/link-wallet/solana', mallory.headers, signedByAlice);
    expect(stolen.status).toBe(401);
    expect(await stolen.json()).toEqual({ error: 'message does not contain issued nonce', code: 'nonce_not_in_message' });
    const again = await post('/api/link-wallet/solana', mallory.headers, signedByAlice);
    expect(await again.json()).toEqual({ error: 'no nonce', code: 'no_nonce' });
    expect(await walletsOf(mallory.userId)).toEqual([]);
    const own = await post('/api/link-wallet/solana', alice.headers, signedByAlice);
    expect(own.status).toBe(200);
    expect(await walletsOf(alice.userId)).toEqual([w.address]);
    // the condition is queued in the link's transaction: Alice's once, Mallory's never
    expect((await queuedConditions(db, alice.userId)).filter((c) => c.conditionKey === 'wallet_linked')).toHaveLength(1);
    expect(await queuedConditions(db, mallory.userId)).toEqual([]);
  });

  test('griefing: another user asking for the nonce of your wallet leaves yours valid', async () => {
    const [alice, mallory] = [await pokerUser(), await pokerUser()];
    const w = wallet();
    const aliceMessage = await challenge(alice.headers, w.address);
    for (let i = 0; i < 3; i++) await challenge(mallory.headers, w.address);
    const res = await post('/api/link-wallet/solana', alice.headers, signed(w, aliceMessage));
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ ok: true, walletAddress: w.address, isPrimary: true });
    expect(await walletsOf(mallory.userId)).toEqual([]);
  });
});
