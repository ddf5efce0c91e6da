// Issue 33, a group commit's batch in one call (game.write_boundaries, through the dealer's writer
// server/game/hands/boundary-writer.ts): the hand ends and deals of several tables written by ONE
// statement, in one transaction, each answered as game.end_hand or game.deal_hand alone would answer
// it; a refusal of any of them refuses the call and nothing of the batch is written; the call has no
// rights of its own (invoker's), so it is as the game login's own calls of the two.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { dealerWriter, type DealerBoundary } from '../../../server/game/hands/boundary-writer.ts';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/db.ts';
import { createTable, creditSeat, handEnding, newKey, openDepositsAs } from '../../../test/helpers/game.ts';

const ENDING = handEnding('[{"type":"hand_started"}]');

let db: TestDatabase;
let cage: pg.Pool;
let game: pg.Pool;

beforeAll(async () => {
  db = await createTestDatabase();
  cage = db.pool('poker_cage');
  game = db.pool('poker_game');
  openDepositsAs(db.owner);
});
afterAll(async () => {
  await db.drop();
});

/** A table with two seats of 100: its id and its positions. */
async function table() {
  const t = await createTable(cage);
  const users = [randomUUID(), randomUUID()];
  const players = [];
  for (const [i, u] of users.entries()) players.push(String((await creditSeat(game, newKey(), t.table_id, u, i, 100n)).player_id));
  return { tableId: t.table_id, users, players };
}
type Table = Awaited<ReturnType<typeof table>>;

const epochOf = async (tableId: string) => String(await db.leaseEpoch(tableId));
async function begun(t: Table, handId: string) {
  await db.owner.query('select * from game.begin_hand($1, $2, $3)', [t.tableId, handId, await epochOf(t.tableId)]);
}
/** game.end_hand's arguments for a hand that moved 5 chips from the first seat to the second. */
async function end(t: Table, handId: string): Promise<DealerBoundary> {
  return {
    tableId: t.tableId, kind: 'end',
    args: [t.tableId, handId, 1, JSON.stringify({ [t.players[0]!]: 95, [t.players[1]!]: 105 }), '0', 0, ENDING.compact, ENDING.started, [],
      new Date().toISOString(), await epochOf(t.tableId), null, null, null, null],
  };
}
const sealed = (handNumber: number, handId: string, c: string) => ({ algorithm: 'sha256-fisher-yates-v2', handNumber, handId, commitment: c.repeat(64), sealed: 'ab'.repeat(60) });
/** game.deal_hand's arguments, the table's deal committed first. */
async function deal(t: Table, handId: string): Promise<DealerBoundary> {
  const epoch = await epochOf(t.tableId);
  await game.query('select game.commit_deal($1, $2, $3::jsonb)', [t.tableId, epoch, JSON.stringify(sealed(1, handId, 'c'))]);
  return { tableId: t.tableId, kind: 'deal', args: [t.tableId, handId, epoch, JSON.stringify({ ...sealed(1, handId, 'c'), contributions: [] }), JSON.stringify(sealed(2, `${handId}-next`, 'd'))] };
}
const stacks = async (t: Table) => (await db.owner.query<{ chip_balance: string }>(
  'select chip_balance::text from game.table_players where table_id = $1 order by seat_index', [t.tableId])).rows.map((r) => r.chip_balance);

test('ends and deals of several tables in one call: each answered as alone, all in one transaction', async () => {
  const [a, b, c] = [await table(), await table(), await table()];
  await begun(a, 'wb-a');
  await begun(b, 'wb-b');
  const writer = dealerWriter(game);
  const answers = await writer.together([await end(a, 'wb-a'), await end(b, 'wb-b'), await deal(c, 'wb-c')]);
  expect(answers.slice(0, 2)).toEqual([{ replayed: false, state: null, busted: [] }, { replayed: false, state: null, busted: [] }]);
  // the deal's seats, as game.deal_hand's rows (chips as text, the seat index a number)
  expect(answers[2]).toEqual(c.users.map((u, i) => ({
    id: c.players[i], user_id: u, agent_id: null, seat_index: i, chip_balance: '100', status: 'seated', sat_out: false,
  })));
  expect([await stacks(a), await stacks(b)]).toEqual([['95', '105'], ['95', '105']]);
  // one transaction: the two hands' histories and the dealt table's row carry the same transaction id
  const { rows } = await db.owner.query<{ x: string }>(
    `select xmin::text as x from game.hand_histories where hand_id in ('wb-a', 'wb-b')
     union all select xmin::text from game.tables where table_id = $1 and current_hand_id = 'wb-c'`, [c.tableId]);
  expect(rows).toHaveLength(3);
  expect(new Set(rows.map((r) => r.x)).size).toBe(1);
  // an end written already answers its replay, alone as in a batch
  expect(await writer.alone(await end(a, 'wb-a'))).toEqual({ replayed: true, state: null, busted: [] });
});

test('a boundary refused refuses the whole call: nothing of the batch is written', async () => {
  const [a, b] = [await table(), await table()];
  await begun(a, 'wr-a');
  await begun(b, 'wr-b');
  const refused = await dealerWriter(game).together([await end(a, 'wr-a'), await end(b, 'wr-never-dealt')]).catch((err: unknown) => err);
  expect(refused).toBeInstanceOf(pg.DatabaseError);
  expect(refused).toMatchObject({ code: 'GMNHP' });
  expect(await stacks(a)).toEqual(['100', '100']);
  const { rows } = await db.owner.query("select count(*)::int as n from game.hand_histories where hand_id = 'wr-a' and status = 'finished'");
  expect(rows[0]!.n).toBe(0);
  // alone, the valid one is written
  expect(await dealerWriter(game).alone(await end(a, 'wr-a'))).toEqual({ replayed: false, state: null, busted: [] });
});

test('arguments that do not name one entry per boundary are refused bad_request; an empty batch writes nothing', async () => {
  const a = await table();
  await begun(a, 'wm-a');
  const args = (await end(a, 'wm-a')).args;
  const columns = args.map((v, i) => (i === 8 ? ['{}'] : [v]));
  const call = (ends: unknown[][]) => game.query(
    `select * from game.write_boundaries(${Array.from({ length: 20 }, (_, i) => `$${i + 1}`).join(', ')})`, [...ends, [], [], [], [], []]);
  await expect(call(columns.map((c, i) => (i === 3 ? [...c, c[0]] : c)))).rejects.toMatchObject({ code: 'GMBRQ' });
  await expect(call(columns.map((c, i) => (i === 12 ? [] : c)))).rejects.toMatchObject({ code: 'GMBRQ' });
  expect(await stacks(a)).toEqual(['100', '100']);
  expect((await call(columns.map(() => []))).rows).toEqual([]);
  expect((await call(columns)).rows).toEqual([{ kind: 'end', ord: 1, answer: { replayed: false, state: null, busted: [] } }]);
});
