// The `walletAddress` claim every access JWT carries, read one way for every minting path (the
// admin session's token, the identity-provider bridge, the test harness's mint): the user's primary
// wallet when it is an EVM wallet, EIP-55 checksummed; null when the user has no wallet or the
// primary is a Solana wallet (the claim is an EVM address or null, never another chain's; a client
// that needs the Solana wallets reads them from the wallet routes).
import { getAddress } from 'viem';
import type pg from 'pg';
import { primaryEvmAddress } from './queries.ts';

export async function walletAddressClaim(pool: pg.Pool, userId: string): Promise<`0x${string}` | null> {
  const address = await primaryEvmAddress(pool, userId);
  return address ? getAddress(address) : null;
}
