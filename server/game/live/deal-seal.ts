// A committed server seed, sealed for the database (issue 31; docs/dealer.md, "Every commitment is
// revealed"). The table keeps the seed of every committed deal so that a deal a process never played
// to its end (a restart, an unload) is revealed by the next room of the table; the game login reads
// those rows, so the seed is sealed: AES-256-GCM under a key only the game process can make, HKDF-SHA256
// over the dealer's Ed25519 signature of a fixed text (an Ed25519 signature is deterministic: every
// process holding the dealer key makes the same key, and nothing about how the key is loaded changes).
// The sealed text binds the hand (table, hand id, commitment) as associated data, so a sealed seed
// moved to another hand does not open.
import { createCipheriv, createDecipheriv, createSecretKey, hkdfSync, randomBytes, type KeyObject } from 'node:crypto';
import type { Ed25519Signer } from '../../crypto/signing.ts';

const LABEL = 'deal-seed-seal-v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

// (a KeyObject made once: a raw key is checked and imported again by every cipher, about 20 µs a seal)
const keys = new WeakMap<Ed25519Signer, KeyObject>();

function keyOf(signer: Ed25519Signer): KeyObject {
  let key = keys.get(signer);
  if (!key) {
    const secret = signer.sign(new TextEncoder().encode(LABEL));
    key = createSecretKey(Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), LABEL, 32)));
    keys.set(signer, key);
  }
  return key;
}

/** What a sealed seed is bound to. */
export interface SealedFor {
  tableId: string;
  handId: string;
  commitment: string;
}

const aad = (at: SealedFor) => Buffer.from(`${LABEL}\n${at.tableId}\n${at.handId}\n${at.commitment}`, 'utf8');

/** hex(iv ‖ tag ‖ ciphertext) of the seed. */
export function sealSeed(signer: Ed25519Signer, at: SealedFor, seed: Uint8Array): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', keyOf(signer), iv).setAAD(aad(at));
  const body = Buffer.concat([cipher.update(seed), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('hex');
}

/** The seed, or null when the seal does not open (another key, another hand, a changed text). */
export function unsealSeed(signer: Ed25519Signer, at: SealedFor, sealed: string): Uint8Array | null {
  try {
    const bytes = Buffer.from(sealed, 'hex');
    if (bytes.length <= IV_BYTES + TAG_BYTES) return null;
    const decipher = createDecipheriv('aes-256-gcm', keyOf(signer), bytes.subarray(0, IV_BYTES)).setAAD(aad(at));
    decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return new Uint8Array(Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]));
  } catch {
    return null;
  }
}
