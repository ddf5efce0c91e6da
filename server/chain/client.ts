// viem clients for one RPC endpoint: the chain definition built from the deployment's chain id, an
// http transport with a bounded timeout and retry (so a dead node becomes ChainUnavailable quickly).
import { createPublicClient, createWalletClient, defineChain, http, type Account, type Chain, type PublicClient, type WalletClient } from 'viem';

const RPC_TIMEOUT_MS = 10_000;
const RPC_RETRIES = 2;

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

export function walletClientFor(rpcUrl: string, chainId: number, account: Account): WalletClient {
  const transport = http(rpcUrl, { timeout: RPC_TIMEOUT_MS, retryCount: RPC_RETRIES });
  return createWalletClient({ account, chain: evmChain(chainId, rpcUrl), transport });
}
