// The live room's settled answers (issue 10): a different action under an applied seq is stale, chip
// amounts are decimal digit strings or safe integers only, `stood_up` carries its amount as a string
// and reaches a player whose stand-up waited for the hand's end, a stored turnTimeSec beyond the
// maximum is clamped, hand histories carry the real deal time and no hand is recorded that was never
// dealt, and a room deals only to connected, funded players.
// HAND_DELAY_MS is 200, so a stand-up right after a hand lands before the next deal's timer fires.
import type pg from 'pg';
import { expectCleanAudit } from '../helpers/cage.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { latestState, liveClient, sleep, stateWhere, until, type LiveClient, type LivePlayer, type Msg } from '../helpers/live.ts';
import { POKER_SETTINGS, startMoneyPlatform } from '../helpers/money.ts';
import { MAX_TURN_TIME_SEC } from '../../server/game/tables/rules.ts';

let db: TestDatabase;
let cagePool: pg.Pool;
let m: Awaited<ReturnType<typeof startMoneyPlatform>>;
let live: LiveClient;

beforeAll(async () => {
  db = await createTestDatabase();
  cagePool = db.pool('poker_cage');
  m = await startMoneyPlatform(db, { env: { HAND_DELAY_MS: '200' } });
  live = liveClient(m, db);
});
afterAll(async () => {
  await live?.closeAll();
  await m?.platform.stop();
  await expectCleanAudit(cagePool);
  await db.drop();
});

/** Two players seated over the websocket at a fresh table, and the first turn of its first hand (seat 0 acts first heads-up). */
async function headsUp(settings: Record<string, unknown> = {}) {
  const a = await live.player(500);
  const b = await live.player(500);
  const tableId = await m.table(a.auth, { ...POKER_SETTINGS, deckSeed: 'room', ...settings });
  expect(await live.sit(a, tableId, 0, 100)).toMatchObject({ type: 'seated' });
  expect(await live.sit(b, tableId, 1, 100)).toMatchObject({ type: 'seated' });
  const turn = await live.turnOf(a, tableId, new Set());
  return { a, b, tableId, turn };
}

const action = (tableId: string, s: Msg, type: string, amount?: unknown) => ({
  type: 'action', tableId, handId: s.legal.handId, seq: s.legal.seq, action: type, ...(amount !== undefined ? { amount } : {}),
});

/** Plays the hand `handId` to its end, everyone checking or calling; resolves to its result. */
async function playOut(players: LivePlayer[], tableId: string, handId: string): Promise<Msg> {
  const answered = new Set<string>();
  for (const stop = Date.now() + 10_000; Date.now() < stop;) {
    const result = players[0]!.ws.messages.find((x) => x.type === 'hand_result' && x.handId === handId);
    if (result) return result;
    for (const p of players) {
      const s = latestState(p.ws, tableId);
      if (s?.legal && s.handId === handId && !answered.has(`${s.legal.seq}`)) {
        answered.add(`${s.legal.seq}`);
        p.ws.send(action(tableId, s, s.legal.actions.includes('check') ? 'check' : 'call'));
      }
    }
    await sleep(5);
  }
  throw new Error(`hand ${handId} did not end`);
}

test('a different action under an applied seq is stale_sequence; only the same one is a duplicate', async () => {
  const { a, tableId, turn } = await headsUp();
  expect(await live.request(a.ws, action(tableId, turn, 'raise', '6'))).toMatchObject({ type: 'action_ack' });
  const again = await live.request(a.ws, action(tableId, turn, 'raise', '6'));
  expect(again).toMatchObject({ type: 'action_ack', duplicate: true });
  // the same amount as a number is the same action
  expect(await live.request(a.ws, action(tableId, turn, 'raise', 6))).toMatchObject({ type: 'action_ack', duplicate: true });
  for (const [type, amount] of [['fold'], ['call'], ['raise', '8']] as [string, string?][]) {
    expect(await live.request(a.ws, action(tableId, turn, type, amount))).toMatchObject({ type: 'error', code: 'stale_sequence' });
  }
  expect(latestState(a.ws, tableId)).toMatchObject({ handId: turn.handId, seq: turn.seq + 1, toAct: 1 });
});

test('chip amounts are decimal digit strings or safe integers: anything else is refused and changes nothing', async () => {
  const { a, b, tableId, turn } = await headsUp();
  for (const amount of ['0x10', ' 4', '4 ', '4.0', '1e3', '+4', '-4', '04', '0b101', '', '99999999999999999999', 4.5, -4, 1e300, 2 ** 53, true, null, [4], { n: 4 }]) {
    const r = await live.request(a.ws, action(tableId, turn, 'raise', amount));
    expect([JSON.stringify(amount), r]).toMatchObject([JSON.stringify(amount), { type: 'error', code: 'illegal_amount' }]);
  }
  for (const ws of [a.ws, b.ws]) expect(latestState(ws, tableId)).toMatchObject({ handId: turn.handId, seq: turn.seq, toAct: 0 });
  // a decimal string and a safe integer are played
  expect(await live.request(a.ws, action(tableId, turn, 'raise', '16'))).toMatchObject({ type: 'action_ack' });
  const next = await stateWhere(b.ws, tableId, (s) => s.legal?.seq === turn.seq + 1, 'the big blind to act');
  expect(await live.request(b.ws, action(tableId, next, 'raise', 40))).toMatchObject({ type: 'action_ack' });
  expect(latestState(b.ws, tableId)!.seats.find((s: Msg) => s.seatIndex === 1)).toMatchObject({ bet: '40' });
});

test('stood_up: its amount is a decimal string, and a stand-up asked during a hand is answered when the hand ends', async () => {
  const { a, b, tableId, turn } = await headsUp({ deckSeed: 'stand' });
  // B asks during the hand: pending; A plays on and B checks or folds on each turn
  expect(await live.request(b.ws, { type: 'stand_up', tableId })).toMatchObject({ type: 'stand_up_pending' });
  await playOut([a, b], tableId, turn.handId);
  const stood = await b.ws.next((x) => x.type === 'stood_up' && x.tableId === tableId);
  expect(stood).toMatchObject({ type: 'stood_up', tableId, amount: expect.stringMatching(/^[0-9]+$/) });
  expect(stood).toHaveProperty('txHash');
  expect(stood).toHaveProperty('receipt');
  const b2 = await live.books(tableId);
  expect(b2.seats[1]).toBeUndefined();
  // A stands up between hands: answered at once, the amount a string too
  const direct = await live.request(a.ws, { type: 'stand_up', tableId });
  expect(direct).toMatchObject({ type: 'stood_up', tableId, amount: expect.stringMatching(/^[0-9]+$/) });
  expect(BigInt(direct.amount) + BigInt(stood.amount)).toBe(200n - (await live.books(tableId)).rake);
});

test('a stored turnTimeSec beyond the maximum is clamped when the room loads (the timer does not fire at once)', async () => {
  expect(MAX_TURN_TIME_SEC).toBe(3600);
  const a = await live.player(500);
  const b = await live.player(500);
  const tableId = await m.table(a.auth, { ...POKER_SETTINGS, deckSeed: 'clamp' });
  // a row stored before creation refused such values
  await db.owner.query(`update game.tables set settings = settings || '{"turnTimeSec": 3000000}' where table_id = $1`, [tableId]);
  expect(await live.sit(a, tableId, 0, 100)).toMatchObject({ type: 'seated' });
  expect(await live.sit(b, tableId, 1, 100)).toMatchObject({ type: 'seated' });
  const turn = await live.turnOf(a, tableId, new Set());
  const ahead = Date.parse(turn.turnDeadline) - Date.now();
  expect(ahead).toBeLessThanOrEqual(MAX_TURN_TIME_SEC * 1000);
  expect(ahead).toBeGreaterThan(MAX_TURN_TIME_SEC * 1000 - 60_000);
  await sleep(100);
  expect(latestState(a.ws, tableId)).toMatchObject({ handId: turn.handId, seq: turn.seq, toAct: 0 });
});

test('hand histories carry the deal time; no hand is recorded that was never dealt', async () => {
  const { a, b, tableId, turn } = await headsUp({ deckSeed: 'history' });
  const seen = Date.now();
  await sleep(50);
  await playOut([a, b], tableId, turn.handId);
  // both leave right after the hand, before the next deal's timer fires
  await Promise.all([a, b].map((p) => live.request(p.ws, { type: 'stand_up', tableId })));
  await until(async () => (await live.books(tableId)).stacks === 0n, 'the table empty');
  await sleep(400);
  const { rows } = await db.owner.query<{ hand_id: string; status: string; started_at: Date; ended_at: Date }>(
    'select hand_id, status, started_at, ended_at from game.hand_histories where table_id = $1 order by started_at', [tableId]);
  expect(rows.map((r) => [r.hand_id, r.status])).toEqual([[turn.handId, 'finished']]);
  expect(rows[0]!.started_at.getTime()).toBeLessThanOrEqual(seen);
  expect(rows[0]!.ended_at.getTime()).toBeGreaterThan(rows[0]!.started_at.getTime());
});

test('a hand abandoned after a stop carries its deal time', async () => {
  const a = await live.player(500);
  const tableId = await m.table(a.auth, { ...POKER_SETTINGS, deckSeed: 'abandoned' });
  expect((await m.deposit(a.auth, { tableId, seatIndex: 0, amount: 100 })).status).toBe(200);
  const before = Date.now();
  expect((await m.hand({ action: 'begin', tableId, handId: `${tableId}:stopped` })).status).toBe(200);
  await sleep(50);
  await live.join(a, tableId); // the room loads and abandons the hand nobody finishes
  const { rows } = await db.owner.query<{ status: string; started_at: Date; ended_at: Date }>(
    'select status, started_at, ended_at from game.hand_histories where table_id = $1', [tableId]);
  expect(rows).toHaveLength(1);
  expect(rows[0]!.status).toBe('abandoned');
  expect(rows[0]!.started_at.getTime()).toBeLessThan(rows[0]!.ended_at.getTime());
  expect(rows[0]!.started_at.getTime()).toBeGreaterThanOrEqual(before - 1000);
});

test('a room deals only to connected, funded players (a restarted room waits for them)', async () => {
  const a = await live.player(500);
  const b = await live.player(500);
  const c = await live.player(500);
  const tableId = await m.table(a.auth, { ...POKER_SETTINGS, turnTimerEnabled: false, deckSeed: 'connected' });
  // seats funded over HTTP while no room runs (as after a restart), then only A and a spectator watch
  for (const [i, p] of [a, b, c].entries()) expect((await m.deposit(p.auth, { tableId, seatIndex: i, amount: 100 })).status).toBe(200);
  await live.join(a, tableId);
  const spectator = await live.open(`/ws/tables/${tableId}`);
  await sleep(600);
  expect(a.ws.messages.filter((x) => x.type === 'game_state').every((s) => s.status === 'waiting')).toBe(true);
  const { rows } = await db.owner.query('select current_hand_id from game.tables where table_id = $1', [tableId]);
  expect(rows[0].current_hand_id).toBeNull();
  expect((await db.owner.query('select 1 from game.hand_histories where table_id = $1', [tableId])).rowCount).toBe(0);
  // B connects: a hand between A and B only (C is not dealt in)
  await live.join(b, tableId);
  const dealt = await stateWhere(b.ws, tableId, (s) => s.status === 'betting', 'a hand dealt');
  expect(dealt.seats.filter((s: Msg) => s.inHand).map((s: Msg) => s.seatIndex).sort()).toEqual([0, 1]);
  await playOut([a, b], tableId, dealt.handId);
  // C connects: dealt in from a later hand (at C's big blind: C missed a hand while away)
  await live.join(c, tableId);
  const played = new Set([dealt.handId]);
  let withC: Msg | undefined;
  for (let i = 0; i < 6 && !withC; i++) {
    const next = await stateWhere(a.ws, tableId, (s) => s.status === 'betting' && !played.has(s.handId), 'the next hand');
    played.add(next.handId);
    if (next.seats.some((x: Msg) => x.seatIndex === 2 && x.inHand)) withC = next;
    await playOut([a, b, c], tableId, next.handId);
  }
  expect(withC).toBeDefined();
  await spectator.close();
});

test('a hand end whose write fails is retried: the table is not left held, the hand result stands and play goes on', async () => {
  const { a, b, tableId, turn } = await headsUp({ deckSeed: 'retry-finish' });
  // hold the table row past the game role's lock_timeout (5 s): the first write of the hand's end fails
  const holder = await db.owner.connect();
  try {
    await holder.query('begin');
    await holder.query('select 1 from game.tables where table_id = $1 for update', [tableId]);
    expect(await live.request(a.ws, action(tableId, turn, 'fold'))).toMatchObject({ type: 'action_ack' });
    await sleep(6_000);
    await holder.query('commit');
  } finally {
    await holder.query('rollback').catch(() => undefined);
    holder.release();
  }
  const result = await b.ws.next((x) => x.type === 'hand_result' && x.handId === turn.handId, 15_000);
  expect(result).toMatchObject({ type: 'hand_result', tableId });
  const { rows } = await db.owner.query('select status from game.hand_histories where hand_id = $1', [turn.handId]);
  expect(rows).toEqual([{ status: 'finished' }]);
  // B won the blinds: the stacks the hand ended with are the ones written
  expect((await live.books(tableId)).seats[1]).toBe(101n);
  const next = await stateWhere(a.ws, tableId, (s) => s.status === 'betting' && s.handId !== turn.handId, 'the next hand', { timeoutMs: 10_000 });
  expect(next.handId).not.toBe(turn.handId);
}, 40_000);
