// Settlement receipts: ed25519 (@noble/curves) over the exact payload bytes, which are stored
// verbatim. The payload is canonical JSON (sorted keys, bigint as decimal strings), so the same
// settlement always produces the same bytes.
import type pg from 'pg';
import type { Config } from '../config/index.ts';
import { receiptsAfter } from './queries.ts';
import { pinnedKeys, requireActive, roleKey } from '../crypto/pins.ts';
import { canonicalJson, signerFromPrivateKey, verifyEd25519, type Ed25519Signer } from '../crypto/signing.ts';

export const RECEIPT_ALGORITHM = 'ed25519';

/** The cage's receipt signer: an Ed25519 signer (server/crypto/signing.ts). */
export type ReceiptSigner = Ed25519Signer;
export { canonicalJson, signerFromPrivateKey };

export function receiptPayload(fields: Record<string, unknown>): Uint8Array {
  return new TextEncoder().encode(canonicalJson(fields));
}

/**
 * The cage's signer: the key it holds (CAGE_RECEIPT_KEY, or outside production its development
 * file: server/crypto/pins.ts, roleKey), never one from the database. Refuses (KeyNotPinnedError)
 * unless its public half is the pinned, active receipt key: nobody signs with a key nobody trusts.
 */
export async function loadReceiptSigner(pool: Pick<pg.Pool, 'query'>, config: Config): Promise<ReceiptSigner & { source: string }> {
  const { privateKey, source } = await roleKey(config, 'cage');
  const signer = signerFromPrivateKey(privateKey);
  requireActive(await pinnedKeys(pool, 'receipt'), 'receipt', signer.publicKey, source);
  return { ...signer, source };
}

/**
 * The receipts whose signature does not verify against a pinned receipt key (read from the
 * database: cage.pinned_keys), or that were stored after their key was retired: what a thief with
 * the cage login alone could store (store_receipt checks the key, not the signature: SQL cannot
 * verify ed25519). Receipts are append-only, so a caller may pass the last id it checked clean
 * (`afterId`) and read only what came after; `lastId` is where the next call may start.
 */
export async function receiptViolations(db: Pick<pg.Pool, 'query'>, options: { afterId?: bigint } = {}) {
  const pins = new Map((await pinnedKeys(db, 'receipt')).map((k) => [k.publicKey, k]));
  const rows = await receiptsAfter(db, options.afterId ?? 0n);
  const violations: { invariant: string; subject: string; detail: Record<string, unknown> }[] = [];
  for (const r of rows) {
    const pin = pins.get(r.public_key.toString('hex'));
    const problem = !pin ? 'its key is not a pinned receipt key'
      : pin.retiredAt !== null && pin.retiredAt < r.created_at ? 'stored after its key was retired'
        : !verifyEd25519(new Uint8Array(r.payload), new Uint8Array(r.signature), new Uint8Array(r.public_key)) ? 'signature does not verify'
          : undefined;
    if (problem) violations.push({ invariant: 'receipt_signature', subject: `receipt:${r.id}`, detail: { ledgerRefId: r.ledger_ref_id, problem } });
  }
  return { violations, lastId: rows.length ? rows[rows.length - 1]!.id : options.afterId ?? 0n };
}

/** Verifies a receipt: ed25519 over the stored payload bytes with the published key. */
export const verifyReceipt = verifyEd25519;

export interface StoredReceipt {
  id: bigint;
  ledgerRefId: string;
  userId: string;
  tableId: string | null;
  historyHash: string | null;
  payload: Buffer;
  signature: Buffer;
  publicKey: Buffer;
  createdAt: Date;
  replayed: boolean;
}

/**
 * Signs and stores the receipt of one settlement. A second call for the same ledger entry returns
 * the stored original (its bytes and signature), whatever the new fields say. SQL stores it under the
 * ledger entry's own user, and refuses a payload naming another.
 */
export async function issueReceipt(
  db: pg.Pool | pg.PoolClient,
  signer: ReceiptSigner,
  fields: { ledgerRefId: string; userId: string; tableId?: string; historyHash?: string; [k: string]: unknown },
): Promise<StoredReceipt> {
  const payload = receiptPayload(fields);
  const signature = signer.sign(payload);
  const { rows } = await db.query(
    `select (r.receipt).id, (r.receipt).ledger_ref_id, (r.receipt).user_id, (r.receipt).table_id,
            (r.receipt).history_hash, (r.receipt).payload, (r.receipt).signature, (r.receipt).public_key,
            (r.receipt).created_at, r.replayed
       from cage.store_receipt($1, $2, $3, $4, $5, $6) r`,
    [fields.ledgerRefId, fields.tableId ?? null, fields.historyHash ?? null,
      Buffer.from(payload), Buffer.from(signature), Buffer.from(signer.publicKey)],
  );
  const r = rows[0];
  return {
    id: r.id, ledgerRefId: r.ledger_ref_id, userId: r.user_id, tableId: r.table_id, historyHash: r.history_hash,
    payload: r.payload, signature: r.signature, publicKey: r.public_key, createdAt: r.created_at, replayed: r.replayed,
  };
}
