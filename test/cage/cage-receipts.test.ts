// Receipts: signed over the exact stored bytes, verifiable with the key the cage role publishes.
import { randomUUID } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import type pg from 'pg';
import { startCage } from '../../server/roles/cage.ts';
import { issueReceipt, loadReceiptSigner, receiptPayload, signerFromPrivateKey, verifyReceipt } from '../../server/cage/receipts.ts';
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

async function settle() {
  const user = await userAccount(db.owner);
  await fund(db.owner, user.id, 100n);
  const house = await systemAccount(db.owner, 'house');
  const { refId: ref } = await correct(db.owner, [user.id, house], [-1n, 1n]);
  return { userId: user.userId, ref };
}

test('GET /api/cage/receipt-key publishes the ed25519 key; a receipt verifies with it and fails on one changed byte', async () => {
  const res = await fetch(`${role.url}/api/cage/receipt-key`);
  expect(res.status).toBe(200);
  const key = (await res.json()) as { algorithm: string; publicKey: string };
  expect(key.algorithm).toBe('ed25519');
  expect(key.publicKey).toMatch(/^[0-9a-f]{64}$/);

  const { userId, ref } = await settle();
  const signer = await loadReceiptSigner(cage);
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

test('the generated key is kept: every cage that boots on this database signs with the same key', async () => {
  const first = await loadReceiptSigner(cage);
  const [second, third] = await Promise.all([loadReceiptSigner(cage), loadReceiptSigner(cage)]);
  expect(second.publicKeyHex).toBe(first.publicKeyHex);
  expect(third.publicKeyHex).toBe(first.publicKeyHex);
});

test('a configured CAGE_RECEIPT_KEY wins over the stored one', async () => {
  const secret = ed25519.utils.randomSecretKey();
  const signer = await loadReceiptSigner(cage, Buffer.from(secret).toString('hex'));
  expect(signer.publicKeyHex).toBe(Buffer.from(ed25519.getPublicKey(secret)).toString('hex'));
});

test('a replayed settle returns the original receipt, bytes and signature', async () => {
  const { userId, ref } = await settle();
  const signer = signerFromPrivateKey(ed25519.utils.randomSecretKey());
  const original = await issueReceipt(cage, signer, { ledgerRefId: ref, userId, amount: 5n });
  const replay = await issueReceipt(cage, signer, { ledgerRefId: ref, userId, amount: 6n });
  expect(replay.replayed).toBe(true);
  expect(replay.id).toBe(original.id);
  expect(Buffer.compare(replay.payload, original.payload)).toBe(0);
  expect(Buffer.compare(replay.signature, original.signature)).toBe(0);
  expect(verifyReceipt(replay.payload, replay.signature, replay.publicKey)).toBe(true);
  await expect(issueReceipt(cage, signer, { ledgerRefId: ref, userId: randomUUID() })).rejects.toMatchObject({ code: 'CGRCC' });
});

test('receipts need a ledger entry and are append-only', async () => {
  const signer = signerFromPrivateKey(ed25519.utils.randomSecretKey());
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
