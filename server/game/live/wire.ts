// What the live tables send on the wire (docs/protocol.md): chips as decimal strings (bigint end to
// end), cards as two-character strings, a game_state personalised per connection.
import { cardToString, type Card } from '../poker/cards.ts';
import { legalActions, type HandEvent, type HandResult, type HandState } from '../poker/engine.ts';

export const cards = (list: readonly Card[]) => list.map(cardToString);

/** JSON with bigints as strings and cards left to the caller. */
export function toJson(value: unknown): string {
  return JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v));
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

const str = (v: bigint | null | undefined) => (v === null || v === undefined ? null : v.toString());

/**
 * The state of a table (and its hand, if one runs) as one connection may see it. Chips are made
 * strings here, so the message serialises with plain JSON.stringify (no replacer: this is the
 * message sent most, once per connection per action).
 */
export function gameState(
  table: { tableId: string; smallBlind: bigint; bigBlind: bigint; ante: bigint },
  seats: readonly SeatView[],
  hand: HandState | null,
  viewer: Viewer,
  turnDeadline: number | null,
) {
  const players = new Map(hand?.players.map((p) => [p.seat, p]) ?? []);
  const legal = hand && hand.status === 'betting' && hand.toAct !== null && hand.toAct === viewer.seat ? legalActions(hand) : null;
  return {
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
    toAct: hand?.status === 'betting' ? hand.toAct : null,
    turnDeadline: turnDeadline ? new Date(turnDeadline).toISOString() : null,
    yourSeat: viewer.seat,
    seats: seats.map((s) => {
      const p = players.get(s.seatIndex);
      const showCards = p && (s.seatIndex === viewer.seat || viewer.seesAllCards);
      return {
        seatIndex: s.seatIndex,
        userId: s.userId,
        agentId: s.agentId,
        stack: str(p ? p.stack : s.stack),
        bet: str(p?.bet ?? 0n),
        inHand: Boolean(p),
        folded: p?.folded ?? false,
        allIn: p ? p.stack === 0n && !p.folded : false,
        sittingOut: s.sittingOut,
        cards: showCards ? cards(p!.hole) : null,
      };
    }),
    legal: legal && {
      actions: legal.actions,
      toCall: str(legal.toCall),
      minRaiseTo: str(legal.minRaiseTo),
      maxRaiseTo: str(legal.maxRaiseTo),
      seq: legal.seq,
      handId: legal.handId,
    },
  };
}

/** The end of a hand, for everyone: pots and winners, what was shown (best five, description). */
export function handResult(tableId: string, handId: string, result: HandResult, seats: readonly SeatView[]) {
  const userOf = new Map(seats.map((s) => [s.seatIndex, s.userId]));
  return {
    type: 'hand_result',
    tableId,
    handId,
    board: cards(result.board),
    showdown: result.showdown,
    rake: result.rake,
    pots: result.pots.map((p) => ({ amount: p.amount, rake: p.rake, eligible: p.eligible, winners: p.winners })),
    uncalled: result.uncalled,
    shown: result.shown.map((s) => ({
      seat: s.seat, userId: userOf.get(s.seat) ?? null, cards: cards(s.hole), best: cards(s.value.best),
      category: s.value.category, description: s.value.description,
    })),
    mucked: result.mucked,
    stacks: result.stacks.map((s) => ({ seat: s.seat, userId: userOf.get(s.seat) ?? null, stack: s.stack, net: s.net })),
  };
}

/** The hand's events for storage: cards as strings, bigints as strings (via toJson). */
export function historyJson(events: readonly HandEvent[]): unknown[] {
  return events.map((e) => {
    const out: Record<string, unknown> = { ...e };
    for (const key of ['cards', 'best'] as const) {
      if (key in e) out[key] = cards((e as unknown as Record<string, Card[]>)[key]!);
    }
    return JSON.parse(toJson(out));
  });
}
