// Issue 31, class 7: chain intents moved by the bank login alone. An attacker holds the chain
// bank's database login (poker_bank, its real password), and for one attack the service key as
// well; the chain is a real anvil, the chain bank, the game and the auth role are the real roles.
//   (a) bank.fail_deposit during a victim's deposit: her tokens in the vault, the intent failed,
//       nothing retrying it (stranded);
//   (b) a made-up confirmed deposit (the bank login) credited by the game (the service key) and
//       withdrawn by the attacker over HTTP, out of the tokens other players put in the vault;
//   (c) activate_deployment by the bank login: new intents point at made-up contracts.
// After the fix: a deposit funds a seat only once a process that did not write its evidence (the
// game) re-read it from the chain; failed is no more than a claim the chain's receipt overrides;
// chainIntentViolations (server/bank/chain-audit.ts) names every intent the chain does not bear
// out, and the reconciler credits a failed deposit whose tokens are in the vault; deployments are
// an operator's act (a live admin session) or the owner's.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { createChainBankChain } from '../../server/chain/evm.ts';
import { loginUrl } from '../../server/db/roles.ts';
import { chainIntentViolations } from '../../server/bank/chain-audit.ts';
import { bridgedUser } from '../helpers/auth.ts';
import { CHAIN_ISSUER, fundedWallet, inAnHour, permitDeposit, type LocalChain, startChainBank } from '../helpers/chain-bank.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { call, POKER_SETTINGS } from '../helpers/money.ts';
import { signInOperator } from '../helpers/operator.ts';
import { TEST_SERVICE_KEY, type TestPlatform } from '../helpers/platform.ts';

const ISSUER = CHAIN_ISSUER;
const C = 1_000_000n;

let db: TestDatabase;
let platform: TestPlatform;
let bank: string;
let game: string;
let local: LocalChain;
let reader: ReturnType<typeof createChainBankChain>;
/** The stolen login: poker_bank with its real password. */
let thief: pg.Client;

beforeAll(async () => {
  db = await createTestDatabase();
  ({ platform, bank, local, reader } = await startChainBank(db));
  game = platform.url('game');
  thief = new pg.Client({ connectionString: loginUrl(db.url, 'poker_bank', undefined) });
  await thief.connect();
}, 60_000);
afterAll(async () => {
  await thief?.end();
  await platform?.stop();
  await db?.drop();
});

const rpc = (method: string, params: unknown[] = []) =>
  fetch(local.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) }).then((r) => r.json());
const reconcileNow = () => (platform.role('chain-bank') as unknown as { reconcileNow(): Promise<void> }).reconcileNow();
const seats = async (tableId: string) => (await call(`${game}/api/tables/${tableId}`)).body.seats;
const intent = async (key: string) =>
  (await db.owner.query('select status, credited_at is not null as credited from bank.deposit_intents where idempotency_key = $1', [key])).rows[0];

async function player(chips = 1000n) {
  const { userId, jwt } = await bridgedUser(db, { issuer: ISSUER });
  const sid = JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()).sid as string;
  return { userId, sid, ...(await fundedWallet(db, local, userId, chips)), auth: { authorization: `Bearer ${jwt}` } };
}
type Player = Awaited<ReturnType<typeof player>>;

async function table(p: Player) {
  const tableId = `ac-${randomUUID().slice(0, 10)}`;
  const r = await call(`${bank}/api/tables`, { headers: p.auth, body: { tableId, gameType: 'poker', settings: POKER_SETTINGS } });
  expect(r).toMatchObject({ status: 200, body: { tableId } });
  return tableId;
}

async function until<T>(what: string, read: () => Promise<T | undefined>, ms = 15_000): Promise<T> {
  for (const stop = Date.now() + ms; ;) {
    const v = await read();
    if (v !== undefined) return v;
    if (Date.now() > stop) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const violationsNow = async () => {
  const client = await db.pool('poker_worker', 1).connect();
  try {
    return (await chainIntentViolations(client, { rpcUrl: local.url })).violations;
  } finally {
    client.release();
  }
};

describe('class 7 (a): bank.fail_deposit by the bank login during a victim\'s deposit', () => {
  afterEach(async () => {
    await rpc('evm_setAutomine', [true]);
  });

  test('the receipt wins over the claimed failure: the victim is seated, nothing is stranded', async () => {
    const victim = await player(300n);
    const tableId = await table(victim);
    const body = await permitDeposit(local, victim, tableId, 120n, { seatIndex: 3 });
    await rpc('evm_setAutomine', [false]);
    const answer = call(`${bank}/api/deposit`, { headers: victim.auth, body });
    // the thief reads the in-flight intent, then fails it before the block that carries it
    const key = await until('the submitted intent', async () => (await thief.query(
      "select idempotency_key from bank.deposit_intents where table_id = $1 and status = 'submitted'", [tableId],
    )).rows[0]?.idempotency_key as string | undefined);
    await thief.query('select bank.fail_deposit($1, $2)', [key, 'ERC2612InvalidSigner']);
    await rpc('evm_mine');
    await rpc('evm_setAutomine', [true]);
    const r = await answer;
    expect(await reader.tableBalance(tableId)).toBe(120n * C);
    expect(r.body).toMatchObject({ status: 'confirmed' });
    expect(await intent(key)).toEqual({ status: 'confirmed', credited: true });
    expect(await seats(tableId)).toEqual([{ seatIndex: 3, userId: victim.userId, chipBalance: '120', status: 'seated' }]);
    // and once confirmed, the thief cannot fail it
    await expect(thief.query('select bank.fail_deposit($1, $2)', [key, 'x'])).rejects.toMatchObject({ message: 'deposit_state_conflict' });
    expect(await violationsNow()).toEqual([]);
  }, 60_000);

  test('a failed intent whose tokens are in the vault is named, then credited by the reconciler', async () => {
    const victim = await player(300n);
    const tableId = await table(victim);
    const body = await permitDeposit(local, victim, tableId, 90n, { seatIndex: 1 });
    await rpc('evm_setAutomine', [false]);
    const answer = call(`${bank}/api/deposit`, { headers: victim.auth, body });
    const key = await until('the submitted intent', async () => (await thief.query(
      "select idempotency_key from bank.deposit_intents where table_id = $1 and status = 'submitted'", [tableId],
    )).rows[0]?.idempotency_key as string | undefined);
    // the thief fails it and also takes the transaction hash away (as if the bank had stopped
    // before recording it): only the chain's events can tell the deposit happened
    await rpc('evm_mine');
    await rpc('evm_setAutomine', [true]);
    await answer;
    await db.owner.query("update bank.deposit_intents set status = 'failed', tx_hash = null, block_number = null, credited_at = null, verified_at = null, verified_block = null, error = 'made up', updated_at = now() where idempotency_key = $1", [key]);
    await db.owner.query('delete from game.seat_credits where credit_key = $1', [key]);
    await db.owner.query("update game.table_players set status = 'closed', chip_balance = 0 where table_id = $1", [tableId]);
    expect(await reader.tableBalance(tableId)).toBe(90n * C);
    const named = await violationsNow();
    expect(named).toEqual([expect.objectContaining({ invariant: 'chain_deposit_intent_failed', subject: key })]);
    await reconcileNow();
    expect(await intent(key)).toEqual({ status: 'confirmed', credited: true });
    expect((await seats(tableId)).map((s: { userId: string; chipBalance: string }) => [s.userId, s.chipBalance])).toEqual([[victim.userId, '90']]);
    expect(await violationsNow()).toEqual([]);
  }, 60_000);
});

test('class 7 (b): a made-up confirmed deposit (bank login) credited with the service key and withdrawn: refused, and named', async () => {
  const victim = await player(500n);
  const tableId = await table(victim);
  expect((await call(`${bank}/api/deposit`, { headers: victim.auth, body: await permitDeposit(local, victim, tableId, 200n, { seatIndex: 0 }) })).body)
    .toMatchObject({ status: 'confirmed' });
  expect(await reader.tableBalance(tableId)).toBe(200n * C);
  const attacker = await player(0n);
  const key = `0x${randomUUID().replace(/-/g, '')}${randomUUID().replace(/-/g, '')}`;
  const fakeTx = `0x${'cd'.repeat(32)}`;
  await thief.query('select * from bank.open_deposit($1, $2, $3, 1, 200, $4, $5)', [attacker.sid, key, tableId, attacker.wallet, inAnHour().toString()]);
  await thief.query('select bank.submit_deposit($1, $2)', [key, fakeTx]);
  await thief.query('select bank.confirm_deposit($1, $2, 1, $3, $4)', [key, fakeTx, attacker.wallet, (200n * C).toString()]);
  const credit = await call(`${game}/internal/credit-chips`, {
    headers: { 'x-service-key': TEST_SERVICE_KEY },
    body: { creditKey: key, tableId, userId: attacker.userId, seatIndex: 1, amount: '200', moneyKind: 'real' },
  });
  expect(credit.status).toBe(409);
  expect(credit.body).toEqual({ error: 'credit_not_backed' });
  // mark_credited has no credit to bind to; the attacker has no seat to withdraw from
  await expect(thief.query('select bank.mark_credited($1)', [key])).rejects.toMatchObject({ message: 'credit_not_found' });
  const out = await call(`${bank}/api/withdraw`, { headers: attacker.auth, body: { tableId } });
  expect(out.status).toBeGreaterThanOrEqual(400);
  expect(await reader.balanceOf(attacker.wallet)).toBe(0n);
  expect(await reader.tableBalance(tableId)).toBe(200n * C);
  // the forged confirmation is named (no Deposited event behind it)
  expect(await violationsNow()).toEqual([expect.objectContaining({ invariant: 'chain_deposit_confirmed_without_event', subject: key })]);
  // and, ten minutes on, as a confirmed deposit that funds nothing
  await db.owner.query("update bank.deposit_intents set updated_at = now() - interval '11 minutes' where idempotency_key = $1", [key]);
  expect((await violationsNow()).map((v) => [v.invariant, v.subject]).sort()).toEqual([['chain_deposit_confirmed_without_event', key], ['chain_deposit_uncredited', key]]);
  await db.owner.query("update bank.deposit_intents set status = 'failed' where idempotency_key = $1", [key]);
}, 60_000);

test('class 7 (c): the bank login cannot activate a deployment; an operator can, the owner at boot', async () => {
  const before = (await db.owner.query('select id, vault from bank.deployments where active')).rows[0];
  expect(before.vault.toLowerCase()).toBe(local.deployment.vault.toLowerCase());
  const fake = `0x${'11'.repeat(20)}`;
  // the old signature (no authority at all) and the new one with a made-up admin session
  await expect(thief.query('select bank.activate_deployment(31337, $1, $2)', [fake, fake])).rejects.toMatchObject({ code: expect.stringMatching(/^(42883|42501)$/) });
  await expect(thief.query('select bank.activate_deployment($1, 31337, $2, $3, null)', [randomUUID(), fake, fake])).rejects.toMatchObject({ message: 'admin_session_required' });
  await expect(thief.query('select bank_private.activate_deployment_as_owner(31337, $1, $2, null, null)', [fake, fake])).rejects.toMatchObject({ code: '42501' });
  expect((await db.owner.query('select id from bank.deployments where active')).rows[0].id).toBe(before.id);
  // an operator (a live admin session, over the chain bank's operator route)
  const op = await signInOperator(db.owner, platform.url('auth'));
  const player0 = await player(0n);
  expect((await call(`${bank}/api/operator/chain/deployment`, { headers: player0.auth, body: { chainId: 31337, token: fake, vault: fake } })).status).toBe(403);
  const r = await call(`${bank}/api/operator/chain/deployment`, { headers: op.auth, body: { chainId: local.deployment.chainId, token: local.deployment.token, vault: local.deployment.vault } });
  expect(r).toMatchObject({ status: 200, body: { active: true, vault: local.deployment.vault } });
  const { rows: [after] } = await db.owner.query('select id, activated_by from bank.deployments where active');
  expect(after.id).toBe(before.id);
  // a deployment on another chain than the role's is refused (the contracts must be where the bank reads)
  expect((await call(`${bank}/api/operator/chain/deployment`, { headers: op.auth, body: { chainId: 1, token: fake, vault: fake } })).body).toEqual({ error: 'deployment_not_on_chain' });
  // other contracts active (another operator's act): this bank takes no deposit into its own vault
  // under them (an intent records the active deployment, and its tokens must be in that vault)
  await db.owner.query('select bank_private.activate_deployment_as_owner(31337, $1, $2, null, 0)', [fake, fake]);
  const p = await player(50n);
  const tableId = `ac-${randomUUID().slice(0, 10)}`;
  await db.owner.query("insert into game.tables (table_id, game_type, settings, money_kind, bank) values ($1, 'poker', $2, 'real', 'chain')", [tableId, JSON.stringify(POKER_SETTINGS)]);
  expect(await call(`${bank}/api/deposit`, { headers: p.auth, body: await permitDeposit(local, p, tableId, 10n) })).toEqual({ status: 503, body: { error: 'deployment_not_active' } });
  await db.owner.query('select bank_private.activate_deployment_as_owner($1, $2, $3, $4, 0)', [local.deployment.chainId, local.deployment.token, local.deployment.vault, local.url]);
  expect((await call(`${bank}/api/deposit`, { headers: p.auth, body: await permitDeposit(local, p, tableId, 10n) })).body).toMatchObject({ status: 'confirmed' });
  expect(await reader.balanceOf(p.wallet)).toBe(40n * C);
}, 60_000);

describe('class 7 (d): a payment failed and retried by the bank login while its transaction mines', () => {
  afterEach(async () => {
    await rpc('evm_setAutomine', [true]);
  });

  test('a player holding the bank login fails and retries their own withdrawal in flight: paid once, never twice out of the others\' tokens', async () => {
    const victim = await player(500n);
    const tableId = await table(victim);
    expect((await call(`${bank}/api/deposit`, { headers: victim.auth, body: await permitDeposit(local, victim, tableId, 200n, { seatIndex: 0 }) })).body).toMatchObject({ status: 'confirmed' });
    const attacker = await player(100n);
    expect((await call(`${bank}/api/deposit`, { headers: attacker.auth, body: await permitDeposit(local, attacker, tableId, 100n, { seatIndex: 1 }) })).body).toMatchObject({ status: 'confirmed' });
    expect(await reader.tableBalance(tableId)).toBe(300n * C);
    await rpc('evm_setAutomine', [false]);
    const answer = call(`${bank}/api/withdraw`, { headers: attacker.auth, body: { tableId } });
    const key = await until('the submitted withdrawal', async () => (await thief.query(
      "select idempotency_key from bank.withdraw_intents where table_id = $1 and user_id = $2 and status = 'submitted'", [tableId, attacker.userId],
    )).rows[0]?.idempotency_key as string | undefined);
    // the thief says it failed, and asks for a fresh transaction
    await thief.query("select bank.advance_withdrawal($1, 'failed', null, null, null, null, 'made up')", [key]);
    await thief.query('select bank.retry_withdrawal($1)', [key]);
    await rpc('evm_mine');
    await rpc('evm_setAutomine', [true]);
    await answer;
    // time passes (older than the reconciler's grace), and the reconciler looks at the pending payment
    await db.owner.query("update bank.withdraw_intents set updated_at = now() - interval '10 minutes' where idempotency_key = $1", [key]);
    await reconcileNow();
    await reconcileNow();
    expect(await reader.balanceOf(attacker.wallet)).toBe(100n * C);
    expect(await reader.tableBalance(tableId)).toBe(200n * C);
    expect((await db.owner.query('select status, settled_at is not null as settled from bank.withdraw_intents where idempotency_key = $1', [key])).rows[0])
      .toEqual({ status: 'confirmed', settled: true });
    expect(await violationsNow()).toEqual([]);
  }, 60_000);
});
