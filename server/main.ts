// `npm start [-- --role cage --role admin ...]`: the whole platform (or some roles) in one process.
import { ConfigError, loadConfig, parseRoles, requireLoginPasswords } from './config/index.ts';
import { createLogger, installTelemetry, shutdownTelemetry } from './telemetry/index.ts';
import type { Platform } from './platform.ts';
import { installLastResortHandlers } from './last-resort.ts';
import { developmentKeyDir } from './crypto/key-files.ts';

async function main() {
  let config, roles;
  try {
    config = loadConfig();
    roles = parseRoles(process.argv.slice(2));
    requireLoginPasswords(config, roles);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`refusing to boot: ${err.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw err;
  }
  // Grafast reads this at import: development checks everywhere but production.
  process.env.GRAPHILE_ENV ??= config.NODE_ENV === 'production' ? 'production' : 'development';
  const { startPlatform } = await import('./platform.ts');
  const { MigrationError } = await import('./db/migrate.ts');
  // readable on a developer's terminal; JSON everywhere else (files, containers, collectors)
  const log = createLogger(config.LOG_LEVEL, 'poker', undefined, config.NODE_ENV === 'development' && process.stdout.isTTY === true);
  installLastResortHandlers(log);
  await installTelemetry({ serviceName: config.OTEL_SERVICE_NAME, otlpEndpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT });
  log.info({ roles, nodeEnv: config.NODE_ENV, testAuth: config.testAuthPermitted }, 'starting');

  // Signals are ours from here on: a Ctrl-C while the database or the migrations are still starting
  // must not kill node by default and leave its postgres behind; it stops once the start settles.
  let starting: Promise<Platform | undefined> | undefined;
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) {
      log.warn({ signal }, 'second signal: exiting now');
      process.exit(130);
    }
    stopping = true;
    log.info({ signal }, 'stopping');
    let code = 0;
    try {
      await (await starting)?.stop();
    } catch (err) {
      log.error({ err }, 'did not stop cleanly');
      code = 1;
    }
    await shutdownTelemetry();
    log.info('stopped');
    process.exit(code);
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => void shutdown(signal));

  starting = startPlatform({ config, roles, log }).catch(async (err: unknown) => {
    if (err instanceof MigrationError) log.fatal(err.message);
    else log.fatal({ err }, 'failed to start');
    await shutdownTelemetry();
    process.exit(1);
  });
  const platform = await starting;
  if (!platform || stopping) return;
  for (const r of platform.roles) {
    const line = r.url ? `${r.role.padEnd(8)} ${r.url}` : `${r.role.padEnd(8)} running (no HTTP)`;
    process.stdout.write(`${line}\n`);
    // the chain bank's local anvil (npm start without EVM_RPC_URL)
    const chain = (r as { chain?: { url: string } }).chain;
    if (chain) process.stdout.write(`${'chain'.padEnd(8)} ${chain.url}\n`);
  }
  if (!config.DATABASE_URL) process.stdout.write(`postgres ${platform.databaseUrl.replace(/:[^:@/]+@/, ':***@')}\n`);
  // where the signing keys without a variable are kept (outside production: generated, pinned)
  const files = [
    ['cage', 'CAGE_RECEIPT_KEY', 'receipt.key'], ['auth', 'AUTH_JWT_KEY', 'jwt.key'], ['game', 'GAME_DEALER_KEY', 'dealer.key'], ['worker', 'WORKER_MAIL_KEY', 'mail.pem'],
  ] as const;
  const kept = files.filter(([role, variable]) => roles.includes(role) && !config[variable]).map(([, , file]) => file);
  if (config.NODE_ENV !== 'production' && kept.length) {
    process.stdout.write(`${'keys'.padEnd(8)} ${developmentKeyDir(config.PG_DATA_DIR)} (${kept.join(', ')}: 0600, their public halves pinned by the owner)\n`);
  }
}

await main();
