// The dealer's signing key (server/game/hands/dealer-key.ts): one per deployment, kept in the
// database unless configured, published at GET /api/dealer/key; only the game login reads it.
import { ed25519 } from '@noble/curves/ed25519.js';
import { loadDealerSigner } from '../../server/game/hands/dealer-key.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';

let db: TestDatabase;
let platform: TestPlatform | undefined;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await platform?.stop();
  await db?.drop();
});

test('concurrent first boots all get the one key that won, and later boots reuse it', async () => {
  const game = db.pool('poker_game', 6);
  const first = await Promise.all(Array.from({ length: 6 }, () => loadDealerSigner(game)));
  expect(new Set(first.map((s) => s.publicKeyHex)).size).toBe(1);
  expect((await loadDealerSigner(game)).publicKeyHex).toBe(first[0]!.publicKeyHex);
  // the key signs what its public half verifies
  const message = new TextEncoder().encode('a record');
  expect(ed25519.verify(first[0]!.sign(message), message, first[0]!.publicKey)).toBe(true);
});

test('a configured key wins over the stored one', async () => {
  const secret = ed25519.utils.randomSecretKey();
  const signer = await loadDealerSigner(db.pool('poker_game', 1), Buffer.from(secret).toString('hex'));
  expect(signer.publicKeyHex).toBe(Buffer.from(ed25519.getPublicKey(secret)).toString('hex'));
});

test('the game login may fetch the key through its function only; no other login may', async () => {
  const game = db.pool('poker_game', 1);
  await expect(game.query('select private_key from game_private.dealer_keys')).rejects.toMatchObject({ code: '42501' });
  await expect(game.query('select game.dealer_private_key($1)', [Buffer.alloc(31)])).rejects.toMatchObject({ message: 'invalid_dealer_key' });
  for (const role of ['poker_cage', 'poker_worker', 'poker_auth', 'poker_bank', 'poker_anonymous'] as const) {
    await expect(db.pool(role, 1).query('select game.dealer_private_key($1)', [Buffer.alloc(32)])).rejects.toMatchObject({ code: '42501' });
  }
});

test('GET /api/dealer/key publishes the stored key\'s public half', async () => {
  platform = await startTestPlatform({ databaseUrl: db.url, roles: ['game'] });
  const res = await fetch(`${platform.url('game')}/api/dealer/key`);
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ algorithm: 'ed25519', publicKey: (await loadDealerSigner(db.pool('poker_game', 1))).publicKeyHex });
});
