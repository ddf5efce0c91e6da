// The tournament routes' reads (issue 32: reads through views): the SQL of every read of the
// tournament routes, typed here, through the read views (game.agent_records:
// db/migrations/000051_reads_through_views.sql; game.table_records, game.tournaments, game.seats:
// db/functions/game/60_read_views.sql) and game.tournament_payouts.
import type pg from 'pg';

type Db = Pick<pg.ClientBase, 'query'>;

/** The user who owns the agent, undefined for no such agent. */
export async function agentOwnerOf(db: Db, agentId: string): Promise<string | undefined> {
  const { rows } = await db.query<{ owner_user_id: string }>('select a.owner_user_id from game.agent_records a where a.id = $1', [agentId]);
  return rows[0]?.owner_user_id;
}

/** A table's kind of play and tournament state, undefined for no such table. */
export async function tableMode(db: Db, tableId: string): Promise<{ mode: string; tournament_state: string | null } | undefined> {
  const { rows } = await db.query<{ mode: string; tournament_state: string | null }>('select mode, tournament_state from game.table_records where table_id = $1', [tableId]);
  return rows[0];
}

/** The user's live (not closed) registration at the tournament, if any. */
export async function liveRegistration(db: Db, tableId: string, userId: string): Promise<{ entry_state: string | null; agent_id: string | null } | undefined> {
  const { rows } = await db.query<{ entry_state: string | null; agent_id: string | null }>(
    "select entry_state, agent_id from game.seats where table_id = $1 and user_id = $2 and status <> 'closed'", [tableId, userId],
  );
  return rows[0];
}

/** The admin UI offers force-end for a tournament playing whose level is over 5 minutes old (spec: Limits). */
const FORCE_END_AVAILABLE = "(t.tournament_state = 'playing' and t.level_started_at < now() - interval '5 minutes')";
/**
 * The field's count: the live registrations while registering; from the start on, the entrants who
 * played (paid and not refunded), whatever their rows became after settlement.
 */
const REGISTERED_COUNT = "(case when t.tournament_state = 'registering' then t.registered_count else t.played_count end)";

/** The admin's list of tournaments, newest first (at most 500). */
export async function tournamentList(db: Db) {
  const { rows } = await db.query(
    `select t.table_id as "tableId", t.kind, t.tournament_state as state, t.current_level as "currentLevel",
            (t.settings ->> 'seats')::int as seats, t.settings ->> 'entryFee' as "entryFee",
            ${REGISTERED_COUNT} as "registeredCount",
            t.created_at as "createdAt", t.play_started_at as "playStartedAt", t.ended_at as "endedAt", t.closed_at as "closedAt",
            ${FORCE_END_AVAILABLE} as "forceEndAvailable"
       from game.tournaments t order by t.created_at desc limit 500`,
  );
  return rows;
}

/** The admin's view of one tournament: the tournament, its entrants (live first, by place) and its payouts. */
export async function tournamentDetail(db: Db, tableId: string) {
  const [{ rows: [t] }, { rows: entrants }, { rows: payouts }] = await Promise.all([
    db.query(
      `select table_id as "tableId", kind, money_kind as "moneyKind", tournament_state as state, current_level as "currentLevel",
              level_started_at as "levelStartedAt", starts_at as "startsAt", play_started_at as "playStartedAt",
              ended_at as "endedAt", closed_at as "closedAt", auto_fold_count as "autoFoldCount", settings,
              ${REGISTERED_COUNT} as "registeredCount", ${FORCE_END_AVAILABLE} as "forceEndAvailable"
         from game.tournaments t where table_id = $1`, [tableId]),
    db.query(
      `select p.user_id as "userId", p.agent_id as "agentId", p.seat_index as "seatIndex", p.entry_state as "entryState",
              p.registration, p.status,
              p.chip_balance::text as "entryClaim", p.tournament_stack::text as stack, p.elimination_order as position, p.tie_place as "tiedFrom",
              p.reserved_until as "reservedUntil", p.closed_at as "closedAt"
         from game.seats p where p.table_id = $1 and p.entry_state is not null
        order by (p.registration in ('refunded', 'released', 'expired')), p.elimination_order nulls first, p.seat_index`, [tableId]),
    db.query(
      `select position, user_id as "userId", amount::text, submitted_at as "submittedAt", confirmed_at as "confirmedAt",
              failed_at as "failedAt", tx_hash as "txHash" from game.tournament_payouts($1)`, [tableId]),
  ]);
  return { t, entrants, payouts };
}
