// Every chain intent's state agrees with the chain's events (issue 31, class 7): the half of the
// audit of causes that reads the vault. chainIntentViolations reads the active deployment's vault
// events (Deposited, Withdrawn, PaidOut) from a checkpoint block and names:
//   chain_deposit_without_intent           a vault deposit whose permit hashes to no deposit intent
//   chain_deposit_intent_failed            a vault deposit whose intent is failed (the tokens are in
//                                          the vault, nobody was credited): returned as a repair too;
//                                          the reconciler confirms it from this event and credits it
//   chain_deposit_intent_mismatch          a vault deposit whose intent records another transaction,
//                                          table, wallet or amount
//   chain_deposit_confirmed_without_event  a confirmed deposit the game has not read back whose
//                                          transaction carries no Deposited event of it
//   chain_deposit_uncredited               a confirmed deposit still funding nothing (no seat, no
//                                          entry, no refund) ten minutes on
//   chain_payment_without_intent           tokens out of the vault (Withdrawn, PaidOut) in a
//                                          transaction no withdrawal, tournament payment or refund records
//   chain_payment_intent_failed            a payment the chain made whose intent says failed (a retry
//                                          would pay it twice)
//   chain_payment_confirmed_without_event  a confirmed withdrawal or payment whose transaction
//                                          carries no vault payment of its destination and amount
//   chain_refund_without_deposit           a refund (bank.vault_refunds) whose Deposited event (its
//                                          transaction and log index) the chain does not show with
//                                          its table key, owner and amount
//   chain_unreadable                       intents exist but no chain to read them against
// A deposit with no intent, and a confirmed deposit funding nothing ten minutes on, are returned as
// `refunds` too (read from the chain's event): the reconciler refunds each to its owner, once
// (server/bank/vault-refunds.ts); once its refund is confirmed neither is named again.
// Each is { invariant, subject, detail } (as server/cage/custody.ts unverifiedReleases). It reads
// with any login that may select the bank's tables (poker_worker, poker_bank) and its own chain
// client; `scannedTo` is the next checkpoint: held before the first event whose intent is still in
// flight, so an event is judged again once its intent settled.
import type pg from 'pg';
import { getAddress, isAddressEqual, parseEventLogs, TransactionReceiptNotFoundError, type AbiEvent, type Address, type Hex, type Log, type PublicClient } from 'viem';
import { getBlockNumber, getLogs, getTransactionReceipt } from 'viem/actions';
import { publicClientFor } from '../chain/client.ts';
import { TABLE_VAULT, tableKey } from '../chain/contracts.ts';
import { depositEvidence, evidenceOfLog, type DepositEvidence } from '../chain/evidence.ts';
import { BASE_UNITS_PER_CHIP } from '../chain/types.ts';
import * as reads from './queries.ts';
import type { DeploymentRow, DepositRow } from './queries.ts';
import type { DepositRefund } from './vault-refunds.ts';

export interface ChainViolation { invariant: string; subject: string; detail: string }
/** A vault deposit whose intent is failed: what the reconciler confirms it with. */
export interface DepositRepair { key: string; txHash: Hex; blockNumber: bigint; owner: Address; amount: bigint }
export interface ChainAudit { violations: ChainViolation[]; repairs: DepositRepair[]; refunds: DepositRefund[]; scannedTo: bigint | null }
export type { DepositRefund };

type Db = Pick<pg.ClientBase, 'query'>;

const VAULT_EVENTS = (TABLE_VAULT.abi as AbiEvent[]).filter((x) => x.type === 'event' && ['Deposited', 'Withdrawn', 'PaidOut'].includes(x.name));

const matches = (d: DepositRow, e: DepositEvidence) => e.tableKey === tableKey(d.table_id)
  && e.owner.toLowerCase() === d.wallet.toLowerCase() && e.amount === BigInt(d.amount) * BASE_UNITS_PER_CHIP;

const refundOf = (e: DepositEvidence, depositKey: string | null): DepositRefund =>
  ({ txHash: e.txHash, logIndex: e.logIndex, tableKey: e.tableKey, owner: e.owner, amount: e.amount, depositKey });

/** One vault deposit judged against its intent; true while its intent (or its refund) is in flight. */
async function judgeDeposit(db: Db, e: DepositEvidence, out: ChainAudit): Promise<boolean> {
  const refund = await reads.refundOfEvent(db, e.txHash, e.logIndex);
  if (refund) {
    // refunded: the tokens went back (chain_refund_without_deposit judges the row); in flight: refunded again
    if (refund.status === 'confirmed') return false;
    out.refunds.push(refundOf(e, refund.deposit_key));
    return true;
  }
  const [d] = await reads.depositsOfKeys(db, e.keys);
  if (!d) {
    out.violations.push({ invariant: 'chain_deposit_without_intent', subject: e.txHash, detail: `${e.amount} base units from ${e.owner} into the vault with no deposit intent` });
    out.refunds.push(refundOf(e, null));
    return true;
  }
  if (d.status === 'pending' || d.status === 'submitted') return true;
  if (!matches(d, e) || (d.status === 'confirmed' && d.tx_hash !== e.txHash)) {
    out.violations.push({ invariant: 'chain_deposit_intent_mismatch', subject: d.idempotency_key, detail: `intent ${d.status} with ${d.tx_hash ?? 'no transaction'}; the chain deposited in ${e.txHash}` });
  } else if (d.status === 'failed') {
    out.violations.push({ invariant: 'chain_deposit_intent_failed', subject: d.idempotency_key, detail: `failed, but its tokens reached the vault in ${e.txHash}` });
    out.repairs.push({ key: d.idempotency_key, txHash: e.txHash, blockNumber: e.blockNumber, owner: e.owner, amount: e.amount });
  }
  return false;
}

/** Confirmed deposits nobody read back yet whose transaction carries no Deposited event of theirs. */
async function unbackedConfirmations(db: Db, client: PublicClient, dep: DeploymentRow, seen: Map<string, DepositEvidence>, out: ChainAudit) {
  for (const d of await reads.unverifiedConfirmedDeposits(db, dep.id)) {
    const e = seen.get(d.tx_hash!) ?? await depositEvidence(client, dep.vault as Address, d.tx_hash as Hex);
    if (e && e.keys.includes(d.idempotency_key) && matches(d, e)) continue;
    out.violations.push({ invariant: 'chain_deposit_confirmed_without_event', subject: d.idempotency_key, detail: `confirmed with ${d.tx_hash}, which deposited nothing of it` });
  }
}

/** How long a confirmed deposit may wait for its credit (the reconciler retries it every 30 s) before it is named. */
export const UNCREDITED_GRACE_SECONDS = 600;

/**
 * Deposits the chain bore out whose seat or entry was never funded, nor the entry refunded: named,
 * and (their Deposited event read from the chain) handed to the reconciler to refund; not named
 * once their refund is confirmed, nor while it is in flight.
 */
async function uncreditedDeposits(db: Db, client: PublicClient, dep: DeploymentRow, out: ChainAudit) {
  for (const d of await reads.uncreditedDeposits(db, dep.id, UNCREDITED_GRACE_SECONDS)) {
    const e = await depositEvidence(client, dep.vault as Address, d.tx_hash as Hex);
    if (e && e.keys.includes(d.idempotency_key) && matches(d, e)) out.refunds.push(refundOf(e, d.idempotency_key));
    if (d.refund && e) continue;
    out.violations.push({ invariant: 'chain_deposit_uncredited', subject: d.idempotency_key, detail: `${d.mode} deposit ${d.tx_hash} confirmed, its tokens in the vault, and nothing funded from it` });
  }
}

/** The Deposited event at `logIndex` of transaction `txHash` in the vault, or null. */
async function depositAt(client: PublicClient, vault: Address, txHash: Hex, logIndex: number) {
  const receipt = await getTransactionReceipt(client, { hash: txHash }).catch((err: unknown) => {
    if (err instanceof TransactionReceiptNotFoundError) return null;
    throw err;
  });
  const log = receipt?.status === 'success' ? receipt.logs.find((l) => l.logIndex === logIndex && isAddressEqual(l.address, vault)) : undefined;
  const [event] = log ? parseEventLogs({ abi: TABLE_VAULT.abi, logs: [log], eventName: 'Deposited' }) : [];
  return event ? event.args as unknown as { tableKey: Hex; owner: Address; amount: bigint } : null;
}

/** Refunds (changed since `since`, or not confirmed) whose Deposited event the chain does not show as recorded. */
async function unbackedRefunds(db: Db, client: PublicClient, dep: DeploymentRow, since: Date | undefined, out: ChainAudit) {
  for (const r of await reads.refundsToCheck(db, dep.id, since ?? null)) {
    const e = await depositAt(client, dep.vault as Address, r.deposit_tx_hash, r.deposit_log_index);
    if (e && e.tableKey.toLowerCase() === r.table_key && e.owner.toLowerCase() === r.destination && e.amount === BigInt(r.base_units)) continue;
    out.violations.push({ invariant: 'chain_refund_without_deposit', subject: r.refund_key, detail: `a refund to ${r.destination} of a deposit the chain does not show (${r.deposit_tx_hash}, log ${r.deposit_log_index})` });
  }
}

/** A vault payment (Withdrawn, PaidOut) of `txHash` to `to` of `amount` (base units) from table `key`. */
async function paymentOnChain(client: PublicClient, vault: Address, txHash: Hex, key: Hex, to: string, amount: bigint) {
  const receipt = await getTransactionReceipt(client, { hash: txHash }).catch((err: unknown) => {
    if (err instanceof TransactionReceiptNotFoundError) return null;
    throw err;
  });
  if (!receipt || receipt.status !== 'success') return false;
  const events = parseEventLogs({ abi: TABLE_VAULT.abi, logs: receipt.logs.filter((l) => isAddressEqual(l.address, vault)) });
  return events.some((e) => (e.eventName === 'Withdrawn' || e.eventName === 'PaidOut')
    && (e.args as { tableKey: Hex }).tableKey === key && (e.args as { to: Address }).to.toLowerCase() === to.toLowerCase()
    && (e.args as { amount: bigint }).amount === amount);
}

/** Vault payments against the withdrawals and tournament payments that record them. */
async function judgePayments(db: Db, client: PublicClient, dep: DeploymentRow, logs: Log[], since: Date | undefined, out: ChainAudit) {
  const rows = await reads.paymentsSince(db, dep.id, since ?? null);
  const byTx = new Map(rows.map((r) => [r.tx_hash, r]));
  const paid = new Set<string>();
  for (const log of logs) {
    const tx = log.transactionHash!;
    paid.add(tx);
    const intent = byTx.get(tx) ?? await reads.paymentOfTx(db, tx);
    if (!intent) out.violations.push({ invariant: 'chain_payment_without_intent', subject: tx, detail: 'tokens left the vault in a transaction no withdrawal, payment or refund records' });
    else if (intent.status === 'failed') out.violations.push({ invariant: 'chain_payment_intent_failed', subject: intent.key, detail: `${intent.kind} failed, but the chain paid it in ${tx}` });
  }
  for (const r of rows) {
    if (r.status !== 'confirmed' || paid.has(r.tx_hash)) continue;
    if (await paymentOnChain(client, dep.vault as Address, r.tx_hash as Hex, r.table_key ?? tableKey(r.table_id!), r.destination, BigInt(r.units))) continue;
    out.violations.push({ invariant: 'chain_payment_confirmed_without_event', subject: r.key, detail: `${r.kind} confirmed with ${r.tx_hash}, which paid nothing of it` });
  }
}

/**
 * The chain intents of the active deployment against its vault's events, from block
 * `options.fromBlock` (default: the deployment's from_block); confirmed payments outside the scanned
 * events are re-read one by one when changed since `options.since` (default: all). `chain.rpcUrl`:
 * where to read the chain (default: the deployment's rpc_url, which only the owner or an operator sets).
 */
export async function chainIntentViolations(db: Db, chain: { rpcUrl?: string }, options: { fromBlock?: bigint; since?: Date } = {}): Promise<ChainAudit> {
  const out: ChainAudit = { violations: [], repairs: [], refunds: [], scannedTo: null };
  const dep = await reads.activeDeployment(db);
  if (!dep) return out;
  const url = chain.rpcUrl ?? dep.rpc_url;
  if (!url) {
    if (await reads.deploymentHasIntents(db, dep.id)) out.violations.push({ invariant: 'chain_unreadable', subject: `deployment:${dep.id}`, detail: 'intents exist, and no EVM_RPC_URL to read them against' });
    return out;
  }
  const client = publicClientFor(url, Number(dep.chain_id));
  const latest = await getBlockNumber(client, { cacheTime: 0 });
  const from = options.fromBlock ?? BigInt(dep.from_block);
  const logs = from > latest ? [] : await getLogs(client, { address: getAddress(dep.vault), events: VAULT_EVENTS, fromBlock: from, toBlock: latest });
  const seen = new Map<string, DepositEvidence>();
  let inFlightFrom: bigint | undefined;
  for (const log of logs.filter((l) => l.eventName === 'Deposited')) {
    const e = await evidenceOfLog(client, log);
    seen.set(e.txHash, e);
    if (await judgeDeposit(db, e, out) && inFlightFrom === undefined) inFlightFrom = e.blockNumber;
  }
  await unbackedConfirmations(db, client, dep, seen, out);
  await uncreditedDeposits(db, client, dep, out);
  await unbackedRefunds(db, client, dep, options.since, out);
  await judgePayments(db, client, dep, logs.filter((l) => l.eventName !== 'Deposited'), options.since, out);
  out.scannedTo = inFlightFrom !== undefined ? inFlightFrom - 1n : latest;
  return out;
}
