// Deploying the chip token and the table vault from the checked-in artefacts (local anvil, tests),
// and checking that a configured deployment is really there.
import { getAddress, type Address, type Hex, type PublicClient, type WalletClient } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { deployContract, getChainId, getCode, waitForTransactionReceipt } from 'viem/actions';
import { publicClientFor, walletClientFor } from './client.ts';
import { CHIP_TOKEN, TABLE_VAULT, type Artifact } from './contracts.ts';
import { onChain } from './errors.ts';
import type { Deployment } from './types.ts';

async function deploy(client: PublicClient, wallet: WalletClient, artifact: Artifact, args: readonly unknown[]): Promise<Address> {
  const hash = await deployContract(wallet, { abi: artifact.abi, bytecode: artifact.bytecode, args, account: wallet.account!, chain: wallet.chain });
  const receipt = await waitForTransactionReceipt(client, { hash, pollingInterval: 50 });
  if (receipt.status !== 'success' || !receipt.contractAddress) throw new Error(`${artifact.contractName} was not deployed (${hash})`);
  return getAddress(receipt.contractAddress);
}

/**
 * Deploys ChipToken (owner and minter: the deployer) and TableVault over it (admin: the deployer;
 * operator: `operator`, by default the deployer, so the deployer key is the bank's key).
 */
export async function deployContracts(rpcUrl: string, deployerKey: Hex, options: { operator?: Address } = {}): Promise<Deployment> {
  return onChain(async () => {
    const account = privateKeyToAccount(deployerKey);
    const chainId = await getChainId(publicClientFor(rpcUrl));
    const client = publicClientFor(rpcUrl, chainId);
    const wallet = walletClientFor(rpcUrl, chainId, account);
    const token = await deploy(client, wallet, CHIP_TOKEN, [account.address]);
    const vault = await deploy(client, wallet, TABLE_VAULT, [token, account.address, options.operator ?? account.address]);
    return { chainId, token, vault };
  });
}

/** Why a configured deployment cannot be used (another chain, no code at an address), or null when it can. */
export async function deploymentProblem(rpcUrl: string, deployment: Deployment): Promise<string | null> {
  return onChain(async () => {
    const client = publicClientFor(rpcUrl);
    const chainId = await getChainId(client);
    if (chainId !== deployment.chainId) return `the node is chain ${chainId}, the deployment is on chain ${deployment.chainId}`;
    for (const [name, address] of [['token', deployment.token], ['vault', deployment.vault]] as const) {
      const code = await getCode(client, { address });
      if (!code || code === '0x') return `no contract at the ${name} address ${address}`;
    }
    return null;
  });
}
