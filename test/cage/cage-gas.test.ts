// Gas tanks over real HTTP against the running roles: deposit, withdraw (reserved, delivered), a
// failed delivery refunded, the worker's refund of a reservation a stopped cage left, refusals and
// replays, concurrency that never takes a tank below zero. Every test ends with the cage audit empty.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { createTestDatabase, playerGrant, type TestDatabase } from '../helpers/db.ts';
import { expectCleanAudit } from '../helpers/cage.ts';
import { call, startMoneyPlatform } from '../helpers/money.ts';
import { refundStaleGasWithdrawals } from '../../tasks/cage_reconcile_gas.ts';

let db: TestDatabase;
let cagePool: pg.Pool;
let workerPool: pg.Pool;
let m: Awaited<ReturnType<typeof startMoneyPlatform>>;
beforeAll(async () => {
  db = await createTestDatabase();
  cagePool = db.pool('poker_cage');
  workerPool = db.pool('poker_worker');
  m = await startMoneyPlatform(db);
});
afterEach(async () => {
  await expectCleanAudit(cagePool);
});
afterAll(async () => {
  await m?.platform.stop();
  await db.drop();
});

const MICRO = 1_000_000;
const gas = (auth: Record<string, string>, what: 'deposit' | 'withdraw', body: Record<string, unknown>, key: string | null = randomUUID()) =>
  call(`${m.cage}/api/gas/${what}`, { headers: { ...auth, ...(key === null ? {} : { 'idempotency-key': key }) }, body });
const tank = async (auth: Record<string, string>, kind = 'play') =>
  (await call(`${m.cage}/api/gas-tank`, { headers: auth })).body.tanks.find((t: { moneyKind: string }) => t.moneyKind === kind).balanceMicro as string;

test('deposit and withdraw move chips between the cage balance and the gas tank, in micro-units', async () => {
  const p = await m.player(100);
  const d = await gas(p.auth, 'deposit', { amountMicro: String(40 * MICRO) }, 'dep-1');
  expect(d.status).toBe(200);
  expect(d.body).toMatchObject({ status: 'confirmed', amountMicro: String(40 * MICRO), moneyKind: 'play', tankMicro: String(40 * MICRO), balance: 60 });
  expect(await m.balance(p.auth)).toBe(60);
  expect(await tank(p.auth)).toBe(String(40 * MICRO));
  // a replay answers the same, moves nothing
  const again = await gas(p.auth, 'deposit', { amountMicro: String(40 * MICRO) }, 'dep-1');
  expect(again.body).toMatchObject({ status: 'confirmed', replay: true, tankMicro: String(40 * MICRO) });
  expect(await m.balance(p.auth)).toBe(60);
  // the same key with another amount is refused
  expect((await gas(p.auth, 'deposit', { amountMicro: 5 * MICRO }, 'dep-1')).body.error).toBe('ref_id_conflict');

  const w = await gas(p.auth, 'withdraw', { amountMicro: 15 * MICRO }, 'wd-1');
  expect(w.status).toBe(200);
  expect(w.body).toMatchObject({ status: 'confirmed', amountMicro: String(15 * MICRO), moneyKind: 'play' });
  expect(w.body.refId).toMatch(/^gas-withdraw:/);
  expect(await m.balance(p.auth)).toBe(75);
  expect(await tank(p.auth)).toBe(String(25 * MICRO));
  const replay = await gas(p.auth, 'withdraw', { amountMicro: 15 * MICRO }, 'wd-1');
  expect(replay.body).toMatchObject({ status: 'confirmed', replay: true, refId: w.body.refId });
  expect(await m.balance(p.auth)).toBe(75);
  const view = await call(`${m.cage}/api/gas-tank`, { headers: p.auth });
  expect(view.body).toMatchObject({ unit: 'micro', microPerChip: MICRO });
  expect(view.body.withdrawals).toEqual([expect.objectContaining({ refId: w.body.refId, status: 'delivered' })]);
});

test('refusals: no token, bad amounts, no key, more than the tank or the balance holds; nothing moves', async () => {
  const p = await m.player(10);
  expect((await call(`${m.cage}/api/gas/deposit`, { body: { amountMicro: MICRO } })).status).toBe(401);
  expect((await call(`${m.cage}/api/gas-tank`)).status).toBe(401);
  for (const amountMicro of [0, -MICRO, 1.5, 'x', MICRO + 1, '99999999999999999999999999', null]) {
    const r = await gas(p.auth, 'deposit', { amountMicro });
    expect([r.status, r.body.error]).toEqual([400, 'bad_request']);
  }
  expect((await gas(p.auth, 'deposit', { amountMicro: MICRO, moneyKind: 'monopoly' })).body.error).toBe('bad_request');
  expect((await gas(p.auth, 'deposit', { amountMicro: MICRO, userId: randomUUID() })).body.error).toBe('bad_request');
  expect((await gas(p.auth, 'deposit', { amountMicro: MICRO }, null)).body.error).toBe('missing_idempotency_key');
  const over = await gas(p.auth, 'deposit', { amountMicro: 11 * MICRO });
  expect([over.status, over.body.error]).toEqual([402, 'insufficient_cage_balance']);
  const empty = await gas(p.auth, 'withdraw', { amountMicro: MICRO });
  expect([empty.status, empty.body.error]).toEqual([402, 'insufficient_gas']);
  expect(await m.balance(p.auth)).toBe(10);
  expect(await tank(p.auth)).toBe('0');
  // a refused reservation leaves no withdrawal behind
  expect((await call(`${m.cage}/api/gas-tank`, { headers: p.auth })).body.withdrawals).toEqual([]);
});

test('concurrent withdrawals never take a tank below zero', async () => {
  const p = await m.player(10);
  await gas(p.auth, 'deposit', { amountMicro: 10 * MICRO });
  const answers = await Promise.all(Array.from({ length: 12 }, () => gas(p.auth, 'withdraw', { amountMicro: 3 * MICRO })));
  const ok = answers.filter((a) => a.status === 200);
  expect(ok).toHaveLength(3);
  expect(answers.filter((a) => a.status !== 200).every((a) => a.status === 402 && a.body.error === 'insufficient_gas')).toBe(true);
  expect(await tank(p.auth)).toBe(String(1 * MICRO));
  expect(await m.balance(p.auth)).toBe(9);
});

test('a delivery that fails is refunded: the reservation goes back to the tank, and the answer says so', async () => {
  const p = await m.player(20);
  await gas(p.auth, 'deposit', { amountMicro: 20 * MICRO });
  // another move holds the player's cage account past the delivery's lock timeout
  const blocker = await db.owner.connect();
  try {
    await blocker.query('begin');
    await blocker.query("select 1 from cage.cage_accounts where account_type = 'user' and user_id = $1 and money_kind = 'play' for update", [p.userId]);
    const w = await gas(p.auth, 'withdraw', { amountMicro: 5 * MICRO }, 'wd-fail');
    expect(w.status).toBe(503);
    expect(w.body).toMatchObject({ error: 'gas_withdraw_failed', refunded: true, withdrawal: { status: 'refunded', error: 'delivery_timed_out' } });
  } finally {
    await blocker.query('rollback');
    blocker.release();
  }
  expect(await tank(p.auth)).toBe(String(20 * MICRO));
  expect(await m.balance(p.auth)).toBe(0);
  // the key answers what happened, and moves nothing more
  const replay = await gas(p.auth, 'withdraw', { amountMicro: 5 * MICRO }, 'wd-fail');
  expect(replay.body).toMatchObject({ error: 'gas_withdraw_failed', replay: true, withdrawal: { status: 'refunded' } });
  const refs = await db.owner.query("select ref_id from cage.cage_entries where ref_id like $1 order by id", [`gas-withdraw:${p.userId}:wd-fail%`]);
  expect(refs.rows.map((r) => r.ref_id.split(':').at(-1))).toEqual(['reserve', 'refund']);
});

test('the worker refunds a reservation a stopped cage left; a delivered one stays delivered', async () => {
  const p = await m.player(10);
  await gas(p.auth, 'deposit', { amountMicro: 10 * MICRO });
  const sid = await playerGrant(db.owner, p.userId);
  // the cage reserved, then stopped before delivering
  const { rows } = await cagePool.query('select ref_id from cage.reserve_gas_withdrawal($1, $2, 4, $3)', [sid, 'stopped', 'play']);
  const ref: string = rows[0].ref_id;
  expect(await tank(p.auth)).toBe(String(6 * MICRO));
  // not before the grace
  expect(await refundStaleGasWithdrawals(workerPool)).toEqual([]);
  await db.owner.query("update cage.gas_withdrawals set created_at = now() - interval '5 minutes' where ref_id = $1", [ref]);
  expect(await refundStaleGasWithdrawals(workerPool)).toEqual([ref]);
  expect(await tank(p.auth)).toBe(String(10 * MICRO));
  expect(await refundStaleGasWithdrawals(workerPool)).toEqual([]);
  // delivered is final: a refund of it changes nothing
  const w = await gas(p.auth, 'withdraw', { amountMicro: 2 * MICRO });
  const again = await workerPool.query('select status, replayed from cage.refund_gas_withdrawal($1, $2)', [w.body.refId, 'forged']);
  expect(again.rows[0]).toEqual({ status: 'delivered', replayed: true });
  expect(await m.balance(p.auth)).toBe(2);
});
