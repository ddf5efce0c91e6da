// viem clients for one RPC endpoint: the chain definition built from the deployment's chain id, an
// http transport with a bounded timeout and retry (so a dead node becomes ChainUnavailable quickly).
import { createPublicClient, createWalletClient, defineChain, http, type Account, type Chain, type PublicClient, type WalletClient } from 'viem';

const RPC_TIMEOUT_MS = 10_000;
const RPC_RETRIES = 2;
/** The reachability probe's bound (/health, GET /api/chain): one try, a short wait. */
const PROBE_TIMEOUT_MS = 2_000;

export function evmChain(chainId: number, rpcUrl: string): Chain {
  return defineChain({
    id: chainId,
    name: `evm-${chainId}`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
}

export function publicClientFor(rpcUrl: string, chainId?: number): PublicClient {
  const transport = http(rpcUrl, { timeout: RPC_TIMEOUT_MS, retryCount: RPC_RETRIES });
  return createPublicClient({ chain: chainId === undefined ? undefined : evmChain(chainId, rpcUrl), transport });
}

const probes = new Map<string, PublicClient>();

/** The node's block number within PROBE_TIMEOUT_MS, no retry: a bounded answer to "is it there?". */
export function probeBlockNumber(rpcUrl: string): Promise<bigint> {
  let client = probes.get(rpcUrl);
  if (!client) {
    client = createPublicClient({ transport: http(rpcUrl, { timeout: PROBE_TIMEOUT_MS, retryCount: 0 }) });
    probes.set(rpcUrl, client);
  }
  return client.getBlockNumber({ cacheTime: 0 });
}

export function walletClientFor(rpcUrl: string, chainId: number, account: Account): WalletClient {
  const transport = http(rpcUrl, { timeout: RPC_TIMEOUT_MS, retryCount: RPC_RETRIES });
  return createWalletClient({ account, chain: evmChain(chainId, rpcUrl), transport });
}
