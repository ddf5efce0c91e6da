// The chain bank's reconciler: at startup and whenever the worker's periodic job `chain_bank_reconcile`
// asks (every CHAIN_RECONCILE_INTERVAL_SECONDS, 30 by default: server/intents/periodic.ts) over the
// service route POST /internal/reconcile, run inside the chain-bank role (it holds the chain client
// and the operator key), never two at once. Each intent's step runs under its own error boundary and
// its outcome is recorded on the intent (server/intents/framework.ts `attempt`: cage.intents shows
// when and why one is stuck):
//   - deposits left pending or submitted (a bank stopped mid-request, a chain that went away): the
//     receipt of their transaction read and recorded (confirmed, failed); a pending one whose
//     transaction never reached the node is failed after the grace (its permit can be sent again);
//   - confirmed deposits whose credit never landed: the game's credit-chips callback again (once:
//     the game's credit is idempotent per key);
//   - withdrawals pending or submitted: paid or their receipt read; confirmed ones whose settle
//     callback never landed: redelivered;
//   - the vault's events against the intents (server/bank/chain-audit.ts chainIntentViolations,
//     from a checkpoint): each disagreement named in the log; a failed deposit whose tokens reached
//     the vault confirmed from its event, then credited like any other (the game reads it back); a
//     deposit with no intent, or confirmed and funding nothing ten minutes on, refunded to the
//     wallet the tokens came from, once (server/bank/vault-refunds.ts);
//   - tournaments: refunds not yet confirmed paid (a payout unconfirmed after 30 s is the worker's
//     payout reconciler's, for both banks: it posts it again through POST /api/withdraw).
import type { Hex } from 'viem';
import { tableKey } from '../chain/contracts.ts';
import type { ChainBankChain } from '../chain/types.ts';
import type { Express } from 'express';
import { BASE_UNITS_PER_CHIP } from '../chain/types.ts';
import { requireServiceKey } from '../http/service-key.ts';
import { describeRoute } from '../http/openapi.ts';
import { attempt } from '../intents/framework.ts';
import { creditDeposit, settleDepositOutcome, type BankDeps } from './deposit.ts';
import { deliverChainSettlement, payWithdrawal } from './withdraw.ts';
import { payTournamentPayment, type PaymentRow } from './tournaments.ts';
import { chainIntentViolations } from './chain-audit.ts';
import { refundDeposit, vaultRefundKey } from './vault-refunds.ts';

export interface ReconcileRun {
  confirmed: number;
  failed: number;
  credited: number;
  paid: number;
  settled: number;
  /** Confirmed rows the chain does not bear out (named in the log, never credited or settled). */
  unverified: number;
  /** Intents the chain's vault events contradict (chainIntentViolations; each named in the log). */
  violations: number;
  /** Failed deposits whose tokens reached the vault, confirmed from their event (then credited). */
  repaired: number;
  /** Deposits no intent backs refunded to their owner (confirmed on chain in this run). */
  refunded: number;
}

/** Where the reconciler's scan of the vault's events stands (this process; a restart scans from the deployment's first block). */
export interface ScanCheckpoint { fromBlock?: bigint; since?: Date }

/**
 * The vault's events against the intents (server/bank/chain-audit.ts): every violation named in the
 * log; a failed deposit whose tokens reached the vault confirmed from its event (the credit below,
 * through the game's own read of the chain, funds the seat). A deposit failed since the last scan
 * makes this one start again from the deployment's first block (its event may lie behind the checkpoint).
 */
async function scanVault(deps: BankDeps, checkpoint: ScanCheckpoint, run: ReconcileRun) {
  const started = new Date();
  const { rows: [fresh] } = await deps.pool.query<{ n: number }>(
    "select count(*)::int as n from bank.deposit_records where status = 'failed' and updated_at >= coalesce($1, '-infinity'::timestamptz)", [checkpoint.since ?? null],
  );
  const from = fresh!.n > 0 ? undefined : checkpoint.fromBlock;
  const audit = await chainIntentViolations(deps.pool, { rpcUrl: deps.rpcUrl }, { fromBlock: from, since: checkpoint.since });
  for (const v of audit.violations) deps.log.error(v, 'chain intent disagrees with the chain');
  run.violations += audit.violations.length;
  for (const r of audit.repairs) {
    await deps.pool.query('select bank.confirm_deposit($1, $2, $3, $4, $5)', [r.key, r.txHash, r.blockNumber.toString(), r.owner, r.amount.toString()]);
    run.repaired++;
  }
  // each refund once per run (a deposit can be both a scanned event and an uncredited intent); one's
  // failure is recorded on its intent (a vault_refund: cage.intents, `npm run ops -- intents`), the
  // rest go on, and the next run takes it up (its event read again)
  const seen = new Set<string>();
  for (const r of audit.refunds) {
    const id = `${r.txHash}:${r.logIndex}`;
    if (seen.has(id)) continue;
    seen.add(id);
    await attempt(deps.pool, 'vault_refund', vaultRefundKey(r), async () => {
      const status = await refundDeposit(deps, r, deps.confirmWindowMs);
      if (status === 'confirmed') run.refunded++;
      else return { failed: `the vault refund is ${status}, not confirmed yet` };
    }, deps.log);
  }
  if (audit.scannedTo !== null) Object.assign(checkpoint, { fromBlock: audit.scannedTo + 1n, since: started });
}

/** The deposit's Deposited event on chain is this row's: its table, wallet and amount. */
async function depositOnChain(deps: BankDeps, d: { idempotency_key: string; table_id: string; wallet: string; amount: bigint; tx_hash: string }) {
  const event = await deps.chain()!.depositOf(d.tx_hash as Hex);
  const ok = !!event && event.tableKey === tableKey(d.table_id) && event.owner.toLowerCase() === d.wallet.toLowerCase()
    && event.amount === BigInt(d.amount) * BASE_UNITS_PER_CHIP;
  if (!ok) deps.log.error({ key: d.idempotency_key, txHash: d.tx_hash }, 'a confirmed chain deposit is not on the chain as recorded: not credited');
  return ok;
}

/** The withdrawal's Withdrawn event on chain is this row's: its table, destination and amount. */
async function withdrawalOnChain(deps: BankDeps, w: { idempotency_key: string; table_id: string; destination: string; amount: bigint; tx_hash: string }) {
  const event = await deps.chain()!.withdrawalOf(w.tx_hash as Hex);
  const ok = !!event && event.tableKey === tableKey(w.table_id) && event.to.toLowerCase() === w.destination.toLowerCase()
    && event.amount === BigInt(w.amount) * BASE_UNITS_PER_CHIP;
  if (!ok) deps.log.error({ key: w.idempotency_key, txHash: w.tx_hash }, 'a confirmed chain withdrawal is not on the chain as recorded: not settled');
  return ok;
}

/** Deposits left pending or submitted: their receipt read and recorded; failed when the chain never took them. */
async function resolveOpenDeposits(deps: BankDeps, chain: ChainBankChain, graceSeconds: number, run: ReconcileRun) {
  const { rows: open } = await deps.pool.query<{ idempotency_key: string; status: string; tx_hash: string | null }>(
    'select idempotency_key, status, tx_hash from bank.unresolved_deposits($1, 200)', [graceSeconds],
  );
  for (const d of open) {
    await attempt(deps.pool, 'chain_deposit', d.idempotency_key, async () => {
      if (d.status === 'pending' || !d.tx_hash) {
        await deps.pool.query('select bank.fail_deposit($1, $2)', [d.idempotency_key, 'not submitted: the bank stopped before the chain took it']);
        run.failed++;
        return;
      }
      const outcome = await settleDepositOutcome(deps, chain, d.idempotency_key, d.tx_hash as Hex, 0);
      if (outcome.status === 'confirmed') run.confirmed++;
      if (outcome.status === 'failed') run.failed++;
      // still pending, and the node does not know it (dropped from its pool, a chain restarted without
      // it): it will never mine; failed, so the player signs a new permit (this one's nonce is unspent)
      if (outcome.status === 'submitted' && !(await chain.isKnown(d.tx_hash as Hex))) {
        await deps.pool.query('select bank.fail_deposit($1, $2)', [d.idempotency_key, 'dropped: the chain does not know the transaction']);
        run.failed++;
      }
    }, deps.log);
  }
}

/** Confirmed deposits whose credit never landed: read again from the chain, then credited. */
async function creditConfirmedDeposits(deps: BankDeps, run: ReconcileRun) {
  const { rows: uncredited } = await deps.pool.query<{ idempotency_key: string; table_id: string; user_id: string; seat_index: number | null; amount: bigint; mode: string; wallet: string; tx_hash: string }>(
    'select idempotency_key, table_id, user_id, seat_index, amount, mode, wallet, tx_hash from bank.uncredited_deposits(0, 200)',
  );
  for (const d of uncredited) {
    await attempt(deps.pool, 'chain_deposit', d.idempotency_key, async () => {
      // a confirmation is the chain's: read again from its receipt before any seat is funded (a row
      // confirmed by anything but this process's own read of the chain is named, never credited)
      if (!(await depositOnChain(deps, d))) {
        run.unverified++;
        return { failed: 'confirmed, but not on the chain as recorded: not credited' };
      }
      if (await creditDeposit(deps, d)) run.credited++;
      else return { failed: 'the game did not credit the seat' };
    }, deps.log);
  }
}

/** Withdrawals pending or submitted: paid, or their receipt read; a payment the node dropped is sent again. */
async function payOpenWithdrawals(deps: BankDeps, chain: ChainBankChain, graceSeconds: number, run: ReconcileRun) {
  const { rows: unpaid } = await deps.pool.query(
    `select * from bank.withdrawal_records where status in ('pending', 'submitted') and updated_at < now() - make_interval(secs => $1)
      order by updated_at limit 200`, [graceSeconds],
  );
  for (const w of unpaid) {
    await attempt(deps.pool, 'chain_withdrawal', w.idempotency_key, async () => {
      const after = await payWithdrawal(deps, w.table_id, w, 0);
      if (after.status === 'confirmed') run.paid++;
      // a payment the node dropped is sent again (next run): failed, then pending with no transaction
      if (after.status === 'submitted' && !(await chain.isKnown(after.tx_hash as Hex))) {
        await deps.pool.query("select bank.advance_withdrawal($1, 'failed', null, null, null, null, $2)", [w.idempotency_key, 'dropped: the chain does not know the transaction']);
        await deps.pool.query('select bank.retry_withdrawal($1)', [w.idempotency_key]);
        return { failed: 'dropped: the chain does not know the transaction; sent again' };
      }
    }, deps.log);
  }
  const { rows: unsettled } = await deps.pool.query('select idempotency_key, player_id, settlement, table_id, destination, amount, tx_hash from bank.unsettled_withdrawals(0, 200)');
  for (const w of unsettled) {
    await attempt(deps.pool, 'chain_withdrawal', w.idempotency_key, async () => {
      if (w.settlement !== 'bust' && !(await withdrawalOnChain(deps, w))) {
        run.unverified++;
        return { failed: 'confirmed, but not on the chain as recorded: not settled' };
      }
      if (await deliverChainSettlement(deps, w)) run.settled++;
      else return { failed: 'the game did not take the settlement' };
    }, deps.log);
  }
}

/** Tournament refunds not yet confirmed paid (each one's failure recorded; the next run tries again). */
async function payOpenRefunds(deps: BankDeps, run: ReconcileRun) {
  const { rows: payments } = await deps.pool.query<{ kind: string; payment_key: string }>(
    'select kind, payment_key from bank.tournament_payments_to_resume(null, 200)',
  );
  for (const p of payments) {
    await attempt(deps.pool, 'chain_tournament_payment', p.payment_key, async () => {
      const { rows: [refund] } = await deps.pool.query<PaymentRow>('select * from bank.tournament_payment_records where payment_key = $1', [p.payment_key]);
      const after = await payTournamentPayment(deps, refund!, 0);
      if (after.status === 'confirmed') run.paid++;
      else return { failed: after.error ?? `${after.status}, not confirmed yet` };
    }, deps.log);
  }
}

export async function reconcileChainBank(deps: BankDeps, graceSeconds: number, checkpoint: ScanCheckpoint = {}): Promise<ReconcileRun> {
  const run: ReconcileRun = { confirmed: 0, failed: 0, credited: 0, paid: 0, settled: 0, unverified: 0, violations: 0, repaired: 0, refunded: 0 };
  const chain = deps.chain();
  if (!chain) return run;
  await resolveOpenDeposits(deps, chain, graceSeconds, run);
  // a scan that cannot finish (the node went away mid-read) holds its checkpoint; the rest runs
  await scanVault(deps, checkpoint, run).catch((err: unknown) => deps.log.warn({ err: (err as Error).message }, 'vault scan not finished; the next run reads from the same block'));
  await creditConfirmedDeposits(deps, run);
  await payOpenWithdrawals(deps, chain, graceSeconds, run);
  await payOpenRefunds(deps, run);
  return run;
}

/**
 * The reconciler of this process: run now, never two at once (a call while one runs waits for it).
 * Its periodic runs are the worker's job (`chain_bank_reconcile`, server/intents/periodic.ts), which
 * asks over POST /internal/reconcile; the role runs it once at startup.
 */
export function chainBankReconciler(deps: BankDeps, graceSeconds: number) {
  let running: Promise<ReconcileRun | undefined> | undefined;
  const checkpoint: ScanCheckpoint = {};
  const runNow = () => {
    running ??= reconcileChainBank(deps, graceSeconds, checkpoint)
      .then((run) => {
        if (Object.values(run).some((n) => n > 0)) deps.log.info(run, 'chain bank reconciled');
        return run;
      })
      .catch((err: unknown) => {
        deps.log.error({ err: (err as Error).message }, 'chain bank reconcile failed; the next run tries again');
        return undefined;
      })
      .finally(() => { running = undefined; });
    return running;
  };
  return { runNow, stop: async () => { await running; } };
}

export const reconcileRoutes = [
  describeRoute({
    method: 'post', path: '/internal/reconcile', auth: 'service', summary: 'Runs the chain bank\'s reconciler once (the worker\'s periodic job asks)',
    responses: { 200: 'the run\'s counts' },
  }),
];

/** POST /internal/reconcile (service key): one run of the reconciler, its counts (503 reconcile_failed when it could not run). */
export function installReconcileRoute(app: Express, serviceKey: string | undefined, reconciler: ReturnType<typeof chainBankReconciler>) {
  app.post('/internal/reconcile', requireServiceKey(serviceKey), async (_req, res) => {
    const run = await reconciler.runNow();
    if (run) res.json(run);
    else res.status(503).json({ error: 'reconcile_failed' });
  });
}
