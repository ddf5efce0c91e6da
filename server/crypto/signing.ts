// Ed25519 signatures over canonical JSON, shared by the cage's settlement receipts
// (server/cage/receipts.ts) and the dealer's hand records (server/game/hands/hand-record.ts): the
// payload is canonical JSON (sorted keys, bigint as decimal strings), so the same facts always
// give the same bytes, and those bytes are what is signed and stored.
import { createPrivateKey, sign as cryptoSign } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';

export interface Ed25519Signer {
  publicKey: Uint8Array;
  publicKeyHex: string;
  sign(payload: Uint8Array): Uint8Array;
}

export function canonicalJson(value: unknown): string {
  if (typeof value === 'bigint') return JSON.stringify(value.toString());
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

// PKCS#8 DER prefix of an Ed25519 private key (RFC 8410): the raw 32-byte seed follows it.
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/**
 * Signs with node's crypto (OpenSSL): byte-identical to @noble/curves' ed25519 (the signature is
 * deterministic), 40x faster, and it does not block the event loop for milliseconds per receipt.
 */
export function signerFromPrivateKey(privateKey: Uint8Array): Ed25519Signer {
  const publicKey = ed25519.getPublicKey(privateKey);
  const key = createPrivateKey({ key: Buffer.concat([ED25519_PKCS8_PREFIX, Buffer.from(privateKey)]), format: 'der', type: 'pkcs8' });
  return {
    publicKey,
    publicKeyHex: Buffer.from(publicKey).toString('hex'),
    sign: (payload) => new Uint8Array(cryptoSign(null, payload, key)),
  };
}

/** Verifies an Ed25519 signature over `payload` (false for anything malformed). */
export function verifyEd25519(payload: Uint8Array, signature: Uint8Array, publicKey: Uint8Array): boolean {
  try {
    return ed25519.verify(signature, payload, publicKey);
  } catch {
    return false;
  }
}
