// What differs between a cash table and a Sit-and-Go table, behind one interface the room deals
// through (room.ts): reading the seats, the next hand's settings and plan, a turn that timed out,
// ending a hand, and (a tournament only) its lifecycle announcements. Each kind lives in its own
// file (cash-table.ts, tournament-table.ts), answers data and messages, and never calls the room.
import type { HandState } from '../poker/engine.ts';
import type { DealReveal } from '../poker/fair-deal.ts';
import type { SignedRecord } from '../hands/hand-record.ts';
import type { NextHand, Positions, TableSeat } from '../poker/table.ts';
import type { EndingHand, HandEndAnswer, SeatRow } from '../hands/hands.ts';
import { compactHand } from '../hands/compact.ts';
import { handResult, startedJson, historyJson, type SeatView, type ServerMessageOf, type TournamentState } from './wire.ts';
import type { SealedDeal } from './deal-seeds.ts';

export type { SeatRow } from '../hands/hands.ts';

/** A seat as the room keeps it. */
export interface Seat extends TableSeat {
  positionId: string;
  userId: string;
  agentId: string | null;
  timeouts: number;
  leaveAfterHand: boolean;
}

/** What the next hand is dealt with. */
export interface HandSettings {
  smallBlind: bigint;
  bigBlind: bigint;
  ante: bigint;
  turnMs: number;
  turnTimerEnabled: boolean;
  rake: { percent: number; cap: bigint; minPot: bigint; requiresFlop: boolean };
  deckSeed: string | null;
  hostedOnly: boolean;
  showHands: boolean;
}

/** A lifecycle broadcast (the room adds the tableId). */
export type Announcement = DistributiveOmit<ServerMessageOf<'tournament_state_changed' | 'blind_level_changed' | 'tournament_ended' | 'tournament_payout_settled'>, 'tableId'>;
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** A hand as it ended, with what the room knows of it. */
export interface EndedHand {
  hand: HandState;
  handNumber: number;
  startedAt: Date;
  /** The seats as the hand was dealt (hand_result names their users). */
  views: SeatView[];
  /** The agents of the positions dealt in. */
  agents: string[];
  /** What the end reveals of the deal, and the hand's signed record (the room's dealer signs it). */
  deal: DealReveal;
  record: SignedRecord;
}

/**
 * What game.end_hand is sent for a hand, whatever the table: its stacks, its history and result (the
 * `hand_result` message as sent, returned too) as one compact value, and its hand_started event
 * without what the signed record holds; the kind adds its rake or its auto-folds.
 */
export function endingOf(tableId: string, ended: EndedHand, kind: { rake: bigint; autoFolds: number }): { ending: EndingHand; result: string } {
  const { hand } = ended;
  const stacks: Record<string, bigint> = {};
  for (const p of hand.players) stacks[p.playerId] = p.stack;
  const result = JSON.stringify(handResult(tableId, hand.handId, hand.result!, ended.views, ended)); // chips already strings
  return {
    ending: {
      tableId, handId: hand.handId, handNumber: ended.handNumber, stacks, ...kind,
      // the history and the result compressed here, in one value Postgres stores as it is (compact.ts)
      compact: compactHand(historyJson(hand.history), result), started: startedJson(hand.history.find((e) => e.type === 'hand_started')!),
      agents: ended.agents, startedAt: ended.startedAt, deal: ended.deal, record: ended.record,
    },
    result,
  };
}

/** What a hand's end sends, in order: `before` ahead of the fresh game_state, `after` behind it. */
export interface EndOutcome {
  answer: HandEndAnswer;
  before: string[];
  after: string[];
}

export interface TableKind {
  /** The next hand's settings (a tournament's blinds are its current level's). */
  settings(): HandSettings;
  /** The seats as stored (a tournament reads its lifecycle row with them). */
  readSeats(): Promise<SeatRow[]>;
  /** Begins a hand: the seats it is dealt from, read under the table's lock. */
  deal(handId: string, deals: { deal: SealedDeal; next: SealedDeal }): Promise<SeatRow[]>;
  /** Who the next hand is dealt to (null: no hand now); `watching`: the users connected to the room. */
  plan(seats: readonly Seat[], positions: Positions | null, watching: ReadonlySet<string | null>): NextHand | null;
  /** A turn timed out: true when it counts towards sitting the player out (a cash table). */
  turnExpired(): boolean;
  /** game_state's tournament fields (none at a cash table). */
  tournamentState(seats: readonly Seat[]): TournamentState | undefined;
  /** Writes the hand's end (one transaction) and answers what to send. A refusal or failure rejects. */
  endHand(ended: EndedHand): Promise<EndOutcome>;
  /** The lifecycle moves made while nobody announced them (none at a cash table). */
  catchUp(): Promise<Announcement[]>;
  /** Records what the room announced, so the room that runs the table next repeats none of it. */
  announced(messages: Announcement[]): Promise<void>;
  /** The hand in flight was dropped unwritten (a force-end abandoned it): nothing of it counts. */
  handDropped(): void;
  /** The tournament's state as last read (null at a cash table). */
  readonly phase: string | null;
  /** A tournament's lifecycle notice: the announcements it calls for (a cash table has none). */
  notice?(event: Record<string, unknown>): Promise<Announcement[]>;
  /** Reads the lifecycle row again (a tournament, while a hand holds the seats). */
  refreshLifecycle?(): Promise<void>;
}
