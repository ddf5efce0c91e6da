// Live tables played over real websockets against running roles (auth, game, cage): the turn
// timer and sitting out, idle removal through the forced withdraw into custody, random play with
// three to six players and the books checked after every hand, reconnects and resent actions,
// agents and the audience gate (with the claim board), and what spectators see.
//
// The main platform keeps TIMEOUTS_BEFORE_SIT_OUT at its default of 2, so the timer test can show a
// check and then a fold by the timer, the second one sitting the player out (the same two seconds
// of waiting as with 1). The idle-removal test starts a second platform on the same database with
// TIMEOUTS_BEFORE_SIT_OUT 1 and sets the house's idle time (game.house_rules, which `npm start`
// seeds from IDLE_KICK_SECONDS) to 1 s for its duration. HAND_DELAY_MS is 10 on both.
import type pg from 'pg';
import { expectCleanAudit } from '../helpers/cage.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import {
  latestState, liveClient, prng, randomAction, resultsOf, seatIn, sleep, stateWhere, until,
  type LiveClient, type LivePlayer, type Msg,
} from '../helpers/live.ts';
import { call, POKER_SETTINGS, startMoneyPlatform } from '../helpers/money.ts';

type Money = Awaited<ReturnType<typeof startMoneyPlatform>>;

let db: TestDatabase;
let cagePool: pg.Pool;
let m: Money;
let live: LiveClient;
// the idle-removal platform (TIMEOUTS_BEFORE_SIT_OUT 1), started by its test
let m2: Money | undefined;
let live2: LiveClient | undefined;

beforeAll(async () => {
  db = await createTestDatabase();
  cagePool = db.pool('poker_cage');
  m = await startMoneyPlatform(db, { env: { HAND_DELAY_MS: '10', TIMEOUTS_BEFORE_SIT_OUT: '2' } });
  live = liveClient(m, db);
});
afterAll(async () => {
  await live?.closeAll();
  await live2?.closeAll();
  await m2?.platform.stop();
  await m?.platform.stop();
  await expectCleanAudit(cagePool);
  await db.drop();
});

const sum = (values: Iterable<bigint>) => [...values].reduce((t, v) => t + v, 0n);

/** After everybody stood up: no chips left at the table but the rake, and the cage balances short by exactly the rake. */
async function expectSettled(l: LiveClient, money: Money, tableId: string, players: { auth: Record<string, string> }[], chipsBefore: number) {
  const books = await l.books(tableId);
  expect(books.stacks).toBe(0n);
  expect(books.escrow).toBe(books.rake);
  const balances = await Promise.all(players.map((p) => money.balance(p.auth)));
  expect(BigInt(balances.reduce((t, v) => t + v, 0))).toBe(BigInt(chipsBefore) - books.rake);
}

/** Drives `players` (seat i = players[i]) with check-or-call until the hand `handId` ends; resolves to its result. */
async function checkDown(players: LivePlayer[], tableId: string, handId: string, answered: Set<string>): Promise<Msg> {
  for (const stop = Date.now() + 10_000; ;) {
    if (Date.now() > stop) throw new Error(`hand ${handId} did not end`);
    const result = resultsOf(players[0]!.ws, tableId).find((r) => r.handId === handId);
    if (result) return result;
    let acted = false;
    for (const p of players) {
      const s = latestState(p.ws, tableId);
      if (s?.legal && s.handId === handId && !answered.has(`${s.legal.handId}:${s.legal.seq}`)) {
        await live.act(p, tableId, s, s.legal.actions.includes('check') ? 'check' : 'call', undefined, answered);
        acted = true;
      }
    }
    if (!acted) await sleep(3);
  }
}

test('turn timer: a check when free, else a fold; sat out after consecutive timeouts and not dealt in; sit_in waits for the big blind; no timer, no timeout', async () => {
  // a table without a timer (turnTimeSec 1 but turnTimerEnabled false): it is looked at again at the end
  const d = await live.player(500);
  const e = await live.player(500);
  const calm = await m.table(d.auth, { ...POKER_SETTINGS, turnTimeSec: 1, turnTimerEnabled: false, deckSeed: 'calm' });
  expect(await live.sit(d, calm, 0, 100)).toMatchObject({ type: 'seated', seatIndex: 0 });
  expect(await live.sit(e, calm, 1, 100)).toMatchObject({ type: 'seated', seatIndex: 1 });
  const calmTurn = await until(() => [d, e].map((p) => latestState(p.ws, calm)).find((s) => s?.legal), 'a turn at the table without a timer');
  expect(calmTurn.turnDeadline).toBeNull();
  const calmSince = Date.now();

  const players = [await live.player(500), await live.player(500), await live.player(500)];
  const [a, b, c] = players as [LivePlayer, LivePlayer, LivePlayer];
  const tableId = await m.table(a.auth, { ...POKER_SETTINGS, turnTimeSec: 1, deckSeed: 'timer' });
  await live.seatBeforeRoom(players, tableId, [100, 100, 100]);
  const answered = new Set<string>();

  // hand 1 (a fresh start: seat 0 the button, 1 the small blind, 2 the big blind): A and B call
  let s = await live.turnOf(a, tableId, answered);
  expect(s).toMatchObject({ button: 0, smallBlindSeat: 1, bigBlindSeat: 2, toAct: 0, street: 'preflop' });
  const hand1 = s.handId as string;
  await live.act(a, tableId, s, 'call', undefined, answered);
  await live.act(b, tableId, await live.turnOf(b, tableId, answered), 'call', undefined, answered);

  // C, the big blind, may check for free and does nothing: after ~1 s the timer checks for them
  s = await live.turnOf(c, tableId, answered);
  expect(s.legal.actions).toContain('check');
  const deadline = Date.parse(s.turnDeadline);
  expect(deadline - Date.now()).toBeGreaterThan(0);
  expect(deadline - Date.now()).toBeLessThanOrEqual(1000);
  let since = Date.now();
  const checked = await stateWhere(c.ws, tableId, (x) => x.handId === hand1 && x.seq > s.seq, 'the timer to check', { timeoutMs: 3000 });
  expect(Date.now() - since).toBeGreaterThanOrEqual(800);
  expect(checked).toMatchObject({ street: 'flop', seq: s.seq + 1 });
  expect(checked.board).toHaveLength(3);
  // one timeout is not enough to be sat out (TIMEOUTS_BEFORE_SIT_OUT 2)
  expect(seatIn(checked, 2)).toMatchObject({ inHand: true, folded: false, sittingOut: false, bet: '0', stack: '98' });

  // the flop: B bets, C faces it and does nothing again: the timer folds, and C is sat out
  s = await live.turnOf(b, tableId, answered);
  expect(s.toAct).toBe(1);
  await live.act(b, tableId, s, 'bet', s.legal.minRaiseTo, answered);
  s = await live.turnOf(c, tableId, answered);
  expect(s.legal.actions).toEqual(expect.arrayContaining(['fold', 'call']));
  expect(s.legal.actions).not.toContain('check');
  since = Date.now();
  const folded = await stateWhere(c.ws, tableId, (x) => x.handId === hand1 && x.seq > s.seq, 'the timer to fold', { timeoutMs: 3000 });
  expect(Date.now() - since).toBeGreaterThanOrEqual(800);
  expect(seatIn(folded, 2)).toMatchObject({ folded: true, sittingOut: true, stack: '98' });
  // A and B check it down to a showdown
  const r1 = await checkDown(players, tableId, hand1, answered);
  expect(r1.showdown).toBe(true);
  expect(r1.shown.length).toBeGreaterThanOrEqual(1);
  expect(r1.shown.every((x: Msg) => x.seat === 0 || x.seat === 1)).toBe(true);
  expect(r1.stacks.find((x: Msg) => x.seat === 2)).toMatchObject({ stack: '98', net: '-2' });

  // hand 2: C is sitting out and not dealt in; C comes back during it
  const s2 = await stateWhere(c.ws, tableId, (x) => x.handId !== null && x.handId !== hand1 && x.status === 'betting', 'hand 2');
  expect(seatIn(s2, 2)).toMatchObject({ inHand: false, sittingOut: true, cards: null });
  expect(s2.legal ?? null).toBeNull();
  expect(await live.request(c.ws, { type: 'sit_in', tableId })).toMatchObject({ type: 'sat_in', tableId });
  const back = await stateWhere(c.ws, tableId, (x) => x.handId === s2.handId && seatIn(x, 2)?.sittingOut === false, 'C back');
  expect(seatIn(back, 2)?.inHand).toBe(false);

  // C waits for the big blind: hands go on without them until the big blind reaches seat 2
  const without: string[] = [];
  let dealt: Msg | undefined;
  for (let handId: string = s2.handId; without.length < 6;) {
    without.push(handId);
    const t = latestState(c.ws, tableId)!;
    const toAct = players[t.toAct]!;
    await live.act(toAct, tableId, await live.turnOf(toAct, tableId, answered), 'fold', undefined, answered);
    const next = await stateWhere(c.ws, tableId, (x) => x.status === 'betting' && x.handId !== null && x.handId !== hand1 && !without.includes(x.handId), 'the next hand');
    if (seatIn(next, 2)?.inHand) {
      dealt = next;
      break;
    }
    expect(seatIn(next, 2)).toMatchObject({ sittingOut: false, inHand: false });
    handId = next.handId;
  }
  // hand 2 (sitting out) and hand 3 (the big blind on seat 1) went by without C; C then posts the big blind
  expect(without.length).toBeGreaterThanOrEqual(2);
  expect(dealt).toMatchObject({ bigBlindSeat: 2 });
  expect(seatIn(dealt!, 2)).toMatchObject({ inHand: true, bet: '2', sittingOut: false });
  expect(seatIn(dealt!, 2)?.cards).toHaveLength(2);

  // the table without a timer has not moved in all that time
  if (Date.now() - calmSince < 1500) await sleep(1500 - (Date.now() - calmSince));
  for (const p of [d, e]) {
    const now = latestState(p.ws, calm)!;
    expect(now).toMatchObject({ handId: calmTurn.handId, seq: calmTurn.seq, toAct: calmTurn.toAct, turnDeadline: null });
    expect(resultsOf(p.ws, calm)).toEqual([]);
  }

  await live.standUpAll(players, tableId);
  await live.standUpAll([d, e], calm);
  await expectSettled(live, m, tableId, players, 1500);
  await expectSettled(live, m, calm, [d, e], 1000);
});

test('sit_out and sit_in by hand: a player who steps away is not dealt in; sit_in from a player who never left changes nothing', async () => {
  const players = [await live.player(500), await live.player(500), await live.player(500)];
  const [a, b, c] = players as [LivePlayer, LivePlayer, LivePlayer];
  const tableId = await m.table(a.auth, { ...POKER_SETTINGS, deckSeed: 'sit-out' });
  await live.seatBeforeRoom(players, tableId, [100, 100, 100]);
  const answered = new Set<string>();
  const s = await live.turnOf(a, tableId, answered);
  expect(s).toMatchObject({ button: 0, smallBlindSeat: 1, bigBlindSeat: 2 });
  // during hand 1, B (playing, never away) says sit_in: nothing changes
  expect(await live.request(b.ws, { type: 'sit_in', tableId })).toMatchObject({ type: 'sat_in' });
  await live.act(a, tableId, s, 'fold', undefined, answered);
  await live.act(b, tableId, await live.turnOf(b, tableId, answered), 'fold', undefined, answered);
  const r1 = await a.ws.next((x) => x.type === 'hand_result' && x.handId === s.handId);
  expect(r1.stacks.find((x: Msg) => x.seat === 2)).toMatchObject({ stack: '101' });

  // hand 2 deals all three, B included (the big blind moved to seat 0)
  const s2 = await stateWhere(a.ws, tableId, (x) => x.status === 'betting' && x.handId !== null && x.handId !== s.handId, 'hand 2');
  expect(s2.bigBlindSeat).toBe(0);
  expect(s2.seats.map((x: Msg) => [x.seatIndex, x.inHand, x.sittingOut])).toEqual([[0, true, false], [1, true, false], [2, true, false]]);
  // during it C steps away: still in hand 2, not dealt into hand 3
  expect(await live.request(c.ws, { type: 'sit_out', tableId })).toMatchObject({ type: 'sat_out' });
  const away = await stateWhere(a.ws, tableId, (x) => x.handId === s2.handId && seatIn(x, 2)?.sittingOut === true, 'C away');
  expect(seatIn(away, 2)).toMatchObject({ inHand: true, folded: false });
  await checkDown(players, tableId, s2.handId, answered);
  const s3 = await stateWhere(a.ws, tableId, (x) => x.status === 'betting' && x.handId !== null && x.handId !== s.handId && x.handId !== s2.handId, 'hand 3');
  expect(s3.seats.map((x: Msg) => [x.seatIndex, x.inHand, x.sittingOut])).toEqual([[0, true, false], [1, true, false], [2, false, true]]);
  await live.standUpAll(players, tableId);
  await expectSettled(live, m, tableId, players, 1500);
});

test('a sit asked for during a hand is pending and done at its end, before the next deal; one pending sit per player; a player who left is not sat', async () => {
  const players = [await live.player(500), await live.player(500)];
  const [a, b] = players as [LivePlayer, LivePlayer];
  const tableId = await m.table(a.auth, { ...POKER_SETTINGS, turnTimerEnabled: false, deckSeed: 'pending-sit' });
  await live.seatBeforeRoom(players, tableId, [100, 100]);
  const answered = new Set<string>();
  const s = await live.turnOf(a, tableId, answered);
  const hand1 = s.handId as string;
  const c = await live.player(500);
  const d = await live.player(500);
  await live.join(c, tableId);
  await live.join(d, tableId);

  // C asks during hand 1: pending, nothing moved yet; a second ask is refused
  const pending = await live.request(c.ws, { type: 'sit', tableId, seatIndex: 2, amount: 100 });
  expect(pending).toMatchObject({ type: 'sit_pending', tableId });
  expect(await live.request(c.ws, { type: 'sit', tableId, seatIndex: 2, amount: 100 })).toMatchObject({ type: 'error', code: 'sit_already_pending' });
  expect(await m.balance(c.auth)).toBe(500);
  // D asks, then leaves the table before the hand ends: told sit_cancelled, nothing moved
  const dPending = await live.request(d.ws, { type: 'sit', tableId, seatIndex: 3, amount: 100 });
  expect(dPending).toMatchObject({ type: 'sit_pending' });
  expect(await live.request(d.ws, { type: 'leave', tableId })).toMatchObject({ type: 'left' });
  // the connection stays usable meanwhile
  expect(await live.request(c.ws, { type: 'ping' })).toMatchObject({ type: 'pong' });
  expect((await m.room(tableId)).body.seats).toHaveLength(2);

  await checkDown(players, tableId, hand1, answered);
  const seated = await c.ws.next((x) => x.ref === pending.ref && x.type !== 'sit_pending', 5000);
  expect(seated).toMatchObject({ type: 'seated', tableId, seatIndex: 2 });
  expect(await d.ws.next((x) => x.ref === dPending.ref && x.type !== 'sit_pending', 5000)).toMatchObject({ type: 'error', code: 'sit_cancelled' });
  expect(await m.balance(c.auth)).toBe(400);
  expect(await m.balance(d.auth)).toBe(500);
  // C was seated before hand 2 was dealt (the next hand's first state comes after the answer)
  const seatedAt = c.ws.messages.indexOf(seated);
  const firstOfHand2 = c.ws.messages.findIndex((x) => x.type === 'game_state' && x.status === 'betting' && x.handId !== hand1);
  expect(firstOfHand2 === -1 || firstOfHand2 > seatedAt).toBe(true);

  // C is dealt in within a few hands (a newcomer waits for the big blind)
  const all = [a, b, c];
  for (let hands = 0; ; hands++) {
    expect(hands).toBeLessThan(4);
    const next = await stateWhere(a.ws, tableId, (x) => x.status === 'betting' && x.handId !== null && x.handId !== hand1 && !resultsOf(a.ws, tableId).some((r) => r.handId === x.handId), 'a new hand');
    if (seatIn(next, 2)?.inHand) break;
    await checkDown(all, tableId, next.handId, answered);
  }
  await live.standUpAll(all, tableId);
  await expectSettled(live, m, tableId, [...all, d], 2000);
});

test('idle removal: a sat-out player is removed between hands by the forced withdraw; a FREE custody entry holds the stack and is claimed', async () => {
  await db.owner.query('update game.house_rules set idle_kick_seconds = 1');
  try {
    await idleRemoval();
  } finally {
    await db.owner.query('update game.house_rules set idle_kick_seconds = 300');
  }
});

async function idleRemoval() {
  m2 = await startMoneyPlatform(db, { env: { HAND_DELAY_MS: '10', TIMEOUTS_BEFORE_SIT_OUT: '1' } });
  live2 = liveClient(m2, db);
  const l = live2;
  const players = [await l.player(500), await l.player(500), await l.player(500)];
  const [a, b, c] = players as [LivePlayer, LivePlayer, LivePlayer];
  const tableId = await m2.table(a.auth, { ...POKER_SETTINGS, turnTimeSec: 1, deckSeed: 'idle' });
  await l.seatBeforeRoom(players, tableId, [100, 100, 100]);
  const answered = new Set<string>();

  // hand 1: A raises, B folds, C (the big blind) lets the timer fold: sat out at once (TIMEOUTS_BEFORE_SIT_OUT 1)
  let s = await l.turnOf(a, tableId, answered);
  expect(s).toMatchObject({ toAct: 0, bigBlindSeat: 2 });
  await l.act(a, tableId, s, 'raise', s.legal.minRaiseTo, answered);
  await l.act(b, tableId, await l.turnOf(b, tableId, answered), 'fold', undefined, answered);
  s = await l.turnOf(c, tableId, answered);
  const out = await stateWhere(c.ws, tableId, (x) => x.handId === s.handId && seatIn(x, 2)?.sittingOut === true, 'C sat out by the timer', { timeoutMs: 3000 });
  const outAt = Date.now();
  expect(seatIn(out, 2)).toMatchObject({ folded: true, stack: '98' });
  const stack = 98n;

  // A and B play on alone (folding at once, inside their 1 s timer); the first hand to end once C
  // has sat out IDLE_KICK_SECONDS removes C, between hands
  const s2 = await stateWhere(c.ws, tableId, (x) => x.status === 'betting' && x.handId !== null && x.handId !== s.handId, 'hand 2');
  expect(seatIn(s2, 2)).toMatchObject({ inHand: false, sittingOut: true });
  let hands = 0;
  for (; seatIn(latestState(c.ws, tableId)!, 2) && Date.now() - outAt < 4000; hands++) {
    const t = await until(() => [a, b].map((p) => latestState(p.ws, tableId)).find((x) => x?.legal && !answered.has(`${x.legal.handId}:${x.legal.seq}`)) ?? (seatIn(latestState(c.ws, tableId)!, 2) ? undefined : 'gone'), 'A or B to act');
    if (t === 'gone') break;
    await l.act(players[t.yourSeat]!, tableId, t, 'fold', undefined, answered);
    await sleep(20);
  }
  const gone = await stateWhere(c.ws, tableId, (x) => !seatIn(x, 2), 'C removed', { timeoutMs: 5000 });
  expect(Date.now() - outAt).toBeGreaterThanOrEqual(1000);
  expect(gone.status).toBe('waiting');
  expect(hands).toBeGreaterThanOrEqual(2);
  expect(gone.seats.map((x: Msg) => x.seatIndex)).toEqual([0, 1]);
  expect((await m2.room(tableId)).body.seats.map((x: Msg) => x.seatIndex)).toEqual([0, 1]);

  // the stack went to a FREE custody entry (chain 'cage', base units = chips x 10^6), not to the cage balance
  const { rows } = await db.owner.query('select id, status, chain, amount, table_id, money_kind::text from cage.custody_entries where user_id = $1', [c.userId]);
  expect(rows).toEqual([expect.objectContaining({ status: 'free', chain: 'cage', amount: stack * 1_000_000n, table_id: tableId, money_kind: 'play' })]);
  expect(await m2.balance(c.auth)).toBe(400);
  const receipts = await call(`${m2.cage}/api/cage/receipts`, { headers: c.auth });
  const kinds = receipts.body.receipts.map((r: Msg) => JSON.parse(Buffer.from(r.payload, 'base64').toString()));
  expect(kinds).toEqual([expect.objectContaining({ kind: 'custody', tableId, custodyEntryId: rows[0].id.toString() })]);

  // the owner claims it back to their cage balance (once)
  const claim = await call(`${m2.cage}/api/custody/claim`, { headers: c.auth, body: { entryId: rows[0].id.toString() } });
  expect(claim.status).toBe(200);
  expect(claim.body).toMatchObject({ ok: true, entryId: rows[0].id.toString(), amount: Number(stack) });
  expect(await m2.balance(c.auth)).toBe(400 + Number(stack));
  const again = await call(`${m2.cage}/api/custody/claim`, { headers: c.auth, body: { entryId: rows[0].id.toString() } });
  expect(again.body).toMatchObject({ replay: true });
  expect(await m2.balance(c.auth)).toBe(400 + Number(stack));
  expect((await db.owner.query('select status from cage.custody_entries where id = $1', [rows[0].id])).rows[0].status).toBe('claimed');

  // the others play on, then leave
  await l.standUpAll([a, b], tableId);
  await expectSettled(l, m2, tableId, players, 1500);
  await expectCleanAudit(cagePool);
}

/**
 * `buyIns.length` players (seat i = buy-in i) play up to `maxHands` hands with random legal
 * actions; after every hand the books are checked, and every bust is closed in its hand's end.
 */
async function randomPlay(seed: number, buyIns: number[], maxHands: number) {
  const players: LivePlayer[] = [];
  for (const _ of buyIns) players.push(await live.player(1000));
  const tableId = await m.table(players[0]!.auth, { ...POKER_SETTINGS, deckSeed: `random-${seed}` });
  await live.seatBeforeRoom(players, tableId, buyIns);
  const observer = players[0]!.ws; // joined before the first hand could end; stays joined after a bust
  const total = BigInt(buyIns.reduce((t, v) => t + v, 0));
  const rng = prng(seed);
  const answered = new Set<string>();
  const rakeAfter: bigint[] = [];
  const busted = new Set<string>();
  const stats = { hands: 0, showdowns: 0, uncontested: 0, sidePots: 0, allIns: 0, raises: 0 };
  let alive = players.length;
  const stop = Date.now() + 25_000;

  const resultAt = (j: number) => until(() => resultsOf(observer, tableId)[j], `hand result ${j}`);
  /** The books agree with hand j's result: the same stacks seat by seat and the rake summed to it. */
  const booksMatch = (books: Awaited<ReturnType<LiveClient['books']>>, r: Msg, rake: bigint) => {
    if (books.rake !== rake) return false;
    for (const x of r.stacks) if (BigInt(x.stack) > 0n && books.seats[x.seat] !== BigInt(x.stack)) return false;
    for (const [seat, chips] of Object.entries(books.seats)) {
      if (chips > 0n && !r.stacks.some((x: Msg) => x.seat === Number(seat) && BigInt(x.stack) === chips)) return false;
    }
    return true;
  };

  async function checkHand(k: number) {
    const r = (await resultAt(k))!;
    rakeAfter[k] = (rakeAfter[k - 1] ?? 0n) + BigInt(r.rake);
    stats.hands += 1;
    if (r.showdown) stats.showdowns += 1;
    else stats.uncontested += 1;
    if (r.pots.length > 1) stats.sidePots += 1;
    // chips are conserved at the table: every open seat was dealt in (all sat before the first hand)
    expect(sum(r.stacks.map((x: Msg) => BigInt(x.stack))) + rakeAfter[k]!).toBe(total);
    // the database: escrow = open stacks + rake = the buy-ins, and the stacks are this hand's (or,
    // when the next hand already ended by itself, that one's)
    const books = await live.books(tableId);
    expect(books.escrow).toBe(books.stacks + books.rake);
    expect(books.stacks + books.rake).toBe(total);
    let matched = false;
    for (let j = k, rake = rakeAfter[k]!; j < k + 4 && !matched; j++) {
      const rj = (await resultAt(j))!;
      if (j > k) rake += BigInt(rj.rake);
      matched = booksMatch(books, rj, rake);
    }
    if (!matched) throw new Error(`the books ${JSON.stringify(books, (_k, v) => (typeof v === 'bigint' ? v.toString() : v))} match no hand result from ${r.handId}`);

    // busts: closed in the hand's end with the cage's explicit zero bust_close row; the zero receipt
    // signed by the cage when asked (the worker's job asks it; no worker runs here)
    for (const x of r.stacks.filter((y: Msg) => y.stack === '0')) {
      busted.add(x.userId);
      const p = players.find((y) => y.userId === x.userId)!;
      const position = await until(async () => (await db.owner.query(
        "select id, status, chip_balance, closing_ref_id from game.table_players where table_id = $1 and user_id = $2 and status = 'closed'",
        [tableId, x.userId])).rows[0], 'the bust to be closed', 2000);
      expect(position.chip_balance).toBe(0n);
      const entry = (await db.owner.query('select kind::text, amounts::text[] as amounts, memo from cage.cage_entries where ref_id = $1', [position.closing_ref_id])).rows[0];
      expect(entry).toMatchObject({ kind: 'bust_close', amounts: ['0', '0'], memo: expect.objectContaining({ table_id: tableId, settlement: 'bust' }) });
      expect((await call(`${m.cage}/settlement/sign-bust-receipts`, { headers: m.service, body: {} })).status).toBe(200);
      const receipts = (await call(`${m.cage}/api/cage/receipts`, { headers: p.auth })).body.receipts as Msg[];
      const bust = receipts.find((y) => y.ledgerRefId === position.closing_ref_id);
      expect(bust).toBeDefined();
      expect(JSON.parse(Buffer.from(bust!.payload, 'base64').toString())).toMatchObject({ kind: 'bust', tableId, userId: x.userId, chipAmount: '0' });
      expect(await m.balance(p.auth)).toBe(1000 - buyIns[players.indexOf(p)]!);
    }
    alive = r.stacks.filter((y: Msg) => y.stack !== '0').length;
  }

  for (let checkedHands = 0; ;) {
    if (Date.now() > stop) throw new Error(`random play did not finish: ${JSON.stringify(stats)}`);
    if (checkedHands < resultsOf(observer, tableId).length) {
      await checkHand(checkedHands++);
      continue;
    }
    if (checkedHands >= maxHands || alive < 2) break;
    let acted = false;
    for (const p of players) {
      const s = latestState(p.ws, tableId);
      if (!s?.legal || answered.has(`${s.legal.handId}:${s.legal.seq}`)) continue;
      expect(s.seats.find((x: Msg) => x.seatIndex === s.yourSeat).cards).toHaveLength(2);
      const a = randomAction(rng, s.legal);
      if (a.amount !== undefined) {
        stats.raises += 1;
        expect(BigInt(a.amount)).toBeGreaterThanOrEqual(BigInt(s.legal.minRaiseTo));
        expect(BigInt(a.amount)).toBeLessThanOrEqual(BigInt(s.legal.maxRaiseTo));
        if (a.amount === s.legal.maxRaiseTo) stats.allIns += 1;
      }
      await live.act(p, tableId, s, a.action, a.amount, answered);
      acted = true;
    }
    if (!acted) await sleep(1);
  }

  // everybody leaves: those in the running hand check or fold it to its end, then go
  await live.standUpAll(players, tableId);
  const results = resultsOf(observer, tableId);
  let rake = rakeAfter.at(-1) ?? 0n;
  for (const r of results.slice(rakeAfter.length)) {
    rake += BigInt(r.rake);
    expect(sum(r.stacks.map((x: Msg) => BigInt(x.stack))) + rake).toBe(total);
  }
  const books = await live.books(tableId);
  expect(books.rake).toBe(rake);
  await expectSettled(live, m, tableId, players, 1000 * players.length);
  for (const p of players.filter((y) => busted.has(y.userId))) expect(await m.balance(p.auth)).toBe(1000 - buyIns[players.indexOf(p)]!);
  await expectCleanAudit(cagePool);
  return { ...stats, busts: busted.size, rake: books.rake };
}

test('three players, random legal play (raises between the bounds, all-ins): the books after every hand, busts closed in the hand\'s end, everybody stands up', async () => {
  const stats = await randomPlay(7, [40, 80, 120], 30);
  expect(stats.hands).toBeGreaterThanOrEqual(5);
  expect(stats.busts).toBeGreaterThanOrEqual(1);
  expect(stats.showdowns).toBeGreaterThanOrEqual(1);
  expect(stats.uncontested).toBeGreaterThanOrEqual(1);
  expect(stats.allIns).toBeGreaterThanOrEqual(1);
  expect(stats.rake).toBeGreaterThan(0n);
});

test('six players, random legal play: side pots, busts, the books after every hand', async () => {
  const stats = await randomPlay(11, [40, 60, 80, 100, 120, 200], 30);
  expect(stats.hands).toBeGreaterThanOrEqual(5);
  expect(stats.busts).toBeGreaterThanOrEqual(1);
  expect(stats.sidePots).toBeGreaterThanOrEqual(1);
  expect(stats.showdowns).toBeGreaterThanOrEqual(1);
});

test('reconnect: a new connection gets the full state (own cards, the legal actions on their turn); an action resent with the same seq is a duplicate', async () => {
  const a = await live.player(500);
  const b = await live.player(500);
  const tableId = await m.table(a.auth, { ...POKER_SETTINGS, deckSeed: 'reconnect' });
  expect(await live.sit(a, tableId, 0, 100)).toMatchObject({ type: 'seated' });
  expect(await live.sit(b, tableId, 1, 100)).toMatchObject({ type: 'seated' });
  const answered = new Set<string>();
  // heads-up, fresh start: seat 0 is the button and the small blind, first to act
  const s = await live.turnOf(a, tableId, answered);
  expect(s).toMatchObject({ toAct: 0, yourSeat: 0, bigBlindSeat: 1 });
  const cards = seatIn(s, 0)!.cards;
  expect(cards).toHaveLength(2);

  // A drops mid-hand, on their turn, and comes back on a new connection (token on the URL)
  await a.ws.close();
  const a2 = await live.open(`/ws?token=${a.jwt}`);
  expect(await live.request(a2, { type: 'join', tableId })).toMatchObject({ type: 'joined', role: 'player' });
  const full = await a2.next((x) => x.type === 'game_state' && x.tableId === tableId);
  expect(full).toMatchObject({ handId: s.handId, seq: s.seq, yourSeat: 0, toAct: 0, status: 'betting', street: 'preflop' });
  expect(seatIn(full, 0)!.cards).toEqual(cards);
  expect(seatIn(full, 1)!.cards).toBeNull();
  expect(full.legal).toEqual(s.legal);

  // A calls from the new connection and drops again before reading anything else
  const call1 = await live.request(a2, { type: 'action', tableId, handId: s.handId, seq: s.seq, action: 'call' });
  expect(call1).toEqual({ type: 'action_ack', tableId, ref: call1.ref });
  await a2.close();

  // a third connection (authenticating by message) sees the call applied and no legal actions (B's turn)
  const a3 = await live.open('/ws');
  expect(await live.request(a3, { type: 'auth', token: a.jwt })).toMatchObject({ type: 'authenticated', userId: a.userId });
  await live.join({ ws: a3 }, tableId);
  const after = await a3.next((x) => x.type === 'game_state' && x.tableId === tableId);
  expect(after).toMatchObject({ handId: s.handId, seq: s.seq + 1, toAct: 1, yourSeat: 0 });
  expect(after.legal ?? null).toBeNull();
  expect(seatIn(after, 0)).toMatchObject({ cards, bet: '2', stack: '98' });

  // not knowing whether the call arrived, A resends it with the same seq: acknowledged as a duplicate, not applied again
  const resent = await live.request(a3, { type: 'action', tableId, handId: s.handId, seq: s.seq, action: 'call' });
  expect(resent).toMatchObject({ type: 'action_ack', duplicate: true });
  await sleep(50);
  for (const ws of [a3, b.ws]) {
    expect(latestState(ws, tableId)).toMatchObject({ handId: s.handId, seq: s.seq + 1, toAct: 1 });
    expect(seatIn(latestState(ws, tableId)!, 0)).toMatchObject({ bet: '2', stack: '98' });
  }
  // an action out of turn (at the current seq) is refused and changes nothing either
  const stale = await live.request(a3, { type: 'action', tableId, handId: s.handId, seq: s.seq + 1, action: 'check' });
  expect(stale).toMatchObject({ type: 'error', code: 'not_your_turn' });

  // the hand goes on with A on the third connection: checked down to a showdown
  const player3 = { ...a, ws: a3 };
  const result = await checkDown([player3, b], tableId, s.handId, answered);
  expect(result.showdown).toBe(true);
  expect(result.shown.find((x: Msg) => x.seat === 0)?.cards ?? cards).toEqual(cards);
  await live.standUpAll([player3, b], tableId);
  await expectSettled(live, m, tableId, [a, b], 1000);
});

test('agents: an agent sits at an agent table (its seat shows the agentId) and lights seat_agent; humans are refused there, agents at human-only tables', async () => {
  const board = async (on: boolean) => call(`${m.game}/admin/claim-settings`, { method: 'PATCH', headers: (await m.operator()).auth, body: { claimBoardEnabled: on } });
  expect((await board(true)).body).toMatchObject({ claimBoardEnabled: true });
  try {
    const owner = await m.player(1000);
    const agentId = await live.createAgent(owner.auth, 'seat-bot');
    const seatAgent = async () => (await call(`${m.game}/claim-board/state`, { headers: owner.auth })).body.sections.find((x: Msg) => x.key === 'seat_agent');
    expect(await seatAgent()).toMatchObject({ conditionKey: 'agent_seated', state: 'locked' });

    const agentTable = await m.table(owner.auth, { ...POKER_SETTINGS, deckSeed: 'agents' });
    await db.owner.query("update game.tables set kind = 'agent' where table_id = $1", [agentTable]);

    // the agent: the owner's JWT, named by ?agentId=
    const ws = await live.open(`/ws?agentId=${agentId}`, owner.auth);
    expect(ws.messages.find((x) => x.type === 'hello')).toMatchObject({ userId: owner.userId, agentId, role: 'player' });
    const agent: LivePlayer = { ...owner, agentId, ws };
    expect(await live.sit(agent, agentTable, 0, 100)).toMatchObject({ type: 'seated', seatIndex: 0 });
    const seated = await stateWhere(ws, agentTable, (x) => seatIn(x, 0)?.agentId === agentId, 'the agent seat');
    expect(seatIn(seated, 0)).toMatchObject({ userId: owner.userId, agentId });
    expect(await seatAgent()).toMatchObject({ state: 'lit', claimable: true });

    // a human (no agentId) is refused, and their chips stay in the cage
    const human = await live.player(500);
    expect(await live.sit(human, agentTable, 1, 100)).toMatchObject({ type: 'error', code: 'humans_not_allowed_at_agent_table' });
    expect(await m.balance(human.auth)).toBe(500);
    // nor does a human become the agent by authenticating on the agent's connection
    const borrowed = await live.open(`/ws?agentId=${agentId}`, owner.auth);
    expect(await live.request(borrowed, { type: 'auth', token: human.jwt })).toEqual(expect.objectContaining({ type: 'authenticated', userId: human.userId, agentId: null }));
    expect(await live.sit({ ...human, ws: borrowed }, agentTable, 1, 100)).toMatchObject({ type: 'error', code: 'humans_not_allowed_at_agent_table' });
    expect(await m.balance(human.auth)).toBe(500);
    // the owner refreshing the token keeps the agent
    expect(await live.request(ws, { type: 'auth', token: owner.jwt })).toMatchObject({ type: 'authenticated', userId: owner.userId, agentId });

    // another user's agent, named in its join message; naming someone else's agent is refused
    const other = await m.player(1000);
    const otherAgentId = await live.createAgent(other.auth, 'other-bot');
    const otherWs = await live.open('/ws', other.auth);
    expect(await live.request(otherWs, { type: 'auth', token: other.jwt, agentId })).toMatchObject({ type: 'error', code: 'agent_not_found' });
    expect(await live.request(otherWs, { type: 'join', tableId: agentTable, agentId: otherAgentId })).toMatchObject({ type: 'joined' });
    const otherAgent: LivePlayer = { ...other, agentId: otherAgentId, ws: otherWs };
    expect(await live.request(otherWs, { type: 'sit', tableId: agentTable, seatIndex: 1, amount: 100 })).toMatchObject({ type: 'seated', seatIndex: 1 });
    const both = await stateWhere(ws, agentTable, (x) => x.status === 'betting', 'a hand between the agents');
    expect(both.seats.map((x: Msg) => [x.seatIndex, x.agentId])).toEqual([[0, agentId], [1, otherAgentId]]);
    // the seats' agents are stored, not only shown (a restart keeps them)
    expect((await db.owner.query('select seat_index, agent_id from game.table_players where table_id = $1 and status = $2 order by seat_index', [agentTable, 'seated'])).rows)
      .toEqual([{ seat_index: 0, agent_id: agentId }, { seat_index: 1, agent_id: otherAgentId }]);

    // a human-only table refuses the agent, seats the human
    const humanTable = await m.table(human.auth, { ...POKER_SETTINGS });
    await db.owner.query("update game.tables set kind = 'human_only' where table_id = $1", [humanTable]);
    expect(await live.sit(agent, humanTable, 0, 100)).toMatchObject({ type: 'error', code: 'agent_not_allowed_at_human_table' });
    expect(await live.sit(human, humanTable, 0, 100)).toMatchObject({ type: 'seated' });

    await live.standUpAll([agent, otherAgent], agentTable);
    await live.standUpAll([human], humanTable);

    // the hand stored its agents; the owner flags a decision of their agent in it (hand_flagged)
    const stored = await until(async () => (await db.owner.query('select agents from game.hand_histories where hand_id = $1', [both.handId])).rows[0], 'the hand stored');
    expect([...stored.agents].sort()).toEqual([agentId, otherAgentId].sort());
    const flag = (auth: Record<string, string>, id: string, body: Record<string, unknown>) => call(`${m.game}/api/agents/${id}/flags`, { headers: auth, body });
    // the owner finds the agent's hands to inspect (GET /api/hands?agentId=), then flags one
    const agentHands = await call(`${m.game}/api/hands?agentId=${agentId}`, { headers: owner.auth });
    expect(agentHands.body.hands.map((h: Msg) => h.handId)).toContain(both.handId);
    expect((await call(`${m.game}/api/hands?agentId=${agentId}`, { headers: human.auth })).body.hands).toEqual([]);
    expect((await call(`${m.game}/api/agents/${agentId}/versions`, { headers: owner.auth, body: {} })).status).toBe(201);
    expect(await flag(owner.auth, agentId, { handId: both.handId, note: 'called too wide' })).toMatchObject({ status: 201, body: { agentId } });
    // not a hand this agent played; not the owner's agent
    const humanHand = (await db.owner.query('select hand_id from game.hand_histories where table_id = $1 limit 1', [humanTable])).rows[0]?.hand_id ?? 'none';
    expect(await flag(owner.auth, agentId, { handId: humanHand })).toEqual({ status: 404, body: { error: 'hand_not_found' } });
    expect(await flag(owner.auth, otherAgentId, { handId: both.handId })).toEqual({ status: 404, body: { error: 'agent_not_found' } });
    await expectSettled(live, m, agentTable, [owner, other], 2000);
    expect(await m.balance(human.auth)).toBe(500);
  } finally {
    await board(false);
  }
});

test('spectators see every seat\'s cards on a hostedOnly + showHands table, none on a normal table; players see only their own', async () => {
  const hosted = await m.table((await m.player(0)).auth, { ...POKER_SETTINGS, hostedOnly: true, showHands: true, deckSeed: 'hosted' });
  const normal = await m.table((await m.player(0)).auth, { ...POKER_SETTINGS, deckSeed: 'normal' });
  // hostedOnly tables seat agents only
  const agents = [await live.player(500, { agent: true }), await live.player(500, { agent: true })];
  const humans = [await live.player(500), await live.player(500)];
  expect(await live.sit(humans[0]!, hosted, 0, 100)).toMatchObject({ type: 'error', code: 'humans_not_allowed_at_agent_table' });
  for (const [i, p] of agents.entries()) expect(await live.sit(p, hosted, i, 100)).toMatchObject({ type: 'seated' });
  for (const [i, p] of humans.entries()) expect(await live.sit(p, normal, i, 100)).toMatchObject({ type: 'seated' });

  for (const [tableId, seated, seesAll] of [[hosted, agents, true], [normal, humans, false]] as const) {
    const spectator = await live.open(`/ws/tables/${tableId}`);
    expect(await spectator.next((x) => x.type === 'joined')).toMatchObject({ tableId, role: 'spectator' });
    const view = await stateWhere(spectator, tableId, (x) => x.status === 'betting', 'a hand, as the spectator sees it');
    expect(view.yourSeat).toBeNull();
    expect(view.legal ?? null).toBeNull();
    for (const seat of view.seats) {
      if (seesAll) expect(seat.cards).toHaveLength(2);
      else expect(seat.cards).toBeNull();
    }
    // each player sees their own two cards and nobody else's
    for (const [i, p] of seated.entries()) {
      const own = await stateWhere(p.ws, tableId, (x) => x.handId === view.handId, 'the hand, as a player sees it');
      expect(seatIn(own, i)!.cards).toHaveLength(2);
      expect(seatIn(own, 1 - i)!.cards).toBeNull();
      if (seesAll) expect(seatIn(own, i)!.cards).toEqual(seatIn(view, i)!.cards);
    }
    await live.standUpAll([...seated], tableId);
    await spectator.close();
  }
  await expectCleanAudit(cagePool);
});
