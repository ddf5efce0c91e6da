// Hand boundaries: what the dealer calls between hands. A hand holds its table (seat funding and
// stand-up answer 409 hand_in_progress); its end writes the new stacks and the rake in one
// transaction (game.finish_hand), then every position left with no chips is settled as a bust by
// the cage (an explicit zero bust_close row and receipt), best effort: a bust the cage did not
// take is settled when the player's seat is next touched (its stand-up shows a zero stack).
import type pg from 'pg';
import type { Logger } from 'pino';
import type { ServiceClient } from '../../http/service-client.ts';
import { isLeaseLost } from '../live/lease.ts';

export interface HandEnd {
  busted: { playerId: string; userId: string; settled: boolean }[];
}

/** A tournament hand's end: its busts with the places they took, and the tournament's state after it. */
export interface TournamentHandEnd {
  busted: { playerId: string; userId: string; seat: number; place: number; tiePlace: number }[];
  state: string;
}

/** The table leases of this process (live/lease.ts): the epoch each boundary carries, and the fence's refusal. */
export interface HandLeases {
  epochOf(tableId: string): bigint | null;
  /** The tenure whose epoch a boundary carried was refused (a later tenure of this process is not touched). */
  lost(tableId: string, epoch: bigint | null): void;
}

export function createHands(deps: { pool: pg.Pool; bank: ServiceClient; log: Logger; leases?: HandLeases }) {
  const { pool, bank, log } = deps;
  const tenure = (tableId: string) => deps.leases?.epochOf(tableId) ?? null;
  // a boundary refused by the fence: the tenure it was sent under is over, its room stops
  const fenced = (tableId: string, sentUnder: bigint | null) => (err: unknown) => {
    if (isLeaseLost(err)) deps.leases?.lost(tableId, sentUnder);
    throw err;
  };
  /** Runs a boundary under the table's current tenure: its epoch is sent, and a refusal ends that tenure only. */
  const fencedQuery = <R extends pg.QueryResultRow>(tableId: string, sql: string, params: (epoch: string | null) => unknown[]) => {
    const sentUnder = tenure(tableId);
    return pool.query<R>(sql, params(sentUnder?.toString() ?? null)).catch(fenced(tableId, sentUnder));
  };
  return {
    async begin(tableId: string, handId: string): Promise<void> {
      await fencedQuery(tableId, 'select game.begin_hand($1, $2, $3)', (epoch) => [tableId, handId, epoch]);
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
    /** A tournament hand's end (no money moves: the stacks are tournament chips; busts are placed, not settled). */
    async finishTournament(tableId: string, handId: string, stacks: Record<string, bigint>, autoFolds: number): Promise<TournamentHandEnd> {
      const { rows } = await fencedQuery<{ player_id: bigint | null; user_id: string; seat_index: number; elimination_order: number; tie_place: number; state: string }>(
        tableId, 'select player_id, user_id, seat_index, elimination_order, tie_place, state from game.finish_tournament_hand($1, $2, $3::jsonb, $4, $5)',
        (epoch) => [tableId, handId, JSON.stringify(Object.fromEntries(Object.entries(stacks).map(([k, v]) => [k, Number(v)]))), autoFolds, epoch],
      );
      return {
        busted: rows.filter((r) => r.player_id !== null).map((r) => ({
          playerId: r.player_id!.toString(), userId: r.user_id, seat: r.seat_index, place: r.elimination_order, tiePlace: r.tie_place,
        })),
        state: rows[0]?.state ?? 'playing',
      };
    },
    async finish(tableId: string, handId: string, stacks: Record<string, bigint>, rake: bigint): Promise<HandEnd> {
      const { rows } = await fencedQuery<{ player_id: bigint; user_id: string }>(
        tableId, 'select player_id, user_id from game.finish_hand($1, $2, $3::jsonb, $4, $5)',
        (epoch) => [tableId, handId, JSON.stringify(Object.fromEntries(Object.entries(stacks).map(([k, v]) => [k, Number(v)]))), rake.toString(), epoch],
      );
      const busted: HandEnd['busted'] = [];
      for (const r of rows) {
        const answer = await bank.post('/internal/bust', { tableId, userId: r.user_id });
        if (!answer.ok) log.warn({ tableId, userId: r.user_id, status: answer.status, error: answer.body.error }, 'bust not settled by the cage yet');
        busted.push({ playerId: r.player_id.toString(), userId: r.user_id, settled: answer.ok });
      }
      return { busted };
    },
  };
}
