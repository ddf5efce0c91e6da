// What an escape tells the players it unseated (issue 32): when the cage escapes a cash table
// (POST /escape/:tableId: every seat closed into custody, the table frozen, its dealer fenced) its
// seats' notice reaches the room, which reads its seats again; each player whose seat vanished and
// whom the escape unseated gets `table_escaped`, naming their custody entry as GET /api/custody shows
// it (a clean escape: their own FREE entry; a divergent one: the table's hold, needs_reconciliation).
import type pg from 'pg';
import { toJson, type ServerMessageOf } from './wire.ts';

interface NoticeRow { user_id: string; escape_id: bigint | string; outcome: 'clean' | 'divergent'; entry_id: bigint | string; amount: bigint | string; status: string }

/** The `table_escaped` message of each of these users the table's escape unseated (none: no escape, or not theirs). */
export async function escapeNotices(pool: pg.Pool, tableId: string, userIds: string[]): Promise<{ userId: string; message: string }[]> {
  if (userIds.length === 0) return [];
  const { rows } = await pool.query<NoticeRow>(
    'select user_id, escape_id, outcome, entry_id, amount, status from game.escape_notices($1, $2::uuid[])', [tableId, userIds],
  );
  return rows.map((r) => ({
    userId: r.user_id,
    message: toJson({
      type: 'table_escaped', tableId, escapeId: String(r.escape_id), outcome: r.outcome,
      entry: { id: String(r.entry_id), amount: String(r.amount), status: r.status as ServerMessageOf<'table_escaped'>['entry']['status'] },
    } satisfies ServerMessageOf<'table_escaped'>),
  }));
}
