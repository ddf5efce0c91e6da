// Solana linking by a signed message (ed25519, base58), the wallet_linked condition queued for the
// game role in the link's transaction, and every malformed input a 4xx, never a 500.
import { randomBytes } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { base58 } from '@scure/base';
import { startAuth } from '../../server/roles/auth.ts';
import { bridgedUser, queuedConditions } from '../helpers/auth.ts';
import { loadConfig } from '../../server/config/index.ts';
import type { StartedRole } from '../../server/roles/types.ts';
import { finishedSpans, installTelemetry, shutdownTelemetry } from '../../server/telemetry/index.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { captureLogger } from '../helpers/logs.ts';

const ISSUER = 'https://auth.poker.test';
const ORIGIN = 'https://poker.test';
const SECRET = 'solana-link-test-secret-0123456789abcd';
const SERVICE_KEY = 'solana-link-service-key-0123456789';
let db: TestDatabase;
let role: StartedRole;
beforeAll(async () => {
  await installTelemetry({ serviceName: 'solana-test', memory: true });
  db = await createTestDatabase();
  role = await startAuth({
    config: loadConfig({
      NODE_ENV: 'test', PORT: '0', AUTH_SECRET: SECRET, AUTH_BASE_URL: ISSUER, AUTH_DOMAIN: 'poker.test', AUTH_TRUSTED_ORIGINS: ORIGIN,
      SERVICE_KEY,
    }),
    databaseUrl: db.url, log: captureLogger('silent').log,
  });
});
afterAll(async () => {
  await role?.stop();
  await db?.drop();
  await shutdownTelemetry();
});

async function pokerUser() {
  const { userId, jwt } = await bridgedUser(db, { issuer: ISSUER });
  return { userId, headers: { authorization: `Bearer ${jwt}`, origin: ORIGIN, 'content-type': 'application/json' } };
}
function wallet() {
  const secret = ed25519.utils.randomSecretKey();
  return { secret, address: base58.encode(ed25519.getPublicKey(secret)) };
}
const post = (path: string, headers: Record<string, string>, body: unknown) =>
  fetch(`${role.url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
async function challenge(headers: Record<string, string>, address: string) {
  return (await (await post('/api/auth/solana/nonce', headers, { address })).json()) as { nonce: string; message: string };
}
const sign = (secret: Uint8Array, message: string) => base58.encode(ed25519.sign(new TextEncoder().encode(message), secret));

test('a signed message links the wallet verbatim with chain id 0, fires wallet_linked once, and is idempotent', async () => {
  const user = await pokerUser();
  const w = wallet();
  const { message } = await challenge(user.headers, w.address);
  const res = await post('/api/link-wallet/solana', user.headers, { address: w.address, message, signature: sign(w.secret, message) });
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ ok: true, walletAddress: w.address, chainId: 0, isPrimary: true });
  const row = (await db.owner.query('select address, chain, chain_id from auth.wallets where user_id = $1', [user.userId])).rows[0];
  expect(row).toEqual({ address: w.address, chain: 'solana', chain_id: 0 });
  // queued for the game role in the link's transaction (the worker delivers it)
  expect(await queuedConditions(db, user.userId)).toEqual([
    { userId: user.userId, conditionKey: 'wallet_linked', idempotencyKey: `wallet_linked:${user.userId}:${w.address}` },
  ]);
  expect(finishedSpans().some((s) => s.name === 'auth.wallet.solana_linked' && s.attributes['auth.user_id'] === user.userId)).toBe(true);

  const again = await challenge(user.headers, w.address);
  const res2 = await post('/api/link-wallet/solana', user.headers, { address: w.address, message: again.message, signature: sign(w.secret, again.message) });
  expect(await res2.json()).toMatchObject({ alreadyLinked: true });
  expect(await queuedConditions(db, user.userId)).toHaveLength(1);
});

test('bad base58, wrong key or signature length, another key\'s signature, replay: 4xx, never 500', async () => {
  const user = await pokerUser();
  const [w, other] = [wallet(), wallet()];
  const { message } = await challenge(user.headers, w.address);
  const cases: [unknown, number][] = [
    [{ address: '0OIl' + w.address.slice(4), message, signature: sign(w.secret, message) }, 400],
    [{ address: base58.encode(randomBytes(20)), message, signature: sign(w.secret, message) }, 400],
    [{ address: w.address, message, signature: base58.encode(randomBytes(40)) }, 400],
    [{ address: w.address, message, signature: 'not base58 at all!' }, 400],
  ];
  for (const [body, status] of cases) {
    const res = await post('/api/link-wallet/solana', user.headers, body);
    expect(res.status).toBe(status);
  }
  // the nonce is still there (a 400 comes before it is taken); another key's signature spends it
  const forged = await post('/api/link-wallet/solana', user.headers, { address: w.address, message, signature: sign(other.secret, message) });
  expect(forged.status).toBe(401);
  expect(await forged.json()).toEqual({ error: 'invalid signature', code: 'invalid_signature' });
  const replay = await post('/api/link-wallet/solana', user.headers, { address: w.address, message, signature: sign(w.secret, message) });
  expect(replay.status).toBe(401);
  expect(await replay.json()).toEqual({ error: 'no nonce', code: 'no_nonce' });
});

test('Solana addresses are unique case-sensitively: another user cannot take it', async () => {
  const [alice, bob] = [await pokerUser(), await pokerUser()];
  const w = wallet();
  const a = await challenge(alice.headers, w.address);
  expect((await post('/api/link-wallet/solana', alice.headers, { address: w.address, message: a.message, signature: sign(w.secret, a.message) })).status).toBe(200);
  const b = await challenge(bob.headers, w.address);
  const res = await post('/api/link-wallet/solana', bob.headers, { address: w.address, message: b.message, signature: sign(w.secret, b.message) });
  expect(res.status).toBe(409);
});
