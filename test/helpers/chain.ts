// The chain bank's chain in tests: a real anvil with the contracts deployed from the checked-in
// artefacts (minter: anvil's first key; vault operator, the bank's key: its second), fresh player
// wallets funded with chips, and a receipt's vault events.
import { createPublicClient, http, parseEventLogs, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { getTransactionReceipt } from 'viem/actions';
import { ANVIL_DEV_KEYS, startAnvil, type Anvil } from '../../server/chain/anvil.ts';
import { TABLE_VAULT } from '../../server/chain/contracts.ts';
import { deployContracts } from '../../server/chain/deploy.ts';
import { mintChips } from '../../server/chain/dev-wallet.ts';
import type { Deployment } from '../../server/chain/types.ts';

export const MINTER_KEY = ANVIL_DEV_KEYS[0]!;
export const OPERATOR_KEY = ANVIL_DEV_KEYS[1]!;
/** Funded with ETH, no role anywhere: a front-runner, a non-operator. */
export const STRANGER_KEY = ANVIL_DEV_KEYS[2]!;

export interface TestChain {
  anvil: Anvil;
  deployment: Deployment;
}

export async function startTestChain(): Promise<TestChain> {
  const anvil = await startAnvil();
  const deployment = await deployContracts(anvil.url, MINTER_KEY, { operator: privateKeyToAccount(OPERATOR_KEY).address });
  return { anvil, deployment };
}

export interface Player {
  key: Hex;
  address: Address;
}

/** A fresh wallet holding `chips` (none when 0). */
export async function newPlayer(chain: TestChain, chips: bigint): Promise<Player> {
  const key = generatePrivateKey();
  const address = privateKeyToAccount(key).address;
  if (chips > 0n) await mintChips({ rpcUrl: chain.anvil.url, deployment: chain.deployment, minterKey: MINTER_KEY, to: address, chips });
  return { key, address };
}

/** The vault's events in a transaction's receipt, in log order. */
export async function vaultEvents(chain: TestChain, txHash: Hex): Promise<{ eventName: string; args: Record<string, unknown> }[]> {
  const client = createPublicClient({ transport: http(chain.anvil.url) });
  const receipt = await getTransactionReceipt(client, { hash: txHash });
  const logs = receipt.logs.filter((l) => l.address.toLowerCase() === chain.deployment.vault.toLowerCase());
  return parseEventLogs({ abi: TABLE_VAULT.abi, logs }).map((e) => ({ eventName: e.eventName, args: e.args as unknown as Record<string, unknown> }));
}

/** An anvil JSON-RPC call (evm_setAutomine, evm_mine, ...). */
export async function anvilRpc(chain: TestChain | string, method: string, params: unknown[] = []): Promise<unknown> {
  const res = await fetch(typeof chain === 'string' ? chain : chain.anvil.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
}
