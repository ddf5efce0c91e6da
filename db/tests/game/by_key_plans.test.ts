// Issue 33: the busiest money functions read by key whatever the size their tables had when a
// connection planned them. Their statements run on generic plans, made once per connection (their
// plan_cache_mode), so a plan made while a table was small (a fresh database, the first minutes of a
// deployment) was kept as the table grew: cage.post_movement locked and updated its two accounts
// through a sequential scan of every account, and a cash hand end joined its positions to every
// position ever opened (a hash join over the whole primary key). Each test plans on a fresh database,
// grows the table, and counts what the next call of the same connection read
// (pg_stat_xact_user_tables: this transaction's own reads).
import type pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/db.ts';
import { expectBalancedBooks, fund, refId, userAccount } from '../../../test/helpers/cage.ts';
import { createTable, handEnding, sit } from '../../../test/helpers/game.ts';

const ENDING = handEnding('[{"type":"hand_started"}]');

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await expectBalancedBooks(db.owner);
  await db.drop();
});

/** What this transaction read of a table so far. */
async function reads(client: pg.PoolClient, table: string) {
  const { rows } = await client.query<{ seq_scan: string; seq_tup_read: string; idx_tup_fetch: string }>(
    `select coalesce(seq_scan, 0)::text as seq_scan, coalesce(seq_tup_read, 0)::text as seq_tup_read,
            coalesce(idx_tup_fetch, 0)::text as idx_tup_fetch
       from pg_stat_xact_user_tables where relid = $1::regclass`, [table]);
  return { seqScans: Number(rows[0]!.seq_scan), seqRows: Number(rows[0]!.seq_tup_read), indexRows: Number(rows[0]!.idx_tup_fetch) };
}

test('a posting locks and updates its accounts by key on a connection that planned it when the accounts were few', async () => {
  const client = await db.owner.connect();
  try {
    const a = await userAccount(db.owner);
    const b = await userAccount(db.owner);
    await fund(db.owner, a.id, 10n);
    const post = () => client.query('select * from cage.post_movement($1, $2, $3, $4::bigint[], $5::bigint[])',
      [refId('plan'), 'adjustment', 'play', [a.id, b.id], [-1, 1]]);
    await db.owner.query('analyze cage.cage_accounts, cage.play_gate_accounts'); // as autovacuum would, while they are few
    await post(); // planned now
    // 3,000 accounts more, each with a gate row (an account the play gate froze after a grant)
    await db.owner.query(
      `insert into cage.play_gate_accounts (account_id, frozen, frozen_at, last_ref_id)
       select cage.ensure_account('user', gen_random_uuid(), null, 'play'), true, now(), 'grant:plan' from generate_series(1, 3000)`);
    await db.owner.query('analyze cage.cage_accounts, cage.play_gate_accounts');
    await client.query('begin');
    await post();
    const accounts = await reads(client, 'cage.cage_accounts');
    const gate = await reads(client, 'cage.play_gate_accounts');
    await client.query('rollback');
    expect([accounts.seqScans, gate.seqScans]).toEqual([0, 0]);
    expect(accounts.seqRows + accounts.indexRows).toBeLessThan(20);
    expect(gate.seqRows + gate.indexRows).toBeLessThan(20);
  } finally {
    client.release();
  }
});

test("a cash hand end reads its own positions by key on a connection that planned it when the positions were few", async () => {
  const cage = db.pool('poker_cage');
  const game = db.pool('poker_game', 1);
  const t = await createTable(cage);
  const players: string[] = [];
  for (const i of [0, 1]) {
    const user = await userAccount(db.owner);
    await fund(db.owner, user.id, 100n);
    players.push(String((await sit(cage, game, user.userId, t.table_id, i, 100n)).seat.player_id));
  }
  const epoch = String(await db.leaseEpoch(t.table_id));
  const client = await game.connect();
  try {
    let n = 0;
    const handEnd = async (from: number) => {
      const handId = `plan-${++n}`;
      await db.owner.query('select * from game.begin_hand($1, $2, $3)', [t.table_id, handId, epoch]);
      await client.query('select game.end_hand($1, $2, $3, $4::jsonb, $5, $6, $7::bytea, $8::jsonb, $9::uuid[], $10::timestamptz, $11, $12::jsonb, $13, $14, $15)', [
        t.table_id, handId, n, JSON.stringify({ [players[0]!]: from - 5, [players[1]!]: 200 - from + 5 }), '0', 0, ENDING.compact, ENDING.started, [],
        new Date().toISOString(), epoch, null, null, null, null]);
    };
    // positions opened and closed at another table (as many as a fresh platform's first minutes make)
    const other = await createTable(cage);
    const closed = (n: number) => db.owner.query(
      `insert into game.table_players (table_id, user_id, seat_index, chip_balance, status, history_hash, closed_at)
       select $1, gen_random_uuid(), 0, 0, 'closed', repeat('0', 64), now() from generate_series(1, $2::int)`, [other.table_id, n]);
    await closed(200);
    await db.owner.query('analyze game.table_players'); // as autovacuum would, while they are few
    await handEnd(100); // planned now
    await closed(3000);
    await db.owner.query('analyze game.table_players');
    await client.query('begin');
    await handEnd(95);
    const read = await reads(client, 'game.table_players');
    await client.query('rollback');
    expect(read.seqScans).toBe(0);
    expect(read.indexRows).toBeLessThan(40);
  } finally {
    client.release();
  }
});
