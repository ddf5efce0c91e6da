// Cage fixtures for tests: accounts, funding through an operator's recorded correction, and the
// audit oracle. Accounts are made with the owner's pool (service roles cannot call the generic
// ledger functions); the audit runs on any pool that may execute it.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { audit, ensureAccount, postMovement, type MoneyKind } from '../../server/cage/ledger.ts';

/** A pool, or a client inside a transaction (test/helpers/rollback.ts). */
export type Queryable = pg.Pool | pg.PoolClient;

let seq = 0;
export const refId = (prefix = 'test') => `${prefix}:${process.pid}:${Date.now()}:${++seq}:${randomUUID().slice(0, 8)}`;

export async function userAccount(db: Queryable, moneyKind: MoneyKind = 'play', userId = randomUUID()) {
  return { userId, id: await ensureAccount(db, { type: 'user', userId, moneyKind }) };
}

export async function systemAccount(db: Queryable, type: 'grant_source' | 'outside' | 'house' | 'custody' | 'betting' | 'gas_tank', moneyKind: MoneyKind = 'play') {
  return ensureAccount(db, { type, moneyKind });
}

const operators = new WeakMap<Queryable, Promise<{ adminId: string; sid: string }>>();

/**
 * An operator (admin) of this database and a live admin session of theirs, as the admin sign-in
 * makes them: made once per owner pool; on a client (a test's transaction, rolled back after it)
 * made each time, inside that transaction. Operator functions take the session's handle (sid).
 */
export function fixtureOperatorSession(owner: Queryable): Promise<{ adminId: string; sid: string }> {
  const pooled = 'totalCount' in owner;
  let made = pooled ? operators.get(owner) : undefined;
  if (!made) {
    made = (async () => {
      const { rows } = await owner.query<{ id: string }>('select auth.create_admin($1, $2) as id', [`fixtures-${randomUUID().slice(0, 8)}@example.com`, 'no-password']);
      const adminId = rows[0]!.id;
      // the session the admin sign-in opens (with proof of the password; the owner writes the row here)
      const session = await owner.query<{ sid: string }>(
        "insert into auth_private.sessions (user_id, token_hash, expires_at) values ($1, sha256(gen_random_uuid()::text::bytea), now() + interval '1 day') returning sid",
        [adminId],
      );
      return { adminId, sid: session.rows[0]!.sid };
    })();
    if (pooled) operators.set(owner, made);
  }
  return made;
}

/** The fixtures' operator session handle (what every operator function takes). */
export async function fixtureOperator(owner: Queryable): Promise<string> {
  return (await fixtureOperatorSession(owner)).sid;
}

/**
 * A manual correction by the fixtures' operator (cage.correct_books): one balanced movement between
 * existing accounts, recorded with its reason, so the audit's provenance check holds.
 */
export async function correct(owner: Queryable, accounts: bigint[], amounts: bigint[], moneyKind: MoneyKind = 'play', ref = refId('fix')) {
  const admin = await fixtureOperator(owner);
  const { rows } = await owner.query<{ ref_id: string; entry_id: bigint }>(
    'select ref_id, entry_id from cage.correct_books($1, $2, $3, $4, $5, $6)',
    [admin, ref, moneyKind, accounts.map(String), amounts.map(String), 'test fixture'],
  );
  return { refId: rows[0]!.ref_id, entryId: rows[0]!.entry_id };
}

/** Credits a user account from the grant source, as an operator's recorded correction (owner pool). */
export async function fund(owner: Queryable, accountId: bigint, amount: bigint, moneyKind: MoneyKind = 'play') {
  const source = await systemAccount(owner, 'grant_source', moneyKind);
  return correct(owner, [source, accountId], [-amount, amount], moneyKind);
}

export async function balanceOf(db: Queryable, accountId: bigint): Promise<bigint> {
  const { rows } = await db.query<{ balance: bigint }>('select balance from cage.account_balances where id = $1', [accountId]);
  return rows[0]!.balance;
}

/** The oracle every money test ends with. */
export async function expectCleanAudit(db: pg.Pool) {
  const violations = await audit(db);
  expect(violations).toEqual([]);
}

/**
 * The balance invariants only, for the tests of the ledger's primitives: they post raw movements
 * (cage.post_movement as the owner) on purpose, which the provenance check rightly names, since no
 * business step stands behind them. Every other invariant must hold.
 */
export async function expectBalancedBooks(db: pg.Pool) {
  const violations = (await audit(db)).filter((v) => v.invariant !== 'provenance');
  expect(violations).toEqual([]);
}

/** The operators' real_money switch, set by the fixtures' operator (cage.set_switch). */
export async function setRealMoney(owner: Queryable, enabled: boolean) {
  await owner.query('select * from cage.set_switch($1, $2, $3)', [await fixtureOperator(owner), 'real_money', enabled]);
}

let intents = 0;
/**
 * An open claim intent for `userId` of `amount` to `recipient` (what claims.open_claim opens; written here by the
 * owner, for tests of the grant itself): the cage grants only under such a claim id. Returns it.
 */
export async function openClaimIntent(owner: Queryable, userId: string, amount: bigint | number, recipient: string, sectionKey = 'weekly_baseline'): Promise<string> {
  const claimId = `0x${randomUUID().replace(/-/g, '')}${randomUUID().replace(/-/g, '')}`;
  await owner.query(
    "insert into claims.claim_intents (claim_id, user_id, section_key, period, amount, kind, recipient) values ($1, $2, $3, $4, $5, 'baseline', $6)",
    [claimId, userId, sectionKey, `t-${process.pid % 1000}-${++intents}`.slice(0, 16), String(amount), recipient],
  );
  return claimId;
}

/** Freezes or thaws a table as the fixtures' operator would (game.set_table_status: an operator act). */
export async function setTableStatus(owner: Queryable, tableId: string, status: 'frozen' | 'active') {
  const { rows } = await owner.query<{ status: string }>('select status from game.set_table_status($1, $2, $3)', [await fixtureOperator(owner), tableId, status]);
  return rows[0]!.status;
}
