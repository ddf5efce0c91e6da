// A database of this test file's own, cloned from the migrated template, with a pool per service
// role and one as the owner. `drop()` ends every pool and drops the database.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { lockDownDatabase } from '../../server/db/migrate.ts';
import { createOwnerPool, createRolePool, type DbRole } from '../../server/db/pools.ts';
import { withDatabase } from './url.ts';

export interface TestDatabase {
  url: string;
  name: string;
  owner: pg.Pool;
  pool(role: DbRole, max?: number): pg.Pool;
  /**
   * Another pool as the owner, its connections named `poker_owner` (for waitForLockWait): the
   * ledger's primitives (post_movement, ...) are the owner's alone.
   */
  ownerPool(max?: number): pg.Pool;
  /**
   * The epoch of a lease on this table held by a live game process of the test's own (registered on
   * a connection kept until drop(), as a game process keeps its presence), taken once per table:
   * what a room's hand boundaries carry. Null for an unknown table (the boundary answers for it).
   */
  leaseEpoch(tableId: string): Promise<string | null>;
  drop(): Promise<void>;
}

/** The owner pool of each role pool a test database made (playerGrant mints through it). */
const ownerOf = new WeakMap<pg.Pool, pg.Pool>();

/**
 * A live grant for `userId`, as minting their access JWT makes one (auth.grant_access): its handle
 * is the `sid` the cage's player functions take. Made through the owner of `pool`'s database.
 */
export async function playerGrant(pool: pg.Pool | pg.PoolClient, userId: string): Promise<string> {
  const owner = ('totalCount' in pool ? ownerOf.get(pool) : undefined) ?? pool;
  const { rows } = await owner.query<{ sid: string }>('select auth.grant_access($1, 3600) as sid', [userId]);
  return rows[0]!.sid;
}

export function serverUrl() {
  const url = process.env.TEST_SERVER_URL;
  if (!url) throw new Error('TEST_SERVER_URL is not set: run the tests through `npm test`');
  return url;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl() });
  await admin.connect();
  try {
    await admin.query(`create database ${name} template ${process.env.TEST_TEMPLATE_DB}`);
  } finally {
    await admin.end();
  }
  const url = withDatabase(serverUrl(), name);
  const owner = createOwnerPool(url, 5);
  // what the migrator does on every start: a clone does not keep the template's database ACL
  await lockDownDatabase(owner);
  const pools: pg.Pool[] = [owner];
  let presence: Promise<{ client: pg.Client; process: string }> | undefined;
  const epochs = new Map<string, Promise<string | null>>();
  const gameProcess = () => (presence ??= (async () => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query("insert into game.process_urls (url) values ('http://test.invalid') on conflict (url) do nothing");
    const { rows } = await client.query<{ process_id: string }>("select process_id from game.register_process('http://test.invalid')");
    return { client, process: rows[0]!.process_id };
  })());
  return {
    url,
    name,
    owner,
    pool(role, max = 10) {
      const p = createRolePool(url, role, { max });
      pools.push(p);
      ownerOf.set(p, owner);
      return p;
    },
    ownerPool(max = 10) {
      const named = new URL(url);
      named.searchParams.set('application_name', 'poker_owner');
      const p = createOwnerPool(named.toString(), max);
      pools.push(p);
      return p;
    },
    leaseEpoch(tableId) {
      let epoch = epochs.get(tableId);
      if (!epoch) {
        epoch = gameProcess().then(async ({ client }) => {
          const known = await owner.query('select 1 from game.tables where table_id = $1', [tableId]);
          if (!known.rowCount) return null;
          // the lease functions act for the calling connection's process: the presence connection's
          const { rows } = await client.query<{ granted: boolean; epoch: string }>('select granted, epoch::text from game.take_lease($1, 3600)', [tableId]);
          if (!rows[0]!.granted) throw new Error(`the test's process could not take table ${tableId}`);
          return rows[0]!.epoch;
        });
        epochs.set(tableId, epoch);
      }
      return epoch;
    },
    async drop() {
      if (presence) await (await presence).client.end().catch(() => undefined);
      await Promise.all(pools.map((p) => p.end().catch(() => undefined)));
      const c = new pg.Client({ connectionString: serverUrl() });
      await c.connect();
      try {
        await c.query(`drop database if exists ${name} with (force)`);
      } finally {
        await c.end();
      }
    },
  };
}

/**
 * Resolves once `atLeast` (1) queries of a role's pools (their application_name is the role) wait on
 * a lock: how a test holds one transaction open until a concurrent call has reached it, so an
 * interleaving happens every run. With `settled`, it also resolves once that returns true (the call
 * did not have to wait) and never throws.
 */
export async function waitForLockWait(owner: pg.Pool, role: string, options: { atLeast?: number; settled?: () => boolean } = {}): Promise<void> {
  const atLeast = options.atLeast ?? 1;
  for (let i = 0; i < 300; i++) {
    if (options.settled?.()) return;
    const { rows } = await owner.query<{ n: number }>(
      "select count(*)::int as n from pg_stat_activity where datname = current_database() and application_name = $1 and wait_event_type = 'Lock'",
      [role],
    );
    if (rows[0]!.n >= atLeast) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  if (!options.settled) throw new Error(`fewer than ${atLeast} ${role} queries waited on a lock`);
}

/**
 * The test harness's switch (test_seeds), as the platform's migrator sets it under ENABLE_TEST_AUTH:
 * with it on, a claim is judged at the clock the harness names (x-test-clock, an injected clock);
 * off, at the database's own (claims_private.claim_clock). A test database is not made by the
 * platform's migrator, so a test of another week's claim turns it on.
 */
export async function harnessSwitchOn(db: Pick<TestDatabase, 'owner'>): Promise<void> {
  await db.owner.query("insert into cage.switches (name, enabled) values ('test_seeds', true) on conflict (name) do update set enabled = true");
}
