// The chain bank's contracts and its chain layer against a real anvil: player wallets (viem private-key
// accounts) sign real ERC-2612 permits; the vault's balances, events and reverts are read back from
// the chain.
import { createWalletClient, http, keccak256, stringToBytes, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { foundry } from 'viem/chains';
import { writeContract } from 'viem/actions';
import { CHIP_TOKEN } from '../../server/chain/contracts.ts';
import { signPermit } from '../../server/chain/dev-wallet.ts';
import { createChainBankChain, type EvmChainBankChain } from '../../server/chain/evm.ts';
import { ChainRevert } from '../../server/chain/types.ts';
import { newPlayer, OPERATOR_KEY, startTestChain, STRANGER_KEY, vaultEvents, type TestChain } from '../helpers/chain.ts';

const C = 1_000_000n; // base units per chip
let chain: TestChain;
let bank: EvmChainBankChain;
let tableSeq = 0;

const nextTable = () => `table-${++tableSeq}-${Date.now()}`;
const inAnHour = () => BigInt(Math.floor(Date.now() / 1000) + 3600);
const permitOf = (key: Hex, chips: bigint, deadline = inAnHour()) =>
  signPermit({ rpcUrl: chain.anvil.url, deployment: chain.deployment, ownerKey: key, chips, deadline });

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

async function reverted(p: Promise<unknown>): Promise<string> {
  const err = await rejection(p);
  expect(err).toBeInstanceOf(ChainRevert);
  return (err as ChainRevert).reason;
}

beforeAll(async () => {
  chain = await startTestChain();
  bank = createChainBankChain({ rpcUrl: chain.anvil.url, operatorKey: OPERATOR_KEY, deployment: chain.deployment, pollingIntervalMs: 25 });
});

afterAll(async () => {
  await chain?.anvil.stop();
});

test('a deposit by permit is credited to the table, registers it once and logs Deposited', async () => {
  const player = await newPlayer(chain, 100n);
  const tableId = nextTable();
  const first = await bank.submitDeposit({ tableId, owner: player.address, chips: 40n, permit: await permitOf(player.key, 40n) });
  expect(await bank.waitForOutcome(first, 10_000)).toMatchObject({ status: 'confirmed', txHash: first });
  const key = keccak256(stringToBytes(tableId));
  expect(await vaultEvents(chain, first)).toEqual([
    { eventName: 'TableRegistered', args: { tableKey: key } },
    { eventName: 'Deposited', args: { tableKey: key, owner: player.address, amount: 40n * C } },
  ]);
  expect(await bank.depositOf(first)).toMatchObject({ txHash: first, tableKey: key, owner: player.address, amount: 40n * C });
  expect(await bank.tableBalance(tableId)).toBe(40n * C);
  expect(await bank.balanceOf(player.address)).toBe(60n * C);
  expect(await bank.balanceOf(chain.deployment.vault)).toBeGreaterThanOrEqual(40n * C);

  const second = await bank.submitDeposit({ tableId, owner: player.address, chips: 25n, permit: await permitOf(player.key, 25n) });
  expect((await bank.waitForOutcome(second, 10_000)).status).toBe('confirmed');
  expect((await vaultEvents(chain, second)).map((e) => e.eventName)).toEqual(['Deposited']);
  expect(await bank.tableBalance(tableId)).toBe(65n * C);
  expect(await bank.balanceOf(player.address)).toBe(35n * C);
});

test('recoverPermitSigner recovers the signer of a right permit, another address for a wrong one, null for garbage', async () => {
  const player = await newPlayer(chain, 0n);
  const other = await newPlayer(chain, 0n);
  const permit = await permitOf(player.key, 10n);
  expect((await bank.recoverPermitSigner({ owner: player.address, chips: 10n, permit })).signer).toBe(player.address);
  // a 0/1 recovery id (some wallets) recovers the same signer
  expect((await bank.recoverPermitSigner({ owner: player.address, chips: 10n, permit: { ...permit, v: permit.v - 27 } })).signer).toBe(player.address);
  // signed by another key, or for another amount or deadline: not the owner
  const byOther = await permitOf(other.key, 10n);
  expect((await bank.recoverPermitSigner({ owner: player.address, chips: 10n, permit: byOther })).signer).not.toBe(player.address);
  expect((await bank.recoverPermitSigner({ owner: player.address, chips: 11n, permit })).signer).not.toBe(player.address);
  expect((await bank.recoverPermitSigner({ owner: player.address, chips: 10n, permit: { ...permit, deadline: permit.deadline + 1n } })).signer).not.toBe(player.address);
  const zero = `0x${'00'.repeat(32)}` as Hex;
  expect((await bank.recoverPermitSigner({ owner: player.address, chips: 10n, permit: { ...permit, r: zero, s: zero } })).signer).toBeNull();
});

test('a wrong signer, an expired permit and an insufficient balance revert with their reason and move nothing', async () => {
  const player = await newPlayer(chain, 30n);
  const other = await newPlayer(chain, 30n);
  const tableId = nextTable();
  const byOther = await permitOf(other.key, 10n);
  expect(await reverted(bank.submitDeposit({ tableId, owner: player.address, chips: 10n, permit: byOther }))).toBe('ERC2612InvalidSigner');
  const expired = await permitOf(player.key, 10n, BigInt(Math.floor(Date.now() / 1000) - 60));
  expect(await reverted(bank.submitDeposit({ tableId, owner: player.address, chips: 10n, permit: expired }))).toBe('ERC2612ExpiredSignature');
  const tooMuch = await permitOf(player.key, 31n);
  expect(await reverted(bank.submitDeposit({ tableId, owner: player.address, chips: 31n, permit: tooMuch }))).toBe('ERC20InsufficientBalance');
  expect(await bank.tableBalance(tableId)).toBe(0n);
  expect(await bank.balanceOf(player.address)).toBe(30n * C);
});

test('a permit front-run (submitted to the token by someone else first) still deposits', async () => {
  const player = await newPlayer(chain, 50n);
  const tableId = nextTable();
  const permit = await permitOf(player.key, 20n);
  const stranger = createWalletClient({ account: privateKeyToAccount(STRANGER_KEY), chain: { ...foundry, rpcUrls: { default: { http: [chain.anvil.url] } } }, transport: http(chain.anvil.url) });
  await writeContract(stranger, {
    address: chain.deployment.token, abi: CHIP_TOKEN.abi, functionName: 'permit',
    args: [player.address, chain.deployment.vault, 20n * C, permit.deadline, permit.v, permit.r, permit.s],
  });
  const hash = await bank.submitDeposit({ tableId, owner: player.address, chips: 20n, permit });
  expect((await bank.waitForOutcome(hash, 10_000)).status).toBe('confirmed');
  expect(await bank.tableBalance(tableId)).toBe(20n * C);
  expect(await bank.balanceOf(player.address)).toBe(30n * C);
  // the allowance is spent: the same permit again finds neither a valid nonce nor an allowance
  expect(await reverted(bank.submitDeposit({ tableId, owner: player.address, chips: 20n, permit }))).toBe('ERC2612InvalidSigner');
});

test('operator withdrawal and payout move tokens to the destination and log Withdrawn / PaidOut', async () => {
  const player = await newPlayer(chain, 50n);
  const to = await newPlayer(chain, 0n);
  const winner = await newPlayer(chain, 0n);
  const tableId = nextTable();
  const key = keccak256(stringToBytes(tableId));
  await bank.waitForOutcome(await bank.submitDeposit({ tableId, owner: player.address, chips: 50n, permit: await permitOf(player.key, 50n) }), 10_000);

  const withdrawal = await bank.submitWithdraw({ tableId, to: to.address, chips: 20n });
  expect((await bank.waitForOutcome(withdrawal, 10_000)).status).toBe('confirmed');
  expect(await vaultEvents(chain, withdrawal)).toEqual([{ eventName: 'Withdrawn', args: { tableKey: key, to: to.address, amount: 20n * C } }]);
  expect(await bank.balanceOf(to.address)).toBe(20n * C);
  expect(await bank.depositOf(withdrawal)).toBeNull();

  const payout = await bank.submitPayout({ tableId, to: winner.address, chips: 30n });
  expect((await bank.waitForOutcome(payout, 10_000)).status).toBe('confirmed');
  expect(await vaultEvents(chain, payout)).toEqual([{ eventName: 'PaidOut', args: { tableKey: key, to: winner.address, amount: 30n * C } }]);
  expect(await bank.balanceOf(winner.address)).toBe(30n * C);
  expect(await bank.tableBalance(tableId)).toBe(0n);
});

test('a table balance never goes below zero, and one table cannot spend another table\'s money', async () => {
  const player = await newPlayer(chain, 100n);
  const rich = nextTable();
  const poor = nextTable();
  await bank.waitForOutcome(await bank.submitDeposit({ tableId: rich, owner: player.address, chips: 90n, permit: await permitOf(player.key, 90n) }), 10_000);
  await bank.waitForOutcome(await bank.submitDeposit({ tableId: poor, owner: player.address, chips: 5n, permit: await permitOf(player.key, 5n) }), 10_000);
  expect(await reverted(bank.submitWithdraw({ tableId: poor, to: player.address, chips: 6n }))).toBe('InsufficientTableBalance');
  expect(await reverted(bank.submitPayout({ tableId: poor, to: player.address, chips: 6n }))).toBe('InsufficientTableBalance');
  expect(await reverted(bank.submitWithdraw({ tableId: nextTable(), to: player.address, chips: 1n }))).toBe('InsufficientTableBalance');
  expect(await bank.tableBalance(poor)).toBe(5n * C);
  expect(await bank.tableBalance(rich)).toBe(90n * C);
  await bank.waitForOutcome(await bank.submitWithdraw({ tableId: poor, to: player.address, chips: 5n }), 10_000);
  expect(await bank.tableBalance(poor)).toBe(0n);
  expect(await reverted(bank.submitWithdraw({ tableId: poor, to: player.address, chips: 1n }))).toBe('InsufficientTableBalance');
});

test('a key without the operator role is refused: no deposit, withdrawal or payout', async () => {
  const player = await newPlayer(chain, 20n);
  const tableId = nextTable();
  await bank.waitForOutcome(await bank.submitDeposit({ tableId, owner: player.address, chips: 10n, permit: await permitOf(player.key, 10n) }), 10_000);
  const impostor = createChainBankChain({ rpcUrl: chain.anvil.url, operatorKey: STRANGER_KEY, deployment: chain.deployment });
  expect(await reverted(impostor.submitWithdraw({ tableId, to: player.address, chips: 1n }))).toBe('AccessControlUnauthorizedAccount');
  expect(await reverted(impostor.submitPayout({ tableId, to: player.address, chips: 1n }))).toBe('AccessControlUnauthorizedAccount');
  const permit = await permitOf(player.key, 10n);
  expect(await reverted(impostor.submitDeposit({ tableId, owner: player.address, chips: 10n, permit }))).toBe('AccessControlUnauthorizedAccount');
  // the player's own key is no operator either
  const self = createChainBankChain({ rpcUrl: chain.anvil.url, operatorKey: player.key, deployment: chain.deployment });
  expect(await reverted(self.submitWithdraw({ tableId, to: player.address, chips: 1n }))).toBe('AccessControlUnauthorizedAccount');
  expect(await bank.tableBalance(tableId)).toBe(10n * C);
});

test('20 concurrent deposits from the one operator key all land (nonces do not collide)', async () => {
  const tableId = nextTable();
  const players = [];
  for (let i = 0; i < 20; i += 1) players.push(await newPlayer(chain, 20n));
  const permits = await Promise.all(players.map((p, i) => permitOf(p.key, BigInt(i + 1))));
  const hashes = await Promise.all(players.map((p, i) => bank.submitDeposit({ tableId, owner: p.address, chips: BigInt(i + 1), permit: permits[i]! })));
  expect(new Set(hashes).size).toBe(20);
  const outcomes = await Promise.all(hashes.map((h) => bank.waitForOutcome(h, 20_000)));
  expect(outcomes.map((o) => o.status)).toEqual(Array(20).fill('confirmed'));
  expect(await bank.tableBalance(tableId)).toBe(210n * C); // 1 + 2 + ... + 20 chips
  const deposits = await Promise.all(hashes.map((h) => bank.depositOf(h)));
  expect(deposits.map((d) => d?.owner)).toEqual(players.map((p) => p.address));
});
