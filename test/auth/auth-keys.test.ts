// JWT signing keys: encrypted at rest, published without private parts, rotation without breaking
// tokens already issued, and verification by an independent verifier (jose, local JWKS).
import { randomUUID } from 'node:crypto';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, SignJWT, UnsecuredJWT } from 'jose';
import type pg from 'pg';
import { createKeyStore, KeyDecryptionError, openPrivateKey } from '../../server/auth/keys.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

const ISSUER = 'http://auth.test.local';
const SECRET = 'a-long-test-auth-secret-0123456789';
let db: TestDatabase;
let auth: pg.Pool;
beforeAll(async () => {
  db = await createTestDatabase();
  auth = db.pool('poker_auth', 4);
});
afterAll(async () => {
  await db.drop();
});

const verify = async (token: string, jwks: { keys: unknown[] }, overrides: { issuer?: string; audience?: string } = {}) =>
  jwtVerify(token, createLocalJWKSet(jwks as never), {
    issuer: overrides.issuer ?? ISSUER,
    audience: overrides.audience ?? ISSUER,
    algorithms: ['EdDSA'],
    requiredClaims: ['exp', 'iat', 'sub'],
  });

test('a signed token verifies against the published JWKS, which carries no private part', async () => {
  const store = createKeyStore(auth, { secret: SECRET, issuer: ISSUER });
  const sub = randomUUID();
  const token = await store.sign({ sub, email: 'p@example.com', walletAddress: null, authMethod: 'google' });
  const jwks = await store.jwks();
  for (const key of jwks.keys) {
    expect(key).toMatchObject({ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig' });
    expect(key).not.toHaveProperty('d');
  }
  const { payload, protectedHeader } = await verify(token, jwks);
  expect(protectedHeader).toMatchObject({ alg: 'EdDSA', typ: 'JWT', kid: await store.activeKid() });
  expect(payload).toMatchObject({ sub, iss: ISSUER, aud: ISSUER, walletAddress: null, authMethod: 'google' });
  expect(payload.exp! - payload.iat!).toBe(15 * 60);
  const stored = (await db.owner.query('select private_key_encrypted from auth_private.signing_keys')).rows;
  for (const row of stored) expect(row.private_key_encrypted.toString('utf8')).not.toMatch(/"d"\s*:/);
});

test('rotation: the old key stays published, so its tokens verify until they expire', async () => {
  const store = createKeyStore(auth, { secret: SECRET, issuer: ISSUER });
  const before = await store.sign({ sub: randomUUID() });
  const oldKid = decodeProtectedHeader(before).kid;
  const newKid = await store.rotate();
  expect(newKid).not.toBe(oldKid);
  const after = await store.sign({ sub: randomUUID() });
  expect(decodeProtectedHeader(after).kid).toBe(newKid);
  const jwks = await store.jwks();
  expect(jwks.keys.map((k) => k.kid)).toEqual(expect.arrayContaining([oldKid, newKid]));
  await expect(verify(before, jwks)).resolves.toBeTruthy();
  await expect(verify(after, jwks)).resolves.toBeTruthy();
  // once the old key's window has passed, it is no longer published
  await db.owner.query("update auth_private.signing_keys set retired_at = now() - interval '1 hour' where kid = $1", [oldKid]);
  const later = await store.jwks();
  expect(later.keys.map((k) => k.kid)).not.toContain(oldKid);
  await expect(verify(before, later)).rejects.toMatchObject({ code: 'ERR_JWKS_NO_MATCHING_KEY' });
});

test('concurrent first boots leave exactly one active key', async () => {
  const fresh = await createTestDatabase();
  try {
    const pool = fresh.pool('poker_auth', 6);
    const stores = Array.from({ length: 6 }, () => createKeyStore(pool, { secret: SECRET, issuer: ISSUER }));
    await Promise.all(stores.map((s) => s.activeKid()));
    const { rows } = await fresh.owner.query('select count(*)::int as n from auth_private.signing_keys where retired_at is null');
    expect(rows[0].n).toBe(1);
  } finally {
    await fresh.drop();
  }
});

test('another AUTH_SECRET cannot open the stored private key', async () => {
  const store = createKeyStore(auth, { secret: SECRET, issuer: ISSUER });
  const kid = await store.activeKid();
  const { rows } = await db.owner.query('select private_key_encrypted from auth_private.signing_keys where kid = $1', [kid]);
  expect(openPrivateKey(SECRET, kid, rows[0].private_key_encrypted)).toHaveProperty('d');
  expect(() => openPrivateKey('another-secret-entirely-0123456789', kid, rows[0].private_key_encrypted)).toThrow(KeyDecryptionError);
  const other = createKeyStore(auth, { secret: 'another-secret-entirely-0123456789', issuer: ISSUER });
  await expect(other.sign({ sub: randomUUID() })).rejects.toThrow(KeyDecryptionError);
});

describe('the verifier refuses', () => {
  let jwks: { keys: unknown[] };
  let good: string;
  beforeAll(async () => {
    const store = createKeyStore(auth, { secret: SECRET, issuer: ISSUER });
    good = await store.sign({ sub: randomUUID() });
    jwks = await store.jwks();
  });

  test('a wrong audience or issuer', async () => {
    await expect(verify(good, jwks, { audience: 'http://elsewhere' })).rejects.toMatchObject({ code: 'ERR_JWT_CLAIM_VALIDATION_FAILED' });
    await expect(verify(good, jwks, { issuer: 'http://elsewhere' })).rejects.toMatchObject({ code: 'ERR_JWT_CLAIM_VALIDATION_FAILED' });
  });

  test('an expired token', async () => {
    const store = createKeyStore(auth, { secret: SECRET, issuer: ISSUER });
    const old = await store.sign({ sub: randomUUID() }, { now: Math.floor(Date.now() / 1000) - 3600 });
    await expect(verify(old, jwks)).rejects.toMatchObject({ code: 'ERR_JWT_EXPIRED' });
  });

  test('alg none, and HS256 signed with the public key as the secret', async () => {
    const none = new UnsecuredJWT({ sub: randomUUID() }).setIssuer(ISSUER).setAudience(ISSUER).setIssuedAt().setExpirationTime('5m').encode();
    await expect(verify(none, jwks)).rejects.toBeTruthy();
    const publicX = Buffer.from((jwks.keys[0] as { x: string }).x, 'base64url');
    const hs = await new SignJWT({ sub: randomUUID() })
      .setProtectedHeader({ alg: 'HS256', kid: (jwks.keys[0] as { kid: string }).kid })
      .setIssuer(ISSUER).setAudience(ISSUER).setIssuedAt().setExpirationTime('5m')
      .sign(publicX);
    await expect(verify(hs, jwks)).rejects.toMatchObject({ code: 'ERR_JOSE_ALG_NOT_ALLOWED' });
  });

  test('one flipped bit in the signature, and an unknown kid', async () => {
    const [h, p, s] = good.split('.');
    const sig = Buffer.from(s!, 'base64url');
    sig[5] = sig[5]! ^ 0x01;
    await expect(verify(`${h}.${p}.${sig.toString('base64url')}`, jwks)).rejects.toMatchObject({ code: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' });
    const header = Buffer.from(JSON.stringify({ alg: 'EdDSA', kid: 'no-such-kid-000', typ: 'JWT' })).toString('base64url');
    await expect(verify(`${header}.${p}.${s}`, jwks)).rejects.toMatchObject({ code: 'ERR_JWKS_NO_MATCHING_KEY' });
  });

  test('a token missing a required claim', async () => {
    const store = createKeyStore(auth, { secret: SECRET, issuer: ISSUER });
    const noSub = await store.sign({ sub: undefined as unknown as string });
    await expect(verify(noSub, jwks)).rejects.toMatchObject({ code: 'ERR_JWT_CLAIM_VALIDATION_FAILED' });
  });
});
