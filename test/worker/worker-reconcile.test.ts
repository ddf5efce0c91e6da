// The cash reconciler as the worker runs it. A sit is one transaction (issue 33: cage.deposit_to_seat)
// and never calls the game; a deposit an older release left pending (it funded the seat over HTTP
// and stopped before it knew the answer) is finished by the worker's periodic job once the game
// answers again. A settlement closes its seat in its own transaction, so a withdrawal leaves the
// reconciler nothing to redeliver, whatever the game's settle route does.
import type pg from 'pg';
import { expectCleanAudit } from '../helpers/cage.ts';
import { startChaosProxy, type ChaosProxy } from '../helpers/chaos-proxy.ts';
import { createTestDatabase, playerGrant, type TestDatabase } from '../helpers/db.ts';
import { moneyClient } from '../helpers/money.ts';
import { startTestPlatform } from '../helpers/platform.ts';
import { AUTH_SECRET, ISSUER } from '../helpers/money.ts';

let db: TestDatabase;
let cagePool: pg.Pool;
let proxy: ChaosProxy;
let m: ReturnType<typeof moneyClient>;
beforeAll(async () => {
  db = await createTestDatabase();
  cagePool = db.pool('poker_cage');
  let gameUrl = '';
  proxy = await startChaosProxy(() => gameUrl, 7);
  const platform = await startTestPlatform({
    databaseUrl: db.url,
    roles: ['auth', 'game', 'cage', 'worker'],
    env: {
      AUTH_SECRET, AUTH_BASE_URL: ISSUER, ENABLE_TEST_AUTH: 'true', GAME_URL: proxy.url,
      GAME_CALL_TIMEOUT_MS: '300', CAGE_RECONCILE_INTERVAL_SECONDS: '1',
    },
  });
  m = moneyClient(db, platform);
  gameUrl = m.game;
});
afterAll(async () => {
  await m?.platform.stop();
  await proxy?.close();
  await db.drop();
});

async function until<T>(read: () => Promise<T>, done: (v: T) => boolean, seconds = 15): Promise<T> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const v = await read();
    if (done(v) || Date.now() > deadline) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
}

test('a sit with the game unreachable is confirmed: the buy-in and the seat are one transaction, no call to the game', async () => {
  const p = await m.player(500);
  const tableId = await m.table(p.auth);
  proxy.faults('/internal/credit-chips', { drop: 1, loseAnswer: 0 });
  const r = await m.deposit(p.auth, { tableId, seatIndex: 0, amount: 100 }, { 'idempotency-key': 'sit-0' });
  expect(r.status).toBe(200);
  expect(r.body).toMatchObject({ status: 'confirmed', idempotencyKey: 'sit-0', seatIndex: 0, chipBalance: '100' });
  expect(proxy.counts['/internal/credit-chips']).toBeUndefined();
  expect(await m.balance(p.auth)).toBe(400);
  expect((await m.room(tableId)).body.seats).toEqual([{ seatIndex: 0, userId: p.userId, chipBalance: '100', status: 'seated' }]);
  proxy.faults('/internal/credit-chips', { drop: 0, loseAnswer: 0 });
  await expectCleanAudit(cagePool);
});

test('a deposit an older release left pending is compensated by the worker once the game answers', async () => {
  const p = await m.player(500);
  const tableId = await m.table(p.auth);
  proxy.faults('/internal/credit-chips/cancel', { drop: 1, loseAnswer: 0 });
  // the buy-in posted, the seat's funding never answered: the deposit is pending
  const { rows: [opened] } = await cagePool.query('select status from cage.open_deposit($1, $2, $3, 0, 100)', [await playerGrant(db.owner, p.userId), 'sit-1', tableId]);
  expect(opened).toEqual({ status: 'pending' });
  expect(await m.balance(p.auth)).toBe(400);
  await expectCleanAudit(cagePool); // the pending buy-in is counted in flight
  // a retry of the request reports it pending
  const pending = await m.deposit(p.auth, { tableId, seatIndex: 0, amount: 100 }, { 'idempotency-key': 'sit-1' });
  expect(pending.status).toBe(202);
  expect(pending.body).toMatchObject({ status: 'pending', idempotencyKey: 'sit-1', replay: true });

  proxy.faults('/internal/credit-chips/cancel', { drop: 0, loseAnswer: 0 });
  const intent = await until(
    async () => (await db.owner.query('select status, error from cage.deposit_intents where user_id = $1', [p.userId])).rows[0],
    (row) => row.status !== 'pending',
  );
  expect(intent).toEqual({ status: 'failed', error: 'seat_funding_failed' });
  expect(await m.balance(p.auth)).toBe(500);
  // the replay now reports the failure
  const again = await m.deposit(p.auth, { tableId, seatIndex: 0, amount: 100 }, { 'idempotency-key': 'sit-1' });
  expect(again.status).toBe(409);
  expect(again.body).toMatchObject({ error: 'failed', status: 'failed' });
  await expectCleanAudit(cagePool);
});

test('a withdrawal closes its seat in its own transaction: the game\'s settle-withdrawal route is not needed, and nothing is left to redeliver', async () => {
  const p = await m.player(500);
  const tableId = await m.table(p.auth);
  expect((await m.deposit(p.auth, { tableId, seatIndex: 1, amount: 100 })).status).toBe(200);
  // the route a settlement was once delivered through: unreachable, and never called
  proxy.faults('/internal/settle-withdrawal', { drop: 1, loseAnswer: 0 });
  const out = await m.withdraw(p.auth, { tableId });
  expect(out.status).toBe(200);
  expect(await m.balance(p.auth)).toBe(500);
  expect((await m.room(tableId)).body.seats).toEqual([]);
  const { rows } = await db.owner.query('select settled_at from cage.withdraw_intents where user_id = $1', [p.userId]);
  expect(rows[0].settled_at).toBeInstanceOf(Date);
  expect(proxy.counts['/internal/settle-withdrawal']?.drop ?? 0).toBe(0);
  proxy.faults('/internal/settle-withdrawal', { drop: 0, loseAnswer: 0 });
  await expectCleanAudit(cagePool);
});
