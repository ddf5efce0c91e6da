// The game's reads (issue 32: reads through views), typed here: the lobby and a table's room
// (through game.table_records and game.seats: db/functions/game/60_read_views.sql), agents and hand
// listings (through game.agent_records and game.hand_records: db/migrations/000051_reads_through_views.sql).
// A hand as a player may see it is game.hand_for_player (the history redacted for them); the hand
// boundaries are hands/hands.ts.
import type pg from 'pg';
import { storedHand } from './hands/compact.ts';

type Db = Pick<pg.ClientBase, 'query'>;

/** An agent with its latest published version (null: none yet). */
export interface AgentRecord { id: string; name: string; version: number | null; created_at: Date }

/** The lobby's filters: kind of play, status, money, and the page (after a table id, at most `limit`). */
export interface LobbyFilter { mode?: string; status?: string; moneyKind?: string; after?: string; limit: number }

/** The lobby: one summary per table (the public settings only), by table id. */
export async function lobbyTables(db: Db, f: LobbyFilter) {
  const { rows } = await db.query(
    `select t.table_id, t.game_type, t.money_kind, t.status, t.mode, t.kind, t.tournament_state, t.current_level,
            t.hand_in_progress,
            coalesce((t.public_settings ->> 'maxPlayers')::int, (t.public_settings ->> 'seats')::int) as seats,
            t.public_settings -> 'smallBlind' as small_blind, t.public_settings -> 'bigBlind' as big_blind,
            t.public_settings -> 'entryFee' as entry_fee, t.seated_count as seated
       from game.table_records t
      where ($1::text is null or t.mode::text = $1) and ($2::text is null or t.status::text = $2)
        and ($3::text is null or t.money_kind::text = $3) and ($4::text is null or t.table_id > $4)
      order by t.table_id
      limit $5`,
    [f.mode ?? null, f.status ?? null, f.moneyKind ?? null, f.after ?? null, f.limit],
  );
  return rows;
}

/** A table's room: its record (the public settings, never the deck seed) and who sits where; undefined for no such table. */
export async function tableRoom(db: Db, tableId: string) {
  const { rows } = await db.query(
    `select t.table_id, t.game_type, t.public_settings as settings, t.money_kind, t.bank, t.status, t.mode, t.kind,
            t.tournament_state, t.current_level, t.level_started_at, t.hand_in_progress, t.abandoned_deals,
            coalesce((select jsonb_agg(jsonb_build_object('seatIndex', p.seat_index, 'userId', p.user_id,
                        'chipBalance', p.chip_balance::text, 'status', p.status) order by p.seat_index)
                        from game.seats p where p.table_id = t.table_id and p.status <> 'closed'), '[]') as seats
       from game.table_records t where t.table_id = $1`,
    [tableId],
  );
  return rows[0];
}

/** The user's agents, oldest first. */
export async function agentsOf(db: Db, userId: string): Promise<AgentRecord[]> {
  const { rows } = await db.query<AgentRecord>(
    'select a.id, a.name, a.version, a.created_at from game.agent_records a where a.owner_user_id = $1 order by a.created_at, a.id', [userId],
  );
  return rows;
}

/** The table's latest signed record's hash (its chain head), null before its first. */
export async function chainHeadOf(db: Db, tableId: string): Promise<string | null> {
  const { rows } = await db.query<{ head: string | null }>(
    'select h.record_hash as head from game.hand_records h where h.table_id = $1 and h.record_hash is not null order by h.hand_number desc limit 1',
    [tableId],
  );
  return rows[0]?.head ?? null;
}

/** The filters of a hand listing: the caller, and optionally an agent, a table, a time bound. */
export interface HandFilter { userId: string; agentId: string | null; tableId: string | null; before: string | Date | null; limit: number }

/** The caller's hands the filters select, newest first (the same filters for JSON and PHH). */
const LISTED_HANDS = `
  from game.hand_records h
 where h.players @> array[$1::uuid]
   and ($2::uuid is null or h.agents @> array[$2::uuid])
   and ($3::text is null or h.table_id = $3)
   and ($4::timestamptz is null or h.started_at < $4)
 order by h.started_at desc, h.hand_id desc
 limit $5`;
const filterParams = (f: HandFilter) => [f.userId, f.agentId, f.tableId, f.before, f.limit];

/** The caller's net over a hand's result: the sum of their seats' (null: none of their seats ended it). */
function netOf(result: Record<string, unknown> | null, userId: string): string | null {
  const stacks = Array.isArray(result?.stacks) ? (result.stacks as { userId?: unknown; net?: unknown }[]) : [];
  let net: bigint | null = null;
  for (const s of stacks) if (s.userId === userId && typeof s.net === 'string' && /^-?[0-9]{1,30}$/.test(s.net)) net = (net ?? 0n) + BigInt(s.net);
  return net === null ? null : net.toString();
}

/**
 * The listed hands with the caller's net over each (null: none of their seats ended it): summed in
 * SQL from a hand's jsonb result (stored before issue 33), here from its compact value's.
 */
export async function listedHands(db: Db, f: HandFilter) {
  const { rows } = await db.query(
    `select h.hand_id, h.table_id, h.hand_number, h.status, h.started_at, h.ended_at, h.agents, h.compact,
            (select sum((s ->> 'net')::numeric) from jsonb_array_elements(h.result -> 'stacks') s
              where s ->> 'userId' = $1::text) as net
     ${LISTED_HANDS}`,
    filterParams(f),
  );
  for (const r of rows) {
    if (r.compact) r.net = netOf(storedHand(r).result, f.userId);
    delete r.compact;
  }
  return rows;
}

/** The listed hands as the caller may see each (game.hand_for_player), for a PHH file. */
export async function listedHandsForPlayer(db: Db, f: HandFilter) {
  const { rows } = await db.query(
    `select (x.hand).hand_id, (x.hand).table_id, (x.hand).hand_number, (x.hand).status, (x.hand).started_at,
            (x.hand).history, (x.hand).result, (x.hand).compact, x.seats,
            (x.hand).deal, (x.hand).record_hash, (x.hand).record_signature, (x.hand).dealer_key
       from (select h.hand_id, h.started_at ${LISTED_HANDS}) l
       cross join lateral game.hand_for_player(l.hand_id, $1) x
      order by l.started_at desc, l.hand_id desc`,
    filterParams(f),
  );
  return rows;
}
