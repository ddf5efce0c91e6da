// One reconciler framework (issue 32, "one intent model"). Every pending money step is an intent of
// the view cage.intents (db/functions/cage/96_intents.sql), in one status vocabulary, with its next
// step and deadline. A reconciler is { kind, step }: the loop takes the kind's due intents from the
// view (cage.due_intents: open, past their deadline, not backing off), runs the step on each under its
// own error boundary (one intent's failure never stops the others), and records the outcome in SQL
// (cage.record_intent_attempt): a success clears the failure, a failure is kept with its time and
// reason (stuck_since, stuck_reason: what operators read in `npm run ops -- intents` and the admin
// GraphQL) and backs the intent off (1 s, 2 s, 4 s ... at most 5 minutes). The worker drives the
// cage's kinds (server/intents/reconcilers.ts); the chain bank drives its own kinds with the same
// `attempt` inside its reconcile route, which the worker's periodic job calls.
import type pg from 'pg';
import type { Logger } from 'pino';

/** The kinds of cage.intents (the view's `kind`). */
export const INTENT_KINDS = [
  'cage_deposit', 'cage_withdrawal', 'cage_payout', 'gas_withdrawal', 'bet_stake',
  'chain_deposit', 'chain_withdrawal', 'chain_tournament_payment', 'vault_refund', 'claim',
] as const;
export type IntentKind = (typeof INTENT_KINDS)[number];

/** The one status vocabulary (cage.intent_statuses()). */
export type IntentStatus = 'pending' | 'submitted' | 'confirmed' | 'failed' | 'compensated';

/** A due intent as cage.due_intents hands it out: its key; the step reads its own row. */
export interface DueIntent {
  kind: IntentKind;
  key: string;
  status: IntentStatus;
  attempts: number;
  tableId: string | null;
}

/**
 * A step that did not finish: thrown (any error), or answered as `{ failed: reason }` when the step
 * knows why (the game unreachable, the bank refusing). `{ done: true }` or nothing: it finished.
 */
export type StepOutcome = void | { done: true } | { failed: string };

export interface Reconciler {
  kind: IntentKind;
  /** Seconds an intent is left to its request before it is due; null: the kind's default in SQL. */
  graceSeconds?: number | null;
  /** How many due intents one run takes. */
  batch?: number;
  step(intent: DueIntent): Promise<StepOutcome>;
}

export interface ReconcileCount {
  done: number;
  failed: number;
}

type Queryable = Pick<pg.Pool, 'query'>;

/** Records one step's outcome (null error: a success). A record that cannot be written is logged, never thrown. */
export async function recordAttempt(db: Queryable, kind: IntentKind, key: string, error: string | null, log?: Logger) {
  try {
    await db.query('select 1 from cage.record_intent_attempt($1, $2, $3)', [kind, key, error]);
  } catch (err) {
    log?.warn({ kind, key, err: (err as Error).message }, 'intent attempt not recorded');
  }
}

/** Why a step failed, in a line (an error's message, or the step's own reason). */
function reasonOf(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return (message || 'failed').slice(0, 300);
}

/**
 * One step on one intent under its own error boundary, its outcome recorded: true when it finished.
 * The chain bank's reconciler calls this around each of its steps; runReconcilers around each due intent.
 */
export async function attempt(db: Queryable, kind: IntentKind, key: string, step: () => Promise<StepOutcome>, log?: Logger): Promise<boolean> {
  let failure: string | null;
  try {
    const outcome = await step();
    failure = outcome && 'failed' in outcome ? outcome.failed.slice(0, 300) || 'failed' : null;
  } catch (err) {
    failure = reasonOf(err);
  }
  await recordAttempt(db, kind, key, failure, log);
  if (failure) log?.warn({ kind, key, reason: failure }, 'intent step failed; retried after its back-off');
  return failure === null;
}

/** The kind's due intents (an empty list when they cannot be read: logged, the next run reads again). */
async function dueIntents(db: Queryable, r: Reconciler, log?: Logger): Promise<DueIntent[]> {
  try {
    const { rows } = await db.query<{ intent_key: string; status: IntentStatus; attempts: number; table_id: string | null }>(
      'select intent_key, status, attempts, table_id from cage.due_intents($1, $2, $3)', [r.kind, r.graceSeconds ?? null, r.batch ?? 200],
    );
    return rows.map((x) => ({ kind: r.kind, key: x.intent_key, status: x.status, attempts: x.attempts, tableId: x.table_id }));
  } catch (err) {
    log?.error({ kind: r.kind, err: (err as Error).message }, 'due intents not read; the next run reads them');
    return [];
  }
}

/** One run of each reconciler over its due intents; a count per kind. */
export async function runReconcilers(db: Queryable, reconcilers: Reconciler[], log?: Logger): Promise<Partial<Record<IntentKind, ReconcileCount>>> {
  const counts: Partial<Record<IntentKind, ReconcileCount>> = {};
  for (const r of reconcilers) {
    const count = (counts[r.kind] ??= { done: 0, failed: 0 });
    for (const intent of await dueIntents(db, r, log)) {
      if (await attempt(db, r.kind, intent.key, () => r.step(intent), log)) count.done++;
      else count.failed++;
    }
  }
  return counts;
}
