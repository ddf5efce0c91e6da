// Trust boundaries over HTTP (issue 11): a retried deposit never buys in twice and its fate can be
// read; the service key cannot fund a seat or close one without the cage's step behind it; the
// routes that mint real chips or correct the books take an operator's own credential.
import { randomBytes, randomUUID } from 'node:crypto';
import { expectCleanAudit } from '../helpers/cage.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { call, startMoneyPlatform } from '../helpers/money.ts';

let db: TestDatabase;
let m: Awaited<ReturnType<typeof startMoneyPlatform>>;

beforeAll(async () => {
  db = await createTestDatabase();
  m = await startMoneyPlatform(db);
});
afterAll(async () => {
  await m?.platform.stop();
  await expectCleanAudit(db.pool('poker_cage', 1));
  await db?.drop();
});

const intents = async (userId: string) =>
  (await db.owner.query('select idempotency_key, status, amount from cage.deposit_intents where user_id = $1 order by created_at', [userId])).rows;

describe('POST /api/deposit needs an idempotency key', () => {
  test('none of header, body key or permit: 400 missing_idempotency_key, nothing debited', async () => {
    const p = await m.player(500);
    const tableId = await m.table(p.auth);
    const r = await call(`${m.cage}/api/deposit`, { headers: p.auth, body: { tableId, seatIndex: 0, amount: 100 } });
    expect(r).toEqual({ status: 400, body: { error: 'missing_idempotency_key' } });
    expect(await m.balance(p.auth)).toBe(500);
    expect(await intents(p.userId)).toEqual([]);
  });

  test('a retried request with the same key buys in once; its fate is readable by its owner only', async () => {
    const p = await m.player(500);
    const other = await m.player(0);
    const tableId = await m.table(p.auth);
    const key = `retry-${randomUUID()}`;
    const first = await m.deposit(p.auth, { tableId, seatIndex: 1, amount: 100 }, { 'idempotency-key': key });
    const again = await m.deposit(p.auth, { tableId, seatIndex: 1, amount: 100, idempotencyKey: key });
    expect(first.body).toMatchObject({ status: 'confirmed', idempotencyKey: key });
    expect(again.body).toMatchObject({ status: 'confirmed', idempotencyKey: key, replay: true });
    expect(await m.balance(p.auth)).toBe(400);

    const fate = await call(`${m.cage}/api/deposits/${encodeURIComponent(key)}`, { headers: p.auth });
    expect(fate).toMatchObject({ status: 200, body: { idempotencyKey: key, status: 'confirmed', tableId, seatIndex: 1, amount: '100', txHash: first.body.txHash } });
    expect(await call(`${m.cage}/api/deposits/${encodeURIComponent(key)}`, { headers: other.auth })).toEqual({ status: 404, body: { error: 'deposit_not_found' } });
    expect(await call(`${m.cage}/api/deposits/never-used`, { headers: p.auth })).toEqual({ status: 404, body: { error: 'deposit_not_found' } });
    expect((await call(`${m.cage}/api/deposits/${encodeURIComponent(key)}`)).status).toBe(401);
    expect(await call(`${m.cage}/api/deposits/${'k'.repeat(129)}`, { headers: p.auth })).toMatchObject({ status: 400, body: { error: 'bad_request' } });
  });

  test("a chain-bank client's permit is its key: the same permit twice is one deposit", async () => {
    const p = await m.player(500);
    const tableId = await m.table(p.auth);
    const permit = { v: 27, r: `0x${randomBytes(32).toString('hex')}`, s: `0x${randomBytes(32).toString('hex')}`, deadline: '1900000000' };
    const signerAddress = `0x${randomBytes(20).toString('hex')}`;
    const body = { tableId, seatIndex: 3, amount: '80', permit, signerAddress };
    const first = await call(`${m.cage}/api/deposit`, { headers: p.auth, body });
    expect(first.body).toMatchObject({ status: 'confirmed' });
    expect(first.body.idempotencyKey).toMatch(/^0x[0-9a-f]{64}$/);
    // the same permit, with the hex in upper case and the deadline as a number: the same key
    const twin = { ...body, permit: { ...permit, r: permit.r.toUpperCase().replace('0X', '0x'), deadline: 1900000000 }, signerAddress: signerAddress.toUpperCase().replace('0X', '0x') };
    const again = await call(`${m.cage}/api/deposit`, { headers: p.auth, body: twin });
    expect(again.body).toMatchObject({ status: 'confirmed', idempotencyKey: first.body.idempotencyKey, replay: true });
    expect(await m.balance(p.auth)).toBe(420);
    for (const bad of [{ ...body, permit: { ...permit, r: '0x12' } }, { ...body, signerAddress: 'nope' }, { ...body, permit: 'x' }, { tableId, seatIndex: 3, amount: 80, signerAddress }]) {
      const r = await call(`${m.cage}/api/deposit`, { headers: p.auth, body: bad });
      expect([r.status, r.body.error]).toEqual([400, 'bad_request']);
    }
    expect(await m.balance(p.auth)).toBe(420);
  });
});

describe('the service key alone moves no chip', () => {
  test('credit-chips without a live deposit is 409 credit_not_backed; no stand-up names a player it cannot prove; a seat not leaving is not settled', async () => {
    const victim = await m.player(500);
    const thief = await m.player(0);
    const tableId = await m.table(victim.auth);
    expect((await m.deposit(victim.auth, { tableId, seatIndex: 0, amount: 200 })).status).toBe(200);
    const credit = await call(`${m.game}/internal/credit-chips`, {
      headers: m.service, body: { creditKey: `forged-${randomUUID()}`, tableId, userId: thief.userId, seatIndex: 1, amount: 200 },
    });
    expect(credit).toEqual({ status: 409, body: { error: 'credit_not_backed' } });

    // the service key names no player it cannot prove: a user id is not a grant; a player dealt in is
    // not idle; a stack is not a bust
    const standUp = (body: Record<string, unknown>) => call(`${m.game}/internal/stand-up`, { headers: m.service, body: { tableId, ...body } });
    expect((await standUp({ userId: victim.userId })).status).toBe(400);
    expect(await standUp({ sid: victim.userId })).toEqual({ status: 401, body: { error: 'session_required' } });
    expect(await standUp({ sid: randomUUID() })).toEqual({ status: 401, body: { error: 'session_required' } });
    expect(await standUp({ userId: victim.userId, reason: 'idle' })).toEqual({ status: 409, body: { error: 'player_not_idle' } });
    expect(await standUp({ userId: victim.userId, reason: 'bust' })).toEqual({ status: 409, body: { error: 'not_busted' } });
    expect(await m.withdraw(m.service, { tableId, forced: true, userId: victim.userId })).toEqual({ status: 409, body: { error: 'player_not_idle' } });
    const { rows: [seat] } = await db.owner.query('select id, status from game.table_players where table_id = $1 and user_id = $2', [tableId, victim.userId]);
    expect(seat.status).toBe('seated');
    const closed = await call(`${m.game}/internal/settle-withdrawal`, {
      headers: m.service, body: { playerId: seat.id.toString(), ledgerRefId: 'withdraw:0xforged', settlement: 'cash_out' },
    });
    expect(closed).toEqual({ status: 409, body: { error: 'seat_not_leaving' } });
    // the victim's own withdrawal settles the seat
    const out = await m.withdraw(victim.auth, { tableId });
    expect(out.body).toMatchObject({ status: 'confirmed', amount: 200 });
    expect(await m.balance(victim.auth)).toBe(500);
  });
});

describe("an operator's credential", () => {
  test('corrects the books with a reason, recorded with the operator; a player cannot', async () => {
    const p = await m.player(0);
    const operator = await m.operator();
    const { rows } = await db.owner.query(
      "select (select id from cage.cage_accounts where account_type = 'grant_source' and money_kind = 'play') as source, cage.ensure_account('user', $1, null, 'play') as account",
      [p.userId],
    );
    const body = { ref: `ticket-${randomUUID()}`, moneyKind: 'play', legs: [{ accountId: String(rows[0].source ?? ''), amount: '-25' }, { accountId: String(rows[0].account), amount: 25 }], reason: 'ticket 42: lost grant' };
    if (!rows[0].source) {
      body.legs[0]!.accountId = String((await db.owner.query("select cage.ensure_account('grant_source', null, null, 'play') as id")).rows[0].id);
    }
    expect(await call(`${m.cage}/api/operator/correction`, { headers: p.auth, body })).toEqual({ status: 403, body: { error: 'admin_required' } });
    expect(await call(`${m.cage}/api/operator/correction`, { headers: m.service, body })).toEqual({ status: 401, body: { error: 'missing_bearer_token' } });
    const noReason = await call(`${m.cage}/api/operator/correction`, { headers: operator.auth, body: { ...body, reason: '  ' } });
    expect([noReason.status, noReason.body.error]).toEqual([400, 'bad_request']);
    const done = await call(`${m.cage}/api/operator/correction`, { headers: operator.auth, body });
    expect(done).toMatchObject({ status: 200, body: { ok: true, refId: `correction:${body.ref}` } });
    expect((await call(`${m.cage}/api/operator/correction`, { headers: operator.auth, body })).body).toMatchObject({ idempotent: true });
    expect(await m.balance(p.auth)).toBe(25);
    const listed = await db.owner.query('select admin_id, reason from cage.manual_corrections where ref_id = $1', [`correction:${body.ref}`]);
    expect(listed.rows).toEqual([{ admin_id: operator.adminId, reason: 'ticket 42: lost grant' }]);
  });

  test('purchases are recorded with the operator who made them', async () => {
    const p = await m.player(0);
    const operator = await m.operator();
    const ref = `pay-${randomUUID()}`;
    expect((await call(`${m.cage}/api/operator/purchase`, { headers: operator.auth, body: { userId: p.userId, amount: 70, externalRef: ref, moneyKind: 'play' } })).status).toBe(200);
    const acts = await db.owner.query('select admin_id, act from cage.operator_acts where ref_id = $1', [`purchase:${ref}`]);
    expect(acts.rows).toEqual([{ admin_id: operator.adminId, act: 'purchase' }]);
  });

  test("the harness's JWT mint never makes an operator, even for an admin's user id", async () => {
    const operator = await m.operator();
    const minted = await call(`${m.platform.url('auth')}/api/dev/mint-jwt`, { body: { userId: operator.adminId, role: 'admin' } });
    expect(minted.status).toBe(200);
    const p = await m.player(0);
    const r = await call(`${m.cage}/api/operator/purchase`, {
      headers: { authorization: `Bearer ${minted.body.token}` }, body: { userId: p.userId, amount: 1, externalRef: `pay-${randomUUID()}`, moneyKind: 'play' },
    });
    expect(r).toEqual({ status: 403, body: { error: 'admin_required' } });
  });
});
