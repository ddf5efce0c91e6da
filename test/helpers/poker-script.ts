// Hand scripts for the dealer's tests: a table written as seats, stacks, hole cards and a board, a
// deck stacked to deal exactly those cards, and a runner that applies a list of actions, refusing
// to go on past a refusal and checking after every step that no chip appeared or vanished.
import { parseCards, type Card } from '../../server/game/poker/cards.ts';
import {
  applyAction, chipsOnTable, isRefusal, startHand, timeout, type ActionType, type HandState, type RakeRule,
  type StartHandInput,
} from '../../server/game/poker/engine.ts';

export const NO_RAKE: RakeRule = { percent: 0, cap: 0n, minPot: 0n, requiresFlop: true };

export interface TableScript {
  /** seat → starting stack. */
  stacks: Record<number, bigint>;
  button: number;
  blinds?: [bigint, bigint];
  ante?: bigint;
  rake?: RakeRule;
  /** seat → two cards, e.g. 'As Kd'; seats left out get filler cards. */
  holes?: Record<number, string>;
  /** Up to five cards, e.g. '2c 7d 9h Js Qs'; the rest is filler. */
  board?: string;
  smallBlindSeat?: number | null;
  bigBlindSeat?: number;
  sittingOut?: number[];
  handId?: string;
}

export function inputFor(t: TableScript): StartHandInput {
  const seats = Object.entries(t.stacks).map(([seat, stack]) => ({
    seat: Number(seat), playerId: `p${seat}`, stack, sittingOut: t.sittingOut?.includes(Number(seat)) ?? false,
  }));
  const dealt = seats.filter((s) => !s.sittingOut).map((s) => s.seat).sort((a, b) => a - b);
  const order = [...dealt.filter((s) => s > t.button), ...dealt.filter((s) => s <= t.button)];
  const [smallBlind, bigBlind] = t.blinds ?? [1n, 2n];
  return {
    handId: t.handId ?? 'hand-1',
    seats,
    button: t.button,
    ...(t.bigBlindSeat === undefined ? {} : { bigBlindSeat: t.bigBlindSeat, smallBlindSeat: t.smallBlindSeat ?? null }),
    smallBlind,
    bigBlind,
    ante: t.ante ?? 0n,
    deck: stackedDeck(order, t.holes ?? {}, t.board ?? ''),
    rake: t.rake ?? NO_RAKE,
  };
}

export function deal(t: TableScript): HandState {
  return startHand(inputFor(t));
}

/** A deck that deals `holes` to the seats in dealing order (one card each, twice), then the board. */
export function stackedDeck(order: number[], holes: Record<number, string>, board: string): Card[] {
  const wanted = new Map(Object.entries(holes).map(([seat, text]) => [Number(seat), parseCards(text)]));
  const boardCards = parseCards(board);
  const used = new Set([...[...wanted.values()].flat(), ...boardCards]);
  const filler = Array.from({ length: 52 }, (_, card) => card).filter((card) => !used.has(card));
  const next = () => filler.shift()!;
  const deck: Card[] = [];
  for (let round = 0; round < 2; round++) for (const seat of order) deck.push(wanted.get(seat)?.[round] ?? next());
  const boardAt = (i: number) => boardCards[i] ?? next();
  deck.push(next(), boardAt(0), boardAt(1), boardAt(2), next(), boardAt(3), next(), boardAt(4));
  while (filler.length > 0) deck.push(next());
  return deck;
}

export type Step = [seat: number, type: ActionType, amount?: bigint] | ['timeout'];

/** Applies the steps in order; a refusal or a chip out of place fails the test with the step named. */
export function play(state: HandState, steps: Step[]): HandState {
  const chips = chipsOnTable(state);
  for (const step of steps) {
    const next = step[0] === 'timeout'
      ? timeout(state)
      : applyAction(state, step[0], { type: step[1], ...(step[2] === undefined ? {} : { amount: step[2] }) });
    if (isRefusal(next)) throw new Error(`step ${JSON.stringify(step, bigints)} refused: ${next.error} (${next.message})`);
    if (chipsOnTable(next) !== chips) throw new Error(`step ${JSON.stringify(step, bigints)} changed the chips on the table`);
    if (next.players.some((p) => p.stack < 0n)) throw new Error(`step ${JSON.stringify(step, bigints)} left a negative stack`);
    state = next;
  }
  return state;
}

export const stacksOf = (state: HandState): Record<number, bigint> =>
  Object.fromEntries(state.players.map((p) => [p.seat, p.stack]));

export const betsOf = (state: HandState): Record<number, bigint> =>
  Object.fromEntries(state.players.map((p) => [p.seat, p.bet]));

/** JSON.stringify replacer for states and histories (bigints as strings). */
export function bigints(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? `${value}n` : value;
}

export const snapshot = (value: unknown): string => JSON.stringify(value, bigints);
