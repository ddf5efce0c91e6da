// The admin command, run as a real child process against a test database.
import { spawn } from 'node:child_process';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

function run(args: string[], env: Record<string, string>, stdin?: string): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['server/cli/create-admin.ts', ...args], {
      env: { PATH: process.env.PATH!, NODE_ENV: 'test', DATABASE_URL: db.url, LOG_LEVEL: 'silent', ...env },
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (err += c));
    child.on('close', (code) => resolve({ code, out, err }));
    child.stdin.end(stdin ?? '');
  });
}

test('creates an admin from ADMIN_PASSWORD, then refuses the same email', async () => {
  const first = await run(['--email', 'root@example.com'], { ADMIN_PASSWORD: 'a-long-enough-password' });
  expect(first.code).toBe(0);
  expect(first.out).toMatch(/^admin root@example\.com created: [0-9a-f-]{36}\n$/);
  const row = (await db.owner.query("select password_hash from auth_private.credentials where email = 'root@example.com'")).rows[0];
  expect(row.password_hash).toMatch(/^scrypt\$/);
  expect(row.password_hash).not.toContain('a-long-enough-password');
  const again = await run(['--email', 'ROOT@example.com'], { ADMIN_PASSWORD: 'a-long-enough-password' });
  expect(again.code).toBe(1);
  expect(again.err).toMatch(/already exists/);
});

test('reads the password from stdin; refuses short passwords and bad usage', async () => {
  expect((await run(['--email', 'stdin@example.com'], {}, 'password-from-stdin\n')).code).toBe(0);
  expect((await run(['--email', 'short@example.com'], {}, 'short\n'))).toMatchObject({ code: 2, err: expect.stringMatching(/at least 12/) });
  expect((await run(['--email'], {}, ''))).toMatchObject({ code: 2, err: expect.stringMatching(/usage/) });
  expect((await run(['--email', 'not-an-email'], { ADMIN_PASSWORD: 'a-long-enough-password' }))).toMatchObject({ code: 2 });
});
