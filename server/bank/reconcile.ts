// The chain bank's reconciler: at startup and every CHAIN_RECONCILE_INTERVAL_SECONDS (30 by
// default), inside the chain-bank role (it holds the chain client and the operator key), with its
// own error boundary:
//   - deposits left pending or submitted (a bank stopped mid-request, a chain that went away): the
//     receipt of their transaction read and recorded (confirmed, failed); a pending one whose
//     transaction never reached the node is failed after the grace (its permit can be sent again);
//   - confirmed deposits whose credit never landed: the game's credit-chips callback again (once:
//     the game's credit is idempotent per key);
//   - withdrawals pending or submitted: paid or their receipt read; confirmed ones whose settle
//     callback never landed: redelivered.
import type { Hex } from 'viem';
import { creditDeposit, settleDepositOutcome, type BankDeps } from './deposit.ts';
import { deliverChainSettlement, payWithdrawal } from './withdraw.ts';

export interface ReconcileRun {
  confirmed: number;
  failed: number;
  credited: number;
  paid: number;
  settled: number;
}

export async function reconcileChainBank(deps: BankDeps, graceSeconds: number): Promise<ReconcileRun> {
  const run: ReconcileRun = { confirmed: 0, failed: 0, credited: 0, paid: 0, settled: 0 };
  const chain = deps.chain();
  if (!chain) return run;
  const { rows: open } = await deps.pool.query<{ idempotency_key: string; status: string; tx_hash: string | null }>(
    'select idempotency_key, status, tx_hash from bank.unresolved_deposits($1, 200)', [graceSeconds],
  );
  for (const d of open) {
    if (d.status === 'pending' || !d.tx_hash) {
      await deps.pool.query('select bank.fail_deposit($1, $2)', [d.idempotency_key, 'not submitted: the bank stopped before the chain took it']);
      run.failed++;
      continue;
    }
    const outcome = await settleDepositOutcome(deps, chain, d.idempotency_key, d.tx_hash as Hex, 0);
    if (outcome.status === 'confirmed') run.confirmed++;
    if (outcome.status === 'failed') run.failed++;
  }
  const { rows: uncredited } = await deps.pool.query<{ idempotency_key: string; table_id: string; user_id: string; seat_index: number | null; amount: bigint; mode: string }>(
    'select idempotency_key, table_id, user_id, seat_index, amount, mode from bank.uncredited_deposits(0, 200)',
  );
  for (const d of uncredited) {
    if (d.mode !== 'cash') continue;
    if (await creditDeposit(deps, d)) run.credited++;
  }
  const { rows: unpaid } = await deps.pool.query(
    `select * from bank.withdraw_intents where status in ('pending', 'submitted') and updated_at < now() - make_interval(secs => $1)
      order by updated_at limit 200`, [graceSeconds],
  );
  for (const w of unpaid) {
    const after = await payWithdrawal(deps, w.table_id, w, 0);
    if (after.status === 'confirmed') run.paid++;
  }
  const { rows: unsettled } = await deps.pool.query('select idempotency_key, player_id, settlement from bank.unsettled_withdrawals(0, 200)');
  for (const w of unsettled) if (await deliverChainSettlement(deps, w)) run.settled++;
  return run;
}

/** Runs the reconciler now and then every `intervalSeconds`, never two at once; stop() waits for a run. */
export function scheduleReconciler(deps: BankDeps, intervalSeconds: number, graceSeconds: number) {
  let running: Promise<void> | undefined;
  const tick = () => {
    if (running) return;
    running = reconcileChainBank(deps, graceSeconds)
      .then((run) => {
        if (Object.values(run).some((n) => n > 0)) deps.log.info(run, 'chain bank reconciled');
      })
      .catch((err: unknown) => deps.log.error({ err: (err as Error).message }, 'chain bank reconcile failed; the next run tries again'))
      .finally(() => { running = undefined; });
  };
  tick();
  const timer = setInterval(tick, intervalSeconds * 1000);
  timer.unref();
  return {
    runNow: async () => { tick(); await running; },
    stop: async () => { clearInterval(timer); await running; },
  };
}
