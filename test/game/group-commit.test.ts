// Issue 33, group commit of hand boundaries (server/game/hands/group-commit.ts): the deals and ends
// the process's tables ask for while a commit is in flight are written together, in one transaction
// (one transaction id, one WAL flush), each with its own answer; a boundary a statement refuses
// rolls its batch back and every boundary of it is written alone, so the others still land and the
// refused one writes nothing. Run against a real PostgreSQL, with the first boundary held in flight
// by a lock the test owns (no timing involved).
import type pg from 'pg';
import { createGroupCommit, statementWriter, type BoundaryQuery } from '../../server/game/hands/group-commit.ts';
import { createTestDatabase, waitForLockWait, type TestDatabase } from '../helpers/db.ts';

let db: TestDatabase;
let pool: pg.Pool;

beforeAll(async () => {
  db = await createTestDatabase();
  await db.owner.query('create table public.boundaries (table_id text primary key, kind text not null, xid text not null, check (table_id <> \'refused\'))');
  pool = db.ownerPool(4);
});
afterAll(async () => {
  await pool.end();
  await db.drop();
});

const LOCK = 330033;
const write = (tableId: string, kind: BoundaryQuery['kind'] = 'end'): BoundaryQuery => ({
  tableId, kind, name: 'boundary-insert',
  text: 'insert into public.boundaries (table_id, kind, xid) values ($1, $2, pg_current_xact_id()::text) returning xid, statement_timestamp() as at',
  values: [tableId, kind],
});
/** A boundary that waits for the test's lock: it stays in flight until the test lets it go. */
const held = (tableId: string): BoundaryQuery => ({
  tableId, kind: 'end',
  text: 'insert into public.boundaries (table_id, kind, xid) select $1, \'end\', pg_current_xact_id()::text from (select pg_advisory_xact_lock($2::bigint)) l returning xid',
  values: [tableId, LOCK],
});

type Gc = ReturnType<typeof createGroupCommit<BoundaryQuery, pg.QueryResult>>;

async function whileOneIsInFlight<T>(run: (gc: Gc) => Promise<T>, prefix: string) {
  const gc = createGroupCommit(statementWriter(pool));
  const locker = await db.owner.connect();
  await locker.query('begin');
  await locker.query('select pg_advisory_xact_lock($1::bigint)', [LOCK]);
  const first = gc.write(held(`${prefix}-first`));
  await waitForLockWait(db.owner, 'poker_owner');
  const rest = run(gc);
  await locker.query('commit');
  locker.release();
  return { gc, first: await first, rest: await rest };
}

test('the boundaries asked for while one commits share the next commit, each with its own answer, ends before deals', async () => {
  const tables = ['t-e', 't-a', 't-d', 't-c', 't-b'];
  const { gc, first, rest } = await whileOneIsInFlight(
    (gc) => Promise.all(tables.map((t, i) => gc.write(write(t, i % 2 === 0 ? 'deal' : 'end')))), 'share',
  );
  const xids = new Set(rest.map((r) => r.rows[0]!.xid));
  expect(xids.size).toBe(1);
  expect(xids.has(first.rows[0]!.xid)).toBe(false);
  expect(gc.stats).toEqual({ boundaries: 6, commits: 2, split: 0 });
  // the batch ran its hand ends first (in table order), then its deals (in table order)
  const { rows } = await db.owner.query<{ table_id: string }>(
    "select table_id from public.boundaries where table_id like 't-%' order by ctid",
  );
  expect(rows.map((r) => r.table_id)).toEqual(['t-a', 't-c', 't-b', 't-d', 't-e']);
});

test('a boundary refused in a batch writes nothing, and the others of its batch are written alone', async () => {
  const { gc, rest } = await whileOneIsInFlight(
    (gc) => Promise.allSettled(['r-1', 'refused', 'r-2'].map((t) => gc.write(write(t)))), 'refuse',
  );
  expect(rest[0]!.status).toBe('fulfilled');
  expect(rest[2]!.status).toBe('fulfilled');
  expect(rest[1]!.status).toBe('rejected');
  expect((rest[1] as PromiseRejectedResult).reason).toMatchObject({ code: '23514' });
  const xid = (r: PromiseSettledResult<pg.QueryResult<{ xid: string }>>) => (r as PromiseFulfilledResult<pg.QueryResult<{ xid: string }>>).value.rows[0]!.xid;
  expect(xid(rest[0]!)).not.toBe(xid(rest[2]!));
  expect(gc.stats).toMatchObject({ boundaries: 4, split: 1 });
  const { rows } = await db.owner.query<{ table_id: string }>("select table_id from public.boundaries where table_id in ('r-1', 'r-2', 'refused') order by table_id");
  expect(rows.map((r) => r.table_id)).toEqual(['r-1', 'r-2']);
});

test('a boundary asked for while nothing is in flight is written at once, alone', async () => {
  const gc = createGroupCommit(statementWriter(pool));
  const a = await gc.write(write('alone-1'));
  const b = await gc.write(write('alone-2'));
  expect(a.rows[0]!.xid).not.toBe(b.rows[0]!.xid);
  expect(gc.stats).toEqual({ boundaries: 2, commits: 2, split: 0 });
});
