// Issue 31, class 7 / "Chain intents": a vault deposit no intent backs is named by the chain audit,
// then refunded by the chain bank's reconciler, once, to the wallet the tokens came from. Two cases:
//   (1) a deposit made outside the bank (the vault's operator account submits a permit a wallet
//       signed, with no deposit intent): chain_deposit_without_intent;
//   (2) a confirmed deposit that funded nothing ten minutes on: chain_deposit_uncredited;
// and (3) the bank login (poker_bank, its real password) opening a refund of a made-up deposit:
// nothing is paid (paying needs the operator key, and the reconciler re-reads the deposit on chain
// first), and the refund is named (chain_refund_without_deposit). The chain is a real anvil, the
// chain bank, the game and the auth role the real roles.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Hex } from 'viem';
import { createChainBankChain } from '../../server/chain/evm.ts';
import { ANVIL_DEV_KEYS } from '../../server/chain/anvil.ts';
import { tableKey } from '../../server/chain/contracts.ts';
import { signPermit } from '../../server/chain/dev-wallet.ts';
import { loginUrl } from '../../server/db/roles.ts';
import { chainIntentViolations } from '../../server/bank/chain-audit.ts';
import { refundDeposit } from '../../server/bank/vault-refunds.ts';
import type { BankDeps } from '../../server/bank/deposit.ts';
import { bridgedUser } from '../helpers/auth.ts';
import { anvilRpc } from '../helpers/chain.ts';
import { CHAIN_ISSUER, fundedWallet, inAnHour, permitDeposit, type LocalChain, startChainBank } from '../helpers/chain-bank.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { call, POKER_SETTINGS } from '../helpers/money.ts';
import { type TestPlatform } from '../helpers/platform.ts';

const ISSUER = CHAIN_ISSUER;
const C = 1_000_000n;

let db: TestDatabase;
let platform: TestPlatform;
let bank: string;
let local: LocalChain;
let reader: ReturnType<typeof createChainBankChain>;
/** The vault's operator account (the key the chain bank holds): a deposit with no intent behind it. */
let operator: ReturnType<typeof createChainBankChain>;
/** The stolen login: poker_bank with its real password. */
let thief: pg.Client;

beforeAll(async () => {
  db = await createTestDatabase();
  ({ platform, bank, local, reader } = await startChainBank(db));
  operator = createChainBankChain({ rpcUrl: local.url, operatorKey: ANVIL_DEV_KEYS[1]!, deployment: local.deployment });
  thief = new pg.Client({ connectionString: loginUrl(db.url, 'poker_bank', undefined) });
  await thief.connect();
}, 60_000);
afterAll(async () => {
  await thief?.end();
  await platform?.stop();
  await db?.drop();
});

const reconcileNow = () => (platform.role('chain-bank') as unknown as { reconcileNow(): Promise<void> }).reconcileNow();

const violationsNow = async () => {
  const client = await db.pool('poker_worker', 1).connect();
  try {
    return (await chainIntentViolations(client, { rpcUrl: local.url })).violations.map((v) => [v.invariant, v.subject]);
  } finally {
    client.release();
  }
};

async function player(chips = 1000n) {
  const { userId, jwt } = await bridgedUser(db, { issuer: ISSUER });
  const sid = JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()).sid as string;
  return { userId, sid, ...(await fundedWallet(db, local, userId, chips)), auth: { authorization: `Bearer ${jwt}` } };
}

const refunds = async () => (await db.owner.query('select deposit_tx_hash, deposit_key, destination, base_units::text, status from bank.vault_refunds order by created_at')).rows;

test('(1) a vault deposit made outside the bank is named, refunded to its owner once, then named no more', async () => {
  const owner = await player(300n);
  // the operator key submits a permit the owner signed, under a table no intent names
  const permit = await signPermit({ rpcUrl: local.url, deployment: local.deployment, ownerKey: owner.key, chips: 120n, deadline: inAnHour() });
  const tx = await operator.submitDeposit({ tableId: `outside-${randomUUID()}`, owner: owner.wallet, chips: 120n, permit });
  expect((await operator.waitForOutcome(tx, 10_000)).status).toBe('confirmed');
  expect(await reader.balanceOf(owner.wallet)).toBe(180n * C);
  expect(await violationsNow()).toEqual([['chain_deposit_without_intent', tx]]);
  await reconcileNow();
  expect(await reader.balanceOf(owner.wallet)).toBe(300n * C);
  expect(await refunds()).toEqual([{ deposit_tx_hash: tx, deposit_key: null, destination: owner.wallet.toLowerCase(), base_units: (120n * C).toString(), status: 'confirmed' }]);
  expect(await violationsNow()).toEqual([]);
  // again, and again from a fresh scan: nothing more is paid
  await reconcileNow();
  await reconcileNow();
  expect(await reader.balanceOf(owner.wallet)).toBe(300n * C);
  expect((await refunds()).length).toBe(1);
  expect(await violationsNow()).toEqual([]);
}, 60_000);

test('(2) a confirmed deposit that funded nothing ten minutes on is refunded to its signing wallet, never credited after', async () => {
  const p = await player(500n);
  const tableId = `rf-${randomUUID().slice(0, 10)}`;
  expect(await call(`${bank}/api/tables`, { headers: p.auth, body: { tableId, gameType: 'poker', settings: POKER_SETTINGS } })).toMatchObject({ status: 200 });
  const r = await call(`${bank}/api/deposit`, { headers: p.auth, body: await permitDeposit(local, p, tableId, 200n, { seatIndex: 2 }) });
  expect(r.body).toMatchObject({ status: 'confirmed' });
  const key = r.body.idempotencyKey as string;
  expect(await reader.balanceOf(p.wallet)).toBe(300n * C);
  // the credit never landed (its seat gone, the game's credit lost), ten minutes ago
  await db.owner.query('delete from game.seat_credits where credit_key = $1', [key]);
  await db.owner.query("update game.table_players set status = 'closed', chip_balance = 0 where table_id = $1", [tableId]);
  await db.owner.query("update bank.deposit_intents set credited_at = null, updated_at = now() - interval '11 minutes' where idempotency_key = $1", [key]);
  expect(await violationsNow()).toEqual([['chain_deposit_uncredited', key]]);
  await reconcileNow();
  expect(await reader.balanceOf(p.wallet)).toBe(500n * C);
  expect(await reader.tableBalance(tableId)).toBe(0n);
  expect((await refunds()).filter((x) => x.deposit_key === key)).toEqual([expect.objectContaining({ destination: p.wallet.toLowerCase(), status: 'confirmed' })]);
  expect(await violationsNow()).toEqual([]);
  await reconcileNow();
  expect(await reader.balanceOf(p.wallet)).toBe(500n * C);
  expect((await db.owner.query('select credited_at from bank.deposit_intents where idempotency_key = $1', [key])).rows[0].credited_at).toBeNull();
  expect((await db.owner.query('select count(*)::int as n from game.seat_credits where credit_key = $1', [key])).rows[0].n).toBe(0);
  // the refunded deposit cannot be refunded again under another log index, nor confirmed again
  await expect(thief.query('select bank.open_vault_refund($1, 7, $2, $3, $4, $5)', [
    (await db.owner.query('select tx_hash from bank.deposit_intents where idempotency_key = $1', [key])).rows[0].tx_hash, tableKey(tableId), p.wallet, (200n * C).toString(), key,
  ])).rejects.toMatchObject({ message: 'refund_not_owed' });
}, 60_000);

test('(3) the bank login opens a refund of a made-up deposit: refused or nothing paid, and named', async () => {
  const victim = await player(400n);
  const tableId = `rf-${randomUUID().slice(0, 10)}`;
  expect(await call(`${bank}/api/tables`, { headers: victim.auth, body: { tableId, gameType: 'poker', settings: POKER_SETTINGS } })).toMatchObject({ status: 200 });
  const r = await call(`${bank}/api/deposit`, { headers: victim.auth, body: await permitDeposit(local, victim, tableId, 300n, { seatIndex: 0 }) });
  expect(r.body).toMatchObject({ status: 'confirmed' });
  const attacker = await player(0n);
  // a credited deposit is owed no refund (its key, or its transaction with no key)
  const { rows: [dep] } = await db.owner.query('select tx_hash from bank.deposit_intents where idempotency_key = $1', [r.body.idempotencyKey]);
  await expect(thief.query('select bank.open_vault_refund($1, 0, $2, $3, $4, $5)', [dep.tx_hash, tableKey(tableId), attacker.wallet, (300n * C).toString(), r.body.idempotencyKey]))
    .rejects.toMatchObject({ message: 'refund_not_owed' });
  await expect(thief.query('select bank.open_vault_refund($1, 0, $2, $3, $4, null)', [dep.tx_hash, tableKey(tableId), attacker.wallet, (300n * C).toString()]))
    .rejects.toMatchObject({ message: 'refund_not_owed' });
  // a made-up deposit: opened (SQL cannot read the chain), never paid, and named
  const fakeTx = `0x${'ab'.repeat(32)}` as Hex;
  const { rows: [opened] } = await thief.query('select * from bank.open_vault_refund($1, 0, $2, $3, $4, null)', [fakeTx, tableKey(tableId), attacker.wallet, (300n * C).toString()]);
  expect(opened).toMatchObject({ status: 'pending' });
  // and its confirmation made up as well (the thief has no operator key to pay it)
  await expect(thief.query("select bank.advance_vault_refund($1, 'confirmed', $2, 5, $3, $4, null)", [opened.refund_key, `0x${'cd'.repeat(32)}`, attacker.wallet, (300n * C).toString()]))
    .rejects.toMatchObject({ message: 'refund_state_conflict' });
  await reconcileNow();
  await reconcileNow();
  expect(await reader.balanceOf(attacker.wallet)).toBe(0n);
  expect(await reader.tableBalance(tableId)).toBe(300n * C);
  expect((await db.owner.query('select status from bank.vault_refunds where refund_key = $1', [opened.refund_key])).rows[0].status).toBe('pending');
  expect(await violationsNow()).toEqual([['chain_refund_without_deposit', opened.refund_key]]);
  await db.owner.query('delete from bank.vault_refunds where refund_key = $1', [opened.refund_key]);
}, 60_000);

test('(4) two processes refunding the same deposit at once pay it once', async () => {
  const owner = await player(200n);
  const permit = await signPermit({ rpcUrl: local.url, deployment: local.deployment, ownerKey: owner.key, chips: 50n, deadline: inAnHour() });
  const tableId = `outside-${randomUUID()}`;
  const tx = await operator.submitDeposit({ tableId, owner: owner.wallet, chips: 50n, permit });
  expect((await operator.waitForOutcome(tx, 10_000)).status).toBe('confirmed');
  // another wallet's tokens under the same table key: what a second payment would take
  const other = await player(80n);
  const otherTx = await operator.submitDeposit({ tableId, owner: other.wallet, chips: 80n, permit: await signPermit({ rpcUrl: local.url, deployment: local.deployment, ownerKey: other.key, chips: 80n, deadline: inAnHour() }) });
  expect((await operator.waitForOutcome(otherTx, 10_000)).status).toBe('confirmed');
  // two chain-bank processes, each its own pool and its own client of the operator key, both
  // handed the deposit by their own read of the chain
  const client = await db.pool('poker_worker', 1).connect();
  const { refunds } = await chainIntentViolations(client, { rpcUrl: local.url }).finally(() => client.release());
  const refund = refunds.find((x) => x.txHash === tx);
  expect(refund).toMatchObject({ txHash: tx, owner: owner.wallet, amount: 50n * C, depositKey: null });
  const log = { error: () => undefined, warn: () => undefined, info: () => undefined };
  const processes = [0, 1].map(() => {
    const chain = createChainBankChain({ rpcUrl: local.url, operatorKey: ANVIL_DEV_KEYS[1]!, deployment: local.deployment });
    return { pool: db.pool('poker_bank', 2), chain: () => chain, log, confirmWindowMs: 10_000 } as unknown as BankDeps;
  });
  const outcomes = await Promise.allSettled(processes.map((deps) => refundDeposit(deps, refund!, 10_000)));
  expect(outcomes.some((o) => o.status === 'fulfilled' && o.value === 'confirmed')).toBe(true);
  expect(await reader.balanceOf(owner.wallet)).toBe(200n * C);
  expect(await reader.tableBalance(tableId)).toBe(80n * C);
  expect((await db.owner.query('select count(*)::int as n from bank.vault_refunds where deposit_tx_hash = $1', [tx])).rows[0].n).toBe(1);
  // the other deposit, refunded by the reconciler; the first not again
  await reconcileNow();
  expect(await reader.balanceOf(owner.wallet)).toBe(200n * C);
  expect(await reader.balanceOf(other.wallet)).toBe(80n * C);
  expect(await reader.tableBalance(tableId)).toBe(0n);
  expect(await violationsNow()).toEqual([]);
}, 60_000);

test('(5) the bank login records another refund\'s transaction as a pending refund\'s: the refund is still paid, once', async () => {
  const owner = await player(100n);
  const tableId = `outside-${randomUUID()}`;
  const permit = await signPermit({ rpcUrl: local.url, deployment: local.deployment, ownerKey: owner.key, chips: 30n, deadline: inAnHour() });
  const tx = await operator.submitDeposit({ tableId, owner: owner.wallet, chips: 30n, permit });
  expect((await operator.waitForOutcome(tx, 10_000)).status).toBe('confirmed');
  const client = await db.pool('poker_worker', 1).connect();
  const { refunds } = await chainIntentViolations(client, { rpcUrl: local.url }).finally(() => client.release());
  const refund = refunds.find((x) => x.txHash === tx)!;
  // the thief opens the owner's refund itself (the true values: SQL cannot read the chain), then
  // claims it was sent in a real transaction that paid something else (an earlier refund's)
  const { rows: [paid] } = await db.owner.query("select tx_hash from bank.vault_refunds where status = 'confirmed' order by created_at limit 1");
  const { rows: [opened] } = await thief.query('select * from bank.open_vault_refund($1, $2, $3, $4, $5, null)', [tx, refund.logIndex, tableKey(tableId), owner.wallet, (30n * C).toString()]);
  await thief.query("select bank.advance_vault_refund($1, 'submitted', $2, null, null, null, null)", [opened.refund_key, paid.tx_hash]);
  await reconcileNow();
  await reconcileNow();
  expect(await reader.balanceOf(owner.wallet)).toBe(100n * C);
  expect(await reader.tableBalance(tableId)).toBe(0n);
  expect((await db.owner.query('select status, prior_tx_hashes from bank.vault_refunds where refund_key = $1', [opened.refund_key])).rows[0])
    .toEqual({ status: 'confirmed', prior_tx_hashes: [paid.tx_hash] });
  expect(await violationsNow()).toEqual([]);
}, 60_000);

/** An anvil JSON-RPC call on this file's chain (evm_setAutomine, evm_mine, anvil_dropAllTransactions). */
const rpc = (method: string, params: unknown[] = []) => anvilRpc(local.url, method, params);

test('(6) a vault refund whose receipt does not come is an intent stuck with its reason, and paid once when the chain mines (issue 32)', async () => {
  const owner = await player(100n);
  const permit = await signPermit({ rpcUrl: local.url, deployment: local.deployment, ownerKey: owner.key, chips: 40n, deadline: inAnHour() });
  const tx = await operator.submitDeposit({ tableId: `outside-${randomUUID()}`, owner: owner.wallet, chips: 40n, permit });
  expect((await operator.waitForOutcome(tx, 10_000)).status).toBe('confirmed');
  const attempts = async () => (await db.owner.query(
    "select attempts, stuck_since is not null as stuck, last_error from cage.intent_attempts where kind = 'vault_refund' and intent_key like $1", [`vault-refund:${tx.toLowerCase()}:%`],
  )).rows;
  // the chain stops mining: the refund is sent, its receipt never comes within the window
  await rpc('evm_setAutomine', [false]);
  try {
    await reconcileNow();
    expect(await attempts()).toEqual([{ attempts: 1, stuck: true, last_error: 'the vault refund is submitted, not confirmed yet' }]);
    expect(await reader.balanceOf(owner.wallet)).toBe(60n * C);
  } finally {
    await rpc('evm_mine');
    await rpc('evm_setAutomine', [true]);
  }
  // mined: the next run confirms it, once, and the intent is stuck no more
  await reconcileNow();
  await reconcileNow();
  expect(await reader.balanceOf(owner.wallet)).toBe(100n * C);
  expect((await attempts())[0]).toMatchObject({ stuck: false, last_error: null });
  expect((await db.owner.query("select count(*)::int as n from bank.vault_refunds where deposit_tx_hash = $1 and status = 'confirmed'", [tx])).rows[0].n).toBe(1);
  expect(await violationsNow()).toEqual([]);
}, 90_000);
