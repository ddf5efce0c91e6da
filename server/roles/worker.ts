// The worker role: graphile-worker running tasks/ on the poker_worker database role.
import type pg from 'pg';
import { run, type Runner } from 'graphile-worker';
import { createCageAuditTask } from '../../tasks/cage_audit.ts';
import { createCageReconcileCashTask, graceSeconds } from '../../tasks/cage_reconcile_cash.ts';
import { createCageReconcileRakeTask } from '../../tasks/cage_reconcile_rake.ts';
import { createCageReconcileGasTask } from '../../tasks/cage_reconcile_gas.ts';
import { createCageSignBustReceiptsTask } from '../../tasks/cage_sign_bust_receipts.ts';
import { createClaimsCompleteLostTask } from '../../tasks/claims_complete_lost.ts';
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

export function crontab(config: Config) {
  return [
    // the audit at startup and then on the configured schedule
    `${config.CAGE_AUDIT_CRON} cage_audit ?id=cage_audit`,
    // the house rows of the rake, claimed (no chip moves)
    `${config.CAGE_RAKE_RECONCILE_CRON} cage_reconcile_rake ?id=cage_reconcile_rake`,
    // claims whose grant minted but whose ledger row never came, completed from the grant
    '* * * * * claims_complete_lost ?id=claims_complete_lost',
    // gas withdrawals a stopped cage left reserved, refunded to their tanks
    '* * * * * cage_reconcile_gas ?id=cage_reconcile_gas',
    // busts the hands' ends closed, their receipts signed by the cage (the hand's end also queues it)
    '* * * * * cage_sign_bust_receipts ?id=cage_sign_bust_receipts',
  ].join('\n');
}

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
      taskList: {
        cage_audit: createCageAuditTask(log),
        cage_reconcile_rake: createCageReconcileRakeTask({ pool, log }),
        cage_reconcile_gas: createCageReconcileGasTask({ pool, log }),
        cage_sign_bust_receipts: createCageSignBustReceiptsTask({ pool, cage, log }),
        claims_complete_lost: createClaimsCompleteLostTask({ pool, log }),
        deliver_condition: createDeliverConditionTask({ game, log }),
        send_password_reset: createSendPasswordResetTask({ mailWebhook: config.AUTH_MAIL_WEBHOOK_URL, mailKey, log }),
        tournament_start: createTournamentStartTask({ pool, log }),
        tournament_blinds: createTournamentBlindsTask({ pool, log }),
        tournament_reserve_expiry: createTournamentReserveExpiryTask({ pool, log }),
        tournament_settle: createTournamentSettleTask({ pool, log }),
        tournament_payout: createTournamentPayoutTask({ cage, chainBank, log }),
        tournament_payout_reconcile: createTournamentPayoutReconcileTask({ pool, log, intervalSeconds: 30 }),
        tournament_rearm: createTournamentRearmTask({ pool, log }),
        cage_reconcile_cash: createCageReconcileCashTask({
          pool, game, cage, log, intervalSeconds: config.CAGE_RECONCILE_INTERVAL_SECONDS, graceSeconds: graceSeconds(config.GAME_CALL_TIMEOUT_MS),
        }),
      },
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
    // once at startup, not only on the schedule
    await runner.addJob('cage_audit', {}, { jobKey: 'cage_audit:startup', jobKeyMode: 'replace' });
    // the cash reconciler now, then every CAGE_RECONCILE_INTERVAL_SECONDS (it schedules its next run)
    await runner.addJob('cage_reconcile_cash', {}, { jobKey: 'cage_reconcile_cash', jobKeyMode: 'replace' });
    // tournaments: every live one's timers armed again from the stored state; the payout reconciler now, then every 30 s
    await runner.addJob('tournament_rearm', {}, { jobKey: 'tournament_rearm', jobKeyMode: 'replace' });
    await runner.addJob('tournament_payout_reconcile', {}, { jobKey: 'tournament_payout_reconcile', jobKeyMode: 'replace' });
  } catch (err) {
    await stop().catch(() => undefined);
    throw err;
  }
  log.info('worker started');
  return { role: 'worker', runner, stop };
}
