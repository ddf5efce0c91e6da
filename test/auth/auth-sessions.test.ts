// Admin credentials and sessions: scrypt hashes, tokens stored hashed, expiry and revocation.
import { createHash, randomBytes } from 'node:crypto';
import type pg from 'pg';
import { DECOY_HASH, DECOY_PARAMS, derivePasswordKey, hashPassword, verifyPassword } from '../../server/auth/passwords.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

let db: TestDatabase;
let auth: pg.Pool;
beforeAll(async () => {
  db = await createTestDatabase();
  auth = db.pool('poker_auth', 4);
});
afterAll(async () => {
  await db.drop();
});

const tokenHash = (token: string) => createHash('sha256').update(token).digest();
/** An attempt counted and bound (committed: their own statements) as the auth role does it, then the session it may open. */
async function counted(email: string, key: Buffer) {
  const { rows } = await auth.query<{ ticket: string }>("select ticket from auth.count_sign_in($1, '127.0.0.1', null, 100, 100, 900)", [email]);
  await auth.query('select auth.bind_sign_in($1, $2)', [rows[0]!.ticket, createHash('sha256').update(key).digest()]);
  return rows[0]!.ticket;
}
const openSession = async (email: string, key: Buffer, hash: Buffer, ttl = 3600) =>
  auth.query('select * from auth.create_session($1, $2, $3, $4, null)', [await counted(email, key), key, hash, ttl]);

test('passwords: scrypt with a salt per hash; right, wrong and decoy', async () => {
  const [a, b] = await Promise.all([hashPassword('correct horse battery'), hashPassword('correct horse battery')]);
  expect(a).toMatch(/^scrypt\$32768\$8\$1\$[\w-]{22}\$[\w-]{43}$/);
  expect(a).not.toBe(b);
  expect(await verifyPassword('correct horse battery', a)).toBe(true);
  expect(await verifyPassword('correct horse batterz', a)).toBe(false);
  expect(await verifyPassword('anything', DECOY_HASH)).toBe(false);
  expect(await verifyPassword('anything', 'not-a-hash')).toBe(false);
});

test('an admin session: opened only with proof of the password, found while live, gone when revoked or expired', async () => {
  const admin = (await db.owner.query('select auth.create_admin($1, $2) as id', ['Ops@Example.com', await hashPassword('pw-pw-pw-pw')])).rows[0].id;
  // the parameters, never the key
  const { params, user_id: found } = (await auth.query('select * from auth.admin_password_params($1)', ['ops@example.com'])).rows[0];
  expect(found).toBe(admin);
  expect(params).toMatch(/^scrypt\$32768\$8\$1\$[\w-]{22}$/);
  const key = await derivePasswordKey('pw-pw-pw-pw', params);
  const open = (email: string, k: Buffer, token: string, ttl = 3600) => openSession(email, k, tokenHash(token), ttl);

  const token = randomBytes(32).toString('base64url');
  expect((await open('ops@example.com', key, token)).rows[0]).toMatchObject({ user_id: admin, sid: expect.any(String) });
  expect((await auth.query('select * from auth.session_for($1)', [tokenHash(token)])).rows[0]).toMatchObject({ user_id: admin, email: 'Ops@Example.com' });
  const stored = (await db.owner.query('select token_hash from auth_private.sessions where user_id = $1', [admin])).rows[0].token_hash;
  expect(stored.toString('utf8')).not.toContain(token);

  expect((await auth.query('select auth.revoke_session($1) as r', [tokenHash(token)])).rows[0].r).toBe(true);
  expect((await auth.query('select * from auth.session_for($1)', [tokenHash(token)])).rows).toEqual([]);
  expect((await auth.query('select auth.revoke_session($1) as r', [tokenHash(token)])).rows[0].r).toBe(false);

  const expiring = randomBytes(32).toString('base64url');
  await open('ops@example.com', key, expiring, 60);
  await db.owner.query("update auth_private.sessions set expires_at = now() - interval '1 second' where token_hash = $1", [tokenHash(expiring)]);
  expect((await auth.query('select * from auth.session_for($1)', [tokenHash(expiring)])).rows).toEqual([]);

  // a wrong password's key, or none, opens nothing
  await expect(open('ops@example.com', await derivePasswordKey('pw-pw-pw-pz', params), randomBytes(32).toString('base64url'))).rejects.toMatchObject({ code: 'AUCRD' });
  await expect(open('ops@example.com', Buffer.alloc(32), randomBytes(32).toString('base64url'))).rejects.toMatchObject({ code: 'AUCRD' });
});

test('no session for a poker (bridged) user, an unknown email, nor a malformed request', async () => {
  await auth.query("select auth.mint_invite('inv-session-0001')");
  await auth.query("select user_id from auth.bridge_sign_in('oidc', 'sess-user', 'player@example.com', 'inv-session-0001')");
  for (const email of ['player@example.com', 'nobody@example.com']) {
    await expect(openSession(email, Buffer.alloc(32), tokenHash('x'))).rejects.toMatchObject({ code: 'AUCRD' });
  }
  await expect(openSession('ops@example.com', Buffer.alloc(32), Buffer.from('short'))).rejects.toMatchObject({ code: 'AUSRQ' });
  expect((await auth.query('select * from auth.admin_password_params($1)', ['nobody@example.com'])).rows).toEqual([]);
  expect(await derivePasswordKey('anything', DECOY_PARAMS)).toHaveLength(32);
});
