// The worker role: graphile-worker running tasks/ on the poker_worker database role.
import { run, type Runner } from 'graphile-worker';
import { createCageAuditTask } from '../../tasks/cage_audit.ts';
import { createRolePool } from '../db/pools.ts';
import type { Config } from '../config/index.ts';
import type { RoleContext, StartedRole } from '../roles/types.ts';
import { workerLogger } from './logger.ts';

export function crontab(config: Config) {
  return [
    // the audit at startup and then on the configured schedule
    `${config.CAGE_AUDIT_CRON} cage_audit ?id=cage_audit`,
  ].join('\n');
}

export async function startWorker({ config, databaseUrl, log }: RoleContext): Promise<StartedRole & { runner: Runner }> {
  const pool = createRolePool(databaseUrl, 'poker_worker', { max: 4, applicationName: 'worker' });
  let runner: Runner;
  try {
    runner = await run({
      pgPool: pool,
      concurrency: 2,
      noHandleSignals: true,
      pollInterval: 1000,
      logger: workerLogger(log),
      taskList: { cage_audit: createCageAuditTask(log) },
      crontab: crontab(config),
    });
  } catch (err) {
    await pool.end();
    throw err;
  }
  const stop = async () => {
    try {
      await runner.stop();
    } finally {
      // ended even when the runner had already stopped on its own (its stop() then rejects)
      await pool.end();
    }
  };
  try {
    // once at startup, not only on the schedule
    await runner.addJob('cage_audit', {}, { jobKey: 'cage_audit:startup', jobKeyMode: 'replace' });
  } catch (err) {
    await stop().catch(() => undefined);
    throw err;
  }
  log.info('worker started');
  return { role: 'worker', runner, stop };
}
