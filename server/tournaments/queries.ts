// The tournament routes' reads of the game's records (issue 32: reads through views): typed here,
// through the read views (game.agent_records: db/migrations/000051_reads_through_views.sql;
// game.table_records, game.tournaments, game.seats: db/functions/game/60_read_views.sql).
import type pg from 'pg';

type Db = Pick<pg.ClientBase, 'query'>;

/** The user who owns the agent, undefined for no such agent. */
export async function agentOwnerOf(db: Db, agentId: string): Promise<string | undefined> {
  const { rows } = await db.query<{ owner_user_id: string }>('select a.owner_user_id from game.agent_records a where a.id = $1', [agentId]);
  return rows[0]?.owner_user_id;
}
