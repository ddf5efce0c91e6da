// Issue 32, "chain faults are answered, and shown": the chain bank on a real anvil of the test's own,
// stopped while a deposit or a withdrawal waits for its receipt. The request answers a coded 503
// `chain_unavailable` (never an uncoded 500); the chain bank's /health answers 503 `ok: false` with
// the reason and GET /api/chain `reachable: false` with the last error; both recover once the same
// chain (its state dumped before the stop and loaded again) is back on the same port.
import { randomUUID } from 'node:crypto';
import { activateLocalDeployment } from '../../server/bank/deployment.ts';
import type { BankDeps } from '../../server/bank/deposit.ts';
import { chainIntentViolations } from '../../server/bank/chain-audit.ts';
import { reconcileChainBank } from '../../server/bank/reconcile.ts';
import { ChainUnavailable } from '../../server/chain/types.ts';
import { createServiceClient } from '../../server/http/service-client.ts';
import { createChainBankChain } from '../../server/chain/evm.ts';
import { startAnvil } from '../../server/chain/anvil.ts';
import { startLocalChain, type LocalChain } from '../../server/chain/local.ts';
import { bridgedUser } from '../helpers/auth.ts';
import { expectCleanAudit } from '../helpers/cage.ts';
import { CHAIN_ISSUER, fundedWallet, permitDeposit } from '../helpers/chain-bank.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { call, POKER_SETTINGS } from '../helpers/money.ts';
import { startTestPlatform, TEST_SERVICE_KEY, type TestPlatform } from '../helpers/platform.ts';
import { anvilRpc } from '../helpers/chain.ts';

const C = 1_000_000n;

let db: TestDatabase;
let local: LocalChain;
let stopChain: () => Promise<void>;
let platform: TestPlatform;
let bank: string;
let reader: ReturnType<typeof createChainBankChain>;
let dumped: unknown;

/** An anvil JSON-RPC call on this file's chain. */
const rpc = (method: string, params: unknown[] = []) => anvilRpc(local.url, method, params);

/** The chain stops: its state kept (as a node's disk would), the process gone. */
async function dropChain() {
  dumped = await rpc('anvil_dumpState');
  await stopChain();
}

/** The same chain back on the same port, its state loaded again. */
async function restoreChain() {
  const anvil = await startAnvil({ port: Number(new URL(local.url).port) });
  stopChain = anvil.stop;
  await rpc('anvil_loadState', [dumped]);
}

async function until<T>(read: () => Promise<T | undefined>): Promise<T> {
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

beforeAll(async () => {
  db = await createTestDatabase();
  local = await startLocalChain();
  stopChain = local.stop;
  await db.owner.query("insert into cage.switches (name, enabled) values ('real_money', true) on conflict (name) do update set enabled = true");
  await activateLocalDeployment(db.url, local.deployment, local.url);
  platform = await startTestPlatform({
    databaseUrl: db.url, roles: ['auth', 'game', 'chain-bank'],
    env: {
      AUTH_BASE_URL: CHAIN_ISSUER, ENABLE_TEST_AUTH: 'true', CHAIN_CONFIRM_WINDOW_MS: '60000',
      EVM_RPC_URL: local.url, CHAIN_TOKEN_ADDRESS: local.deployment.token, CHAIN_VAULT_ADDRESS: local.deployment.vault, CHAIN_OPERATOR_KEY: local.operatorKey,
    },
  });
  bank = platform.url('chain-bank');
  reader = createChainBankChain({ rpcUrl: local.url, operatorKey: local.minterKey, deployment: local.deployment });
}, 60_000);
afterAll(async () => {
  await platform?.stop();
  await stopChain?.();
  await db?.drop();
});

/** The chain bank's reconciler as the role runs it, on the bank login and the operator key. */
function bankDeps(): BankDeps {
  const log = { error: () => undefined, warn: () => undefined, info: () => undefined, debug: () => undefined };
  const chain = createChainBankChain({ rpcUrl: local.url, operatorKey: local.operatorKey, deployment: local.deployment });
  const game = createServiceClient({ baseUrl: () => platform.url('game'), serviceKey: TEST_SERVICE_KEY, timeoutMs: 10_000 });
  return { pool: db.pool('poker_bank', 2), chain: () => chain, game, log, confirmWindowMs: 10_000, rpcUrl: local.url } as unknown as BankDeps;
}

async function player(chips: bigint) {
  const { userId, jwt } = await bridgedUser(db, { issuer: CHAIN_ISSUER });
  return { userId, ...(await fundedWallet(db, { url: local.url, deployment: local.deployment, minterKey: local.minterKey }, userId, chips)), auth: { authorization: `Bearer ${jwt}` } };
}

async function table(p: Awaited<ReturnType<typeof player>>) {
  const tableId = `fault-${randomUUID().slice(0, 10)}`;
  expect(await call(`${bank}/api/tables`, { headers: p.auth, body: { tableId, gameType: 'poker', settings: POKER_SETTINGS } })).toMatchObject({ status: 200 });
  return tableId;
}

/** The chain is down: /health and GET /api/chain say so, with the reason. */
async function expectShownDown() {
  const health = await call(`${bank}/health`);
  expect(health).toMatchObject({ status: 503, body: { ok: false, error: 'chain_unreachable', chain: { reachable: false, lastError: { message: expect.any(String), at: expect.any(String) } } } });
  const info = await call(`${bank}/api/chain`);
  expect(info.body).toMatchObject({ reachable: false, lastError: { message: expect.any(String), at: expect.any(String) } });
}

/** The chain is back: both say it is reachable again. */
async function expectShownUp() {
  const health = await call(`${bank}/health`);
  expect(health).toMatchObject({ status: 200, body: { ok: true, chain: { reachable: true } } });
  const info = await call(`${bank}/api/chain`);
  expect(info).toMatchObject({ status: 200, body: { bank: 'chain', vault: local.deployment.vault, reachable: true } });
}

test('the chain stopped while a withdrawal waits for its receipt: 503 chain_unavailable; /health and /api/chain show it, then recover', async () => {
  await expectShownUp();
  const p = await player(100n);
  const tableId = await table(p);
  const paid = await call(`${bank}/api/deposit`, { headers: p.auth, body: await permitDeposit(local, p, tableId, 100n, { seatIndex: 0 }) });
  expect(paid.body).toMatchObject({ status: 'confirmed' });

  await rpc('evm_setAutomine', [false]);
  const out = call(`${bank}/api/withdraw`, { headers: p.auth, body: { tableId } });
  await until(async () => (await db.owner.query("select 1 from bank.withdraw_intents where user_id = $1 and status = 'submitted'", [p.userId])).rows[0]);
  await dropChain();
  expect(await out).toMatchObject({ status: 503, body: { error: 'chain_unavailable' } });
  await expectShownDown();
  // a read of the chain in any route: the same coded answer
  expect(await call(`${bank}/api/chain/nonces/${p.wallet}`)).toEqual({ status: 503, body: { error: 'chain_unavailable' } });

  await restoreChain();
  await expectShownUp();
  await rpc('evm_setAutomine', [true]);
  await rpc('evm_mine');
  // the withdrawal stays the reconciler's (its transaction was in the stopped node's pool, dropped):
  // the chain bank's reconciler, run without its grace, sends it again and pays it once
  expect((await db.owner.query('select status from bank.withdraw_intents where user_id = $1', [p.userId])).rows).toEqual([{ status: 'submitted' }]);
  await until(async () => {
    await reconcileChainBank(bankDeps(), 0);
    return (await reader.balanceOf(p.wallet)) === 100n * C ? true : undefined;
  });
  expect(await reader.tableBalance(tableId)).toBe(0n);
  await expectCleanAudit(db.pool('poker_cage', 1));
}, 120_000);

test('the chain stopped while a deposit waits for its receipt: 503 chain_unavailable, its intent left to the reconciler, and shown until it is back', async () => {
  const p = await player(100n);
  const tableId = await table(p);
  await rpc('evm_setAutomine', [false]);
  const body = await permitDeposit(local, p, tableId, 100n, { seatIndex: 1 });
  const paid = call(`${bank}/api/deposit`, { headers: p.auth, body });
  await until(async () => (await db.owner.query("select 1 from bank.deposit_intents where user_id = $1 and status = 'submitted'", [p.userId])).rows[0]);
  await dropChain();
  expect(await paid).toMatchObject({ status: 503, body: { error: 'chain_unavailable' } });
  await expectShownDown();
  // a chain read outside the chain bank's routes (the audit's scan of the vault): the same one error
  await expect(chainIntentViolations(db.pool('poker_bank', 1), { rpcUrl: local.url })).rejects.toBeInstanceOf(ChainUnavailable);

  await restoreChain();
  await expectShownUp();
  await rpc('evm_setAutomine', [true]);
  // its transaction died with the stopped node's pool: the reconciler fails the intent, the tokens never left
  await until(async () => {
    await reconcileChainBank(bankDeps(), 0);
    const { rows } = await db.owner.query("select 1 from bank.deposit_intents where user_id = $1 and status = 'failed'", [p.userId]);
    return rows[0];
  });
  expect(await reader.balanceOf(p.wallet)).toBe(100n * C);
  expect(await reader.tableBalance(tableId)).toBe(0n);
  await expectCleanAudit(db.pool('poker_cage', 1));
}, 120_000);
