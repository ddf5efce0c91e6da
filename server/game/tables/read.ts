// GET /api/tables/:tableId (no auth): a table's room, its record and who sits where. The deck seed
// is never shown.
import type { Express } from 'express';
import type pg from 'pg';
import { ApiError } from '../../http/errors.ts';

export function installTableReadRoute(app: Express, deps: { pool: pg.Pool }) {
  const { pool } = deps;
  app.get('/api/tables/:tableId', async (req, res) => {
    const { rows } = await pool.query(
      `select t.table_id, t.game_type, t.settings - 'deckSeed' as settings, t.money_kind, t.status, t.mode, t.kind,
              t.tournament_state, t.current_level, t.level_started_at, t.current_hand_id is not null as hand_in_progress,
              coalesce((select jsonb_agg(jsonb_build_object('seatIndex', p.seat_index, 'userId', p.user_id,
                          'chipBalance', p.chip_balance::text, 'status', p.status) order by p.seat_index)
                          from game.table_players p where p.table_id = t.table_id and p.status <> 'closed'), '[]') as seats
         from game.tables t where t.table_id = $1`,
      [req.params.tableId],
    );
    const t = rows[0];
    if (!t) throw new ApiError(404, 'table_not_found');
    res.json({
      tableId: t.table_id, gameType: t.game_type, settings: t.settings, moneyKind: t.money_kind, status: t.status,
      mode: t.mode, kind: t.kind, tournamentState: t.tournament_state, currentLevel: t.current_level,
      levelStartedAt: t.level_started_at, handInProgress: t.hand_in_progress, seats: t.seats,
    });
  });
}
