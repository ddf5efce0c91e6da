// The chain bank's reads (issue 32: reads through views): every row TypeScript reads of the bank's
// intents and deployments, through the read views (db/migrations/000051_reads_through_views.sql),
// typed here. Writes are the bank functions (bank.open_deposit, bank.advance_withdrawal, ...),
// called where they are used. The reads run as the login of their caller: the bank (its routes), the
// worker (its reconciler, the audit) or an operator's admin session (the audit); each view is
// security_invoker, so the bank tables' grants and policies decide what each reads.
import type pg from 'pg';
import type { Hex } from 'viem';
import { BASE_UNITS_PER_CHIP } from '../units.generated.ts';

type Db = Pick<pg.ClientBase, 'query'>;

export interface DeploymentRow { id: bigint; chain_id: bigint; vault: string; rpc_url: string | null; from_block: bigint }
export interface DepositRow { idempotency_key: string; status: string; tx_hash: string | null; table_id: string; wallet: string; amount: bigint }
/** A payment out of the vault as a row records it (units: base units). */
export interface PaymentRow { kind: string; key: string; status: string; tx_hash: string; table_id: string | null; table_key: Hex | null; destination: string; units: string }
export interface RefundToCheck { refund_key: string; deposit_tx_hash: Hex; deposit_log_index: number; table_key: string; destination: string; base_units: string }

const DEPOSIT_COLUMNS = 'd.idempotency_key, d.status, d.tx_hash, d.table_id, d.wallet, d.amount';

/** The active deployment, if any. */
export async function activeDeployment(db: Db): Promise<DeploymentRow | undefined> {
  const { rows } = await db.query<DeploymentRow>('select d.id, d.chain_id, d.vault, d.rpc_url, d.from_block from bank.deployment_records d where d.active');
  return rows[0];
}

/** Whether the active deployment is the one at these contracts. */
export async function isActiveDeployment(db: Db, d: { chainId: number | bigint; token: string; vault: string }): Promise<boolean> {
  const { rows } = await db.query<{ n: number }>(
    'select count(*)::int as n from bank.deployment_records where active and chain_id = $1 and lower(token) = lower($2) and lower(vault) = lower($3)',
    [d.chainId, d.token, d.vault],
  );
  return rows[0]!.n === 1;
}

/** Whether the deployment has any deposit intent. */
export async function deploymentHasIntents(db: Db, deploymentId: bigint): Promise<boolean> {
  const { rows } = await db.query('select 1 from bank.deposit_records where deployment_id = $1 limit 1', [deploymentId]);
  return rows.length > 0;
}

/** The refund opened for a Deposited event (its transaction and log index), if any. */
export async function refundOfEvent(db: Db, txHash: string, logIndex: number): Promise<{ status: string; deposit_key: string | null } | undefined> {
  const { rows } = await db.query<{ status: string; deposit_key: string | null }>(
    'select status, deposit_key from bank.vault_refund_records where deposit_tx_hash = $1 and deposit_log_index = $2', [txHash.toLowerCase(), logIndex],
  );
  return rows[0];
}

/** The deposit intents of these keys. */
export async function depositsOfKeys(db: Db, keys: readonly string[]): Promise<DepositRow[]> {
  const { rows } = await db.query<DepositRow>(`select ${DEPOSIT_COLUMNS} from bank.deposit_records d where d.idempotency_key = any($1::text[])`, [keys]);
  return rows;
}

/** Confirmed deposits of the deployment the game has not read back from the chain yet. */
export async function unverifiedConfirmedDeposits(db: Db, deploymentId: bigint): Promise<DepositRow[]> {
  const { rows } = await db.query<DepositRow>(
    `select ${DEPOSIT_COLUMNS} from bank.deposit_records d
      where d.deployment_id = $1 and d.status = 'confirmed' and d.verified_at is null`, [deploymentId],
  );
  return rows;
}

/**
 * Confirmed deposits of the deployment funding nothing `graceSeconds` on: not credited, not refunded
 * (a confirmed vault refund, or a tournament entry's refund); `refund` is the status of a vault
 * refund in flight.
 */
export async function uncreditedDeposits(db: Db, deploymentId: bigint, graceSeconds: number): Promise<(DepositRow & { mode: string; refund: string | null })[]> {
  const { rows } = await db.query<DepositRow & { mode: string; refund: string | null }>(
    `select ${DEPOSIT_COLUMNS}, d.mode, r.status as refund
       from bank.deposit_records d left join bank.vault_refund_records r on r.deposit_key = d.idempotency_key
      where d.deployment_id = $1 and d.status = 'confirmed' and d.credited_at is null
        and d.updated_at < now() - make_interval(secs => $2) and r.status is distinct from 'confirmed'
        and not exists (select from bank.tournament_payment_records t where t.entry_key = d.idempotency_key and t.kind = 'refund')`,
    [deploymentId, graceSeconds],
  );
  return rows;
}

/** The deployment's refunds not confirmed, or changed since `since` (all when null). */
export async function refundsToCheck(db: Db, deploymentId: bigint, since: Date | null): Promise<RefundToCheck[]> {
  const { rows } = await db.query<RefundToCheck>(
    `select refund_key, deposit_tx_hash, deposit_log_index, table_key, destination, base_units::text from bank.vault_refund_records
      where deployment_id = $1 and (status <> 'confirmed' or $2::timestamptz is null or updated_at >= $2)`, [deploymentId, since],
  );
  return rows;
}

/** The deployment's payments out of the vault with a transaction, changed since `since` (all when null). */
export async function paymentsSince(db: Db, deploymentId: bigint, since: Date | null): Promise<PaymentRow[]> {
  const { rows } = await db.query<PaymentRow>(`
    select 'withdrawal' as kind, idempotency_key as key, status, tx_hash, table_id, null as table_key, destination, amount * $3::numeric as units from bank.withdrawal_records
     where deployment_id = $1 and settlement = 'cash_out' and tx_hash is not null and ($2::timestamptz is null or updated_at >= $2)
    union all
    select 'payment', payment_key, status, tx_hash, table_id, null, destination, amount * $3::numeric from bank.tournament_payment_records
     where deployment_id = $1 and tx_hash is not null and ($2::timestamptz is null or updated_at >= $2)
    union all
    select 'refund', refund_key, status, tx_hash, null, table_key, destination, base_units from bank.vault_refund_records
     where deployment_id = $1 and tx_hash is not null and ($2::timestamptz is null or updated_at >= $2)`, [deploymentId, since, BASE_UNITS_PER_CHIP.toString()]);
  return rows;
}

/** The withdrawal, tournament payment or refund a transaction (current or earlier) was sent for. */
export async function paymentOfTx(db: Db, txHash: string): Promise<{ kind: string; key: string; status: string } | undefined> {
  const { rows } = await db.query<{ kind: string; key: string; status: string }>(`
    select 'withdrawal' as kind, idempotency_key as key, status from bank.withdrawal_records where tx_hash = $1
    union all
    select 'payment', payment_key, status from bank.tournament_payment_records where tx_hash = $1
    union all
    select 'refund', refund_key, status from bank.vault_refund_records where tx_hash = $1 or $1 = any (prior_tx_hashes)`, [txHash]);
  return rows[0];
}

const PRIOR_SQL = {
  withdrawal: 'select prior_tx_hashes from bank.withdrawal_records where idempotency_key = $1',
  payment: 'select prior_tx_hashes from bank.tournament_payment_records where payment_key = $1',
  refund: 'select prior_tx_hashes from bank.vault_refund_records where refund_key = $1',
} as const;
export type PaymentKind = keyof typeof PRIOR_SQL;

/** The transactions a payment was sent in before its current one (none: []). */
export async function priorTxHashes(db: Db, kind: PaymentKind, key: string): Promise<Hex[]> {
  const { rows } = await db.query<{ prior_tx_hashes: string[] }>(PRIOR_SQL[kind], [key]);
  return (rows[0]?.prior_tx_hashes ?? []) as Hex[];
}
