// GET /api/tables (no auth): the lobby, one summary per table (filters mode, status, moneyKind;
// paged by tableId with `after`). GET /api/tables/:tableId (no auth): a table's room, its record and
// who sits where. The deck seed is never shown.
import type { Express } from 'express';
import type pg from 'pg';
import { z } from 'zod';
import { ApiError, zodIssues } from '../../http/errors.ts';
import { describeRoute } from '../../http/openapi.ts';
import { tableListQuery } from '../../bank-contract/contract.ts';

export { tableListQuery };


/** The contracts of installTableReadRoute (the cage serves the same two reads: server/cage/reads.ts). */
export const tableReadRoutes = [
  describeRoute({
    method: 'get', path: '/api/tables', auth: 'none', summary: 'The lobby: one summary per table, paged by tableId', query: tableListQuery,
    responses: { 200: '{ tables: [{ tableId, gameType, moneyKind, status, mode, kind, seats, seated, handInProgress, ... }], next }' },
  }),
  describeRoute({
    method: 'get', path: '/api/tables/:tableId', auth: 'none', summary: 'A table: its record and who sits where (never the deck seed)',
    responses: { 200: '{ tableId, gameType, settings, moneyKind, bank, status, mode, kind, tournamentState, currentLevel, levelStartedAt, handInProgress, abandonedDeals, seats }', 404: 'table_not_found' },
  }),
];

export function installTableReadRoute(app: Express, deps: { pool: pg.Pool }) {
  const { pool } = deps;
  app.get('/api/tables', async (req, res) => {
    const parsed = tableListQuery.safeParse(req.query);
    if (!parsed.success) throw new ApiError(400, 'bad_request', zodIssues(parsed.error));
    const q = parsed.data;
    const { rows } = await pool.query(
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
      [q.mode ?? null, q.status ?? null, q.moneyKind ?? null, q.after ?? null, q.limit],
    );
    res.json({
      tables: rows.map((t) => ({
        tableId: t.table_id, gameType: t.game_type, moneyKind: t.money_kind, status: t.status, mode: t.mode, kind: t.kind,
        seats: t.seats, seated: Number(t.seated), handInProgress: t.hand_in_progress,
        ...(t.mode === 'sng'
          ? { tournamentState: t.tournament_state, currentLevel: t.current_level, entryFee: t.entry_fee }
          : { smallBlind: t.small_blind, bigBlind: t.big_blind }),
      })),
      next: rows.length === q.limit ? rows[rows.length - 1].table_id : null,
    });
  });

  app.get('/api/tables/:tableId', async (req, res) => {
    const { rows } = await pool.query(
      `select t.table_id, t.game_type, t.public_settings as settings, t.money_kind, t.bank, t.status, t.mode, t.kind,
              t.tournament_state, t.current_level, t.level_started_at, t.hand_in_progress, t.abandoned_deals,
              coalesce((select jsonb_agg(jsonb_build_object('seatIndex', p.seat_index, 'userId', p.user_id,
                          'chipBalance', p.chip_balance::text, 'status', p.status) order by p.seat_index)
                          from game.seats p where p.table_id = t.table_id and p.status <> 'closed'), '[]') as seats
         from game.table_records t where t.table_id = $1`,
      [req.params.tableId],
    );
    const t = rows[0];
    if (!t) throw new ApiError(404, 'table_not_found');
    res.json({
      // bank: whose money the table's is ('cage' or 'chain': the web role's proxy routes its bank calls by it)
      tableId: t.table_id, gameType: t.game_type, settings: t.settings, moneyKind: t.money_kind, bank: t.bank, status: t.status,
      mode: t.mode, kind: t.kind, tournamentState: t.tournament_state, currentLevel: t.current_level,
      levelStartedAt: t.level_started_at, handInProgress: t.hand_in_progress,
      // how many of the table's committed deals ended abandoned (each revealed in a signed record: docs/dealer.md)
      abandonedDeals: t.abandoned_deals, seats: t.seats,
    });
  });
}
