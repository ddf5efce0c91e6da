// `npm run migrate [-- --print-passwords]`: the migrator of a split deployment, run apart from the
// role processes (docs/operations.md "One login per process"). With the owner's DATABASE_URL and
// DB_ROLE_SECRET (outside production the development secret serves when unset) it applies the
// migrations, sets every service login's verifier, seeds the switches as `npm start` does, and pins
// the worker's mail key when WORKER_MAIL_KEY is in its environment. --print-passwords writes each
// login's password to stdout, one `DB_PASSWORD_<LOGIN>=...` line each, for distribution (each role
// process gets its own login's line only); nothing of them goes to a log.
import { ConfigError, deploymentEnvironment, loadConfig } from '../config/index.ts';
import { migrate, MigrationError } from '../db/migrate.ts';
import { passwordVariable, rolePassword, SERVICE_LOGINS } from '../db/roles.ts';
import { loadMailKey, pinMailKey } from '../worker/mail-key.ts';

const USAGE = 'usage: npm run migrate [-- --print-passwords]   (DATABASE_URL: the owner\'s; DB_ROLE_SECRET)\n';

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  if (args.some((a) => a !== '--print-passwords')) {
    process.stderr.write(USAGE);
    return 2;
  }
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`refusing to migrate: ${err.message}\n`);
    return 78;
  }
  if (!config.DATABASE_URL || config.DB_LOGIN_ONLY) {
    process.stderr.write('refusing to migrate: DATABASE_URL must be the owner\'s URL (and DB_LOGIN_ONLY unset): the migrator is the owner\n');
    return 78;
  }
  const url = config.DATABASE_URL;
  const result = await migrate(url, {
    log: (msg) => process.stderr.write(`migrate: ${msg}\n`),
    roleSecret: config.DB_ROLE_SECRET,
    seedSwitches: { realMoney: config.REAL_MONEY_ENABLED, environment: deploymentEnvironment(config), testSeeds: config.testAuthPermitted, idleKickSeconds: config.IDLE_KICK_SECONDS },
  });
  process.stderr.write(`migrated: ${result.applied.length} migration(s) applied\n`);
  // the worker's mail key: its public half pinned by the owner (production: only from the variable)
  if (config.WORKER_MAIL_KEY) {
    const key = await loadMailKey({ configuredPem: config.WORKER_MAIL_KEY, nodeEnv: 'production', pgDataDir: config.PG_DATA_DIR });
    if (key && (await pinMailKey(url, key))) process.stderr.write('worker mail key pinned\n');
  }
  if (args.includes('--print-passwords')) {
    for (const login of SERVICE_LOGINS) process.stdout.write(`${passwordVariable(login)}=${rolePassword(login, config.DB_ROLE_SECRET)}\n`);
  }
  return 0;
}

try {
  process.exitCode = await main();
} catch (err) {
  process.stderr.write(`migrate failed: ${err instanceof MigrationError ? err.message : (err as Error).stack ?? String(err)}\n`);
  process.exitCode = 1;
}
