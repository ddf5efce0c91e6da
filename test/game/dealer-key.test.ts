// The dealer's signing key (server/game/hands/dealer-key.ts; issue 31): the game process's own
// (GAME_DEALER_KEY, or outside production a 0600 key file), never in the database; the database keeps
// the pinned public halves, pinned and retired by an operator's live session or the owner; a game
// process whose key is not pinned does not start. Published at GET /api/dealer/key.
import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { MissingKeyError } from '../../server/crypto/key-files.ts';
import { DealerKeyNotPinnedError, loadDealerSigner, pinDevelopmentDealerKey, requirePinned } from '../../server/game/hands/dealer-key.ts';
import { fixtureOperatorSession } from '../helpers/cage.ts';
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

const devConfig = () => ({ NODE_ENV: 'development', PG_DATA_DIR: join(mkdtempSync(join(tmpdir(), 'dealer-key-')), 'postgres') });

test('outside production the key is a file of its own (0600), made once: concurrent first starts get the one that won', async () => {
  const config = devConfig();
  const first = await Promise.all(Array.from({ length: 6 }, () => loadDealerSigner(config)));
  expect(new Set(first.map((s) => s.signer.publicKeyHex)).size).toBe(1);
  expect((await loadDealerSigner(config)).signer.publicKeyHex).toBe(first[0]!.signer.publicKeyHex);
  expect(statSync(first[0]!.source).mode & 0o777).toBe(0o600);
  const message = new TextEncoder().encode('a record');
  expect(ed25519.verify(first[0]!.signer.sign(message), message, first[0]!.signer.publicKey)).toBe(true);
});

test('a configured key wins; production without one refuses', async () => {
  const secret = ed25519.utils.randomSecretKey();
  const { signer, source } = await loadDealerSigner({ ...devConfig(), GAME_DEALER_KEY: Buffer.from(secret).toString('hex') });
  expect(signer.publicKeyHex).toBe(Buffer.from(ed25519.getPublicKey(secret)).toString('hex'));
  expect(source).toBe('GAME_DEALER_KEY');
  await expect(loadDealerSigner({ ...devConfig(), NODE_ENV: 'production' })).rejects.toBeInstanceOf(MissingKeyError);
});

test('pinning is an operator act or the owner\'s: the game login only reads the public halves', async () => {
  const game = db.pool('poker_game', 1);
  const key = Buffer.from(ed25519.getPublicKey(ed25519.utils.randomSecretKey())).toString('hex');
  await expect(requirePinned(game, key)).rejects.toBeInstanceOf(DealerKeyNotPinnedError);
  const { sid } = await fixtureOperatorSession(db.owner);
  for (const fn of ['game.pin_dealer_key', 'game.retire_dealer_key']) {
    await expect(game.query(`select * from ${fn}($1, $2)`, [sid, key])).rejects.toMatchObject({ code: '42501' });
  }
  await expect(game.query('select * from game_private.dealer_public_keys')).rejects.toMatchObject({ code: '42501' });
  // an operator's live session pins it (the admin role's POST /api/dealer-keys runs this as poker_admin)
  await expect(db.owner.query('select * from game.pin_dealer_key($1, $2)', ['00000000-0000-4000-8000-000000000000', key])).rejects.toMatchObject({ message: 'admin_session_required' });
  const { rows: [pinned] } = await db.owner.query('select * from game.pin_dealer_key($1, $2)', [sid, key]);
  expect(pinned).toMatchObject({ public_key: key, retired_at: null, pinned_by: expect.stringMatching(/^admin:/) });
  expect((await requirePinned(game, key)).map((k) => k.public_key)).toContain(key);
  await db.owner.query('select * from game.retire_dealer_key($1, $2)', [sid, key]);
  await expect(requirePinned(game, key)).rejects.toBeInstanceOf(DealerKeyNotPinnedError);
  await expect(db.owner.query('select * from game.pin_dealer_key($1, $2)', [sid, 'not-a-key'])).rejects.toMatchObject({ message: 'invalid_dealer_key' });
});

test('the development start pins its own key as the owner; GET /api/dealer/key publishes it with the pinned list', async () => {
  const secret = Buffer.from(ed25519.utils.randomSecretKey()).toString('hex');
  const publicKey = Buffer.from(ed25519.getPublicKey(Buffer.from(secret, 'hex'))).toString('hex');
  expect(await pinDevelopmentDealerKey(db.url, { NODE_ENV: 'production', PG_DATA_DIR: '/nonexistent', GAME_DEALER_KEY: secret })).toBeNull();
  await expect(requirePinned(db.pool('poker_game', 1), publicKey)).rejects.toBeInstanceOf(DealerKeyNotPinnedError);
  platform = await startTestPlatform({ databaseUrl: db.url, roles: ['game'], env: { GAME_DEALER_KEY: secret } });
  const res = await fetch(`${platform.url('game')}/api/dealer/key`);
  expect(res.status).toBe(200);
  const body = await res.json() as { pinned: unknown[] };
  expect(body).toMatchObject({ algorithm: 'ed25519', publicKey });
  expect(body.pinned).toEqual(expect.arrayContaining([expect.objectContaining({ publicKey, retiredAt: null })]));
});
