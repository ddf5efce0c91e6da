// Before the chain bank sends a payment again (a withdrawal or a tournament payment retried after a
// failure), it reads every transaction the payment was sent in before (prior_tx_hashes, kept by
// bank.retry_withdrawal and bank.retry_tournament_payment) back from the chain: a failure is only
// the bank login's claim, and one of them may have paid it (issue 31, class 7). Paid: confirmed
// from that receipt, nothing sent. Still in the node's pool: wait. Otherwise a new transaction.
import type { Hex } from 'viem';
import { tableKey } from '../chain/contracts.ts';
import { BASE_UNITS_PER_CHIP, type ChainBankChain } from '../chain/types.ts';
import type { BankDeps } from './deposit.ts';
import { priorTxHashes, type PaymentKind } from './queries.ts';

export type EarlierPayment = { paid: { txHash: Hex; blockNumber: bigint } } | 'in_flight' | null;

/**
 * Whether an earlier transaction of payment `key` paid `to` `chips` from `tableId` (or `baseUnits`
 * from the table key `tableKey`), is still in flight, or neither.
 */
export async function earlierPayment(
  deps: BankDeps, chain: ChainBankChain, kind: PaymentKind, key: string,
  p: { tableId: string; to: string; chips: bigint } | { tableKey: Hex; to: string; baseUnits: bigint },
): Promise<EarlierPayment> {
  const [key32, units] = 'tableId' in p ? [tableKey(p.tableId), p.chips * BASE_UNITS_PER_CHIP] : [p.tableKey, p.baseUnits];
  for (const hash of await priorTxHashes(deps.pool, kind, key)) {
    const outcome = await chain.waitForOutcome(hash, 0);
    if (outcome.status === 'pending') {
      if (await chain.isKnown(hash)) return 'in_flight';
      continue;
    }
    if (outcome.status !== 'confirmed') continue;
    const event = await chain.withdrawalOf(hash);
    if (event && event.tableKey === key32 && event.to.toLowerCase() === p.to.toLowerCase() && event.amount === units) {
      return { paid: { txHash: hash, blockNumber: outcome.blockNumber } };
    }
  }
  return null;
}
