// Each service connects as its own LOGIN database role with only its grants; the admin GraphQL's
// login may only become poker_anonymous or poker_admin; the owner login is the migrator's alone.
import pg from 'pg';
import { DEV_DB_ROLE_SECRET, loginUrl, rolePassword, scramVerifier, SERVICE_LOGINS } from '../../server/db/roles.ts';
import { createRolePool, type DbRole } from '../../server/db/pools.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';

let db: TestDatabase;
let platform: TestPlatform | undefined;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await platform?.stop();
  await db?.drop();
});

const code = (p: Promise<unknown>) => p.then(() => 'ok', (err: { code?: string }) => err.code);

test.each([
  ['poker_cage', 'poker_cage'], ['poker_auth', 'poker_auth'], ['poker_game', 'poker_game'], ['poker_worker', 'poker_worker'],
  ['poker_betting', 'poker_betting'], ['poker_admin', 'poker_graphql'], ['poker_anonymous', 'poker_graphql'],
] as [DbRole, string][])('a %s pool logs in as %s and runs as its role', async (role, login) => {
  const pool = db.pool(role, 1);
  const { rows } = await pool.query('select session_user::text as login, current_user::text as role, (select rolsuper from pg_roles where rolname = session_user) as super');
  expect(rows[0]).toEqual({ login, role, super: false });
});

test.each(['poker_cage', 'poker_auth', 'poker_game', 'poker_worker', 'poker_betting'] as DbRole[])('the %s login cannot become another role or the owner', async (role) => {
  const pool = db.pool(role, 1);
  const owner = (await db.owner.query('select current_user::text as u')).rows[0].u as string;
  for (const other of ['poker_cage', 'poker_auth', 'poker_game', 'poker_worker', 'poker_betting', 'poker_admin', 'poker_anonymous', 'poker_graphql', owner].filter((r) => r !== role)) {
    expect([other, await code(pool.query(`set role ${other}`))]).toEqual([other, '42501']);
  }
});

test('the admin GraphQL login may switch to poker_anonymous and poker_admin only', async () => {
  const pool = db.pool('poker_anonymous', 1);
  const client = await pool.connect();
  try {
    for (const ok of ['poker_admin', 'poker_anonymous']) expect([ok, await code(client.query(`set role ${ok}`))]).toEqual([ok, 'ok']);
    for (const other of ['poker_cage', 'poker_auth', 'poker_game', 'poker_worker', 'poker_betting']) {
      expect([other, await code(client.query(`set role ${other}`))]).toEqual([other, '42501']);
    }
  } finally {
    client.release();
  }
});

test('a wrong password is refused (28P01); the stored verifier is SCRAM-SHA-256, never the password', async () => {
  for (const login of SERVICE_LOGINS) {
    const url = new URL(loginUrl(db.url, login));
    url.password = 'not-the-password';
    const client = new pg.Client({ connectionString: url.toString() });
    expect([login, await code(client.connect())]).toEqual([login, '28P01']);
    await client.end().catch(() => undefined);
  }
  const { rows } = await db.owner.query<{ rolname: string; rolpassword: string; rolcanlogin: boolean }>(
    'select rolname, rolpassword, rolcanlogin from pg_authid where rolname = any ($1) order by rolname', [[...SERVICE_LOGINS]],
  );
  expect(rows.map((r) => r.rolname)).toEqual([...SERVICE_LOGINS].sort());
  for (const r of rows) {
    expect(r.rolcanlogin).toBe(true);
    expect(r.rolpassword).toMatch(/^SCRAM-SHA-256\$4096:/);
    expect(r.rolpassword).not.toContain(rolePassword(r.rolname as (typeof SERVICE_LOGINS)[number], DEV_DB_ROLE_SECRET));
  }
  // the verifier format is PostgreSQL's: a login with a password whose verifier we computed works
  expect(scramVerifier('x', Buffer.alloc(16))).toMatch(/^SCRAM-SHA-256\$4096:[A-Za-z0-9+/=]{24}\$[A-Za-z0-9+/=]{44}:[A-Za-z0-9+/=]{44}$/);
});

test('the roles, the admin GraphQL and the worker of a running platform never connect as the owner', async () => {
  platform = await startTestPlatform({ databaseUrl: db.url, roles: ['auth', 'game', 'cage', 'admin', 'worker', 'betting'], env: { AUTH_SECRET: 'login-roles-test-secret-0123456789ab' } });
  // every role's pool has connected (health reads its database; the worker and the game presence run)
  for (const role of ['auth', 'game', 'cage', 'admin', 'betting'] as const) expect((await fetch(`${platform.url(role)}/health`)).status).toBe(200);
  const expected = ['auth', 'game', 'game-presence', 'cage', 'admin', 'worker', 'worker-jobs', 'betting'];
  const connections = async () => (await db.owner.query<{ application_name: string; usename: string }>(
    "select distinct application_name, usename::text from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and application_name <> ''",
  )).rows;
  // every pool has connected (the worker's may still be opening its first connection)
  let rows = await connections();
  for (let i = 0; i < 100 && !expected.every((a) => rows.some((r) => r.application_name === a)); i++) {
    await new Promise((r) => setTimeout(r, 50));
    rows = await connections();
  }
  const byApp = Object.fromEntries(rows.map((r) => [r.application_name, r.usename]));
  expect(byApp).toMatchObject({
    auth: 'poker_auth', game: 'poker_game', 'game-presence': 'poker_game', cage: 'poker_cage', admin: 'poker_graphql', worker: 'poker_worker',
    'worker-jobs': 'poker_worker', betting: 'poker_betting',
  });
  const owner = (await db.owner.query('select current_user::text as u')).rows[0].u as string;
  const asOwner = rows.filter((r) => r.usename === owner).map((r) => r.application_name);
  expect(asOwner).toEqual([]);
});

test('a pool given another secret cannot log in', async () => {
  const pool = createRolePool(db.url, 'poker_cage', { max: 1, secret: 'another-secret-0123456789' });
  try {
    expect(await code(pool.query('select 1'))).toBe('28P01');
  } finally {
    await pool.end();
  }
});
