// The cage role: the bank interface, journal-native (spec: "Cage"). Table creation, the cash loop
// (deposit, withdraw, forced withdraw, bust), grants, purchases and redemptions, custody claims,
// receipts, the player's betting routes (server/betting/player-routes.ts), the escape and custody paths (escape, holds,
// reconciliation, disputes, the arbiter's release); the routes still to come answer 501 not_yet_cage.
import type { Express, RequestHandler } from 'express';
import { createApp, serveRole } from '../http/app.ts';
import { createRolePool } from '../db/pools.ts';
import { lazyJwtVerifier } from '../http/jwt.ts';
import { authIssuer, deploymentEnvironment, loginCredentials } from '../config/index.ts';
import { createServiceClient } from '../http/service-client.ts';
import type { RoleContext, StartedRole } from './types.ts';
import { cashRoutes, installCashRoutes } from '../cage/cash.ts';
import { installMoneyRoutes, moneyRoutes } from '../cage/money.ts';
import { installOperatorGameRoutes, operatorGameRoutes } from '../cage/operator-game.ts';
import { installTournamentCageRoutes, tournamentCageRoutes } from '../cage/tournaments.ts';
import { installRakeRoutes, rakeRoutes } from '../cage/rake.ts';
import { installStandUpReconcileRoute, standUpReconcileRoutes } from '../cage/stand-ups.ts';
import { custodyRoutes, installCustodyRoutes } from '../cage/custody.ts';
import { installKeyRoutes, keyRoutes } from '../cage/keys.ts';
import { graceSeconds } from '../cage/seams.ts';
import { installNotYetRoutes, notYetRoutes } from '../cage/not-yet.ts';
import { gasRoutes, installGasRoutes } from '../cage/gas.ts';
import { cageReadRoutes, installCageReads } from '../cage/reads.ts';
import { bettingPlayerRoutes, installBettingPlayerRoutes } from '../betting/player-routes.ts';
import { loadReceiptSigner, RECEIPT_ALGORITHM } from '../cage/receipts.ts';
import { installTableRoutes, tableCreateRoutes } from '../bank-contract/tables.ts';
import { describeRoute, type RouteContract } from '../http/openapi.ts';

/** Every route the cage mounts, described (the test seed only while the test harness is permitted). */
export function cageRoutes(options: { testAuthPermitted: boolean }): RouteContract[] {
  return [
    describeRoute({
      method: 'get', path: '/api/cage/receipt-key', auth: 'none', summary: 'The public key the cage signs its receipts with',
      responses: { 200: '{ algorithm, publicKey }' },
    }),
    ...tableCreateRoutes({ testAuthPermitted: options.testAuthPermitted }), ...cashRoutes, ...tournamentCageRoutes, ...moneyRoutes, ...operatorGameRoutes, ...rakeRoutes,
    ...gasRoutes, ...cageReadRoutes(options.testAuthPermitted), ...standUpReconcileRoutes, ...bettingPlayerRoutes, ...custodyRoutes, ...keyRoutes, ...notYetRoutes,
  ];
}

/** Bank CORS: browser routes answer only the poker UI origins (POKER_UI_ORIGINS). */
function uiCors(origins: Set<string>): RequestHandler {
  return (req, res, next) => {
    const origin = req.get('origin');
    if (origin && origins.has(origin)) {
      res.set({
        'access-control-allow-origin': origin,
        'access-control-allow-credentials': 'true',
        'access-control-allow-headers': 'authorization, content-type, idempotency-key',
        'access-control-allow-methods': 'GET, POST, OPTIONS',
        'access-control-max-age': '600',
        vary: 'Origin',
      });
    } else if (origin) {
      res.vary('Origin');
    }
    if (req.method === 'OPTIONS') {
      if (origin && origins.has(origin)) return void res.status(204).end();
      // a preflight from no origin or another one: refused with a code, like every refusal
      return void res.status(403).json({ error: origin ? 'origin_not_allowed' : 'origin_required' });
    }
    next();
  };
}

export async function startCage({ config, databaseUrl, log, peers }: RoleContext): Promise<StartedRole> {
  const roleLog = log.child({ role: 'cage' });
  const pool = createRolePool(databaseUrl, 'poker_cage', { max: 20, applicationName: 'cage', ...loginCredentials(config, 'poker_cage') });
  const jwt = lazyJwtVerifier({ jwksUrl: config.AUTH_JWKS_URL, issuer: authIssuer(config), peerAuthUrl: () => peers?.get('auth') });
  const game = createServiceClient({
    baseUrl: () => config.GAME_URL ?? peers?.get('game') ?? `http://${config.HOST}:${config.GAME_PORT}`,
    serviceKey: config.SERVICE_KEY,
    timeoutMs: config.GAME_CALL_TIMEOUT_MS,
  });
  const uiOrigins = new Set((config.POKER_UI_ORIGINS ?? '').split(',').map((o) => o.trim()).filter(Boolean).map((o) => new URL(o).origin));
  return serveRole({ role: 'cage', pool, log: roleLog, host: config.HOST, port: config.CAGE_PORT, build: async () => {
    // the receipt key the cage holds (never one from the database), pinned and active, or no start
    const signer = await loadReceiptSigner(pool, config);
    roleLog.info({ keySource: signer.source, publicKey: signer.publicKeyHex }, 'receipt signing key loaded (pinned)');
    const app = await createApp({
      log: roleLog,
      bodyLimit: config.HTTP_BODY_LIMIT,
      pool,
      api: { role: 'cage', routes: cageRoutes({ testAuthPermitted: config.testAuthPermitted }) },
      before: (app: Express) => app.use(['/api/tables', '/api/deposit', '/api/withdraw', '/api/cage', '/api/custody', '/api/tournament', '/api/gas-tank', '/api/gas', '/api/economy', '/api/demo', '/api/house', '/api/betting'], uiCors(uiOrigins)),
      routes: (app: Express) => {
        app.get('/api/cage/receipt-key', (_req, res) => {
          res.json({ algorithm: RECEIPT_ALGORITHM, publicKey: signer.publicKeyHex });
        });
        const common = { pool, log: roleLog, jwt, serviceKey: config.SERVICE_KEY };
        installTableRoutes(app, {
          ...common, requireJwt: jwt.require, testAuthPermitted: config.testAuthPermitted,
          creationLimit: { tables: config.TABLE_CREATE_LIMIT, windowSeconds: config.TABLE_CREATE_WINDOW_SECONDS },
        });
        installCashRoutes(app, { ...common, game, signer });
        installTournamentCageRoutes(app, { ...common, game });
        installMoneyRoutes(app, { ...common, signer });
        installOperatorGameRoutes(app, common);
        installRakeRoutes(app, common);
        installGasRoutes(app, common);
        installCageReads(app, { ...common, game, testAuthPermitted: config.testAuthPermitted, environment: deploymentEnvironment(config) });
        installStandUpReconcileRoute(app, { ...common, game, signer, defaultGraceSeconds: graceSeconds(config.GAME_CALL_TIMEOUT_MS) });
        installBettingPlayerRoutes(app, { pool, log: roleLog, jwt });
        installCustodyRoutes(app, common);
        installKeyRoutes(app, common);
        installNotYetRoutes(app);
      },
    });
    return { app, fields: { receiptKey: signer.publicKeyHex } };
  } });
}
