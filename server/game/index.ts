// The game role: table rooms, the seat side of the cage's seams, hand boundaries. The dealer, the
// websocket, the claim board and tournaments join it with their issues.
import type { Express } from 'express';
import { z } from 'zod';
import { createRolePool } from '../db/pools.ts';
import { createApp, serveRole } from '../http/app.ts';
import { requireServiceKey } from '../http/auth.ts';
import { ApiError } from '../http/errors.ts';
import { createServiceClient } from '../http/service-client.ts';
import type { RoleContext, StartedRole } from '../roles/types.ts';
import { createHands } from './hands.ts';
import { installSeatRoutes } from './seats.ts';

const handBody = z.discriminatedUnion('action', [
  z.object({ action: z.literal('begin'), tableId: z.string().min(1).max(64), handId: z.string().min(1).max(128) }),
  z.object({
    action: z.literal('finish'),
    tableId: z.string().min(1).max(64),
    handId: z.string().min(1).max(128),
    stacks: z.record(z.string().regex(/^[1-9][0-9]{0,17}$/), z.number().int().min(0).max(Number.MAX_SAFE_INTEGER)),
    rake: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).default(0),
  }),
]);

export async function startGame({ config, databaseUrl, log, peers }: RoleContext): Promise<StartedRole> {
  const roleLog = log.child({ role: 'game' });
  const pool = createRolePool(databaseUrl, 'poker_game', { max: 20, applicationName: 'game' });
  const bank = createServiceClient({
    baseUrl: () => config.BANK_URL ?? peers?.get('cage') ?? `http://${config.HOST}:${config.CAGE_PORT}`,
    serviceKey: config.SERVICE_KEY,
    timeoutMs: config.GAME_CALL_TIMEOUT_MS,
  });
  const hands = createHands({ pool, bank, log: roleLog });
  return serveRole({ role: 'game', pool, log: roleLog, host: config.HOST, port: config.GAME_PORT, build: async () => {
    const app = await createApp({
      log: roleLog,
      bodyLimit: config.HTTP_BODY_LIMIT,
      pool,
      routes: (app: Express) => {
        // A table's room: its record and who sits where (deckSeed is never shown).
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

        installSeatRoutes(app, { pool, log: roleLog, serviceKey: config.SERVICE_KEY });

        // The test harness's hand boundaries (the dealer's calls, driven by a test): only while
        // the harness is permitted, and with the service key.
        if (config.testAuthPermitted) {
          app.post('/internal/test/hand', requireServiceKey(config.SERVICE_KEY), async (req, res) => {
            const b = handBody.parse(req.body ?? {});
            if (b.action === 'begin') {
              await hands.begin(b.tableId, b.handId);
              return void res.json({ ok: true });
            }
            const stacks = Object.fromEntries(Object.entries(b.stacks).map(([k, v]) => [k, BigInt(v)]));
            res.json({ ok: true, ...(await hands.finish(b.tableId, b.handId, stacks, BigInt(b.rake))) });
          });
        }
      },
    });
    // the database answers before we serve, and the rooms it holds are counted
    const { rows } = await pool.query<{ tables: number }>('select count(*)::int as tables from game.tables');
    return { app, fields: { tables: rows[0]!.tables } };
  } });
}
