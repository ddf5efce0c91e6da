// JWT signing keys: the auth process's own (never in the database), published without private parts
// and only when pinned (by an operator or the owner, never the auth login), rotation without
// breaking tokens already issued, and verification by an independent verifier (jose, local JWKS).
import { randomUUID } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, SignJWT, UnsecuredJWT } from 'jose';
import type pg from 'pg';
import { createKeyStore, kidOf } from '../../server/auth/keys.ts';
import { KeyNotPinnedError, pinAsOwner, retireAsOwner } from '../../server/crypto/pins.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { testRoleKey } from '../helpers/keys.ts';

const ISSUER = 'http://auth.test.local';
let db: TestDatabase;
let auth: pg.Pool;
let privateKey: Uint8Array;
beforeAll(async () => {
  db = await createTestDatabase();
  auth = db.pool('poker_auth', 4);
  privateKey = await testRoleKey('auth');
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
  const store = createKeyStore(auth, { privateKey, issuer: ISSUER });
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
  // the database holds no private part: no table of the auth schemas has one
  const { rows } = await db.owner.query(
    "select count(*)::int as n from information_schema.columns where table_schema in ('auth', 'auth_private') and column_name like '%private%'",
  );
  expect(rows[0].n).toBe(0);
});

test('an unpinned key signs nothing and is not published; pinned, it is', async () => {
  const secret = ed25519.utils.randomSecretKey();
  const store = createKeyStore(auth, { privateKey: secret, issuer: ISSUER, source: 'AUTH_JWT_KEY' });
  await expect(store.activeKid()).rejects.toBeInstanceOf(KeyNotPinnedError);
  await expect(store.sign({ sub: randomUUID() })).rejects.toThrow(/jwt key from AUTH_JWT_KEY .* is not pinned/);
  expect((await store.jwks()).keys.map((k) => k.kid)).not.toContain(kidOf(ed25519.getPublicKey(secret)));
  await pinAsOwner(db.owner, 'jwt', ed25519.getPublicKey(secret));
  expect(await store.activeKid()).toBe(kidOf(ed25519.getPublicKey(secret)));
  await expect(verify(await store.sign({ sub: randomUUID() }), await store.jwks())).resolves.toBeTruthy();
});

test('rotation: a retired key signs no more but stays published, so its tokens verify until they expire', async () => {
  const oldSecret = ed25519.utils.randomSecretKey();
  const newSecret = ed25519.utils.randomSecretKey();
  await pinAsOwner(db.owner, 'jwt', ed25519.getPublicKey(oldSecret));
  const oldStore = createKeyStore(auth, { privateKey: oldSecret, issuer: ISSUER });
  const before = await oldStore.sign({ sub: randomUUID() });
  const oldKid = decodeProtectedHeader(before).kid;
  // the operator's rotation: pin the new key, start the auth role with it, retire the old one
  await pinAsOwner(db.owner, 'jwt', ed25519.getPublicKey(newSecret));
  const newStore = createKeyStore(auth, { privateKey: newSecret, issuer: ISSUER });
  await retireAsOwner(db.owner, 'jwt', ed25519.getPublicKey(oldSecret));
  await expect(oldStore.sign({ sub: randomUUID() })).rejects.toBeInstanceOf(KeyNotPinnedError);
  const after = await newStore.sign({ sub: randomUUID() });
  const newKid = decodeProtectedHeader(after).kid;
  expect(newKid).not.toBe(oldKid);
  const jwks = await newStore.jwks();
  expect(jwks.keys.map((k) => k.kid)).toEqual(expect.arrayContaining([oldKid, newKid]));
  await expect(verify(before, jwks)).resolves.toBeTruthy();
  await expect(verify(after, jwks)).resolves.toBeTruthy();
  // once the old key's window has passed, it is no longer published
  const { rows } = await db.owner.query(
    "select count(*)::int as n from auth.jwt_public_keys(0) where public_key = $1", [Buffer.from(ed25519.getPublicKey(oldSecret))],
  );
  expect(rows[0].n).toBe(0);
});

test('the auth login cannot pin or retire a key, nor read a pinned key table', async () => {
  const mine = Buffer.from(ed25519.getPublicKey(ed25519.utils.randomSecretKey()));
  await expect(auth.query("select * from cage.pin_key(gen_random_uuid(), 'jwt', $1)", [mine])).rejects.toMatchObject({ code: '42501' });
  await expect(auth.query("select * from cage_private.pin_key(null, 'jwt', $1)", [mine])).rejects.toMatchObject({ code: '42501' });
  await expect(auth.query('select * from cage_private.pinned_keys')).rejects.toMatchObject({ code: '42501' });
});

describe('the verifier refuses', () => {
  let jwks: { keys: unknown[] };
  let good: string;
  beforeAll(async () => {
    const store = createKeyStore(auth, { privateKey, issuer: ISSUER });
    good = await store.sign({ sub: randomUUID() });
    jwks = await store.jwks();
  });

  test('a wrong audience or issuer', async () => {
    await expect(verify(good, jwks, { audience: 'http://elsewhere' })).rejects.toMatchObject({ code: 'ERR_JWT_CLAIM_VALIDATION_FAILED' });
    await expect(verify(good, jwks, { issuer: 'http://elsewhere' })).rejects.toMatchObject({ code: 'ERR_JWT_CLAIM_VALIDATION_FAILED' });
  });

  test('an expired token', async () => {
    const store = createKeyStore(auth, { privateKey, issuer: ISSUER });
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
    const store = createKeyStore(auth, { privateKey, issuer: ISSUER });
    const noSub = await store.sign({ sub: undefined as unknown as string });
    await expect(verify(noSub, jwks)).rejects.toMatchObject({ code: 'ERR_JWT_CLAIM_VALIDATION_FAILED' });
  });
});
