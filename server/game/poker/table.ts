// Between hands: who is dealt in and where the button and the blinds go. Pure: no I/O, no clock.
//
// The dead-button rule (TDA "moving button", used for cash tables and tournaments alike):
// - the big blind always advances to the next seat clockwise that will play; nobody skips it;
// - the small blind goes to the seat that had the big blind last hand. If that player is gone
//   (busted, left, sitting out), nobody posts a small blind: a busted big blind means no small
//   blind next hand;
// - the button goes to the seat that was the small blind's position last hand, even when nobody
//   sits there any more: a busted small blind leaves a dead button (it still marks who acts last
//   after the flop and where the odd chip starts);
// - heads-up (two players dealt in) the button posts the small blind and the other player the big
//   blind. Because the big blind still advances from the last hand's big blind, a table that
//   becomes heads-up never makes anyone post the big blind twice in a row.
//
// Sitting out and coming back (cash tables): a player who sits out is not dealt in and owes
// nothing while away. A player who comes back, or sits down while a game is running, waits for
// the big blind: they are dealt in the first time the big blind reaches their seat, and never post
// a missed blind. When fewer than two players would be dealt in, the game starts afresh and
// everyone ready is dealt in at once. Tournament tables never mark anyone as sitting out: an absent
// player is dealt in and blinded away by the turn timer (check when free, else fold).
import type { HandResult, SeatInput } from './engine.ts';

export interface TableSeat {
  seat: number;
  playerId: string;
  stack: bigint;
  /** Away from the table: not dealt in. */
  sittingOut?: boolean;
  /** Joined or came back while a game ran: dealt in from their first big blind. */
  waitingForBigBlind?: boolean;
}

/** Where the last hand's button and blinds were; the next hand's positions follow from them. */
export interface Positions {
  button: number;
  /** The small blind's position, kept even when nobody posted there (a dead small blind). */
  smallBlindPosition: number;
  bigBlind: number;
}

export interface NextHand {
  positions: Positions;
  button: number;
  /** Who posts the small blind; null when the small blind is dead. */
  smallBlindSeat: number | null;
  bigBlindSeat: number;
  dealtIn: number[];
  /** Every seat at the table, for startHand: those not dealt in are marked sittingOut. */
  seats: SeatInput[];
}

/**
 * The next hand's button, blinds and players, or null when fewer than two can play. `previous` is
 * the last hand's positions (null for the first hand, when `firstButton` places the button, by
 * default on the lowest seat that can play).
 */
export function nextHand(seats: readonly TableSeat[], previous: Positions | null, firstButton?: number): NextHand | null {
  const ready = seats.filter((s) => s.stack > 0n && !s.sittingOut).map((s) => s.seat).sort((a, b) => a - b);
  if (ready.length < 2) return null;
  if (previous === null) return freshStart(seats, ready, firstButton ?? ready[0]!);

  const bigBlind = nextSeat(ready, previous.bigBlind);
  const dealtIn = seats
    .filter((s) => ready.includes(s.seat) && (!s.waitingForBigBlind || s.seat === bigBlind))
    .map((s) => s.seat)
    .sort((a, b) => a - b);
  if (dealtIn.length < 2) return freshStart(seats, ready, nextSeat(ready, previous.button));

  if (dealtIn.length === 2) {
    const other = dealtIn.find((s) => s !== bigBlind)!;
    return result(seats, dealtIn, { button: other, smallBlindPosition: other, bigBlind }, other);
  }
  const smallBlindPosition = previous.bigBlind;
  let button = previous.smallBlindPosition;
  if (button === bigBlind) {
    // Only when a third player joined straight after a heads-up hand: the button goes to the seat
    // just before the small blind instead.
    button = previousSeat(dealtIn.filter((s) => s !== bigBlind), smallBlindPosition);
  }
  const smallBlindSeat = dealtIn.includes(smallBlindPosition) ? smallBlindPosition : null;
  return result(seats, dealtIn, { button, smallBlindPosition, bigBlind }, smallBlindSeat);
}

function freshStart(seats: readonly TableSeat[], ready: number[], buttonSeat: number): NextHand {
  if (ready.length === 2) {
    const button = ready.includes(buttonSeat) ? buttonSeat : nextSeat(ready, buttonSeat);
    const bigBlind = nextSeat(ready, button);
    return result(seats, ready, { button, smallBlindPosition: button, bigBlind }, button);
  }
  const smallBlind = nextSeat(ready, buttonSeat);
  const bigBlind = nextSeat(ready, smallBlind);
  return result(seats, ready, { button: buttonSeat, smallBlindPosition: smallBlind, bigBlind }, smallBlind);
}

function result(seats: readonly TableSeat[], dealtIn: number[], positions: Positions, smallBlindSeat: number | null): NextHand {
  return {
    positions,
    button: positions.button,
    smallBlindSeat,
    bigBlindSeat: positions.bigBlind,
    dealtIn,
    seats: seats.map((s) => ({ seat: s.seat, playerId: s.playerId, stack: s.stack, sittingOut: !dealtIn.includes(s.seat) })),
  };
}

/**
 * Rule 17, busts are found when the hand ends: the final stacks go back to the seats, players left
 * with nothing are returned as `busted` (and are no longer seated), and those dealt in stop
 * waiting for the big blind.
 */
export function endOfHand(seats: readonly TableSeat[], hand: HandResult): { seats: TableSeat[]; busted: TableSeat[] } {
  const finals = new Map(hand.stacks.map((s) => [s.seat, s.stack]));
  const after = seats.map((s): TableSeat => {
    const stack = finals.get(s.seat);
    return stack === undefined ? { ...s } : { ...s, stack, waitingForBigBlind: false };
  });
  return { seats: after.filter((s) => s.stack > 0n), busted: after.filter((s) => s.stack === 0n) };
}

/** A player steps away: not dealt in until they come back. */
export function sitOut(seats: readonly TableSeat[], seat: number): TableSeat[] {
  return seats.map((s) => (s.seat === seat ? { ...s, sittingOut: true } : s));
}

/** A player comes back (or a new one sits down while a game runs): they wait for the big blind. */
export function comeBack(seats: readonly TableSeat[], seat: number): TableSeat[] {
  return seats.map((s) => (s.seat === seat ? { ...s, sittingOut: false, waitingForBigBlind: true } : s));
}

/** The first of `seats` (ascending) clockwise after `seat`. */
function nextSeat(seats: number[], seat: number): number {
  return seats.find((s) => s > seat) ?? seats[0]!;
}

/** The first of `seats` (ascending) counter-clockwise before `seat`. */
function previousSeat(seats: number[], seat: number): number {
  return seats.findLast((s) => s < seat) ?? seats[seats.length - 1]!;
}
