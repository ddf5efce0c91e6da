// A real local chain for the tests: anvil (from npm, @foundry-rs/anvil) on an ephemeral port, and a
// smart-contract wallet (test/fixtures/contracts/OwnerWallet.sol, compiled here with solc-js) that
// answers EIP-1271 for its owner's signatures.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { createPublicClient, createWalletClient, getAddress, http, type Abi, type Address, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { foundry } from 'viem/chains';

const require = createRequire(import.meta.url);
const ROOT = path.resolve(import.meta.dirname, '../..');

/** anvil's first well-known development account (funded with 10,000 ETH on every anvil chain). */
export const ANVIL_DEPLOYER = privateKeyToAccount('0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80');

export interface Anvil {
  url: string;
  chainId: number;
  stop(): Promise<void>;
}

export async function startAnvil(): Promise<Anvil> {
  const child: ChildProcess = spawn(path.join(ROOT, 'node_modules/.bin/anvil'), ['--host', '127.0.0.1', '--port', '0', '--chain-id', String(foundry.id)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`anvil did not start: ${seen.slice(-500)}`)), 30_000);
    child.once('exit', (code) => reject(new Error(`anvil exited (${code}): ${seen.slice(-500)}`)));
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      const m = /Listening on ([\d.]+:\d+)/.exec(seen);
      if (m) {
        clearTimeout(timer);
        child.stdout!.off('data', onData);
        child.stdout!.resume();
        resolve(`http://${m[1]}`);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (c: Buffer) => { seen += c.toString(); });
  });
  return {
    url,
    chainId: foundry.id,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

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
