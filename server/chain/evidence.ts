// Chain evidence read back by a process that did not write it (issue 31, class 7): a vault deposit's
// transaction and its Deposited event, taken apart into the permit it spent, so the deposit key it
// stands for (the hash of { wallet, amount, deadline, v, r, s }, server/cage/seams.ts) is computed
// from the chain, never taken from a row. The game role reads it before it funds a seat from a chain
// deposit (server/game/seats/chain-deposit.ts); the chain audit reads every vault event with it
// (server/bank/chain-audit.ts).
import { decodeFunctionData, getAddress, TransactionReceiptNotFoundError, isAddressEqual, parseEventLogs, type Address, type Hex, type Log, type PublicClient } from 'viem';
import { getTransaction, getTransactionReceipt } from 'viem/actions';
import { depositKeyOf } from '../bank-contract/contract.ts';
import { TABLE_VAULT } from './contracts.ts';
import { BASE_UNITS_PER_CHIP } from './types.ts';

/** A Deposited event as the chain logged it, with the deposit keys its transaction's permit hashes to. */
export interface DepositEvidence {
  txHash: Hex;
  blockNumber: bigint;
  /** The Deposited log's index in its block: a refund is keyed by the transaction and this. */
  logIndex: number;
  tableKey: Hex;
  owner: Address;
  /** base units */
  amount: bigint;
  /** The deposit keys the permit in the transaction's calldata hashes to (v as 27/28 and as 0/1). */
  keys: string[];
}

/** The deposit keys of a registerAndDeposit call (the bank hashes the v its client sent: 0/1 or 27/28). */
function keysOfCall(input: Hex, owner: Address, baseUnits: bigint): string[] {
  let call;
  try {
    call = decodeFunctionData({ abi: TABLE_VAULT.abi, data: input });
  } catch {
    return [];
  }
  if (call.functionName !== 'registerAndDeposit' || baseUnits % BASE_UNITS_PER_CHIP !== 0n) return [];
  const [, , , deadline, v, r, s] = call.args as unknown as [Hex, Address, bigint, bigint, number, Hex, Hex];
  const chips = baseUnits / BASE_UNITS_PER_CHIP;
  const vs = v >= 27 ? [v, v - 27] : [v];
  return vs.map((x) => depositKeyOf({ v: x, r, s, deadline: deadline.toString() }, owner, chips)!);
}

/** The evidence of one Deposited log (its transaction read for the permit). */
export async function evidenceOfLog(client: PublicClient, log: Log): Promise<DepositEvidence> {
  const [event] = parseEventLogs({ abi: TABLE_VAULT.abi, logs: [log], eventName: 'Deposited' });
  const { tableKey, owner, amount } = event!.args as unknown as { tableKey: Hex; owner: Address; amount: bigint };
  const tx = await getTransaction(client, { hash: log.transactionHash! });
  return { txHash: log.transactionHash!, blockNumber: log.blockNumber!, logIndex: log.logIndex!, tableKey, owner: getAddress(owner), amount, keys: keysOfCall(tx.input, owner, amount) };
}

/**
 * The Deposited event of the vault in transaction `txHash`, with the keys of its permit; null when
 * the chain has no successful receipt for it, or no Deposited event of this vault in it.
 */
export async function depositEvidence(client: PublicClient, vault: Address, txHash: Hex): Promise<DepositEvidence | null> {
  const receipt = await getTransactionReceipt(client, { hash: txHash }).catch((err: unknown) => {
    if (err instanceof TransactionReceiptNotFoundError) return null;
    throw err;
  });
  if (!receipt || receipt.status !== 'success') return null;
  const log = receipt.logs.find((l) => isAddressEqual(l.address, vault)
    && parseEventLogs({ abi: TABLE_VAULT.abi, logs: [l], eventName: 'Deposited' }).length === 1);
  if (!log) return null;
  return evidenceOfLog(client, log);
}
