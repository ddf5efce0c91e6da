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
//                              cage's, or the chain bank's for a chain-bank table; its outcome recorded
//                              on the payout's intent (cage.intents);
//   tournament_payout_reconcile  periodic (server/intents/periodic.ts): payouts of either bank unconfirmed
//                              for more than 30 s are posted again (the reconciler framework);
//   tournament_rearm           at worker start: every live tournament's timers armed from the stored state.
import type { Task } from 'graphile-worker';
import type pg from 'pg';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { ServiceClient } from '../server/http/service-client.ts';
import { refusedWith } from '../server/http/errors.ts';
import { recordAttempt, runReconcilers, type Reconciler } from '../server/intents/framework.ts';

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

interface PayoutBanks { cage: ServiceClient; chainBank: ServiceClient }

/**
 * One place paid through its bank's withdraw (payoutIntent branch): the cage's, or the chain bank's
 * for a chain-bank table (each bank refuses a table that is not its own). Answers why it did not
 * finish (the bank unreachable, an error status, a payment not confirmed in the window), or null.
 */
export async function postPayout(
  banks: PayoutBanks, p: { tableId: string; position: number; amount: string; bank: 'cage' | 'chain' },
): Promise<{ failure: string | null; transient: boolean }> {
  const name = p.bank === 'chain' ? 'the chain bank' : 'the cage';
  const answer = await (p.bank === 'chain' ? banks.chainBank : banks.cage).post('/api/withdraw', { tableId: p.tableId, payoutIntent: { position: p.position, amount: p.amount } });
  if ('unreachable' in answer) return { failure: `${name} did not answer (${answer.reason})`, transient: true };
  if (!answer.ok) return { failure: `${name} answered ${answer.status} ${String(answer.body.error ?? '')}`.trim(), transient: answer.status >= 500 };
  const status = (answer.body as { status?: unknown }).status;
  return { failure: status === 'confirmed' ? null : `${name}: ${String(status)}, not confirmed yet`, transient: false };
}

/** The payout intent's key in cage.intents (kind `cage_payout`). */
export const payoutIntentKey = (tableId: string, position: number) => `${tableId}:${position}`;

/**
 * The first attempt at a place's payout (queued by cage.settle_tournament, `bank` from the table
 * row). Its outcome is recorded on the payout's intent; a bank unreachable or answering 5xx is
 * retried by graphile-worker, any failure by the payout reconciler too (both banks: payoutReconciler).
 */
export function createTournamentPayoutTask(deps: PayoutBanks & { pool: pg.Pool; log: Logger }): Task {
  const payload = tablePayload.extend({
    position: z.number().int().min(1).max(10), amount: z.string().regex(/^[0-9]{1,19}$/), bank: z.enum(['cage', 'chain']).default('cage'),
  });
  return async (raw) => {
    const p = parsed(payload, raw, deps.log, 'tournament_payout');
    if (!p) return;
    const { failure, transient } = await postPayout(deps, p);
    await recordAttempt(deps.pool, 'cage_payout', payoutIntentKey(p.tableId, p.position), failure, deps.log);
    if (failure && transient) throw new Error(`${failure}; retried`);
    if (failure) deps.log.warn({ ...p, reason: failure }, 'tournament payout not confirmed; the payout reconciler posts it again');
    else deps.log.info({ tableId: p.tableId, position: p.position }, 'tournament payout confirmed');
  };
}

/**
 * The payout reconciler, the one for both banks (the spec's 30 s repost): each `cage_payout` intent
 * unconfirmed 30 s after it was made is marked submitted (failedAt cleared: cage.repost_payout) and
 * posted again to its table's bank; the framework records the outcome and backs a failing one off.
 */
export function payoutReconciler(deps: PayoutBanks & { pool: pg.Pool }): Reconciler {
  return {
    kind: 'cage_payout',
    async step(intent) {
      const { rows } = await deps.pool.query<{ table_id: string; position: number; amount: bigint; bank: 'cage' | 'chain' }>(
        'select table_id, position, amount, bank from cage.repost_payout($1)', [intent.key],
      );
      const r = rows[0];
      if (!r) return { done: true };
      const { failure } = await postPayout(deps, { tableId: r.table_id, position: r.position, amount: r.amount.toString(), bank: r.bank });
      return failure ? { failed: failure } : { done: true };
    },
  };
}

/** Job `tournament_payout_reconcile` (periodic: server/intents/periodic.ts): the payout reconciler's run. */
export function createTournamentPayoutReconcileTask(deps: PayoutBanks & TimerDeps): Task {
  return async () => {
    const run = await runReconcilers(deps.pool, [payoutReconciler(deps)], deps.log);
    const n = run.cage_payout;
    if (n && n.done + n.failed > 0) deps.log.warn({ payouts: n }, 'unconfirmed tournament payouts posted again');
  };
}

export function createTournamentRearmTask({ pool, log }: TimerDeps): Task {
  return async () => {
    const { rows } = await pool.query<{ n: number }>('select game.tournament_rearm() as n');
    if (rows[0]?.n) log.info({ tournaments: rows[0].n }, 'tournament timers re-armed');
  };
}
