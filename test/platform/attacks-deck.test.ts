// Issue 31, "The dealer cannot steer a deal either": attacks by the dealer itself on the deal.
//
// (a) Hand-id grinding. The dealer holds its committed seed and, once the players' contributions are
//     in, every input of the deck but one it still picks: the hand id. If the hand id enters the deck
//     and is drawn after the contributions, the dealer tries hand ids until the deck deals two aces to
//     a seat of its choosing, plays that hand, signs its record, and the hand verifies.
// (b) Aborting a deal the dealer dislikes. Once the contributions are in, the dealer knows the deck
//     its committed seed will give; if it dislikes it, it unloads the room (or restarts) before the
//     deal, and the commitment it published is never revealed: nothing later shows it was thrown away.
import { randomBytes } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { signerFromPrivateKey } from '../../server/crypto/signing.ts';
import { DealSeeds } from '../../server/game/live/deal-seeds.ts';
import { applyAction, isRefusal, legalActions, startHand, type HandState } from '../../server/game/poker/engine.ts';
import { commitmentOf, dealtFrom, deckOf, fromHex, LEGACY_ALGORITHM, type DealReveal } from '../../server/game/poker/fair-deal.ts';
import { abandonedRecord, GENESIS, recordOf, signRecord } from '../../server/game/hands/hand-record.ts';
import { redactHistory } from '../../server/game/hands/histories.ts';
import { verifyChain, verifyHand, type HandView } from '../../server/game/hands/verify-hand.ts';
import { historyJson } from '../../server/game/live/wire.ts';
import { expectCleanAudit } from '../helpers/cage.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { liveClient, until, type LiveClient, type Msg } from '../helpers/live.ts';
import { call, POKER_SETTINGS, startMoneyPlatform } from '../helpers/money.ts';

const dealer = signerFromPrivateKey(ed25519.utils.randomSecretKey());
const TABLE = 'attacked-table';
const SEATS = [0, 1, 2, 3];
const BUTTON = 3;
const TARGET = 1; // the seat the dealer favours
const ACE = 12; // card = rank * 4 + suit, rank 12 = ace

function play(handId: string, deck: number[]): HandState {
  let h = startHand({
    handId, seats: SEATS.map((seat) => ({ seat, playerId: `p${seat}`, stack: 1000n })), button: BUTTON,
    smallBlind: 5n, bigBlind: 10n, ante: 0n, deck, rake: { percent: 5, cap: 10n, minPot: 0n, requiresFlop: true },
  });
  while (h.status === 'betting') {
    const legal = legalActions(h)!;
    const next = applyAction(h, legal.seat, { type: legal.actions.includes('check') ? 'check' : 'call' });
    if (isRefusal(next)) throw new Error(next.message);
    h = next;
  }
  return h;
}

/** The view the favoured player reads of a hand, with its record signed by the dealer's key. */
function viewOf(hand: HandState, handNumber: number, deal: DealReveal): HandView {
  const record = signRecord(recordOf(hand, { tableId: TABLE, handNumber, prev: GENESIS, deal }), dealer);
  const history = redactHistory(JSON.parse(historyJson(hand.history)), [TARGET]);
  return { handId: hand.handId, tableId: TABLE, handNumber, history, deal, record };
}

const twoAces = (deck: number[], handId: string) => dealtFrom(deck, SEATS, BUTTON).hole.get(TARGET)!.every((c) => c >> 2 === ACE) && handId;

test('class "dealer steers a deal" (a): grinding the hand id after the contributions gives no deck that verifies', () => {
  // the room's own commit and reveal: the commitment is published, the players contribute to it
  const seeds = new DealSeeds(TABLE, () => null, dealer);
  const commitment = seeds.nextCommitment(0);
  for (const seat of SEATS) expect(seeds.contribute(seat, commitment, randomBytes(12).toString('base64url'), 0)).toBeNull();
  // the honest deal, as the room makes it, gives the dealer every input it holds once the contributions are in
  seeds.dealWrite(0);
  const { handId: honestId, deck } = seeds.deal(1);
  const deal = seeds.signedRecord(play(honestId, deck), { tableId: TABLE, handNumber: 1 }, dealer).deal;
  expect(verifyHand(viewOf(play(honestId, deckOf(deal, honestId)), 1, deal), dealer.publicKeyHex).ok).toBe(true);

  // the attack: try hand ids (what the dealer still picks after the contributions) until seat 1 holds two aces
  let found: string | null = null;
  let tries = 0;
  for (; tries < 20_000 && !found; tries++) {
    const handId = `${TABLE}:1:${tries.toString(16).padStart(8, '0')}`;
    found = twoAces(deckOf(deal, handId), handId) || null;
  }
  expect(found).not.toBeNull(); // the deck moves with the hand id: a favourable one is a few hundred tries away
  const steered = play(found!, deckOf(deal, found!));
  expect(steered.history.find((e) => e.type === 'hole_cards' && e.seat === TARGET)).toBeDefined();
  const verdict = verifyHand(viewOf(steered, 1, deal), dealer.publicKeyHex);
  // a steered hand must not verify: something the dealer picked after the commitment entered the deck
  expect(verdict.ok).toBe(false);
  // the commitment names the hand: the ground hand id is not the one committed before the contributions
  expect(verdict.failed).toBe('commitment');

  // nor can the dealer go back to a commitment of the seed alone (v1): such a deal fails by default
  const legacy = { ...deal, algorithm: LEGACY_ALGORITHM, commitment: commitmentOf(fromHex(deal.serverSeed)) } as const;
  const relabelled = verifyHand(viewOf(play(found!, deckOf(legacy, found!)), 1, legacy), dealer.publicKeyHex);
  expect(relabelled.failed).toBe('commitment');
  expect(relabelled.checks.find((c) => c.name === 'commitment')!.detail).toMatch(/does not commit the hand/);
});

describe('class "dealer steers a deal" (b): a deal aborted after the contributions', () => {
  let db: TestDatabase;
  let m: Awaited<ReturnType<typeof startMoneyPlatform>>;
  let live: LiveClient;
  beforeAll(async () => {
    db = await createTestDatabase();
    // a room nobody watches unloads after a second: the dealer's way to drop a published commitment
    m = await startMoneyPlatform(db, { env: { HAND_DELAY_MS: '2', ROOM_IDLE_UNLOAD_SECONDS: '1', WS_PING_INTERVAL_SECONDS: '1' } });
    live = liveClient(m, db);
  });
  afterAll(async () => {
    await live?.closeAll();
    await m?.platform.stop();
    await expectCleanAudit(db.pool('poker_cage'));
    await db.drop();
  });

  const leaseHolder = async (tableId: string) =>
    (await db.owner.query<{ holder: string | null }>('select holder from game.table_leases where table_id = $1', [tableId])).rows[0]?.holder ?? null;

  test('an unload after contributions: the commitment is revealed in a chained abandoned record naming the players, and counted', async () => {
    const [a, b] = [await live.player(1000), await live.player(1000)];
    const tableId = await m.table(a.auth, { ...POKER_SETTINGS, turnTimerEnabled: false });
    // two funded seats; only `a` is connected, so no hand is dealt, but `a` may contribute
    for (const [i, p] of [a, b].entries()) expect((await m.deposit(p.auth, { tableId, seatIndex: i, amount: 200 })).status).toBe(200);
    const dealerKey = (await call(`${m.game}/api/dealer/key`)).body.publicKey as string;
    const abandoned: { commitment: string; seed: string }[] = [];
    for (let round = 0; round < 2; round++) {
      const ws = await live.open('/ws', a.auth);
      await live.join({ ws }, tableId);
      const state = await until(() => ws.messages.filter((x: Msg) => x.type === 'game_state' && x.tableId === tableId).at(-1), 'a state');
      const seed = `mine-${round}-${randomBytes(6).toString('hex')}`;
      expect(await live.request(ws, { type: 'deal_seed', tableId, commitment: state.nextDealCommitment, seed })).toMatchObject({ type: 'deal_seed_accepted' });
      abandoned.push({ commitment: state.nextDealCommitment, seed });
      // the dealer drops the deal: everyone leaves, the room unloads and lets the table go
      await ws.close();
      await until(async () => (await leaseHolder(tableId)) === null, 'the room unloaded', 10_000, 20);
    }
    // the table opens again (someone looks at it): what the unloads left is revealed
    const ws = await live.open('/ws', a.auth);
    await live.join({ ws }, tableId);
    await until(async () => (await db.owner.query('select 1 from game.hand_histories where table_id = $1 and record is not null', [tableId])).rowCount === 2,
      'two abandoned deals revealed', 10_000, 20);

    const listed = (await call(`${m.game}/api/hands?tableId=${encodeURIComponent(tableId)}`, { headers: a.auth })).body.hands as Msg[];
    const views = await Promise.all(listed.map(async (h) => (await call(`${m.game}/api/hands/${encodeURIComponent(h.handId)}`, { headers: a.auth })).body as HandView));
    views.sort((x, y) => x.handNumber - y.handNumber);
    // every commitment `a` contributed to is revealed, in a record of its own hand number, naming both players
    expect(views.map((v) => [v.handNumber, v.status, v.deal?.commitment])).toEqual(abandoned.map((x, i) => [i + 1, 'abandoned', x.commitment]));
    for (const v of views) {
      const record = JSON.parse(v.record!.text);
      expect(record).toMatchObject({ abandoned: true, rake: '0', actions: [], board: '' });
      expect(record.seats.map((s: Msg) => s.stack)).toEqual(['200', '200']);
      expect(verifyHand(v, dealerKey)).toMatchObject({ ok: true });
    }
    expect(verifyChain(views)).toEqual([expect.objectContaining({ name: 'chain', ok: true })]);
    const bView = await call(`${m.game}/api/hands/${encodeURIComponent(views[0]!.handId)}`, { headers: b.auth });
    expect(bView.status).toBe(200); // the other player is named too
    // counted where anyone sees the table
    expect((await m.room(tableId)).body.abandonedDeals).toBe(2);
  }, 60_000);

  test('a hand aborted mid-deal by the dealer (the game login abandons it): its deal is revealed with the contributions it had, chained and counted', async () => {
    const [a, b] = [await live.player(1000), await live.player(1000)];
    const tableId = await m.table(a.auth, { ...POKER_SETTINGS, turnTimerEnabled: false });
    for (const [i, p] of [a, b].entries()) expect((await m.deposit(p.auth, { tableId, seatIndex: i, amount: 200 })).status).toBe(200);
    const dealerKey = (await call(`${m.game}/api/dealer/key`)).body.publicKey as string;
    // `a` watches alone (no deal yet) and contributes to the published commitment
    await live.join(a, tableId);
    const state = await until(() => a.ws.messages.filter((x: Msg) => x.type === 'game_state' && x.tableId === tableId).at(-1), 'a state');
    const seed = `mine-${randomBytes(6).toString('hex')}`;
    expect(await live.request(a.ws, { type: 'deal_seed', tableId, commitment: state.nextDealCommitment, seed })).toMatchObject({ type: 'deal_seed_accepted' });
    await live.join(b, tableId);
    const dealt = await until(() => a.ws.messages.find((x: Msg) => x.type === 'game_state' && x.tableId === tableId && x.dealCommitment === state.nextDealCommitment), 'the hand dealt');
    // the dealer dislikes the deck and abandons the hand under the table's epoch, as the game login
    const game = db.pool('poker_game', 1);
    const { rows: [lease] } = await db.owner.query<{ epoch: string }>('select epoch from game.table_leases where table_id = $1', [tableId]);
    expect((await game.query('select game.abandon_hand($1, $2) as hand', [tableId, lease!.epoch])).rows[0].hand).toBe(dealt.handId);
    // the room finds out at the hand's end (refused hand_abandoned) and reveals the deal at once
    const turn = await until(() => [a, b].map((p) => ({ p, s: p.ws.messages.filter((x: Msg) => x.type === 'game_state' && x.tableId === tableId).at(-1) }))
      .find(({ s }) => s?.legal?.handId === dealt.handId), 'a turn');
    await live.request(turn.p.ws, { type: 'action', tableId, handId: dealt.handId, seq: turn.s!.legal.seq, action: 'fold' });
    await until(async () => (await db.owner.query('select 1 from game.hand_histories where hand_id = $1 and record is not null', [dealt.handId])).rowCount === 1,
      'the abandoned hand revealed', 10_000, 20);
    const view = (await call(`${m.game}/api/hands/${encodeURIComponent(dealt.handId)}`, { headers: a.auth })).body as HandView;
    expect(view).toMatchObject({ status: 'abandoned', handNumber: 1, deal: { commitment: state.nextDealCommitment } });
    expect(view.deal!.contributions).toContainEqual({ seat: 0, seed });
    expect(verifyHand(view, dealerKey, undefined, { seed })).toMatchObject({ ok: true });
    expect(verifyHand(view, dealerKey, undefined, { seed }).checks.find((c) => c.name === 'mixed')).toMatchObject({ ok: true });
    // the table goes on: hand 2 is dealt under the deal committed for it
    const next = await until(() => a.ws.messages.find((x: Msg) => x.type === 'game_state' && x.tableId === tableId && x.handId && x.handId !== dealt.handId), 'the next hand');
    expect(next.handId).toMatch(new RegExp(`^${tableId}:2:`));
    expect((await m.room(tableId)).body.abandonedDeals).toBe(1);
  }, 60_000);

  test('the game login reads a sealed deal, abandons it under the room\'s epoch, tries to reveal a seed of its own: refused, and the table deals on', async () => {
    const [a, b] = [await live.player(1000), await live.player(1000)];
    const tableId = await m.table(a.auth, { ...POKER_SETTINGS, turnTimerEnabled: false });
    for (const [i, p] of [a, b].entries()) expect((await m.deposit(p.auth, { tableId, seatIndex: i, amount: 200 })).status).toBe(200);
    const dealerKey = (await call(`${m.game}/api/dealer/key`)).body.publicKey as string;
    await live.join(a, tableId);
    const state = await until(() => a.ws.messages.filter((x: Msg) => x.type === 'game_state' && x.tableId === tableId).at(-1), 'a state');
    const game = db.pool('poker_game', 1);
    // read: the committed deal is there, sealed; nothing in it is the seed
    const { rows: [table] } = await game.query('select deal_next from game.tables where table_id = $1', [tableId]);
    expect(table.deal_next).toMatchObject({ commitment: state.nextDealCommitment, handNumber: 1 });
    expect(Object.keys(table.deal_next).sort()).toEqual(['algorithm', 'commitment', 'handId', 'handNumber', 'sealed']);
    // then use: abandon it under the room's epoch, and reveal a seed the login made up
    const { rows: [lease] } = await db.owner.query<{ epoch: string }>('select epoch from game.table_leases where table_id = $1', [tableId]);
    const { rows: [opened] } = await game.query('select pending from game.open_deals($1, $2)', [tableId, lease!.epoch]);
    expect(opened.pending).toEqual([expect.objectContaining({ handId: table.deal_next.handId, handNumber: 1 })]);
    const madeUp = { algorithm: table.deal_next.algorithm, commitment: table.deal_next.commitment, serverSeed: randomBytes(32).toString('hex'), contributions: [] };
    const seats = opened.pending[0].deal.seats;
    const record = signRecord(abandonedRecord({ tableId, handNumber: 1, handId: table.deal_next.handId, prev: GENESIS, deal: madeUp, seats }), dealer);
    await expect(game.query('select game.reveal_abandoned($1, $2, $3, $4::jsonb, $5, $6, $7)',
      [tableId, table.deal_next.handId, lease!.epoch, JSON.stringify(madeUp), record.text, record.signature, record.publicKey])).rejects.toMatchObject({ code: 'GMHND' });
    // the room reveals the real seed (it holds the key) before dealing again, commits a new deal, and deals
    await live.join(b, tableId);
    const next = await until(() => a.ws.messages.find((x: Msg) => x.type === 'game_state' && x.tableId === tableId && x.handId), 'a hand dealt', 10_000);
    expect(next.handId).toMatch(new RegExp(`^${tableId}:2:`));
    const view = (await call(`${m.game}/api/hands/${encodeURIComponent(table.deal_next.handId)}`, { headers: a.auth })).body as HandView;
    expect(view).toMatchObject({ status: 'abandoned', deal: { commitment: state.nextDealCommitment } });
    expect(verifyHand(view, dealerKey)).toMatchObject({ ok: true });
    expect((await m.room(tableId)).body.abandonedDeals).toBe(1);
  }, 60_000);
});
