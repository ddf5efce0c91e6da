// `npm start [-- --role cage --role admin ...]`: the whole platform (or some roles) in one process.
import { ConfigError, loadConfig, parseRoles } from './config/index.ts';
import { createLogger, installTelemetry, shutdownTelemetry } from './telemetry/index.ts';

async function main() {
  let config, roles;
  try {
    config = loadConfig();
    roles = parseRoles(process.argv.slice(2));
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
  const log = createLogger(config.LOG_LEVEL);
  await installTelemetry({ serviceName: config.OTEL_SERVICE_NAME, otlpEndpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT });
  log.info({ roles, nodeEnv: config.NODE_ENV, testAuth: config.testAuthPermitted }, 'starting');

  let platform;
  try {
    platform = await startPlatform({ config, roles, log });
  } catch (err) {
    if (err instanceof MigrationError) log.fatal(err.message);
    else log.fatal({ err }, 'failed to start');
    await shutdownTelemetry();
    process.exit(1);
  }
  for (const r of platform.roles) {
    const line = r.url ? `${r.role.padEnd(8)} ${r.url}` : `${r.role.padEnd(8)} running (no HTTP)`;
    process.stdout.write(`${line}\n`);
  }
  if (!config.DATABASE_URL) process.stdout.write(`postgres ${platform.databaseUrl.replace(/:[^:@/]+@/, ':***@')}\n`);

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) {
      log.warn({ signal }, 'second signal: exiting now');
      process.exit(130);
    }
    stopping = true;
    log.info({ signal }, 'stopping');
    await platform.stop();
    await shutdownTelemetry();
    log.info('stopped');
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
}

await main();
