// The local chain of `npm start` when no EVM_RPC_URL is configured: anvil on a free port with the
// chip token and the table vault deployed by anvil's first development key (the token's owner, who
// mints local chips) and operated by its second (the chain bank's key): two keys, so minting never
// races the bank's nonces. For local play only: the keys are public.
import type { Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { ANVIL_DEV_KEYS, startAnvil } from './anvil.ts';
import { deployContracts } from './deploy.ts';
import type { Deployment } from './types.ts';

export interface LocalChain {
  url: string;
  deployment: Deployment;
  /** The vault's operator, the chain bank's key: anvil's second development key. */
  operatorKey: Hex;
  /** The deployer, token owner (minter) and vault admin: anvil's first development key. */
  minterKey: Hex;
  stop(): Promise<void>;
}

export async function startLocalChain(): Promise<LocalChain> {
  const anvil = await startAnvil();
  const minterKey = ANVIL_DEV_KEYS[0]!;
  const operatorKey = ANVIL_DEV_KEYS[1]!;
  try {
    const deployment = await deployContracts(anvil.url, minterKey, { operator: privateKeyToAccount(operatorKey).address });
    return { url: anvil.url, deployment, operatorKey, minterKey, stop: anvil.stop };
  } catch (err) {
    await anvil.stop();
    throw err;
  }
}
