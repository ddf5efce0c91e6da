// Periodic work, one way (issue 32): every periodic task of the platform, its key and its period,
// defined here once, and run by graphile-worker in the worker role. A period given as a cron
// expression is a line of graphile-worker's crontab; a period in seconds (graphile-worker's crontab
// counts minutes, and the reconcilers run every 30 s by default, the tests' every second) is the same
// job queued again by its own run under its one job key (`every` below, the only place that does).
// No role runs a timer of its own: the chain bank's reconciler is this list's `chain_bank_reconcile`,
// which asks the chain bank over its service route (the operator key stays in the chain-bank process).
// The betting role's market sweep is this list's `betting_sweep_markets` (the betting role runs no timer).
import type { JobHelpers, Runner, Task } from 'graphile-worker';
import type { Config } from '../config/index.ts';

export type Schedule = { cron: string } | { seconds: number };

export interface Periodic {
  task: string;
  schedule(config: Config): Schedule;
  /** Also run once when the worker starts. */
  atStartup?: true;
  what: string;
}

/** The payout reconciler's period and the age of a payout it posts again (spec: Limits, 30 s). */
export const PAYOUT_REPOST_SECONDS = 30;

export const PERIODIC: readonly Periodic[] = [
  { task: 'cage_audit', schedule: (c) => ({ cron: c.CAGE_AUDIT_CRON }), atStartup: true, what: 'the audit (CAGE_AUDIT_CRON)' },
  { task: 'cage_reconcile_rake', schedule: (c) => ({ cron: c.CAGE_RAKE_RECONCILE_CRON }), what: 'the house rows of the rake, claimed (no chip moves)' },
  { task: 'cage_reconcile_gas', schedule: () => ({ cron: '* * * * *' }), what: 'gas withdrawals a stopped cage left reserved, refunded' },
  {
    task: 'cage_sign_bust_receipts', schedule: () => ({ cron: '* * * * *' }),
    what: 'the receipts of the busts the hands\' ends closed, signed by the cage (the hand\'s end also queues it)',
  },
  {
    task: 'betting_sweep_markets', schedule: (c) => ({ seconds: c.BETTING_SWEEP_MS / 1000 }), atStartup: true,
    what: 'every live betting market moved along with its tournament (BETTING_SWEEP_MS)',
  },
  {
    task: 'cage_reconcile_cash', schedule: (c) => ({ seconds: c.CAGE_RECONCILE_INTERVAL_SECONDS }), atStartup: true,
    what: 'cash buy-ins and settlements left pending, lost stand-ups',
  },
  { task: 'tournament_payout_reconcile', schedule: () => ({ seconds: PAYOUT_REPOST_SECONDS }), atStartup: true, what: 'payouts of either bank unconfirmed after 30 s, posted again' },
  {
    task: 'chain_bank_reconcile', schedule: (c) => ({ seconds: c.CHAIN_RECONCILE_INTERVAL_SECONDS }), atStartup: true,
    what: 'the chain bank\'s reconciler, asked over POST /internal/reconcile',
  },
];

/** graphile-worker's crontab: the cron-scheduled tasks, each under its own id. */
export function crontab(config: Config): string {
  return PERIODIC.flatMap((p) => {
    const s = p.schedule(config);
    return 'cron' in s ? [`${s.cron} ${p.task} ?id=${p.task}`] : [];
  }).join('\n');
}

/** The task list with every seconds-scheduled task queued again after each run (whatever happened to it). */
export function withPeriods(config: Config, tasks: Record<string, Task>): Record<string, Task> {
  const out = { ...tasks };
  for (const p of PERIODIC) {
    const s = p.schedule(config);
    const task = tasks[p.task];
    if (!task || !('seconds' in s)) continue;
    out[p.task] = async (payload: unknown, helpers: JobHelpers) => {
      try {
        await task(payload, helpers);
      } finally {
        await helpers.addJob(p.task, {}, { jobKey: p.task, jobKeyMode: 'replace', runAt: new Date(Date.now() + s.seconds * 1000) });
      }
    };
  }
  return out;
}

/** The startup runs: a cron task under its startup key, a seconds task under its one key (its later runs replace it). */
export async function queueStartupRuns(runner: Runner, config: Config) {
  for (const p of PERIODIC.filter((x) => x.atStartup)) {
    const key = 'cron' in p.schedule(config) ? `${p.task}:startup` : p.task;
    await runner.addJob(p.task, {}, { jobKey: key, jobKeyMode: 'replace' });
  }
}
