// The betting role (`--role betting`, BETTING_PORT): a small parimutuel betting service on who wins
// each Sit-and-Go (docs/architecture.md, "A bet"), on its own login (poker_betting) and its own schema
// (db/functions/betting/). The cage calls it for nothing (issue 32: a stake, an unbet and a claim are
// each one SQL transaction, server/betting/player-routes.ts); it serves its own reads and internal
// routes. It brings a market up to date on every request that touches it (betting.sync_market); the
// markets nobody touches are moved by the worker's periodic `betting_sweep_markets` (no timer here:
// periodic work runs one way, server/intents/periodic.ts).
import { createApp, serveRole } from '../http/app.ts';
import { loginCredentials } from '../config/index.ts';
import { createRolePool } from '../db/pools.ts';
import { bettingRoutes, installBettingRoutes } from '../betting/routes.ts';
import type { RoleContext, StartedRole } from './types.ts';

export async function startBetting({ config, databaseUrl, log }: RoleContext): Promise<StartedRole> {
  const roleLog = log.child({ role: 'betting' });
  const pool = createRolePool(databaseUrl, 'poker_betting', { max: 10, applicationName: 'betting', ...loginCredentials(config, 'poker_betting') });
  return serveRole({ role: 'betting', pool, log: roleLog, host: config.HOST, port: config.BETTING_PORT, build: async () => {
    const app = await createApp({
      log: roleLog,
      bodyLimit: config.HTTP_BODY_LIMIT,
      pool,
      api: { role: 'betting', routes: bettingRoutes },
      routes: (app) => installBettingRoutes(app, { pool, log: roleLog, serviceKey: config.SERVICE_KEY }),
    });
    return { app };
  } });
}
