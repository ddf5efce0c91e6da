// The cage's class 2 routes over real HTTP: the tables proxy (the game's lobby and room, its
// refusals kept, the game unreachable), the economy / demo / house flags, a table's settlement
// records (service key), and the test seeds (harness only, the caller's own play chips, replay-once).
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { expectCleanAudit } from '../helpers/cage.ts';
import { call, startMoneyPlatform } from '../helpers/money.ts';

let db: TestDatabase;
let cagePool: pg.Pool;
let m: Awaited<ReturnType<typeof startMoneyPlatform>>;
beforeAll(async () => {
  db = await createTestDatabase();
  cagePool = db.pool('poker_cage');
  m = await startMoneyPlatform(db);
});
afterAll(async () => {
  await m?.platform.stop();
  await expectCleanAudit(cagePool);
  await db.drop();
});

test('the tables proxy answers what the game answers: the lobby with filters and paging, a room, a refusal', async () => {
  const p = await m.player(500);
  const ids = [await m.table(p.auth), await m.table(p.auth), await m.table(p.auth)].sort();
  expect((await m.deposit(p.auth, { tableId: ids[0], seatIndex: 1, amount: 100 })).status).toBe(200);
  const lobby = await call(`${m.cage}/api/tables?mode=cash&limit=200`);
  expect(lobby.status).toBe(200);
  expect(lobby.body).toEqual(await (await fetch(`${m.game}/api/tables?mode=cash&limit=200`)).json());
  const first = lobby.body.tables.find((t: { tableId: string }) => t.tableId === ids[0]);
  expect(first).toMatchObject({ gameType: 'poker', mode: 'cash', status: 'active', moneyKind: 'play', seated: 1, smallBlind: expect.any(Number) });
  // paging by table id
  const page = await call(`${m.cage}/api/tables?limit=1&after=${ids[0]!}`);
  expect(page.body.tables).toHaveLength(1);
  expect(page.body.tables[0].tableId > ids[0]!).toBe(true);
  expect(page.body.next).toBe(page.body.tables[0].tableId);
  const room = await call(`${m.cage}/api/tables/${ids[0]}`);
  expect(room.body).toMatchObject({ tableId: ids[0], seats: [{ seatIndex: 1, userId: p.userId, chipBalance: '100' }] });
  expect(room.body.settings.deckSeed).toBeUndefined();
  for (const bad of ['mode=poker', 'limit=0', 'limit=x', 'status=open', 'colour=red']) {
    const r = await call(`${m.cage}/api/tables?${bad}`);
    expect([r.status, r.body.error]).toEqual([400, 'bad_request']);
  }
  expect((await call(`${m.cage}/api/tables/no-such-table`)).body).toEqual({ error: 'table_not_found' });
  expect((await call(`${m.cage}/api/tables/${'x'.repeat(65)}`)).status).toBe(404);
  expect((await m.withdraw(p.auth, { tableId: ids[0] })).status).toBe(200);
});

test('the flags: economy, demo, house', async () => {
  const economy = await call(`${m.cage}/api/economy`);
  expect(economy.body).toMatchObject({
    bank: 'cage', moneyKinds: ['play', 'real'], realMoneyEnabled: false,
    playTransferGate: { enabled: true, environment: 'local' }, units: { gasMicroPerChip: 1_000_000, custodyBaseUnitsPerChip: 1_000_000 },
  });
  expect((await call(`${m.cage}/api/demo`)).body).toMatchObject({ demo: true, environment: 'local', seeds: [{ path: '/internal/test/seed-chips' }] });
  const house = await call(`${m.cage}/api/house`);
  expect(house.body.seating).toEqual([
    { path: '/api/operator/seat', enabled: false, error: 'not_yet_cage', phase: 'operator-seating' },
    { path: '/api/house/seat', enabled: false, error: 'not_yet_cage', phase: 'house-seating' },
  ]);
});

test('a table\'s settlement records take the service key', async () => {
  const p = await m.player(300);
  const tableId = await m.table(p.auth);
  expect((await m.deposit(p.auth, { tableId, seatIndex: 0, amount: 120 })).status).toBe(200);
  const out = await m.withdraw(p.auth, { tableId });
  expect((await call(`${m.cage}/settlement/tables/${tableId}`)).status).toBe(401);
  expect((await call(`${m.cage}/settlement/tables/${tableId}`, { headers: { 'x-service-key': 'wrong' } })).status).toBe(401);
  const r = await call(`${m.cage}/settlement/tables/${tableId}`, { headers: m.service });
  expect(r.body.withdrawals).toEqual([expect.objectContaining({ ledgerRefId: out.body.txHash, amount: 120, settlement: 'cash_out', userId: p.userId })]);
  expect(r.body.deposits).toEqual([expect.objectContaining({ userId: p.userId, amount: 120, status: 'confirmed', seatIndex: 0 })]);
  expect((await call(`${m.cage}/settlement/tables/${'y'.repeat(65)}`, { headers: m.service })).status).toBe(400);
});

test('test seeds: the caller\'s own play chips, replay-once, refused while the switch is off', async () => {
  const p = await m.player();
  const seed = (body: Record<string, unknown>, auth: Record<string, string> = p.auth) => call(`${m.cage}/internal/test/seed-chips`, { headers: auth, body });
  // the test database was not made by the platform's migrator: its test_seeds switch is off
  expect((await seed({ amount: 10, idempotencyKey: 'a' })).body).toEqual({ error: 'test_seeds_disabled' });
  await db.owner.query("insert into cage.switches (name, enabled) values ('test_seeds', true) on conflict (name) do update set enabled = true");
  try {
    const r = await seed({ amount: 250, idempotencyKey: 'a' });
    expect(r.body).toMatchObject({ ok: true, amount: 250, moneyKind: 'play', balance: 250 });
    expect((await seed({ amount: 250, idempotencyKey: 'a' })).body).toMatchObject({ replay: true, balance: 250 });
    expect((await seed({ amount: 5, idempotencyKey: 'a' })).body.error).toBe('ref_id_conflict');
    for (const body of [{ amount: 0, idempotencyKey: 'b' }, { amount: 1_000_001, idempotencyKey: 'b' }, { amount: 5 }, { amount: 5, idempotencyKey: 'b', userId: randomUUID() }]) {
      expect((await seed(body)).status).toBe(400);
    }
    expect((await seed({ amount: 5, idempotencyKey: 'c' }, {})).status).toBe(401);
    expect(await m.balance(p.auth)).toBe(250);
    // operators cannot switch it
    const op = await call(`${m.cage}/api/operator/switches`, { headers: (await m.operator()).auth, body: { name: 'test_seeds', enabled: true } });
    expect(op.status).toBe(400);
  } finally {
    await db.owner.query("update cage.switches set enabled = false where name = 'test_seeds'");
  }
  expect((await seed({ amount: 10, idempotencyKey: 'd' })).body).toEqual({ error: 'test_seeds_disabled' });
});
