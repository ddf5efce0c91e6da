// A stand-up whose answer was lost: the game stood the seat up (`leaving`, stack and chain head
// frozen) but the cage never heard, so no settlement was written and nothing the reconciler looked
// at pointed to it. The cash reconciler now has the cage finish such seats through its settlement path
// (POST /settlement/reconcile-stand-ups; the worker's database role cannot settle or sign):
// the player is paid once (to their cage balance), the seat closes, a receipt is stored, running it
// again changes nothing, and the player's own retry replays the same settlement.
import type pg from 'pg';
import { createServiceClient } from '../../server/http/service-client.ts';
import { reconcileCash } from '../../tasks/cage_reconcile_cash.ts';
import { expectCleanAudit } from '../helpers/cage.ts';
import { startChaosProxy, type ChaosProxy } from '../helpers/chaos-proxy.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startMoneyPlatform } from '../helpers/money.ts';
import { TEST_SERVICE_KEY } from '../helpers/platform.ts';

let db: TestDatabase;
let cagePool: pg.Pool;
let workerPool: pg.Pool;
let proxy: ChaosProxy;
let m: Awaited<ReturnType<typeof startMoneyPlatform>>;
let healthy: ReturnType<typeof createServiceClient>;
let cage: ReturnType<typeof createServiceClient>;
beforeAll(async () => {
  db = await createTestDatabase();
  cagePool = db.pool('poker_cage');
  workerPool = db.pool('poker_worker');
  let gameUrl = '';
  proxy = await startChaosProxy(() => gameUrl, 3);
  m = await startMoneyPlatform(db, { env: { GAME_URL: proxy.url, GAME_CALL_TIMEOUT_MS: '1000' } });
  gameUrl = m.game;
  healthy = createServiceClient({ baseUrl: () => m.game, serviceKey: TEST_SERVICE_KEY, timeoutMs: 5000 });
  cage = createServiceClient({ baseUrl: () => m.cage, serviceKey: TEST_SERVICE_KEY, timeoutMs: 20_000 });
});
afterAll(async () => {
  await m?.platform.stop();
  await proxy?.close();
  await db.drop();
});

const seat = async (userId: string) =>
  (await db.owner.query('select id, status, chip_balance, closing_ref_id from game.table_players where user_id = $1 order by id desc limit 1', [userId])).rows[0];

/** A seated player whose stand-up reached the game but whose answer was lost. */
async function lostStandUp(stack = 100) {
  const p = await m.player(500);
  const tableId = await m.table(p.auth);
  expect((await m.deposit(p.auth, { tableId, seatIndex: 0, amount: stack })).status).toBe(200);
  proxy.faults('/internal/stand-up', { drop: 0, loseAnswer: 1 });
  const out = await m.withdraw(p.auth, { tableId });
  proxy.faults('/internal/stand-up', { drop: 0, loseAnswer: 0 });
  expect(out).toMatchObject({ status: 503, body: { error: 'game_unavailable' } });
  expect(await seat(p.userId)).toMatchObject({ status: 'leaving', chip_balance: BigInt(stack) });
  expect(await m.balance(p.auth)).toBe(500 - stack);
  return { p, tableId };
}

test('the reconciler settles a seat left leaving by a lost stand-up answer: paid once, seat closed, audit clean', async () => {
  const { p, tableId } = await lostStandUp();
  // young stand-ups are left to the request that may still be finishing them
  expect((await reconcileCash(workerPool, healthy, { graceSeconds: 3600, cage })).standUps).toEqual({ settled: 0, failed: 0 });
  expect(await seat(p.userId)).toMatchObject({ status: 'leaving' });

  const r = await reconcileCash(workerPool, healthy, { graceSeconds: 0, cage });
  expect(r.standUps).toEqual({ settled: 1, failed: 0 });
  expect(await seat(p.userId)).toMatchObject({ status: 'closed', chip_balance: 0n, closing_ref_id: expect.stringMatching(/^withdraw:0x/) });
  expect(await m.balance(p.auth)).toBe(500);
  const { rows } = await db.owner.query(
    'select w.settlement, w.settled_at, (select count(*)::int from cage.receipts r where r.ledger_ref_id = w.ledger_ref_id) as receipts from cage.withdraw_intents w where w.user_id = $1',
    [p.userId]);
  expect(rows).toEqual([{ settlement: 'cash_out', settled_at: expect.any(Date), receipts: 1 }]);
  await expectCleanAudit(cagePool);

  // again: nothing more; the player's retry replays the settlement the reconciler made
  expect((await reconcileCash(workerPool, healthy, { graceSeconds: 0, cage })).standUps).toEqual({ settled: 0, failed: 0 });
  const retry = await m.withdraw(p.auth, { tableId });
  expect(retry).toMatchObject({ status: 200, body: { status: 'confirmed', amount: 100, replay: true, destination: 'cage' } });
  expect(await m.balance(p.auth)).toBe(500);
  await expectCleanAudit(cagePool);
});

test('a stand-up retried by the player while the reconciler runs is settled once', async () => {
  const { p, tableId } = await lostStandUp(60);
  const [retry, run] = await Promise.all([m.withdraw(p.auth, { tableId }), reconcileCash(workerPool, healthy, { graceSeconds: 0, cage })]);
  expect(retry.status).toBe(200);
  expect(run.standUps.failed).toBe(0);
  expect(await seat(p.userId)).toMatchObject({ status: 'closed' });
  expect(await m.balance(p.auth)).toBe(500);
  const { rows } = await db.owner.query('select count(*)::int as n from cage.withdraw_intents where user_id = $1', [p.userId]);
  expect(rows[0].n).toBe(1);
  await expectCleanAudit(cagePool);
});

test('a frozen table keeps its stood-up seats until it is thawed', async () => {
  const { p } = await lostStandUp(80);
  const tableId = (await db.owner.query('select table_id from game.table_players where user_id = $1', [p.userId])).rows[0].table_id;
  await db.owner.query("update game.tables set status = 'frozen' where table_id = $1", [tableId]);
  expect((await reconcileCash(workerPool, healthy, { graceSeconds: 0, cage })).standUps).toEqual({ settled: 0, failed: 0 });
  expect(await seat(p.userId)).toMatchObject({ status: 'leaving', chip_balance: 80n });
  await expectCleanAudit(cagePool);

  await db.owner.query("update game.tables set status = 'active' where table_id = $1", [tableId]);
  expect((await reconcileCash(workerPool, healthy, { graceSeconds: 0, cage })).standUps).toEqual({ settled: 1, failed: 0 });
  expect(await seat(p.userId)).toMatchObject({ status: 'closed' });
  expect(await m.balance(p.auth)).toBe(500);
  await expectCleanAudit(cagePool);
});

test('the cage settles lost stand-ups only for the service key; the worker cannot settle or sign itself', async () => {
  const url = `${m.cage}/settlement/reconcile-stand-ups`;
  for (const headers of [{}, { 'x-service-key': 'not-the-key-but-long-enough' }]) {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: '{}' });
    expect([res.status, await res.json()]).toEqual([401, { error: 'invalid_service_key' }]);
  }
  const bad = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...m.service }, body: '{"graceSeconds":-1}' });
  expect(bad.status).toBe(400);
  const { p } = await lostStandUp(70);
  const ok = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...m.service }, body: '{"graceSeconds":0}' });
  expect([ok.status, await ok.json()]).toEqual([200, { settled: 1, failed: 0 }]);
  expect(await seat(p.userId)).toMatchObject({ status: 'closed' });
  expect(await m.balance(p.auth)).toBe(500);
  for (const fn of ['cage.settle_position(uuid, text, bigint, bigint, text, text, text, boolean)', 'cage.store_receipt(text, text, text, bytea, bytea, bytea)']) {
    const { rows } = await db.owner.query(`select has_function_privilege('poker_worker', $1, 'execute') as ok`, [fn]);
    expect([fn, rows[0].ok]).toEqual([fn, false]);
  }
  await expectCleanAudit(cagePool);
});

test('a cage the reconciler cannot reach: logged, nothing settled, the next run does it', async () => {
  const { p } = await lostStandUp(50);
  const nowhere = createServiceClient({ baseUrl: () => 'http://127.0.0.1:9', serviceKey: TEST_SERVICE_KEY, timeoutMs: 1000 });
  expect((await reconcileCash(workerPool, healthy, { graceSeconds: 0, cage: nowhere })).standUps).toEqual({ settled: 0, failed: 0, unreachable: true });
  expect(await seat(p.userId)).toMatchObject({ status: 'leaving' });
  expect((await reconcileCash(workerPool, healthy, { graceSeconds: 0, cage })).standUps).toEqual({ settled: 1, failed: 0 });
  expect(await seat(p.userId)).toMatchObject({ status: 'closed' });
  await expectCleanAudit(cagePool);
});
