// Issue 32, "reads that agree, and refusals that leave nothing behind", on the cage with the real
// auth, game and cage roles: a deposit refused for a reason known before any write (a seat taken, a
// player already seated elsewhere, a frozen table, a balance too low, a tournament entry without the
// fee) writes nothing: no journal entry, no intent, no seat row, no credit; N refused retries leave
// the tables as they were. And the read of a deposit agrees with its replay: a tournament entry
// refunded since reads `refunded` on GET /api/deposits/:key as the replayed POST answers.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { expectCleanAudit, setTableStatus } from '../helpers/cage.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { call, startMoneyPlatform } from '../helpers/money.ts';
import { SNG } from '../helpers/tournament.ts';

let db: TestDatabase;
let cagePool: pg.Pool;
let m: Awaited<ReturnType<typeof startMoneyPlatform>>;

beforeAll(async () => {
  db = await createTestDatabase();
  cagePool = db.pool('poker_cage');
  m = await startMoneyPlatform(db);
}, 60_000);
afterAll(async () => {
  await m?.platform.stop();
  if (cagePool) await expectCleanAudit(cagePool);
  await db?.drop();
});

const TRIES = 4;

/** Row counts of every table a deposit writes: the journal, the intents, the seats and their credits. */
async function written() {
  const { rows } = await db.owner.query(`select
      (select count(*)::int from cage.cage_entries) as entries,
      (select count(*)::int from cage.cage_ledger) as legs,
      (select count(*)::int from cage.deposit_intents) as intents,
      (select count(*)::int from cage.receipts) as receipts,
      (select count(*)::int from game.table_players) as positions,
      (select count(*)::int from game.seat_credits) as credits`);
  return rows[0] as Record<string, number>;
}

/** `refuse` sent TRIES times, each with a fresh key: the same coded refusal each time, and nothing written. */
async function refusedWritingNothing(refuse: () => Promise<{ status: number; body: { error?: string } }>, answer: { status: number; error: string }) {
  const before = await written();
  for (let i = 0; i < TRIES; i++) expect(await refuse()).toMatchObject({ status: answer.status, body: { error: answer.error } });
  expect(await written()).toEqual(before);
}

test('cash deposits refused before any write write nothing: a seat taken, already seated elsewhere, a frozen table, too low a balance', async () => {
  const host = await m.player();
  const tableId = await m.table(host.auth);
  const a = await m.player(1000);
  const b = await m.player(1000);
  expect((await m.deposit(a.auth, { tableId, seatIndex: 0, amount: 100 })).body).toMatchObject({ status: 'confirmed' });

  // another player's seat: the game would refuse the credit, so the cage refuses before its debit
  await refusedWritingNothing(() => m.deposit(b.auth, { tableId, seatIndex: 0, amount: 100 }), { status: 409, error: 'seat_taken' });
  // the same player at another seat of the table
  await refusedWritingNothing(() => m.deposit(a.auth, { tableId, seatIndex: 3, amount: 100 }), { status: 409, error: 'already_seated' });
  // a balance too low
  const poor = await m.player(10);
  await refusedWritingNothing(() => m.deposit(poor.auth, { tableId, seatIndex: 5, amount: 100 }), { status: 402, error: 'insufficient_cage_balance' });
  // a frozen table
  await setTableStatus(db.owner, tableId, 'frozen');
  await refusedWritingNothing(() => m.deposit(b.auth, { tableId, seatIndex: 1, amount: 100 }), { status: 409, error: 'table_frozen' });
  await setTableStatus(db.owner, tableId, 'active');

  expect(await m.balance(a.auth)).toBe(900);
  expect(await m.balance(b.auth)).toBe(1000);
  expect(await m.balance(poor.auth)).toBe(10);
  // and the refusals left the way open: b sits at a free seat
  expect((await m.deposit(b.auth, { tableId, seatIndex: 1, amount: 100 })).body).toMatchObject({ status: 'confirmed' });
  await expectCleanAudit(cagePool);
});

test('racing sits for one seat (real concurrent requests): one is seated, the others refused seat_taken with nothing written', async () => {
  const host = await m.player();
  const tableId = await m.table(host.auth);
  const racers = await Promise.all(Array.from({ length: 8 }, () => m.player(1000)));
  const before = await written();
  // issue 33: the buy-in and the seat's funding are one transaction (cage.deposit_to_seat), the
  // table locked first: a sit that loses the race is refused before any write, never debited and
  // compensated
  const answers = await Promise.all(racers.map((p) => m.deposit(p.auth, { tableId, seatIndex: 4, amount: 100 })));
  expect(answers.map((a) => `${a.status} ${a.body.status ?? a.body.error}`).sort()).toEqual(['200 confirmed', ...Array(7).fill('409 seat_taken')]);
  // one sit's rows: its entry and two legs, its intent, its position and its credit
  expect(await written()).toEqual({ ...before, entries: before.entries! + 1, legs: before.legs! + 2, intents: before.intents! + 1,
    positions: before.positions! + 1, credits: before.credits! + 1 });
  const balances = await Promise.all(racers.map((p) => m.balance(p.auth)));
  expect(balances.sort((x, y) => x - y)).toEqual([900, ...Array(7).fill(1000)]);
  await expectCleanAudit(cagePool);
});

test('a tournament entry refused 402 for want of balance writes nothing, however often it is retried', async () => {
  const host = await m.player();
  const tableId = await m.table(host.auth, SNG({ seats: 3 }));
  const poor = await m.player(50);
  await refusedWritingNothing(() => m.deposit(poor.auth, { tableId, amount: 100 }), { status: 402, error: 'insufficient_cage_balance' });
  const { rows } = await db.owner.query('select count(*)::int as n from game.table_players where table_id = $1', [tableId]);
  expect(rows[0].n).toBe(0);
  expect(await m.balance(poor.auth)).toBe(50);
  await expectCleanAudit(cagePool);
});

test('a tournament entry refunded since reads refunded on GET /api/deposits/:key, as its replayed POST answers', async () => {
  const host = await m.player();
  const tableId = await m.table(host.auth, SNG({ seats: 3 }));
  const a = await m.player(100);
  const key = `entry-${randomUUID()}`;
  const paid = await m.deposit(a.auth, { tableId, amount: 100 }, { 'idempotency-key': key });
  expect(paid.body).toMatchObject({ status: 'confirmed' });
  expect((await call(`${m.cage}/api/deposits/${key}`, { headers: a.auth })).body).toMatchObject({ status: 'confirmed', idempotencyKey: key });

  expect((await call(`${m.cage}/api/tournament/unregister`, { headers: a.auth, body: { tableId } })).body).toMatchObject({ status: 'refunded' });
  const replay = await m.deposit(a.auth, { tableId, amount: 100 }, { 'idempotency-key': key });
  expect(replay.body).toMatchObject({ status: 'refunded', replay: true });
  const read = await call(`${m.cage}/api/deposits/${key}`, { headers: a.auth });
  expect(read).toMatchObject({ status: 200, body: { status: 'refunded', idempotencyKey: key, tableId } });
  expect(await m.balance(a.auth)).toBe(100);
  await expectCleanAudit(cagePool);
});
