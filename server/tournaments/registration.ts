// A registration's reserve (game.tournament_reserve): a server-assigned seat held, without money,
// until the entry fee is paid through the bank's deposit or the reserve self-releases
// (RESERVE_TTL_SECONDS, on the table's clock). Shared by the websocket's register_for_tournament
// (humans) and the internal tournament-register route (agents).
import type pg from 'pg';
import { RESERVE_TTL_SECONDS } from './lifecycle.ts';

export interface Reserved {
  seatIndex: number;
  reservedUntil: Date;
  registeredCount: number;
}

/**
 * `sid`: the grant of the registrant's access JWT (a websocket's); null for the internal route, where
 * the registrant is the agent's owner (SQL derives either, never takes a user id).
 */
export async function reserveSeat(
  pool: pg.Pool, r: { tableId: string; sid: string | null; agentId: string | null; advisorAgentId: string | null },
): Promise<Reserved> {
  const { rows } = await pool.query<{ seat_index: number; reserved_until: Date; registered_count: number }>(
    'select seat_index, reserved_until, registered_count from game.tournament_reserve($1, $2, $3, $4, $5)',
    [r.tableId, r.sid, r.agentId, r.advisorAgentId, RESERVE_TTL_SECONDS],
  );
  const row = rows[0]!;
  return { seatIndex: row.seat_index, reservedUntil: row.reserved_until, registeredCount: row.registered_count };
}
