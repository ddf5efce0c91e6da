// Every refusal of the cage's money routes over real HTTP (spec: "Deposit (bank)", "Withdraw
// (bank)", "Cage", "Authentication", "Errors"): the exact status and `{ error }` body, and that
// nothing moved: balances read back through GET /api/cage/balances, seats through the game's room,
// and the cage audit clean at the end. Every answer seen in this file (the roles' calls to each
// other included) is recorded: none may be a 5xx other than the 501 not_yet_cage of pending routes.
import { randomBytes, randomUUID } from 'node:crypto';
import { base58 } from '@scure/base';
import { createTestDatabase, playerGrant, type TestDatabase } from '../helpers/db.ts';
import { expectCleanAudit, setTableStatus } from '../helpers/cage.ts';
import { satOutSince } from '../helpers/game.ts';
import { call, POKER_SETTINGS, startMoneyPlatform, type Answer } from '../helpers/money.ts';
import { TEST_SERVICE_KEY } from '../helpers/platform.ts';

type Money = Awaited<ReturnType<typeof startMoneyPlatform>>;
type Player = Awaited<ReturnType<Money['player']>>;

// Every HTTP answer of this file, the roles' calls to each other included (they share this global).
const answers: { method: string; url: string; status: number }[] = [];
const realFetch = globalThis.fetch;
globalThis.fetch = async (input, init) => {
  const res = await realFetch(input, init);
  const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
  answers.push({ method: init?.method ?? 'GET', url, status: res.status });
  return res;
};

let db: TestDatabase;
let m: Money;
beforeAll(async () => {
  db = await createTestDatabase();
  // REAL_MONEY_ENABLED only seeds the switch of a new database: off here, and an operator sets it
  m = await startMoneyPlatform(db, { env: { REAL_MONEY_ENABLED: 'false' } });
});
afterAll(async () => {
  await m?.platform.stop();
  await expectCleanAudit(db.pool('poker_cage'));
  await db.drop();
  globalThis.fetch = realFetch;
});

/** The operators' real_money switch, set by an operator over HTTP (recorded with them). */
const realMoney = async (enabled: boolean) => {
  const r = await call(`${m.cage}/api/operator/switches`, { headers: (await m.operator()).auth, body: { name: 'real_money', enabled } });
  if (r.status !== 200) throw new Error(`switch failed: ${r.status} ${JSON.stringify(r.body)}`);
};
const players = (...chips: number[]) => Promise.all(chips.map((c) => m.player(c)));
const refused = (status: number, error: string): Answer => ({ status, body: { error } });
const seats = async (tableId: string) => (await m.room(tableId)).body.seats as { seatIndex: number; userId: string; chipBalance: string }[];
const seat = (p: Player, seatIndex: number, chips: number) => ({ seatIndex, userId: p.userId, chipBalance: String(chips), status: 'seated' });
const sit = async (p: Player, tableId: string, seatIndex: number, amount: number) => {
  const r = await m.deposit(p.auth, { tableId, seatIndex, amount });
  if (r.status !== 200) throw new Error(`sit failed: ${r.status} ${JSON.stringify(r.body)}`);
};
const positions = async (tableId: string) =>
  Object.fromEntries((await db.owner.query<{ id: string; user_id: string }>(
    "select id::text, user_id from game.table_players where table_id = $1 and status <> 'closed'", [tableId],
  )).rows.map((r) => [r.user_id, r.id]));
const freeze = (tableId: string, status: 'frozen' | 'active') => setTableStatus(db.owner, tableId, status);
const forced = (tableId: string, userId: string, headers: Record<string, string> = m.service, extra: Record<string, unknown> = {}) =>
  m.withdraw(headers, { tableId, forced: true, userId, ...extra });

describe('deposit', () => {
  test('401 missing_bearer_token and invalid_token; nothing moves', async () => {
    const p = await m.player(500);
    const tableId = await m.table(p.auth);
    const body = { tableId, seatIndex: 0, amount: 100 };
    expect(await m.deposit({}, body)).toEqual(refused(401, 'missing_bearer_token'));
    for (const authorization of ['Bearer garbage', `Bearer ${p.jwt}x`, `Token ${p.jwt}`]) {
      expect(await m.deposit({ authorization }, body)).toEqual(refused(401, 'invalid_token'));
    }
    expect(await m.balance(p.auth)).toBe(500);
    expect(await seats(tableId)).toEqual([]);
  });

  test('400 missing_required_fields, missing_seat_index and bad_request; nothing moves', async () => {
    const p = await m.player(500);
    const tableId = await m.table(p.auth);
    expect(await m.deposit(p.auth, { seatIndex: 0, amount: 100 })).toEqual(refused(400, 'missing_required_fields'));
    expect(await m.deposit(p.auth, { tableId, seatIndex: 0 })).toEqual(refused(400, 'missing_required_fields'));
    expect(await m.deposit(p.auth, {})).toEqual(refused(400, 'missing_required_fields'));
    expect(await m.deposit(p.auth, { tableId, amount: 100 })).toEqual(refused(400, 'missing_seat_index'));
    expect(await m.deposit(p.auth, { tableId, amount: 100, seatIndex: null })).toEqual(refused(400, 'missing_seat_index'));

    const bad: [Record<string, unknown>, string][] = [
      [{ amount: 1.5 }, 'amount'], [{ amount: -5 }, 'amount'], [{ amount: 'abc' }, 'amount'], [{ amount: 0 }, 'amount'],
      [{ amount: '1.5' }, 'amount'], [{ amount: '-5' }, 'amount'], [{ amount: '' }, 'amount'], [{ amount: null }, 'amount'],
      [{ seatIndex: 12 }, 'seatIndex'], [{ seatIndex: -1 }, 'seatIndex'], [{ seatIndex: 1.5 }, 'seatIndex'], [{ seatIndex: '2' }, 'seatIndex'],
      [{ tableId: 42 }, 'tableId'], [{ idempotencyKey: 'has a space' }, 'idempotencyKey'], [{ idempotencyKey: 'k'.repeat(129) }, 'idempotencyKey'],
    ];
    for (const [change, field] of bad) {
      const r = await m.deposit(p.auth, { tableId, seatIndex: 0, amount: 100, ...change });
      expect([change, r.status, r.body.error]).toEqual([change, 400, 'bad_request']);
      expect(r.body.issues).toContainEqual(expect.objectContaining({ path: [field] }));
    }
    // the header key is checked the same way
    const r = await m.deposit(p.auth, { tableId, seatIndex: 0, amount: 100 }, { 'idempotency-key': 'with space' });
    expect(r.body).toMatchObject({ error: 'bad_request', issues: [expect.objectContaining({ path: ['idempotencyKey'] })] });
    expect(await m.balance(p.auth)).toBe(500);
    expect(await seats(tableId)).toEqual([]);
  });

  test('404 table_not_found', async () => {
    const p = await m.player(500);
    expect(await m.deposit(p.auth, { tableId: 'no-such-table', seatIndex: 0, amount: 100 })).toEqual(refused(404, 'table_not_found'));
    expect(await m.balance(p.auth)).toBe(500);
  });

  test('409 table_frozen for a sit and a top-up; a thawed table takes deposits again', async () => {
    const [a, b] = await players(500, 500) as [Player, Player];
    const tableId = await m.table(a.auth);
    await sit(a, tableId, 0, 100);
    await freeze(tableId, 'frozen');
    expect(await m.deposit(a.auth, { tableId, seatIndex: 0, amount: 50 })).toEqual(refused(409, 'table_frozen'));
    expect(await m.deposit(b.auth, { tableId, seatIndex: 1, amount: 100 })).toEqual(refused(409, 'table_frozen'));
    expect([await m.balance(a.auth), await m.balance(b.auth)]).toEqual([400, 500]);
    expect(await seats(tableId)).toEqual([seat(a, 0, 100)]);
    await freeze(tableId, 'active');
    expect((await m.deposit(b.auth, { tableId, seatIndex: 1, amount: 100 })).status).toBe(200);
    expect(await m.balance(b.auth)).toBe(400);
  });

  test('402 insufficient_cage_balance leaves no intent behind: the same key works once the chips are there', async () => {
    const [broke, p] = await players(0, 50) as [Player, Player];
    const tableId = await m.table(p.auth);
    expect(await m.deposit(broke.auth, { tableId, seatIndex: 0, amount: 40 })).toEqual(refused(402, 'insufficient_cage_balance'));
    const key = { 'idempotency-key': `k-${randomUUID()}` };
    expect(await m.deposit(p.auth, { tableId, seatIndex: 0, amount: 100 }, key)).toEqual(refused(402, 'insufficient_cage_balance'));
    expect([await m.balance(broke.auth), await m.balance(p.auth)]).toEqual([0, 50]);
    expect(await seats(tableId)).toEqual([]);
    await m.buy(p.userId, 50);
    const ok = await m.deposit(p.auth, { tableId, seatIndex: 0, amount: 100 }, key);
    expect(ok.status).toBe(200);
    expect(ok.body.replay).toBeUndefined();
    expect(await m.balance(p.auth)).toBe(0);
  });

  test('400 buy_in_out_of_range below minBuyIn, above maxBuyIn, and for a top-up above maxBuyIn', async () => {
    const p = await m.player(1000);
    const tableId = await m.table(p.auth); // minBuyIn 40, maxBuyIn 200
    expect(await m.deposit(p.auth, { tableId, seatIndex: 0, amount: 39 })).toEqual(refused(400, 'buy_in_out_of_range'));
    expect(await m.deposit(p.auth, { tableId, seatIndex: 0, amount: 201 })).toEqual(refused(400, 'buy_in_out_of_range'));
    expect(await seats(tableId)).toEqual([]);
    expect(await m.balance(p.auth)).toBe(1000);
    await sit(p, tableId, 0, 150);
    expect(await m.deposit(p.auth, { tableId, seatIndex: 0, amount: 51 })).toEqual(refused(400, 'buy_in_out_of_range'));
    expect(await m.balance(p.auth)).toBe(850);
    expect(await seats(tableId)).toEqual([seat(p, 0, 150)]);
    // a top-up below minBuyIn is fine, up to maxBuyIn exactly
    expect((await m.deposit(p.auth, { tableId, seatIndex: 0, amount: 50 })).status).toBe(200);
    expect(await m.balance(p.auth)).toBe(800);
    expect(await seats(tableId)).toEqual([seat(p, 0, 200)]);
  });

  test('409 seat_taken is refused before any write (issue 32): the balance untouched, no intent kept, the key judged again', async () => {
    const [a, b] = await players(500, 500) as [Player, Player];
    const tableId = await m.table(a.auth);
    await sit(a, tableId, 0, 100);
    const key = { 'idempotency-key': `k-${randomUUID()}` };
    expect(await m.deposit(b.auth, { tableId, seatIndex: 0, amount: 100 }, key)).toEqual(refused(409, 'seat_taken'));
    expect(await m.balance(b.auth)).toBe(500);
    expect(await seats(tableId)).toEqual([seat(a, 0, 100)]);
    const replay = await m.deposit(b.auth, { tableId, seatIndex: 0, amount: 100 }, key);
    expect(replay).toEqual(refused(409, 'seat_taken'));
    expect(await m.balance(b.auth)).toBe(500);
    const { rows } = await db.owner.query('select status, error from cage.deposit_intents where user_id = $1', [b.userId]);
    expect(rows).toEqual([]);
    await expectCleanAudit(db.pool('poker_cage'));
  });

  test('409 already_seated (same player, other seat) and 400 invalid_seat_index (beyond maxPlayers) move nothing', async () => {
    const a = await m.player(500);
    const tableId = await m.table(a.auth); // maxPlayers 6: seats 0..5
    await sit(a, tableId, 0, 100);
    expect(await m.deposit(a.auth, { tableId, seatIndex: 1, amount: 100 })).toEqual(refused(409, 'already_seated'));
    expect(await m.balance(a.auth)).toBe(400);
    const b = await m.player(500);
    expect(await m.deposit(b.auth, { tableId, seatIndex: 6, amount: 100 })).toEqual(refused(400, 'invalid_seat_index'));
    expect(await m.balance(b.auth)).toBe(500);
    expect(await seats(tableId)).toEqual([seat(a, 0, 100)]);
  });

  test('409 hand_in_progress for a sit and a top-up; nothing moves; the next boundary takes them', async () => {
    const [a, b, c] = await players(500, 500, 500) as [Player, Player, Player];
    const tableId = await m.table(a.auth);
    await sit(a, tableId, 0, 100);
    await sit(b, tableId, 1, 100);
    expect((await m.hand({ action: 'begin', tableId, handId: 'h1' })).status).toBe(200);
    expect(await m.deposit(c.auth, { tableId, seatIndex: 2, amount: 100 })).toEqual(refused(409, 'hand_in_progress'));
    expect(await m.deposit(a.auth, { tableId, seatIndex: 0, amount: 50 })).toEqual(refused(409, 'hand_in_progress'));
    expect([await m.balance(a.auth), await m.balance(b.auth), await m.balance(c.auth)]).toEqual([400, 400, 500]);
    const pos = await positions(tableId);
    expect((await m.hand({ action: 'finish', tableId, handId: 'h1', stacks: { [pos[a.userId]!]: 100, [pos[b.userId]!]: 100 } })).status).toBe(200);
    expect((await m.deposit(c.auth, { tableId, seatIndex: 2, amount: 100 })).status).toBe(200);
    expect(await m.balance(c.auth)).toBe(400);
  });

  test('403 real_money_disabled at a real table while real money is off; nothing moves', async () => {
    const p = await m.player(500);
    await realMoney(true);
    await m.buy(p.userId, 300, 'real');
    const tableId = await m.table(p.auth, POKER_SETTINGS, { moneyKind: 'real' });
    // a row made without the route is refused the same way
    const direct = `t-${randomUUID().slice(0, 12)}`;
    await db.owner.query("select game.create_table($1, 'poker', $2, 'real', $3)", [direct, JSON.stringify(POKER_SETTINGS), await playerGrant(db.owner, p.userId)]);
    await realMoney(false);
    expect(await m.deposit(p.auth, { tableId, seatIndex: 0, amount: 100 })).toEqual(refused(403, 'real_money_disabled'));
    expect([await m.balance(p.auth, 'play'), await m.balance(p.auth, 'real')]).toEqual([500, 300]);
    expect(await seats(tableId)).toEqual([]);
    expect(await m.deposit(p.auth, { tableId: direct, seatIndex: 0, amount: 100 })).toEqual(refused(403, 'real_money_disabled'));
    // ... and in SQL, whatever the route read: the cage login cannot open a real deposit either
    await expect(db.pool('poker_cage').query("select * from cage.open_deposit($1, 'k-direct', $2, 0, 100)", [await playerGrant(db.owner, p.userId), direct]))
      .rejects.toMatchObject({ code: 'CGRMD', message: 'real_money_disabled' });
    // switched on, the same deposit goes through in real chips; switched off, it still goes back out
    await realMoney(true);
    expect((await m.deposit(p.auth, { tableId, seatIndex: 0, amount: 100 })).status).toBe(200);
    await realMoney(false);
    expect([await m.balance(p.auth, 'play'), await m.balance(p.auth, 'real')]).toEqual([500, 200]);
    expect((await m.withdraw(p.auth, { tableId })).body).toMatchObject({ status: 'confirmed', amount: 100 });
    expect(await m.balance(p.auth, 'real')).toBe(300);
  });

  test('idempotency: the Idempotency-Key header or the body field replays once; another amount or seat is 409 idempotency_key_reused', async () => {
    const p = await m.player(1000);
    const tableId = await m.table(p.auth);
    const header = { 'idempotency-key': `k-${randomUUID()}` };
    const first = await m.deposit(p.auth, { tableId, seatIndex: 0, amount: 100 }, header);
    expect(first).toEqual({
      status: 200,
      body: { status: 'confirmed', txHash: expect.any(String), idempotencyKey: header['idempotency-key'], seatIndex: 0, chipBalance: '100' },
    });
    const again = await m.deposit(p.auth, { tableId, seatIndex: 0, amount: 100 }, header);
    expect(again).toEqual({
      status: 200,
      body: { status: 'confirmed', txHash: first.body.txHash, idempotencyKey: header['idempotency-key'], replay: true },
    });
    expect(await m.balance(p.auth)).toBe(900);
    expect(await m.deposit(p.auth, { tableId, seatIndex: 0, amount: 120 }, header)).toEqual(refused(409, 'idempotency_key_reused'));
    expect(await m.deposit(p.auth, { tableId, seatIndex: 1, amount: 100 }, header)).toEqual(refused(409, 'idempotency_key_reused'));
    expect(await m.balance(p.auth)).toBe(900);
    expect(await seats(tableId)).toEqual([seat(p, 0, 100)]);

    const bodyKey = `b-${randomUUID()}`;
    const topUp = await m.deposit(p.auth, { tableId, seatIndex: 0, amount: 50, idempotencyKey: bodyKey });
    expect(topUp.body).toMatchObject({ status: 'confirmed', idempotencyKey: bodyKey, chipBalance: '150' });
    const topUpAgain = await m.deposit(p.auth, { tableId, seatIndex: 0, amount: 50, idempotencyKey: bodyKey });
    expect(topUpAgain.body).toEqual({ status: 'confirmed', txHash: topUp.body.txHash, idempotencyKey: bodyKey, replay: true });
    expect(await m.deposit(p.auth, { tableId, seatIndex: 0, amount: 40, idempotencyKey: bodyKey })).toEqual(refused(409, 'idempotency_key_reused'));
    // the header and the body field name the same key
    expect((await m.deposit(p.auth, { tableId, seatIndex: 0, amount: 50 }, { 'idempotency-key': bodyKey })).body).toMatchObject({ replay: true });
    expect(await m.balance(p.auth)).toBe(850);
    expect(await seats(tableId)).toEqual([seat(p, 0, 150)]);

    // a key is the user's own: another player's same key is a new deposit
    const q = await m.player(500);
    const theirs = await m.deposit(q.auth, { tableId, seatIndex: 1, amount: 100 }, header);
    expect(theirs.status).toBe(200);
    expect(theirs.body.replay).toBeUndefined();
    expect(await m.balance(q.auth)).toBe(400);
  });
});

describe('withdraw', () => {
  test('400 missing_table_id, 404 table_not_found, 404 not_at_table; nothing moves', async () => {
    const [p, other] = await players(500, 500) as [Player, Player];
    const tableId = await m.table(p.auth);
    await sit(p, tableId, 0, 100);
    expect(await m.withdraw(p.auth, {})).toEqual(refused(400, 'missing_table_id'));
    expect(await m.withdraw(p.auth, { tableId: '' })).toEqual(refused(400, 'missing_table_id'));
    expect(await m.withdraw(p.auth, { tableId: 'no-such-table' })).toEqual(refused(404, 'table_not_found'));
    expect(await m.withdraw(other.auth, { tableId })).toEqual(refused(404, 'not_at_table'));
    expect(await forced(tableId, other.userId)).toEqual(refused(404, 'not_at_table'));
    expect(await m.withdraw({}, { tableId })).toEqual(refused(401, 'missing_bearer_token'));
    expect(await m.withdraw({ authorization: 'Bearer x.y.z' }, { tableId })).toEqual(refused(401, 'invalid_token'));
    expect([await m.balance(p.auth), await m.balance(other.auth)]).toEqual([400, 500]);
    expect(await seats(tableId)).toEqual([seat(p, 0, 100)]);
  });

  test('409 table_frozen, voluntary and forced; the seat stays until the table thaws', async () => {
    const p = await m.player(500);
    const tableId = await m.table(p.auth);
    await sit(p, tableId, 0, 100);
    await freeze(tableId, 'frozen');
    expect(await m.withdraw(p.auth, { tableId })).toEqual(refused(409, 'table_frozen'));
    expect(await forced(tableId, p.userId)).toEqual(refused(409, 'table_frozen'));
    expect(await m.balance(p.auth)).toBe(400);
    expect(await seats(tableId)).toEqual([seat(p, 0, 100)]);
    await freeze(tableId, 'active');
    expect((await m.withdraw(p.auth, { tableId })).body).toMatchObject({ status: 'confirmed', amount: 100 });
    expect(await m.balance(p.auth)).toBe(500);
  });

  test('forced: 401 forced_withdraw_requires_service_key without, with a wrong or a short key; 400 bad_request for a bad forced or userId', async () => {
    const p = await m.player(500);
    const tableId = await m.table(p.auth);
    await sit(p, tableId, 0, 100);
    for (const headers of [{}, { 'x-service-key': `${TEST_SERVICE_KEY}x` }, { 'x-service-key': 'short' }, { 'x-service-key': '' }, p.auth] as Record<string, string>[]) {
      expect([headers, await forced(tableId, p.userId, headers)]).toEqual([headers, refused(401, 'forced_withdraw_requires_service_key')]);
    }
    // a bad forced flag without the key is the key's refusal first
    expect(await m.withdraw({}, { tableId, forced: 'yes', userId: p.userId })).toEqual(refused(401, 'forced_withdraw_requires_service_key'));

    for (const body of [
      { tableId, forced: 'yes', userId: p.userId },
      { tableId, forced: 1, userId: p.userId },
      { tableId, forced: true },
      { tableId, forced: true, userId: 'not-a-uuid' },
    ]) {
      const r = await m.withdraw(m.service, body);
      expect([body, r.status, r.body.error]).toEqual([body, 400, 'bad_request']);
    }
    // forced:false is the voluntary branch: it needs the player's JWT, not the key
    expect(await m.withdraw(m.service, { tableId, forced: false, userId: p.userId })).toEqual(refused(401, 'missing_bearer_token'));
    expect(await m.balance(p.auth)).toBe(400);
    expect(await seats(tableId)).toEqual([seat(p, 0, 100)]);
    const { rows } = await db.owner.query('select count(*)::int as n from cage.custody_entries where user_id = $1', [p.userId]);
    expect(rows[0].n).toBe(0);
  });

  test('409 hand_in_progress, voluntary and forced; the stack is untouched', async () => {
    const [a, b] = await players(500, 500) as [Player, Player];
    const tableId = await m.table(a.auth);
    await sit(a, tableId, 0, 100);
    await sit(b, tableId, 1, 100);
    await satOutSince(db.owner, tableId, b.userId);
    await m.hand({ action: 'begin', tableId, handId: 'h1' });
    expect(await m.withdraw(a.auth, { tableId })).toEqual(refused(409, 'hand_in_progress'));
    expect(await forced(tableId, b.userId)).toEqual(refused(409, 'hand_in_progress'));
    expect([await m.balance(a.auth), await m.balance(b.auth)]).toEqual([400, 400]);
    expect(await seats(tableId)).toEqual([seat(a, 0, 100), seat(b, 1, 100)]);
    const pos = await positions(tableId);
    await m.hand({ action: 'finish', tableId, handId: 'h1', stacks: { [pos[a.userId]!]: 100, [pos[b.userId]!]: 100 } });
    expect((await m.withdraw(a.auth, { tableId })).body).toMatchObject({ amount: 100 });
  });

  test('a payoutIntent is the service key\'s alone: a JWT is 401 payout_requires_service_key, a cash table 400 not_a_tournament; nothing moves', async () => {
    const p = await m.player(500);
    const tableId = await m.table(p.auth);
    await sit(p, tableId, 0, 100);
    expect(await m.withdraw(p.auth, { tableId, payoutIntent: { position: 1, amount: 100 } }))
      .toEqual({ status: 401, body: { error: 'payout_requires_service_key' } });
    expect(await m.withdraw(m.service, { tableId, payoutIntent: { position: 1, amount: 100 } })).toEqual({ status: 400, body: { error: 'not_a_tournament' } });
    expect((await m.withdraw(m.service, { tableId, payoutIntent: { position: 0, amount: -1 } })).body.error).toBe('bad_request');
    expect(await m.balance(p.auth)).toBe(400);
    expect(await seats(tableId)).toEqual([seat(p, 0, 100)]);
  });

  test('after a bust the seat is closed: 404 not_at_table, voluntary and forced', async () => {
    const [a, b] = await players(500, 500) as [Player, Player];
    const tableId = await m.table(a.auth);
    await sit(a, tableId, 0, 100);
    await sit(b, tableId, 1, 100);
    const pos = await positions(tableId);
    await m.hand({ action: 'begin', tableId, handId: 'h1' });
    const end = await m.hand({ action: 'finish', tableId, handId: 'h1', stacks: { [pos[a.userId]!]: 200, [pos[b.userId]!]: 0 } });
    expect(end.body.busted).toEqual([{ playerId: pos[b.userId], userId: b.userId }]);
    expect(await m.withdraw(b.auth, { tableId })).toEqual(refused(404, 'not_at_table'));
    expect(await forced(tableId, b.userId)).toEqual(refused(404, 'not_at_table'));
    expect([await m.balance(a.auth), await m.balance(b.auth)]).toEqual([400, 400]);
    expect(await seats(tableId)).toEqual([seat(a, 0, 200)]);
    expect((await m.withdraw(a.auth, { tableId })).body).toMatchObject({ amount: 200 });
    expect(await m.balance(a.auth)).toBe(600);
  });

  test('there is no bust report to forge: /internal/bust is gone from the cage (a hand\'s end closes a bust), a seated stack stays seated', async () => {
    const p = (await players(500))[0] as Player;
    const tableId = await m.table(p.auth);
    await sit(p, tableId, 0, 100);
    const r = await call(`${m.cage}/internal/bust`, { headers: m.service, body: { tableId, userId: p.userId } });
    expect(r.status).toBe(404);
    expect(await seats(tableId)).toEqual([seat(p, 0, 100)]);
    expect((await m.deposit(p.auth, { tableId, seatIndex: 0, amount: 20 })).status).toBe(200);
  });

  test('a withdraw after a bust does not replay an earlier cash-out at that table', async () => {
    const [a, b] = await players(500, 500) as [Player, Player];
    const tableId = await m.table(a.auth);
    await sit(b, tableId, 1, 100);
    expect((await m.withdraw(b.auth, { tableId })).status).toBe(200);
    await sit(a, tableId, 0, 100);
    await sit(b, tableId, 1, 50);
    const pos = await positions(tableId);
    await m.hand({ action: 'begin', tableId, handId: 'h2' });
    await m.hand({ action: 'finish', tableId, handId: 'h2', stacks: { [pos[a.userId]!]: 150, [pos[b.userId]!]: 0 } });
    expect(await m.withdraw(b.auth, { tableId })).toEqual(refused(404, 'not_at_table'));
    expect(await m.balance(b.auth)).toBe(450);
  });
});

describe('grant', () => {
  const newClaimId = () => `0x${randomBytes(32).toString('hex')}`;
  let periods = 0;
  const openIntent = (claimId: string, userId: string, amount: number, recipient: string) => db.owner.query(
    "insert into claims.claim_intents (claim_id, user_id, section_key, period, amount, kind, recipient) values ($1, $2, 'weekly_baseline', $3, $4, 'baseline', $5)",
    [claimId, userId, `test-${++periods}`, amount, recipient],
  );
  const grant = (body: Record<string, unknown>, headers: Record<string, string> = m.service) => call(`${m.cage}/api/grant`, { headers, body });
  const solanaAddress = () => base58.encode(randomBytes(32));

  test('to a linked Solana wallet: 200 and the play balance grows; the same claimId replays once; every refusal mints nothing', async () => {
    const p = await m.player();
    const recipient = solanaAddress();
    await db.owner.query("select * from auth.link_wallet($1, $2, 'solana', 0)", [p.userId, recipient]);
    // a grant pays an open claim (claims.open_claim opens one; here the owner writes it): no claim, no grant
    const claimId = newClaimId();
    expect(await grant({ recipient, amount: 500, claimId })).toEqual(refused(409, 'grant_not_backed'));
    await openIntent(claimId, p.userId, 500, recipient);
    expect(await grant({ recipient, amount: 499, claimId })).toEqual(refused(409, 'grant_not_backed'));
    expect(await grant({ recipient, amount: 500, claimId, sectionKey: 'weekly_baseline', period: 'other' })).toEqual(refused(409, 'grant_not_backed'));
    expect(await grant({ recipient, amount: 500, claimId })).toEqual({ status: 200, body: { ok: true, claimId, userId: p.userId, amount: 500, txHash: claimId } });
    expect(await m.balance(p.auth)).toBe(500);
    expect(await grant({ recipient, amount: 500, claimId })).toEqual({ status: 200, body: { ok: true, idempotent: true, claimId, amount: 500, txHash: claimId } });
    expect(await m.balance(p.auth)).toBe(500);
    // refused, with the original grant shown (so a claim retried after a lost answer recognises it)
    const original = { userId: p.userId, recipient, amount: 500, txHash: claimId };
    expect(await grant({ recipient, amount: 600, claimId })).toEqual({ status: 409, body: { error: 'ref_id_conflict', original } });
    // the same claim id for another (linked) recipient is a conflict, not a silent replay
    const other = await m.player();
    const otherWallet = solanaAddress();
    await db.owner.query("select * from auth.link_wallet($1, $2, 'solana', 0)", [other.userId, otherWallet]);
    expect(await grant({ recipient: otherWallet, amount: 500, claimId })).toEqual({ status: 409, body: { error: 'ref_id_conflict', original } });
    expect(await m.balance(other.auth)).toBe(0);
    // an open claim of another user: its claim id does not pay this recipient
    const otherClaim = newClaimId();
    await openIntent(otherClaim, other.userId, 500, otherWallet);
    expect(await grant({ recipient, amount: 500, claimId: otherClaim })).toEqual(refused(409, 'grant_not_backed'));

    expect(await grant({ recipient: solanaAddress(), amount: 500, claimId: newClaimId() })).toEqual(refused(404, 'recipient_not_found'));
    for (const amount of [0, -1, 1.5, 'x', '1.5', '', null, 2 ** 53]) {
      expect([amount, await grant({ recipient, amount, claimId: `claim-${randomUUID()}` })]).toEqual([amount, refused(400, 'invalid_amount')]);
    }
    for (const headers of [{}, { 'x-service-key': 'wrong-key-0123456789abcdef' }, p.auth] as Record<string, string>[]) {
      expect(await grant({ recipient, amount: 500, claimId: `claim-${randomUUID()}` }, headers)).toEqual(refused(401, 'invalid_service_key'));
    }
    for (const body of [{ recipient, amount: 500 }, { amount: 500, claimId: `claim-${randomUUID()}` }, { recipient, amount: 500, claimId: '' }, { recipient, claimId: `claim-${randomUUID()}` }]) {
      const r = await grant(body);
      expect([body, r.status, r.body.error]).toEqual([body, 400, 'bad_request']);
    }
    expect(await m.balance(p.auth)).toBe(500);
    const { rows } = await db.owner.query("select count(*)::int as n from cage.cage_entries where kind = 'grant'");
    expect(rows[0].n).toBe(1);
  });
});

describe('operator purchase and redemption', () => {
  // an operator's own credential (the admin access JWT), never the service key
  const op = async (money: Money, direction: 'purchase' | 'redemption', body: Record<string, unknown>, headers?: Record<string, string>) =>
    call(`${money.cage}/api/operator/${direction}`, { headers: headers ?? (await money.operator()).auth, body });

  test('play and real purchases, replays by externalRef; real purchases refused while switched off but real redemptions allowed', async () => {
    const p = await m.player();
    const ref = `pay-${randomUUID()}`;
    const play = await op(m, 'purchase', { userId: p.userId, amount: 200, externalRef: ref, moneyKind: 'play' });
    expect(play).toEqual({
      status: 200, body: { ok: true, refId: `purchase:${ref}`, userId: p.userId, amount: 200, moneyKind: 'play', balance: 200 },
    });
    const replay = await op(m, 'purchase', { userId: p.userId, amount: 200, externalRef: ref, moneyKind: 'play' });
    expect(replay).toEqual({ status: 200, body: { ...play.body, idempotent: true } });
    expect(await op(m, 'purchase', { userId: p.userId, amount: 300, externalRef: ref, moneyKind: 'play' })).toEqual(refused(409, 'ref_id_conflict'));
    expect(await m.balance(p.auth)).toBe(200);

    // real is the default kind; off by default
    expect(await op(m, 'purchase', { userId: p.userId, amount: 300, externalRef: `pay-${randomUUID()}` })).toEqual(refused(403, 'real_money_disabled'));
    expect(await op(m, 'purchase', { userId: p.userId, amount: 300, externalRef: `pay-${randomUUID()}`, moneyKind: 'real' }))
      .toEqual(refused(403, 'real_money_disabled'));
    expect(await m.balance(p.auth, 'real')).toBe(0);
    const realRef = `pay-${randomUUID()}`;
    await realMoney(true);
    const bought = await op(m, 'purchase', { userId: p.userId, amount: 300, externalRef: realRef });
    expect(bought.body).toMatchObject({ ok: true, moneyKind: 'real', amount: 300, balance: 300 });
    await realMoney(false);
    // a replay answers what was done, switched off or not
    expect((await op(m, 'purchase', { userId: p.userId, amount: 300, externalRef: realRef })).body).toMatchObject({ idempotent: true, balance: 300 });
    expect(await m.balance(p.auth, 'real')).toBe(300);

    // switched off, real chips may still leave
    const outRef = `out-${randomUUID()}`;
    const redeemed = await op(m, 'redemption', { userId: p.userId, amount: 120, externalRef: outRef, moneyKind: 'real' });
    expect(redeemed).toEqual({
      status: 200, body: { ok: true, refId: `redemption:${outRef}`, userId: p.userId, amount: 120, moneyKind: 'real', balance: 180 },
    });
    expect((await op(m, 'redemption', { userId: p.userId, amount: 120, externalRef: outRef, moneyKind: 'real' })).body)
      .toMatchObject({ idempotent: true, balance: 180 });
    expect(await m.balance(p.auth, 'real')).toBe(180);
    expect(await m.balance(p.auth, 'play')).toBe(200);
  });

  test('402 insufficient_cage_balance beyond the balance, 404 user_not_found, 400 bad_request and invalid_amount, 401/403 without an operator credential', async () => {
    const p = await m.player(100);
    const ext = () => `x-${randomUUID()}`;
    expect(await op(m, 'redemption', { userId: p.userId, amount: 101, externalRef: ext(), moneyKind: 'play' })).toEqual(refused(402, 'insufficient_cage_balance'));
    expect(await op(m, 'redemption', { userId: p.userId, amount: 1, externalRef: ext(), moneyKind: 'real' })).toEqual(refused(402, 'insufficient_cage_balance'));
    for (const direction of ['purchase', 'redemption'] as const) {
      expect(await op(m, direction, { userId: randomUUID(), amount: 10, externalRef: ext(), moneyKind: 'play' })).toEqual(refused(404, 'user_not_found'));
    }
    for (const body of [
      { amount: 10, externalRef: ext(), moneyKind: 'play' },
      { userId: 'not-a-uuid', amount: 10, externalRef: ext(), moneyKind: 'play' },
      { userId: p.userId, amount: 10, moneyKind: 'play' },
      { userId: p.userId, amount: 10, externalRef: 'has space', moneyKind: 'play' },
      { userId: p.userId, amount: 10, externalRef: ext(), moneyKind: 'gold' },
    ]) {
      for (const direction of ['purchase', 'redemption'] as const) {
        const r = await op(m, direction, body);
        expect([direction, body, r.status, r.body.error]).toEqual([direction, body, 400, 'bad_request']);
      }
    }
    for (const amount of [0, -1, 1.5, 'x']) {
      expect(await op(m, 'purchase', { userId: p.userId, amount, externalRef: ext(), moneyKind: 'play' })).toEqual(refused(400, 'invalid_amount'));
    }
    // the service key does not mint real chips; a player's JWT is not an operator's
    for (const [headers, status, code] of [
      [{}, 401, 'missing_bearer_token'], [m.service, 401, 'missing_bearer_token'],
      [{ authorization: 'Bearer not.a.jwt' }, 401, 'invalid_token'], [p.auth, 403, 'admin_required'],
    ] as [Record<string, string>, number, string][]) {
      for (const direction of ['purchase', 'redemption'] as const) {
        expect(await op(m, direction, { userId: p.userId, amount: 10, externalRef: ext(), moneyKind: 'play' }, headers)).toEqual(refused(status, code));
      }
    }
    expect([await m.balance(p.auth, 'play'), await m.balance(p.auth, 'real')]).toEqual([100, 0]);
  });
});

describe('custody claim', () => {
  const claim = (headers: Record<string, string>, body: Record<string, unknown>) => call(`${m.cage}/api/custody/claim`, { headers, body });

  test("404 custody_entry_not_found for another user's entry and for an unknown id; nothing moves", async () => {
    const [owner, thief] = await players(300, 0) as [Player, Player];
    const tableId = await m.table(owner.auth);
    await sit(owner, tableId, 0, 120);
    expect(await forced(tableId, owner.userId)).toEqual(refused(409, 'player_not_idle'));
    await satOutSince(db.owner, tableId, owner.userId);
    const kicked = await forced(tableId, owner.userId);
    expect(kicked.status).toBe(200);
    const entryId = kicked.body.custodyEntryId as string;
    expect(await claim(thief.auth, { entryId })).toEqual(refused(404, 'custody_entry_not_found'));
    expect(await claim(thief.auth, { entryId: Number(entryId) })).toEqual(refused(404, 'custody_entry_not_found'));
    expect(await claim(owner.auth, { entryId: '987654321' })).toEqual(refused(404, 'custody_entry_not_found'));
    for (const body of [{}, { entryId: 'abc' }, { entryId: 0 }, { entryId: -1 }]) {
      const r = await claim(owner.auth, body);
      expect([body, r.status, r.body.error]).toEqual([body, 400, 'bad_request']);
    }
    expect(await claim({}, { entryId })).toEqual(refused(401, 'missing_bearer_token'));
    expect([await m.balance(owner.auth), await m.balance(thief.auth)]).toEqual([180, 0]);
    const { rows } = await db.owner.query('select status from cage.custody_entries where id = $1', [entryId]);
    expect(rows).toEqual([{ status: 'free' }]);
    expect((await claim(owner.auth, { entryId })).body).toMatchObject({ ok: true, amount: 120 });
    expect(await m.balance(owner.auth)).toBe(300);
  });
});

describe('pending routes', () => {
  test.each([
    ['post', '/settlement/settle', 'settlement'],
    ['post', '/api/operator/seat', 'operator-seating'],
    ['post', '/api/house/seat', 'house-seating'],
  ])('%s %s: 501 not_yet_cage, phase %s', async (method, path, phase) => {
    const res = await call(`${m.cage}${path}`, method === 'post' ? { body: {} } : {});
    expect(res).toEqual({ status: 501, body: { error: 'not_yet_cage', phase } });
  });

  test('at a tournament table: a deposit is the entry fee (no cash buy-in); a withdraw, voluntary or forced, is refused; nothing moves', async () => {
    const p = await m.player(500);
    const tableId = await m.table(p.auth, {
      mode: 'sng', seats: 2, entryFee: 100, startingStack: 1000, actionTimeoutSeconds: 3,
      blindStructure: { startingSmallBlind: 10, increaseFactor: 2, levelDurationSeconds: 60, anteStartLevel: null, startingAnte: 0, anteIncreaseFactor: 1 },
    });
    expect(await m.deposit(p.auth, { tableId, seatIndex: 0, amount: 50 })).toEqual({ status: 400, body: { error: 'tournament_entry_fee_mismatch' } });
    const refused = { status: 409, body: { error: 'stand_up_not_allowed_in_tournament' } };
    expect(await m.withdraw(p.auth, { tableId })).toEqual(refused);
    expect(await forced(tableId, p.userId)).toEqual(refused);
    expect(await m.balance(p.auth)).toBe(500);
    expect((await m.deposit(p.auth, { tableId, amount: 100 })).status).toBe(200);
    expect(await m.withdraw(p.auth, { tableId })).toEqual(refused);
    expect(await m.balance(p.auth)).toBe(400);
    // the refund path while it registers
    expect((await call(`${m.cage}/api/tournament/unregister`, { headers: p.auth, body: { tableId } })).body).toMatchObject({ status: 'refunded', amount: '100' });
    expect(await m.balance(p.auth)).toBe(500);
  });
});

describe('the HTTP envelope', () => {
  test('malformed JSON: 400 malformed_json on every money route, before any authentication', async () => {
    const p = await m.player();
    for (const [path, headers] of [
      ['/api/deposit', p.auth], ['/api/deposit', {}], ['/api/withdraw', p.auth], ['/api/withdraw', m.service], ['/api/tables', p.auth],
      ['/api/grant', m.service], ['/api/operator/purchase', m.service], ['/api/operator/redemption', m.service], ['/api/custody/claim', p.auth],
    ] as const) {
      const res = await fetch(`${m.cage}${path}`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: '{"tableId":' });
      expect([path, res.status, await res.json()]).toEqual([path, 400, { error: 'malformed_json' }]);
    }
  });

  test('CORS: a preflight from the poker UI origin is 204 with allow-origin; from another origin 403 without it', async () => {
    const cors = await startMoneyPlatform(db, { env: { POKER_UI_ORIGINS: 'https://poker.test' } });
    try {
      const preflight = (origin: string, base = cors.cage, path = '/api/deposit') => fetch(`${base}${path}`, {
        method: 'OPTIONS',
        headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
      });
      const ok = await preflight('https://poker.test');
      expect(ok.status).toBe(204);
      expect(ok.headers.get('access-control-allow-origin')).toBe('https://poker.test');
      expect(ok.headers.get('access-control-allow-methods')).toContain('POST');
      expect(ok.headers.get('access-control-allow-headers')).toContain('authorization');
      expect(ok.headers.get('vary')).toContain('Origin');
      for (const path of ['/api/withdraw', '/api/tables', '/api/cage/balances', '/api/custody/claim']) {
        const r = await preflight('https://poker.test', cors.cage, path);
        expect([path, r.status, r.headers.get('access-control-allow-origin')]).toEqual([path, 204, 'https://poker.test']);
      }
      for (const origin of ['https://evil.test', 'http://poker.test', 'https://poker.test.evil.test']) {
        const bad = await preflight(origin);
        expect([origin, bad.status, bad.headers.get('access-control-allow-origin'), await bad.json()]).toEqual([origin, 403, null, { error: 'origin_not_allowed' }]);
      }
      // no Origin at all: a coded JSON refusal too, on every browser route
      for (const path of ['/api/deposit', '/api/withdraw', '/api/tables', '/api/cage/balances', '/api/custody/claim', '/api/tournament/unregister']) {
        const r = await fetch(`${cors.cage}${path}`, { method: 'OPTIONS' });
        expect([path, r.status, r.headers.get('content-type')?.startsWith('application/json'), await r.json()]).toEqual([path, 403, true, { error: 'origin_required' }]);
      }
      // where no UI origin is configured, no origin is allowed
      const none = await preflight('https://poker.test', m.cage);
      expect([none.status, none.headers.get('access-control-allow-origin')]).toEqual([403, null]);

      // an actual call from the UI origin carries the header; from another origin it does not
      const p = await cors.player(100);
      const fromUi = await fetch(`${cors.cage}/api/cage/balances`, { headers: { ...p.auth, origin: 'https://poker.test' } });
      expect([fromUi.status, fromUi.headers.get('access-control-allow-origin')]).toEqual([200, 'https://poker.test']);
      const fromElsewhere = await fetch(`${cors.cage}/api/cage/balances`, { headers: { ...p.auth, origin: 'https://evil.test' } });
      expect(fromElsewhere.headers.get('access-control-allow-origin')).toBeNull();
      await fromElsewhere.text();
    } finally {
      await cors.platform.stop();
    }
  });
});

test('no answer in this file was a 5xx other than the 501 not_yet_cage of pending routes', () => {
  expect(answers.length).toBeGreaterThan(100);
  expect(answers.filter((a) => a.status >= 500 && a.status !== 501)).toEqual([]);
});
