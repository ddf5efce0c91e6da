// Issue 31, class 5 ("Limits that live in TypeScript"): the sign-in attempt limit is enforced inside
// the SQL that checks the secret. Tried as a thief holding only the auth login's password: unlimited
// password guesses straight through the SQL, and the counters used to lock the real admin out.
import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import { derivePasswordKey, hashPassword } from '../../server/auth/passwords.ts';
import { loginUrl } from '../../server/db/roles.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

let db: TestDatabase;
let thief: pg.Client;
const EMAIL = 'the-admin@example.com';
const PASSWORD = 'the-admins-real-password';

beforeAll(async () => {
  db = await createTestDatabase();
  await db.owner.query('select auth.create_admin($1, $2)', [EMAIL, await hashPassword(PASSWORD)]);
  thief = new pg.Client({ connectionString: loginUrl(db.url, 'poker_auth', undefined) });
  await thief.connect();
});
afterAll(async () => {
  await thief?.end();
  await db?.drop();
});

const tokenHash = () => createHash('sha256').update(randomBytes(32)).digest();
async function keyOf(password: string) {
  const { rows } = await thief.query<{ params: string }>('select params from auth.admin_password_params($1)', [EMAIL]);
  return derivePasswordKey(password, rows[0]!.params);
}
/** One guess as the thief, through the SQL the auth role uses: 'ok', or the refusal's code. */
async function guess(key: Buffer) {
  return thief.query('select * from auth.create_session($1, $2, $3, 3600)', [EMAIL, key, tokenHash()])
    .then(() => 'ok', (err: { message: string }) => err.message);
}

test('class 5: the auth login guesses an admin\'s password without limit straight through auth.create_session', async () => {
  const wrong = await keyOf('not-the-password');
  const answers: string[] = [];
  for (let i = 0; i < 60; i++) answers.push(await guess(wrong));
  // 60 wrong guesses in a row: the limit (10 per account) must have stopped them
  expect(answers.filter((a) => a === 'invalid_credentials').length).toBeLessThanOrEqual(10);
  // and the right password, guessed now, is refused too: the thief cannot tell it was right
  expect(await guess(await keyOf(PASSWORD))).not.toBe('ok');
});

test('class 5: the auth login counts attempts against the admin\'s address and locks her out', async () => {
  const accountKey = createHash('sha256').update(EMAIL).digest('base64url');
  const lockout = await thief.query('select auth.count_attempt($1, 900)', [`sign-in:account:127.0.0.1:${accountKey}`])
    .then(() => 'counted', (err: { code: string }) => err.code);
  expect(lockout).toBe('42501');
});
