// Receipts: signed over the exact stored bytes, verifiable with the key the cage role publishes,
// which is the cage's own (never the database's) and must be pinned; stored under the ledger entry's
// own user.
import { randomInt, randomUUID } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import type pg from 'pg';
import { startCage } from '../../server/roles/cage.ts';
import { issueReceipt, loadReceiptSigner, receiptPayload, receiptViolations, signerFromPrivateKey, verifyReceipt } from '../../server/cage/receipts.ts';
import { KeyNotPinnedError, pinAsOwner, retireAsOwner } from '../../server/crypto/pins.ts';
import { testRoleKey } from '../helpers/keys.ts';
import { startTestPlatform } from '../helpers/platform.ts';
import { DEV_DB_ROLE_SECRET } from '../../server/db/roles.ts';
import { loadConfig } from '../../server/config/index.ts';
import type { StartedRole } from '../../server/roles/types.ts';
import { createLogger } from '../../server/telemetry/index.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { correct, expectCleanAudit, fund, systemAccount, userAccount } from '../helpers/cage.ts';

let db: TestDatabase;
let cage: pg.Pool;
let role: StartedRole;
beforeAll(async () => {
  db = await createTestDatabase();
  cage = db.pool('poker_cage');
  role = await startCage({ config: loadConfig({ NODE_ENV: 'test', CAGE_PORT: '0' }), databaseUrl: db.url, log: createLogger('silent') });
});
afterAll(async () => {
  await role?.stop();
  await expectCleanAudit(cage);
  await db.drop();
});

const testConfig = (env: Record<string, string> = {}) => loadConfig({ ...process.env, NODE_ENV: 'test', ...env });

/** A ledger entry a receipt may be issued for: a settlement of the user's position (its withdraw intent, made by the owner). */
async function settle() {
  const user = await userAccount(db.owner);
  await fund(db.owner, user.id, 100n);
  const house = await systemAccount(db.owner, 'house');
  const { refId: ref } = await correct(db.owner, [user.id, house], [-1n, 1n]);
  await db.owner.query(
    `insert into cage.withdraw_intents (idempotency_key, ledger_ref_id, user_id, table_id, player_id, amount, history_hash, settlement)
     values ($1, $2, $3, 't1', $4, 1, '0xabc', 'cash_out')`,
    [`k-${randomUUID()}`, ref, user.userId, randomInt(1, 2 ** 47)],
  );
  return { userId: user.userId, ref };
}

const roleSigner = async () => signerFromPrivateKey(await testRoleKey('cage'));

test('GET /api/cage/receipt-key publishes the ed25519 key; a receipt verifies with it and fails on one changed byte', async () => {
  const res = await fetch(`${role.url}/api/cage/receipt-key`);
  expect(res.status).toBe(200);
  const key = (await res.json()) as { algorithm: string; publicKey: string };
  expect(key.algorithm).toBe('ed25519');
  expect(key.publicKey).toMatch(/^[0-9a-f]{64}$/);

  const { userId, ref } = await settle();
  const signer = await loadReceiptSigner(cage, testConfig());
  expect(signer.publicKeyHex).toBe(key.publicKey);
  const receipt = await issueReceipt(cage, signer, { ledgerRefId: ref, userId, tableId: 't1', historyHash: '0xabc', chipAmount: 99n });
  expect(receipt.replayed).toBe(false);

  const { rows } = await cage.query('select payload, signature from cage.receipts where ledger_ref_id = $1', [ref]);
  const payload = new Uint8Array(rows[0].payload);
  const signature = new Uint8Array(rows[0].signature);
  const publicKey = Buffer.from(key.publicKey, 'hex');
  expect(new TextDecoder().decode(payload)).toBe(
    `{"chipAmount":"99","historyHash":"0xabc","ledgerRefId":"${ref}","tableId":"t1","userId":"${userId}"}`,
  );
  expect(verifyReceipt(payload, signature, publicKey)).toBe(true);
  expect(ed25519.verify(signature, payload, publicKey)).toBe(true);

  for (const i of [0, Math.floor(payload.length / 2), payload.length - 1]) {
    const tampered = Uint8Array.from(payload);
    tampered[i] = tampered[i]! ^ 0x01;
    expect(verifyReceipt(tampered, signature, publicKey)).toBe(false);
  }
  const badSignature = Uint8Array.from(signature);
  badSignature[10] = badSignature[10]! ^ 0x80;
  expect(verifyReceipt(payload, badSignature, publicKey)).toBe(false);
});

test('the key is the cage\'s own file outside production, the same at every start, and it must be pinned', async () => {
  const [first, second] = await Promise.all([loadReceiptSigner(cage, testConfig()), loadReceiptSigner(cage, testConfig())]);
  expect(second.publicKeyHex).toBe(first.publicKeyHex);
  expect(first.source).toMatch(/receipt\.key$/);
  // nothing of it in the database: no table, no function the cage login may call returns it
  const { rows } = await cage.query(
    "select count(*)::int as n from pg_proc where proname like '%private_key%' and pronamespace::regnamespace::text in ('cage', 'cage_private')",
  );
  expect(rows[0].n).toBe(0);
});

test('a configured CAGE_RECEIPT_KEY is used once it is pinned; unpinned or retired, the cage refuses to start', async () => {
  const secret = ed25519.utils.randomSecretKey();
  const config = testConfig({ CAGE_RECEIPT_KEY: Buffer.from(secret).toString('hex') });
  await expect(loadReceiptSigner(cage, config)).rejects.toBeInstanceOf(KeyNotPinnedError);
  await expect(startCage({ config: loadConfig({ NODE_ENV: 'production', CAGE_PORT: '0', DB_ROLE_SECRET: DEV_DB_ROLE_SECRET, CAGE_RECEIPT_KEY: Buffer.from(secret).toString('hex') }), databaseUrl: db.url, log: createLogger('silent') }))
    .rejects.toThrow(/receipt key from CAGE_RECEIPT_KEY .* is not pinned/);
  await pinAsOwner(db.owner, 'receipt', ed25519.getPublicKey(secret));
  const signer = await loadReceiptSigner(cage, config);
  expect(signer.publicKeyHex).toBe(Buffer.from(ed25519.getPublicKey(secret)).toString('hex'));
  expect(signer.source).toBe('CAGE_RECEIPT_KEY');
  // retired: no new receipt under it, and no start
  const { userId, ref } = await settle();
  await retireAsOwner(db.owner, 'receipt', ed25519.getPublicKey(secret));
  await expect(issueReceipt(cage, signer, { ledgerRefId: ref, userId })).rejects.toMatchObject({ code: 'CGKNP' });
  await expect(loadReceiptSigner(cage, config)).rejects.toBeInstanceOf(KeyNotPinnedError);
  await expect(pinAsOwner(db.owner, 'receipt', ed25519.getPublicKey(secret))).rejects.toMatchObject({ code: 'CGKRT' });
  await issueReceipt(cage, await roleSigner(), { ledgerRefId: ref, userId }); // the settlement keeps its one receipt
  // npm start's pinning (as the owner, outside production) says so rather than pinning it again
  await expect(startTestPlatform({ databaseUrl: db.url, roles: ['cage'], env: { CAGE_RECEIPT_KEY: Buffer.from(secret).toString('hex') } }))
    .rejects.toThrow(/the receipt key from CAGE_RECEIPT_KEY was retired: it is never pinned again/);
});

test('a replayed settle returns the original receipt, bytes and signature', async () => {
  const { userId, ref } = await settle();
  const signer = await roleSigner();
  const original = await issueReceipt(cage, signer, { ledgerRefId: ref, userId, amount: 5n });
  const replay = await issueReceipt(cage, signer, { ledgerRefId: ref, userId, amount: 6n });
  expect(replay.replayed).toBe(true);
  expect(replay.id).toBe(original.id);
  expect(Buffer.compare(replay.payload, original.payload)).toBe(0);
  expect(Buffer.compare(replay.signature, original.signature)).toBe(0);
  expect(verifyReceipt(replay.payload, replay.signature, replay.publicKey)).toBe(true);
  // a payload that names another user than the entry's own is refused, replay or not
  const other = await settle();
  await expect(issueReceipt(cage, signer, { ledgerRefId: other.ref, userId: randomUUID() })).rejects.toMatchObject({ code: 'CGRCP' });
  expect((await issueReceipt(cage, signer, { ledgerRefId: other.ref, userId: other.userId })).userId).toBe(other.userId);
});

test('the receipts check: every receipt verifies against a pinned receipt key; a forged one is named', async () => {
  const { userId, ref } = await settle();
  await issueReceipt(cage, await roleSigner(), { ledgerRefId: ref, userId });
  expect((await receiptViolations(db.pool('poker_worker', 1))).violations).toEqual([]);
  // what only the owner can do now: a receipt whose signature is not its key's
  const forged = await settle();
  const signer = await roleSigner();
  await db.owner.query(
    'insert into cage.receipts (ledger_ref_id, user_id, payload, signature, public_key) values ($1, $2, $3, $4, $5)',
    [forged.ref, forged.userId, Buffer.from('{}'), Buffer.alloc(64, 7), Buffer.from(signer.publicKey)],
  );
  const { violations, lastId } = await receiptViolations(db.pool('poker_worker', 1));
  expect(violations).toEqual([expect.objectContaining({ invariant: 'receipt_signature', detail: { ledgerRefId: forged.ref, problem: 'signature does not verify' } })]);
  expect((await receiptViolations(db.pool('poker_worker', 1), { afterId: lastId })).violations).toEqual([]);
});

test('receipts need a ledger entry and are append-only', async () => {
  const signer = await roleSigner();
  await expect(issueReceipt(cage, signer, { ledgerRefId: 'no-such-entry', userId: randomUUID() })).rejects.toMatchObject({ code: 'CGRCP' });
  await expect(db.owner.query('update cage.receipts set payload = $1', [Buffer.from('x')])).rejects.toMatchObject({ code: 'CGIMM' });
  await expect(cage.query('delete from cage.receipts')).rejects.toMatchObject({ code: '42501' });
});

test('the canonical payload is stable whatever the key order', () => {
  expect(Buffer.from(receiptPayload({ b: 1n, a: 'x', c: { z: null, y: [2n] } })).toString()).toBe('{"a":"x","b":"1","c":{"y":["2"],"z":null}}');
});

test('the signer (node crypto) signs exactly what @noble/curves would, and noble verifies it', () => {
  for (let i = 0; i < 5; i++) {
    const secret = ed25519.utils.randomSecretKey();
    const payload = receiptPayload({ i: BigInt(i), kind: 'cash_out', ledgerRefId: `withdraw:${i}` });
    const signature = signerFromPrivateKey(secret).sign(payload);
    expect(Buffer.from(signature).toString('hex')).toBe(Buffer.from(ed25519.sign(payload, secret)).toString('hex'));
    expect(ed25519.verify(signature, payload, ed25519.getPublicKey(secret))).toBe(true);
  }
});
