// Checking an EVM wallet's signature over a SIWE message. An externally owned account's signature
// is checked here, offline (ECDSA recovery, EIP-191). When EVM_RPC_URL is configured and the link is
// for that RPC's chain, a signature that does not recover to the address is asked of the chain:
// viem's verifyMessage runs EIP-1271 `isValidSignature` on a deployed smart-contract wallet (a Safe,
// a passkey wallet) and ERC-6492 for one not deployed yet. A signature the contract refuses is
// invalid (401); an RPC that cannot answer is our outage, not the client's mistake (503
// `wallet_rpc_unavailable`; the client asks for a new nonce and retries).
import {
  BaseError, createPublicClient, http, HttpRequestError, RpcRequestError, TimeoutError, verifyMessage, type Address, type Hex, type PublicClient,
} from 'viem';
import { ApiError } from '../http/errors.ts';

export interface EvmSignatureVerifier {
  verify(input: { address: Address; message: string; signature: Hex; chainId: number }): Promise<boolean>;
}

export function createEvmSignatureVerifier(options: { rpcUrl?: string; timeoutMs?: number }): EvmSignatureVerifier {
  let client: PublicClient | undefined;
  let rpcChainId: Promise<number> | undefined;
  if (options.rpcUrl) {
    client = createPublicClient({ transport: http(options.rpcUrl, { timeout: options.timeoutMs ?? 5_000, retryCount: 1 }) });
  }
  /** The RPC's chain, asked once (and asked again after a failure). */
  const chainOfRpc = () => {
    rpcChainId ??= client!.getChainId().catch((err) => {
      rpcChainId = undefined;
      throw err;
    });
    return rpcChainId;
  };

  return {
    async verify({ address, message, signature, chainId }) {
      try {
        if (await verifyMessage({ address, message, signature })) return true;
      } catch {
        // not an ECDSA signature at all: maybe a contract wallet's
      }
      if (!client) return false;
      try {
        if ((await chainOfRpc()) !== chainId) return false;
        return await client.verifyMessage({ address, message, signature });
      } catch (err) {
        if (unreachable(err)) throw new ApiError(503, 'wallet_rpc_unavailable');
        return false; // anything else the chain said about this signature is a refusal
      }
    },
  };
}

/** The RPC could not be asked (down, timed out, or answered with a transport-level error). */
function unreachable(err: unknown): boolean {
  if (!(err instanceof BaseError)) return true;
  return Boolean(err.walk((e) => e instanceof HttpRequestError || e instanceof TimeoutError || e instanceof RpcRequestError));
}
