// The game role: the table read route, the seat side of the cage's seams, hand boundaries, the
// agents and hand histories, the claim board, and the live tables (the websocket rooms that drive the
// dealer) under this process's table leases. Tournaments join it with their issue (docs/architecture.md).
import type { Express } from 'express';
import type pg from 'pg';
import type { Logger } from 'pino';
import { createOwnerPool, createRolePool } from '../db/pools.ts';
import { createApp, serveRole } from '../http/app.ts';
import { bankClients } from '../bank-contract/routing.ts';
import { ownerUrlOf, type RoleContext, type StartedRole } from './types.ts';
import { authIssuer, deploymentEnvironment, loginCredentials } from '../config/index.ts';
import { lazyJwtVerifier } from '../http/jwt.ts';
import { dealerKeyRoutes, installDealerKeyRoute, loadDealerSigner, requirePinned } from '../game/hands/dealer-key.ts';
import { installHandHistoryRoutes } from '../game/hands/histories.ts';
import { installAgentRoutes } from '../game/agents/routes.ts';
import { installTournamentRoutes } from '../tournaments/routes.ts';
import { createClaimBoard, installClaimRoutes } from '../claims/board.ts';
import { createHands } from '../game/hands/hands.ts';
import { startGameProcess, type GameProcess } from '../game/live/lease.ts';
import { listOwnUrl } from '../game/live/process-urls.ts';
import { createLiveTables } from '../game/live/ws.ts';
import { installSeatRoutes } from '../game/seats/routes.ts';
import { installTableReadRoute } from '../game/tables/read.ts';
import { installTestHandRoute, testHandRoutes } from '../game/hands/test-route.ts';
import type { RouteContract } from '../http/openapi.ts';
import { tableReadRoutes } from '../game/tables/read.ts';
import { seatRoutes } from '../game/seats/routes.ts';
import { claimRoutes, type Environment } from '../claims/board.ts';
import { agentRoutes } from '../game/agents/routes.ts';
import { handHistoryRoutes } from '../game/hands/histories.ts';
import { tournamentRoutes } from '../tournaments/routes.ts';
import { asyncApiRoute, installAsyncApiRoute } from '../game/live/asyncapi.ts';

/** Every route the game role mounts, described (the test hand route only while the test harness is permitted). */
export function gameRoutes(options: { environment: Environment; testAuthPermitted: boolean }): RouteContract[] {
  return [
    ...tableReadRoutes, ...seatRoutes, ...claimRoutes(options.environment), ...agentRoutes, ...handHistoryRoutes, ...dealerKeyRoutes, ...tournamentRoutes,
    ...(options.testAuthPermitted ? testHandRoutes : []), asyncApiRoute,
  ];
}



/**
 * Before any route answers: the database answers, the rooms it holds and the claim board this
 * deployment resolves are counted (spec: the resolved environment and the loaded sections), and hands
 * interrupted by a process that is gone no longer hold their tables (deposits and withdrawals would
 * answer hand_in_progress until a room loaded them). Returns the number of tables.
 */
async function readyToServe(pool: pg.Pool, environment: string, gameProcess: GameProcess, roleLog: Logger): Promise<number> {
  const { rows } = await pool.query<{ tables: number; sections: number; board: boolean }>(
    `select (select count(*)::int from game.table_records) as tables,
            (select count(*)::int from claims.resolved_sections($1)) as sections,
            (select claim_board_enabled from claims.board_settings($1)) as board`,
    [environment],
  );
  roleLog.info({ environment, sections: rows[0]!.sections, claimBoardEnabled: rows[0]!.board }, 'claim board catalog loaded');
  for (const r of await gameProcess.recoverInterruptedHands()) {
    roleLog.warn({ tableId: r.tableId, handId: r.handId }, 'interrupted hand recovered at start: the stacks of its start stand');
  }
  return rows[0]!.tables;
}

/**
 * This process's presence, before anything else: the leases of the tables it will run hang on it.
 * Outside production it lists its own URL first (as the database owner); in production the
 * operators list it (npm run ops -- process-url add), or registering with it is refused.
 */
async function startPresence(config: RoleContext['config'], urls: { databaseUrl: string; ownerUrl: string | null }, pool: pg.Pool, log: Logger): Promise<GameProcess> {
  if (urls.ownerUrl && config.NODE_ENV !== 'production' && config.GAME_PUBLIC_URL) await listOwnUrl(urls.ownerUrl, config.GAME_PUBLIC_URL);
  return startGameProcess({
    databaseUrl: urls.databaseUrl, pool, log, ttlSeconds: config.GAME_LEASE_TTL_SECONDS, url: config.GAME_PUBLIC_URL,
    dbRoleSecret: config.DB_ROLE_SECRET, dbPassword: loginCredentials(config, 'poker_game').password,
  });
}

/** The URL this process listens on, announced (listed first as the owner outside production). */
async function announceUrl(gameProcess: GameProcess, ownerUrl: string | null, url: string, log: Logger): Promise<void> {
  try {
    if (ownerUrl) await listOwnUrl(ownerUrl, url);
    await gameProcess.setUrl(url);
  } catch (err) {
    log.error({ err }, 'game process url not stored (npm run ops -- process-url add URL lists it)');
  }
}

/**
 * The dealer's key: the process's own (GAME_DEALER_KEY, or outside production its key file), and
 * pinned in the database (an operator's act; the development start pins its own): else no start.
 */
async function pinnedDealer(config: RoleContext['config'], pool: pg.Pool, roleLog: Logger) {
  try {
    const { signer, source } = await loadDealerSigner(config);
    await requirePinned(pool, signer.publicKeyHex);
    roleLog.info({ publicKey: signer.publicKeyHex, source }, 'dealer key loaded (pinned)');
    return signer;
  } catch (err) {
    await pool.end();
    throw err;
  }
}

export async function startGame(ctx: RoleContext): Promise<StartedRole> {
  const { config, databaseUrl, log, peers } = ctx, ownerUrl = ownerUrlOf(ctx);
  const roleLog = log.child({ role: 'game' });
  const pool = createRolePool(databaseUrl, 'poker_game', { max: 20, applicationName: 'game', ...loginCredentials(config, 'poker_game') });
  // both banks: a table's calls go to its own (game.tables.bank); a claim's grant is posted in SQL (claims.credit_claim)
  const banks = bankClients(config, peers);
  const dealer = await pinnedDealer(config, pool, roleLog);
  // outside production (and not split: DB_LOGIN_ONLY has no owner) it lists its own URL as the owner
  const listsItself = config.NODE_ENV !== 'production' && ownerUrl !== null, gameProcess = await startPresence(config, { databaseUrl, ownerUrl }, pool, roleLog).catch(async (err: unknown) => {
    await pool.end();
    throw err;
  });
  // the harness's hand boundaries run as the owner (begin_hand, finish_hand: granted to no service login)
  // (none in a login-only process, which has no owner: there the boundaries run as the game login, refused)
  const harness = config.testAuthPermitted && ownerUrl ? createOwnerPool(ownerUrl, 2) : undefined, leases = gameProcess;
  const hands = createHands({ pool, log: roleLog, leases, harness });
  const jwt = lazyJwtVerifier({ jwksUrl: config.AUTH_JWKS_URL, issuer: authIssuer(config), peerAuthUrl: () => peers?.get('auth') });
  const environment = deploymentEnvironment(config);
  const clock = () => new Date();
  const board = createClaimBoard({ pool, log: roleLog, environment, clock });
  const live = createLiveTables({
    pool, log: roleLog, jwt, hands, board, dealer,
    options: { handDelayMs: config.HAND_DELAY_MS, timeoutsBeforeSitOut: config.TIMEOUTS_BEFORE_SIT_OUT },
    banks,
    process: gameProcess,
    limits: { maxBufferedBytes: config.WS_MAX_BUFFERED_BYTES, pingIntervalMs: config.WS_PING_INTERVAL_SECONDS * 1000, idleUnloadMs: config.ROOM_IDLE_UNLOAD_SECONDS * 1000 },
  });
  return serveRole({ role: 'game', pool, log: roleLog, host: config.HOST, port: config.GAME_PORT, build: async () => {
    const app = await createApp({
      log: roleLog,
      bodyLimit: config.HTTP_BODY_LIMIT,
      pool,
      api: { role: 'game', routes: gameRoutes({ environment, testAuthPermitted: config.testAuthPermitted }) },
      routes: (app: Express) => {
        installAsyncApiRoute(app);
        installTableReadRoute(app, { pool });

        // the seat functions announce their changes (game_seats); the room's process hears them
        installSeatRoutes(app, { pool, log: roleLog, serviceKey: config.SERVICE_KEY, chainRpcUrl: config.EVM_RPC_URL });
        installClaimRoutes(app, {
          board, jwt, serviceKey: config.SERVICE_KEY, clock, testClock: config.testAuthPermitted, pool, environment,
        });
        installAgentRoutes(app, { pool, log: roleLog, jwt, board });
        installHandHistoryRoutes(app, { pool, jwt });
        installDealerKeyRoute(app, { signer: dealer, pool });
        installTournamentRoutes(app, {
          pool, log: roleLog, serviceKey: config.SERVICE_KEY, requireAdmin: jwt.requireAdmin,
          loadRoom: (tableId) => live.registry.room(tableId),
        });

        // the test harness's hand boundaries (the dealer's calls, driven by a test)
        if (config.testAuthPermitted) installTestHandRoute(app, { hands, serviceKey: config.SERVICE_KEY, process: gameProcess });
      },
    });
    const tables = await readyToServe(pool, environment, gameProcess, roleLog);
    return {
      app,
      fields: { tables, processId: gameProcess.id },
      onListening: (server, url) => {
        live.attach(server);
        // tournaments starting or playing get their dealer back (their timers live in the worker)
        void live.registry.resumeTournaments().catch((err) => roleLog.error({ err }, 'tournaments not resumed'));
        if (!config.GAME_PUBLIC_URL) void announceUrl(gameProcess, listsItself ? ownerUrl : null, url, roleLog);
      },
      onStop: async () => {
        await live.close();
        await gameProcess.close();
        await harness?.end();
      },
    };
  } }).then((started) => Object.assign(started, { live })).catch(async (err: unknown) => {
    await gameProcess.close().catch(() => undefined);
    await harness?.end().catch(() => undefined);
    throw err;
  });
}

