// Hand boundaries: what the dealer calls between hands. A deal and an end are group-committed with
// the other tables' of the process (group-commit.ts: one transaction for all those asked while a
// commit is in flight, each with its own answer). A hand holds its table
// (seat funding and stand-up answer 409 hand_in_progress) from its deal (game.deal_hand, which
// answers the seats it is dealt from) to its end (game.end_hand: the stacks, the rake or the
// places, the history and the result in one transaction). At a cash table every position left with
// no chips is closed in that same transaction by its table's bank's zero settlement (issue 32: the
// cage's bust_close row, or the chain bank's bust), so a bust makes no round trip to any bank; the
// cage signs a bust's receipt afterwards (tasks/cage_sign_bust_receipts.ts).
import type pg from 'pg';
import type { Logger } from 'pino';
import { isLeaseLost } from '../live/lease.ts';
import type { DealReveal } from '../poker/fair-deal.ts';
import type { SignedRecord } from './hand-record.ts';
import type { PendingDeal, SealedDeal } from '../live/deal-seeds.ts';
import { createGroupCommit, type Boundary } from './group-commit.ts';
import { dealerWriter } from './boundary-writer.ts';

export interface HandEnd {
  /** The positions the hand left with no chips, closed in its transaction. */
  busted: { playerId: string; userId: string }[];
}

/** A seat as game.seats_of answers it (chips as a decimal string: a cash stack or tournament chips). */
export interface SeatRow {
  id: string;
  user_id: string;
  agent_id: string | null;
  seat_index: number;
  chip_balance: string;
  status: string;
  /** Sat out by the dealer (game.set_sitting_out): a reloaded room keeps them out. */
  sat_out?: boolean;
}

/** What game.end_hand answers, the first time and on a replay alike. */
export interface HandEndAnswer {
  /** An earlier attempt had committed this end (its answer was lost): this is what it committed. */
  replayed: boolean;
  /** The tournament's state after the hand (null at a cash table). */
  state: string | null;
  /** The positions the hand left with no chips (at a cash table closed with it); at a tournament, the places they took. */
  busted: { playerId: string; userId: string; seat: number; place: number | null; tiePlace: number | null }[];
}

/** A hand as it ended, for game.end_hand. */
export interface EndingHand {
  tableId: string;
  handId: string;
  handNumber: number;
  stacks: Record<string, bigint>;
  rake: bigint;
  autoFolds: number;
  /** The events (wire.ts historyJson) and the hand_result as sent, compressed as one value (compact.ts). */
  compact: Buffer;
  /** The hand_started event as JSON, without what the signed record holds (wire.ts startedJson): what the audit replays with. */
  started: string;
  agents: string[];
  startedAt: Date;
  /** What the hand's end reveals of its deal, and the hand's signed record (hand-record.ts). */
  deal: DealReveal;
  record: SignedRecord;
}

/** Stacks as game.end_hand reads them: { positionId: integer }. */
const stacksJson = (stacks: Record<string, bigint>) => JSON.stringify(Object.fromEntries(Object.entries(stacks).map(([k, v]) => [k, Number(v)])));

/** The table leases of this process (live/lease.ts): the epoch each boundary carries, and the fence's refusal. */
export interface HandLeases {
  epochOf(tableId: string): bigint | null;
  /** The tenure whose epoch a boundary carried was refused (a later tenure of this process is not touched). */
  lost(tableId: string, epoch: bigint | null): void;
}

/** A boundary query run under the table's current tenure (createHands's fencedQuery). */
type FencedQuery = <R extends pg.QueryResultRow>(tableId: string, sql: string, params: (epoch: string | null) => unknown[], name?: string) => Promise<pg.QueryResult<R>>;
/** A hand boundary (a deal or an end) run under the table's current tenure, group-committed with the process's others (boundary-writer.ts: its arguments, the epoch given). */
type BoundaryWrite = (kind: Boundary['kind'], tableId: string, args: (epoch: string | null) => unknown[]) => Promise<unknown>;

/**
 * The committed deals a table keeps (issue 31; docs/dealer.md, "Every commitment is revealed"): what
 * a room that opens finds and reveals, the next deal it commits, the reveal of an abandoned one.
 */
function committedDeals(pool: pg.Pool, fencedQuery: FencedQuery, boundary: BoundaryWrite) {
  return {
    /**
     * Begins a hand and answers the seats it is dealt from (read under the table's lock); the hand's
     * committed deal and the next hand's, sealed, ride the same write (game.deal_hand).
     */
    async deal(tableId: string, handId: string, deals: { deal: SealedDeal; next: SealedDeal }): Promise<SeatRow[]> {
      return await boundary('deal', tableId, (epoch) => [tableId, handId, epoch, JSON.stringify(deals.deal), JSON.stringify(deals.next)]) as SeatRow[];
    },
    /**
     * A room opens its table: a hand or a committed deal its previous room left is abandoned; answers
     * the table's latest hand number, its chain head and the abandoned deals to reveal, in order.
     */
    async openDeals(tableId: string): Promise<{ handNumber: number; head: string | null; pending: PendingDeal[] }> {
      const { rows } = await fencedQuery<{ hand_number: string; head: string | null; pending: PendingDeal[] }>(
        tableId, 'select hand_number, head, pending from game.open_deals($1, $2)', (epoch) => [tableId, epoch],
      );
      return { handNumber: Number(rows[0]!.hand_number), head: rows[0]!.head, pending: rows[0]!.pending };
    },
    /** The table's abandoned deals not revealed yet, in hand order, and its chain head (the room holds the table). */
    async pendingDeals(tableId: string): Promise<{ head: string | null; pending: PendingDeal[] }> {
      const { rows } = await pool.query<{ head: string | null; pending: PendingDeal[] }>(
        `select (select h.record_hash from game.hand_records h where h.table_id = $1 and h.record_hash is not null order by h.hand_number desc limit 1) as head,
                (select coalesce(jsonb_agg(jsonb_build_object('handId', h.hand_id, 'handNumber', h.hand_number, 'deal', h.sealed_deal) order by h.hand_number), '[]')
                   from game.hand_records h where h.table_id = $1 and h.sealed_deal is not null) as pending`,
        [tableId],
      );
      return rows[0]!;
    },
    /** The next hand's deal, sealed, kept by the table before its commitment is published. */
    async commitDeal(tableId: string, next: SealedDeal): Promise<void> {
      await fencedQuery(tableId, 'select game.commit_deal($1, $2, $3::jsonb)', (epoch) => [tableId, epoch, JSON.stringify(next)]);
    },
    /** An abandoned deal's reveal and signed record, stored on its hand (game.reveal_abandoned); answers the record's hash. */
    async revealAbandoned(tableId: string, handId: string, deal: DealReveal, record: SignedRecord): Promise<string> {
      const { rows } = await fencedQuery<{ hash: string }>(
        tableId, 'select game.reveal_abandoned($1, $2, $3, $4::jsonb, $5, $6, $7) as hash',
        (epoch) => [tableId, handId, epoch, JSON.stringify(deal), record.text, record.signature, record.publicKey],
      );
      return rows[0]!.hash;
    },
  };
}

export function createHands(deps: {
  pool: pg.Pool; log: Logger; leases?: HandLeases;
  /** The test harness's owner pool: begin and finish (granted to no service login) run through it. */
  harness?: pg.Pool;
}) {
  const { pool } = deps;
  const tenure = (tableId: string) => deps.leases?.epochOf(tableId) ?? null;
  // a boundary refused by the fence: the tenure it was sent under is over, its room stops
  const fenced = (tableId: string, sentUnder: bigint | null) => (err: unknown) => {
    if (isLeaseLost(err)) deps.leases?.lost(tableId, sentUnder);
    throw err;
  };
  /**
   * Runs a boundary under the table's current tenure: its epoch is sent, and a refusal ends that
   * tenure only. `name`: the statement is prepared once per connection and its plan kept (the deal
   * and the end run every hand; parsing and planning them each time was a share of Postgres's CPU
   * per hand).
   */
  const fencedQuery = <R extends pg.QueryResultRow>(tableId: string, sql: string, params: (epoch: string | null) => unknown[], name?: string, via = pool) => {
    const sentUnder = tenure(tableId);
    return via.query<R>({ name, text: sql, values: params(sentUnder?.toString() ?? null) }).catch(fenced(tableId, sentUnder));
  };
  // the deals and ends of every table of the process, written together while a commit is in flight
  const groupCommit = createGroupCommit(dealerWriter(pool));
  const boundary: BoundaryWrite = (kind, tableId, args) => {
    const sentUnder = tenure(tableId);
    return groupCommit.write({ tableId, kind, args: args(sentUnder?.toString() ?? null) }).catch(fenced(tableId, sentUnder));
  };
  return {
    ...committedDeals(pool, fencedQuery, boundary),
    async begin(tableId: string, handId: string): Promise<void> {
      await fencedQuery(tableId, 'select game.begin_hand($1, $2, $3)', (epoch) => [tableId, handId, epoch], undefined, deps.harness);
    },
    /** The seats as they stand. */
    async seats(tableId: string): Promise<SeatRow[]> {
      return (await pool.query<SeatRow>({ name: 'game.seats_of', text: 'select * from game.seats_of($1)', values: [tableId] })).rows;
    },
    /**
     * The one hand end (game.end_hand), cash or tournament. A refusal says the end will never be
     * written (hand_abandoned: its start stacks stand; lease_lost: the room stops); any other
     * failure may be tried again, and a retry of an end that did commit answers what it committed.
     */
    async end(h: EndingHand): Promise<HandEndAnswer> {
      return await boundary('end', h.tableId, (epoch) => [
        h.tableId, h.handId, h.handNumber, stacksJson(h.stacks), h.rake.toString(), h.autoFolds, h.compact, h.started, h.agents, h.startedAt.toISOString(), epoch,
        JSON.stringify(h.deal), h.record.text, h.record.signature, h.record.publicKey,
      ]) as HandEndAnswer;
    },
    /** Releases the table from a hand that will not be played (the stacks of its start stand). */
    async abandon(tableId: string): Promise<string | null> {
      const { rows } = await fencedQuery<{ hand: string | null }>(tableId, 'select game.abandon_hand($1, $2) as hand', (epoch) => [tableId, epoch]);
      return rows[0]?.hand ?? null;
    },
    /** The dealer sits a seated player out or deals them in again (SQL keeps when it began). */
    async sitOut(tableId: string, userId: string, out: boolean): Promise<void> {
      await fencedQuery(tableId, 'select game.set_sitting_out($1, $2, $3, $4)', (epoch) => [tableId, userId, out, epoch]);
    },
    /** The players sat out for the house's idle time (game.house_rules): the ones to remove. */
    async idle(tableId: string): Promise<string[]> {
      const { rows } = await pool.query<{ user_id: string }>('select user_id from game.idle_players($1) as user_id', [tableId]);
      return rows.map((r) => r.user_id);
    },
    /** Releases the table from a hand begun but never dealt: nothing is recorded (no card was dealt). */
    async release(tableId: string, handId: string): Promise<void> {
      await fencedQuery(tableId, 'select game.release_hand($1, $2, $3)', (epoch) => [tableId, handId, epoch]);
    },
    async finish(tableId: string, handId: string, stacks: Record<string, bigint>, rake: bigint): Promise<HandEnd> {
      const { rows } = await fencedQuery<{ player_id: bigint; user_id: string }>(
        tableId, 'select player_id, user_id from game.finish_hand($1, $2, $3::jsonb, $4, $5)',
        (epoch) => [tableId, handId, stacksJson(stacks), rake.toString(), epoch], undefined, deps.harness,
      );
      return { busted: rows.map((r) => ({ playerId: r.player_id.toString(), userId: r.user_id })) };
    },
  };
}
