// Starts the platform: the database (embedded unless DATABASE_URL is set), the migrations, then
// each requested role. Stops in reverse: roles first (they finish what is in flight), database last.
import type { Logger } from 'pino';
import pg from 'pg';
import type { Config, Role } from './config/index.ts';
import { deploymentEnvironment, loginCredentials, requireLoginPasswords } from './config/index.ts';
import { loginUrl, passwordVariable, ROLE_LOGIN, type ServiceLogin } from './db/roles.ts';
import { startEmbeddedPostgres, type EmbeddedPostgres } from './db/embedded.ts';
import { migrate } from './db/migrate.ts';
import { pinDevelopmentKeys } from './crypto/pins.ts';
import { developmentKeyDir } from './crypto/key-files.ts';
import { loadMailKey, pinMailKey } from './worker/mail-key.ts';
import { pinDevelopmentDealerKey } from './game/hands/dealer-key.ts';
import type { Peers, RoleContext, StartedRole } from './roles/types.ts';
import { startAuth } from './roles/auth.ts';
import { startCage } from './roles/cage.ts';
import { startGame } from './roles/game.ts';
import { startAdmin } from './roles/admin.ts';
import { startWorker } from './roles/worker.ts';
import { startBetting } from './roles/betting.ts';
import { startChainBank } from './roles/chain-bank.ts';
import { startWeb } from './roles/web.ts';

const STARTERS: Partial<Record<Role, (ctx: RoleContext) => Promise<StartedRole>>> = {
  auth: startAuth,
  game: startGame,
  cage: startCage,
  admin: startAdmin,
  worker: startWorker,
  betting: startBetting,
  'chain-bank': startChainBank,
  web: startWeb,
};

export interface Platform {
  databaseUrl: string;
  roles: StartedRole[];
  stop(): Promise<void>;
}

export async function startPlatform(options: {
  config: Config;
  roles: Role[];
  log: Logger;
  /** Skip the database and migrations (tests that already have a migrated database). */
  databaseUrl?: string;
}): Promise<Platform> {
  const { config, log } = options;
  let embedded: EmbeddedPostgres | undefined;
  let databaseUrl = options.databaseUrl ?? config.DATABASE_URL;
  const started: StartedRole[] = [];
  const stop = async () => {
    for (const role of [...started].reverse()) {
      try {
        await role.stop();
      } catch (err) {
        log.error({ err, role: role.role }, 'role did not stop cleanly');
      }
    }
    started.length = 0;
    await embedded?.stop();
  };
  try {
    if (config.DB_LOGIN_ONLY) {
      // a process of a split deployment: its logins alone, no owner act (npm run migrate did them)
      requireLoginPasswords(config, options.roles);
      databaseUrl = options.databaseUrl ?? config.DATABASE_URL!;
      await proveLogins(config, databaseUrl, options.roles);
      log.info({ logins: [...new Set(options.roles.map((r) => ROLE_LOGIN[r]).filter(Boolean))] }, 'login-only: no migration, no owner connection');
    } else {
      databaseUrl = await ownerSteps(options, databaseUrl, (e) => (embedded = e));
    }
    const ownerUrl = config.DB_LOGIN_ONLY ? null : databaseUrl!;
    const peers: Peers = new Map();
    for (const role of options.roles) {
      const start = STARTERS[role];
      if (!start) throw new Error(`role ${role} is not built yet`);
      const running = await start({ config, databaseUrl: databaseUrl!, ownerUrl, log, peers });
      started.push(running);
      if (running.url) peers.set(role, running.url);
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return { databaseUrl: databaseUrl!, roles: started, stop };
}

/** Pins the worker's mail key (env or development file) as the owner: reset tokens are sealed to it. */
async function pinWorkerMailKey(config: Config, ownerUrl: string, log: Logger) {
  const key = await loadMailKey({ configuredPem: config.WORKER_MAIL_KEY, nodeEnv: config.NODE_ENV, pgDataDir: config.PG_DATA_DIR });
  if (!key) return;
  if (await pinMailKey(ownerUrl, key)) log.info({ source: key.source }, 'worker mail key pinned (reset tokens are sealed to it)');
}

/**
 * As the owner (every start but a split deployment's): the embedded database when no DATABASE_URL,
 * the migrations, and outside production the development keys of the roles started here.
 */
async function ownerSteps(
  options: { config: Config; roles: Role[]; log: Logger; databaseUrl?: string },
  given: string | undefined, onEmbedded: (e: EmbeddedPostgres) => void,
): Promise<string> {
  const { config, log } = options;
  let databaseUrl = given;
  if (!databaseUrl) {
    const embedded = await startEmbeddedPostgres({
      dataDir: config.PG_DATA_DIR,
      port: config.PG_PORT,
      log: (msg) => log.info({ component: 'embedded-postgres' }, msg),
    });
    onEmbedded(embedded);
    databaseUrl = embedded.url;
    log.info({ dataDir: embedded.dataDir, port: embedded.port }, 'embedded PostgreSQL started');
  }
  if (!options.databaseUrl) {
    const result = await migrate(databaseUrl, { log: (msg) => log.info({ component: 'migrate' }, msg), roleSecret: config.DB_ROLE_SECRET, seedSwitches: { realMoney: config.REAL_MONEY_ENABLED, environment: deploymentEnvironment(config), testSeeds: config.testAuthPermitted, idleKickSeconds: config.IDLE_KICK_SECONDS } });
    log.info({ applied: result.applied.length, repeatables: result.repeatablesApplied }, 'database migrated');
    // the owner pins the public half of the worker's mail key (no service login may)
    if (options.roles.includes('worker')) await pinWorkerMailKey(config, databaseUrl, log);
  }
  // outside production, as the owner (the URL the migrations ran with; the test harness's): the
  // keys of the roles started here (their variables, or files generated beside the data
  // directory) pinned (server/crypto/pins.ts). In production an operator pins them.
  for (const k of await pinDevelopmentKeys(databaseUrl, config, options.roles)) {
    log.info({ purpose: k.purpose, publicKey: k.publicKey, source: k.source, newlyPinned: k.added }, `${k.purpose} key pinned (from ${k.source})`);
  }
  if (config.NODE_ENV !== 'production' && options.roles.some((r) => r === 'auth' || r === 'cage')) {
    log.info({ keyDir: developmentKeyDir(config.PG_DATA_DIR) }, 'development keys: an unset key variable uses its file in this folder (0600)');
  }
  // outside production the owner pins the game role's own dealer key (its key file), as a migration
  // would; in production an operator pins it (npm run ops -- dealer-key pin)
  if (options.roles.includes('game')) {
    const pinned = await pinDevelopmentDealerKey(databaseUrl, config);
    if (pinned) log.info({ publicKey: pinned.publicKey, source: pinned.source }, 'development dealer key pinned (its private half stays in that file)');
  }
  return databaseUrl;
}

/** Each login of the roles logs in with its given password, else no start, naming the variable. */
async function proveLogins(config: Config, databaseUrl: string, roles: Role[]): Promise<void> {
  const logins = new Set(roles.map((r) => ROLE_LOGIN[r]).filter((l): l is ServiceLogin => l !== undefined));
  for (const login of logins) {
    const { password } = loginCredentials(config, login);
    const client = new pg.Client({ connectionString: loginUrl(databaseUrl, login, undefined, password), application_name: 'login-check' });
    client.on('error', () => undefined);
    try {
      await client.connect();
    } catch (err) {
      throw new Error(`${passwordVariable(login)} does not log in as ${login}: ${(err as Error).message}`, { cause: err });
    } finally {
      await client.end().catch(() => undefined);
    }
  }
}
