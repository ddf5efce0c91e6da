// Starts chosen roles in-process on ephemeral ports against a test database (already migrated, so
// no embedded PostgreSQL and no migrations). `stop()` stops them; the caller still drops its database.
import type { Logger } from 'pino';
import { loadConfig, type Role } from '../../server/config/index.ts';
import type { Platform } from '../../server/platform.ts';
import type { StartedRole } from '../../server/roles/types.ts';
import { createLogger } from '../../server/telemetry/index.ts';
import { DEV_DB_ROLE_SECRET } from '../../server/db/roles.ts';
import { generateMailKeyPem, loadMailKey, pinMailKey } from '../../server/worker/mail-key.ts';

export const TEST_SERVICE_KEY = 'test-service-key-0123456789abcdef';

/** This test process's worker mail key (a reset token is sealed to it): one per process, never a file. */
let mailKeyPem: string | undefined;
export function testMailKeyPem(): string {
  return (mailKeyPem ??= generateMailKeyPem());
}
/** Pins this process's worker mail key in the test database, as the owner does when it migrates. */
export async function pinTestMailKey(databaseUrl: string, pem = testMailKeyPem()) {
  await pinMailKey(databaseUrl, (await loadMailKey({ configuredPem: pem, nodeEnv: 'test', pgDataDir: '' }))!);
}

// A schedule that never fires during a test run: the worker's startup job is the one that runs.
export const QUIET_CRON = '0 0 1 1 *';

export interface TestPlatform extends Platform {
  /** The base URL of an HTTP role. */
  url(role: Role): string;
  role<T extends StartedRole = StartedRole>(role: Role): T;
}

export async function startTestPlatform(options: {
  databaseUrl: string;
  roles: Role[];
  /** Variables on top of the test defaults (e.g. NODE_ENV: 'production'). */
  env?: Record<string, string | undefined>;
  log?: Logger;
}): Promise<TestPlatform> {
  // Grafast reads this at import, as server/main.ts sets it: development checks under test.
  process.env.GRAPHILE_ENV ??= 'development';
  const { startPlatform } = await import('../../server/platform.ts');
  const config = loadConfig({
    ...process.env,
    DATABASE_URL: undefined,
    PORT: '0',
    GAME_PORT: '0',
    CAGE_PORT: '0',
    ADMIN_PORT: '0',
    BETTING_PORT: '0',
    CHAIN_BANK_PORT: '0',
    WEB_PORT: '0',
    BETTING_SWEEP_MS: '200',
    SERVICE_KEY: TEST_SERVICE_KEY,
    NODE_ENV: 'test',
    CAGE_AUDIT_CRON: QUIET_CRON,
    CAGE_RAKE_RECONCILE_CRON: QUIET_CRON,
    // the test cluster's service logins were set with the development secret (test/global-setup.ts)
    DB_ROLE_SECRET: DEV_DB_ROLE_SECRET,
    WORKER_MAIL_KEY: testMailKeyPem(),
    ...options.env,
  });
  // what the migrating process does for a worker it starts: the owner pins its mail key
  if (options.roles.includes('worker') && config.WORKER_MAIL_KEY) await pinTestMailKey(options.databaseUrl, config.WORKER_MAIL_KEY);
  const platform = await startPlatform({
    config,
    roles: options.roles,
    log: options.log ?? createLogger('silent'),
    databaseUrl: options.databaseUrl,
  });
  const role = <T extends StartedRole = StartedRole>(name: Role) => {
    const found = platform.roles.find((r) => r.role === name);
    if (!found) throw new Error(`role ${name} was not started`);
    return found as T;
  };
  return {
    ...platform,
    role,
    url(name) {
      const url = role(name).url;
      if (!url) throw new Error(`role ${name} has no HTTP`);
      return url;
    },
  };
}
