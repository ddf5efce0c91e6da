// JWT signing keys for the auth role: Ed25519 (EdDSA). The private key is the auth process's own
// (AUTH_JWT_KEY, or outside production its development file: server/crypto/pins.ts, roleKey), never
// in the database. The JWKS publishes the pinned jwt keys only (auth.jwt_public_keys: pinned by an
// operator or the owner, never by the auth login), so a key the auth login made up verifies nowhere.
// A retired key stays published for the token lifetime plus skew, so every token it signed verifies
// until it expires; this process signs only while its own key is pinned and active.
import { createHash } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { importJWK, SignJWT, type JWK, type JWTPayload } from 'jose';
import type pg from 'pg';
import { JWT_CLOCK_SKEW_SECONDS, UUID } from '../http/jwt.ts';
import { KeyNotPinnedError } from '../crypto/pins.ts';

/** Lifetime of an access JWT (docs/decisions.md). */
export const ACCESS_TOKEN_TTL_SECONDS = 15 * 60;
/** Clock skew a verifier may allow, and so how long past a token's lifetime its key stays published. */
export const CLOCK_SKEW_SECONDS = JWT_CLOCK_SKEW_SECONDS;
/** How long a retired key stays in the JWKS. */
export const PUBLISH_WINDOW_SECONDS = ACCESS_TOKEN_TTL_SECONDS + CLOCK_SKEW_SECONDS;

const b64url = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64url');

/** A key's id: derived from its public key (the first 16 bytes of its SHA-256), so every signer and the JWKS agree. */
export function kidOf(publicKey: Uint8Array): string {
  return b64url(createHash('sha256').update(publicKey).digest().subarray(0, 16));
}

/** The public JWK of an Ed25519 public key, as the JWKS publishes it. */
export function publicJwk(publicKey: Uint8Array): JWK {
  return { kty: 'OKP', crv: 'Ed25519', x: b64url(publicKey), kid: kidOf(publicKey), alg: 'EdDSA', use: 'sig' };
}

export interface PublicJwks {
  keys: JWK[];
}

export interface KeyStore {
  /** This process's key id; refuses (KeyNotPinnedError) unless its public half is pinned and active. */
  activeKid(): Promise<string>;
  /** The hex public key this process signs with. */
  publicKeyHex: string;
  jwks(): Promise<PublicJwks>;
  /** Signs an access token with this process's key: iss and aud are the auth base URL. */
  sign(claims: JWTPayload & { sub: string }, options?: { ttlSeconds?: number; now?: number }): Promise<string>;
}

export function createKeyStore(db: pg.Pool, options: { privateKey: Uint8Array; issuer: string; source?: string }): KeyStore {
  const publicKey = ed25519.getPublicKey(options.privateKey);
  const publicKeyHex = Buffer.from(publicKey).toString('hex');
  const kid = kidOf(publicKey);
  const signingKey = importJWK({ ...publicJwk(publicKey), d: b64url(options.privateKey) }, 'EdDSA');

  const published = async () =>
    (await db.query<{ public_key: Buffer; retired_at: Date | null }>(
      'select public_key, retired_at from auth.jwt_public_keys($1)', [PUBLISH_WINDOW_SECONDS],
    )).rows;

  async function activeKid(): Promise<string> {
    const own = (await published()).find((k) => k.public_key.toString('hex') === publicKeyHex);
    if (!own || own.retired_at) throw new KeyNotPinnedError('jwt', publicKeyHex, options.source ?? 'AUTH_JWT_KEY');
    return kid;
  }

  return {
    activeKid,
    publicKeyHex,
    async jwks() {
      return { keys: (await published()).map((k) => publicJwk(new Uint8Array(k.public_key))) };
    },
    async sign(claims, signOptions = {}) {
      await activeKid();
      const now = signOptions.now ?? Math.floor(Date.now() / 1000);
      const ttl = signOptions.ttlSeconds ?? ACCESS_TOKEN_TTL_SECONDS;
      // every token names its grant (an operator's: their admin session): the SQL that acts for the
      // user derives them from it, never from an id a service passes
      // (a subject that is not a user id gets none: no verifier accepts its token anyway)
      const sid = typeof claims.sid === 'string' ? claims.sid
        : UUID.test(claims.sub) ? (await db.query<{ sid: string }>('select auth.grant_access($1, $2) as sid', [claims.sub, Math.min(86400, Math.max(1, ttl + CLOCK_SKEW_SECONDS))])).rows[0]!.sid
          : undefined;
      return new SignJWT(sid === undefined ? claims : { ...claims, sid })
        .setProtectedHeader({ alg: 'EdDSA', kid, typ: 'JWT' })
        .setIssuer(options.issuer)
        .setAudience(options.issuer)
        .setIssuedAt(now)
        .setExpirationTime(now + ttl)
        .sign(await signingKey);
    },
  };
}
