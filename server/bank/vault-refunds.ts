// Refunds of vault deposits no intent backs (issue 31, "Chain intents"): the chain audit
// (chain-audit.ts) hands the reconciler, read from the chain's own events, each deposit with no
// intent at all and each confirmed deposit that funded nothing ten minutes on; the reconciler opens
// its refund (bank.open_vault_refund, once per Deposited event: its transaction and log index) and
// pays it back to the event's owner from the event's table key, with the vault's operator
// withdrawal. A refund row it did not open from the event it just read (other values: the bank
// login's) is never paid: open_vault_refund refuses it, and the audit names it. The SQL is
// db/functions/bank/50_vault_refunds.sql.
import type pg from 'pg';
import { getAddress, type Address, type Hex } from 'viem';
import { ChainRevert, type ChainBankChain } from '../chain/types.ts';
import { earlierPayment } from './earlier-payments.ts';
import { asOneSender } from './one-sender.ts';
import type { BankDeps } from './deposit.ts';

/** A vault deposit to refund, as the chain logged it (base units); depositKey: the intent it refunds, or null. */
export interface DepositRefund { txHash: Hex; logIndex: number; tableKey: Hex; owner: Address; amount: bigint; depositKey: string | null }

/** The refund's key, as bank.open_vault_refund writes it: one per Deposited event. */
export function vaultRefundKey(r: Pick<DepositRefund, 'txHash' | 'logIndex'>): string {
  return `vault-refund:${r.txHash.toLowerCase()}:${r.logIndex}`;
}

interface RefundRow { refund_key: string; table_key: Hex; destination: string; base_units: string; status: string; tx_hash: Hex | null }

const ADVANCE = 'select * from bank.advance_vault_refund($1, $2, $3, $4, $5, $6, $7)';

type Db = Pick<pg.ClientBase, 'query'>;

async function advance(db: Db, key: string, status: string, txHash: Hex | null, block: bigint | null, to: string | null, units: bigint | null, error: string | null) {
  return (await db.query<RefundRow>(ADVANCE, [key, status, txHash, block?.toString() ?? null, to, units?.toString() ?? null, error])).rows[0]!;
}

/**
 * A pending refund sent, on `db`, whose transaction holds the refund's row lock (open_vault_refund
 * takes it) until the transaction hash is recorded: a second process waits, then finds it
 * submitted. Unless an earlier transaction of it paid it (confirmed from that) or is still in flight.
 */
async function send(deps: BankDeps, db: Db, chain: ChainBankChain, row: RefundRow, r: DepositRefund): Promise<RefundRow> {
  const earlier = await earlierPayment(deps, chain, 'refund', row.refund_key, { tableKey: r.tableKey, to: r.owner, baseUnits: r.amount });
  if (earlier === 'in_flight') return row;
  if (earlier) return advance(db, row.refund_key, 'confirmed', earlier.paid.txHash, earlier.paid.blockNumber, r.owner, r.amount, null);
  try {
    const txHash = await chain.submitRefund({ tableKey: r.tableKey, to: r.owner, baseUnits: r.amount });
    return await advance(db, row.refund_key, 'submitted', txHash, null, null, null, null);
  } catch (err) {
    if (err instanceof ChainRevert) return advance(db, row.refund_key, 'failed', null, null, null, null, err.reason);
    throw err;
  }
}

/** The refund opened (or found) and, pending, sent: one transaction holding its row lock throughout (one-sender.ts). */
async function openAndSend(deps: BankDeps, chain: ChainBankChain, r: DepositRefund): Promise<RefundRow> {
  return asOneSender<RefundRow, RefundRow>(deps.pool, 'select * from bank.open_vault_refund($1, $2, $3, $4, $5, $6)', [
    r.txHash, r.logIndex, r.tableKey, getAddress(r.owner), r.amount.toString(), r.depositKey,
  ], async (db, row) => (row.status === 'pending' ? send(deps, db, chain, row, r) : row));
}

/** A submitted refund's receipt read: confirmed with the vault's Withdrawn event, or failed (pending again). */
async function settle(deps: BankDeps, chain: ChainBankChain, row: RefundRow, waitMs: number): Promise<RefundRow> {
  const outcome = await chain.waitForOutcome(row.tx_hash!, waitMs);
  if (outcome.status === 'confirmed') {
    const event = await chain.withdrawalOf(row.tx_hash!);
    // a transaction that paid something else (recorded by the bank login's claim) is not this refund's
    if (!event || event.tableKey !== row.table_key || event.to.toLowerCase() !== row.destination || event.amount !== BigInt(row.base_units)) {
      return advance(deps.pool, row.refund_key, 'failed', null, null, null, null, 'no vault payment of this refund in the receipt');
    }
    return advance(deps.pool, row.refund_key, 'confirmed', row.tx_hash, outcome.blockNumber, event.to, event.amount, null);
  }
  if (outcome.status === 'reverted') return advance(deps.pool, row.refund_key, 'failed', null, null, null, null, outcome.reason);
  if (!(await chain.isKnown(row.tx_hash!))) return advance(deps.pool, row.refund_key, 'failed', null, null, null, null, 'dropped: the chain does not know the transaction');
  return row;
}

/**
 * Refunds one deposit the chain shows (the audit just read its event): its refund opened (or the
 * one opened before, with the same values), then paid and confirmed; answers its status. Waits up
 * to `waitMs` for the receipt; the next reconciler run takes up a refund still in flight.
 */
export async function refundDeposit(deps: BankDeps, r: DepositRefund, waitMs: number): Promise<string> {
  const chain = deps.chain();
  if (!chain) return 'pending';
  let row = await openAndSend(deps, chain, r);
  if (row.status === 'submitted') row = await settle(deps, chain, row, waitMs);
  return row.status;
}
