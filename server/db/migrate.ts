// The migration runner (modelled on graphile-worker's src/migrate.ts): one advisory lock, one
// transaction per migration file, checksums so an edited applied migration is refused, and the
// repeatable folders (db/functions, then db/policies) re-applied in one transaction whenever their
// combined hash changes. Applying twice is a no-op.
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { Logger as WorkerLogger, runMigrations as runWorkerMigrations } from 'graphile-worker';
import { ensureRoleLogins } from './roles.ts';
import { oneClient } from './pools.ts';

export const DB_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../db');
const MIGRATION_NAME = /^(\d{6})_[a-z0-9_]+\.sql$/;
const LOCK_KEY = 'poker-platform:migrate';

export class MigrationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MigrationError';
  }
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

async function sqlFilesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true }).catch(() => []);
  return entries
    .filter((e) => e.isFile() && e.name.endsWith('.sql'))
    .map((e) => path.join(e.parentPath, e.name))
    .sort();
}

export interface MigrationFile {
  name: string;
  sql: string;
  checksum: string;
}

export async function readMigrations(root = DB_ROOT): Promise<MigrationFile[]> {
  const files = (await readdir(path.join(root, 'migrations'))).filter((f) => f.endsWith('.sql')).sort();
  const seen = new Set<string>();
  return Promise.all(
    files.map(async (name) => {
      const match = MIGRATION_NAME.exec(name);
      if (!match) throw new MigrationError(`db/migrations/${name}: name must look like 000001_what_it_does.sql`);
      if (seen.has(match[1]!)) throw new MigrationError(`db/migrations/${name}: number ${match[1]} is used twice`);
      seen.add(match[1]!);
      const sql = await readFile(path.join(root, 'migrations', name), 'utf8');
      return { name, sql, checksum: sha256(sql) };
    }),
  );
}

async function readRepeatables(root: string) {
  const files = [...(await sqlFilesUnder(path.join(root, 'functions'))), ...(await sqlFilesUnder(path.join(root, 'policies')))];
  const parts = await Promise.all(files.map(async (f) => ({ file: path.relative(root, f), sql: await readFile(f, 'utf8') })));
  return parts;
}

export interface MigrateResult {
  applied: string[];
  repeatablesApplied: boolean;
}

/**
 * The migration lock (one runner at a time). Any database login may take any advisory key, so a
 * thief of a service login could hold this one and stall every start: while the lock is held by a
 * backend of another role than the runner's (the owner's: only runners take it), that backend is
 * named in the log and ended when the owner may (issue 31, test/platform/attacks-procs.test.ts).
 */
async function takeMigrationLock(client: pg.Client, log: (msg: string) => void): Promise<void> {
  for (let named = false; ; named = true) {
    const { rows: [got] } = await client.query<{ ok: boolean }>('select pg_try_advisory_lock(hashtext($1)) as ok', [LOCK_KEY]);
    if (got!.ok) return;
    const { rows: strangers } = await client.query<{ pid: number; login: string; ended: boolean }>(
      `select l.pid, a.usename::text as login,
              case when pg_catalog.pg_has_role(current_user, a.usesysid, 'usage') or (select rolsuper from pg_roles where rolname = current_user)
                   then pg_terminate_backend(l.pid) else false end as ended
         from pg_locks l join pg_stat_activity a on a.pid = l.pid
        where l.locktype = 'advisory' and l.granted and l.objsubid = 1 and l.database = (select oid from pg_database where datname = current_database())
          and ((l.classid::bigint << 32) | l.objid::bigint) = hashtext($1)::bigint and a.usename is distinct from current_user`, [LOCK_KEY]);
    for (const s of strangers) if (!named || s.ended) log(`migration lock held by login ${s.login} (pid ${s.pid}), which never takes it: ${s.ended ? 'ended' : 'end it (pg_terminate_backend)'}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}


export async function migrate(
  connectionString: string,
  options: {
    root?: string; log?: (msg: string) => void; /** DB_ROLE_SECRET, for the service logins' passwords */ roleSecret?: string;
    /** Switches seeded from the environment when the database has none yet (REAL_MONEY_ENABLED); never changed after. */
    seedSwitches?: { realMoney: boolean; environment?: 'local' | 'staging' | 'production'; testSeeds?: boolean; idleKickSeconds?: number };
  } = {},
): Promise<MigrateResult> {
  const root = options.root ?? DB_ROOT;
  const log = options.log ?? (() => {});
  const migrations = await readMigrations(root);
  const repeatables = await readRepeatables(root);
  const client = oneClient({ connectionString });
  await client.connect();
  const applied: string[] = [];
  let repeatablesApplied = false;
  try {
    await takeMigrationLock(client, log);
    await client.query(BOOKKEEPING);
    applied.push(...(await applyMigrations(client, migrations, log)));
    await runWorkerMigrations({ connectionString, logger: quietWorkerLogger });
    repeatablesApplied = await applyRepeatables(client, root, repeatables, log);
    // the service logins (cluster-wide; db/policies/00_roles.sql created them): LOGIN, their passwords
    const logins = await ensureRoleLogins(client, connectionString, options.roleSecret);
    if (logins.length) log(`service logins set: ${logins.join(', ')}`);
    await lockDownDatabase(client);
    if (options.seedSwitches) {
      const { rowCount } = await client.query(
        "insert into cage.switches (name, enabled) values ('real_money', $1) on conflict (name) do nothing", [options.seedSwitches.realMoney],
      );
      if (rowCount) log(`switch real_money seeded: ${options.seedSwitches.realMoney ? 'on' : 'off'}`);
      // test seeds follow the configuration on every start (on only under the test harness)
      await client.query(
        "insert into cage.switches (name, enabled) values ('test_seeds', $1) on conflict (name) do update set enabled = excluded.enabled, updated_at = now() where cage.switches.enabled <> excluded.enabled",
        [options.seedSwitches.testSeeds === true],
      );
      // the deployment's environment, whose claim board settings the play-chip transfer gate follows
      if (options.seedSwitches.environment) {
        await client.query('update cage.deployment set environment = $1, updated_at = now() where environment <> $1', [options.seedSwitches.environment]);
      }
      // the house's idle time (IDLE_KICK_SECONDS) follows the configuration on every start: the
      // game's SQL accepts a forced stand-up only for a player sat out this long
      if (options.seedSwitches.idleKickSeconds !== undefined) {
        await client.query('update game.house_rules set idle_kick_seconds = $1, updated_at = now() where idle_kick_seconds <> $1', [options.seedSwitches.idleKickSeconds]);
      }
    }
  } finally {
    await client.query('select pg_advisory_unlock(hashtext($1))', [LOCK_KEY]).catch(() => undefined);
    await client.end();
  }
  return { applied, repeatablesApplied };
}

/**
 * What the database itself grants every role (its ACL is per database and is not copied by CREATE
 * DATABASE ... TEMPLATE, so it is set on every start): no TEMP for anyone but the owner, so no
 * service login can make a temporary table that shadows a name a function resolves.
 */
export async function lockDownDatabase(client: pg.Client | pg.Pool) {
  const { rows } = await client.query<{ db: string }>('select current_database() as db');
  const db = pg.escapeIdentifier(rows[0]!.db);
  await client.query(`revoke temporary on database ${db} from public`);
  await client.query(`revoke temporary on database ${db} from poker_cage, poker_auth, poker_game, poker_worker, poker_graphql, poker_admin, poker_anonymous`);
}

/** The migrator's own bookkeeping: which numbered migrations ran, and the repeatables' hash. */
const BOOKKEEPING = `
  create schema if not exists poker_migrate;
  create table if not exists poker_migrate.migrations (
    name text primary key,
    checksum text not null,
    applied_at timestamptz not null default now()
  );
  create table if not exists poker_migrate.repeatables (
    id boolean primary key default true check (id),
    hash text not null,
    applied_at timestamptz not null default now()
  );
  revoke all on schema poker_migrate from public;
`;

/**
 * Refuses a database this code cannot migrate (it knows migrations we do not; an applied file was
 * edited), then applies the missing migrations in order, one transaction each. Returns their names.
 */
async function applyMigrations(client: pg.Client, migrations: MigrationFile[], log: (msg: string) => void): Promise<string[]> {
  const done = new Map(
    (await client.query<{ name: string; checksum: string }>('select name, checksum from poker_migrate.migrations')).rows.map(
      (r) => [r.name, r.checksum],
    ),
  );
  const known = new Set(migrations.map((m) => m.name));
  const unknown = [...done.keys()].filter((n) => !known.has(n)).sort();
  if (unknown.length) {
    throw new MigrationError(
      `the database has migrations this code does not know (${unknown.join(', ')}): it is newer than this code; deploy the newer code`,
    );
  }
  for (const m of migrations) {
    const checksum = done.get(m.name);
    if (checksum !== undefined && checksum !== m.checksum) {
      throw new MigrationError(
        `db/migrations/${m.name} was edited after it was applied (checksum ${checksum.slice(0, 12)} in the database, ${m.checksum.slice(0, 12)} on disk); ` +
          'applied migrations are immutable: restore the file and put the change in a new migration',
      );
    }
  }
  const applied: string[] = [];
  for (const m of migrations) {
    if (done.has(m.name)) continue;
    await inTransaction(client, async () => {
      // Insert first: a concurrent migrator without the lock would clash here and back off.
      await client.query('insert into poker_migrate.migrations (name, checksum) values ($1, $2)', [m.name, m.checksum]);
      await client.query(m.sql);
    }, `db/migrations/${m.name}`);
    applied.push(m.name);
    log(`applied migration ${m.name}`);
  }
  return applied;
}

/**
 * Re-applies db/functions and db/policies (and loads the refusal registry) in one transaction when
 * their combined hash, with graphile-worker's schema version, changed. True when it did.
 */
async function applyRepeatables(client: pg.Client, root: string, repeatables: Awaited<ReturnType<typeof readRepeatables>>, log: (msg: string) => void) {
  const workerVersion = (await client.query<{ v: string }>(
    "select coalesce(max(id), 0)::text as v from graphile_worker.migrations",
  )).rows[0]!.v;
  const refusals = await readRefusals(root);
  const hash = sha256(JSON.stringify({ workerVersion, repeatables, refusals }));
  const current = (await client.query<{ hash: string }>('select hash from poker_migrate.repeatables')).rows[0]?.hash;
  if (current === hash) return false;
  await inTransaction(client, async () => {
    // the refusal registry first: the functions below raise through it
    await loadRefusals(client, refusals);
    for (const r of repeatables) {
      try {
        await client.query(r.sql);
      } catch (err) {
        throw new MigrationError(`db/${r.file}: ${(err as Error).message}`);
      }
    }
    await client.query(
      `insert into poker_migrate.repeatables (id, hash) values (true, $1)
       on conflict (id) do update set hash = excluded.hash, applied_at = now()`,
      [hash],
    );
  }, 'db/functions + db/policies');
  log(`applied db/functions and db/policies (${repeatables.length} files)`);
  return true;
}

/** db/refusals.json: domain -> code -> [SQLSTATE, HTTP status] (the `//` key is its comment). */
export type RefusalRegistry = Record<string, Record<string, [string, number]>>;

export async function readRefusals(root = DB_ROOT): Promise<RefusalRegistry> {
  const text = await readFile(path.join(root, 'refusals.json'), 'utf8').catch(() => undefined);
  if (text === undefined) return {};
  const parsed = JSON.parse(text) as Record<string, unknown>;
  return Object.fromEntries(Object.entries(parsed).filter(([k]) => k !== '//')) as RefusalRegistry;
}

async function loadRefusals(client: pg.Client, registry: RefusalRegistry) {
  const rows = Object.entries(registry).flatMap(([domain, codes]) =>
    Object.entries(codes).map(([code, [sqlstate, status]]) => ({ domain, code, sqlstate, status })));
  await client.query('delete from poker_refusals.codes');
  await client.query(
    `insert into poker_refusals.codes (domain, code, sqlstate, http_status)
     select r.domain, r.code, r.sqlstate, r.status from json_to_recordset($1::json) as r (domain text, code text, sqlstate text, status integer)`,
    [JSON.stringify(rows)],
  );
}

async function inTransaction(client: pg.Client, fn: () => Promise<void>, what: string) {
  await client.query('begin');
  try {
    await fn();
    await client.query('commit');
  } catch (err) {
    await client.query('rollback');
    if (err instanceof MigrationError) throw err;
    throw new MigrationError(`${what}: ${(err as Error).message}`);
  }
}

const quietWorkerLogger = new WorkerLogger(() => () => {});
