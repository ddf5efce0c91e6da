// JWT signing keys for the auth role: Ed25519 (EdDSA), kept in the database with the private key
// encrypted under AUTH_SECRET (AES-256-GCM, key derived with HKDF-SHA256), published as a JWKS
// without private parts. Rotation adds a key and retires the others; a retired key stays published
// for the token lifetime plus skew, so every token it signed verifies until it expires.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { exportJWK, generateKeyPair, importJWK, SignJWT, type JWK, type JWTPayload } from 'jose';
import type pg from 'pg';
import { JWT_CLOCK_SKEW_SECONDS, UUID } from '../http/jwt.ts';

/** Lifetime of an access JWT (docs/decisions.md). */
export const ACCESS_TOKEN_TTL_SECONDS = 15 * 60;
/** Clock skew a verifier may allow, and so how long past a token's lifetime its key stays published. */
export const CLOCK_SKEW_SECONDS = JWT_CLOCK_SKEW_SECONDS;

const HKDF_SALT = 'poker-platform/auth/signing-keys';
const HKDF_INFO = 'aes-256-gcm v1';

function encryptionKey(secret: string): Buffer {
  return Buffer.from(hkdfSync('sha256', secret, HKDF_SALT, HKDF_INFO, 32));
}

/** iv (12) | tag (16) | ciphertext */
export function sealPrivateKey(secret: string, privateJwk: JWK): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', encryptionKey(secret), iv);
  const body = Buffer.concat([cipher.update(JSON.stringify(privateJwk), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]);
}

export class KeyDecryptionError extends Error {
  constructor(kid: string) {
    super(`signing key ${kid} cannot be decrypted with this AUTH_SECRET (was the secret changed?)`);
    this.name = 'KeyDecryptionError';
  }
}

export function openPrivateKey(secret: string, kid: string, sealed: Buffer): JWK {
  try {
    const decipher = createDecipheriv('aes-256-gcm', encryptionKey(secret), sealed.subarray(0, 12));
    decipher.setAuthTag(sealed.subarray(12, 28));
    const json = Buffer.concat([decipher.update(sealed.subarray(28)), decipher.final()]).toString('utf8');
    return JSON.parse(json) as JWK;
  } catch {
    throw new KeyDecryptionError(kid);
  }
}

export interface PublicJwks {
  keys: JWK[];
}

export interface KeyStore {
  /** The active key, created on first use. */
  activeKid(): Promise<string>;
  /** Adds a new key and retires the others; returns the new kid. */
  rotate(): Promise<string>;
  jwks(): Promise<PublicJwks>;
  /** Signs an access token with the active key: iss and aud are the auth base URL. */
  sign(claims: JWTPayload & { sub: string }, options?: { ttlSeconds?: number; now?: number }): Promise<string>;
}

interface StoredKey {
  kid: string;
  public_jwk: JWK;
  private_key_encrypted: Buffer;
  retired_at: Date | null;
}

export function createKeyStore(db: pg.Pool, options: { secret: string; issuer: string }): KeyStore {
  const publishWindow = ACCESS_TOKEN_TTL_SECONDS + CLOCK_SKEW_SECONDS;

  const load = async () =>
    (await db.query<StoredKey>('select kid, public_jwk, private_key_encrypted, retired_at from auth.signing_keys($1)', [publishWindow])).rows;

  async function addKey(): Promise<string> {
    const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
    const privateJwk = await exportJWK(privateKey);
    const kid = randomBytes(12).toString('base64url');
    const { d: _private, ...publicJwk } = privateJwk;
    await db.query('select auth.add_signing_key($1, $2, $3)', [
      kid,
      { ...publicJwk, kid, alg: 'EdDSA', use: 'sig' },
      sealPrivateKey(options.secret, { ...privateJwk, kid }),
    ]);
    return kid;
  }

  async function active(): Promise<StoredKey> {
    let keys = await load();
    if (!keys[0] || keys[0].retired_at) {
      await addKey();
      keys = await load();
    }
    return keys[0]!;
  }

  return {
    async activeKid() {
      return (await active()).kid;
    },
    rotate: addKey,
    async jwks() {
      await active();
      return { keys: (await load()).map((k) => k.public_jwk) };
    },
    async sign(claims, signOptions = {}) {
      const key = await active();
      const privateKey = await importJWK(openPrivateKey(options.secret, key.kid, key.private_key_encrypted), 'EdDSA');
      const now = signOptions.now ?? Math.floor(Date.now() / 1000);
      const ttl = signOptions.ttlSeconds ?? ACCESS_TOKEN_TTL_SECONDS;
      // every token names its grant (an operator's: their admin session): the SQL that acts for the
      // user derives them from it, never from an id a service passes
      // (a subject that is not a user id gets none: no verifier accepts its token anyway)
      const sid = typeof claims.sid === 'string' ? claims.sid
        : UUID.test(claims.sub) ? (await db.query<{ sid: string }>('select auth.grant_access($1, $2) as sid', [claims.sub, Math.min(86400, Math.max(1, ttl + CLOCK_SKEW_SECONDS))])).rows[0]!.sid
          : undefined;
      return new SignJWT(sid === undefined ? claims : { ...claims, sid })
        .setProtectedHeader({ alg: 'EdDSA', kid: key.kid, typ: 'JWT' })
        .setIssuer(options.issuer)
        .setAudience(options.issuer)
        .setIssuedAt(now)
        .setExpirationTime(now + ttl)
        .sign(privateKey);
    },
  };
}
