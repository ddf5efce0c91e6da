// The dealer under random play: thousands of hands with 2..9 players, stacks from one chip to
// thousands, antes on and off, dead buttons and dead small blinds, random legal actions (all-ins
// and timeouts included) and random illegal ones. After every step: chips conserved, no negative
// stack, a refusal changes nothing, the old state is never touched. At the end: the pots went to
// the best hands (checked with the slow reference ranker), the rake is the rule's, and the same
// seed with the same actions replays to the identical history. A second property (fast-check) plays
// short-stacked tables: a bet or raise is offered only when someone could answer it.
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { shuffledDeck } from '../../../server/game/poker/deck.ts';
import {
  actionsOf, applyAction, chipsOnTable, isRefusal, legalActions, rakeOf, replay, startHand, timeout,
  type Action, type ActionType, type HandState, type RakeRule, type RefusalCode, type StartHandInput,
} from '../../../server/game/poker/engine.ts';
import { referenceScore } from '../../helpers/poker-reference-eval.ts';

/** mulberry32: a small seeded generator, so a failing hand can be re-run from its number. */
function generator(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1));
  const big = (lo: bigint, hi: bigint) => lo + BigInt(Math.floor(next() * Number(hi - lo + 1n)));
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
  return { next, int, big, pick };
}

type Random = ReturnType<typeof generator>;

function randomInput(r: Random, hand: number): StartHandInput {
  const count = r.int(2, 9);
  const seats = [0, 1, 2, 3, 4, 5, 6, 7, 8].sort(() => r.next() - 0.5).slice(0, count + r.int(0, 1)).sort((a, b) => a - b);
  const bigBlind = r.big(1n, 20n);
  const smallBlind = r.next() < 0.1 ? 0n : r.big(0n, bigBlind - 1n);
  const stack = (): bigint => {
    const kind = r.next();
    if (kind < 0.2) return r.big(1n, 5n);
    if (kind < 0.4) return r.big(1n, bigBlind * 5n);
    return r.big(bigBlind * 5n, bigBlind * 300n);
  };
  const players = seats.map((seat, i) => ({
    seat, playerId: `p${seat}`, stack: stack(), sittingOut: i >= count, // one extra seat may be sitting out
  }));
  const dealt = players.filter((p) => !p.sittingOut).map((p) => p.seat);
  const rake: RakeRule = {
    percent: r.pick([0, 2.5, 5, 10, 100]), cap: r.pick([0n, 3n, 50n, 10_000n]), minPot: r.pick([0n, 10n, 200n]), requiresFlop: r.next() < 0.5,
  };
  const base = {
    handId: `hand-${hand}`, seats: players, button: r.int(0, 8), smallBlind, bigBlind,
    ante: r.next() < 0.5 ? 0n : r.big(1n, bigBlind), deck: shuffledDeck(`property-${hand}`), rake,
  };
  if (r.next() < 0.7 || dealt.length < 3) return base;
  // Explicit positions, sometimes with a dead small blind.
  const bigBlindSeat = r.pick(dealt);
  const others = dealt.filter((s) => s !== bigBlindSeat);
  return { ...base, bigBlindSeat, smallBlindSeat: r.next() < 0.3 ? null : r.pick(others) };
}

/** An action that must be refused, with the code it must get. */
function illegalAttempt(r: Random, h: HandState): { seat: number; action: Action; seq?: number; code: RefusalCode } {
  const legal = legalActions(h)!;
  const other = h.players.find((p) => p.seat !== legal.seat)!.seat;
  const choices: (() => { seat: number; action: Action; seq?: number; code: RefusalCode } | null)[] = [
    () => ({ seat: r.pick([other, 42]), action: { type: 'call' }, code: 'not_your_turn' }),
    () => ({ seat: legal.seat, action: { type: 'check' }, seq: h.seq + r.pick([-1, 1, 100]), code: 'stale_sequence' }),
    () => {
      const illegal = (['fold', 'check', 'call', 'bet', 'raise'] as ActionType[]).filter((t) => !legal.actions.includes(t));
      return { seat: legal.seat, action: { type: r.pick(illegal), amount: legal.maxRaiseTo ?? 1n }, code: 'illegal_action' };
    },
    () => {
      const aggressive = legal.actions.find((t) => t === 'bet' || t === 'raise');
      if (!aggressive) return null;
      const amount = r.pick([legal.minRaiseTo! - 1n, legal.maxRaiseTo! + 1n, 0n, undefined]);
      return { seat: legal.seat, action: { type: aggressive, ...(amount === undefined ? {} : { amount }) }, code: 'illegal_amount' };
    },
  ];
  for (;;) {
    const attempt = r.pick(choices)();
    if (attempt) return attempt;
  }
}

function legalChoice(r: Random, h: HandState): Action {
  const legal = legalActions(h)!;
  const type = r.pick(legal.actions);
  if (type !== 'bet' && type !== 'raise') return { type };
  const min = legal.minRaiseTo!;
  const max = legal.maxRaiseTo!;
  const amount = r.pick([min, max, max, min + (max - min) / 2n, r.big(min, max)]);
  return { type, amount };
}

/** Deep equality of a state with an earlier structuredClone of it (both clones: same realm under jest). */
const unchanged = (state: HandState, earlier: HandState) => isDeepStrictEqual(structuredClone(state), earlier);

/** Plain checks in the hot loop (jest's expect is too slow for a few hundred thousand of them). */
function ensure(condition: boolean, what: string, h: HandState): void {
  if (!condition) throw new Error(`${h.handId} at seq ${h.seq}: ${what}`);
}

function checkStep(before: HandState, after: HandState, total: bigint): void {
  ensure(chipsOnTable(after) === total, 'chips not conserved', after);
  ensure(after.seq === before.seq + 1, 'seq did not move by one', after);
  for (const p of after.players) ensure(p.stack >= 0n && p.bet >= 0n && p.committed >= 0n, `negative chips at seat ${p.seat}`, after);
  for (const pot of after.pots) ensure(pot.amount > 0n && pot.eligible.length > 0, 'an empty pot or one nobody can win', after);
  const legal = legalActions(after);
  if (after.status === 'complete') {
    ensure(legal === null && after.toAct === null, 'a finished hand offers actions', after);
    return;
  }
  ensure(legal !== null, 'a hand in play offers no action', after);
  const p = after.players.find((q) => q.seat === legal!.seat)!;
  ensure(!p.folded && p.stack > 0n, 'a folded or all-in player is to act', after);
  ensure(legal!.toCall <= p.stack, 'toCall above the stack', after);
  ensure(legal!.actions.includes('check') === (legal!.toCall === 0n), 'check offered with chips to call, or not offered without', after);
  if (legal!.minRaiseTo !== null) {
    ensure(legal!.minRaiseTo > after.currentBet || legal!.minRaiseTo === legal!.maxRaiseTo, 'minRaiseTo not above the bet', after);
    ensure(legal!.minRaiseTo <= legal!.maxRaiseTo!, 'minRaiseTo above maxRaiseTo', after);
    ensure(legal!.maxRaiseTo === p.bet + p.stack, 'maxRaiseTo is not all-in', after);
  }
}

function checkResult(h: HandState, input: StartHandInput, total: bigint): void {
  const result = h.result!;
  ensure(result.stacks.reduce((sum, s) => sum + s.stack, 0n) + result.rake === total, 'final stacks + rake differ from the start', h);
  const potTotal = result.pots.reduce((sum, p) => sum + p.amount, 0n);
  ensure(result.rake === rakeOf(potTotal, input.rake, result.board.length >= 3), 'rake is not the rule\'s', h);
  ensure(result.rake <= input.rake.cap, 'rake above the cap', h);
  ensure(result.pots.reduce((sum, p) => sum + p.rake, 0n) === result.rake, 'pot rakes do not add up', h);
  const live = h.players.filter((p) => !p.folded).map((p) => p.seat);
  ensure([...result.shown.map((s) => s.seat), ...result.mucked].sort().join() === [...live].sort().join(), 'shown + mucked is not the live players', h);
  ensure(!result.showdown || result.board.length === 5, 'a showdown without five board cards', h);

  const scores = new Map(h.players.map((p) => [p.seat, result.showdown ? referenceScore([...p.hole, ...h.board]) : 0]));
  for (const pot of result.pots) {
    const amounts = pot.winners.map((w) => w.amount);
    ensure(amounts.reduce((a, b) => a + b, 0n) === pot.amount - pot.rake, 'a pot paid more or less than it held', h);
    const spread = amounts.reduce((a, b) => (a > b ? a : b)) - amounts.reduce((a, b) => (a < b ? a : b));
    ensure(spread <= 1n, 'a split differs by more than the odd chip', h);
    const best = Math.max(...pot.eligible.map((s) => scores.get(s)!));
    const expected = result.showdown ? pot.eligible.filter((s) => scores.get(s) === best) : live;
    ensure(pot.winners.map((w) => w.seat).sort().join() === [...expected].sort().join(), 'a pot went to the wrong hand', h);
    if (result.showdown) ensure(pot.winners.every((w) => result.shown.some((s) => s.seat === w.seat)), 'a winner did not show', h);
  }
}

test('random hands: chips conserved at every step, refusals change nothing, pots go to the best hands, replays are identical', () => {
  const HANDS = 4000;
  let steps = 0;
  let refusals = 0;
  let showdowns = 0;
  let timeouts = 0;
  for (let hand = 0; hand < HANDS; hand++) {
    const r = generator(hand);
    const input = randomInput(r, hand);
    let h = startHand(input);
    const total = input.seats.filter((s) => !s.sittingOut).reduce((sum, s) => sum + s.stack, 0n);
    ensure(chipsOnTable(h) === total, 'chips not conserved by the deal', h);
    while (h.status !== 'complete') {
      const roll = r.next();
      if (roll < 0.15) {
        const attempt = illegalAttempt(r, h);
        const before = structuredClone(h);
        const answer = applyAction(h, attempt.seat, attempt.action, attempt.seq);
        if (!isRefusal(answer) || answer.error !== attempt.code) {
          throw new Error(`hand ${hand}: ${attempt.action.type} by seat ${attempt.seat} answered ${isRefusal(answer) ? answer.error : 'applied'}, not ${attempt.code}`);
        }
        ensure(unchanged(h, before), 'a refusal changed the state', h);
        refusals++;
        continue;
      }
      const before = roll < 0.2 ? structuredClone(h) : null;
      const next = roll < 0.25 ? timeout(h) : applyAction(h, h.toAct!, legalChoice(r, h), r.next() < 0.5 ? h.seq : undefined);
      if (isRefusal(next)) throw new Error(`hand ${hand}: a legal action was refused: ${next.error} ${next.message}`);
      if (before !== null) ensure(unchanged(h, before), 'applying an action changed the old state', h);
      if (roll >= 0.2 && roll < 0.25) timeouts++;
      checkStep(h, next, total);
      h = next;
      steps++;
    }
    checkResult(h, input, total);
    if (h.result!.showdown) showdowns++;
    const over = applyAction(h, h.players[0]!.seat, { type: 'check' });
    ensure(isRefusal(over) && over.error === 'hand_over', 'a finished hand took an action', h);

    const again = replay({ ...input, deck: shuffledDeck(`property-${hand}`) }, actionsOf(h.history));
    ensure(isDeepStrictEqual(structuredClone(again), structuredClone(h)), 'the replay differs', h);
  }
  // The mix really exercised what it claims to.
  expect(steps).toBeGreaterThan(HANDS * 3);
  expect(refusals).toBeGreaterThan(HANDS / 2);
  expect(showdowns).toBeGreaterThan(HANDS / 10);
  expect(timeouts).toBeGreaterThan(HANDS / 10);
});

/** Short stacks against the blinds, so that spots where nobody could answer a raise come up often. */
const shortStackedTable = fc.record({
  stacks: fc.array(fc.oneof(fc.bigInt(1n, 40n), fc.bigInt(1n, 2000n)), { minLength: 2, maxLength: 9 }),
  bigBlind: fc.bigInt(2n, 20n),
  ante: fc.oneof(fc.constant(0n), fc.bigInt(1n, 5n)),
  button: fc.nat(8),
  seed: fc.integer(),
});

/** Someone still in, other than the player to act, has chips beyond the street's bet. */
function someoneCanAnswer(h: HandState, seat: number): boolean {
  return h.players.some((p) => p.seat !== seat && !p.folded && p.bet + p.stack > h.currentBet);
}

test('random short-stacked hands: a bet or raise is legal only when another player still in has chips beyond the current bet', () => {
  let unanswerable = 0;
  let answerable = 0;
  fc.assert(fc.property(shortStackedTable, (t) => {
    const r = generator(t.seed);
    const seats = t.stacks.map((stack, seat) => ({ seat, playerId: `p${seat}`, stack }));
    let h = startHand({
      handId: `short-${t.seed}`, seats, button: t.button % seats.length, smallBlind: t.bigBlind / 2n, bigBlind: t.bigBlind,
      ante: t.ante, deck: shuffledDeck(`short-${t.seed}`), rake: { percent: 0, cap: 0n, minPot: 0n, requiresFlop: true },
    });
    while (h.status !== 'complete') {
      const legal = legalActions(h)!;
      const p = h.players.find((q) => q.seat === legal.seat)!;
      const aggressive = legal.actions.some((a) => a === 'bet' || a === 'raise');
      if (someoneCanAnswer(h, p.seat)) {
        if (aggressive) answerable++;
      } else {
        if (aggressive) throw new Error(`${h.handId} at seq ${h.seq}: seat ${p.seat} offered ${legal.actions.join('/')} that nobody can answer`);
        const type = h.currentBet === 0n ? 'bet' : 'raise';
        const answer = applyAction(h, p.seat, { type, amount: p.bet + p.stack });
        if (!isRefusal(answer) || answer.error !== 'illegal_action') throw new Error(`${h.handId} at seq ${h.seq}: an unanswerable ${type} was not refused`);
        if (p.stack > legal.toCall) unanswerable++;
      }
      const next = r.next() < 0.1 ? timeout(h) : applyAction(h, p.seat, legalChoice(r, h));
      if (isRefusal(next)) throw new Error(`${h.handId}: a legal action was refused: ${next.error}`);
      h = next;
    }
  }), { numRuns: 3000, seed: 10 });
  // Both kinds of spot came up often enough for the property to mean something.
  expect(unanswerable).toBeGreaterThan(100);
  expect(answerable).toBeGreaterThan(1000);
});
