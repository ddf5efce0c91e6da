// A real local chain for the tests: anvil (server/chain/anvil.ts, shared with `npm start`'s local
// chain) on an ephemeral port, and a smart-contract wallet (test/fixtures/contracts/OwnerWallet.sol,
// compiled here with solc-js) that answers EIP-1271 for its owner's signatures.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { createPublicClient, createWalletClient, getAddress, http, type Abi, type Address, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { foundry } from 'viem/chains';
import { ANVIL_DEV_KEYS, startAnvil, type Anvil } from '../../server/chain/anvil.ts';

export { startAnvil, type Anvil };

const require = createRequire(import.meta.url);
const ROOT = path.resolve(import.meta.dirname, '../..');

/** anvil's first well-known development account (funded with 10,000 ETH on every anvil chain). */
export const ANVIL_DEPLOYER = privateKeyToAccount(ANVIL_DEV_KEYS[0]!);

function compile(file: string, contract: string): { abi: Abi; bytecode: Hex } {
  const solc = require('solc') as { compile(input: string): string };
  const input = {
    language: 'Solidity',
    sources: { [file]: { content: readFileSync(path.join(ROOT, 'test/fixtures/contracts', file), 'utf8') } },
    settings: { optimizer: { enabled: true, runs: 200 }, outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } } },
  };
  const out = JSON.parse(solc.compile(JSON.stringify(input)));
  const errors = (out.errors ?? []).filter((e: { severity: string }) => e.severity === 'error');
  if (errors.length) throw new Error(`solc: ${errors.map((e: { formattedMessage: string }) => e.formattedMessage).join('\n')}`);
  const c = out.contracts[file][contract];
  return { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` };
}

/** Deploys an OwnerWallet owned by `owner` and returns its address. */
export async function deployOwnerWallet(anvil: Anvil, owner: Address): Promise<Address> {
  const { abi, bytecode } = compile('OwnerWallet.sol', 'OwnerWallet');
  const chain = { ...foundry, rpcUrls: { default: { http: [anvil.url] } } };
  const wallet = createWalletClient({ account: ANVIL_DEPLOYER, chain, transport: http(anvil.url) });
  const client = createPublicClient({ chain, transport: http(anvil.url) });
  const hash = await wallet.deployContract({ abi, bytecode, args: [owner] });
  const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 50 });
  if (!receipt.contractAddress) throw new Error('OwnerWallet was not deployed');
  return getAddress(receipt.contractAddress);
}
