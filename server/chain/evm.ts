// ChainBankChain on a real EVM with viem: the operator's private-key account sends the vault's
// registerAndDeposit / withdraw / payout (simulated first, so a revert rejects with its reason before
// anything is sent), receipts and logs are read back as the authority, reverts become ChainRevert and
// an unreachable node ChainUnavailable.
import {
  decodeErrorResult, decodeFunctionData, getAddress, isAddressEqual, parseEventLogs, recoverTypedDataAddress,
  TransactionNotFoundError, TransactionReceiptNotFoundError, type Address, type Hex, type PublicClient, type TransactionReceipt, type TypedDataDomain, type WalletClient,
} from 'viem';
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { getTransaction, getTransactionReceipt, readContract, simulateContract, writeContract } from 'viem/actions';
import { probeBlockNumber, publicClientFor, walletClientFor } from './client.ts';
import { CHIP_TOKEN, TABLE_VAULT, VAULT_CALL_ABI, tableKey } from './contracts.ts';
import { chainError, onChain, reasonOf } from './errors.ts';
import { permitDomain, permitMessage, permitNonce, permitSignature, permitV, PERMIT_TYPES, toBaseUnits } from './permit.ts';
import { SerialSender } from './sender.ts';
import { ChainRevert, ChainUnavailable, type ChainBankChain, type ChainReachability, type Deployment, type PermitParts, type TxOutcome, type VaultDeposit, type VaultWithdrawal } from './types.ts';

export interface ChainBankChainConfig {
  rpcUrl: string;
  /** The vault operator's private key (the bank's key): it signs every transaction the bank sends. */
  operatorKey: Hex;
  deployment: Deployment;
  /** How often waitForOutcome asks for the receipt (default 250 ms). */
  pollingIntervalMs?: number;
}

type VaultFunction = 'registerAndDeposit' | 'withdraw' | 'payout';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class EvmChainBankChain implements ChainBankChain {
  readonly deployment: Deployment;
  readonly operator: Address;
  private readonly client: PublicClient;
  private readonly wallet: WalletClient;
  private readonly account: PrivateKeyAccount;
  private readonly sender: SerialSender;
  private readonly pollingIntervalMs: number;
  private domain: Promise<TypedDataDomain> | undefined;
  private readonly rpcUrl: string;
  private lastFault: ChainReachability['lastError'];

  constructor(config: ChainBankChainConfig) {
    this.rpcUrl = config.rpcUrl;
    this.deployment = { chainId: config.deployment.chainId, token: getAddress(config.deployment.token), vault: getAddress(config.deployment.vault) };
    this.account = privateKeyToAccount(config.operatorKey);
    this.operator = this.account.address;
    this.client = publicClientFor(config.rpcUrl, this.deployment.chainId);
    this.wallet = walletClientFor(config.rpcUrl, this.deployment.chainId, this.account);
    this.sender = new SerialSender(this.client, this.operator);
    this.pollingIntervalMs = config.pollingIntervalMs ?? 250;
  }

  /** A chain call with its errors mapped (onChain); an unreachable node is remembered as the last fault. */
  private async on<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await onChain(call);
    } catch (err) {
      if (err instanceof ChainUnavailable) this.lastFault = { message: err.message, at: new Date().toISOString() };
      throw err;
    }
  }

  async reachability(): Promise<ChainReachability> {
    const checkedAt = new Date().toISOString();
    try {
      const blockNumber = await this.on(() => probeBlockNumber(this.rpcUrl));
      return { reachable: true, checkedAt, blockNumber: blockNumber.toString(), ...(this.lastFault ? { lastError: this.lastFault } : {}) };
    } catch (err) {
      if (!(err instanceof ChainUnavailable)) this.lastFault = { message: (err as Error).message.slice(0, 200), at: checkedAt };
      return { reachable: false, checkedAt, lastError: this.lastFault };
    }
  }

  async recoverPermitSigner(args: { owner: Address; chips: bigint; permit: PermitParts }): Promise<{ signer: Address | null; nonce: bigint }> {
    const value = toBaseUnits(args.chips);
    const [domain, nonce] = await this.on(() => Promise.all([this.tokenDomain(), permitNonce(this.client, this.deployment, args.owner)]));
    try {
      const signer = await recoverTypedDataAddress({
        domain,
        types: PERMIT_TYPES,
        primaryType: 'Permit',
        message: permitMessage(this.deployment, args.owner, value, nonce, args.permit.deadline),
        signature: permitSignature(args.permit),
      });
      return { signer, nonce };
    } catch {
      return { signer: null, nonce };
    }
  }

  submitDeposit(args: { tableId: string; owner: Address; chips: bigint; permit: PermitParts }): Promise<Hex> {
    const { v, r, s, deadline } = args.permit;
    return this.send('registerAndDeposit', [tableKey(args.tableId), getAddress(args.owner), toBaseUnits(args.chips), deadline, permitV(v), r, s]);
  }

  submitWithdraw(args: { tableId: string; to: Address; chips: bigint }): Promise<Hex> {
    return this.send('withdraw', [tableKey(args.tableId), getAddress(args.to), toBaseUnits(args.chips)]);
  }

  submitRefund(args: { tableKey: Hex; to: Address; baseUnits: bigint }): Promise<Hex> {
    return this.send('withdraw', [args.tableKey, getAddress(args.to), args.baseUnits]);
  }

  submitPayout(args: { tableId: string; to: Address; chips: bigint }): Promise<Hex> {
    return this.send('payout', [tableKey(args.tableId), getAddress(args.to), toBaseUnits(args.chips)]);
  }

  async waitForOutcome(txHash: Hex, timeoutMs: number): Promise<TxOutcome> {
    const deadline = Date.now() + Math.max(0, timeoutMs);
    for (;;) {
      const receipt = await this.on(() => this.receipt(txHash));
      if (receipt?.status === 'success') return { status: 'confirmed', txHash, blockNumber: receipt.blockNumber };
      if (receipt) return { status: 'reverted', txHash, reason: await this.on(() => this.revertReasonOf(txHash, receipt.blockNumber)) };
      const left = deadline - Date.now();
      if (left <= 0) return { status: 'pending', txHash };
      await sleep(Math.min(this.pollingIntervalMs, left));
    }
  }

  async isKnown(txHash: Hex): Promise<boolean> {
    return this.on(async () => {
      try {
        await getTransaction(this.client, { hash: txHash });
        return true;
      } catch (err) {
        if (err instanceof TransactionNotFoundError) {
          // dropped: if it was ours, its nonce is free again and the sender's counter runs ahead
          this.sender.resync();
          return false;
        }
        throw err;
      }
    });
  }

  async depositOf(txHash: Hex): Promise<VaultDeposit | null> {
    const receipt = await this.on(() => this.receipt(txHash));
    if (!receipt || receipt.status !== 'success') return null;
    const logs = receipt.logs.filter((log) => isAddressEqual(log.address, this.deployment.vault));
    const [event] = parseEventLogs({ abi: TABLE_VAULT.abi, logs, eventName: 'Deposited' });
    if (!event) return null;
    const { tableKey: key, owner, amount } = event.args as unknown as { tableKey: Hex; owner: Address; amount: bigint };
    return { txHash, tableKey: key, owner: getAddress(owner), amount, blockNumber: receipt.blockNumber };
  }

  async withdrawalOf(txHash: Hex): Promise<VaultWithdrawal | null> {
    const receipt = await this.on(() => this.receipt(txHash));
    if (!receipt || receipt.status !== 'success') return null;
    const logs = receipt.logs.filter((log) => isAddressEqual(log.address, this.deployment.vault));
    const [event] = parseEventLogs({ abi: TABLE_VAULT.abi, logs }).filter((e) => e.eventName === 'Withdrawn' || e.eventName === 'PaidOut');
    if (!event) return null;
    const { tableKey: key, to, amount } = event.args as unknown as { tableKey: Hex; to: Address; amount: bigint };
    return { txHash, tableKey: key, to: getAddress(to), amount, blockNumber: receipt.blockNumber, event: event.eventName as 'Withdrawn' | 'PaidOut' };
  }

  balanceOf(address: Address): Promise<bigint> {
    return this.on(async () => (await readContract(this.client, { address: this.deployment.token, abi: CHIP_TOKEN.abi, functionName: 'balanceOf', args: [address] })) as bigint);
  }

  tableBalance(tableId: string): Promise<bigint> {
    return this.on(async () => (await readContract(this.client, { address: this.deployment.vault, abi: TABLE_VAULT.abi, functionName: 'tableBalance', args: [tableKey(tableId)] })) as bigint);
  }

  /** Simulates (a revert rejects with its reason, nothing sent), then sends with the operator's next nonce. */
  private send(functionName: VaultFunction, args: readonly unknown[]): Promise<Hex> {
    return this.on(async () => {
      const call = { address: this.deployment.vault, abi: VAULT_CALL_ABI, functionName, args, account: this.account } as const;
      await simulateContract(this.client, call);
      return this.sender.run((nonce) => writeContract(this.wallet, { ...call, chain: this.wallet.chain, nonce }));
    });
  }

  permitDomain(): Promise<TypedDataDomain> {
    return this.on(() => this.tokenDomain());
  }

  permitNonce(owner: Address): Promise<bigint> {
    return this.on(() => permitNonce(this.client, this.deployment, owner));
  }

  private tokenDomain(): Promise<TypedDataDomain> {
    this.domain ??= permitDomain(this.client, this.deployment).catch((err: unknown) => {
      this.domain = undefined;
      throw err;
    });
    return this.domain;
  }

  private async receipt(txHash: Hex): Promise<TransactionReceipt | null> {
    try {
      return await getTransactionReceipt(this.client, { hash: txHash });
    } catch (err) {
      if (err instanceof TransactionReceiptNotFoundError) return null;
      throw err;
    }
  }

  /**
   * Why a mined transaction reverted: the revert data from the node's call trace (debug_traceTransaction,
   * exact even when an earlier transaction of the same block caused it), else the vault call replayed
   * on the state before its block.
   */
  private async revertReasonOf(txHash: Hex, blockNumber: bigint): Promise<string> {
    try {
      const traced = await this.tracedRevert(txHash);
      if (traced) return traced;
    } catch (err) {
      const mapped = chainError(err);
      if (mapped instanceof ChainUnavailable) throw mapped;
      // the node has no call tracer (a public RPC): replay the call instead
    }
    return this.replayedRevert(txHash, blockNumber);
  }

  private async tracedRevert(txHash: Hex): Promise<string | null> {
    const trace = (await this.client.request({
      method: 'debug_traceTransaction' as never,
      params: [txHash, { tracer: 'callTracer' }] as never,
    })) as { output?: Hex; error?: string } | null;
    if (!trace?.output || trace.output === '0x') return trace?.error ?? null;
    try {
      const decoded = decodeErrorResult({ abi: VAULT_CALL_ABI, data: trace.output });
      return reasonOf(decoded.errorName, decoded.args);
    } catch {
      return trace.error ?? 'execution reverted';
    }
  }

  private async replayedRevert(txHash: Hex, blockNumber: bigint): Promise<string> {
    const tx = await getTransaction(this.client, { hash: txHash });
    if (!tx.to || !isAddressEqual(tx.to, this.deployment.vault)) return 'execution reverted';
    const { functionName, args } = decodeFunctionData({ abi: TABLE_VAULT.abi, data: tx.input });
    try {
      await simulateContract(this.client, { address: this.deployment.vault, abi: VAULT_CALL_ABI, functionName, args, account: tx.from, blockNumber: blockNumber - 1n });
      return 'execution reverted';
    } catch (err) {
      const mapped = chainError(err);
      if (mapped instanceof ChainRevert) return mapped.reason;
      throw mapped;
    }
  }
}

/** The chain bank's chain on `rpcUrl`, its transactions signed by the operator key. */
export function createChainBankChain(config: ChainBankChainConfig): EvmChainBankChain {
  return new EvmChainBankChain(config);
}
