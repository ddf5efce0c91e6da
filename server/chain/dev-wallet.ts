// A player's wallet for tests and local use: the token owner mints chips to an address, and a
// private-key account signs the vault's permit exactly as a browser wallet would (eth_signTypedData_v4
// of the token's EIP-712 Permit; viem's signTypedData).
import type { Address, Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { getChainId, waitForTransactionReceipt, writeContract } from 'viem/actions';
import { publicClientFor, walletClientFor } from './client.ts';
import { CHIP_TOKEN } from './contracts.ts';
import { onChain } from './errors.ts';
import { permitDomain, permitMessage, permitNonce, permitParts, PERMIT_TYPES, toBaseUnits } from './permit.ts';
import type { Deployment, PermitParts } from './types.ts';

/**
 * The mints of one minter on one chain, one at a time: each takes the account's next nonce when it
 * sends, so two sent at once from this process would take the same one ("replacement transaction
 * underpriced"). Each waits for the one before it (whatever became of it).
 */
const minting = new Map<string, Promise<unknown>>();

/** Mints `chips` to `to`, signed by the token's owner; resolves once mined. */
export async function mintChips(args: { rpcUrl: string; deployment: Deployment; minterKey: Hex; to: Address; chips: bigint }): Promise<void> {
  const key = `${args.rpcUrl} ${privateKeyToAccount(args.minterKey).address}`;
  const mine = (minting.get(key) ?? Promise.resolve()).catch(() => undefined).then(() => mintNow(args));
  minting.set(key, mine);
  try {
    await mine;
  } finally {
    if (minting.get(key) === mine) minting.delete(key);
  }
}

async function mintNow(args: { rpcUrl: string; deployment: Deployment; minterKey: Hex; to: Address; chips: bigint }): Promise<void> {
  await onChain(async () => {
    const chainId = await getChainId(publicClientFor(args.rpcUrl));
    const client = publicClientFor(args.rpcUrl, chainId);
    const wallet = walletClientFor(args.rpcUrl, chainId, privateKeyToAccount(args.minterKey));
    const hash = await writeContract(wallet, {
      address: args.deployment.token, abi: CHIP_TOKEN.abi, functionName: 'mint', args: [args.to, toBaseUnits(args.chips)],
      account: wallet.account!, chain: wallet.chain,
    });
    const receipt = await waitForTransactionReceipt(client, { hash, pollingInterval: 50 });
    if (receipt.status !== 'success') throw new Error(`mint reverted (${hash})`);
  });
}

/**
 * The owner's permit for the vault to take `chips`, valid until `deadline` (unix seconds), at the
 * token's current nonce for the owner (or `nonce`).
 */
export async function signPermit(args: {
  rpcUrl: string; deployment: Deployment; ownerKey: Hex; chips: bigint; deadline: bigint; nonce?: bigint;
}): Promise<PermitParts> {
  const owner = privateKeyToAccount(args.ownerKey);
  const client = publicClientFor(args.rpcUrl, args.deployment.chainId);
  const [domain, nonce] = await onChain(() => Promise.all([
    permitDomain(client, args.deployment),
    args.nonce === undefined ? permitNonce(client, args.deployment, owner.address) : Promise.resolve(args.nonce),
  ]));
  const signature = await owner.signTypedData({
    domain, types: PERMIT_TYPES, primaryType: 'Permit',
    message: permitMessage(args.deployment, owner.address, toBaseUnits(args.chips), nonce, args.deadline),
  });
  return permitParts(signature, args.deadline);
}
