// viem clients for one RPC endpoint: the chain definition built from the deployment's chain id, an
// http transport with a bounded timeout and retry (so a dead node becomes ChainUnavailable quickly).
// The chain client boundary: every request of a client made here that finds the node unreachable
// rejects with ChainUnavailable (the one coded error: 503 chain_unavailable at the HTTP boundary),
// whichever module made the call (the chain bank, the game's read-back, the audit's scan).
import { createPublicClient, createWalletClient, defineChain, http, type Account, type Chain, type PublicClient, type WalletClient } from 'viem';
import { chainError } from './errors.ts';
import { ChainUnavailable } from './types.ts';

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

/** The client with its requests' unreachable-node failures mapped to ChainUnavailable (anything else as viem threw it). */
function classified<C extends { request: unknown }>(client: C): C {
  const request = client.request as (...args: unknown[]) => Promise<unknown>;
  const mapped = async (...args: unknown[]) => {
    try {
      return await request(...args);
    } catch (err) {
      const e = chainError(err);
      throw e instanceof ChainUnavailable ? e : err;
    }
  };
  return Object.assign(client, { request: mapped as C['request'] });
}

export function publicClientFor(rpcUrl: string, chainId?: number): PublicClient {
  const transport = http(rpcUrl, { timeout: RPC_TIMEOUT_MS, retryCount: RPC_RETRIES });
  return classified(createPublicClient({ chain: chainId === undefined ? undefined : evmChain(chainId, rpcUrl), transport }));
}

const probes = new Map<string, PublicClient>();

/** The node's block number within PROBE_TIMEOUT_MS, no retry: a bounded answer to "is it there?". */
export function probeBlockNumber(rpcUrl: string): Promise<bigint> {
  let client = probes.get(rpcUrl);
  if (!client) {
    client = classified(createPublicClient({ transport: http(rpcUrl, { timeout: PROBE_TIMEOUT_MS, retryCount: 0 }) }));
    probes.set(rpcUrl, client);
  }
  return client.getBlockNumber({ cacheTime: 0 });
}

export function walletClientFor(rpcUrl: string, chainId: number, account: Account): WalletClient {
  const transport = http(rpcUrl, { timeout: RPC_TIMEOUT_MS, retryCount: RPC_RETRIES });
  return classified(createWalletClient({ account, chain: evmChain(chainId, rpcUrl), transport }));
}
