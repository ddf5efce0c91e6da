// The game_state each connection gets (wire.ts, stateWriter): what all viewers share is built once
// per broadcast and each viewer's seat gets its own cards joined in. Each seat sees only its own
// hole cards, a spectator none (or all, when the table shows them), and every message holds exactly
// the fields and values of the message built field by field (the spec's game_state).
import { applyAction, legalActions, startHand, type HandState } from '../../server/game/poker/engine.ts';
import { shuffledDeck } from '../../server/game/poker/deck.ts';
import { cards, stateWriter, type SeatView } from '../../server/game/live/wire.ts';

const table = { tableId: 't"1', smallBlind: 1n, bigBlind: 2n, ante: 0n, dealCommitment: 'a'.repeat(64), nextDealCommitment: 'b'.repeat(64) };
const seats: SeatView[] = [
  { seatIndex: 0, userId: 'u0', agentId: null, stack: 200n, sittingOut: false },
  { seatIndex: 2, userId: 'u"2\\', agentId: 'a-2', stack: 150n, sittingOut: false },
  { seatIndex: 5, userId: 'u5', agentId: null, stack: 90n, sittingOut: false },
  { seatIndex: 7, userId: 'u7', agentId: null, stack: 40n, sittingOut: true }, // not dealt in
];

function hand(): HandState {
  const h = startHand({
    handId: 'h:1', seats: seats.map((s) => ({ seat: s.seatIndex, playerId: s.userId, stack: s.stack, sittingOut: s.sittingOut })),
    button: 0, smallBlind: 1n, bigBlind: 2n, ante: 0n, deck: shuffledDeck('wire-state'), rake: { percent: 5, cap: 10n, minPot: 0n, requiresFlop: true },
  });
  const next = applyAction(h, h.toAct!, { type: 'raise', amount: 6n });
  if ('error' in next) throw new Error(next.error);
  return next;
}

/** The game_state built field by field, as the spec lists them. */
function expected(h: HandState, deadline: number, viewer: { seat: number | null; seesAllCards: boolean }) {
  const l = legalActions(h)!;
  return {
    type: 'game_state', tableId: table.tableId, blinds: { small: '1', big: '2', ante: '0' }, handId: h.handId, seq: h.seq, street: h.street, status: h.status,
    board: cards(h.board), button: h.button, smallBlindSeat: h.smallBlindSeat, bigBlindSeat: h.bigBlindSeat, currentBet: String(h.currentBet),
    pots: h.pots.map((p) => ({ amount: String(p.amount), eligible: p.eligible })), toAct: h.toAct, turnDeadline: new Date(deadline).toISOString(),
    dealCommitment: table.dealCommitment, nextDealCommitment: table.nextDealCommitment,
    yourSeat: viewer.seat,
    seats: seats.map((s) => {
      const p = h.players.find((x) => x.seat === s.seatIndex);
      return {
        seatIndex: s.seatIndex, userId: s.userId, agentId: s.agentId, stack: String(p ? p.stack : s.stack), bet: String(p?.bet ?? 0n), inHand: Boolean(p),
        folded: p?.folded ?? false, allIn: p ? p.stack === 0n && !p.folded : false, sittingOut: s.sittingOut,
        cards: p && (viewer.seesAllCards || viewer.seat === s.seatIndex) ? cards(p.hole) : null,
      };
    }),
    legal: viewer.seat === h.toAct ? {
      actions: l.actions, toCall: String(l.toCall), minRaiseTo: l.minRaiseTo === null ? null : String(l.minRaiseTo),
      maxRaiseTo: l.maxRaiseTo === null ? null : String(l.maxRaiseTo), seq: l.seq, handId: l.handId,
    } : null,
  };
}

test('each seat sees its own hole cards only; a spectator none, or all on a table that shows them; every field as the spec builds it', () => {
  const h = hand();
  const deadline = Date.UTC(2026, 0, 2, 3, 4, 5);
  const write = stateWriter(table, seats, h, deadline);
  const viewers = [...seats.map((s) => ({ seat: s.seatIndex, seesAllCards: false })), { seat: null, seesAllCards: false }, { seat: null, seesAllCards: true }];
  for (const viewer of viewers) {
    const sent = JSON.parse(write(viewer));
    expect(sent).toEqual(expected(h, deadline, viewer));
    const withCards = sent.seats.filter((s: { cards: unknown }) => s.cards !== null).map((s: { seatIndex: number }) => s.seatIndex);
    expect(withCards).toEqual(viewer.seesAllCards ? [0, 2, 5] : viewer.seat !== null && viewer.seat !== 7 ? [viewer.seat] : []);
  }
  // the cards are the players' own, and differ between them
  const own = (seat: number) => JSON.parse(write({ seat, seesAllCards: false })).seats.find((s: { seatIndex: number }) => s.seatIndex === seat).cards;
  expect(own(0)).toEqual(cards(h.players.find((p) => p.seat === 0)!.hole));
  expect(own(0)).not.toEqual(own(2));
});

test('between hands: no hand, every seat as stored, no cards', () => {
  const sent = JSON.parse(stateWriter(table, seats, null, null)({ seat: 2, seesAllCards: false }));
  expect(sent).toMatchObject({ handId: null, status: 'waiting', toAct: null, turnDeadline: null, legal: null, yourSeat: 2, dealCommitment: null, nextDealCommitment: table.nextDealCommitment });
  expect(sent.seats).toEqual(seats.map((s) => ({ ...s, stack: String(s.stack), bet: '0', inHand: false, folded: false, allIn: false, cards: null })));
});
