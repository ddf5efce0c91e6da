// The chain bank's spec spans (spec: "Deposit (bank)", "Withdraw (bank)"): `admin.deposit` and
// `admin.withdraw` carry every attribute the spec lists, and each result value the chain bank can
// reach here is recorded as the spec spells it. Spans are read back from the in-memory exporter;
// the roles run in this process against a real anvil with viem wallets signing real permits.
import { randomUUID } from 'node:crypto';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { finishedSpans, installTelemetry, resetSpans, shutdownTelemetry } from '../../server/telemetry/index.ts';
import { bridgedUser } from '../helpers/auth.ts';
import { fundedWallet, inAnHour, permitDeposit, type LocalChain } from '../helpers/chain-bank.ts';
import { expectCleanAudit, setTableStatus } from '../helpers/cage.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { call, POKER_SETTINGS } from '../helpers/money.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { until } from '../helpers/live.ts';

const SECRET = 'chain-spans-test-secret-0123456789abcdef';
const ISSUER = 'https://auth.spans.test';

let db: TestDatabase;
let platform: TestPlatform;
let bank: string;
let local: LocalChain;

beforeAll(async () => {
  await installTelemetry({ serviceName: 'chain-bank-spans-test', memory: true });
  db = await createTestDatabase();
  await db.owner.query("insert into cage.switches (name, enabled) values ('real_money', true) on conflict (name) do update set enabled = true");
  platform = await startTestPlatform({
    databaseUrl: db.url, roles: ['auth', 'game', 'chain-bank'],
    // a short window, so a deposit whose block does not come answers `submitted`
    env: { AUTH_SECRET: SECRET, AUTH_BASE_URL: ISSUER, ENABLE_TEST_AUTH: 'true', CHAIN_CONFIRM_WINDOW_MS: '1500' },
  });
  bank = platform.url('chain-bank');
  local = (platform.role('chain-bank') as unknown as { chain: LocalChain }).chain;
}, 60_000);
afterAll(async () => {
  await platform?.stop();
  await expectCleanAudit(db.pool('poker_cage', 1));
  await db?.drop();
  await shutdownTelemetry();
});
beforeEach(() => resetSpans());

async function player(chips = 1000n) {
  const { userId, jwt } = await bridgedUser(db, { issuer: ISSUER });
  return { userId, ...(await fundedWallet(db, local, userId, chips)), auth: { authorization: `Bearer ${jwt}` } };
}
type Player = Awaited<ReturnType<typeof player>>;

async function table(p: Player) {
  const tableId = `sp-${randomUUID().slice(0, 10)}`;
  expect((await call(`${bank}/api/tables`, { headers: p.auth, body: { tableId, gameType: 'poker', settings: POKER_SETTINGS } })).status).toBe(200);
  return tableId;
}
const deposit = (p: Player, body: unknown) => call(`${bank}/api/deposit`, { headers: p.auth, body });
const withdraw = (p: Player, body: unknown) => call(`${bank}/api/withdraw`, { headers: p.auth, body });
const rpc = (method: string, params: unknown[] = []) =>
  fetch(local.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });

/** The last span of `name` (spans end after the answer is written: waited for). */
async function lastSpan(name: string) {
  return until(() => finishedSpans().filter((s) => s.name === name).at(-1), `a finished ${name} span`);
}

const DEPOSIT_ATTRIBUTES = [
  'deposit.userId', 'deposit.tableId', 'deposit.amount', 'deposit.claimed_signer', 'deposit.recovered_signer',
  'deposit.idempotency_key', 'deposit.nonce', 'deposit.tx_hash', 'confirm_mode', 'auth.linked', 'deposit.result',
];
const WITHDRAW_ATTRIBUTES = [
  'withdraw.userId', 'withdraw.tableId', 'withdraw.forced', 'withdraw.table_id', 'withdraw.player_id', 'withdraw.chip_amount',
  'withdraw.destination', 'withdraw.history_hash', 'withdraw.idempotency_key', 'withdraw.tx_hash', 'auth.linked', 'withdraw.result',
];

test('a confirmed deposit and a confirmed withdrawal carry every attribute of the spec; their replays say replay_confirmed', async () => {
  const p = await player(500n);
  const tableId = await table(p);
  const body = await permitDeposit(local, p, tableId, 120n);
  const r = await deposit(p, body);
  expect(r.body).toMatchObject({ status: 'confirmed' });
  const d = (await lastSpan('admin.deposit')).attributes;
  expect(Object.keys(d).filter((k) => DEPOSIT_ATTRIBUTES.includes(k)).sort()).toEqual([...DEPOSIT_ATTRIBUTES].sort());
  expect(d).toMatchObject({
    'deposit.userId': p.userId, 'deposit.tableId': tableId, 'deposit.amount': '120', 'deposit.claimed_signer': p.wallet,
    'deposit.recovered_signer': p.wallet, 'deposit.idempotency_key': r.body.idempotencyKey, 'deposit.nonce': '0',
    'deposit.tx_hash': r.body.txHash, confirm_mode: 'receipt', 'auth.linked': true, 'deposit.result': 'confirmed',
  });
  resetSpans();
  expect((await deposit(p, body)).body).toMatchObject({ status: 'confirmed', idempotencyKey: r.body.idempotencyKey });
  expect((await lastSpan('admin.deposit')).attributes['deposit.result']).toBe('replay_confirmed');

  resetSpans();
  const out = await withdraw(p, { tableId });
  expect(out.body).toMatchObject({ status: 'confirmed', amount: 120 });
  const w = (await lastSpan('admin.withdraw')).attributes;
  expect(Object.keys(w).filter((k) => WITHDRAW_ATTRIBUTES.includes(k)).sort()).toEqual([...WITHDRAW_ATTRIBUTES].sort());
  expect(w).toMatchObject({
    'withdraw.userId': p.userId, 'withdraw.tableId': tableId, 'withdraw.table_id': tableId, 'withdraw.forced': false,
    'withdraw.chip_amount': '120', 'withdraw.destination': p.wallet, 'withdraw.idempotency_key': out.body.idempotencyKey,
    'withdraw.tx_hash': out.body.txHash, 'withdraw.history_hash': out.body.historyHash, 'auth.linked': true, 'withdraw.result': 'confirmed',
  });
  resetSpans();
  expect((await withdraw(p, { tableId })).body).toMatchObject({ replay: true });
  expect((await lastSpan('admin.withdraw')).attributes['withdraw.result']).toBe('replay_confirmed');
});

test('deposit results: signature_invalid, wallet_not_linked, failed, table_frozen, submitted_not_confirmed', async () => {
  const p = await player(500n);
  const tableId = await table(p);
  const result = async (body: unknown, status: number) => {
    resetSpans();
    expect((await deposit(p, body)).status).toBe(status);
    return (await lastSpan('admin.deposit')).attributes['deposit.result'];
  };
  // signed by another key than the one named
  const other = privateKeyToAccount(generatePrivateKey()).address;
  expect(await result(await permitDeposit(local, p, tableId, 10n, { signer: other }), 400)).toBe('signature_invalid');
  // a wallet that signs well but is not linked to this player
  const stranger = await player(100n);
  expect(await result(await permitDeposit(local, stranger, tableId, 10n), 400)).toBe('wallet_not_linked');
  // a permit past its deadline: the chain reverts it
  expect(await result(await permitDeposit(local, p, tableId, 10n, { deadline: BigInt(Math.floor(Date.now() / 1000) - 60) }), 400)).toBe('failed');
  await setTableStatus(db.owner, tableId, 'frozen');
  expect(await result(await permitDeposit(local, p, tableId, 10n), 409)).toBe('table_frozen');
  await setTableStatus(db.owner, tableId, 'active');
  // no block within the window: submitted; mined afterwards, the reconciler credits it
  await rpc('evm_setAutomine', [false]);
  try {
    expect(await result(await permitDeposit(local, p, tableId, 60n, { deadline: inAnHour() }), 200)).toBe('submitted_not_confirmed');
  } finally {
    await rpc('evm_mine');
    await rpc('evm_setAutomine', [true]);
  }
  // older than the reconciler's grace (the window plus a margin), as a deposit left by its request
  await db.owner.query("update bank.deposit_intents set updated_at = now() - interval '10 minutes' where table_id = $1 and status = 'submitted'", [tableId]);
  await (platform.role('chain-bank') as unknown as { reconcileNow(): Promise<void> }).reconcileNow();
  expect((await withdraw(p, { tableId })).body).toMatchObject({ status: 'confirmed', amount: 60 });
});

test('withdraw results: not_at_table, table_frozen, wallet_not_linked, room_not_found (an unknown table)', async () => {
  const p = await player(500n);
  const tableId = await table(p);
  const result = async (body: unknown, status: number) => {
    resetSpans();
    expect((await withdraw(p, body)).status).toBe(status);
    return (await lastSpan('admin.withdraw')).attributes['withdraw.result'];
  };
  expect(await result({ tableId }, 404)).toBe('not_at_table');
  expect(await result({ tableId: `sp-none-${randomUUID().slice(0, 8)}` }, 404)).toBe('room_not_found');
  expect((await deposit(p, await permitDeposit(local, p, tableId, 50n))).body).toMatchObject({ status: 'confirmed' });
  expect(await result({ tableId, destinationWallet: privateKeyToAccount(generatePrivateKey()).address }, 400)).toBe('wallet_not_linked');
  // refused before the stand-up: the seat still plays
  expect((await db.owner.query('select status from game.table_players where table_id = $1 and user_id = $2', [tableId, p.userId])).rows).toEqual([{ status: 'seated' }]);
  await setTableStatus(db.owner, tableId, 'frozen');
  expect(await result({ tableId }, 409)).toBe('table_frozen');
  await setTableStatus(db.owner, tableId, 'active');
  expect(await result({ tableId }, 200)).toBe('confirmed');
});
