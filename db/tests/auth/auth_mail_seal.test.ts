// The worker's mail seal (issue 31, class 6): RSA-OAEP-SHA-256 computed in SQL
// (auth_private.seal_for_worker) opens with Node's own OAEP for the pinned key's private half, and
// with no other key; pinning is the owner's alone, and the last pinned key is the live one.
import { randomBytes } from 'node:crypto';
import { generateMailKeyPem, loadMailKey, openSealed, type MailKey } from '../../../server/worker/mail-key.ts';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/db.ts';

let db: TestDatabase;
const key = async (pem = generateMailKeyPem()) => (await loadMailKey({ configuredPem: pem, nodeEnv: 'test', pgDataDir: '' }))!;
const pin = (k: MailKey) => db.owner.query<{ changed: boolean }>('select auth_private.pin_mail_key($1, $2) as changed', [k.modulus, k.exponent]);
const seal = async (message: Buffer) =>
  (await db.owner.query<{ sealed: string | null }>('select auth_private.seal_for_worker($1) as sealed', [message])).rows[0]!.sealed;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

test('nothing is sealed before a key is pinned; a sealed message opens with the pinned key only, every time', async () => {
  expect(await seal(randomBytes(64))).toBeNull();
  const [live, other] = [await key(), await key()];
  expect((await pin(live)).rows[0]!.changed).toBe(true);
  expect((await pin(live)).rows[0]!.changed).toBe(false);
  for (const length of [0, 1, 32, 64, 190]) {
    const message = randomBytes(length);
    const sealed = (await seal(message))!;
    expect(openSealed(live, sealed)).toEqual(message);
    expect(openSealed(other, sealed)).toBeUndefined();
  }
  // 20 more: the leading bytes of the ciphertext integer and of the seed vary
  for (let i = 0; i < 20; i++) {
    const message = randomBytes(64);
    expect(openSealed(live, (await seal(message))!)).toEqual(message);
  }
  await expect(seal(randomBytes(191))).rejects.toThrow(/too long/);
  // a new pin retires the old key
  await pin(other);
  const message = randomBytes(64);
  const sealed = (await seal(message))!;
  expect([openSealed(other, sealed), openSealed(live, sealed)]).toEqual([message, undefined]);
});

test('no service login pins a mail key, seals with it or reads it', async () => {
  const k = await key();
  for (const login of ['poker_auth', 'poker_worker', 'poker_cage', 'poker_game', 'poker_betting', 'poker_bank'] as const) {
    const pool = db.pool(login, 1);
    await expect(pool.query('select auth_private.pin_mail_key($1, $2)', [k.modulus, k.exponent])).rejects.toMatchObject({ code: '42501' });
    await expect(pool.query('select auth_private.seal_for_worker($1)', [randomBytes(8)])).rejects.toMatchObject({ code: '42501' });
    await expect(pool.query('select * from auth_private.mail_keys')).rejects.toMatchObject({ code: '42501' });
  }
  await expect(db.owner.query('select auth_private.pin_mail_key($1, $2)', [randomBytes(64), k.exponent])).rejects.toThrow(/RSA modulus/);
  await expect(db.owner.query('select auth_private.pin_mail_key($1, $2)', [k.modulus, Buffer.from([3])])).rejects.toThrow(/65537/);
});
