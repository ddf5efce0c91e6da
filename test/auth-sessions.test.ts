// Admin credentials and sessions: scrypt hashes, tokens stored hashed, expiry and revocation.
import { createHash, randomBytes } from 'node:crypto';
import type pg from 'pg';
import { DECOY_HASH, hashPassword, verifyPassword } from '../server/auth/passwords.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';

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

test('passwords: scrypt with a salt per hash; right, wrong and decoy', async () => {
  const [a, b] = await Promise.all([hashPassword('correct horse battery'), hashPassword('correct horse battery')]);
  expect(a).toMatch(/^scrypt\$32768\$8\$1\$[\w-]{22}\$[\w-]{43}$/);
  expect(a).not.toBe(b);
  expect(await verifyPassword('correct horse battery', a)).toBe(true);
  expect(await verifyPassword('correct horse batterz', a)).toBe(false);
  expect(await verifyPassword('anything', DECOY_HASH)).toBe(false);
  expect(await verifyPassword('anything', 'not-a-hash')).toBe(false);
});

test('an admin session: created for an admin only, found while live, gone when revoked or expired', async () => {
  const admin = (await db.owner.query('select auth.create_admin($1, $2) as id', ['Ops@Example.com', await hashPassword('pw-pw-pw-pw')])).rows[0].id;
  const creds = (await auth.query('select * from auth.admin_credentials($1)', ['ops@example.com'])).rows[0];
  expect(creds.user_id).toBe(admin);
  expect(await verifyPassword('pw-pw-pw-pw', creds.password_hash)).toBe(true);

  const token = randomBytes(32).toString('base64url');
  await auth.query('select auth.create_session($1, $2, 3600)', [admin, tokenHash(token)]);
  expect((await auth.query('select * from auth.session_for($1)', [tokenHash(token)])).rows[0]).toMatchObject({ user_id: admin, email: 'Ops@Example.com' });
  const stored = (await db.owner.query('select token_hash from auth_private.sessions where user_id = $1', [admin])).rows[0].token_hash;
  expect(stored.toString('utf8')).not.toContain(token);

  expect((await auth.query('select auth.revoke_session($1) as r', [tokenHash(token)])).rows[0].r).toBe(true);
  expect((await auth.query('select * from auth.session_for($1)', [tokenHash(token)])).rows).toEqual([]);
  expect((await auth.query('select auth.revoke_session($1) as r', [tokenHash(token)])).rows[0].r).toBe(false);

  const expiring = randomBytes(32).toString('base64url');
  await auth.query('select auth.create_session($1, $2, 60)', [admin, tokenHash(expiring)]);
  await db.owner.query("update auth_private.sessions set expires_at = now() - interval '1 second' where token_hash = $1", [tokenHash(expiring)]);
  expect((await auth.query('select * from auth.session_for($1)', [tokenHash(expiring)])).rows).toEqual([]);
});

test('no session for a poker (bridged) user, nor for a malformed request', async () => {
  await auth.query("select auth.mint_invite('inv-session-0001')");
  const user = (await auth.query("select user_id from auth.bridge_sign_in('oidc', 'sess-user', null, 'inv-session-0001')")).rows[0].user_id;
  await expect(auth.query('select auth.create_session($1, $2, 3600)', [user, tokenHash('x')])).rejects.toMatchObject({ code: 'AUSRQ' });
  await expect(auth.query('select auth.create_session($1, $2, 3600)', [user, Buffer.from('short')])).rejects.toMatchObject({ code: 'AUSRQ' });
  expect((await auth.query('select * from auth.admin_credentials($1)', ['nobody@example.com'])).rows).toEqual([]);
});
