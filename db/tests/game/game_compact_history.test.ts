// A finished hand's compact history (issue 33): game.end_hand stores the history and the result as one
// bytea the game process compressed, with the hand_started event beside it. Postgres neither parses
// the history nor compresses it again: the row holds no jsonb history, its compact value is not
// pglz-compressed and no TOAST chunk is written for the row. What the game login sends that is not a
// compact value is refused invalid_hand and writes nothing; what SQL reads of the hand (the player's
// seats, the audit's hand_started) reads the same from either form.
import { randomBytes, randomUUID } from 'node:crypto';
import type pg from 'pg';
import { ed25519 } from '@noble/curves/ed25519.js';
import { signerFromPrivateKey } from '../../../server/crypto/signing.ts';
import { compactHand, readCompact, storedHand } from '../../../server/game/hands/compact.ts';
import { GENESIS, recordOf, signRecord } from '../../../server/game/hands/hand-record.ts';
import { handResult, historyJson, eventJson, startedJson } from '../../../server/game/live/wire.ts';
import { applyAction, isRefusal, legalActions, startHand, type HandState } from '../../../server/game/poker/engine.ts';
import { DEAL_ALGORITHM, deckOf, handCommitmentOf, toHex, type DealReveal } from '../../../server/game/poker/fair-deal.ts';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/db.ts';
import { createTable, creditSeat, newKey, openDepositsAs, type TableRow } from '../../../test/helpers/game.ts';

let db: TestDatabase;
let game: pg.Pool;
let t: TableRow;
const users = [randomUUID(), randomUUID(), randomUUID(), randomUUID(), randomUUID(), randomUUID()];
let positions: { seat: number; id: string; stack: bigint; userId: string }[];
let prev = GENESIS;
let handNumber = 0;
const signer = signerFromPrivateKey(ed25519.utils.randomSecretKey());

beforeAll(async () => {
  db = await createTestDatabase();
  game = db.pool('poker_game');
  openDepositsAs(db.owner);
  t = await createTable(db.pool('poker_cage'));
  positions = [];
  for (const [seat, userId] of users.entries()) {
    positions.push({ seat, id: String((await creditSeat(game, newKey(), t.table_id, userId, seat, 100n)).player_id), stack: 100n, userId });
  }
});
afterAll(async () => {
  await db.drop();
});

/** A six-handed hand played by the engine (calls, some raises), with its record and hand_result as the room builds them. */
function played(handId: string) {
  handNumber += 1;
  const seed = new Uint8Array(32).map((_, i) => (i * 7 + handNumber) & 0xff);
  const deal: DealReveal = { algorithm: DEAL_ALGORITHM, commitment: handCommitmentOf(seed, { tableId: t.table_id, handNumber, handId }), serverSeed: toHex(seed), contributions: [] };
  let state: HandState = startHand({
    handId, seats: positions.map((p) => ({ seat: p.seat, playerId: p.id, stack: p.stack })), button: handNumber % 6,
    smallBlind: 1n, bigBlind: 2n, ante: 0n, deck: deckOf(deal, handId), rake: { percent: 0, cap: 0n, minPot: 0n, requiresFlop: true },
  });
  let raised = 0;
  for (let turn = 0; state.status === 'betting'; turn++) {
    const legal = legalActions(state)!;
    // a raise preflop and one on the flop, called around: a hand of a few kilobytes like the live benchmark's
    const raise = legal.actions.includes('raise') && (turn === 2 || (state.board.length === 3 && !raised++));
    const next = applyAction(state, legal.seat, raise ? { type: 'raise', amount: legal.minRaiseTo! } : { type: legal.actions.includes('check') ? 'check' : 'call' }, legal.seq);
    if (isRefusal(next)) throw new Error(next.error);
    state = next;
  }
  const record = signRecord(recordOf(state, { tableId: t.table_id, handNumber, prev, deal }), signer);
  const views = positions.map((p) => ({ seatIndex: p.seat, userId: p.userId }));
  const result = JSON.stringify(handResult(t.table_id, handId, state.result!, views as never, { deal, record }));
  const stacks = Object.fromEntries(state.result!.stacks.map((s) => [s.playerId, Number(s.stack)]));
  return { state, deal, record, result, stacks };
}

type Hand = ReturnType<typeof played>;
const END = `select game.end_hand($1, $2, $3, $4::jsonb, 0, 0, $5, $6::jsonb, '{}'::uuid[], now(), $7, $8::jsonb, $9, $10, $11) as answer`;
const endAs = (login: pg.Pool, handId: string, h: Hand, compact: unknown, started: unknown) => async () => login.query(END, [
  t.table_id, handId, handNumber, JSON.stringify(h.stacks), compact, started, await db.leaseEpoch(t.table_id),
  JSON.stringify(h.deal), h.record.text, h.record.signature, h.record.publicKey,
]);
const begin = async (handId: string) => db.owner.query('select game.begin_hand($1, $2, $3)', [t.table_id, handId, await db.leaseEpoch(t.table_id)]);
const commit = (h: Hand) => {
  prev = h.record.hash;
  for (const p of positions) p.stack = BigInt(h.stacks[p.id]!);
};
const toastChunks = async () => {
  const { rows: [c] } = await db.owner.query<{ toast: string }>("select reltoastrelid::regclass::text as toast from pg_class where oid = 'game.hand_histories'::regclass");
  return (await db.owner.query<{ n: number }>(`select count(*)::int as n from ${c!.toast}`)).rows[0]!.n;
};

test('a finished hand\'s row: one compact value, no jsonb history, not compressed again, no TOAST chunk; it reads back as the hand', async () => {
  const handId = `compact-${randomUUID()}`;
  await begin(handId);
  const h = played(handId);
  const chunks = await toastChunks();
  const compact = compactHand(historyJson(h.state.history), h.result);
  await endAs(game, handId, h, compact, startedJson(h.state.history[0]!))();
  commit(h);
  const { rows: [row] } = await db.owner.query(
    `select history, result, compact, started, pg_column_compression(compact) as compact_codec, pg_column_compression(record) as record_codec,
            pg_column_size(compact) as compact_bytes, pg_column_size(h.*) as row_bytes,
            (select attstorage from pg_attribute where attrelid = 'game.hand_histories'::regclass and attname = 'compact') as storage,
            (select reloptions from pg_class where oid = 'game.hand_histories'::regclass) as options
       from game.hand_histories h where hand_id = $1`, [handId]);
  // a six-handed hand's row is over the table's 3000-byte target: its record (text) is compressed inline, never the compact value,
  // and nothing goes out of line (every column `main`: moved out only when the row would not fit a page)
  expect(row).toMatchObject({ history: null, result: null, compact_codec: null, record_codec: 'pglz', storage: 'm', options: ['toast_tuple_target=3000'] });
  expect(row.row_bytes).toBeLessThan(4096);
  // stored as sent: inline, byte for byte (a value moved out of line would count its pointer, 18 bytes)
  expect(Buffer.compare(row.compact, compact)).toBe(0);
  expect(row.compact_bytes).toBe(compact.length + 4);
  expect(await toastChunks()).toBe(chunks);
  // the hand_started event without what the signed record holds (its seats and hand id): the blinds, the ante, their seats, the button
  const { seats: _seats, handId: _handId, ...rest } = JSON.parse(eventJson(h.state.history[0]!));
  expect(row.started).toEqual(rest);
  expect(Object.keys(row.started).sort()).toEqual(['ante', 'bigBlind', 'bigBlindSeat', 'button', 'smallBlind', 'smallBlindSeat', 'type']);
  // the history and the result as they were sent, every event
  expect(readCompact(row.compact)).toEqual({ history: JSON.parse(historyJson(h.state.history)), result: JSON.parse(h.result) });
  if (process.env.DEBUG_COMPACT) console.log(`history ${historyJson(h.state.history).length} B + result ${h.result.length} B -> compact ${compact.length} B; row ${row.row_bytes} B`);
});

test('a row still over the target once its record is compressed stays whole and inline: no TOAST chunk', async () => {
  const handId = `long-${randomUUID()}`;
  await begin(handId);
  const h = played(handId);
  const chunks = await toastChunks();
  // a compact value of 3.5 KB (a long hand's; its body random, so nothing compresses it), well over the target with the record compressed
  const body = randomBytes(3500);
  const compact = Buffer.concat([Buffer.from([1, 0, 0, 0x40, 0]), body]);
  await endAs(game, handId, h, compact, startedJson(h.state.history[0]!))();
  commit(h);
  const { rows: [row] } = await db.owner.query(
    `select compact, pg_column_compression(compact) as codec, pg_column_size(compact) as compact_bytes, pg_column_size(h.*) as row_bytes
       from game.hand_histories h where hand_id = $1`, [handId]);
  expect(row.codec).toBeNull();
  expect(row.compact_bytes).toBe(compact.length + 4); // inline, not a TOAST pointer
  expect(row.row_bytes).toBeGreaterThan(3000);
  expect(Buffer.compare(row.compact, compact)).toBe(0);
  expect(await toastChunks()).toBe(chunks);
});

test('the seats a player reads (game.hand_for_player) come from the record, the whole started event or a jsonb history alike', async () => {
  const handId = `seats-${randomUUID()}`;
  await begin(handId);
  const h = played(handId);
  await endAs(game, handId, h, compactHand(historyJson(h.state.history), h.result), startedJson(h.state.history[0]!))();
  commit(h);
  const seatsOf = async (userId: string) => (await game.query('select seats from game.hand_for_player($1, $2)', [handId, userId])).rows[0]?.seats;
  // the stored event names no seat: they are read from the signed record
  expect((await db.owner.query('select started ? \'seats\' as has from game.hand_histories where hand_id = $1', [handId])).rows[0].has).toBe(false);
  expect(await seatsOf(users[2]!)).toEqual([2]);
  expect(await seatsOf(randomUUID())).toBeUndefined();
  // a hand stored with the whole event (before issue 33's sixth part): the same seats
  await db.owner.query('update game.hand_histories set started = $2::jsonb where hand_id = $1', [handId, eventJson(h.state.history[0]!)]);
  expect(await seatsOf(users[2]!)).toEqual([2]);
  // the same hand stored as before issue 33 (its events in a jsonb history): the same seats, the same stored hand
  const { rows: [before] } = await db.owner.query('select compact from game.hand_histories where hand_id = $1', [handId]);
  const read = readCompact(before.compact)!;
  await db.owner.query('update game.hand_histories set compact = null, started = null, history = $2::jsonb, result = $3::jsonb where hand_id = $1',
    [handId, JSON.stringify(read.history), JSON.stringify(read.result)]);
  expect(await seatsOf(users[2]!)).toEqual([2]);
  const { rows: [after] } = await db.owner.query('select history, result, compact from game.hand_histories where hand_id = $1', [handId]);
  expect(JSON.stringify(storedHand(after))).toBe(JSON.stringify({ ...read, readable: true }));
  // a finished hand holds exactly one form
  await expect(db.owner.query('update game.hand_histories set compact = $2 where hand_id = $1', [handId, before.compact])).rejects.toMatchObject({ code: '23514' });
  await expect(db.owner.query('update game.hand_histories set history = null where hand_id = $1', [handId])).rejects.toMatchObject({ code: '23514' });
});

describe('what the game login sends that is not a compact history is refused invalid_hand, and writes nothing', () => {
  const header = (inflated: number, body: Buffer) => Buffer.concat([Buffer.from([1]), Buffer.from([inflated >>> 24, (inflated >>> 16) & 0xff, (inflated >>> 8) & 0xff, inflated & 0xff]), body]);
  const good = (h: Hand) => compactHand(historyJson(h.state.history), h.result);
  it.each([
    ['no compact value', () => null, true],
    ['an empty one', () => Buffer.alloc(0), true],
    ['a jsonb history where the compact value goes', (h: Hand) => Buffer.from(historyJson(h.state.history)), true],
    ['another format', (h: Hand) => Buffer.concat([Buffer.from([2]), good(h).subarray(1)]), true],
    ['a header alone', () => header(10, Buffer.alloc(0)), true],
    ['over 64 KiB', () => header(1 << 20, Buffer.alloc(65536, 7)), true],
    ['one that says it inflates to more than 1 MiB', (h: Hand) => header((1 << 20) + 1, good(h).subarray(5)), true],
    ['no started event', () => null, false],
    ['a started event that is not hand_started', () => JSON.stringify({ type: 'action' }), false],
    ['a started event that is not an object', () => '[]', false],
  ] as [string, (h: Hand) => unknown, boolean][])('%s', async (_name, value, isCompact) => {
    const handId = `hostile-${randomUUID()}`;
    await begin(handId);
    const h = played(handId);
    handNumber -= 1;
    const links = async () => (await db.owner.query('select count(*)::int as n from game.position_links')).rows[0].n;
    const before = await links();
    const send = isCompact ? endAs(game, handId, h, value(h), eventJson(h.state.history[0]!)) : endAs(game, handId, h, good(h), value(h));
    await expect(send()).rejects.toMatchObject({ code: 'GMHND', message: 'invalid_hand' });
    expect((await db.owner.query('select 1 from game.hand_histories where hand_id = $1', [handId])).rowCount).toBe(0);
    expect(await links()).toBe(before);
    expect((await db.owner.query('select current_hand_id from game.tables where table_id = $1', [t.table_id])).rows[0].current_hand_id).toBe(handId);
    await db.owner.query('select game.release_hand($1, $2, $3)', [t.table_id, handId, await db.leaseEpoch(t.table_id)]);
  });

  it('one with a good header that does not inflate is stored (SQL cannot inflate) and reads as a hand with no readable history', async () => {
    const handId = `garbled-${randomUUID()}`;
    await begin(handId);
    const h = played(handId);
    const garbled = header(5000, Buffer.alloc(300, 0xff));
    await endAs(game, handId, h, garbled, eventJson(h.state.history[0]!))();
    commit(h);
    const { rows: [row] } = await game.query('select (x.hand).compact, (x.hand).history, (x.hand).result from game.hand_for_player($1, $2) x', [handId, users[0]]);
    expect(storedHand(row)).toEqual({ history: [], result: null, readable: false });
    // nor does a reader inflate past what the header says (a bomb): deflate of 1 MiB of zeros said to be 100 bytes
    expect(readCompact(header(100, (await import('node:zlib')).deflateRawSync(Buffer.alloc(1 << 20))))).toBeNull();
  });
});
