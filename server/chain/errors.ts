// viem's errors mapped to the two the chain bank acts on: a revert (with the reason the bank surfaces
// in its 409) and an unreachable chain (the caller cannot know what happened).
import { BaseError, ContractFunctionRevertedError, HttpRequestError, SocketClosedError, TimeoutError } from 'viem';
import { ChainRevert, ChainUnavailable } from './types.ts';

/** A decoded revert as a reason: a custom error's name (`InsufficientTableBalance`, `ERC2612ExpiredSignature`), a require's string, or `Panic(code)`. */
export function reasonOf(errorName: string, args: readonly unknown[] | undefined): string {
  if (errorName === 'Error' && typeof args?.[0] === 'string') return args[0];
  if (errorName === 'Panic') return `Panic(${String(args?.[0])})`;
  return errorName;
}

export function revertReason(revert: ContractFunctionRevertedError): string {
  if (revert.data) return reasonOf(revert.data.errorName, revert.data.args);
  return revert.reason ?? revert.signature ?? 'execution reverted';
}

function isUnreachable(e: unknown): boolean {
  return e instanceof HttpRequestError || e instanceof TimeoutError || e instanceof SocketClosedError || isNetworkError(e);
}

/** A socket-level failure outside viem's wrapping (a refused or reset connection, undici's socket errors): Node's errno names, not SQLSTATEs. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
function isNetworkError(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (NETWORK_CODES.has(code) || code.startsWith('UND_ERR_'));
}

/**
 * The error a chain call rejects with: ChainRevert, ChainUnavailable (the one coded error of an
 * unreachable chain: 503 chain_unavailable at the HTTP boundary), or the original error.
 */
export function chainError(err: unknown): unknown {
  if (err instanceof ChainRevert || err instanceof ChainUnavailable) return err;
  if (isNetworkError(err) || (err instanceof Error && isNetworkError(err.cause))) return new ChainUnavailable(`chain unavailable: ${(err as Error).message}`);
  if (!(err instanceof BaseError)) return err;
  const revert = err.walk((e) => e instanceof ContractFunctionRevertedError);
  if (revert instanceof ContractFunctionRevertedError) return new ChainRevert(revertReason(revert));
  // a request of our clients already said so (client.ts), and a viem action wrapped it
  const said = err.walk((e) => e instanceof ChainUnavailable);
  if (said instanceof ChainUnavailable) return said;
  if (err.walk(isUnreachable)) return new ChainUnavailable(`chain unavailable: ${err.shortMessage}`);
  return err;
}

/** Runs a chain call with its errors mapped. */
export async function onChain<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw chainError(err);
  }
}
