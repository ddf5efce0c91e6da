// The worker role: graphile-worker running tasks/ on the poker_worker database role.
import type pg from 'pg';
import { run, type Runner } from 'graphile-worker';
import { createCageAuditTask } from '../../tasks/cage_audit.ts';
import { createCageReconcileCashTask, graceSeconds } from '../../tasks/cage_reconcile_cash.ts';
import { createChainBankReconcileTask } from '../../tasks/chain_bank_reconcile.ts';
import { createCageReconcileRakeTask } from '../../tasks/cage_reconcile_rake.ts';
import { createCageReconcileGasTask } from '../../tasks/cage_reconcile_gas.ts';
import { createCageSignBustReceiptsTask } from '../../tasks/cage_sign_bust_receipts.ts';
import { createBettingSweepMarketsTask } from '../../tasks/betting_sweep_markets.ts';
import { createDeliverConditionTask } from '../../tasks/deliver_condition.ts';
import { createSendPasswordResetTask } from '../../tasks/send_password_reset.ts';
import {
  createTournamentBlindsTask, createTournamentPayoutReconcileTask, createTournamentPayoutTask, createTournamentRearmTask,
  createTournamentReserveExpiryTask, createTournamentSettleTask, createTournamentStartTask,
} from '../../tasks/tournament_timers.ts';
import { createServiceClient } from '../http/service-client.ts';
import { loginCredentials } from '../config/index.ts';
import { createRolePool } from '../db/pools.ts';
import type { Config } from '../config/index.ts';
import type { RoleContext, StartedRole } from './types.ts';
import { workerLogger } from '../worker/logger.ts';
import { loadMailKey } from '../worker/mail-key.ts';
import { guardedWorkerEvents } from '../worker/notify-guard.ts';
import { crontab, queueStartupRuns, withPeriods } from '../intents/periodic.ts';

/** The banks the worker posts to: the cage (its reconcilers, a cage table's payouts) and the chain bank (a chain table's payouts). */
function bankClients(config: Config, peers: RoleContext['peers']) {
  return {
    cage: createServiceClient({
      baseUrl: () => config.CAGE_URL ?? peers?.get('cage') ?? `http://${config.HOST}:${config.CAGE_PORT}`,
      serviceKey: config.SERVICE_KEY,
      timeoutMs: config.GAME_CALL_TIMEOUT_MS * 4,
    }),
    chainBank: createServiceClient({
      baseUrl: () => config.CHAIN_BANK_URL ?? peers?.get('chain-bank') ?? `http://${config.HOST}:${config.CHAIN_BANK_PORT}`,
      serviceKey: config.SERVICE_KEY,
      // a payout waits for its receipt (the confirm window) before it answers
      timeoutMs: Math.max(config.GAME_CALL_TIMEOUT_MS * 4, config.CHAIN_CONFIRM_WINDOW_MS + 5000),
    }),
  };
}

/**
 * graphile-worker stops its runner on a NOTIFY "worker:migrate" saying a breaking migration ran,
 * and any database login may send one (a NOTIFY needs no privilege): the audit and the reconcilers
 * would stop. This platform's worker runs graphile-worker's migrations itself at start, so it
 * drops those notices on its own connections (issue 31; attacks-procs.test.ts).
 */
function ignoreMigrateNotices(pool: pg.Pool) {
  pool.on('connect', (client) => {
    const emit = client.emit.bind(client);
    (client as { emit: (event: string | symbol, ...args: unknown[]) => boolean }).emit = (event, ...args) =>
      event === 'notification' && (args[0] as { channel?: string } | undefined)?.channel === 'worker:migrate' ? false : emit(event, ...args);
  });
}

/** The private half of the key reset tokens are sealed to (its public half is pinned by the owner). */
async function workerMailKey(config: RoleContext['config'], log: RoleContext['log']) {
  const mailKey = await loadMailKey({ configuredPem: config.WORKER_MAIL_KEY, nodeEnv: config.NODE_ENV, pgDataDir: config.PG_DATA_DIR });
  if (mailKey) log.info({ source: mailKey.source }, 'worker mail key loaded');
  else log.warn('WORKER_MAIL_KEY is not set: password reset mail cannot be sent');
  return mailKey;
}

export async function startWorker({ config, databaseUrl, log, peers }: RoleContext): Promise<StartedRole & { runner: Runner }> {
  const pool = createRolePool(databaseUrl, 'poker_worker', { max: 4, applicationName: 'worker', ...loginCredentials(config, 'poker_worker') });
  // graphile-worker's own pool: it serialises job ids to JSON when it records a failure, which a
  // BigInt (our int8 parsing) makes throw, leaving a failed job locked instead of retried
  const jobsPool = createRolePool(databaseUrl, 'poker_worker', { max: 4, applicationName: 'worker-jobs', int8AsString: true, ...loginCredentials(config, 'poker_worker') });
  ignoreMigrateNotices(jobsPool);
  const game = createServiceClient({
    baseUrl: () => config.GAME_URL ?? peers?.get('game') ?? `http://${config.HOST}:${config.GAME_PORT}`,
    serviceKey: config.SERVICE_KEY,
    timeoutMs: config.GAME_CALL_TIMEOUT_MS,
  });
  const { cage, chainBank } = bankClients(config, peers);
  const mailKey = await workerMailKey(config, log);
  let runner: Runner;
  try {
    runner = await run({
      pgPool: jobsPool,
      concurrency: 2,
      noHandleSignals: true,
      pollInterval: 1000,
      logger: workerLogger(log),
      // a `worker:migrate` notice (any login may NOTIFY) stops the worker only when a migration bears it out
      events: guardedWorkerEvents(pool, log),
      // the periodic tasks' periods and keys: server/intents/periodic.ts
      taskList: withPeriods(config, {
        cage_audit: createCageAuditTask(log),
        cage_reconcile_rake: createCageReconcileRakeTask({ pool, log }),
        cage_reconcile_gas: createCageReconcileGasTask({ pool, log }),
        cage_sign_bust_receipts: createCageSignBustReceiptsTask({ pool, cage, log }),
        betting_sweep_markets: createBettingSweepMarketsTask({ pool, log }),
        deliver_condition: createDeliverConditionTask({ game, log }),
        send_password_reset: createSendPasswordResetTask({ mailWebhook: config.AUTH_MAIL_WEBHOOK_URL, mailKey, log }),
        tournament_start: createTournamentStartTask({ pool, log }),
        tournament_blinds: createTournamentBlindsTask({ pool, log }),
        tournament_reserve_expiry: createTournamentReserveExpiryTask({ pool, log }),
        tournament_settle: createTournamentSettleTask({ pool, log }),
        tournament_payout: createTournamentPayoutTask({ pool, cage, chainBank, log }),
        tournament_payout_reconcile: createTournamentPayoutReconcileTask({ pool, cage, chainBank, log }),
        chain_bank_reconcile: createChainBankReconcileTask({ pool, chainBank, log, serviceKeySet: config.SERVICE_KEY !== undefined }),
        tournament_rearm: createTournamentRearmTask({ pool, log }),
        cage_reconcile_cash: createCageReconcileCashTask({ pool, game, cage, log, graceSeconds: graceSeconds(config.GAME_CALL_TIMEOUT_MS) }),
      }),
      crontab: crontab(config),
    });
  } catch (err) {
    await Promise.all([pool.end(), jobsPool.end()]);
    throw err;
  }
  const stop = async () => {
    try {
      await runner.stop();
    } finally {
      // ended even when the runner had already stopped on its own (its stop() then rejects)
      await Promise.all([pool.end(), jobsPool.end()]);
    }
  };
  try {
    // the periodic tasks' startup runs (the audit, the reconcilers: server/intents/periodic.ts)
    await queueStartupRuns(runner, config);
    // tournaments: every live one's timers armed again from the stored state
    await runner.addJob('tournament_rearm', {}, { jobKey: 'tournament_rearm', jobKeyMode: 'replace' });
  } catch (err) {
    await stop().catch(() => undefined);
    throw err;
  }
  log.info('worker started');
  return { role: 'worker', runner, stop };
}
