// GET /api/tables (no auth): the lobby, one summary per table (filters mode, status, moneyKind;
// paged by tableId with `after`). GET /api/tables/:tableId (no auth): a table's room, its record and
// who sits where. The deck seed is never shown.
import type { Express } from 'express';
import type pg from 'pg';
import { ApiError, zodIssues } from '../../http/errors.ts';
import { describeRoute } from '../../http/openapi.ts';
import { tableListQuery } from '../../bank-contract/contract.ts';

export { tableListQuery };
import { lobbyTables, tableRoom } from '../queries.ts';


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
    const rows = await lobbyTables(pool, q);
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
    const t = await tableRoom(pool, String(req.params.tableId));
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
