// A position's range of hands (issue 33, sixth part): the hand links a cash hand's row carries are
// read by game_private.position_chain from the position's first_hand to its last_hand. A hand end
// sets first_hand at a position's first move and does not rewrite last_hand (the row's last column:
// its update is logged from the first changed column to the last) for a position that stays seated;
// last_hand is set when the position closes: the hand that busted it, or the table's latest hand
// at its settlement. Whatever the order, every chain reads whole and verifies.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/db.ts';
import { createTable, creditSeat, handEnding, newKey, openDepositsAs, standUp, verifyChain, type TableRow } from '../../../test/helpers/game.ts';

let db: TestDatabase;
let game: pg.Pool;
let t: TableRow;
const users = [randomUUID(), randomUUID(), randomUUID()];
let ids: bigint[];
let handNumber = 0;
const ENDING = handEnding(JSON.stringify([{ type: 'hand_started' }]), JSON.stringify({ type: 'hand_result' }));

beforeAll(async () => {
  db = await createTestDatabase();
  game = db.pool('poker_game');
  openDepositsAs(db.owner);
  t = await createTable(db.pool('poker_cage'));
  ids = [];
  for (const [seat, userId] of users.entries()) ids.push((await creditSeat(game, newKey(), t.table_id, userId, seat, 100n)).player_id);
});
afterAll(async () => {
  await db.drop();
});

/** One hand, begun and ended under the lease as the room does, with these stacks after it. */
async function hand(stacks: Record<string, number>) {
  handNumber += 1;
  const handId = `range-${handNumber}-${randomUUID()}`;
  const epoch = await db.leaseEpoch(t.table_id);
  await db.owner.query('select game.begin_hand($1, $2, $3)', [t.table_id, handId, epoch]);
  await game.query('select game.end_hand($1, $2, $3, $4::jsonb, 0, 0, $5, $6::jsonb, $7::uuid[], now(), $8, null, null, null, null)',
    [t.table_id, handId, handNumber, JSON.stringify(stacks), ENDING.compact, ENDING.started, [], epoch]);
  return handId;
}

const range = async (id: bigint) => (await db.owner.query<{ first_hand: string | null; last_hand: string | null }>(
  'select first_hand::text, last_hand::text from game.table_players where id = $1', [String(id)])).rows[0];
const handLinks = async (id: bigint) => (await verifyChain(db.owner, id)).links.filter((l) => l.event === 'hand').map((l) => l.ref_id);

test('a seated position keeps no last hand; a bust sets it to the hand that busted it; a settlement to the table\'s latest hand', async () => {
  const [a, b, c] = ids as [bigint, bigint, bigint];
  const h1 = await hand({ [String(a)]: 90, [String(b)]: 110, [String(c)]: 100 });
  const h2 = await hand({ [String(a)]: 0, [String(b)]: 110, [String(c)]: 190 });
  expect(await range(a)).toEqual({ first_hand: '1', last_hand: '2' });
  // moved in hand 1, not in hand 2: no last hand while seated, the hand rows from its first read
  expect(await range(b)).toEqual({ first_hand: '1', last_hand: null });
  expect(await range(c)).toEqual({ first_hand: '2', last_hand: null });
  const h3 = await hand({ [String(b)]: 150, [String(c)]: 150 });
  const h4 = await hand({ [String(b)]: 150, [String(c)]: 150 });
  expect(await handLinks(a)).toEqual([h1, h2]);
  expect(await handLinks(b)).toEqual([h1, h3]);
  expect(await handLinks(c)).toEqual([h2, h3]);

  // b stands up and is settled: its range closes at the table's latest hand (4, which did not move it)
  const up = await standUp(game, t.table_id, users[1]!);
  const ref = `withdraw:${newKey()}`;
  await db.owner.query(
    `insert into cage.withdraw_intents (idempotency_key, ledger_ref_id, user_id, table_id, player_id, amount, history_hash, settlement)
     values ('0x' || encode(sha256(convert_to($1, 'UTF8')), 'hex'), $1, $2, $3, $4, $5, $6, 'cash_out')`,
    [ref, users[1], t.table_id, String(b), String(up.chip_balance), up.history_hash]);
  await game.query('select * from game.settle_seat($1, $2, $3)', [String(b), ref, 'cash_out']);
  expect(await range(b)).toEqual({ first_hand: '1', last_hand: '4' });
  // hands after it are outside its range; c's stays open
  const h5 = await hand({ [String(c)]: 150 });
  expect(h5).toBeDefined();
  for (const id of [a, b, c]) expect((await verifyChain(db.owner, id)).ok).toBe(true);
  expect(await handLinks(b)).toEqual([h1, h3]);
  expect(await handLinks(c)).toEqual([h2, h3]);
  expect(h4).toBeDefined();
});
