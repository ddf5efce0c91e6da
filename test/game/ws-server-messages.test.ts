// The server messages' schemas (server/game/live/server-messages.ts) against what the server really
// sends: real hands over the websocket against running roles (auth, game, cage, worker), and EVERY
// message any connection received checked against the schemas, which are strict (a field the
// server sends that a schema lacks fails). A cash table of three players (one an agent) and a
// spectator played to showdowns, with a raise, a duplicate action, a sit while a hand runs, a
// sit-out and sit-in, a stand-up while a hand runs and one between hands; refusals of bad messages;
// a two-seat Sit-and-Go (a registration withdrawn, then played to its end by two bots, watched by a
// spectator); and the game role stopping (table_closed). Prints how many messages of each type were
// validated, and requires every type the schemas list to have been seen.
import type pg from 'pg';
import { expectCleanAudit } from '../helpers/cage.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { latestState, liveClient, prng, randomAction, until, type LiveClient, type LivePlayer, type Msg } from '../helpers/live.ts';
import { call, POKER_SETTINGS, startMoneyPlatform } from '../helpers/money.ts';
import { playBot, SNG, tournamentBooks } from '../helpers/tournament.ts';
import { SERVER_MESSAGE_TYPES, serverMessage } from '../../server/game/live/server-messages.ts';

let db: TestDatabase;
let cagePool: pg.Pool;
let m: Awaited<ReturnType<typeof startMoneyPlatform>>;
let live: LiveClient;

beforeAll(async () => {
  db = await createTestDatabase();
  cagePool = db.pool('poker_cage');
  // the worker runs the Sit-and-Go's timers (start, blinds, settlement, payouts)
  m = await startMoneyPlatform(db, { alsoWorker: true, env: { HAND_DELAY_MS: '5' } });
  live = liveClient(m, db);
});
afterAll(async () => {
  await live?.closeAll();
  await m?.platform.stop();
  if (cagePool) await expectCleanAudit(cagePool);
  await db?.drop();
});

/** Messages validated so far, by type; and some variants (a lifecycle move's state, an error's code, game_state's optional parts ...). */
const counts = new Map<string, number>();
const variants = new Map<string, number>();
const checked = new WeakSet<Msg>();
const bump = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);

/** Checks every message every connection received that was not checked yet: the failures (type, issues, message). */
function validateAll() {
  const failures: { type: unknown; issues: unknown; message: Msg }[] = [];
  for (const ws of live.clients) {
    for (const message of ws.messages) {
      if (checked.has(message)) continue;
      checked.add(message);
      const parsed = serverMessage.safeParse(message);
      bump(counts, String(message.type));
      if (message.type === 'tournament_state_changed') bump(variants, `tournament_state_changed:${message.state}`);
      if (message.type === 'error') bump(variants, `error:${message.code}`);
      if (message.type === 'game_state' && message.tournament) bump(variants, 'game_state:tournament');
      if (message.type === 'game_state' && message.tournamentMyView) bump(variants, 'game_state:tournamentMyView');
      if (message.type === 'game_state' && message.legal) bump(variants, 'game_state:legal');
      if (message.type === 'hand_result') bump(variants, `hand_result:showdown=${message.showdown}`);
      if (message.type === 'stood_up') bump(variants, message.busted ? 'stood_up:busted' : message.receipt ? 'stood_up:receipt' : 'stood_up:no_receipt');
      if (!parsed.success) failures.push({ type: message.type, issues: parsed.error.issues, message });
    }
  }
  return failures;
}
afterEach(() => {
  expect(validateAll()).toEqual([]);
});

/**
 * Plays the next hand of the table not in `done` to its end (every player in `players` answers its
 * turns with `choose`); resolves to its hand_result (the hand then counts as done).
 */
async function playHand(
  players: LivePlayer[], tableId: string, done: Set<string>, choose: (legal: Msg, p: LivePlayer) => { action: string; amount?: string },
  during?: (handId: string) => Promise<void>,
): Promise<Msg> {
  const handId: string = await until(() => {
    for (const p of players) {
      const s = latestState(p.ws, tableId);
      if (s?.handId && s.status === 'betting' && !done.has(s.handId)) return s.handId;
    }
    return undefined;
  }, 'a new hand', 10_000);
  done.add(handId);
  if (during) await during(handId);
  const answered = new Set<string>();
  for (const stop = Date.now() + 20_000; Date.now() < stop;) {
    const result = players[0]!.ws.messages.find((x) => x.type === 'hand_result' && x.handId === handId);
    if (result) return result;
    for (const p of players) {
      const s = latestState(p.ws, tableId);
      if (!s?.legal || s.handId !== handId || answered.has(`${s.legal.seq}`)) continue;
      answered.add(`${s.legal.seq}`);
      const { action, amount } = choose(s.legal, p);
      const r = await live.request(p.ws, { type: 'action', tableId, handId, seq: s.legal.seq, action, ...(amount ? { amount } : {}) });
      if (r.type !== 'action_ack') throw new Error(`${action} refused: ${JSON.stringify(r)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 3));
  }
  throw new Error(`hand ${handId} did not end`);
}

const passive = (legal: Msg) => ({ action: legal.actions.includes('check') ? 'check' : 'call' });

test('a cash table: three players (one an agent) and a spectator through showdowns, a duplicate, a sit while a hand runs, sit-out and sit-in, stand-ups during and between hands', async () => {
  const a = await live.player(1000);
  const b = await live.player(1000, { agent: true });
  const c = await live.player(1000);
  const spectator = await live.open();
  const tableId = await m.table(a.auth, { ...POKER_SETTINGS, deckSeed: 'ws-server-messages' });
  expect(await live.request(spectator, { type: 'ping' })).toMatchObject({ type: 'pong' });
  expect(await live.request(spectator, { type: 'join', tableId })).toMatchObject({ type: 'joined', role: 'spectator' });
  expect(await live.request(a.ws, { type: 'auth', token: a.jwt })).toMatchObject({ type: 'authenticated', userId: a.userId, agentId: null });
  expect(await live.sit(a, tableId, 0, 200)).toMatchObject({ type: 'seated', seatIndex: 0, chipBalance: '200' });
  expect(await live.sit(b, tableId, 1, 200)).toMatchObject({ type: 'seated', seatIndex: 1 });
  const done = new Set<string>();

  // hand 1, heads-up: a duplicate of the first action, then checked and called down to a showdown;
  // a third player sits meanwhile (sit_pending, seated when the hand ends)
  let cSeated: Promise<Msg> | null = null;
  const first = await playHand([a, b], tableId, done, passive, async (handId) => {
    const turn = await live.turnOf(a, tableId, new Set());
    expect(turn.handId).toBe(handId);
    await live.act(a, tableId, turn, 'call');
    const again = await live.request(a.ws, { type: 'action', tableId, handId, seq: turn.legal.seq, action: 'call' });
    expect(again).toMatchObject({ type: 'action_ack', duplicate: true });
    await live.join(c, tableId);
    const pending = await live.request(c.ws, { type: 'sit', tableId, seatIndex: 2, amount: '150' });
    expect(pending).toMatchObject({ type: 'sit_pending' });
    cSeated = c.ws.next((x) => x.type === 'seated' && x.ref === pending.ref, 20_000);
  });
  expect(first).toMatchObject({ type: 'hand_result', showdown: true });
  expect(await cSeated).toMatchObject({ seatIndex: 2, chipBalance: '150' });

  // hand 2, three-handed: the first to act raises the minimum, the rest call and check to a showdown
  let raised = false;
  const second = await playHand([a, b, c], tableId, done, (legal) => {
    if (!raised && legal.actions.includes('raise')) {
      raised = true;
      return { action: 'raise', amount: legal.minRaiseTo };
    }
    return passive(legal);
  });
  expect(second.shown.length).toBeGreaterThanOrEqual(2);

  // sit-out and sit-in (c)
  expect(await live.request(c.ws, { type: 'sit_out', tableId })).toMatchObject({ type: 'sat_out', tableId });
  expect(await live.request(c.ws, { type: 'sit_in', tableId })).toMatchObject({ type: 'sat_in', tableId });
  // a harness table deals from its deckSeed: nothing is mixed in
  const commitment = latestState(c.ws, tableId)!.nextDealCommitment;
  expect(await live.request(c.ws, { type: 'deal_seed', tableId, commitment, seed: 'mine' })).toMatchObject({ type: 'error', code: 'seeded_table' });

  // a few seeded random hands (bets, raises, folds, all-ins)
  const rng = prng(21);
  for (let i = 0; i < 4; i++) {
    const seated = (latestState(a.ws, tableId)?.seats ?? []).filter((s: Msg) => BigInt(s.stack) > 0n).length;
    if (seated < 2) break;
    await playHand([a, b, c], tableId, done, (legal) => randomAction(rng, legal));
  }

  // b stands up while a hand runs: stand_up_pending, then stood_up (no ref) when the hand ends
  let standing: Msg | null = null;
  const stillIn = [a, b, c].filter((p) => latestState(p.ws, tableId)?.seats.some((s: Msg) => s.userId === p.userId && BigInt(s.stack) > 0n));
  if (stillIn.length >= 2 && stillIn.includes(b)) {
    await playHand(stillIn, tableId, done, passive, async () => {
      standing = await live.request(b.ws, { type: 'stand_up', tableId });
    });
    expect(standing).toMatchObject({ type: 'stand_up_pending' });
    expect(await b.ws.next((x) => x.type === 'stood_up', 10_000)).toMatchObject({ tableId });
  }

  // the others stand up (between hands: stood_up with the cage's receipt)
  const answers = await live.standUpAll([a, b, c], tableId);
  expect(answers.some((x) => x.type === 'stood_up' && x.receipt)).toBe(true);
  expect(await live.request(spectator, { type: 'leave', tableId })).toMatchObject({ type: 'left', tableId });
}, 120_000);

test('refusals of bad messages: each an error the schema knows', async () => {
  const a = await live.player(1000);
  const spectator = await live.open();
  const tableId = await m.table(a.auth, { ...POKER_SETTINGS, deckSeed: 'ws-server-messages-errors' });
  const sng = await m.table(a.auth, SNG({ seats: 2 }));
  const code = async (ws: LivePlayer['ws'], message: Record<string, unknown>) => (await live.request(ws, message)).code;
  a.ws.send([1] as unknown as Record<string, unknown>);
  expect(await a.ws.next((x) => x.type === 'error' && x.code === 'malformed_message')).toBeDefined();
  expect(await code(a.ws, { type: 'nope' })).toBe('unknown_message_type');
  expect(await code(a.ws, { type: 'action', tableId, action: 'fold' })).toBe('missing_seq');
  expect(await live.request(a.ws, { type: 'join', tableId: '' })).toMatchObject({ code: 'bad_request', field: 'tableId' });
  expect(await live.request(a.ws, { type: 'join', tableId: 'no-such-table' })).toMatchObject({ code: 'table_not_found', tableId: 'no-such-table' });
  expect(await code(a.ws, { type: 'leave', tableId })).toBe('not_joined');
  expect(await code(a.ws, { type: 'auth', token: 'not-a-jwt' })).toBe('invalid_token');
  expect(await code(a.ws, { type: 'auth', token: a.jwt, agentId: '00000000-0000-4000-8000-000000000000' })).toBe('agent_not_found');
  expect(await code(a.ws, { type: 'auth', token: a.jwt })).toBeUndefined(); // authenticated again
  await live.join({ ws: spectator }, tableId);
  expect(await code(spectator, { type: 'sit', tableId, seatIndex: 0, amount: '100' })).toBe('not_authenticated');
  await live.join(a, tableId);
  expect(await code(a.ws, { type: 'register_for_tournament', tableId })).toBe('not_a_tournament');
  expect(await code(a.ws, { type: 'sit', tableId, seatIndex: 0, amount: '1' })).toBe('buy_in_out_of_range');
  expect(await code(a.ws, { type: 'stand_up', tableId })).toBe('not_at_table');
  expect(await code(a.ws, { type: 'action', tableId, seq: 0, handId: 'h', action: 'check' })).toBe('not_seated');
  await live.join(a, sng);
  expect(await code(a.ws, { type: 'sit', tableId: sng, seatIndex: 0, amount: '100' })).toBe('use_tournament_registration');

  // action refusals in a running hand
  const b = await live.player(1000);
  expect(await live.sit(a, tableId, 0, 100)).toMatchObject({ type: 'seated' });
  expect(await live.sit(b, tableId, 1, 100)).toMatchObject({ type: 'seated' });
  // refused at once, or (when the first hand was dealt already: a loaded machine) pending until it ends
  const again = await live.request(b.ws, { type: 'sit', tableId, seatIndex: 0, amount: '100' });
  expect(again.type === 'sit_pending' || /^(seat_taken|already_seated|hand_in_progress)$/.test(String(again.code))).toBe(true);
  const turn = await live.turnOf(a, tableId, new Set());
  const act = (over: Record<string, unknown>) => ({ type: 'action', tableId, handId: turn.legal.handId, seq: turn.legal.seq, action: 'call', ...over });
  expect(await code(b.ws, act({}))).toBe('not_your_turn');
  expect(await code(a.ws, act({ seq: turn.legal.seq + 5 }))).toBe('stale_sequence');
  expect(await code(a.ws, act({ action: 'raise', amount: '0x10' }))).toBe('illegal_amount');
  expect(await code(a.ws, act({ action: 'dance' }))).toBe('illegal_action');
  await live.standUpAll([a, b], tableId);
}, 60_000);

test('a two-seat Sit-and-Go: a registration withdrawn, then played to its end by two bots while a spectator watches', async () => {
  const host = await m.player();
  const tableId = await m.table(host.auth, SNG({ seats: 2, deckSeed: 'ws-server-messages-sng' }));
  const spectator = await live.player(0);
  await live.join(spectator, tableId);
  const register = async (p: LivePlayer) => {
    const r = await live.request(p.ws, { type: 'register_for_tournament', tableId });
    expect(r).toMatchObject({ type: 'tournament_registered', entryFee: '100' });
    expect((await m.deposit(p.auth, { tableId, amount: 100, seatIndex: r.seatIndex })).status).toBe(200);
  };
  const p1 = await live.player(1000);
  const p2 = await live.player(1000);
  await live.join(p1, tableId);
  await live.join(p2, tableId);
  await register(p1);
  expect(await live.request(p1.ws, { type: 'stand_up', tableId })).toMatchObject({ type: 'tournament_unregistered', status: 'refunded', amount: '100' });
  await register(p1);
  await register(p2);
  await Promise.all([playBot(live, p1, tableId, prng(7), 'calm', 60_000), playBot(live, p2, tableId, prng(8), 'calm', 60_000)]);
  await spectator.ws.next((x) => x.type === 'tournament_state_changed' && x.state === 'closed', 60_000);
  expect(await live.request(p1.ws, { type: 'stand_up', tableId })).toMatchObject({ type: 'error', code: 'stand_up_not_allowed_in_tournament' });
  expect((await tournamentBooks(db.owner, tableId)).state).toBe('closed');
  const seen = spectator.ws.messages.filter((x) => x.tableId === tableId).map((x) => x.type);
  for (const type of ['tournament_state_changed', 'player_eliminated', 'tournament_ended', 'tournament_payout_settled']) expect(seen).toContain(type);
}, 120_000);

test('an escape tells each seated player over the websocket: table_escaped names their custody entry as GET /api/custody shows it', async () => {
  const a = await live.player(500);
  const b = await live.player(500);
  const tableId = await m.table(a.auth, { ...POKER_SETTINGS });
  expect(await live.sit(a, tableId, 0, 100)).toMatchObject({ type: 'seated' });
  // b is seated but not connected (no deal starts: a seat nobody watches is out of the deal); b is told nothing
  expect((await m.deposit(b.auth, { tableId, seatIndex: 1, amount: 60 })).status).toBe(200);
  const told = a.ws.next((x) => x.type === 'table_escaped' && x.tableId === tableId, 20_000);
  const { auth } = await m.operator();
  const escape = await call(`${m.cage}/escape/${tableId}`, { headers: auth, body: { reason: 'the dealer misbehaves' } });
  expect(escape).toMatchObject({ status: 200, body: { outcome: 'clean' } });
  const message = await told;
  const custody = (await call(`${m.cage}/api/custody`, { headers: a.auth })).body.entries as Msg[];
  const mine = custody.filter((e) => e.tableId === tableId && e.source === 'escape');
  expect(mine).toHaveLength(1);
  expect(message).toEqual({
    type: 'table_escaped', tableId, escapeId: escape.body.escapeId, outcome: 'clean',
    entry: { id: mine[0]!.entryId, amount: '100', status: 'free' },
  });
  expect(escape.body.entries).toEqual(expect.arrayContaining([expect.objectContaining({ entryId: mine[0]!.entryId, userId: a.userId, amount: 100 })]));
  expect(a.ws.messages.filter((x) => x.type === 'table_escaped')).toHaveLength(1);
}, 60_000);

test('the game role stops: table_closed (server_stopping); every type the schemas list was seen and validated', async () => {
  const a = await live.player(500);
  const tableId = await m.table(a.auth, { ...POKER_SETTINGS });
  expect(await live.sit(a, tableId, 0, 100)).toMatchObject({ type: 'seated' });
  // a seed for the next hand's deal, naming its commitment
  const commitment = (await until(() => latestState(a.ws, tableId), 'a state')).nextDealCommitment;
  expect(await live.request(a.ws, { type: 'deal_seed', tableId, commitment, seed: 'a-seed_1' })).toMatchObject({ type: 'deal_seed_accepted', tableId, commitment });
  const closed = a.ws.next((x) => x.type === 'table_closed', 20_000);
  await m.platform.role('game').stop();
  expect(await closed).toMatchObject({ tableId, reason: 'server_stopping' });

  expect(validateAll()).toEqual([]);
  const rows = [...counts].sort(([x], [y]) => x.localeCompare(y));
  const total = rows.reduce((t, [, n]) => t + n, 0);
  process.stdout.write(`server messages validated against the schemas: ${total}\n${rows.map(([type, n]) => `  ${type}: ${n}`).join('\n')}\n`
    + `  by state and code: ${[...variants].sort(([x], [y]) => x.localeCompare(y)).map(([k, n]) => `${k} ${n}`).join(', ')}\n`);
  expect(SERVER_MESSAGE_TYPES.filter((type) => !counts.has(type))).toEqual([]);
  expect([...counts.keys()].filter((type) => !(SERVER_MESSAGE_TYPES as string[]).includes(type))).toEqual([]);
}, 60_000);
