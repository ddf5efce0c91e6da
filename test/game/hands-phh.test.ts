// Portable hand histories (issue 23): GET /api/hands/:handId?format=phh and GET /api/hands?format=phh
// answer the caller's view of their hands as PHH (server/game/hands/phh.ts). Every export is read
// back by a reader written from the PHH specification (helpers/phh-reader.ts), checked field by
// field against the stored history, and replayed through our own engine from the file alone (the
// hole cards merged from every player's own export): the engine must find each action legal, by
// the player the file names, and end with the file's finishing stacks, winnings and rake.
// The first tests script hands through the engine (antes, a dead small blind, an all-in from the
// blinds, timeouts); the last ones play real hands over websockets and read them over HTTP (and
// through the web role's proxy).
import type pg from 'pg';
import { storedHand } from '../../server/game/hands/compact.ts';
import { handToPhh } from '../../server/game/hands/phh.ts';
import { redactHistory } from '../../server/game/hands/histories.ts';
import { parseCard, type Card } from '../../server/game/poker/cards.ts';
import {
  applyAction, isRefusal, legalActions, startHand, timeout, type HandState, type RakeRule,
} from '../../server/game/poker/engine.ts';
import { historyJson } from '../../server/game/live/wire.ts';
import { expectCleanAudit } from '../helpers/cage.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { calmAction, latestState, liveClient, prng, randomAction, resultsOf, sleep, type LiveClient, type LivePlayer, type Msg } from '../helpers/live.ts';
import { POKER_SETTINGS, startMoneyPlatform } from '../helpers/money.ts';
import { parseToml, PhhError, readPhh, readPhhs, type PhhAction, type PhhHand } from '../helpers/phh-reader.ts';
import { deal, NO_RAKE, play, type Step, type TableScript } from '../helpers/poker-script.ts';

type Event = Record<string, any>;
/** A hand as stored: its unredacted events and result, and its row's fields. */
interface Stored { handId: string; tableId: string; handNumber: number; startedAt: Date; history: Event[]; result: Event | null }

const started = (s: Stored) => s.history.find((e) => e.type === 'hand_started')!;
const pSeats = (h: PhhHand) => (h.fields.seats as bigint[]).map((x) => Number(x) - 1);
const playerActions = (h: PhhHand) => h.actions.filter((a): a is Exclude<PhhAction, { actor: 'd' }> => a.actor !== 'd' && a.kind !== 'sm');

/** The export of `stored` as the owner of `seat` sees it, checked against the stored history field by field. */
function checkExport(stored: Stored, seat: number, h: PhhHand): void {
  const start = started(stored);
  const seats = pSeats(h);
  const n = seats.length;
  // p1..pn: the engine's dealing order (its hole_cards events), which starts left of the button
  expect(seats).toEqual(stored.history.filter((e) => e.type === 'hole_cards').map((e) => e.seat));
  if (seats.includes(start.button)) expect(seats.at(-1)).toBe(start.button);
  const stackAt = (x: number) => BigInt(start.seats.find((s: Event) => s.seat === x).stack);
  expect(h.startingStacks).toEqual(seats.map(stackAt));
  expect(h.antes).toEqual(seats.map(() => BigInt(start.ante)));
  expect(h.minBet).toBe(BigInt(start.bigBlind));
  // blinds at their players (reversed heads-up, as PHH reads them); what was posted is the blind or the stack left
  const blinds = n === 2 ? [...h.blindsOrStraddles].reverse() : h.blindsOrStraddles;
  for (const e of stored.history.filter((x) => x.type === 'blind')) {
    const nominal = blinds[seats.indexOf(e.seat)]!;
    expect(nominal).toBe(BigInt(e.blind === 'big' ? start.bigBlind : start.smallBlind));
    const minBig = (a: bigint, b: bigint) => (a < b ? a : b);
    expect(BigInt(e.amount)).toBe(minBig(nominal, stackAt(e.seat) - minBig(BigInt(start.ante), stackAt(e.seat))));
  }
  expect(blinds.filter((b) => b > 0n)).toHaveLength(start.smallBlindSeat === null ? 1 : 2);
  // the cards: the viewer's own, nobody else's but those shown; the boards as dealt
  const own = stored.history.find((e) => e.type === 'hole_cards' && e.seat === seat)!.cards;
  for (const a of h.actions) {
    if (a.actor === 'd' && a.kind === 'dh') expect(a.cards).toEqual(seats[a.player - 1] === seat ? own : [null, null]);
  }
  expect(h.actions.filter((a) => a.actor === 'd' && a.kind === 'db').map((a) => (a as { cards: string[] }).cards))
    .toEqual(stored.history.filter((e) => e.type === 'board').map((e) => e.cards));
  const shows = h.actions.filter((a) => a.kind === 'sm').map((a) => [seats[(a.actor as number) - 1], (a as { cards: unknown }).cards] as const);
  const contested = stored.result?.showdown === true;
  expect(new Map(shows)).toEqual(new Map(contested ? stored.history.flatMap((e) => (
    e.type === 'show' ? [[e.seat, e.cards]] : e.type === 'muck' ? [[e.seat, null]] : [])) : []));
  // PHH shows when the betting is over: after the last bet, before an all-in's run-out boards
  const lastBet = h.actions.reduce((at, a, i) => (a.actor !== 'd' && a.kind !== 'sm' ? i : at), -1);
  const smAt = h.actions.flatMap((a, i) => (a.kind === 'sm' ? [i] : []));
  const runOutAt = h.actions.flatMap((a, i) => (a.kind === 'db' && i > lastBet ? [i] : []));
  if (contested) expect({ smAt, runOutAt }).toEqual({ smAt: smAt.map((i) => Math.max(i, lastBet + 1)), runOutAt: runOutAt.map((i) => Math.max(i, smAt.at(-1)! + 1)) });
  // the players' actions in order, bets and raises to their street totals, timeouts noted
  expect(playerActions(h).map((a) => [seats[a.actor - 1], a.kind, a.kind === 'cbr' ? a.amount : null, a.commentary]))
    .toEqual(stored.history.filter((e) => e.type === 'action').map((e) => [
      e.seat, e.action === 'fold' ? 'f' : e.action === 'check' || e.action === 'call' ? 'cc' : 'cbr',
      e.action === 'bet' || e.action === 'raise' ? BigInt(e.to) : null, e.timeout ? 'timeout' : null]));
  // the end: stacks and winnings after the rake, the rake, who is who
  const ended = stored.history.find((e) => e.type === 'hand_ended')!;
  expect(h.fields.finishing_stacks).toEqual(seats.map((x) => BigInt(ended.stacks.find((s: Event) => s.seat === x).stack)));
  const won = (x: number) => stored.history.filter((e) => e.type === 'pot_awarded')
    .flatMap((e) => e.winners).filter((w: Event) => w.seat === x).reduce((t: bigint, w: Event) => t + BigInt(w.amount), 0n);
  expect(h.fields.winnings).toEqual(seats.map(won));
  expect(h.fields._rake).toBe(BigInt(ended.rake));
  expect(h.fields._viewer_players).toEqual([BigInt(seats.indexOf(seat) + 1)]);
  expect(h.fields._player_ids).toEqual(seats.map((x) => start.seats.find((s: Event) => s.seat === x).playerId));
  expect(h.fields.players).toEqual(seats.map((x) => stored.result?.stacks?.find((s: Event) => s.seat === x)?.userId ?? ''));
  expect(h.fields).toMatchObject({ table: stored.tableId, hand: BigInt(stored.handNumber), _hand_id: stored.handId, time_zone: 'UTC' });
  const at = stored.startedAt;
  expect(h.fields.time).toEqual({ kind: 'local_time', text: at.toISOString().slice(11, 19) });
  expect([h.fields.day, h.fields.month, h.fields.year]).toEqual([at.getUTCDate(), at.getUTCMonth() + 1, at.getUTCFullYear()].map(BigInt));
  expect(h.fields.ante_trimming_status ?? false).toBe(BigInt(start.ante) > 0n);
}

/**
 * Replays a parsed hand through our engine from the file alone: the seats, stacks, antes and blinds
 * it gives, a deck that deals its cards (`holes`: every player's cards, from their own exports),
 * and its actions, each by the player the engine asks to act. Answers the final state.
 */
function replayPhh(h: PhhHand, holes: Map<number, string[]>, rake: RakeRule): HandState {
  const seats = pSeats(h);
  const n = seats.length;
  const blinds = n === 2 ? [...h.blindsOrStraddles].reverse() : h.blindsOrStraddles;
  const posted = blinds.map((b, i) => [b, i] as const).filter(([b]) => b > 0n).sort((x, y) => (x[0] < y[0] ? -1 : 1));
  expect(posted.length === 1 || posted.length === 2).toBe(true);
  expect(new Set(h.antes).size).toBe(1);
  const board = h.actions.flatMap((a) => (a.actor === 'd' && a.kind === 'db' ? a.cards : []));
  const used = new Set<Card>([...[...holes.values()].flat(), ...board].map(parseCard));
  const spare = Array.from({ length: 52 }, (_, c) => c).filter((c) => !used.has(c));
  const boardCard = (i: number) => (board[i] !== undefined ? parseCard(board[i]!) : spare.pop()!);
  const deck: Card[] = [];
  for (let round = 0; round < 2; round++) for (const seat of seats) deck.push(parseCard(holes.get(seat)![round]!));
  deck.push(spare.pop()!, boardCard(0), boardCard(1), boardCard(2), spare.pop()!, boardCard(3), spare.pop()!, boardCard(4), ...spare);
  let state = startHand({
    handId: String(h.fields._hand_id), button: seats[n - 1]!, rake, ante: h.antes[0]!, deck,
    seats: seats.map((seat, i) => ({ seat, playerId: `p${i + 1}`, stack: h.startingStacks[i]! })),
    bigBlindSeat: seats[posted.at(-1)![1]]!, smallBlindSeat: posted.length === 2 ? seats[posted[0]![1]]! : null,
    bigBlind: posted.at(-1)![0], smallBlind: posted.length === 2 ? posted[0]![0] : 0n,
  });
  let dealt = 0;
  for (const a of h.actions) {
    if (a.actor === 'd') {
      if (a.kind === 'db') expect(state.board.slice(dealt, (dealt += a.cards.length)).map(String)).toEqual(a.cards.map(parseCard).map(String));
      continue;
    }
    if (a.kind === 'sm') {
      expect(state.status).toBe('complete');
      continue;
    }
    const legal = legalActions(state);
    expect({ action: a, toAct: legal?.seat }).toEqual({ action: a, toAct: seats[a.actor - 1] });
    const type = a.kind === 'f' ? 'fold' : a.kind === 'cc' ? (legal!.toCall > 0n ? 'call' : 'check') : state.currentBet === 0n ? 'bet' : 'raise';
    const next = a.commentary === 'timeout' ? timeout(state) : applyAction(state, legal!.seat, { type, ...(a.kind === 'cbr' ? { amount: a.amount } : {}) });
    if (isRefusal(next)) throw new Error(`the engine refused ${JSON.stringify(a, (_k, v) => (typeof v === 'bigint' ? String(v) : v))}: ${next.error}`);
    state = next;
  }
  expect(state.status).toBe('complete');
  expect(dealt).toBe(state.board.length);
  return state;
}

/** The replay ends where the file says: stacks, winnings, rake, and the hands shown or mucked at a showdown. */
function expectReplayMatches(h: PhhHand, state: HandState): void {
  const seats = pSeats(h);
  const result = state.result!;
  expect(seats.map((seat) => result.stacks.find((s) => s.seat === seat)!.stack)).toEqual(h.fields.finishing_stacks);
  expect(seats.map((seat) => result.pots.flatMap((p) => p.winners).filter((w) => w.seat === seat).reduce((t, w) => t + w.amount, 0n))).toEqual(h.fields.winnings);
  expect(result.rake).toBe(h.fields._rake);
  const sm = h.actions.filter((a): a is Extract<PhhAction, { kind: 'sm' }> => a.kind === 'sm');
  const shown = new Map(result.shown.map((s) => [s.seat, s.hole.map(String)]));
  expect(new Map(sm.map((a) => [seats[a.actor - 1], a.cards === null ? null : (a.cards as string[]).map(parseCard).map(String)])))
    .toEqual(new Map(result.showdown ? [...shown, ...result.mucked.map((seat) => [seat, null] as const)] : []));
}

/** Every dealt-in seat's export of a stored hand, read and checked; then the hand replayed from them. */
function roundTrip(stored: Stored, exportAs: (seat: number) => string, rake: RakeRule): PhhHand[] {
  const files = started(stored).seats.map((s: Event) => {
    const h = readPhh(exportAs(s.seat));
    checkExport(stored, s.seat, h);
    return h;
  }) as PhhHand[];
  // each player's own cards, from their own file
  const holes = new Map<number, string[]>();
  for (const h of files) {
    const mine = Number((h.fields._viewer_players as bigint[])[0]);
    const dh = h.actions.find((a) => a.actor === 'd' && a.kind === 'dh' && a.player === mine) as { cards: string[] };
    holes.set(pSeats(h)[mine - 1]!, dh.cards);
  }
  for (const h of files) expectReplayMatches(h, replayPhh(h, holes, rake));
  return files;
}

const storedOf = (state: HandState, handNumber = 7): Stored => {
  const history = JSON.parse(historyJson(state.history)) as Event[];
  return {
    handId: state.handId, tableId: 't-phh', handNumber, startedAt: new Date('2026-11-27T04:05:06.789Z'), history,
    result: { showdown: state.result!.showdown, stacks: state.result!.stacks.map((s) => ({ seat: s.seat, userId: `user-${s.seat}` })) },
  };
};
const writerExport = (stored: Stored) => (seat: number) => handToPhh({
  ...stored, status: 'finished', history: redactHistory(stored.history as never, [seat]), viewerSeats: [seat],
})!;

describe('scripted hands through the writer and back (no database)', () => {
  const RAKE: RakeRule = { percent: 5, cap: 10n, minPot: 0n, requiresFlop: true };
  const cases: [string, TableScript, Step[], RakeRule][] = [
    ['heads-up, folded preflop', { stacks: { 0: 100n, 1: 100n }, button: 0 }, [[0, 'fold']], NO_RAKE],
    ['heads-up, raised and called to a showdown, raked', { stacks: { 2: 100n, 5: 80n }, button: 5, holes: { 2: 'Ah Kd', 5: '7c 7d' }, board: '2c 9h Js 4d Qs' },
      [[5, 'raise', 6n], [2, 'call'], [2, 'check'], [5, 'bet', 10n], [2, 'call'], [2, 'check'], [5, 'check'], [2, 'bet', 20n], [5, 'fold']], RAKE],
    ['four players with antes, side pots and an all-in run-out (shows before the boards)',
      { stacks: { 0: 50n, 1: 120n, 2: 30n, 3: 200n }, button: 3, ante: 1n, holes: { 0: 'As Ac', 1: 'Kh Kd', 2: 'Qc Qd', 3: 'Jh Th' }, board: '2c 3d 8s 9h 4c' },
      [[2, 'raise', 29n], [3, 'call'], [0, 'raise', 49n], [1, 'raise', 119n], [3, 'call']], RAKE],
    ['a dead small blind and a timeout', { stacks: { 1: 100n, 3: 100n, 4: 100n }, button: 0, smallBlindSeat: null, bigBlindSeat: 1 },
      [[3, 'call'], [4, 'call'], [1, 'check'], ['timeout'], [3, 'bet', 4n], [4, 'fold'], [1, 'fold']], NO_RAKE],
    ['everyone all-in on the blinds: nothing to act, the shows, then five boards', { stacks: { 0: 2n, 1: 1n }, button: 0, holes: { 0: '5c 5d', 1: 'Ah 2h' }, board: 'Kc Kd 9s 8h 3c' }, [], NO_RAKE],
    ['a player sitting out is no player of the hand', { stacks: { 0: 100n, 1: 100n, 2: 100n }, button: 2, sittingOut: [1] },
      [[2, 'call'], [0, 'check'], [0, 'check'], [2, 'check'], [0, 'check'], [2, 'check'], [0, 'check'], [2, 'check']], NO_RAKE],
  ];
  it.each(cases)('%s', (_name, table, steps, rake) => {
    const state = play(deal({ ...table, rake }), steps);
    expect(state.status).toBe('complete');
    const stored = storedOf(state);
    const files = roundTrip(stored, writerExport(stored), rake);
    expect(files).toHaveLength(started(stored).seats.length);
  });

  it('writes PHH as the specification shows it (the scripted all-in, as the first player sees it)', () => {
    const state = play(deal({ stacks: { 0: 2n, 1: 1n }, button: 0, holes: { 0: '5c 5d', 1: 'Ah 2h' }, board: 'Kc Kd 9s 8h 3c' }), []);
    const stored = storedOf(state, 3);
    expect(writerExport(stored)(1)).toBe([
      'variant = "NT"', 'antes = [0, 0]', 'blinds_or_straddles = [1, 2]', 'min_bet = 2', 'starting_stacks = [1, 2]',
      'actions = [', '  "d dh p1 Ah2h",', '  "d dh p2 ????",', '  "p1 sm Ah2h",', '  "p2 sm 5c5d",', '  "d db KcKd9s",', '  "d db 8h",', '  "d db 3c",', ']',
      'table = "t-phh"', 'hand = 3', 'seats = [2, 1]', 'players = ["user-1", "user-0"]', 'time = 04:05:06', 'time_zone = "UTC"',
      'day = 27', 'month = 11', 'year = 2026', 'finishing_stacks = [0, 3]', 'winnings = [0, 2]', '_hand_id = "hand-1"',
      '_player_ids = ["p1", "p0"]', '_rake = 0', '_viewer_players = [1]', '',
    ].join('\n'));
  });
});

test('a hand that did not finish says so and claims no end; a history with nothing dealt has no PHH', () => {
  const state = play(deal({ stacks: { 0: 100n, 1: 100n }, button: 0 }), [[0, 'call']]);
  const history = JSON.parse(historyJson(state.history)) as Event[];
  const base = { handId: 'h-1', tableId: 't', handNumber: 1, startedAt: new Date(), result: null, viewerSeats: [0] };
  const h = readPhh(handToPhh({ ...base, status: 'abandoned', history: redactHistory(history as never, [0]) })!);
  expect(h.fields).toMatchObject({ _status: 'abandoned', players: ['', ''] });
  expect(['finishing_stacks', 'winnings', '_rake'].filter((f) => f in h.fields)).toEqual([]);
  expect(playerActions(h).map((a) => a.kind)).toEqual(['cc']);
  expect(handToPhh({ ...base, status: 'abandoned', history: [] })).toBeNull();
});

describe('the reader refuses what it does not understand', () => {
  it('reads the specification\'s own example (comments, trailing commas, unknown cards)', () => {
    const h = readPhh([
      '# A big pot between Dwan and Ivey.', 'variant = "NT"', 'antes = [500, 500, 500]', 'blinds_or_straddles = [1000, 2000, 0]', 'min_bet = 2000',
      'starting_stacks = [1125600, 2000000, 553500]', 'actions = [', '  # Pre-flop', '  "d dh p1 Ac2d",  # Ivey', '  "d dh p2 ????",  # Antonius',
      '  "d dh p3 7h6h",  # Dwan', '  "p3 cbr 7000",  # Dwan', '  "p1 cbr 23000",  # Ivey', '  "p2 f",  # Antonius', '  "p3 cc",  # Dwan',
      '  "d db Jc3d5c",', '  "p1 sm Ac2d",', ']', 'author = "Juho Kim"', 'year = 2009', 'players = ["Phil Ivey", "Patrik Antonius", "Tom Dwan"]', 'currency = "USD"',
    ].join('\n'));
    expect(h.actions[1]).toEqual({ actor: 'd', kind: 'dh', player: 2, cards: [null, null], commentary: null });
    expect(h.actions[3]).toEqual({ actor: 3, kind: 'cbr', amount: 7000n, commentary: null });
    expect(h.fields).toMatchObject({ author: 'Juho Kim', year: 2009n, currency: 'USD' });
  });

  const base = 'variant = "NT"\nantes = [0, 0]\nblinds_or_straddles = [1, 2]\nmin_bet = 2\nstarting_stacks = [5, 5]\n';
  it.each([
    ['an inline table', `${base}actions = []\n_x = { a = 1 }\n`],
    ['a dotted key', `${base}actions = []\na.b = 1\n`],
    ['a duplicate key', `${base}actions = []\nmin_bet = 4\n`],
    ['a date', `${base}actions = []\n_d = 2026-11-27\n`],
    ['an unknown field without the underscore', `${base}actions = []\nrake = 3\n`],
    ['an array not one per player', `${base.replace('antes = [0, 0]', 'antes = [0]')}actions = []\n`],
    ['a float stack', `${base.replace('[5, 5]', '[5.5, 5]')}actions = []\n`],
    ['a bad card', `${base}actions = ["d dh p1 Xx2c"]\n`],
    ['a player not in the hand', `${base}actions = ["p3 f"]\n`],
    ['an action of another variant', `${base}actions = ["p1 pb"]\n`],
    ['an unterminated string', `${base}actions = ["p1 f]\n`],
    ['another variant', base.replace('"NT"', '"FT"') + 'actions = []\n'],
  ])('%s', (_name, text) => {
    expect(() => readPhh(text)).toThrow(PhhError);
  });

  it('reads strings with escapes and keeps tables in the file\'s order', () => {
    expect(parseToml('_s = "a\\"b\\\\c\\u00e9"\n_l = \'x\\y\'\n').root).toEqual({ _s: 'a"b\\cé', _l: 'x\\y' });
    expect(parseToml('[b]\n_x = 1\n[a]\n_x = 2\n').tables.map(([name]) => name)).toEqual(['b', 'a']);
  });
});

describe('live hands over HTTP', () => {
  let db: TestDatabase;
  let cagePool: pg.Pool;
  let m: Awaited<ReturnType<typeof startMoneyPlatform>>;
  let live: LiveClient;
  const RAKE: RakeRule = { percent: POKER_SETTINGS.rakePercent, cap: BigInt(POKER_SETTINGS.rakeCap), minPot: BigInt(POKER_SETTINGS.rakeMinPot), requiresFlop: POKER_SETTINGS.rakeRequiresFlop };

  beforeAll(async () => {
    db = await createTestDatabase();
    cagePool = db.pool('poker_cage');
    m = await startMoneyPlatform(db, { env: { HAND_DELAY_MS: '10' }, alsoWeb: true });
    live = liveClient(m, db);
  });
  afterAll(async () => {
    await live?.closeAll();
    await m?.platform.stop();
    await expectCleanAudit(cagePool);
    await db.drop();
  });

  const get = async (url: string, auth: Record<string, string>) => {
    const res = await fetch(url, { headers: auth });
    return { status: res.status, type: res.headers.get('content-type'), disposition: res.headers.get('content-disposition'), text: await res.text() };
  };
  async function storedHands(tableId: string): Promise<Stored[]> {
    const { rows } = await db.owner.query(
      "select hand_id, table_id, hand_number, started_at, history, result, compact from game.hand_histories where table_id = $1 and status = 'finished' order by hand_number",
      [tableId]);
    // a hand ended since issue 33 holds its history and result in its compact value
    return rows.map((r) => ({ handId: r.hand_id, tableId: r.table_id, handNumber: Number(r.hand_number), startedAt: r.started_at, ...storedHand(r) }))
      .map(({ readable: _, ...s }) => s as unknown as Stored);
  }

  /** Plays until `hands` results reached the observer: each player asked to act answers with `policy`. */
  async function playHands(players: LivePlayer[], tableId: string, hands: number, policy: (legal: Msg, p: LivePlayer) => { action: string; amount?: string }, answered: Set<string>) {
    const observer = players[0]!.ws;
    const stop = Date.now() + 20_000;
    while (resultsOf(observer, tableId).length < hands) {
      if (Date.now() > stop) throw new Error(`${hands} hands were not played`);
      let acted = false;
      for (const p of players) {
        const s = latestState(p.ws, tableId);
        if (!s?.legal || answered.has(`${s.legal.handId}:${s.legal.seq}`)) continue;
        const a = policy(s.legal, p);
        await live.act(p, tableId, s, a.action, a.amount, answered).catch((err) => {
          if (!String(err).includes('stale') && !String(err).includes('hand_over')) throw err;
        });
        acted = true;
      }
      if (!acted) await sleep(2);
    }
  }

  /** Every stored hand exported over HTTP by each player dealt in (the others: 404), read, checked and replayed. */
  async function exportAll(tableId: string, players: LivePlayer[]) {
    const stored = await storedHands(tableId);
    const seatOf = new Map<string, number>();
    for (const s of stored) for (const x of s.result!.stacks) seatOf.set(x.userId, x.seat);
    const bySeat = (seat: number) => players.find((p) => seatOf.get(p.userId) === seat)!;
    const files = new Map<string, PhhHand[]>();
    for (const s of stored) {
      const texts = new Map<number, string>();
      for (const x of started(s).seats) {
        const r = await get(`${m.game}/api/hands/${s.handId}?format=phh`, bySeat(x.seat).auth);
        expect({ status: r.status, type: r.type, disposition: r.disposition }).toEqual({
          status: 200, type: 'text/plain; charset=utf-8', disposition: `inline; filename="${s.handId.replace(/[^A-Za-z0-9._-]/g, '-')}.phh"` });
        texts.set(x.seat, r.text);
      }
      files.set(s.handId, roundTrip(s, (seat) => texts.get(seat)!, RAKE));
      // a player seated at the table but not dealt into this hand: not found, in either format
      for (const p of players.filter((q) => !started(s).seats.some((x: Event) => x.seat === seatOf.get(q.userId)))) {
        for (const format of ['phh', 'json']) expect(JSON.parse((await get(`${m.game}/api/hands/${s.handId}?format=${format}`, p.auth)).text)).toEqual({ error: 'hand_not_found' });
      }
    }
    if (process.env.DEBUG_PHH) console.log(`exported ${stored.length} hands, ${[...files.values()].flat().length} files`);
    return { stored, files };
  }

  it('heads-up: a fold, a raked showdown and an all-in run-out, as each player sees them; the list as one .phhs file', async () => {
    const players = [await live.player(500), await live.player(500)];
    const tableId = await m.table(players[0]!.auth, { ...POKER_SETTINGS, deckSeed: 'phh-heads-up' });
    await live.seatBeforeRoom(players, tableId, [100, 100]);
    const answered = new Set<string>();
    const script: ((legal: Msg) => { action: string; amount?: string })[] = [
      (legal) => ({ action: legal.actions.includes('check') ? 'check' : 'fold' }),
      // a raise to 20 preflop, called, then checked down: a pot the rake reaches
      (legal) => (legal.actions.includes('raise') && BigInt(legal.minRaiseTo) <= 20n ? { action: 'raise', amount: '20' } : { action: legal.actions.includes('check') ? 'check' : 'call' }),
      (legal) => (legal.actions.includes('raise') ? { action: 'raise', amount: String(legal.maxRaiseTo) } : { action: legal.actions.includes('call') ? 'call' : 'check' }),
    ];
    for (const [i, policy] of script.entries()) await playHands(players, tableId, i + 1, policy, answered);
    await live.standUpAll(players, tableId);
    const { stored, files } = await exportAll(tableId, players);
    expect(stored.length).toBeGreaterThanOrEqual(3);
    const results = stored.map((s) => s.result!);
    expect(results[0]!.showdown).toBe(false);
    expect(results[1]!.showdown).toBe(true);
    expect(BigInt(results[1]!.rake)).toBeGreaterThan(0n);
    // the all-in: both shown before the boards of the run-out
    const allIn = files.get(stored[2]!.handId)![0]!;
    const kinds = allIn.actions.map((a) => a.kind);
    expect(kinds.slice(-5)).toEqual(['sm', 'sm', 'db', 'db', 'db']);

    // the list route: the same hands, newest first, as one .phhs file; the JSON list unchanged
    for (const p of players) {
      const list = await get(`${m.game}/api/hands?format=phh&tableId=${tableId}`, p.auth);
      expect({ status: list.status, type: list.type, disposition: list.disposition }).toEqual({ status: 200, type: 'text/plain; charset=utf-8', disposition: 'inline; filename="hands.phhs"' });
      const json = JSON.parse((await get(`${m.game}/api/hands?tableId=${tableId}`, p.auth)).text);
      expect(JSON.parse((await get(`${m.game}/api/hands?tableId=${tableId}&format=json`, p.auth)).text)).toEqual(json);
      const parsed = readPhhs(list.text);
      expect(parsed.map((x) => x.name)).toEqual(json.hands.map((_: unknown, i: number) => String(i + 1)));
      expect(parsed.map((x) => x.hand.fields._hand_id)).toEqual(json.hands.map((h: Msg) => h.handId));
      for (const x of parsed) {
        const single = await get(`${m.game}/api/hands/${String(x.hand.fields._hand_id)}?format=phh`, p.auth);
        expect(x.hand).toEqual(readPhh(single.text));
      }
      const two = readPhhs((await get(`${m.game}/api/hands?format=phh&tableId=${tableId}&limit=2`, p.auth)).text);
      expect(two.map((x) => x.hand)).toEqual(parsed.slice(0, 2).map((x) => x.hand));
    }

    // through the web role's same-origin proxy: the same text, type and download name
    const direct = await get(`${m.game}/api/hands/${stored[2]!.handId}?format=phh`, players[0]!.auth);
    expect(await get(`${m.platform.url('web')}/api/gw/game/api/hands/${stored[2]!.handId}?format=phh`, players[0]!.auth)).toEqual(direct);
    expect(await get(`${m.platform.url('web')}/api/gw/game/api/hands?format=phh&tableId=${tableId}`, players[0]!.auth))
      .toEqual(await get(`${m.game}/api/hands?format=phh&tableId=${tableId}`, players[0]!.auth));

    // refusals: a format we do not write, as the other query checks; an outsider finds nothing
    const [a] = players as [LivePlayer];
    for (const url of [`${m.game}/api/hands/${stored[0]!.handId}?format=xml`, `${m.game}/api/hands?format=PHH`, `${m.game}/api/hands?format=phh&limit=0`]) {
      const r = await get(url, a.auth);
      expect(r.status).toBe(400);
      expect(JSON.parse(r.text)).toMatchObject({ error: 'bad_request', issues: expect.any(Array) });
    }
    const outsider = await m.player(0);
    const r = await get(`${m.game}/api/hands/${stored[0]!.handId}?format=phh`, outsider.auth);
    expect({ status: r.status, body: JSON.parse(r.text) }).toEqual({ status: 404, body: { error: 'hand_not_found' } });
    expect(await get(`${m.game}/api/hands?format=phh&tableId=${tableId}`, outsider.auth)).toMatchObject({ status: 200, text: '' });
    expect((await get(`${m.game}/api/hands/${stored[0]!.handId}?format=phh`, {})).status).toBe(401);
  }, 60_000);

  it('four players at random, one stepping away: every hand as each player dealt in sees it; the one away gets 404', async () => {
    const players = [await live.player(500), await live.player(500), await live.player(500), await live.player(500)];
    const tableId = await m.table(players[0]!.auth, { ...POKER_SETTINGS, deckSeed: 'phh-random' });
    await live.seatBeforeRoom(players, tableId, [60, 100, 140, 200]);
    const answered = new Set<string>();
    const rng = prng(2311);
    await playHands(players, tableId, 4, (legal) => randomAction(rng, legal), answered);
    // the last player steps away: dealt out of the hands that follow
    // one holding chips (a busted player is no longer seated), the last such seat
    const seatsNow: Msg[] = latestState(players[0]!.ws, tableId)!.seats;
    const awaySeat = seatsNow.filter((x) => BigInt(x.stack) > 0n).at(-1)!.seatIndex as number;
    const away = players[awaySeat]!;
    expect(await live.request(away.ws, { type: 'sit_out', tableId })).toMatchObject({ type: 'sat_out' });
    const before = resultsOf(players[0]!.ws, tableId).length;
    if (process.env.DEBUG_PHH) console.log(JSON.stringify(seatsNow.map((x) => [x.seatIndex, x.stack])), awaySeat, before);
    await playHands(players, tableId, before + 8, (legal) => calmAction(rng, legal), answered)
      .catch(async (err) => {
        // fewer than two left with chips: the table stops dealing; what was played is enough
        if (!String(err).includes('were not played')) throw err;
      });
    await live.standUpAll(players, tableId);
    const { stored } = await exportAll(tableId, players);
    const dealtIn = (s: Stored) => started(s).seats.length;
    expect(stored.some((s) => dealtIn(s) >= 3)).toBe(true);
    expect(stored.some((s) => s.result!.pots.length > 1 || s.history.some((e) => e.type === 'action' && e.allIn))).toBe(true);
    expect(stored.some((s) => !started(s).seats.some((x: Event) => x.seat === awaySeat))).toBe(true);
  }, 90_000);

  it('a compact hand reads byte for byte as the same hand stored as jsonb (before issue 33); one that does not inflate reads as no history', async () => {
    const players = [await live.player(500), await live.player(500)];
    const tableId = await m.table(players[0]!.auth, { ...POKER_SETTINGS, deckSeed: 'phh-compact' });
    await live.seatBeforeRoom(players, tableId, [100, 100]);
    await playHands(players, tableId, 2, (legal) => ({ action: legal.actions.includes('check') ? 'check' : 'call' }), new Set());
    await live.standUpAll(players, tableId);
    const [hand] = (await db.owner.query('select hand_id, compact from game.hand_histories where table_id = $1 and status = \'finished\' order by hand_number', [tableId])).rows;
    expect(hand.compact).toBeInstanceOf(Buffer);
    const answers = async () => {
      const out: string[] = [];
      for (const p of players) {
        for (const url of [`/api/hands/${hand.hand_id}`, `/api/hands/${hand.hand_id}?format=phh`, `/api/hands?tableId=${tableId}`, `/api/hands?tableId=${tableId}&format=phh`]) {
          const r = await get(`${m.game}${url}`, p.auth);
          out.push(`${r.status} ${r.type} ${r.text}`);
        }
      }
      return out;
    };
    const compact = await answers();
    // the same hand as a hand ended before issue 33 stored it: history and result as jsonb, no compact value
    const read = storedHand(hand);
    await db.owner.query('update game.hand_histories set compact = null, started = null, history = $2::jsonb, result = $3::jsonb where hand_id = $1',
      [hand.hand_id, JSON.stringify(read.history), JSON.stringify(read.result)]);
    expect(await answers()).toEqual(compact);
    // a compact value with a good header that does not inflate (SQL cannot tell): the hand reads with no
    // history and no result, its PHH as not found (nothing dealt), its net as none; never a 500
    await db.owner.query('update game.hand_histories set history = null, result = null, compact = $2 where hand_id = $1',
      [hand.hand_id, Buffer.concat([Buffer.from([1, 0, 0, 1, 0]), Buffer.alloc(40, 0xff)])]);
    const [json, phh, list] = (await answers()).slice(0, 3);
    expect(json!.startsWith('200 application/json')).toBe(true);
    expect(JSON.parse(json!.slice(json!.indexOf('{')))).toMatchObject({ handId: hand.hand_id, history: [], result: null });
    expect(JSON.parse(phh!.slice(phh!.indexOf('{')))).toEqual({ error: 'hand_not_found' });
    expect(JSON.parse(list!.slice(list!.indexOf('{'))).hands.find((h: Msg) => h.handId === hand.hand_id)).toMatchObject({ net: null });
    // put back as it was, for the audit at the end
    await db.owner.query('update game.hand_histories set compact = $2 where hand_id = $1', [hand.hand_id, hand.compact]);
  }, 60_000);
});
