// What the live tables send on the wire (docs/protocol.md): chips as decimal strings (bigint end to
// end), cards as two-character strings, a game_state personalised per connection.
import { cardToString, type Card } from '../poker/cards.ts';
import { legalActions, type HandEvent, type HandResult, type HandState, type PlayerState } from '../poker/engine.ts';
import type { DealReveal } from '../poker/fair-deal.ts';
import type { SignedRecord } from '../hands/hand-record.ts';
import type { z } from 'zod';
import type { CATEGORIES } from '../poker/cards.ts';
import type { LIFECYCLE_STATES } from '../../tournaments/lifecycle.ts';
import type { GameStateMessage, handCategory, HandResultMessage, StoodUpMessage, tournamentState, WireLegal, WireSeat } from './server-messages.ts';

// The messages' shapes are the zod schemas of server-messages.ts; their inferred types are re-exported
// here for the builders below (each checked with `satisfies`) and for clients.
export type {
  ErrorMessage, GameStateMessage, HandResultMessage, ServerMessage, ServerMessageOf, ServerMessageType, StoodUpMessage, WireLegal, WireSeat,
} from './server-messages.ts';

// server-messages.ts imports zod only (a client may copy it): its own lists are the server's (checked here)
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const listsAgree: [Same<z.infer<typeof handCategory>, (typeof CATEGORIES)[number]>, Same<z.infer<typeof tournamentState>, (typeof LIFECYCLE_STATES)[number]>] = [true, true];
void listsAgree;

export const cards = (list: readonly Card[]) => list.map(cardToString);

/** JSON with bigints as strings and cards left to the caller. */
export function toJson(value: unknown): string {
  return JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v));
}

/**
 * A chip amount from a client: a decimal digit string of at most 18 digits (no sign, space, leading
 * zero, exponent or radix prefix: BigInt would read "0x10" and " 4") or a safe non-negative
 * integer. Anything else is null (refused).
 */
export function chipAmount(v: unknown): bigint | null {
  if (typeof v === 'string') return /^(0|[1-9][0-9]{0,17})$/.test(v) ? BigInt(v) : null;
  if (typeof v === 'number') return Number.isSafeInteger(v) && v >= 0 ? BigInt(v) : null;
  return null;
}

/** A chip amount the bank answered (a number or a string) as the wire sends chips: a decimal string. */
const chipString = (v: unknown): string | null =>
  (typeof v === 'number' && Number.isSafeInteger(v)) || (typeof v === 'string' && /^[0-9]+$/.test(v)) || typeof v === 'bigint' ? String(v) : null;

/** `stood_up` from the bank's answer to a withdraw: the amount (a decimal string), the transfer's hash and receipt. */
export function stoodUp(tableId: string, body: Record<string, unknown>, ref?: unknown): string {
  return toJson({
    // txHash and receipt as the bank answered them (its contract: a string and the cage's signed receipt, or none)
    type: 'stood_up', tableId, amount: chipString(body.amount), txHash: (body.txHash ?? null) as string | null, receipt: (body.receipt ?? null) as StoodUpMessage['receipt'],
    ...(ref !== undefined ? { ref } : {}),
  } satisfies StoodUpMessage);
}

export interface SeatView {
  seatIndex: number;
  userId: string;
  agentId: string | null;
  stack: bigint;
  sittingOut: boolean;
}

export interface Viewer {
  /** The viewer's seat at this table, if any. */
  seat: number | null;
  /** Spectators see hole cards only on a hostedOnly table with showHands. */
  seesAllCards: boolean;
}

/** The tournament fields of an SnG table's game_state: shared by every viewer, and the viewer's own. */
export interface TournamentState {
  shared: Required<Pick<GameStateMessage, 'tournament' | 'tournamentSchedule'>>;
  mine: (seat: number | null) => Exclude<GameStateMessage['tournamentMyView'], undefined>;
}

function str(v: bigint): string;
function str(v: bigint | null | undefined): string | null;
function str(v: bigint | null | undefined): string | null {
  return v === null || v === undefined ? null : v.toString();
}

/** A seat as every viewer sees it: `cards` (its last field) null. */
function hiddenSeatJson(s: SeatView, p: PlayerState | undefined): string {
  return JSON.stringify({
    seatIndex: s.seatIndex,
    userId: s.userId,
    agentId: s.agentId,
    stack: str(p ? p.stack : s.stack),
    bet: str(p?.bet ?? 0n),
    inHand: Boolean(p),
    folded: p?.folded ?? false,
    allIn: p ? p.stack === 0n && !p.folded : false,
    sittingOut: s.sittingOut,
    cards: null,
  } satisfies WireSeat);
}

/** The table's part of game_state: its blinds and the deal's commitments. */
interface StateTable {
  tableId: string;
  smallBlind: bigint;
  bigBlind: bigint;
  ante: bigint;
  dealCommitment: string | null;
  nextDealCommitment: string | null;
}

/** game_state's fields every viewer shares, serialised once, without its closing brace. */
function stateHead(
  table: StateTable, hand: HandState | null, turnDeadline: number | null, tournament: TournamentState | undefined,
): string {
  const betting = hand !== null && hand.status === 'betting' && hand.toAct !== null;
  return JSON.stringify({
    type: 'game_state',
    tableId: table.tableId,
    blinds: { small: str(table.smallBlind), big: str(table.bigBlind), ante: str(table.ante) },
    handId: hand?.handId ?? null,
    seq: hand?.seq ?? null,
    street: hand?.street ?? null,
    status: hand ? hand.status : 'waiting',
    board: hand ? cards(hand.board) : [],
    button: hand?.button ?? null,
    smallBlindSeat: hand?.smallBlindSeat ?? null,
    bigBlindSeat: hand?.bigBlindSeat ?? null,
    currentBet: str(hand?.currentBet ?? 0n),
    pots: (hand?.pots ?? []).map((p) => ({ amount: str(p.amount), eligible: p.eligible })),
    toAct: betting ? hand.toAct : null,
    turnDeadline: turnDeadline ? new Date(turnDeadline).toISOString() : null,
    dealCommitment: hand ? table.dealCommitment : null,
    nextDealCommitment: table.nextDealCommitment,
    ...(tournament ? tournament.shared : {}),
  } satisfies Omit<GameStateMessage, 'yourSeat' | 'seats' | 'legal' | 'tournamentMyView'>).slice(0, -1);
}

/**
 * The state of a table (and its hand, if one runs) as each connection may see it: `stateWriter`
 * serialises what all viewers share once (the table, the hand, every seat with and without its
 * cards, the legal actions of the seat to act), and `write(viewer)` only joins the pieces. This is
 * the message sent most (once per connection per action), so the shared work is not repeated per
 * connection. Chips are strings (bigint end to end), so plain JSON.stringify serialises it.
 */
export function stateWriter(
  table: StateTable,
  seats: readonly SeatView[],
  hand: HandState | null,
  turnDeadline: number | null,
  tournament?: TournamentState,
): (viewer: Viewer) => string {
  const players = new Map(hand?.players.map((p) => [p.seat, p]) ?? []);
  const betting = hand !== null && hand.status === 'betting' && hand.toAct !== null;
  const head = stateHead(table, hand, turnDeadline, tournament);
  // every viewer gets each seat without its cards (serialised once per broadcast), its own player
  // (or a spectator who sees all) the same text with its hole cards in place of the last `null`
  const hidden = seats.map((s) => hiddenSeatJson(s, players.get(s.seatIndex)));
  let shown: string[] | null = null; // every seat's cards: built when a viewer may see them
  const ownSeat = (i: number) => {
    const p = players.get(seats[i]!.seatIndex);
    return p ? `${hidden[i]!.slice(0, -'null}'.length)}${JSON.stringify(cards(p.hole))}}` : hidden[i]!;
  };
  let legal: string | null = null; // for the seat to act only
  const legalFor = (seat: number | null) => {
    if (!betting || seat !== hand.toAct) return 'null';
    if (legal === null) {
      const l = legalActions(hand);
      legal = l === null ? 'null' : JSON.stringify({
        actions: l.actions, toCall: str(l.toCall), minRaiseTo: str(l.minRaiseTo), maxRaiseTo: str(l.maxRaiseTo), seq: l.seq, handId: l.handId,
      } satisfies WireLegal);
    }
    return legal;
  };
  return (viewer) => {
    let seatList: string;
    if (viewer.seesAllCards) {
      shown ??= seats.map((_, i) => ownSeat(i));
      seatList = shown.join(',');
    } else {
      const mine = viewer.seat === null ? -1 : seats.findIndex((s) => s.seatIndex === viewer.seat);
      seatList = mine < 0 ? hidden.join(',') : seats.map((_, i) => (i === mine ? ownSeat(i) : hidden[i])).join(',');
    }
    const myView = tournament ? `,"tournamentMyView":${toJson(tournament.mine(viewer.seat) ?? null)}` : '';
    return `${head},"yourSeat":${viewer.seat === null ? 'null' : viewer.seat},"seats":[${seatList}],"legal":${legalFor(viewer.seat)}${myView}}`;
  };
}

/** The end of a hand, for everyone: pots and winners, what was shown (best five, description). */
export function handResult(
  tableId: string, handId: string, result: HandResult, seats: readonly SeatView[], fair: { deal: DealReveal; record: SignedRecord },
): HandResultMessage {
  const userOf = new Map(seats.map((s) => [s.seatIndex, s.userId]));
  return {
    type: 'hand_result',
    tableId,
    handId,
    board: cards(result.board),
    showdown: result.showdown,
    rake: str(result.rake),
    pots: result.pots.map((p) => ({
      amount: str(p.amount), rake: str(p.rake), eligible: p.eligible, winners: p.winners.map((w) => ({ seat: w.seat, amount: str(w.amount) })),
    })),
    uncalled: result.uncalled.map((u) => ({ seat: u.seat, amount: str(u.amount) })),
    shown: result.shown.map((s) => ({
      seat: s.seat, userId: userOf.get(s.seat) ?? null, cards: cards(s.hole), best: cards(s.value.best),
      category: s.value.category, description: s.value.description,
    })),
    mucked: result.mucked,
    stacks: result.stacks.map((s) => ({ seat: s.seat, userId: userOf.get(s.seat) ?? null, stack: str(s.stack), net: str(s.net) })),
    deal: { ...fair.deal, contributions: [...fair.deal.contributions] },
    record: { hash: fair.record.hash, signature: fair.record.signature },
  } satisfies HandResultMessage;
}

/**
 * The hand's events for storage, as JSON: cards as strings, bigints as strings. One pass (the
 * events hold cards only under `cards` and `best`).
 */
export function historyJson(events: readonly HandEvent[]): string {
  return JSON.stringify(events, storedValue);
}

/** One event as historyJson writes it. */
export const eventJson = (event: HandEvent): string => JSON.stringify(event, storedValue);

/**
 * The hand_started event as game.end_hand stores it beside the compact history and the signed
 * record: without its seats and hand id, which the record holds (issue 33: about 0.5 KB of each
 * hand's row). What the record lacks stays: the blinds, the ante, their seats and the button.
 */
export function startedJson(event: HandEvent): string {
  const { seats: _seats, handId: _handId, ...rest } = event as HandEvent & { seats?: unknown; handId?: unknown };
  return JSON.stringify(rest, storedValue);
}

function storedValue(key: string, v: unknown): unknown {
  return typeof v === 'bigint' ? v.toString() : (key === 'cards' || key === 'best') && Array.isArray(v) && typeof v[0] === 'number' ? cards(v as Card[]) : v;
}
