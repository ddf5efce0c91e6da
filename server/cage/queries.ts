// The cage's reads (issue 32: reads through views): every row TypeScript reads of the cage's books,
// custody, receipts, grants, gas and rake, through the read views (cage.account_balances and those of
// db/migrations/000051_reads_through_views.sql), typed here. Writes are the cage functions, called
// where they are used. Each view is security_invoker: the cage tables' grants and row policies still
// decide what the caller's login reads (the cage's routes, the worker's audit, an operator's audit).
import type pg from 'pg';

type Db = Pick<pg.ClientBase, 'query'>;

/** A recorded custody release (the audit verifies its signature against the pinned arbiter keys). */
export interface ReleaseRow { id: bigint; entry_id: bigint; dispute_id: bigint; message: string; signature: Buffer; public_key: Buffer; created_at: Date }

/** A custody entry as its owner sees it (GET /api/custody). */
export interface OwnEntry {
  id: bigint; table_id: string | null; money_kind: string; amount: bigint; status: string; player_id: bigint | null;
  escape_id: bigint | null; hold_id: bigint | null; created_at: Date; claimed_at: Date | null; claim_ref_id: string | null;
}

/** A custody hold no one owns until it is split, with the caller's line of its ledger. */
export interface NamingHold { id: bigint; table_id: string; money_kind: string; amount: bigint; created_at: Date; line: Record<string, unknown> }

/** A receipt as stored (its payload, signature and the public key it names). */
export interface ReceiptRecord {
  id: bigint; ledger_ref_id: string; user_id: string; table_id: string | null; history_hash: string | null;
  payload: Buffer; signature: Buffer; public_key: Buffer; created_at: Date;
}

/** A gas withdrawal from a tank (`replayed`: false, read back). */
export interface GasWithdrawalRecord { ref_id: string; status: string; chips: bigint; money_kind: string; error: string | null; replayed: boolean; created_at: Date }

const RELEASE_COLUMNS = 'r.id, r.entry_id, r.dispute_id, r.message, r.signature, r.public_key, r.created_at';

// custody -------------------------------------------------------------------------------------------

/** The releases with no verdict yet, oldest first. */
export async function unverifiedReleases(db: Db): Promise<ReleaseRow[]> {
  const { rows } = await db.query<ReleaseRow>(`select ${RELEASE_COLUMNS} from cage.custody_release_records r where r.verified_at is null order by r.id`);
  return rows;
}

/** Every release with its verdict (valid null: none yet), oldest first. */
export async function releasesWithVerdicts(db: Db): Promise<(ReleaseRow & { valid: boolean | null })[]> {
  const { rows } = await db.query<ReleaseRow & { valid: boolean | null }>(`select ${RELEASE_COLUMNS}, r.valid from cage.custody_release_records r order by r.id`);
  return rows;
}

/** Disputes released with no release verified valid. */
export async function disputesReleasedUnverified(db: Db): Promise<{ id: bigint; entry_id: bigint }[]> {
  const { rows } = await db.query<{ id: bigint; entry_id: bigint }>(
    `select d.id, d.entry_id from cage.custody_dispute_records d
      where d.released_at is not null
        and not exists (select from cage.custody_release_records r where r.dispute_id = d.id and r.valid)`,
  );
  return rows;
}

/** The user's custody entries, newest first, before entry `before` (null: from the newest). */
export async function custodyEntriesOf(db: Db, userId: string, before: bigint | string | null, limit: number): Promise<OwnEntry[]> {
  const { rows } = await db.query<OwnEntry>(
    `select c.id, c.table_id, c.money_kind, c.amount, c.status, c.escape_id, c.hold_id, c.created_at, c.claimed_at, c.claim_ref_id, c.player_id
       from cage.custody_entry_records c where c.user_id = $1 and ($2::bigint is null or c.id < $2) order by c.id desc limit $3`,
    [userId, before, limit],
  );
  return rows;
}

/** The holds waiting for reconciliation whose ledger names the user, newest first. */
export async function holdsNaming(db: Db, userId: string): Promise<NamingHold[]> {
  const { rows } = await db.query<NamingHold>(
    `select h.id, h.table_id, h.money_kind, h.amount, h.created_at, e as line
       from cage.custody_entry_records h cross join lateral jsonb_array_elements(h.ledger) e
      where h.user_id is null and h.status = 'needs_reconciliation' and e ->> 'userId' = $1
      order by h.id desc`,
    [userId],
  );
  return rows;
}

// balances, grants, receipts -------------------------------------------------------------------------

/** The user's chip balances by money kind (play, real): their accounts that hold no seat or entry. */
export async function userBalances(db: Db, userId: string): Promise<{ money_kind: string; balance: bigint }[]> {
  const { rows } = await db.query<{ money_kind: string; balance: bigint }>(
    "select a.money_kind::text as money_kind, a.balance from cage.account_balances a where a.account_type = 'user' and a.user_id = $1 order by a.money_kind",
    [userId],
  );
  return rows;
}

/** The user's gas tanks by money kind (a tank is scoped by its user's id). */
export async function gasTanksOf(db: Db, userId: string): Promise<{ money_kind: string; balance: bigint }[]> {
  const { rows } = await db.query<{ money_kind: string; balance: bigint }>(
    "select a.money_kind::text as money_kind, a.balance from cage.account_balances a where a.account_type = 'gas_tank' and a.scope = $1 order by a.money_kind",
    [userId],
  );
  return rows;
}

/** The play-chip grant recorded under a claim id, if any. */
export async function grantOf(db: Db, claimId: string): Promise<{ user_id: string; recipient: string; amount: bigint } | undefined> {
  const { rows } = await db.query<{ user_id: string; recipient: string; amount: bigint }>(
    'select g.user_id, g.recipient, g.amount from cage.grant_records g where g.ref_id = $1', [claimId],
  );
  return rows[0];
}

/** The user's receipts, newest first (at most 500). */
export async function receiptsOf(db: Db, userId: string): Promise<ReceiptRecord[]> {
  const { rows } = await db.query<ReceiptRecord>(
    `select id, ledger_ref_id, user_id, table_id, history_hash, payload, signature, public_key, created_at
       from cage.receipt_records where user_id = $1 order by id desc limit 500`,
    [userId],
  );
  return rows;
}

/** Every receipt after id `afterId`, oldest first. */
export async function receiptsAfter(db: Db, afterId: bigint): Promise<ReceiptRecord[]> {
  const { rows } = await db.query<ReceiptRecord>(
    'select id, ledger_ref_id, user_id, table_id, history_hash, payload, signature, public_key, created_at from cage.receipt_records where id > $1 order by id',
    [afterId.toString()],
  );
  return rows;
}

// gas, rake, a table's intents ------------------------------------------------------------------------

/** The user's latest gas withdrawals (at most 20), newest first. */
export async function gasWithdrawalsOf(db: Db, userId: string): Promise<GasWithdrawalRecord[]> {
  const { rows } = await db.query<GasWithdrawalRecord>(
    'select ref_id, status, chips, money_kind, error, false as replayed, created_at from cage.gas_withdrawal_records where user_id = $1 order by created_at desc limit 20',
    [userId],
  );
  return rows;
}

/** A table's rake reconciliations, in chain order, each with the total reconciled through it. */
export async function rakeChainOf(db: Db, tableId: string) {
  const { rows } = await db.query(
    `select id, table_id, money_kind, amount, hands, rows_digest, prev_hash, hash, created_at, reconciled_rake
       from cage.rake_reconciliation_records where table_id = $1 order by id`,
    [tableId],
  );
  return rows;
}

/** A table's withdrawal and deposit intents, newest first (at most 500 of each). */
export async function tableIntents(db: Db, tableId: string) {
  const [withdrawals, deposits] = await Promise.all([
    db.query(
      `select idempotency_key, ledger_ref_id, user_id, player_id, amount, history_hash, settlement, forced, custody_entry_id, settled_at, created_at
         from cage.withdrawal_records where table_id = $1 order by created_at desc limit 500`, [tableId],
    ),
    db.query(
      `select ref_id, user_id, seat_index, amount, money_kind, status, error, created_at, updated_at
         from cage.deposit_records where table_id = $1 order by created_at desc limit 500`, [tableId],
    ),
  ]);
  return { withdrawals: withdrawals.rows, deposits: deposits.rows };
}
