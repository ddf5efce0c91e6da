// What the bank reads back from the chain after it sent: a receipt confirmed, reverted (with its
// reason) or still pending (anvil's automine off), the operator's nonce after the key was used
// elsewhere, and ChainUnavailable once the node is gone. Also the local chain `npm start` runs.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createPublicClient, createWalletClient, http, parseEther, parseGwei } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { getCode, sendTransaction, writeContract } from 'viem/actions';
import { foundry } from 'viem/chains';
import { CHIP_TOKEN, TABLE_VAULT, tableKey } from '../../server/chain/contracts.ts';
import { deploymentProblem } from '../../server/chain/deploy.ts';
import { mintChips, signPermit } from '../../server/chain/dev-wallet.ts';
import { createChainBankChain, type EvmChainBankChain } from '../../server/chain/evm.ts';
import { startLocalChain } from '../../server/chain/local.ts';
import { ChainUnavailable } from '../../server/chain/types.ts';
import { chipsToBaseUnits } from '../../server/units.generated.ts';
import { anvilRpc, MINTER_KEY, newPlayer, OPERATOR_KEY, startTestChain, STRANGER_KEY, type TestChain } from '../helpers/chain.ts';

const C = 1_000_000n;
let chain: TestChain;
let bank: EvmChainBankChain;

const localChain = () => ({ ...foundry, rpcUrls: { default: { http: [chain.anvil.url] } } });
const inAnHour = () => BigInt(Math.floor(Date.now() / 1000) + 3600);

async function fundedTable(tableId: string, chips: bigint): Promise<void> {
  const player = await newPlayer(chain, chips);
  const permit = await signPermit({ rpcUrl: chain.anvil.url, deployment: chain.deployment, ownerKey: player.key, chips, deadline: inAnHour() });
  const hash = await bank.submitDeposit({ tableId, owner: player.address, chips, permit });
  expect((await bank.waitForOutcome(hash, 10_000)).status).toBe('confirmed');
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

beforeAll(async () => {
  chain = await startTestChain();
  bank = createChainBankChain({ rpcUrl: chain.anvil.url, operatorKey: OPERATOR_KEY, deployment: chain.deployment, pollingIntervalMs: 25 });
});

afterAll(async () => {
  await anvilRpc(chain, 'evm_setAutomine', [true]).catch(() => undefined);
  await chain?.anvil.stop();
});

test('pending while no block is mined, then confirmed; a deposit the chain reverts in its block names the reason', async () => {
  await fundedTable('outcomes-1', 10n);
  const to = await newPlayer(chain, 0n);
  const player = await newPlayer(chain, 8n);
  const permit = await signPermit({ rpcUrl: chain.anvil.url, deployment: chain.deployment, ownerKey: player.key, chips: 8n, deadline: inAnHour() });
  await anvilRpc(chain, 'evm_setAutomine', [false]);
  try {
    const withdrawal = await bank.submitWithdraw({ tableId: 'outcomes-1', to: to.address, chips: 7n });
    // the deposit passes simulation; then the player moves their chips away with a higher tip, so the
    // block orders the transfer first and the deposit reverts on chain
    const deposit = await bank.submitDeposit({ tableId: 'outcomes-1', owner: player.address, chips: 8n, permit });
    const wallet = createWalletClient({ account: privateKeyToAccount(player.key), chain: localChain(), transport: http(chain.anvil.url) });
    await anvilRpc(chain, 'anvil_setBalance', [player.address, '0xde0b6b3a7640000']);
    await writeContract(wallet, {
      address: chain.deployment.token, abi: CHIP_TOKEN.abi, functionName: 'transfer', args: [to.address, 8n * C],
      maxPriorityFeePerGas: parseGwei('50'), maxFeePerGas: parseGwei('100'), gas: 100_000n,
    });
    expect(await bank.waitForOutcome(withdrawal, 100)).toEqual({ status: 'pending', txHash: withdrawal });
    expect(await bank.waitForOutcome(deposit, 0)).toEqual({ status: 'pending', txHash: deposit });
    await anvilRpc(chain, 'evm_mine');
    expect(await bank.waitForOutcome(withdrawal, 10_000)).toMatchObject({ status: 'confirmed', txHash: withdrawal });
    expect(await bank.waitForOutcome(deposit, 10_000)).toEqual({ status: 'reverted', txHash: deposit, reason: 'ERC20InsufficientBalance' });
    expect(await bank.depositOf(deposit)).toBeNull();
  } finally {
    await anvilRpc(chain, 'evm_setAutomine', [true]);
  }
  expect(await bank.tableBalance('outcomes-1')).toBe(3n * C);
  expect(await bank.balanceOf(to.address)).toBe(15n * C);
});

/** A JSON-RPC proxy to anvil without the debug namespace, as many public RPC endpoints are. */
async function withoutDebug(target: string): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    const call = JSON.parse(body) as { id: number; method: string };
    const answer = call.method.startsWith('debug_')
      ? JSON.stringify({ jsonrpc: '2.0', id: call.id, error: { code: -32601, message: `the method ${call.method} does not exist/is not available` } })
      : await (await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body })).text();
    res.writeHead(200, { 'content-type': 'application/json' }).end(answer);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

test('a transaction that reverts by itself names its reason from the call trace, and from a replay on a node with no tracer', async () => {
  await fundedTable('outcomes-3', 4n);
  const stranger = createWalletClient({ account: privateKeyToAccount(STRANGER_KEY), chain: localChain(), transport: http(chain.anvil.url) });
  // sent straight to the node with its gas given, so nothing simulates it first: it reverts on chain
  const hash = await writeContract(stranger, {
    address: chain.deployment.vault, abi: TABLE_VAULT.abi, functionName: 'withdraw',
    args: [tableKey('outcomes-3'), privateKeyToAccount(STRANGER_KEY).address, 4n * C], gas: 200_000n,
  });
  expect(await bank.waitForOutcome(hash, 10_000)).toEqual({ status: 'reverted', txHash: hash, reason: 'AccessControlUnauthorizedAccount' });
  const proxy = await withoutDebug(chain.anvil.url);
  try {
    const viaProxy = createChainBankChain({ rpcUrl: proxy.url, operatorKey: OPERATOR_KEY, deployment: chain.deployment, pollingIntervalMs: 25 });
    expect(await viaProxy.waitForOutcome(hash, 10_000)).toEqual({ status: 'reverted', txHash: hash, reason: 'AccessControlUnauthorizedAccount' });
  } finally {
    await proxy.close();
  }
  expect(await bank.tableBalance('outcomes-3')).toBe(4n * C);
});

test('deploymentProblem: null for the deployed contracts, named for another chain or an address with no code', async () => {
  expect(await deploymentProblem(chain.anvil.url, chain.deployment)).toBeNull();
  expect(await deploymentProblem(chain.anvil.url, { ...chain.deployment, chainId: 1 })).toBe(`the node is chain ${foundry.id}, the deployment is on chain 1`);
  const nobody = (await newPlayer(chain, 0n)).address;
  expect(await deploymentProblem(chain.anvil.url, { ...chain.deployment, vault: nobody })).toBe(`no contract at the vault address ${nobody}`);
});

test('a hash the node never saw stays pending until the timeout', async () => {
  const unknown = `0x${'ab'.repeat(32)}` as const;
  const started = Date.now();
  expect(await bank.waitForOutcome(unknown, 150)).toEqual({ status: 'pending', txHash: unknown });
  expect(Date.now() - started).toBeGreaterThanOrEqual(140);
  expect(await bank.depositOf(unknown)).toBeNull();
});

test('the operator key used by another sender between two bank sends: the bank re-reads its nonce', async () => {
  await fundedTable('outcomes-2', 10n);
  const to = await newPlayer(chain, 0n);
  expect((await bank.waitForOutcome(await bank.submitWithdraw({ tableId: 'outcomes-2', to: to.address, chips: 1n }), 10_000)).status).toBe('confirmed');
  const elsewhere = createWalletClient({ account: privateKeyToAccount(OPERATOR_KEY), chain: localChain(), transport: http(chain.anvil.url) });
  await sendTransaction(elsewhere, { to: to.address, value: parseEther('0.001') });
  const hash = await bank.submitWithdraw({ tableId: 'outcomes-2', to: to.address, chips: 2n });
  expect((await bank.waitForOutcome(hash, 10_000)).status).toBe('confirmed');
  expect(await bank.balanceOf(to.address)).toBe(3n * C);
});

test('the local chain of npm start: anvil with the contracts deployed, a deposit through it, ChainUnavailable once stopped', async () => {
  const local = await startLocalChain();
  let stopped = false;
  try {
    const client = createPublicClient({ transport: http(local.url) });
    expect(await getCode(client, { address: local.deployment.token })).toMatch(/^0x[0-9a-f]{100,}$/);
    expect(await getCode(client, { address: local.deployment.vault })).toMatch(/^0x[0-9a-f]{100,}$/);
    expect(local.deployment.chainId).toBe(foundry.id);
    const localBank = createChainBankChain({ rpcUrl: local.url, operatorKey: local.operatorKey, deployment: local.deployment, pollingIntervalMs: 25 });
    const player = privateKeyToAccount('0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690e');
    await mintChips({ rpcUrl: local.url, deployment: local.deployment, minterKey: local.minterKey, to: player.address, chips: 5n });
    const permit = await signPermit({ rpcUrl: local.url, deployment: local.deployment, ownerKey: '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690e', chips: 5n, deadline: inAnHour() });
    const hash = await localBank.submitDeposit({ tableId: 'local-1', owner: player.address, chips: 5n, permit });
    expect((await localBank.waitForOutcome(hash, 10_000)).status).toBe('confirmed');
    expect(await localBank.tableBalance('local-1')).toBe(5n * C);

    await local.stop();
    stopped = true;
    for (const call of [
      () => localBank.balanceOf(player.address),
      () => localBank.tableBalance('local-1'),
      () => localBank.waitForOutcome(hash, 1_000),
      () => localBank.depositOf(hash),
      () => localBank.recoverPermitSigner({ owner: player.address, chips: 5n, permit }),
      () => localBank.submitWithdraw({ tableId: 'local-1', to: player.address, chips: 1n }),
    ]) {
      expect(await rejection(call())).toBeInstanceOf(ChainUnavailable);
    }
  } finally {
    if (!stopped) await local.stop();
  }
});

test('mints sent at once by one minter are each mined (one nonce each: dev-wallet mints one at a time per minter)', async () => {
  const to = Array.from({ length: 8 }, () => privateKeyToAccount(`0x${randomBytes(32).toString('hex')}`).address);
  await Promise.all(to.map((address, i) => mintChips({ rpcUrl: chain.anvil.url, deployment: chain.deployment, minterKey: MINTER_KEY, to: address, chips: BigInt(10 + i) })));
  expect(await Promise.all(to.map((address) => bank.balanceOf(address)))).toEqual(to.map((_, i) => chipsToBaseUnits(BigInt(10 + i))));
});
