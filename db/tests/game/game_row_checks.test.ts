// Issue 33, migration 000056: the checks of the rows every hand writes (a table's, a hand's, a
// position's and its chain links') are one function of the row each, checked as one constraint, so
// Postgres prepares one expression per statement instead of a dozen. Every condition the separate
// constraints held still holds: each is broken here, one at a time, on rows the product wrote, and
// refused (23514, the table's <table>_row_valid); the rows as written pass.
import { randomUUID } from 'node:crypto';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/db.ts';
import { rollbackEachTest } from '../../../test/helpers/rollback.ts';
import { createTable, creditSeat, handEnding, newKey, openDepositsAs } from '../../../test/helpers/game.ts';

let db: TestDatabase;
let tableId: string;
let playerId: string;
let handId: string;

beforeAll(async () => {
  db = await createTestDatabase();
  const cage = db.pool('poker_cage');
  const game = db.pool('poker_game');
  openDepositsAs(db.owner);
  tableId = (await createTable(cage)).table_id;
  playerId = String((await creditSeat(game, newKey(), tableId, randomUUID(), 0, 100n)).player_id);
  await creditSeat(game, newKey(), tableId, randomUUID(), 1, 100n);
  // a finished hand (no signed record: a table without a dealer key's record writes none)
  handId = `rc-${randomUUID()}`;
  const epoch = String(await db.leaseEpoch(tableId));
  await db.owner.query('select * from game.begin_hand($1, $2, $3)', [tableId, handId, epoch]);
  const ending = handEnding('[{"type":"hand_started"}]');
  const players = (await db.owner.query<{ id: string }>('select id::text from game.table_players where table_id = $1 order by seat_index', [tableId])).rows;
  await game.query(
    `select game.end_hand($1, $2, 1, $3::jsonb, 0, 0, $4, $5::jsonb, '{}'::uuid[], now(), $6, null, null, null, null)`,
    [tableId, handId, JSON.stringify(Object.fromEntries(players.map((p) => [p.id, 100]))), ending.compact, ending.started, epoch],
  );
});
afterAll(async () => {
  await db.drop();
});

// each test in one transaction rolled back after it (test/helpers/rollback.ts); each attempt in a savepoint
const tx = rollbackEachTest(() => db.owner);

/** The statement run and rolled back to a savepoint: the SQLSTATE and constraint it was refused with, or 'ok'. */
async function attempt(sql: string, params: unknown[]): Promise<string> {
  await tx.client.query('savepoint attempt');
  try {
    await tx.client.query(sql, params);
    return 'ok';
  } catch (err) {
    const e = err as { code?: string; constraint?: string };
    return `${e.code} ${e.constraint}`;
  } finally {
    await tx.client.query('rollback to savepoint attempt');
  }
}

test('a table\'s row: each condition refused, one at a time', async () => {
  const set = (assignment: string) => attempt(`update game.tables set ${assignment} where table_id = $1`, [tableId]);
  expect(await set('status = status')).toBe('ok');
  for (const bad of [
    "game_type = 'chess'", "settings = '[]'", "status = 'closed'", "mode = 'ring'", "kind = 'robots'", 'unreconciled_rake = -1',
    'reconciled_rake = -1', "tournament_state = 'playing'", "mode = 'sng'", "bank = 'vault'", "announced_state = 'nope'",
    'abandoned_deals = -1', 'unrevealed_deals = -1',
  ]) expect([bad, await set(bad)]).toEqual([bad, '23514 tables_row_valid']);
  for (const id of ['', ' starts-with-space', 'has space', '-dash-first', 'x'.repeat(65), 'semi;colon']) {
    expect([id, await attempt('update game.tables set table_id = $2 where table_id = $1', [tableId, id])]).toEqual([id, '23514 tables_row_valid']);
  }
});

test('a position\'s row and its chain links: each condition refused, one at a time', async () => {
  const set = (assignment: string) => attempt(`update game.table_players set ${assignment} where id = $1`, [playerId]);
  expect(await set('chip_balance = chip_balance')).toBe('ok');
  for (const bad of [
    'chip_balance = -1', "status = 'closed'", "entry_state = 'owed'", "entry_state = 'reserved'", 'seat_index = 10', 'seat_index = -1',
    "status = 'gone'", 'tournament_stack = -1',
  ]) expect([bad, await set(bad)]).toEqual([bad, '23514 table_players_row_valid']);
  expect(await set("status = 'closed', chip_balance = 0")).toBe('ok');
  // links are append-only: a link of another event is refused, one of a known event taken
  const link = (event: string) => attempt(
    `insert into game.position_links (player_id, seq, event, delta, stack, ref_id, prev_hash, hash)
     select player_id, seq + 100, $2, delta, stack, ref_id, prev_hash, hash from game.position_links where player_id = $1 order by seq limit 1`,
    [playerId, event]);
  expect(await link('gift')).toBe('23514 position_links_row_valid');
  expect(await link('top_up')).toBe('ok');
});

test('a hand\'s row: each condition refused, one at a time', async () => {
  const set = (assignment: string) => attempt(`update game.hand_histories set ${assignment} where hand_id = $1`, [handId]);
  expect(await set('status = status')).toBe('ok');
  for (const bad of [
    "compact = '\\x0102'::bytea", "compact = '\\x020000000000'::bytea", "compact = null", "history = '{}'::jsonb",
    "history = '[]'::jsonb", "status = 'lost'", "record = 'r'", "record_hash = repeat('a', 64)", "started = '[]'::jsonb",
    `started = '{"type":"hand_ended"}'::jsonb`,
  ]) expect([bad, await set(bad)]).toEqual([bad, '23514 hand_histories_row_valid']);
  const hex = (n: number, c = 'a') => `'${c.repeat(n)}'`;
  const signed = (hash: string, signature: string, key: string) =>
    `record = 'r', deal = '{}'::jsonb, record_hash = ${hash}, record_signature = ${signature}, dealer_key = ${key}`;
  expect(await set(signed(hex(64), hex(128), hex(64)))).toBe('ok');
  for (const bad of [signed(hex(63), hex(128), hex(64)), signed(hex(64, 'A'), hex(128), hex(64)), signed(hex(64), hex(127), hex(64)),
    signed(hex(64), hex(128, 'g'), hex(64)), signed(hex(64), hex(128), hex(65)), signed(hex(64), hex(128), hex(64, 'z'))]) {
    expect([bad, await set(bad)]).toEqual([bad, '23514 hand_histories_row_valid']);
  }
});
