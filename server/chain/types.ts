// The chain bank's view of the EVM (issue 20): what server/chain/ offers the chain-bank role. The
// contracts are in contracts/ (a 6-decimal ERC-20 with ERC-2612 permit, the chip token; and the
// table vault, keyed by keccak256(tableId)); chips x 10^6 = base units, the units defined once in SQL
// (db/functions/00_units.sql) and generated into server/units.generated.ts.
import type { Address, Hex, TypedDataDomain } from 'viem';
import { refusalState } from '../http/errors.ts';

/** 1 chip = 10^6 token base units (the token has 6 decimals): the generated constant. */
export { BASE_UNITS_PER_CHIP } from '../units.generated.ts';

/** An ERC-2612 permit's signature parts, as the deposit body carries them. */
export interface PermitParts {
  v: number;
  r: Hex;
  s: Hex;
  /** unix seconds */
  deadline: bigint;
}

/** Where the contracts live: one active deployment per chain. */
export interface Deployment {
  chainId: number;
  token: Address;
  vault: Address;
}

/** The outcome of a transaction the bank sent, read from its receipt (the chain is the authority). */
export type TxOutcome =
  | { status: 'confirmed'; txHash: Hex; blockNumber: bigint }
  | { status: 'reverted'; txHash: Hex; reason: string }
  | { status: 'pending'; txHash: Hex };

/** A vault event as the chain logged it (the reconcilers read these, never a request body). */
export interface VaultDeposit {
  txHash: Hex;
  tableKey: Hex;
  owner: Address;
  /** base units */
  amount: bigint;
  blockNumber: bigint;
}

/** A vault payment (Withdrawn or PaidOut) as the chain logged it. */
export interface VaultWithdrawal {
  txHash: Hex;
  tableKey: Hex;
  to: Address;
  /** base units */
  amount: bigint;
  blockNumber: bigint;
  event: 'Withdrawn' | 'PaidOut';
}

export interface ChainBankChain {
  readonly deployment: Deployment;
  /** The permit's signer as the token's EIP-712 domain recovers it (null when it recovers nothing). */
  recoverPermitSigner(args: { owner: Address; chips: bigint; permit: PermitParts }): Promise<{ signer: Address | null; nonce: bigint }>;
  /**
   * Sends the vault's registerAndDeposit(keccak256(tableId), owner, base units, permit): the token
   * permit then the transfer into the vault. Resolves with the hash once the node accepted the
   * transaction; a revert at simulation rejects with a ChainRevert carrying the reason.
   */
  submitDeposit(args: { tableId: string; owner: Address; chips: bigint; permit: PermitParts }): Promise<Hex>;
  /** The vault's operator withdrawal from the table's balance to `to` (a stand-up, a forced withdraw). */
  submitWithdraw(args: { tableId: string; to: Address; chips: bigint }): Promise<Hex>;
  /** The vault's operator withdrawal of `baseUnits` from the balance of table key `tableKey` (a refund of a deposit no intent backs). */
  submitRefund(args: { tableKey: Hex; to: Address; baseUnits: bigint }): Promise<Hex>;
  /** The vault's payout from a tournament table's balance to `to`. */
  submitPayout(args: { tableId: string; to: Address; chips: bigint }): Promise<Hex>;
  /** Waits for the receipt up to `timeoutMs`: confirmed, reverted (with the reason), or still pending. */
  waitForOutcome(txHash: Hex, timeoutMs: number): Promise<TxOutcome>;
  /** Whether the node knows the transaction at all (mined or in its pool): false once it was dropped. */
  isKnown(txHash: Hex): Promise<boolean>;
  /** The vault's Deposited event of a transaction, read from its receipt's logs (null when it has none). */
  depositOf(txHash: Hex): Promise<VaultDeposit | null>;
  /** The vault's Withdrawn (or PaidOut) event of a transaction, read from its receipt's logs (null when it has none). */
  withdrawalOf(txHash: Hex): Promise<VaultWithdrawal | null>;
  /** Token balance of an address, in base units. */
  balanceOf(address: Address): Promise<bigint>;
  /** The token's EIP-712 domain as the token reports it (ERC-5267): what a permit is signed in. */
  permitDomain(): Promise<TypedDataDomain>;
  /** The token's next permit nonce for `owner`. */
  permitNonce(owner: Address): Promise<bigint>;
  /** The vault's recorded balance of a table, in base units. */
  tableBalance(tableId: string): Promise<bigint>;
  /** Whether the node answers now (its block number within a short timeout), and the last fault seen. */
  reachability(): Promise<ChainReachability>;
}

/** What /health and GET /api/chain say of the chain: reachable now or not, and its last fault. */
export interface ChainReachability {
  reachable: boolean;
  /** When the node was last asked (ISO 8601). */
  checkedAt: string;
  /** The block it answered (a decimal string), when it answered. */
  blockNumber?: string;
  /** The last time a call found the node unreachable, and why (kept after it recovers). */
  lastError?: { message: string; at: string };
}

/** A transaction the chain refused (at simulation or in its receipt), with the revert reason. */
export class ChainRevert extends Error {
  readonly reason: string;
  constructor(reason: string) {
    super(`reverted: ${reason}`);
    this.name = 'ChainRevert';
    this.reason = reason;
  }
}

/** The SQLSTATE of the registry's bank refusal `chain_unavailable` (db/refusals.json: 503). */
const CHAIN_UNAVAILABLE = refusalState('bank', 'chain_unavailable');

/**
 * The chain cannot be reached (refused connection, reset, timeout): the caller cannot know what
 * happened. The one coded error of every unreachable chain call: it carries the registry's code, so
 * the HTTP error boundary answers any route it escapes from with 503 `chain_unavailable`.
 */
export class ChainUnavailable extends Error {
  readonly code = CHAIN_UNAVAILABLE;
  /** As viem's errors carry it: a viem action that wraps this one quotes it. */
  readonly shortMessage: string;
  constructor(message: string) {
    super(message);
    this.name = 'ChainUnavailable';
    this.shortMessage = message;
  }
}
