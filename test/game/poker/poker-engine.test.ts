// The dealer, rule by rule (../shared/design/POKER-RULES.md): one scripted hand (or a few) per
// rule, with the pots, stacks and legal actions expected at the points that matter. Amounts for
// bet/raise are raise-to (the street total). Cards are dealt from stacked decks
// (helpers/poker-script.ts), so every showdown below is decided by the cards written in the test.
import { createHash } from 'node:crypto';
import { cardToString, parseCards } from '../../../server/game/poker/cards.ts';
import { randomDeck, sha256, shuffledDeck } from '../../../server/game/poker/deck.ts';
import {
  actionsOf, applyAction, chipsOnTable, isRefusal, legalActions, rakeOf, replay, startHand, timeout,
  type Action, type HandState, type RakeRule, type Refusal,
} from '../../../server/game/poker/engine.ts';
import { comeBack, endOfHand, nextHand, sitOut, type Positions, type TableSeat } from '../../../server/game/poker/table.ts';
import { referenceScore } from '../../helpers/poker-reference-eval.ts';
import { betsOf, deal, inputFor, play, snapshot, stacksOf, type Step } from '../../helpers/poker-script.ts';

/** The fields of legalActions a test states. */
function legal(h: HandState) {
  const l = legalActions(h);
  if (l === null) return null;
  return { seat: l.seat, actions: l.actions, toCall: l.toCall, minRaiseTo: l.minRaiseTo, maxRaiseTo: l.maxRaiseTo };
}

function refused(h: HandState, seat: number, action: Action, expectedSeq?: number): Refusal {
  const before = snapshot(h);
  const answer = applyAction(h, seat, action, expectedSeq);
  expect(snapshot(h)).toBe(before);
  if (!isRefusal(answer)) throw new Error(`expected a refusal for ${snapshot(action)}`);
  return answer;
}

const potsOf = (h: HandState) => h.pots.map((p) => ({ amount: p.amount, eligible: p.eligible }));
const seatsOf = (stacks: Record<number, bigint>): TableSeat[] =>
  Object.entries(stacks).map(([seat, stack]) => ({ seat: Number(seat), playerId: `p${seat}`, stack }));
const positions = (next: ReturnType<typeof nextHand>) =>
  next && { button: next.button, smallBlind: next.smallBlindSeat, bigBlind: next.bigBlindSeat, dealtIn: next.dealtIn };

describe('POKER-RULES', () => {
  test('1. heads-up: the button posts the small blind, acts first preflop and last after the flop; a table turning heads-up makes nobody post the big blind twice', () => {
    let h = deal({ stacks: { 3: 100n, 7: 100n }, button: 7 });
    expect([h.smallBlindSeat, h.bigBlindSeat]).toEqual([7, 3]);
    expect(betsOf(h)).toEqual({ 3: 2n, 7: 1n });
    expect(legal(h)).toEqual({ seat: 7, actions: ['fold', 'call', 'raise'], toCall: 1n, minRaiseTo: 4n, maxRaiseTo: 100n });
    h = play(h, [[7, 'call']]);
    expect(legal(h)).toEqual({ seat: 3, actions: ['check', 'raise'], toCall: 0n, minRaiseTo: 4n, maxRaiseTo: 100n });
    h = play(h, [[3, 'check']]);
    expect([h.street, h.toAct]).toEqual(['flop', 3]);
    h = play(h, [[3, 'check']]);
    expect(h.toAct).toBe(7);
    h = play(h, [[7, 'bet', 2n], [3, 'call']]);
    expect([h.street, h.toAct]).toEqual(['turn', 3]);

    // Three-handed, button 1, small blind 2, big blind 3; then one of them busts.
    const previous: Positions = { button: 1, smallBlindPosition: 2, bigBlind: 3 };
    expect(positions(nextHand(seatsOf({ 1: 50n, 3: 50n }), previous))) // the small blind busted
      .toEqual({ button: 3, smallBlind: 3, bigBlind: 1, dealtIn: [1, 3] });
    expect(positions(nextHand(seatsOf({ 1: 50n, 2: 50n }), previous))) // the big blind busted
      .toEqual({ button: 2, smallBlind: 2, bigBlind: 1, dealtIn: [1, 2] });
    expect(positions(nextHand(seatsOf({ 2: 50n, 3: 50n }), previous))) // the button busted
      .toEqual({ button: 3, smallBlind: 3, bigBlind: 2, dealtIn: [2, 3] });

    // Then heads-up the big blind alternates.
    let at = previous;
    const bigBlinds = [];
    for (let hand = 0; hand < 4; hand++) {
      const next = nextHand(seatsOf({ 1: 50n, 3: 50n }), at)!;
      expect(next.button).toBe(next.smallBlindSeat);
      bigBlinds.push(next.bigBlindSeat);
      at = next.positions;
    }
    expect(bigBlinds).toEqual([1, 3, 1, 3]);
  });

  test('2. moving button: the big blind always advances one seat, a busted small blind leaves a dead button, a busted big blind means no small blind', () => {
    let seats = seatsOf({ 1: 100n, 2: 100n, 3: 100n, 4: 100n, 5: 100n });
    let next = nextHand(seats, null, 1)!;
    expect(positions(next)).toEqual({ button: 1, smallBlind: 2, bigBlind: 3, dealtIn: [1, 2, 3, 4, 5] });
    next = nextHand(seats, next.positions)!;
    expect(positions(next)).toEqual({ button: 2, smallBlind: 3, bigBlind: 4, dealtIn: [1, 2, 3, 4, 5] });

    seats = seats.filter((s) => s.seat !== 3); // the small blind busts
    next = nextHand(seats, next.positions)!;
    expect(positions(next)).toEqual({ button: 3, smallBlind: 4, bigBlind: 5, dealtIn: [1, 2, 4, 5] }); // dead button on empty seat 3

    // The dead button still decides the order: preflop left of the big blind, after the flop left of seat 3.
    let h = deal({ stacks: { 1: 100n, 2: 100n, 4: 100n, 5: 100n }, button: 3, smallBlindSeat: 4, bigBlindSeat: 5 });
    expect(betsOf(h)).toEqual({ 1: 0n, 2: 0n, 4: 1n, 5: 2n });
    expect(h.toAct).toBe(1);
    h = play(h, [[1, 'call'], [2, 'call'], [4, 'call'], [5, 'check']]);
    expect([h.street, h.toAct]).toEqual(['flop', 4]);

    next = nextHand(seats, next.positions)!;
    expect(positions(next)).toEqual({ button: 4, smallBlind: 5, bigBlind: 1, dealtIn: [1, 2, 4, 5] });

    seats = seats.filter((s) => s.seat !== 1); // the big blind busts
    next = nextHand(seats, next.positions)!;
    expect(positions(next)).toEqual({ button: 5, smallBlind: null, bigBlind: 2, dealtIn: [2, 4, 5] });
    expect(next.positions.smallBlindPosition).toBe(1); // dead small blind

    h = startHand({ ...inputFor({ stacks: { 2: 100n, 4: 100n, 5: 100n }, button: 5 }), smallBlindSeat: null, bigBlindSeat: 2 });
    expect(betsOf(h)).toEqual({ 2: 2n, 4: 0n, 5: 0n });
    expect(legal(h)).toMatchObject({ seat: 4, toCall: 2n });
    h = play(h, [[4, 'call'], [5, 'call'], [2, 'check']]);
    expect(h.toAct).toBe(2);

    next = nextHand(seats, next.positions)!;
    expect(positions(next)).toEqual({ button: 1, smallBlind: 2, bigBlind: 4, dealtIn: [2, 4, 5] }); // dead button again, on seat 1
  });

  test('3. antes are dead money from every seated player before the blinds; a stack too short pays the ante first and is all-in', () => {
    let h = deal({
      stacks: { 1: 1000n, 2: 1000n, 3: 18n, 4: 3n }, button: 1, blinds: [10n, 20n], ante: 5n,
      holes: { 1: 'Qs Qd', 2: 'Js Jd', 3: 'Ks Kd', 4: 'As Ad' }, board: '2c 7h 9d 3s 4c',
    });
    expect(h.history.filter((e) => e.type === 'ante' || e.type === 'blind')).toEqual([
      { type: 'ante', seat: 2, amount: 5n, allIn: false },
      { type: 'ante', seat: 3, amount: 5n, allIn: false },
      { type: 'ante', seat: 4, amount: 3n, allIn: true },
      { type: 'ante', seat: 1, amount: 5n, allIn: false },
      { type: 'blind', seat: 2, blind: 'small', amount: 10n, allIn: false },
      { type: 'blind', seat: 3, blind: 'big', amount: 13n, allIn: true },
    ]);
    expect(stacksOf(h)).toEqual({ 1: 995n, 2: 985n, 3: 0n, 4: 0n });
    expect(potsOf(h)).toEqual([{ amount: 12n, eligible: [1, 2, 3, 4] }, { amount: 6n, eligible: [1, 2, 3] }]);
    // The ante does not count toward the call: the button owes the full big blind.
    expect(legal(h)).toEqual({ seat: 1, actions: ['fold', 'call', 'raise'], toCall: 20n, minRaiseTo: 40n, maxRaiseTo: 995n });
    h = play(h, [[1, 'call'], [2, 'call']]);
    expect(h.street).toBe('flop');
    expect(potsOf(h)).toEqual([
      { amount: 12n, eligible: [1, 2, 3, 4] },
      { amount: 45n, eligible: [1, 2, 3] },
      { amount: 14n, eligible: [1, 2] },
    ]);
    h = play(h, [[2, 'check'], [1, 'check'], [2, 'check'], [1, 'check'], [2, 'check'], [1, 'check']]);
    expect(h.result!.pots.map((p) => p.winners)).toEqual([[{ seat: 4, amount: 12n }], [{ seat: 3, amount: 45n }], [{ seat: 1, amount: 14n }]]);
    expect(stacksOf(h)).toEqual({ 1: 989n, 2: 975n, 3: 45n, 4: 12n });
  });

  test('4. a short all-in big blind: the others still call the full big blind and the minimum raise is measured from it', () => {
    const table = {
      stacks: { 1: 1000n, 2: 1000n, 3: 60n, 4: 1000n }, button: 1, blinds: [50n, 100n] as [bigint, bigint],
      holes: { 2: 'Qs Qh', 3: 'As Ah', 4: 'Ks Kh' }, board: '2c 7d 9h 3s 4d',
    };
    let h = deal(table);
    expect(betsOf(h)).toEqual({ 1: 0n, 2: 50n, 3: 60n, 4: 0n });
    expect(h.currentBet).toBe(100n);
    expect(legal(h)).toEqual({ seat: 4, actions: ['fold', 'call', 'raise'], toCall: 100n, minRaiseTo: 200n, maxRaiseTo: 1000n });
    expect(refused(h, 4, { type: 'raise', amount: 160n }).error).toBe('illegal_amount'); // a raise of 100 over the short 60 is not enough
    h = play(h, [[4, 'raise', 200n]]);
    expect(legal(h)).toEqual({ seat: 1, actions: ['fold', 'call', 'raise'], toCall: 200n, minRaiseTo: 300n, maxRaiseTo: 1000n });
    h = play(h, [[1, 'fold']]);
    expect(legal(h)).toEqual({ seat: 2, actions: ['fold', 'call', 'raise'], toCall: 150n, minRaiseTo: 300n, maxRaiseTo: 1000n });
    h = play(h, [[2, 'call']]);
    expect(potsOf(h)).toEqual([{ amount: 180n, eligible: [2, 3, 4] }, { amount: 280n, eligible: [2, 4] }]);
    h = play(h, [[2, 'check'], [4, 'check'], [2, 'check'], [4, 'check'], [2, 'check'], [4, 'check']]);
    expect(stacksOf(h)).toEqual({ 1: 1000n, 2: 800n, 3: 180n, 4: 1080n });

    // Limping in also costs the full big blind, not the 60 the big blind could post.
    h = play(deal(table), [[4, 'call']]);
    expect(betsOf(h)[4]).toBe(100n);
  });

  test('5. order: preflop starts left of the big blind, who has the option; after the flop the first live seat left of the button', () => {
    const table = { stacks: { 1: 100n, 2: 100n, 3: 100n, 4: 100n, 5: 100n, 6: 100n }, button: 6 };
    let h = deal(table);
    const order: (number | null)[] = [];
    for (const seat of [3, 4, 5, 6, 1]) {
      order.push(h.toAct);
      h = play(h, [[seat, 'call']]);
    }
    expect(order).toEqual([3, 4, 5, 6, 1]);
    expect(legal(h)).toEqual({ seat: 2, actions: ['check', 'raise'], toCall: 0n, minRaiseTo: 4n, maxRaiseTo: 100n });
    h = play(h, [[2, 'check']]);
    expect([h.street, h.toAct]).toEqual(['flop', 1]);

    // With the small blind folded, the big blind opens the flop.
    h = play(deal(table), [[3, 'call'], [4, 'call'], [5, 'call'], [6, 'call'], [1, 'fold'], [2, 'check']]);
    expect([h.street, h.toAct]).toEqual(['flop', 2]);
    h = play(h, [[2, 'check'], [3, 'bet', 2n], [4, 'fold'], [5, 'call'], [6, 'call']]);
    expect(h.toAct).toBe(2); // the bet comes back round to the big blind
  });

  test('6. minimum raise-to = current bet + max(last full raise, big blind); all-in for less is always allowed', () => {
    let h = deal({ stacks: { 1: 1000n, 2: 20n, 3: 1000n, 4: 1000n }, button: 1 });
    expect(legal(h)).toMatchObject({ seat: 4, minRaiseTo: 4n });
    h = play(h, [[4, 'raise', 6n]]); // a raise of 4
    expect(legal(h)).toMatchObject({ seat: 1, toCall: 6n, minRaiseTo: 10n });
    h = play(h, [[1, 'raise', 15n]]); // a raise of 9
    // The small blind has 19 behind: a full raise (to 24) is out of reach, all-in to 20 is allowed.
    expect(legal(h)).toEqual({ seat: 2, actions: ['fold', 'call', 'raise'], toCall: 14n, minRaiseTo: 20n, maxRaiseTo: 20n });
    expect(refused(h, 2, { type: 'raise', amount: 19n }).error).toBe('illegal_amount');
    expect(refused(h, 2, { type: 'raise', amount: 24n }).error).toBe('illegal_amount');
    h = play(h, [[2, 'raise', 20n]]); // all-in, 5 over: not a full raise, the raise size stays 9
    expect(legal(h)).toEqual({ seat: 3, actions: ['fold', 'call', 'raise'], toCall: 18n, minRaiseTo: 29n, maxRaiseTo: 1000n });
    h = play(h, [[3, 'call'], [4, 'call'], [1, 'call']]);
    expect(h.street).toBe('flop');
    // After the flop the minimum bet is the big blind, then the bet size sets the raise.
    expect(legal(h)).toEqual({ seat: 3, actions: ['check', 'bet'], toCall: 0n, minRaiseTo: 2n, maxRaiseTo: 980n });
    expect(refused(h, 3, { type: 'bet', amount: 1n }).error).toBe('illegal_amount');
    h = play(h, [[3, 'bet', 10n]]);
    expect(legal(h)).toMatchObject({ seat: 4, toCall: 10n, minRaiseTo: 20n });
    h = play(h, [[4, 'raise', 30n]]);
    expect(legal(h)).toMatchObject({ seat: 1, toCall: 30n, minRaiseTo: 50n, maxRaiseTo: 980n });
  });

  test('7. an all-in short of a full raise does not reopen the betting for players who acted; several short all-ins adding up to a full raise do', () => {
    const table = { stacks: { 1: 1000n, 2: 225n, 3: 1000n, 4: 300n, 5: 1000n }, button: 5, blinds: [50n, 100n] as [bigint, bigint] };
    const limpedToTheFlop = () => play(deal(table), [[3, 'call'], [4, 'call'], [5, 'call'], [1, 'call'], [2, 'check']]);

    // TDA 47, example 1: A bets 100, B all-in 125, C calls, D all-in 200, E calls: 100 more in all reopens for A.
    let h = play(limpedToTheFlop(), [[1, 'bet', 100n]]);
    expect(legal(h)).toEqual({ seat: 2, actions: ['fold', 'call', 'raise'], toCall: 100n, minRaiseTo: 125n, maxRaiseTo: 125n });
    h = play(h, [[2, 'raise', 125n], [3, 'call'], [4, 'raise', 200n], [5, 'call']]);
    expect(h.currentBet).toBe(200n);
    expect(legal(h)).toEqual({ seat: 1, actions: ['fold', 'call', 'raise'], toCall: 100n, minRaiseTo: 300n, maxRaiseTo: 1000n - 100n });
    h = play(h, [[1, 'call']]);
    // C acted at 125 and faces only 75 more: call or fold.
    expect(legal(h)).toEqual({ seat: 3, actions: ['fold', 'call'], toCall: 75n, minRaiseTo: null, maxRaiseTo: null });
    expect(refused(h, 3, { type: 'raise', amount: 300n }).error).toBe('illegal_action');
    h = play(h, [[3, 'call']]);
    expect(h.street).toBe('turn');

    // One short all-in: those who acted may only call; those yet to act may raise, by a full raise.
    h = play(limpedToTheFlop(), [[1, 'bet', 100n], [2, 'raise', 125n]]);
    expect(legal(h)).toEqual({ seat: 3, actions: ['fold', 'call', 'raise'], toCall: 125n, minRaiseTo: 225n, maxRaiseTo: 900n });
    h = play(h, [[3, 'call'], [4, 'call'], [5, 'call']]);
    expect(legal(h)).toEqual({ seat: 1, actions: ['fold', 'call'], toCall: 25n, minRaiseTo: null, maxRaiseTo: null });

    // An all-in bet below the big blind is not a full bet either: the player who checked may only call.
    h = play(deal({ stacks: { 1: 1000n, 2: 1000n, 3: 16n }, button: 1, blinds: [5n, 10n] }), [[1, 'call'], [2, 'call'], [3, 'check']]);
    h = play(h, [[2, 'check']]);
    expect(legal(h)).toEqual({ seat: 3, actions: ['check', 'bet'], toCall: 0n, minRaiseTo: 6n, maxRaiseTo: 6n });
    h = play(h, [[3, 'bet', 6n]]);
    expect(legal(h)).toEqual({ seat: 1, actions: ['fold', 'call', 'raise'], toCall: 6n, minRaiseTo: 16n, maxRaiseTo: 990n });
    h = play(h, [[1, 'call']]);
    expect(legal(h)).toEqual({ seat: 2, actions: ['fold', 'call'], toCall: 6n, minRaiseTo: null, maxRaiseTo: null });
  });

  test('8. when no opponent has chips behind, a player may only call or fold', () => {
    let h = deal({ stacks: { 1: 300n, 2: 1000n }, button: 1 });
    h = play(h, [[1, 'raise', 300n]]);
    expect(legal(h)).toEqual({ seat: 2, actions: ['fold', 'call'], toCall: 298n, minRaiseTo: null, maxRaiseTo: null });
    expect(refused(h, 2, { type: 'raise', amount: 1000n }).error).toBe('illegal_action');

    // Three-handed, one opponent all-in and one with chips: raising is still allowed.
    h = deal({ stacks: { 1: 1000n, 2: 300n, 3: 1000n }, button: 1 });
    h = play(h, [[1, 'raise', 10n], [2, 'raise', 300n]]);
    expect(legal(h)).toEqual({ seat: 3, actions: ['fold', 'call', 'raise'], toCall: 298n, minRaiseTo: 590n, maxRaiseTo: 1000n });
    h = play(h, [[3, 'raise', 1000n]]);
    // Now the only opponent with chips is all-in: the button can call or fold, nothing more.
    expect(legal(h)).toEqual({ seat: 1, actions: ['fold', 'call'], toCall: 990n, minRaiseTo: null, maxRaiseTo: null });
  });

  test('9. uncalled bets go back to their owner before the pots are formed and before rake', () => {
    const rake: RakeRule = { percent: 10, cap: 1000n, minPot: 0n, requiresFlop: false };
    let h = deal({ stacks: { 1: 1000n, 2: 1000n }, button: 1, blinds: [50n, 100n], rake });
    h = play(h, [[1, 'raise', 600n], [2, 'fold']]);
    expect(h.result!.uncalled).toEqual([{ seat: 1, amount: 500n }]);
    expect(h.result!.pots).toEqual([{ amount: 200n, rake: 20n, eligible: [1], winners: [{ seat: 1, amount: 180n }] }]);
    expect(stacksOf(h)).toEqual({ 1: 1080n, 2: 900n });
    const kinds = h.history.map((e) => e.type);
    expect(kinds.indexOf('uncalled_bet_returned')).toBeLessThan(kinds.indexOf('pot_awarded'));

    // A river bet called all-in for less: the part nobody could call goes back.
    h = deal({
      stacks: { 1: 1000n, 2: 300n }, button: 1, rake,
      holes: { 1: '7c 2d', 2: 'Ah Kd' }, board: 'Qs 9h 5c 4d Jc',
    });
    h = play(h, [[1, 'call'], [2, 'check'], [2, 'check'], [1, 'check'], [2, 'check'], [1, 'check'], [2, 'check'], [1, 'bet', 500n]]);
    expect(legal(h)).toEqual({ seat: 2, actions: ['fold', 'call'], toCall: 298n, minRaiseTo: null, maxRaiseTo: null });
    h = play(h, [[2, 'call']]);
    expect(h.result!.uncalled).toEqual([{ seat: 1, amount: 202n }]);
    expect(h.result!.pots).toEqual([{ amount: 600n, rake: 60n, eligible: [1, 2], winners: [{ seat: 2, amount: 540n }] }]);
    expect(stacksOf(h)).toEqual({ 1: 700n, 2: 540n });

    // Dead money nobody still in the hand matched goes back too (found by the property test): the
    // big blind is all-in on a 1-chip ante, and both players with chips fold.
    h = deal({
      stacks: { 1: 1000n, 2: 1000n, 3: 1n }, button: 3, smallBlindSeat: 1, bigBlindSeat: 3, blinds: [13n, 18n], ante: 18n,
    });
    h = play(h, [[1, 'fold']]);
    expect(legal(h)).toEqual({ seat: 2, actions: ['fold', 'call'], toCall: 13n, minRaiseTo: null, maxRaiseTo: null });
    h = play(h, [[2, 'fold']]);
    expect(h.result!.uncalled).toEqual([{ seat: 1, amount: 13n }, { seat: 1, amount: 17n }, { seat: 2, amount: 17n }]);
    expect(h.result!.pots).toEqual([{ amount: 3n, rake: 0n, eligible: [3], winners: [{ seat: 3, amount: 3n }] }]);
    expect(stacksOf(h)).toEqual({ 1: 999n, 2: 999n, 3: 3n });
  });

  test('10. side pots are layered by contribution; folded chips stay in, folded players win nothing; each pot is awarded on its own', () => {
    let h = deal({
      stacks: { 1: 1000n, 2: 100n, 3: 250n, 4: 500n, 5: 1000n }, button: 1, blinds: [5n, 10n],
      holes: { 1: '9s 9c', 2: 'As Ac', 3: 'Ks Kc', 4: 'Js Jc', 5: 'Qs Qc' }, board: '2c 7d 9h 3s 4d',
    });
    h = play(h, [[4, 'raise', 500n], [5, 'call'], [1, 'call'], [2, 'call'], [3, 'call']]);
    expect(potsOf(h)).toEqual([
      { amount: 500n, eligible: [1, 2, 3, 4, 5] },
      { amount: 600n, eligible: [1, 3, 4, 5] },
      { amount: 750n, eligible: [1, 4, 5] },
    ]);
    expect(h.toAct).toBe(5);
    h = play(h, [[5, 'bet', 200n], [1, 'fold']]); // seat 1 (the best hand) folds: its 500 stays in
    expect(h.result!.uncalled).toEqual([{ seat: 5, amount: 200n }]);
    expect(h.result!.pots.map((p) => ({ amount: p.amount, eligible: p.eligible, winners: p.winners }))).toEqual([
      { amount: 500n, eligible: [2, 3, 4, 5], winners: [{ seat: 2, amount: 500n }] },
      { amount: 600n, eligible: [3, 4, 5], winners: [{ seat: 3, amount: 600n }] },
      { amount: 750n, eligible: [4, 5], winners: [{ seat: 5, amount: 750n }] },
    ]);
    expect(stacksOf(h)).toEqual({ 1: 500n, 2: 500n, 3: 600n, 4: 0n, 5: 1250n });
  });

  test('11. when at most one player can still act, the remaining streets are dealt out and the hands shown', () => {
    let h = deal({ stacks: { 1: 500n, 2: 500n }, button: 1, holes: { 1: 'Ah Ad', 2: 'Kc Kd' }, board: 'Ac Ks 7h 7d 2s' });
    h = play(h, [[1, 'raise', 500n], [2, 'call']]);
    expect(h.status).toBe('complete');
    expect(h.board).toEqual(parseCards('Ac Ks 7h 7d 2s'));
    const afterLastAction = h.history.slice(h.history.findLastIndex((e) => e.type === 'action') + 1).map((e) => e.type);
    expect(afterLastAction).toEqual(['board', 'board', 'board', 'show', 'show', 'pot_awarded', 'hand_ended']);
    expect(h.result!.shown.map((s) => [s.seat, s.value.category, s.value.description])).toEqual([
      [1, 'full_house', expect.stringMatching(/aces/i)], // the last aggressor first
      [2, 'full_house', expect.stringMatching(/kings/i)],
    ]);
    expect(h.result!.shown.find((s) => s.seat === 1)!.value.best).toHaveLength(5);
    expect(stacksOf(h)).toEqual({ 1: 1000n, 2: 0n });

    // Three-handed: one all-in, one folds, the caller has chips but nobody left to bet against.
    h = deal({ stacks: { 1: 1000n, 2: 100n, 3: 1000n }, button: 1 });
    h = play(h, [[1, 'fold'], [2, 'raise', 100n], [3, 'call']]);
    expect([h.status, h.board.length, h.result!.showdown, h.result!.shown.length]).toEqual(['complete', 5, true, 2]);
  });

  test('12. ties split each pot; the odd chip goes to the first winner clockwise from the button', () => {
    // The board is a royal flush: everyone still in ties. Pot 25 = 10 + 10 + the folded small blind's 5.
    let h = deal({ stacks: { 1: 1000n, 2: 1000n, 3: 1000n }, button: 1, blinds: [5n, 10n], board: 'As Ks Qs Js Ts' });
    h = play(h, [[1, 'call'], [2, 'fold'], [3, 'check'], [3, 'check'], [1, 'check'], [3, 'check'], [1, 'check'], [3, 'check'], [1, 'check']]);
    expect(h.result!.pots[0]!.winners).toEqual([{ seat: 3, amount: 13n }, { seat: 1, amount: 12n }]);
    expect(h.result!.shown.map((s) => s.seat)).toEqual([3, 1]); // a tie shows, to claim its share
    expect(stacksOf(h)).toEqual({ 1: 1002n, 2: 995n, 3: 1003n });

    // Three winners, pot 35: 11 each and two odd chips, to seats 2 and 3 (first clockwise from button 4).
    h = deal({ stacks: { 1: 1000n, 2: 1000n, 3: 1000n, 4: 1000n }, button: 4, blinds: [5n, 10n], board: 'As Ks Qs Js Ts' });
    h = play(h, [[3, 'call'], [4, 'call'], [1, 'fold'], [2, 'check']]);
    for (let i = 0; i < 3; i++) h = play(h, [[2, 'check'], [3, 'check'], [4, 'check']]);
    expect(h.result!.pots[0]!.winners).toEqual([{ seat: 2, amount: 12n }, { seat: 3, amount: 12n }, { seat: 4, amount: 11n }]);
  });

  test('13. rake rounds down, needs rakeMinPot, needs a flop when rakeRequiresFlop, is capped at rakeCap; it is recorded, not paid to anyone', () => {
    const rule = (over: Partial<RakeRule>): RakeRule => ({ percent: 5, cap: 100n, minPot: 0n, requiresFlop: true, ...over });
    expect(rakeOf(230n, rule({}), true)).toBe(11n); // 11.5 rounds down
    expect(rakeOf(19n, rule({}), true)).toBe(0n);
    expect(rakeOf(499n, rule({ minPot: 500n }), true)).toBe(0n);
    expect(rakeOf(500n, rule({ minPot: 500n }), true)).toBe(25n);
    expect(rakeOf(500n, rule({}), false)).toBe(0n);
    expect(rakeOf(500n, rule({ requiresFlop: false }), false)).toBe(25n);
    expect(rakeOf(10_000n, rule({}), true)).toBe(100n);
    expect(rakeOf(1000n, rule({ percent: 2.5 }), true)).toBe(25n);
    expect(rakeOf(999n, rule({ percent: 2.5 }), true)).toBe(24n);
    expect(rakeOf(1000n, rule({ percent: 0.1 }), true)).toBe(1n);
    expect(rakeOf(1000n, rule({ percent: 100, cap: 10_000n }), true)).toBe(1000n);
    expect(rakeOf(1000n, rule({ cap: 0n }), true)).toBe(0n);

    // No flop, no drop.
    let h = deal({ stacks: { 1: 1000n, 2: 1000n }, button: 1, blinds: [50n, 100n], rake: rule({}) });
    h = play(h, [[1, 'raise', 300n], [2, 'call'], [2, 'bet', 100n], [1, 'fold']]);
    expect(h.result!.rake).toBe(5n * 600n / 100n); // the flop was dealt: 5 % of 600 (the uncalled 100 went back)
    h = play(deal({ stacks: { 1: 1000n, 2: 1000n }, button: 1, blinds: [50n, 100n], rake: rule({}) }), [[1, 'raise', 300n], [2, 'fold']]);
    expect(h.result!.rake).toBe(0n);

    // Rake over side pots: 5 % of 1850 = 92 (92.5 down), shared pro rata and the leftover chips from the main pot on.
    h = deal({
      stacks: { 1: 1000n, 2: 100n, 3: 250n, 4: 500n, 5: 1000n }, button: 1, blinds: [5n, 10n], rake: rule({ cap: 1000n }),
      holes: { 2: 'As Ac', 3: 'Ks Kc', 4: 'Js Jc', 5: 'Qs Qc' }, board: '2c 7d 9h 3s 4d',
    });
    const before = chipsOnTable(h);
    h = play(h, [[4, 'raise', 500n], [5, 'call'], [1, 'call'], [2, 'call'], [3, 'call'], [5, 'bet', 200n], [1, 'fold']]);
    expect(h.result!.rake).toBe(92n);
    expect(h.result!.pots.map((p) => [p.amount, p.rake, p.winners[0]!.amount])).toEqual([[500n, 25n, 475n], [600n, 30n, 570n], [750n, 37n, 713n]]);
    const stacks = Object.values(stacksOf(h)).reduce((a, b) => a + b, 0n);
    expect(stacks + h.rake).toBe(before);
    expect(h.history.at(-1)).toMatchObject({ type: 'hand_ended', rake: 92n });
  });

  test('14. the timer checks when checking is free, else folds; an invalid action is refused with a code, changes nothing, and the timer keeps running', () => {
    let h = deal({ stacks: { 1: 100n, 2: 100n, 3: 100n }, button: 1 });
    expect(h.toAct).toBe(1);
    expect(refused(h, 2, { type: 'call' }).error).toBe('not_your_turn');
    expect(refused(h, 1, { type: 'check' }).error).toBe('illegal_action');
    expect(refused(h, 1, { type: 'bet', amount: 10n }).error).toBe('illegal_action'); // preflop there is a bet: raise
    expect(refused(h, 1, { type: 'allin' as never }).error).toBe('illegal_action');
    expect(refused(h, 1, { type: 'raise' }).error).toBe('illegal_amount');
    expect(refused(h, 1, { type: 'raise', amount: 10 as never }).error).toBe('illegal_amount');
    expect(refused(h, 1, { type: 'raise', amount: 3n }).error).toBe('illegal_amount');
    expect(refused(h, 1, { type: 'raise', amount: 101n }).error).toBe('illegal_amount');
    expect(refused(h, 1, { type: 'call' }, 7).error).toBe('stale_sequence');
    // After all those refusals the same player is still to act at the same seq: the timer runs on.
    expect([h.toAct, h.seq]).toEqual([1, 0]);
    h = timeout(h) as HandState; // facing the big blind: fold
    expect(h.history.at(-1)).toMatchObject({ type: 'action', seat: 1, action: 'fold', timeout: true, seq: 0 });
    expect(h.seq).toBe(1);

    h = play(h, [[2, 'call']]);
    expect(refused(h, 3, { type: 'fold' }).error).toBe('illegal_action'); // checking is free: no fold
    h = timeout(h) as HandState; // the big blind's option: check
    expect(h.history.findLast((e) => e.type === 'action')).toMatchObject({ type: 'action', seat: 3, action: 'check', timeout: true });
    expect(h.street).toBe('flop');

    // A resent action (same seq) is not applied twice.
    const seq = h.seq;
    h = applyAction(h, 2, { type: 'bet', amount: 4n }, seq) as HandState;
    expect(refused(h, 2, { type: 'bet', amount: 4n }, seq).error).toBe('stale_sequence');
    h = play(h, [[3, 'fold']]);
    expect(refused(h, 2, { type: 'check' }).error).toBe('hand_over');
    expect((timeout(h) as Refusal).error).toBe('hand_over');
    expect(legalActions(h)).toBeNull();
  });

  test('15. chips are conserved after every step: stacks + bets + pots + rake stay constant', () => {
    const rake: RakeRule = { percent: 7.5, cap: 40n, minPot: 20n, requiresFlop: true };
    let h = deal({ stacks: { 1: 333n, 2: 41n, 3: 1000n, 4: 7n, 5: 250n }, button: 5, blinds: [2n, 5n], ante: 1n, rake });
    const total = 333n + 41n + 1000n + 7n + 250n;
    expect(chipsOnTable(h)).toBe(total);
    const steps: Step[] = [
      [3, 'raise', 15n], [4, 'call'], [5, 'raise', 40n], [1, 'call'], [2, 'call'], [3, 'call'],
      [1, 'check'], [3, 'check'], [5, 'bet', 60n], [1, 'raise', 200n], [3, 'call'], [5, 'call'],
      [1, 'bet', 92n], [3, 'call'], [5, 'call'], // seat 1 and seat 5 all-in: the river is dealt out
    ];
    for (const step of steps) {
      h = play(h, [step]);
      expect(chipsOnTable(h)).toBe(total);
      expect(h.players.every((p) => p.stack >= 0n && p.bet >= 0n)).toBe(true);
    }
    expect(h.status).toBe('complete');
    expect(h.result!.rake).toBe(40n);
    expect(h.result!.stacks.reduce((sum, s) => sum + s.stack, 0n) + h.result!.rake).toBe(total);
    expect(h.result!.stacks.reduce((sum, s) => sum + s.net, 0n)).toBe(-40n);
  });

  test('16. the same seed and the same actions replay to an identical hand history (seeded PRNG, Fisher–Yates)', () => {
    expect(shuffledDeck('table-7/hand-42')).toEqual(shuffledDeck('table-7/hand-42'));
    expect(shuffledDeck('table-7/hand-42')).not.toEqual(shuffledDeck('table-7/hand-43'));
    expect([...shuffledDeck('any')].sort((a, b) => a - b)).toEqual(Array.from({ length: 52 }, (_, i) => i));
    expect(shuffledDeck('abc').slice(0, 8)).toEqual([29, 11, 4, 47, 28, 20, 35, 38]); // pinned: a change would break old replays
    const entropy = new Uint8Array(32).map((_, i) => i * 7);
    expect(randomDeck(entropy)).toEqual(randomDeck(Uint8Array.from(entropy)));
    expect(() => randomDeck(new Uint8Array(16))).toThrow(RangeError);

    const input = { ...inputFor({ stacks: { 1: 200n, 2: 200n, 3: 200n }, button: 2, ante: 1n }), deck: shuffledDeck('table-7/hand-42') };
    const steps: Step[] = [
      [2, 'raise', 8n], [3, 'call'], [1, 'call'], [3, 'check'], [1, 'bet', 20n], [2, 'fold'], [3, 'call'], ['timeout'], ['timeout'],
      [3, 'check'], [1, 'check'],
    ];
    const first = play(startHand(input), steps);
    const second = play(startHand({ ...input, deck: shuffledDeck('table-7/hand-42') }), steps);
    expect(second.history).toEqual(first.history);
    expect(snapshot(second)).toBe(snapshot(first));
    expect(snapshot(replay(input, actionsOf(first.history)).history)).toBe(snapshot(first.history));
    expect(first.status).toBe('complete');
    expect(actionsOf(first.history).filter((a) => a.timeout)).toHaveLength(2);
  });

  test('17. busts are found at the end of the hand; a new blind level applies from the next hand', () => {
    const seats = seatsOf({ 1: 500n, 2: 500n, 3: 120n });
    const first = nextHand(seats, null, 1)!;
    let h = startHand({
      ...inputFor({ stacks: { 1: 500n, 2: 500n, 3: 120n }, button: 1, holes: { 1: 'As Ad', 3: 'Kc Kd' }, board: '2c 7d 9h 3s 4d' }),
      seats: first.seats, button: first.button, smallBlindSeat: first.smallBlindSeat, bigBlindSeat: first.bigBlindSeat,
    });
    h = play(h, [[1, 'raise', 120n], [2, 'fold'], [3, 'call']]);
    // The level went up during the hand (the tournament's timer): the hand kept the blinds it started with.
    expect([h.smallBlind, h.bigBlind]).toEqual([1n, 2n]);
    const after = endOfHand(seats, h.result!);
    expect(after.busted.map((s) => s.seat)).toEqual([3]);
    expect(after.seats.map((s) => [s.seat, s.stack])).toEqual([[1, 621n], [2, 499n]]);

    const next = nextHand(after.seats, first.positions)!;
    expect(positions(next)).toEqual({ button: 2, smallBlind: 2, bigBlind: 1, dealtIn: [1, 2] });
    const second = startHand({
      ...inputFor({ stacks: { 1: 621n, 2: 499n }, button: 2, blinds: [10n, 20n] }),
      seats: next.seats, button: next.button, smallBlindSeat: next.smallBlindSeat, bigBlindSeat: next.bigBlindSeat,
    });
    expect(betsOf(second)).toEqual({ 1: 20n, 2: 10n });
    expect(legal(second)).toMatchObject({ seat: 2, toCall: 10n, minRaiseTo: 40n });
  });
});

describe('no bet or raise that nobody can answer (docs/dealer.md, "Nobody to raise against")', () => {
  const raiseRefused = (h: HandState, seat: number, amount: bigint) =>
    expect(refused(h, seat, { type: 'raise', amount })).toEqual({ error: 'illegal_action', message: expect.any(String) });

  test('heads-up, the opponent all-in for less than or exactly the bet to call: call or fold only', () => {
    // The big blind is all-in for 7 of a 10 big blind: the small blind calls up to 7, no raise.
    let h = deal({ stacks: { 1: 1000n, 2: 7n }, button: 1, blinds: [5n, 10n] });
    expect(legal(h)).toEqual({ seat: 1, actions: ['fold', 'call'], toCall: 2n, minRaiseTo: null, maxRaiseTo: null });
    raiseRefused(h, 1, 20n);
    // All-in for exactly the big blind.
    h = deal({ stacks: { 1: 1000n, 2: 10n }, button: 1, blinds: [5n, 10n] });
    expect(legal(h)).toEqual({ seat: 1, actions: ['fold', 'call'], toCall: 5n, minRaiseTo: null, maxRaiseTo: null });
    raiseRefused(h, 1, 1000n);
    h = play(h, [[1, 'call']]);
    expect(h.status).toBe('complete');
  });

  test('multiway, every other player still in is all-in: call or fold only', () => {
    let h = deal({ stacks: { 1: 1000n, 2: 200n, 3: 1000n, 4: 150n }, button: 1, blinds: [5n, 10n] });
    h = play(h, [[4, 'raise', 150n], [1, 'fold'], [2, 'raise', 200n]]);
    expect(legal(h)).toEqual({ seat: 3, actions: ['fold', 'call'], toCall: 190n, minRaiseTo: null, maxRaiseTo: null });
    raiseRefused(h, 3, 1000n);
  });

  test('an opponent whose chips exactly match the bet to call cannot answer a raise: call or fold only', () => {
    // The button is all-in for 1000; the big blind has 900 behind its 100, exactly the 1000 to call.
    let h = deal({ stacks: { 1: 1000n, 2: 5000n, 3: 1000n }, button: 1, blinds: [50n, 100n] });
    h = play(h, [[1, 'raise', 1000n]]);
    expect(legal(h)).toEqual({ seat: 2, actions: ['fold', 'call'], toCall: 950n, minRaiseTo: null, maxRaiseTo: null });
    raiseRefused(h, 2, 2000n);
    raiseRefused(h, 2, 5000n);
    h = play(h, [[2, 'call']]);
    expect(legal(h)).toEqual({ seat: 3, actions: ['fold', 'call'], toCall: 900n, minRaiseTo: null, maxRaiseTo: null });
    h = play(h, [[3, 'call']]);
    expect(h.result!.uncalled).toEqual([]);
  });

  test('an opponent with chips who cannot reach the bet is no one to raise against either', () => {
    // A short big blind (60 of 100) and a small blind with 90 in all: the button faces 100 that
    // nobody could raise beyond, so it may call or fold; the small blind then calls all-in.
    let h = deal({ stacks: { 1: 1000n, 2: 90n, 3: 60n }, button: 1, blinds: [50n, 100n] });
    expect(legal(h)).toEqual({ seat: 1, actions: ['fold', 'call'], toCall: 100n, minRaiseTo: null, maxRaiseTo: null });
    raiseRefused(h, 1, 200n);
    h = play(h, [[1, 'call']]);
    expect(legal(h)).toEqual({ seat: 2, actions: ['fold', 'call'], toCall: 40n, minRaiseTo: null, maxRaiseTo: null });
    h = play(h, [[2, 'call']]);
    expect(h.status).toBe('complete');
    expect(h.result!.uncalled).toEqual([{ seat: 1, amount: 10n }]);
  });

  test('a raise stays legal while some other player still in has chips beyond the bet', () => {
    // One chip more than the bet to call is enough to answer a raise.
    let h = deal({ stacks: { 1: 1000n, 2: 5000n, 3: 1001n }, button: 1, blinds: [50n, 100n] });
    h = play(h, [[1, 'raise', 1000n]]);
    expect(legal(h)).toEqual({ seat: 2, actions: ['fold', 'call', 'raise'], toCall: 950n, minRaiseTo: 1900n, maxRaiseTo: 5000n });
    h = play(h, [[2, 'raise', 1900n]]);
    expect(legal(h)).toEqual({ seat: 3, actions: ['fold', 'call'], toCall: 901n, minRaiseTo: null, maxRaiseTo: null });

    // After the flop an opponent with a single chip behind can still call a bet.
    h = play(deal({ stacks: { 1: 1000n, 2: 3n }, button: 1 }), [[1, 'call'], [2, 'check']]);
    expect(legal(h)).toEqual({ seat: 2, actions: ['check', 'bet'], toCall: 0n, minRaiseTo: 1n, maxRaiseTo: 1n });
    h = play(h, [[2, 'check']]);
    expect(legal(h)).toEqual({ seat: 1, actions: ['check', 'bet'], toCall: 0n, minRaiseTo: 2n, maxRaiseTo: 998n });
    h = play(h, [[1, 'bet', 2n]]);
    expect(legal(h)).toEqual({ seat: 2, actions: ['fold', 'call'], toCall: 1n, minRaiseTo: null, maxRaiseTo: null });

    // Multiway: one opponent all-in, another with chips behind: the raise is allowed.
    h = deal({ stacks: { 1: 1000n, 2: 5000n, 3: 2000n }, button: 1, blinds: [50n, 100n] });
    h = play(h, [[1, 'raise', 1000n]]);
    expect(legal(h)).toMatchObject({ seat: 2, actions: ['fold', 'call', 'raise'], minRaiseTo: 1900n, maxRaiseTo: 5000n });
  });
});

describe('showing and mucking (docs/dealer.md)', () => {
  test('checked down: the first left of the button shows first, a beaten hand is mucked; a called river bettor shows first', () => {
    const table = {
      stacks: { 1: 100n, 2: 100n, 3: 100n }, button: 1,
      holes: { 1: 'Ah Ad', 2: 'Kh Kd', 3: 'Qh Qc' }, board: '2c 7s 9h 3d 8c',
    };
    let h = play(deal(table), [[1, 'call'], [2, 'call'], [3, 'check']]);
    for (let street = 0; street < 3; street++) h = play(h, [[2, 'check'], [3, 'check'], [1, 'check']]);
    expect(h.result!.shown.map((s) => s.seat)).toEqual([2, 1]); // kings first, then aces beat them; queens muck
    expect(h.result!.mucked).toEqual([3]);
    expect(h.history.filter((e) => e.type === 'show' || e.type === 'muck').map((e) => [e.type, e.seat]))
      .toEqual([['show', 2], ['muck', 3], ['show', 1]]);

    h = play(deal({ ...table, holes: { 1: 'Jh Jd', 2: 'Kh Kd', 3: 'Qh Qc' } }), [[1, 'call'], [2, 'call'], [3, 'check']]);
    for (let street = 0; street < 2; street++) h = play(h, [[2, 'check'], [3, 'check'], [1, 'check']]);
    h = play(h, [[2, 'check'], [3, 'bet', 10n], [1, 'call'], [2, 'fold']]);
    expect(h.result!.shown.map((s) => s.seat)).toEqual([3]);
    expect(h.result!.mucked).toEqual([1]);
  });

  test('an all-in player always shows, even a losing hand; the uncontested winner shows nothing', () => {
    let h = deal({
      stacks: { 1: 100n, 2: 20n, 3: 100n }, button: 1,
      holes: { 1: 'Jh Jd', 2: '4h 5d', 3: 'Qh Qc' }, board: '2c 7s 9h Kd Ac',
    });
    h = play(h, [[1, 'call'], [2, 'raise', 20n], [3, 'call'], [1, 'call']]);
    for (let street = 0; street < 2; street++) h = play(h, [[3, 'check'], [1, 'check']]);
    h = play(h, [[3, 'bet', 10n], [1, 'call']]);
    // The river bettor shows first, the jacks are beaten and muck, the all-in 5-4 shows although it lost.
    expect(h.result!.shown.map((s) => s.seat)).toEqual([3, 2]);
    expect(h.result!.mucked).toEqual([1]);

    h = play(deal({ stacks: { 1: 100n, 2: 100n }, button: 1 }), [[1, 'raise', 10n], [2, 'fold']]);
    expect([h.result!.showdown, h.result!.shown, h.result!.mucked]).toEqual([false, [], [1]]);
  });
});

describe('the table between hands', () => {
  test('a player who sits out is skipped and, back, waits for the big blind; a newcomer waits too', () => {
    let seats = seatsOf({ 1: 100n, 2: 100n, 3: 100n, 4: 100n });
    let next = nextHand(seats, null, 1)!; // button 1, blinds 2 and 3
    seats = sitOut(seats, 4);
    next = nextHand(seats, next.positions)!;
    expect(positions(next)).toEqual({ button: 2, smallBlind: 3, bigBlind: 1, dealtIn: [1, 2, 3] });
    expect(next.seats.find((s) => s.seat === 4)!.sittingOut).toBe(true);

    seats = comeBack(seats, 4);
    next = nextHand(seats, next.positions)!;
    expect(positions(next)).toEqual({ button: 3, smallBlind: 1, bigBlind: 2, dealtIn: [1, 2, 3] }); // 4 waits
    next = nextHand(seats, next.positions)!;
    expect(positions(next)).toEqual({ button: 1, smallBlind: 2, bigBlind: 3, dealtIn: [1, 2, 3] }); // still waiting
    next = nextHand(seats, next.positions)!;
    expect(positions(next)).toEqual({ button: 2, smallBlind: 3, bigBlind: 4, dealtIn: [1, 2, 3, 4] }); // in, as big blind
    const hand = startHand({ ...inputFor({ stacks: { 1: 100n, 2: 100n, 3: 100n, 4: 100n }, button: 2 }), ...startFields(next) });
    const { seats: settled } = endOfHand(seats, play(hand, [[1, 'fold'], [2, 'fold'], [3, 'fold']]).result!);
    expect(settled.find((s) => s.seat === 4)!.waitingForBigBlind).toBe(false);

    // A newcomer between the blinds of a heads-up game waits for the big blind, then the game is three-handed.
    seats = [...seatsOf({ 1: 100n, 5: 100n }), { seat: 3, playerId: 'p3', stack: 100n, waitingForBigBlind: true }];
    next = nextHand(seats, { button: 5, smallBlindPosition: 5, bigBlind: 1 })!;
    expect(positions(next)).toEqual({ button: 5, smallBlind: 1, bigBlind: 3, dealtIn: [1, 3, 5] });
    // Sitting between the button and the big blind instead, it waits a hand and the game stays heads-up.
    next = nextHand(seats, { button: 1, smallBlindPosition: 1, bigBlind: 5 })!;
    expect(positions(next)).toEqual({ button: 5, smallBlind: 5, bigBlind: 1, dealtIn: [1, 5] });
  });

  test('with fewer than two players to deal in the game starts afresh, or no hand is dealt', () => {
    expect(nextHand(seatsOf({ 4: 100n }), null)).toBeNull();
    expect(nextHand(sitOut(seatsOf({ 4: 100n, 6: 100n }), 6), null)).toBeNull();
    const seats: TableSeat[] = [{ seat: 2, playerId: 'p2', stack: 50n }, { seat: 5, playerId: 'p5', stack: 50n, waitingForBigBlind: true }];
    // Seat 2 was the only one playing and the big blind lands on it: both are dealt in afresh.
    expect(positions(nextHand(seats, { button: 8, smallBlindPosition: 0, bigBlind: 1 })))
      .toEqual({ button: 2, smallBlind: 2, bigBlind: 5, dealtIn: [2, 5] });
  });
});

describe('the deck and the showdown evaluator', () => {
  test('sha256 matches node:crypto on messages of every padding length', () => {
    for (let length = 0; length < 130; length++) {
      const message = Uint8Array.from({ length }, (_, i) => (i * 73 + length) & 255);
      expect(Buffer.from(sha256(message)).toString('hex')).toBe(createHash('sha256').update(message).digest('hex'));
    }
  });

  test('shuffles are close to uniform: each card lands in each position about equally often', () => {
    const counts = Array.from({ length: 52 }, () => new Array<number>(52).fill(0));
    const decks = 20_000;
    for (let i = 0; i < decks; i++) shuffledDeck(`u${i}`).forEach((card, position) => counts[card]![position]!++);
    const expected = decks / 52;
    let chiSquare = 0;
    for (const row of counts) for (const n of row) chiSquare += (n - expected) ** 2 / expected;
    // 51 × 51 = 2601 degrees of freedom: mean 2601, sd about 72; 3000 is over five sd out.
    expect(chiSquare).toBeLessThan(3000);
  });

  test('showdown hands agree with the slow reference ranker', () => {
    const text = (cards: number[]) => cards.map(cardToString).join(' ');
    for (let i = 0; i < 300; i++) {
      const deck = shuffledDeck(`showdown-${i}`);
      const [one, two, board] = [deck.slice(0, 2), deck.slice(2, 4), deck.slice(4, 9)];
      let h = deal({ stacks: { 1: 10n, 2: 10n }, button: 1, holes: { 1: text(one), 2: text(two) }, board: text(board) });
      h = play(h, [[1, 'raise', 10n], [2, 'call']]);
      const expected = Math.sign(referenceScore([...one, ...board]) - referenceScore([...two, ...board]));
      const won = stacksOf(h)[1]!;
      expect(won === 20n ? 1 : won === 0n ? -1 : 0).toBe(expected);
    }
  });
});

function startFields(next: NonNullable<ReturnType<typeof nextHand>>) {
  return { seats: next.seats, button: next.button, smallBlindSeat: next.smallBlindSeat, bigBlindSeat: next.bigBlindSeat };
}
