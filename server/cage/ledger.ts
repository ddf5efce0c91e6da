// The TypeScript face of the cage's SQL API (db/functions/cage). The rules live in SQL; this file
// only shapes arguments and retries the transient failures with the same ref_id.
import type pg from 'pg';
import { withRetry } from '../db/pools.ts';

export type MoneyKind = 'play' | 'real';
export type AccountType =
  | 'user' | 'outside' | 'grant_source' | 'table_escrow' | 'custody' | 'tournament_pool' | 'betting' | 'gas_tank' | 'house';

export interface Movement {
  refId: string;
  kind: string;
  moneyKind: MoneyKind;
  /** Account ids and their signed amounts, same length; amounts sum to zero. */
  accounts: readonly bigint[];
  amounts: readonly bigint[];
  memo?: Record<string, unknown>;
}

export interface PostResult {
  entryId: bigint;
  status: 'created' | 'replayed';
  createdAt: Date;
}

export interface BatchResult {
  idx: number;
  refId: string | null;
  status: 'created' | 'replayed' | 'refused';
  code: string | null;
  entryId: bigint | null;
}

type Db = pg.Pool | pg.PoolClient;

export async function ensureAccount(
  db: Db,
  account: { type: AccountType; userId?: string; scope?: string; moneyKind: MoneyKind },
): Promise<bigint> {
  const { rows } = await withRetry(() =>
    db.query<{ id: bigint }>('select cage.ensure_account($1, $2, $3, $4) as id', [
      account.type, account.userId ?? null, account.scope ?? null, account.moneyKind,
    ]),
  );
  return rows[0]!.id;
}

const toText = (values: readonly bigint[]) => values.map((v) => v.toString());

export async function postMovement(db: Db, m: Movement): Promise<PostResult> {
  const { rows } = await withRetry(() =>
    db.query<{ entry_id: bigint; status: 'created' | 'replayed'; created_at: Date }>(
      'select entry_id, status, created_at from cage.post_movement($1, $2, $3, $4::bigint[], $5::bigint[], $6)',
      [m.refId, m.kind, m.moneyKind, toText(m.accounts), toText(m.amounts), m.memo ?? {}],
    ),
  );
  const r = rows[0]!;
  return { entryId: r.entry_id, status: r.status, createdAt: r.created_at };
}

export async function postMovements(db: Db, movements: readonly Movement[]): Promise<BatchResult[]> {
  const items = JSON.stringify(
    movements.map((m) => ({
      refId: m.refId, kind: m.kind, moneyKind: m.moneyKind,
      accounts: toText(m.accounts), amounts: toText(m.amounts), memo: m.memo ?? {},
    })),
  );
  const { rows } = await withRetry(() =>
    db.query<{ idx: number; ref_id: string | null; status: BatchResult['status']; code: string | null; entry_id: bigint | null }>(
      'select idx, ref_id, status, code, entry_id from cage.post_movements($1::jsonb)',
      [items],
    ),
  );
  return rows.map((r) => ({ idx: r.idx, refId: r.ref_id, status: r.status, code: r.code, entryId: r.entry_id }));
}

export interface Violation {
  invariant: string;
  subject: string;
  detail: Record<string, unknown>;
}

/** The five invariants (and the custody check), in one REPEATABLE READ READ ONLY snapshot. Empty = the books hold. */
export async function audit(pool: pg.Pool): Promise<Violation[]> {
  const client = await pool.connect();
  try {
    return await auditOn(client);
  } finally {
    client.release();
  }
}

/** `audit` on a connection the caller holds (a worker job's client, say). */
export async function auditOn(client: pg.ClientBase): Promise<Violation[]> {
  await client.query('begin isolation level repeatable read read only');
  try {
    const { rows } = await client.query<Violation>('select invariant, subject, detail from cage.audit()');
    await client.query('commit');
    return rows;
  } catch (err) {
    // the audit's own error is the one to report, not a failed rollback on a broken connection
    await client.query('rollback').catch(() => undefined);
    throw err;
  }
}

/**
 * The periodic audit (cage.audit_since_checkpoint): the same invariants, reading of the journal only
 * what was written since its last clean run, whose checkpoint it moves when it finds nothing. One
 * autocommit statement: the function waits for the entries in flight, then takes its snapshot, so
 * it must not run inside a REPEATABLE READ transaction.
 */
export async function auditSinceCheckpoint(db: pg.Pool | pg.ClientBase): Promise<Violation[]> {
  const { rows } = await db.query<Violation>('select invariant, subject, detail from cage.audit_since_checkpoint()');
  return rows;
}

export async function rebuildProjection(db: Db) {
  const { rows } = await db.query<{
    account_id: bigint; old_balance: bigint; new_balance: bigint; old_version: bigint; new_version: bigint;
  }>('select * from cage.rebuild_projection()');
  return rows;
}
