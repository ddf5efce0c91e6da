// The cage's half of the seat seams (its implementation of the bank contract's seat calls:
// server/bank-contract/), shared by the routes (server/cage/cash.ts) and the
// reconcilers (tasks/): the money moves in SQL (db/functions/cage/60_cash.sql), and whatever is
// left in flight is reconciled without ever guessing:
//   deposit  one transaction (issue 33: cage.deposit_to_seat): the seat judged, the buy-in posted
//            with its deposit confirmed and the seat funded as the game funds one
//            (game_private.fund_seat); nothing is in flight. A deposit left pending (opened by a release that funded the seat over HTTP
//            and stopped before it knew the answer) is cancelled at the game first (a tombstone; a
//            credit that arrived stands, its deposit confirmed with it) and compensated only once
//            the game says the seat does not hold the chips; if the game cannot be reached at all,
//            it stays pending for the reconciler's next run.
//   withdraw the game stands the player up and reports the stack and chain head; the cage writes the
//            terminal row (cash-out, custody or bust) and its receipt, and closes the seat, in one
//            transaction (cage.settle_position). A settlement written before the seat closed with it
//            (an older release) is zeroed over HTTP, here on a replay or by the reconciler.
import type pg from 'pg';
import { inTransaction } from '../db/transaction.ts';
import type { ServiceClient } from '../http/service-client.ts';
import { withdrawKey } from '../bank-contract/contract.ts';
import { cancelCredit, settleWithdrawal } from '../bank-contract/seat-calls.ts';
import { issueReceipt, type ReceiptSigner, type StoredReceipt } from './receipts.ts';
import { chipsToBaseUnits } from '../units.generated.ts';

/**
 * How long a request may still be working on its own intent: a withdrawal makes one game call (zero
 * the seat; a deposit left pending by an older release made at most two, fund then cancel), each
 * bounded by GAME_CALL_TIMEOUT_MS. The reconciler leaves younger intents alone (three call deadlines).
 */
export function graceSeconds(gameCallTimeoutMs: number) {
  return Math.max(1, Math.ceil((3 * gameCallTimeoutMs) / 1000));
}
export interface DepositIntent {
  refId: string;
  userId: string;
  tableId: string;
  seatIndex: number;
  amount: bigint;
}

/** What a pending deposit's resolution came to (resolveUncertainDeposit). */
export type FundingOutcome =
  | { outcome: 'confirmed' }
  | { outcome: 'failed'; code: 'seat_funding_failed' }
  | { outcome: 'unresolved' };

type Db = pg.Pool | pg.PoolClient;

export async function confirmDeposit(db: Db, refId: string) {
  await db.query('select cage.confirm_deposit($1)', [refId]);
}

export async function failDeposit(db: Db, refId: string, code: string) {
  await db.query('select cage.fail_deposit($1, $2)', [refId, code]);
}

/** Asks the game to cancel a funding whose fate is unknown, and settles the deposit by its answer. */
export async function resolveUncertainDeposit(db: Db, game: ServiceClient, intent: DepositIntent): Promise<FundingOutcome> {
  const answer = await cancelCredit(game, {
    creditKey: intent.refId, tableId: intent.tableId, userId: intent.userId, amount: intent.amount,
  });
  if (!answer.ok) return { outcome: 'unresolved' };
  if (answer.body.status === 'credited') {
    await confirmDeposit(db, intent.refId);
    return { outcome: 'confirmed' };
  }
  await failDeposit(db, intent.refId, 'seat_funding_failed');
  return { outcome: 'failed', code: 'seat_funding_failed' };
}

/** Tells the game to zero a settled seat; true when it did (or had). */
export async function deliverSettlement(
  db: Db, game: ServiceClient, s: { idempotencyKey: string; playerId: string; ledgerRefId: string; settlement: string },
): Promise<boolean> {
  const answer = await settleWithdrawal(game, { playerId: s.playerId, ledgerRefId: s.ledgerRefId, settlement: s.settlement });
  if (!answer.ok) return false;
  await db.query('select cage.mark_withdrawal_settled($1)', [s.idempotencyKey]);
  return true;
}

/** A position the game stood up (leaving), with the stack and chain head it froze. */
export interface StoodUpPosition {
  userId: string;
  tableId: string;
  playerId: string;
  chipAmount: bigint;
  historyHash: string;
}

/** The receipt of a settlement row (cage.settle_position's), as every settlement path signs it. */
export function settlementReceiptFields(userId: string, tableId: string, row: {
  ledger_ref_id: string; amount: bigint; settlement: string; custody_entry_id: bigint | null; history_hash: string; money_kind: string; player_id: bigint;
}) {
  return {
    v: 1, kind: row.settlement, ledgerRefId: row.ledger_ref_id, historyHash: row.history_hash, userId, tableId,
    position: row.player_id.toString(), chipAmount: row.amount, moneyKind: row.money_kind,
    ...(row.custody_entry_id ? { custodyEntryId: row.custody_entry_id.toString(), custodyBaseUnits: chipsToBaseUnits(row.amount) } : {}),
  };
}

/** A settlement as cage.settle_position wrote (or replayed) it, with its receipt. */
export interface SettlementRow {
  idempotency_key: string; ledger_ref_id: string; amount: bigint; settlement: string; custody_entry_id: bigint | null;
  history_hash: string; money_kind: string; player_id: bigint; replayed: boolean; receipt: StoredReceipt;
  /** Known to have closed its seat (a replay read with its intent's settled_at). */
  zeroed?: boolean;
}

/**
 * Writes the terminal row of a stood-up position and its signed receipt in ONE transaction: a
 * settlement never exists without its receipt (the audit checks it). A replay returns the original
 * row and the original receipt.
 */
export async function settlePosition(pool: pg.Pool, signer: ReceiptSigner, p: StoodUpPosition & {
  idempotencyKey: string; settlement: string; forced: boolean;
}): Promise<SettlementRow> {
  return inTransaction(pool, async (client) => {
    const { rows } = await client.query(
      `select idempotency_key, ledger_ref_id, amount, settlement, custody_entry_id, history_hash, money_kind, player_id, replayed
         from cage.settle_position($1, $2, $3, $4, $5, $6, $7, $8)`,
      [p.userId, p.tableId, p.playerId, p.chipAmount.toString(), p.historyHash, p.idempotencyKey, p.settlement, p.forced],
    );
    const row = rows[0];
    const receipt = await issueReceipt(client, signer, settlementReceiptFields(p.userId, p.tableId, row));
    return { ...row, receipt };
  });
}

/**
 * Settles a stood-up position as the withdraw route does: the terminal row under the spec's key
 * (a replay when a request settled it first) with its receipt, the seat closed with it. A cash-out
 * to the user's cage balance, or a bust when the stack is empty. True once the seat is zeroed.
 */
export async function settleStoodUp(pool: pg.Pool, game: ServiceClient, signer: ReceiptSigner, p: StoodUpPosition): Promise<boolean> {
  const row = await settlePosition(pool, signer, {
    ...p, idempotencyKey: withdrawKey(p.userId, p.tableId, p.historyHash, p.chipAmount), settlement: p.chipAmount === 0n ? 'bust' : 'cash_out', forced: false,
  });
  return zeroSettled(pool, game, row);
}

/**
 * True once the settled seat is zeroed: a settlement written now closed it in its transaction; a
 * replayed one may predate that (its seat is then zeroed over HTTP, idempotently).
 */
export async function zeroSettled(db: Db, game: ServiceClient, row: SettlementRow): Promise<boolean> {
  if (!row.replayed || row.zeroed) return true;
  return deliverSettlement(db, game, {
    idempotencyKey: row.idempotency_key, playerId: row.player_id.toString(), ledgerRefId: row.ledger_ref_id, settlement: row.settlement,
  });
}
