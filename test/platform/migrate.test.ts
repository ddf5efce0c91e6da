// The migration runner: once each, in order, checksummed; repeatables re-applied when they change.
import { randomBytes } from 'node:crypto';
import { cp, mkdtemp, readFile, rm, writeFile, appendFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { DB_ROOT, migrate, MigrationError } from '../../server/db/migrate.ts';
import { serverUrl } from '../helpers/db.ts';
import { withDatabase } from '../helpers/url.ts';

const created: string[] = [];
const roots: string[] = [];

async function emptyDatabase() {
  const name = `m_${randomBytes(6).toString('hex')}`;
  const c = new pg.Client({ connectionString: serverUrl() });
  await c.connect();
  await c.query(`create database ${name}`);
  await c.end();
  created.push(name);
  return withDatabase(serverUrl(), name);
}

async function copyOfDb() {
  const root = await mkdtemp(path.join(tmpdir(), 'poker-db-'));
  await cp(DB_ROOT, root, { recursive: true });
  roots.push(root);
  return root;
}

async function query(url: string, sql: string, params: unknown[] = []) {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(sql, params)).rows;
  } finally {
    await c.end();
  }
}

afterAll(async () => {
  const c = new pg.Client({ connectionString: serverUrl() });
  await c.connect();
  for (const name of created) await c.query(`drop database if exists ${name} with (force)`);
  await c.end();
  for (const root of roots) await rm(root, { recursive: true, force: true });
});

test('applies every migration once; a second run is a no-op', async () => {
  const url = await emptyDatabase();
  const first = await migrate(url);
  expect(first.applied).toContain('000001_cage_ledger.sql');
  expect(first.repeatablesApplied).toBe(true);
  const second = await migrate(url);
  expect(second).toEqual({ applied: [], repeatablesApplied: false });
  const rows = await query(url, 'select name from poker_migrate.migrations order by name');
  expect(rows.map((r) => r.name)).toEqual(first.applied);
});

test('concurrent migrators: one applies, the other waits and finds nothing to do', async () => {
  const url = await emptyDatabase();
  const [a, b] = await Promise.all([migrate(url), migrate(url)]);
  expect([...a.applied, ...b.applied].filter((n) => n === '000001_cage_ledger.sql')).toHaveLength(1);
});

test('an applied migration that was edited is refused with a clear message', async () => {
  const url = await emptyDatabase();
  const root = await copyOfDb();
  await migrate(url, { root });
  await appendFile(path.join(root, 'migrations', '000001_cage_ledger.sql'), '\n-- an innocent edit\n');
  await expect(migrate(url, { root })).rejects.toThrow(MigrationError);
  await expect(migrate(url, { root })).rejects.toThrow(/000001_cage_ledger\.sql was edited after it was applied.*new migration/);
});

test('a database with migrations this code does not know is refused', async () => {
  const url = await emptyDatabase();
  await migrate(url);
  await query(url, "insert into poker_migrate.migrations (name, checksum) values ('999999_from_the_future.sql', 'x')");
  await expect(migrate(url)).rejects.toThrow(/999999_from_the_future\.sql.*newer than this code/);
});

test('a failing migration rolls back whole and is not recorded', async () => {
  const url = await emptyDatabase();
  const root = await copyOfDb();
  await writeFile(path.join(root, 'migrations', '000900_broken.sql'), 'create table public.half_done (id int);\nselect no_such_function();\n');
  await expect(migrate(url, { root })).rejects.toThrow(/000900_broken\.sql: .*no_such_function/);
  const rows = await query(url, "select to_regclass('public.half_done') as t, (select count(*)::int from poker_migrate.migrations where name = '000900_broken.sql') as n");
  expect(rows[0]).toEqual({ t: null, n: 0 });
});

test('badly named migration files are refused', async () => {
  const root = await copyOfDb();
  await writeFile(path.join(root, 'migrations', 'add_stuff.sql'), 'select 1;');
  await expect(migrate(await emptyDatabase(), { root })).rejects.toThrow(/add_stuff\.sql: name must look like/);
});

test('db/functions and db/policies are re-applied when they change, and only then', async () => {
  const url = await emptyDatabase();
  const root = await copyOfDb();
  await migrate(url, { root });
  expect((await migrate(url, { root })).repeatablesApplied).toBe(false);
  const file = path.join(root, 'functions', 'cage', '00_refusals.sql');
  const original = await readFile(file, 'utf8');
  await writeFile(file, original.replace("select 9007199254740991::bigint", "select 9007199254740990::bigint"));
  expect((await migrate(url, { root })).repeatablesApplied).toBe(true);
  const rows = await query(url, 'select cage_private.max_amount() as m');
  expect(rows[0].m).toBe('9007199254740990');
});

test('an error in a repeatable file names the file and changes nothing', async () => {
  const url = await emptyDatabase();
  const root = await copyOfDb();
  await migrate(url, { root });
  await writeFile(path.join(root, 'policies', '99_broken.sql'), "grant select on cage.no_such_table to poker_admin;\n");
  await writeFile(path.join(root, 'functions', 'cage', '00_refusals.sql'),
    (await readFile(path.join(root, 'functions', 'cage', '00_refusals.sql'), 'utf8')).replace('9007199254740991::bigint', '7::bigint'));
  await expect(migrate(url, { root })).rejects.toThrow(/policies\/99_broken\.sql/);
  const rows = await query(url, 'select cage_private.max_amount() as m');
  expect(rows[0].m).toBe('9007199254740991');
});
