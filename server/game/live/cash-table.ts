// A cash table: blinds, rake and turn time from its settings; it deals only to players connected to
// the room; a hand's end writes the stacks and the rake, then the cage settles its busts.
import type { Logger } from 'pino';
import { nextHand, type Positions } from '../poker/table.ts';
import type { createHands } from '../hands/hands.ts';
import { MAX_TURN_TIME_SEC, turnTimeSec } from '../tables/rules.ts';
import { endingOf, type Announcement, type EndedHand, type EndOutcome, type HandSettings, type Seat, type SeatRow, type TableKind } from './table-kind.ts';
import type { SealedDeal } from './deal-seeds.ts';

const big = (v: unknown, fallback = 0n) => (typeof v === 'number' && Number.isInteger(v) ? BigInt(v) : fallback);

export class CashTable implements TableKind {
  readonly phase = null;
  private readonly tableId: string;
  private readonly hands: ReturnType<typeof createHands>;
  private readonly hand: HandSettings;

  constructor(tableId: string, settings: Record<string, unknown>, hands: ReturnType<typeof createHands>, log: Logger) {
    this.tableId = tableId;
    this.hands = hands;
    if (typeof settings.turnTimeSec === 'number' && settings.turnTimeSec > MAX_TURN_TIME_SEC) {
      log.warn({ tableId, turnTimeSec: settings.turnTimeSec }, `stored turnTimeSec above ${MAX_TURN_TIME_SEC}: clamped`);
    }
    const s = settings;
    this.hand = {
      smallBlind: big(s.smallBlind), bigBlind: big(s.bigBlind, 2n), ante: big(s.ante),
      turnMs: turnTimeSec(s.turnTimeSec) * 1000,
      turnTimerEnabled: s.turnTimerEnabled !== false,
      rake: {
        percent: typeof s.rakePercent === 'number' ? s.rakePercent : 0,
        cap: big(s.rakeCap), minPot: big(s.rakeMinPot), requiresFlop: s.rakeRequiresFlop !== false,
      },
      deckSeed: typeof s.deckSeed === 'string' ? s.deckSeed : null,
      hostedOnly: s.hostedOnly === true,
      showHands: s.showHands === true,
    };
  }

  settings(): HandSettings {
    return this.hand;
  }

  readSeats(): Promise<SeatRow[]> {
    return this.hands.seats(this.tableId);
  }

  deal(handId: string, deals: { deal: SealedDeal; next: SealedDeal }): Promise<SeatRow[]> {
    return this.hands.deal(this.tableId, handId, deals);
  }

  /**
   * A funded seat whose user (or agent) has no connection at the table is out of this deal as if sat
   * out, but counts no timeout and starts no idle clock (a restarted room waits for its players
   * instead of dealing to nobody).
   */
  plan(seats: readonly Seat[], positions: Positions | null, watching: ReadonlySet<string | null>) {
    return nextHand(seats.map((s) => (watching.has(s.userId) ? s : { ...s, sittingOut: true })), positions);
  }

  turnExpired(): boolean {
    return true;
  }

  tournamentState() {
    return undefined;
  }

  /** The stacks, the rake, the history, the result and the busts' closes in one transaction (no bank call). */
  async endHand(ended: EndedHand): Promise<EndOutcome> {
    const { ending, result } = endingOf(this.tableId, ended, { rake: ended.hand.result!.rake, autoFolds: 0 });
    const answer = await this.hands.end(ending);
    return { answer, before: [result], after: [] };
  }

  handDropped(): void {}

  async catchUp(): Promise<Announcement[]> {
    return [];
  }

  async announced(): Promise<void> {}
}
