// The durable timers of the Sit-and-Go lifecycle (db/functions/tournaments/05_jobs.sql names and
// queues them, keyed by the table, in the transaction of the move that arms them; run_at is on the table's
// clock). Each job calls one SQL move, which judges it again under the table's lock: a stale or
// replayed job changes nothing. The broadcast of a move is the SQL's NOTIFY game_tournament, relayed
// by the game process that holds the table's lease (docs/tournaments.md, "Timers and broadcasts").
//   tournament_start           starting -> playing once the 3 s grace elapsed;
//   tournament_blinds          the level's deadline: the next level (re-armed at the next deadline);
//   tournament_reserve_expiry  an unpaid reserve self-releases;
//   tournament_settle          ended -> settling (payout rows, their payout jobs);
//   tournament_payout          one place paid through its bank's withdraw (payoutIntent branch): the
//                              cage's, or the chain bank's for a chain-bank table;
//   tournament_payout_reconcile  every 30 s: the cage's payouts unconfirmed for more than 30 s are posted
//                              again (a chain-bank table's: the chain bank's own reconciler);
//   tournament_rearm           at worker start: every live tournament's timers armed from the stored state.
import type { Task } from 'graphile-worker';
import type pg from 'pg';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { ServiceClient } from '../server/http/service-client.ts';
import { refusedWith } from '../server/http/errors.ts';

const tablePayload = z.object({ tableId: z.string().min(1).max(64) });

interface TimerDeps {
  pool: pg.Pool;
  log: Logger;
}

/** A job whose payload does not parse cannot succeed later: logged, not retried. */
function parsed<T extends z.ZodType>(schema: T, raw: unknown, log: Logger, task: string): z.infer<T> | null {
  const p = schema.safeParse(raw);
  if (!p.success) log.error({ payload: raw, task }, 'tournament job dropped: malformed payload');
  return p.success ? p.data : null;
}

export function createTournamentStartTask({ pool, log }: TimerDeps): Task {
  return async (raw) => {
    const p = parsed(tablePayload, raw, log, 'tournament_start');
    if (!p) return;
    const { rows } = await pool.query<{ tournament_state: string }>('select tournament_state from game.tournament_begin_play($1)', [p.tableId]);
    log.info({ tableId: p.tableId, state: rows[0]?.tournament_state }, 'tournament start fired');
  };
}

export function createTournamentBlindsTask({ pool, log }: TimerDeps): Task {
  const payload = tablePayload.extend({ level: z.number().int().min(0) });
  return async (raw) => {
    const p = parsed(payload, raw, log, 'tournament_blinds');
    if (!p) return;
    const { rows } = await pool.query<{ advanced: boolean; current_level: number }>(
      'select advanced, current_level from game.tournament_advance_level($1, $2)', [p.tableId, p.level],
    );
    if (rows[0]?.advanced) log.info({ tableId: p.tableId, level: rows[0].current_level }, 'blind level advanced');
  };
}

export function createTournamentReserveExpiryTask({ pool, log }: TimerDeps): Task {
  const payload = tablePayload.extend({ playerId: z.string().regex(/^[0-9]{1,18}$/) });
  return async (raw) => {
    const p = parsed(payload, raw, log, 'tournament_reserve_expiry');
    if (!p) return;
    try {
      const { rows } = await pool.query<{ released: boolean }>('select game.tournament_release_reserve($1, null, $2) as released', [p.tableId, p.playerId]);
      if (rows[0]?.released) log.info({ tableId: p.tableId, playerId: p.playerId }, 'unpaid tournament reserve released');
    } catch (err) {
      // the tournament left registration meanwhile: nothing to release
      if (refusedWith(err, 'game', 'tournament_not_in_registration')) return;
      throw err;
    }
  };
}

export function createTournamentSettleTask({ pool, log }: TimerDeps): Task {
  return async (raw) => {
    const p = parsed(tablePayload, raw, log, 'tournament_settle');
    if (!p) return;
    const { rows } = await pool.query<{ tournament_state: string }>('select tournament_state from cage.settle_tournament($1)', [p.tableId]);
    if (rows[0]?.tournament_state === 'ended') log.info({ tableId: p.tableId }, 'tournament settlement waits for the audit of its hands');
    else log.info({ tableId: p.tableId, state: rows[0]?.tournament_state }, 'tournament settlement began');
  };
}

/**
 * One place paid through its bank's payoutIntent branch: the cage's, or the chain bank's for a
 * chain-bank table (`bank` in the payload, written by cage.settle_tournament from the table row;
 * each bank refuses a table that is not its own). A failure is retried by graphile-worker (and the
 * bank's reconciler: the worker's for the cage, the chain bank's own for the chain).
 */
export function createTournamentPayoutTask(deps: { cage: ServiceClient; chainBank: ServiceClient; log: Logger }): Task {
  const payload = tablePayload.extend({
    position: z.number().int().min(1).max(10), amount: z.string().regex(/^[0-9]{1,19}$/), bank: z.enum(['cage', 'chain']).default('cage'),
  });
  return async (raw) => {
    const p = parsed(payload, raw, deps.log, 'tournament_payout');
    if (!p) return;
    const bank = p.bank === 'chain' ? deps.chainBank : deps.cage;
    const name = p.bank === 'chain' ? 'the chain bank' : 'the cage';
    const answer = await bank.post('/api/withdraw', { tableId: p.tableId, payoutIntent: { position: p.position, amount: p.amount } });
    if ('unreachable' in answer) throw new Error(`${name} did not answer (${answer.reason}); retried`);
    if (!answer.ok) {
      if (answer.status >= 500) throw new Error(`${name} answered ${answer.status}; retried`);
      deps.log.error({ ...p, status: answer.status, error: answer.body.error }, `payout refused by ${name}; not retried`);
      return;
    }
    deps.log.info({ tableId: p.tableId, position: p.position }, 'tournament payout confirmed');
  };
}

/** A place's payout job key, the one SQL queues it with (game_private.payout_job_key): a re-post replaces it. */
export function tournamentPayoutJobKey(tableId: string, position: number): string {
  return `payout:${tableId}:${position}`;
}

/** Every intervalSeconds (30 s): payouts unconfirmed for more than 30 s are posted again, failedAt cleared. */
export function createTournamentPayoutReconcileTask(deps: TimerDeps & { intervalSeconds: number }): Task {
  return async (_raw, helpers) => {
    try {
      const { rows } = await deps.pool.query<{ table_id: string; position: number; amount: bigint }>(
        'select table_id, position, amount from cage.payouts_to_repost($1, $2)', [30, 200],
      );
      for (const r of rows) {
        await helpers.addJob('tournament_payout', { tableId: r.table_id, position: r.position, amount: r.amount.toString() }, {
          jobKey: tournamentPayoutJobKey(r.table_id, r.position), jobKeyMode: 'replace', maxAttempts: 1000,
        });
      }
      if (rows.length) deps.log.warn({ payouts: rows.length }, 'unconfirmed tournament payouts posted again');
    } finally {
      await helpers.addJob('tournament_payout_reconcile', {}, {
        jobKey: 'tournament_payout_reconcile', jobKeyMode: 'replace', runAt: new Date(Date.now() + deps.intervalSeconds * 1000),
      });
    }
  };
}

export function createTournamentRearmTask({ pool, log }: TimerDeps): Task {
  return async () => {
    const { rows } = await pool.query<{ n: number }>('select game.tournament_rearm() as n');
    if (rows[0]?.n) log.info({ tournaments: rows[0].n }, 'tournament timers re-armed');
  };
}
