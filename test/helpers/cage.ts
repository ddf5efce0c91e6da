// Cage fixtures for tests: accounts, funding through a real grant movement, and the audit oracle.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { audit, ensureAccount, postMovement, type MoneyKind } from '../../server/cage/ledger.ts';

let seq = 0;
export const refId = (prefix = 'test') => `${prefix}:${process.pid}:${Date.now()}:${++seq}:${randomUUID().slice(0, 8)}`;

export async function userAccount(db: pg.Pool, moneyKind: MoneyKind = 'play', userId = randomUUID()) {
  return { userId, id: await ensureAccount(db, { type: 'user', userId, moneyKind }) };
}

export async function systemAccount(db: pg.Pool, type: 'grant_source' | 'outside' | 'house' | 'custody' | 'betting' | 'gas_tank', moneyKind: MoneyKind = 'play') {
  return ensureAccount(db, { type, moneyKind });
}

/** Credits a user account from the grant source, as a claim-board grant would. */
export async function fund(db: pg.Pool, accountId: bigint, amount: bigint, moneyKind: MoneyKind = 'play') {
  const source = await systemAccount(db, 'grant_source', moneyKind);
  return postMovement(db, { refId: refId('fund'), kind: 'grant', moneyKind, accounts: [source, accountId], amounts: [-amount, amount] });
}

export async function balanceOf(db: pg.Pool, accountId: bigint): Promise<bigint> {
  const { rows } = await db.query<{ balance: bigint }>('select balance from cage.account_balances where id = $1', [accountId]);
  return rows[0]!.balance;
}

/** The oracle every money test ends with. */
export async function expectCleanAudit(db: pg.Pool) {
  const violations = await audit(db);
  expect(violations).toEqual([]);
}
