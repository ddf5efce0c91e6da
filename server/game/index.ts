// The game role: the table read route, the seat side of the cage's seams, hand boundaries, the
// agents and hand histories, the claim board, and the live tables (the websocket rooms that drive the
// dealer) under this process's table leases. Tournaments join it with their issue (docs/architecture.md).
import type { Express } from 'express';
import { z } from 'zod';
import { createRolePool } from '../db/pools.ts';
import { createApp, serveRole } from '../http/app.ts';
import { requireServiceKey } from '../http/auth.ts';
import { ApiError } from '../http/errors.ts';
import { createServiceClient } from '../http/service-client.ts';
import type { RoleContext, StartedRole } from '../roles/types.ts';
import { authIssuer, deploymentEnvironment } from '../config/index.ts';
import { lazyJwtVerifier } from '../http/jwt.ts';
import { installHandHistoryRoutes } from './histories.ts';
import { installAgentRoutes } from './agents.ts';
import { createClaimBoard, installClaimRoutes } from './claims.ts';
import { createHands } from './hands.ts';
import { startGameProcess } from './live/lease.ts';
import { createLiveTables } from './live/ws.ts';
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
  const pool = createRolePool(databaseUrl, 'poker_game', { max: 20, applicationName: 'game', secret: config.DB_ROLE_SECRET });
  const bank = createServiceClient({
    baseUrl: () => config.BANK_URL ?? peers?.get('cage') ?? `http://${config.HOST}:${config.CAGE_PORT}`,
    serviceKey: config.SERVICE_KEY,
    timeoutMs: config.GAME_CALL_TIMEOUT_MS,
  });
  // this process's presence, before anything else: the leases of the tables it will run hang on it
  const gameProcess = await startGameProcess({
    databaseUrl, pool, log: roleLog, ttlSeconds: config.GAME_LEASE_TTL_SECONDS, url: config.GAME_PUBLIC_URL, dbRoleSecret: config.DB_ROLE_SECRET,
  }).catch(async (err: unknown) => {
    await pool.end();
    throw err;
  });
  const hands = createHands({ pool, bank, log: roleLog, leases: gameProcess });
  const jwt = lazyJwtVerifier({ jwksUrl: config.AUTH_JWKS_URL, issuer: authIssuer(config), peerAuthUrl: () => peers?.get('auth') });
  const auth = createServiceClient({
    baseUrl: () => config.AUTH_URL ?? peers?.get('auth') ?? `http://${config.HOST}:${config.PORT}`,
    serviceKey: config.SERVICE_KEY,
    timeoutMs: config.GAME_CALL_TIMEOUT_MS,
  });
  const environment = deploymentEnvironment(config);
  const clock = () => new Date();
  const board = createClaimBoard({ pool, log: roleLog, environment, clock, auth, bank });
  const live = createLiveTables({
    pool, log: roleLog, jwt, hands, board,
    options: { handDelayMs: config.HAND_DELAY_MS, timeoutsBeforeSitOut: config.TIMEOUTS_BEFORE_SIT_OUT, idleKickMs: config.IDLE_KICK_SECONDS * 1000 },
    bank,
    process: gameProcess,
    limits: {
      maxBufferedBytes: config.WS_MAX_BUFFERED_BYTES,
      pingIntervalMs: config.WS_PING_INTERVAL_SECONDS * 1000,
      idleUnloadMs: config.ROOM_IDLE_UNLOAD_SECONDS * 1000,
    },
  });
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

        // the seat functions announce their changes (game_seats); the room's process hears them
        installSeatRoutes(app, { pool, log: roleLog, serviceKey: config.SERVICE_KEY });
        installClaimRoutes(app, {
          board, jwt, serviceKey: config.SERVICE_KEY, clock, testClock: config.testAuthPermitted, pool, environment,
        });
        installAgentRoutes(app, { pool, log: roleLog, jwt, board });
        installHandHistoryRoutes(app, { pool, jwt });

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
    // the database answers before we serve; the rooms it holds and the claim board this
    // deployment resolves are counted (spec: the resolved environment and the loaded sections)
    const { rows } = await pool.query<{ tables: number; sections: number; board: boolean }>(
      `select (select count(*)::int from game.tables) as tables,
              (select count(*)::int from claims.resolved_sections($1)) as sections,
              (select claim_board_enabled from claims.board_settings($1)) as board`,
      [environment],
    );
    roleLog.info({ environment, sections: rows[0]!.sections, claimBoardEnabled: rows[0]!.board }, 'claim board catalog loaded');
    // before any route answers: hands interrupted by a process that is gone no longer hold their
    // tables (deposits and withdrawals would answer hand_in_progress until a room loaded them)
    for (const r of await gameProcess.recoverInterruptedHands()) {
      roleLog.warn({ tableId: r.tableId, handId: r.handId }, 'interrupted hand recovered at start: the stacks of its start stand');
    }
    return {
      app,
      fields: { tables: rows[0]!.tables, processId: gameProcess.id },
      onListening: (server, url) => {
        live.attach(server);
        if (!config.GAME_PUBLIC_URL) {
          void gameProcess.setUrl(url).catch((err) => roleLog.error({ err }, 'game process url not stored'));
        }
      },
      onStop: async () => {
        await live.close();
        await gameProcess.close();
      },
    };
  } }).then((started) => Object.assign(started, { live })).catch(async (err: unknown) => {
    await gameProcess.close().catch(() => undefined);
    throw err;
  });
}

