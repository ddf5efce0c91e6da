// What a sit + stand round trip over HTTP costs the database in write commits (each waits for its
// WAL flush): a player sits at a cash table with a buy-in from the cage balance (POST /api/deposit),
// then stands up and the chips go back (POST /api/withdraw), against the running auth, game and cage
// roles. A sit is ONE write transaction (issue 33: the buy-in and the seat's funding together,
// cage.deposit_to_seat); a stand is at most two (the game stands the player up, the cage settles and
// closes the seat).
//
// Counted as transaction ids assigned and committed, which only a transaction that writes gets. The
// id counter is the cluster's, so this file runs on a PostgreSQL cluster of its own (the shared test
// cluster serves other files in parallel), with autovacuum off, and counts the quietest of a few round
// trips: anything else that wrote meanwhile can only add to a count, never take from it.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../../server/db/embedded.ts';
import { migrate } from '../../server/db/migrate.ts';
import { expectCleanAudit } from '../helpers/cage.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startMoneyPlatform } from '../helpers/money.ts';
import { freePort } from '../helpers/ports.ts';
import { withDatabase } from '../helpers/url.ts';

const TEMPLATE = 'quiet_template';
const savedEnv = { server: process.env.TEST_SERVER_URL, template: process.env.TEST_TEMPLATE_DB };
let cluster: EmbeddedPostgres;
let db: TestDatabase;
let cagePool: pg.Pool;
let m: Awaited<ReturnType<typeof startMoneyPlatform>>;

beforeAll(async () => {
  cluster = await startEmbeddedPostgres({
    dataDir: await mkdtemp(path.join(tmpdir(), 'poker-test-quiet-pg-')),
    port: await freePort(),
    ephemeral: true,
    settings: { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off', autovacuum: 'off' },
  });
  const admin = new pg.Client({ connectionString: cluster.url });
  await admin.connect();
  await admin.query(`create database ${TEMPLATE}`);
  await admin.end();
  await migrate(withDatabase(cluster.url, TEMPLATE));
  // createTestDatabase clones its database from this cluster's template
  process.env.TEST_SERVER_URL = cluster.url;
  process.env.TEST_TEMPLATE_DB = TEMPLATE;
  db = await createTestDatabase();
  cagePool = db.pool('poker_cage');
  m = await startMoneyPlatform(db);
}, 120_000);

afterAll(async () => {
  await m?.platform.stop();
  if (cagePool) await expectCleanAudit(cagePool);
  await db?.drop();
  process.env.TEST_SERVER_URL = savedEnv.server;
  process.env.TEST_TEMPLATE_DB = savedEnv.template;
  await cluster?.stop();
});

/** The next transaction id the cluster will assign (only a transaction that writes takes one). */
async function nextXid(): Promise<bigint> {
  const { rows } = await db.owner.query<{ x: string }>('select pg_snapshot_xmax(pg_current_snapshot())::text as x');
  return BigInt(rows[0]!.x);
}

/** The transactions that wrote and committed while `op` ran. */
async function writeCommits(op: () => Promise<void>): Promise<number> {
  const from = await nextXid();
  await op();
  const to = await nextXid();
  const { rows } = await db.owner.query<{ n: number }>(
    "select count(*)::int as n from generate_series($1::bigint, $2::bigint - 1) x where pg_xact_status(x::text::xid8) = 'committed'",
    [from.toString(), to.toString()],
  );
  return rows[0]!.n;
}

test('a sit makes one write commit, a stand at most two', async () => {
  const p = await m.player(1000);
  const tableId = await m.table(p.auth);
  const sits: number[] = [];
  const stands: number[] = [];
  for (let i = 0; i < 3; i++) {
    sits.push(await writeCommits(async () => {
      const sit = await m.deposit(p.auth, { tableId, seatIndex: 1, amount: 100 });
      expect(sit.status).toBe(200);
      expect(sit.body).toMatchObject({ status: 'confirmed', seatIndex: 1, chipBalance: '100' });
    }));
    stands.push(await writeCommits(async () => {
      const out = await m.withdraw(p.auth, { tableId });
      expect(out.status).toBe(200);
      expect(out.body).toMatchObject({ status: 'confirmed', destination: 'cage', amount: 100 });
      expect(out.body.replay).toBeUndefined();
    }));
    // the round trip is whole: the chips are back, the seat is empty, the deposit confirmed and the
    // withdrawal settled (the game zeroed the seat)
    expect(await m.balance(p.auth)).toBe(1000);
    expect((await m.room(tableId)).body.seats).toEqual([]);
  }
  const { rows } = await db.owner.query(
    `select (select count(*)::int from cage.deposit_intents where table_id = $1 and status = 'confirmed' and credited_at is not null) as confirmed,
            (select count(*)::int from cage.withdraw_intents where table_id = $1 and settled_at is not null) as settled,
            (select count(*)::int from game.table_players where table_id = $1 and status = 'closed' and chip_balance = 0) as closed`,
    [tableId],
  );
  expect(rows[0]).toEqual({ confirmed: 3, settled: 3, closed: 3 });
  console.log(`write commits per sit: ${sits.join(', ')}; per stand: ${stands.join(', ')}`);
  // the counter sees the requests' own commits, and anything else that wrote meanwhile can only add
  expect(Math.min(...sits)).toBe(1);
  expect(Math.min(...stands)).toBeGreaterThanOrEqual(1);
  expect(Math.min(...stands)).toBeLessThanOrEqual(2);
});
