// The cash loop on the cage: deposits (buy-in posted at open, confirmed or reversed), the terminal
// settlement of a position (cash-out, custody, bust), grants, purchases and redemptions, custody
// claims. Called as the cage role; the game side as the game role. Every test that moves money
// ends with a clean audit, and so does the file.
import { randomBytes, randomUUID } from 'node:crypto';
import type pg from 'pg';
import { createTestDatabase, playerGrant, type TestDatabase, waitForLockWait } from '../../../test/helpers/db.ts';
import { balanceOf, expectCleanAudit, fixtureOperator, fund, openClaimIntent, setRealMoney, setTableStatus, userAccount } from '../../../test/helpers/cage.ts';
import {
  POKER_SETTINGS, asUnkeptCredit, authUser, claimCustody, createTable, creditSeat, leave, newKey, openDeposit, settlePosition, sit, solanaAddress,
  standUp, TEST_RECEIPT_SIGNER, withdrawKey, type TableRow,
} from '../../../test/helpers/game.ts';
import { issueReceipt } from '../../../server/cage/receipts.ts';
import { signBustReceipts } from '../../../server/cage/stand-ups.ts';
import pino from 'pino';

const silentLog = pino({ level: 'silent' });
import { settlementReceiptFields } from '../../../server/cage/seams.ts';

let db: TestDatabase;
let cage: pg.Pool;
let game: pg.Pool;
let worker: pg.Pool;
beforeAll(async () => {
  db = await createTestDatabase();
  cage = db.pool('poker_cage', 25);
  game = db.pool('poker_game');
  worker = db.pool('poker_worker', 2);
  // real chips come in only while the operators' switch is on (its refusals: test/cage/cage-refusals.test.ts)
  await setRealMoney(db.owner, true);
});
afterAll(async () => {
  await expectCleanAudit(cage);
  await db.drop();
});

async function escrowOf(tableId: string, moneyKind = 'play'): Promise<bigint> {
  const { rows } = await db.owner.query('select cage.ensure_account($1, null, $2, $3) as id', ['table_escrow', tableId, moneyKind]);
  return rows[0].id;
}

async function systemOf(type: string, moneyKind = 'play'): Promise<bigint> {
  const { rows } = await db.owner.query('select cage.ensure_account($1, null, null, $2) as id', [type, moneyKind]);
  return rows[0].id;
}

async function entries(refId: string) {
  const { rows } = await cage.query('select kind, money_kind, accounts, amounts, memo from cage.cage_entries where ref_id = $1', [refId]);
  // int8[] arrives as strings: chips and ids are compared as bigint
  return rows.map((r) => ({ ...r, accounts: r.accounts.map(BigInt), amounts: r.amounts.map(BigInt) }));
}

async function entryCount() {
  const { rows } = await db.owner.query('select count(*)::int as n from cage.cage_entries');
  return rows[0].n as number;
}

async function intent(refId: string) {
  const { rows } = await cage.query('select * from cage.deposit_intents where ref_id = $1', [refId]);
  return rows[0];
}

/**
 * Makes a concurrent twin commit at one exact point of a call: between the call's idempotency-key
 * read and its reads of the game's state. The owner holds game.tables in ACCESS EXCLUSIVE mode, so
 * the call (on a cage connection that has compiled the function already, with `warm`) stops at its
 * first read of a table record, which comes after its key read; `twin` runs in the holder's
 * transaction meanwhile, and commits before the call goes on. Resolves to the call's result, or to
 * its error.
 */
async function twinCommitsAfterKeyRead(
  warm: string, call: (c: pg.PoolClient) => Promise<pg.QueryResult>, twin: (h: pg.PoolClient) => Promise<unknown>,
): Promise<pg.QueryResult | Error> {
  const client = await cage.connect();
  const holder = await db.owner.connect();
  try {
    await client.query(warm).catch(() => undefined);
    await holder.query('begin');
    await holder.query('lock table game.tables in access exclusive mode');
    const result = call(client).catch((err: Error) => err);
    await waitForLockWait(db.owner, 'poker_cage');
    await twin(holder);
    await holder.query('commit');
    return await result;
  } finally {
    await holder.query('rollback').catch(() => undefined);
    holder.release();
    client.release();
  }
}

/** A cage user with a funded play (or real) balance. */
async function player(amount = 1000n, moneyKind: 'play' | 'real' = 'play') {
  const a = await userAccount(db.owner, moneyKind);
  await fund(db.owner, a.id, amount, moneyKind);
  return a;
}

/**
 * Two players sit with 100 each at a fresh table and play one hand in which A loses everything (B
 * ends with 200 - rake). Resolves to the table, the players, and the positions; the rows finish_hand
 * returned (the busted positions) as `busted`.
 */
async function headsUpBust(rake = 0n) {
  const table = await createTable(cage);
  const a = await player(500n);
  const b = await player(500n);
  const { seat: sa } = await sit(cage, game, a.userId, table.table_id, 0, 100n);
  const { seat: sb } = await sit(cage, game, b.userId, table.table_id, 1, 100n);
  const epoch = await db.leaseEpoch(table.table_id);
  await db.owner.query('select game.begin_hand($1, $2, $3)', [table.table_id, 'h1', epoch]);
  const { rows: busted } = await db.owner.query('select * from game.finish_hand($1, $2, $3, $4, $5)', [
    table.table_id, 'h1', { [String(sa.player_id)]: 0, [String(sb.player_id)]: Number(200n - rake) }, String(rake), epoch,
  ]);
  return { table, a, b, sa, sb, busted };
}

describe('open_deposit', () => {
  let t: TableRow;
  beforeAll(async () => {
    t = await createTable(cage);
  });

  test('posts the buy-in (user -> escrow) at once and leaves the intent pending', async () => {
    const a = await player(500n);
    const escrow = await escrowOf(t.table_id);
    const before = await balanceOf(cage, escrow);
    const d = await openDeposit(cage, a.userId, 'key-1', t.table_id, 0, 150n);
    expect(d).toMatchObject({
      ref_id: `deposit:${a.userId}:key-1`, status: 'pending', error: null, amount: 150n, table_id: t.table_id,
      seat_index: 0, money_kind: 'play', replayed: false,
    });
    expect(await balanceOf(cage, a.id)).toBe(350n);
    expect(await balanceOf(cage, escrow)).toBe(before + 150n);
    expect(await entries(d.ref_id)).toEqual([{
      kind: 'table_buy_in', money_kind: 'play', accounts: [a.id, escrow], amounts: [-150n, 150n],
      memo: { table_id: t.table_id, seat_index: 0 },
    }]);
    expect(await intent(d.ref_id)).toMatchObject({ status: 'pending', credited_at: null, user_id: a.userId, idempotency_key: 'key-1' });
    await expectCleanAudit(cage);
  });

  test('the same key again replays the intent as it stands and posts nothing; other values are refused', async () => {
    const a = await player(500n);
    const first = await openDeposit(cage, a.userId, 'replay-key', t.table_id, 1, 100n);
    const n = await entryCount();
    const again = await openDeposit(cage, a.userId, 'replay-key', t.table_id, 1, 100n);
    expect(again).toEqual({ ...first, replayed: true });
    expect(await entryCount()).toBe(n);
    expect(await balanceOf(cage, a.id)).toBe(400n);

    const other = await createTable(cage);
    for (const [table, seat, amount] of [[t.table_id, 1, 101n], [t.table_id, 2, 100n], [other.table_id, 1, 100n]] as const) {
      await expect(openDeposit(cage, a.userId, 'replay-key', table, seat, amount))
        .rejects.toMatchObject({ code: 'CGIKR', message: 'idempotency_key_reused' });
    }
    // the key is the user's: another user's same key is another deposit
    const b = await player(500n);
    expect(await openDeposit(cage, b.userId, 'replay-key', t.table_id, 2, 100n)).toMatchObject({ replayed: false });

    // a replay answers the current status
    await creditSeat(game, first.ref_id, t.table_id, a.userId, 1, 100n);
    await cage.query('select * from cage.confirm_deposit($1)', [first.ref_id]);
    expect(await openDeposit(cage, a.userId, 'replay-key', t.table_id, 1, 100n)).toMatchObject({ status: 'confirmed', replayed: true });
    await expectCleanAudit(cage);
  });

  test('insufficient balance: refused with CGNSF, no intent row and nothing posted', async () => {
    const a = await player(99n);
    const n = await entryCount();
    await expect(openDeposit(cage, a.userId, 'poor', t.table_id, 3, 100n))
      .rejects.toMatchObject({ code: 'CGNSF', message: 'insufficient_cage_balance' });
    expect(await intent(`deposit:${a.userId}:poor`)).toBeUndefined();
    expect(await entryCount()).toBe(n);
    expect(await balanceOf(cage, a.id)).toBe(99n);
    // a user with no account at all is refused the same way
    await expect(openDeposit(cage, randomUUID(), 'nobody', t.table_id, 3, 100n)).rejects.toMatchObject({ code: 'CGNSF' });
    await expectCleanAudit(cage);
  });

  test('table_not_found, table_frozen', async () => {
    const a = await player(500n);
    await expect(openDeposit(cage, a.userId, newKey(), 'no-such-table', 0, 100n)).rejects.toMatchObject({ code: 'CGTNF', message: 'table_not_found' });
    const f = await createTable(cage);
    await setTableStatus(db.owner, f.table_id, 'frozen');
    await expect(openDeposit(cage, a.userId, newKey(), f.table_id, 0, 100n)).rejects.toMatchObject({ code: 'CGFRZ', message: 'table_frozen' });
    expect(await balanceOf(cage, a.id)).toBe(500n);
    const { rows } = await cage.query('select count(*)::int as n from cage.deposit_intents where user_id = $1', [a.userId]);
    expect(rows[0].n).toBe(0);
  });

  test('a seat index beyond maxPlayers is refused before anything is posted', async () => {
    const a = await player(500n);
    const t = await createTable(cage);
    const n = await entryCount();
    await expect(openDeposit(cage, a.userId, newKey(), t.table_id, Number(t.settings.maxPlayers), 100n))
      .rejects.toMatchObject({ code: 'CGSEA', message: 'invalid_seat_index' });
    expect(await entryCount()).toBe(n);
    expect(await balanceOf(cage, a.id)).toBe(500n);
  });

  test('buy-in bounds: a sit within minBuyIn..maxBuyIn, a top-up keeping the stack at most maxBuyIn', async () => {
    const b = await createTable(cage, { settings: { ...POKER_SETTINGS, minBuyIn: 40, maxBuyIn: 200 } });
    const a = await player(1000n);
    await expect(openDeposit(cage, a.userId, newKey(), b.table_id, 0, 39n)).rejects.toMatchObject({ code: 'CGBUY', message: 'buy_in_out_of_range' });
    await expect(openDeposit(cage, a.userId, newKey(), b.table_id, 0, 201n)).rejects.toMatchObject({ code: 'CGBUY' });
    await sit(cage, game, a.userId, b.table_id, 0, 150n);
    await expect(openDeposit(cage, a.userId, newKey(), b.table_id, 0, 51n)).rejects.toMatchObject({ code: 'CGBUY' });
    // a top-up below minBuyIn is fine
    const top = await openDeposit(cage, a.userId, newKey(), b.table_id, 0, 10n);
    await creditSeat(game, top.ref_id, b.table_id, a.userId, 0, 10n);
    await cage.query('select * from cage.confirm_deposit($1)', [top.ref_id]);
    expect(await balanceOf(cage, a.id)).toBe(840n);
    await expectCleanAudit(cage);
  });

  test.each([
    ['an empty key', '', 0, 100n, 'CGBRQ'],
    ['a key with a space', 'a b', 0, 100n, 'CGBRQ'],
    ['a key of 129 characters', 'k'.repeat(129), 0, 100n, 'CGBRQ'],
    ['a negative seat', 'k', -1, 100n, 'CGBRQ'],
    ['seat 10', 'k', 10, 100n, 'CGBRQ'],
    ['a zero amount', 'k', 0, 0n, 'CGIAM'],
    ['a negative amount', 'k', 0, -5n, 'CGIAM'],
    ['an amount above 2^53 - 1', 'k', 0, 9007199254740992n, 'CGIAM'],
  ])('refuses %s', async (_what, key, seat, amount, code) => {
    const a = await player(100n);
    await expect(openDeposit(cage, a.userId, key, t.table_id, seat, amount)).rejects.toMatchObject({ code });
  });

  test('a real-money table takes real chips into its real escrow', async () => {
    const r = await createTable(cage, { moneyKind: 'real' });
    const a = await player(300n, 'real');
    const d = await openDeposit(cage, a.userId, newKey(), r.table_id, 0, 100n);
    expect(d.money_kind).toBe('real');
    expect(await balanceOf(cage, await escrowOf(r.table_id, 'real'))).toBe(100n);
    // play chips do not sit at a real table
    const p = await player(300n, 'play');
    await expect(openDeposit(cage, p.userId, newKey(), r.table_id, 1, 100n)).rejects.toMatchObject({ code: 'CGNSF' });
    await creditSeat(game, d.ref_id, r.table_id, a.userId, 0, 100n);
    await cage.query('select * from cage.confirm_deposit($1)', [d.ref_id]);
    await expectCleanAudit(cage);
  });
});

describe('confirm_deposit and fail_deposit', () => {
  let t: TableRow;
  beforeAll(async () => {
    t = await createTable(cage);
  });

  test('confirm marks the deposit credited; again changes nothing; unknown is refused', async () => {
    const a = await player(500n);
    const d = await openDeposit(cage, a.userId, newKey(), t.table_id, 0, 100n);
    // not before the game holds the credit: the deposit stays pending (in flight)
    const { rows: [early] } = await cage.query('select * from cage.confirm_deposit($1)', [d.ref_id]);
    expect(early).toMatchObject({ ref_id: d.ref_id, status: 'pending', credited_at: null });
    await expectCleanAudit(cage);
    await creditSeat(game, d.ref_id, t.table_id, a.userId, 0, 100n);
    const { rows: [confirmed] } = await cage.query('select * from cage.confirm_deposit($1)', [d.ref_id]);
    expect(confirmed).toMatchObject({ status: 'confirmed', credited_at: expect.any(Date) });
    const { rows: [again] } = await cage.query('select * from cage.confirm_deposit($1)', [d.ref_id]);
    expect(again).toEqual(confirmed);
    // once confirmed, the game can no longer take the credit back, though nothing happened since
    expect((await game.query('select game.cancel_credit($1, $2, $3, $4) as r', [d.ref_id, t.table_id, a.userId, '100'])).rows[0].r).toBe('credited');
    const { rows: [seat] } = await db.owner.query('select chip_balance, status from game.table_players where table_id = $1 and user_id = $2', [t.table_id, a.userId]);
    expect(seat).toEqual({ chip_balance: 100n, status: 'seated' });
    await expect(cage.query('select * from cage.confirm_deposit($1)', ['deposit:nope'])).rejects.toMatchObject({ code: 'CGDNF', message: 'deposit_not_found' });
    await expectCleanAudit(cage);
  });

  test('fail reverses the buy-in with `<ref>:reversal`, restores the balance, and is idempotent', async () => {
    const a = await player(500n);
    const escrow = await escrowOf(t.table_id);
    const before = await balanceOf(cage, escrow);
    const d = await openDeposit(cage, a.userId, newKey(), t.table_id, 1, 120n);
    // the game never got the credit: cancel it there first (a tombstone), then compensate
    expect((await game.query('select game.cancel_credit($1, $2, $3, $4) as r', [d.ref_id, t.table_id, a.userId, '120'])).rows[0].r).toBe('cancelled');
    const { rows: [failed] } = await cage.query('select * from cage.fail_deposit($1, $2)', [d.ref_id, 'seat_taken']);
    expect(failed).toMatchObject({ status: 'failed', error: 'seat_taken', reversal_ref_id: `${d.ref_id}:reversal`, credited_at: null });
    expect(await entries(`${d.ref_id}:reversal`)).toEqual([expect.objectContaining({
      kind: 'adjustment', accounts: [escrow, a.id], amounts: [-120n, 120n],
      memo: { reverses: d.ref_id, table_id: t.table_id, reason: 'seat_taken' },
    })]);
    expect(await balanceOf(cage, a.id)).toBe(500n);
    expect(await balanceOf(cage, escrow)).toBe(before);
    await expectCleanAudit(cage);

    const n = await entryCount();
    const { rows: [again] } = await cage.query('select * from cage.fail_deposit($1, $2)', [d.ref_id, 'other']);
    expect(again).toEqual(failed);
    expect(await entryCount()).toBe(n);
    // a failed deposit is not confirmed afterwards, and a replay of its key answers failed
    expect((await cage.query('select status from cage.confirm_deposit($1)', [d.ref_id])).rows[0].status).toBe('failed');
    expect(await openDeposit(cage, a.userId, failed.idempotency_key, t.table_id, 1, 120n)).toMatchObject({ status: 'failed', error: 'seat_taken', replayed: true });
    await expect(cage.query('select * from cage.fail_deposit($1, $2)', ['deposit:nope', 'x'])).rejects.toMatchObject({ code: 'CGDNF' });
    await expectCleanAudit(cage);
  });

  test('a credit the game reverted is compensated the same way', async () => {
    const a = await player(500n);
    const d = await openDeposit(cage, a.userId, newKey(), t.table_id, 2, 80n);
    await creditSeat(game, d.ref_id, t.table_id, a.userId, 2, 80n);
    // the credit confirmed its deposit: it stands; only an older release's unkept credit goes back
    expect(await intent(d.ref_id)).toMatchObject({ status: 'confirmed' });
    expect((await game.query('select game.cancel_credit($1, $2, $3, $4) as r', [d.ref_id, t.table_id, a.userId, '80'])).rows[0].r).toBe('credited');
    await asUnkeptCredit(db.owner, d.ref_id);
    expect((await game.query('select game.cancel_credit($1, $2, $3, $4) as r', [d.ref_id, t.table_id, a.userId, '80'])).rows[0].r).toBe('reverted');
    // between the revert and the compensation the deposit is in flight again
    await expectCleanAudit(cage);
    await cage.query('select * from cage.fail_deposit($1, $2)', [d.ref_id, 'credit_failed']);
    expect(await balanceOf(cage, a.id)).toBe(500n);
    await expectCleanAudit(cage);
  });

  test('a confirmed deposit is left as it is', async () => {
    const a = await player(500n);
    const { deposit } = await sit(cage, game, a.userId, t.table_id, 3, 100n);
    const { rows: [r] } = await cage.query('select * from cage.fail_deposit($1, $2)', [deposit.ref_id, 'late']);
    expect(r).toMatchObject({ status: 'confirmed', error: null, reversal_ref_id: null });
    expect(await entries(`${deposit.ref_id}:reversal`)).toEqual([]);
    expect(await balanceOf(cage, a.id)).toBe(400n);
    await expectCleanAudit(cage);
  });

  test('a deposit the game credited is never reversed: failing it confirms it instead', async () => {
    // the cage stopped after the push and before its confirm; a reconciler that fails it must not pay twice
    const a = await player(500n);
    const d = await openDeposit(cage, a.userId, newKey(), t.table_id, 4, 100n);
    await creditSeat(game, d.ref_id, t.table_id, a.userId, 4, 100n);
    const { rows: [r] } = await worker.query('select * from cage.fail_deposit($1, $2)', [d.ref_id, 'reconciler']);
    expect(r).toMatchObject({ status: 'confirmed', reversal_ref_id: null });
    expect(await entries(`${d.ref_id}:reversal`)).toEqual([]);
    expect(await balanceOf(cage, a.id)).toBe(400n);
    await expectCleanAudit(cage);
  });

  test('failing a deposit the game has not seen cancels its credit first, so a late push is refused', async () => {
    const a = await player(500n);
    const d = await openDeposit(cage, a.userId, newKey(), t.table_id, 5, 100n);
    await worker.query('select * from cage.fail_deposit($1, $2)', [d.ref_id, 'reconciler']);
    expect(await balanceOf(cage, a.id)).toBe(500n);
    await expect(creditSeat(game, d.ref_id, t.table_id, a.userId, 5, 100n)).rejects.toMatchObject({ code: 'GMCCN' });
    await expectCleanAudit(cage);
  });

  test('a push racing the compensation: the compensation waits for it, and the funded top-up is confirmed, never reversed', async () => {
    const r = await createTable(cage);
    const a = await player(500n);
    const { seat } = await sit(cage, game, a.userId, r.table_id, 0, 100n);
    const top = await openDeposit(cage, a.userId, newKey(), r.table_id, 0, 50n);
    // hold the seat row so that the push stops after it locked its deposit and before it funds the seat
    const holder = await db.owner.connect();
    let push: Promise<unknown> | undefined;
    let failing: Promise<unknown> | undefined;
    try {
      await holder.query('begin');
      await holder.query('select 1 from game.table_players where id = $1 for update', [String(seat.player_id)]);
      push = creditSeat(game, top.ref_id, r.table_id, a.userId, 0, 50n).catch((err: unknown) => err);
      await waitForLockWait(db.owner, 'poker_game');
      // meanwhile the reconciler compensates: it waits for the deposit the push holds
      failing = worker.query('select status, reversal_ref_id from cage.fail_deposit($1, $2)', [top.ref_id, 'reconciler'])
        .then((res) => res.rows[0], (err: unknown) => err);
      await waitForLockWait(db.owner, 'poker_worker');
      await holder.query('commit');
    } finally {
      holder.release();
    }
    expect(await push).toMatchObject({ status: 'credited', chip_balance: 150n });
    expect(await failing).toEqual({ status: 'confirmed', reversal_ref_id: null });
    const { rows } = await db.owner.query('select chip_balance, chain_length from game.table_players where id = $1', [String(seat.player_id)]);
    expect(rows[0]).toEqual({ chip_balance: 150n, chain_length: 2 });
    expect(await entries(`${top.ref_id}:reversal`)).toEqual([]);
    expect(await balanceOf(cage, a.id)).toBe(350n);
    await expectCleanAudit(cage);
  });

  test('a revert racing the failure after it looked at the credit: the failure waits for it and compensates', async () => {
    const r = await createTable(cage);
    const a = await player(500n);
    const d = await openDeposit(cage, a.userId, newKey(), r.table_id, 0, 100n);
    await creditSeat(game, d.ref_id, r.table_id, a.userId, 0, 100n);
    await asUnkeptCredit(db.owner, d.ref_id);
    // The reconciler fails the deposit while the game cancels its credit: cancel_credit takes the
    // credit row (the holder's lock stands for it) after fail_deposit has looked at the credit and
    // before its confirmation, then reverts the credit and commits. Read without a lock, the credit
    // looked held, the confirmation then found it reverted, and the deposit came back pending.
    const holder = await db.owner.connect();
    let failing: Promise<unknown> | undefined;
    try {
      await holder.query('begin');
      await holder.query('select 1 from game.seat_credits where credit_key = $1 for update', [d.ref_id]);
      failing = worker.query('select status, reversal_ref_id from cage.fail_deposit($1, $2)', [d.ref_id, 'reconciler'])
        .then((res) => res.rows[0], (err: unknown) => err);
      await waitForLockWait(db.owner, 'poker_worker');
      expect((await holder.query('select game.cancel_credit($1, $2, $3, $4) as r', [d.ref_id, r.table_id, a.userId, '100'])).rows[0].r)
        .toBe('reverted');
      await holder.query('commit');
    } finally {
      await holder.query('rollback').catch(() => undefined);
      holder.release();
    }
    expect(await failing).toEqual({ status: 'failed', reversal_ref_id: `${d.ref_id}:reversal` });
    expect(await intent(d.ref_id)).toMatchObject({ status: 'failed', error: 'reconciler' });
    expect(await balanceOf(cage, a.id)).toBe(500n);
    const { rows } = await db.owner.query('select status from game.seat_credits where credit_key = $1', [d.ref_id]);
    expect(rows).toEqual([{ status: 'reverted' }]);
    await expectCleanAudit(cage);
  });

  test('the worker may confirm and fail, but not open', async () => {
    await expect(worker.query('select * from cage.open_deposit($1, $2, $3, $4, $5)', [randomUUID(), 'k', t.table_id, 0, 1]))
      .rejects.toMatchObject({ code: '42501' });
    await expect(worker.query('select * from cage.settle_position($1, $2, $3, $4, $5, $6, $7, $8)', [
      randomUUID(), t.table_id, 1, 0, 'a'.repeat(64), `0x${'a'.repeat(64)}`, 'bust', false,
    ])).rejects.toMatchObject({ code: '42501' });
  });
});

describe('settle_position', () => {
  let t: TableRow;
  beforeAll(async () => {
    t = await createTable(cage);
  });

  test('cash_out: the stack goes from the escrow back to the user (table_cash_out), once', async () => {
    const a = await player(500n);
    const escrow = await escrowOf(t.table_id);
    await sit(cage, game, a.userId, t.table_id, 0, 200n);
    const up = await standUp(game, t.table_id, a.userId);
    const escrowBefore = await balanceOf(cage, escrow);
    const key = withdrawKey(a.userId, t.table_id, up.history_hash, up.chip_balance);
    const settled = await settlePosition(cage, {
      userId: a.userId, tableId: t.table_id, playerId: up.player_id, amount: 200n, historyHash: up.history_hash, key, settlement: 'cash_out',
    });
    expect(settled).toMatchObject({
      idempotency_key: key, ledger_ref_id: `withdraw:${key}`, amount: 200n, settlement: 'cash_out', custody_entry_id: null,
      history_hash: up.history_hash, money_kind: 'play', player_id: up.player_id, replayed: false,
    });
    expect(await entries(`withdraw:${key}`)).toEqual([expect.objectContaining({ kind: 'table_cash_out', accounts: [escrow, a.id], amounts: [-200n, 200n] })]);
    expect(await balanceOf(cage, a.id)).toBe(500n);
    expect(await balanceOf(cage, escrow)).toBe(escrowBefore - 200n);
    // settled by the cage, not yet zeroed by the game: the position no longer counts
    await expectCleanAudit(cage);

    const n = await entryCount();
    const replay = await settlePosition(cage, {
      userId: a.userId, tableId: t.table_id, playerId: up.player_id, amount: 200n, historyHash: up.history_hash, key, settlement: 'cash_out',
    });
    expect(replay).toEqual({ ...settled, replayed: true });
    expect(await entryCount()).toBe(n);

    // the same position under another key
    await expect(settlePosition(cage, {
      userId: a.userId, tableId: t.table_id, playerId: up.player_id, amount: 200n, historyHash: up.history_hash,
      key: `0x${randomBytes(32).toString('hex')}`, settlement: 'cash_out',
    })).rejects.toMatchObject({ code: 'CGSAS', message: 'seat_already_settled' });

    // the game zeroes the seat, the cage marks the intent settled (idempotent)
    await game.query('select * from game.settle_seat($1, $2, $3)', [String(up.player_id), settled.ledger_ref_id, 'cash_out']);
    const { rows: [marked] } = await cage.query('select * from cage.mark_withdrawal_settled($1)', [key]);
    expect(marked).toMatchObject({ idempotency_key: key, settled_at: expect.any(Date) });
    const { rows: [again] } = await worker.query('select * from cage.mark_withdrawal_settled($1)', [key]);
    expect(again.settled_at).toEqual(marked.settled_at);
    await expectCleanAudit(cage);
  });

  test('the same key for another position, user or amount is refused, not replayed', async () => {
    const a = await player(500n);
    const b = await player(500n);
    await sit(cage, game, a.userId, t.table_id, 1, 100n);
    await sit(cage, game, b.userId, t.table_id, 2, 100n);
    const upA = await standUp(game, t.table_id, a.userId);
    const upB = await standUp(game, t.table_id, b.userId);
    const settledA = await settlePosition(cage, {
      userId: a.userId, tableId: t.table_id, playerId: upA.player_id, amount: 100n, historyHash: upA.history_hash, settlement: 'cash_out',
    });
    await expect(settlePosition(cage, {
      userId: b.userId, tableId: t.table_id, playerId: upB.player_id, amount: 100n, historyHash: upB.history_hash,
      key: settledA.idempotency_key, settlement: 'cash_out',
    })).rejects.toMatchObject({ code: 'CGIKR', message: 'idempotency_key_reused' });
    await expect(settlePosition(cage, {
      userId: a.userId, tableId: t.table_id, playerId: upA.player_id, amount: 99n, historyHash: upA.history_hash,
      key: settledA.idempotency_key, settlement: 'cash_out',
    })).rejects.toMatchObject({ code: 'CGIKR' });
    await game.query('select * from game.settle_seat($1, $2, $3)', [String(upA.player_id), settledA.ledger_ref_id, 'cash_out']);
    await leave(cage, game, t.table_id, b.userId);
    await expectCleanAudit(cage);
  });

  test('custody: a forced withdrawal moves the stack to the custody account and a FREE entry in base units', async () => {
    const a = await player(500n);
    await sit(cage, game, a.userId, t.table_id, 3, 130n);
    const custody = await systemOf('custody');
    const custodyBefore = await balanceOf(cage, custody);
    const { settled } = await leave(cage, game, t.table_id, a.userId, 'custody');
    expect(settled).toMatchObject({ settlement: 'custody', amount: 130n, custody_entry_id: expect.any(BigInt), replayed: false });
    expect(await balanceOf(cage, custody)).toBe(custodyBefore + 130n);
    expect(await balanceOf(cage, a.id)).toBe(370n);
    expect(await entries(settled.ledger_ref_id)).toEqual([expect.objectContaining({ kind: 'table_cash_out', amounts: [-130n, 130n] })]);
    const { rows } = await cage.query('select * from cage.custody_entries where id = $1', [settled.custody_entry_id]);
    expect(rows).toEqual([expect.objectContaining({
      user_id: a.userId, table_id: t.table_id, money_kind: 'play', chain: 'cage', amount: 130_000_000n, status: 'free',
      source_ref_id: settled.ledger_ref_id, claim_ref_id: null,
    })]);
    const { rows: [w] } = await cage.query('select forced, custody_entry_id from cage.withdraw_intents where idempotency_key = $1', [settled.idempotency_key]);
    expect(w).toEqual({ forced: true, custody_entry_id: settled.custody_entry_id });
    await expectCleanAudit(cage);
  });

  test('bust: the hand that leaves a position with no chips closes it with an explicit zero bust_close row (issue 32)', async () => {
    const { table: h, a, b, sa, sb, busted } = await headsUpBust(5n);
    expect(busted).toEqual([{ player_id: sa.player_id, user_id: a.userId }]);
    // closed in the hand's end: the bust intent, its zero row, the chain's bust link; no stand-up, no bank call
    const { rows: [w] } = await db.owner.query('select * from cage.withdraw_intents where player_id = $1', [sa.player_id]);
    expect(w).toMatchObject({ user_id: a.userId, table_id: h.table_id, amount: 0n, settlement: 'bust', forced: false, ledger_ref_id: `bust:${w.idempotency_key}` });
    expect(w.idempotency_key).toMatch(/^0x[0-9a-f]{64}$/);
    expect(w.settled_at).not.toBeNull();
    expect(await entries(w.ledger_ref_id)).toEqual([expect.objectContaining({ kind: 'bust_close', amounts: [0n, 0n] })]);
    const { rows: [pos] } = await db.owner.query('select status, chip_balance, closing_ref_id from game.table_players where id = $1', [sa.player_id]);
    expect(pos).toEqual({ status: 'closed', chip_balance: 0n, closing_ref_id: w.ledger_ref_id });
    await expect(standUp(game, h.table_id, a.userId)).rejects.toMatchObject({ message: 'not_at_table' });
    // its receipt is the cage's to sign afterwards: pending within the lag, the audit is clean
    const unsigned = async () => (await cage.query('select ledger_ref_id from cage.unsigned_bust_receipts(100)')).rows.map((r) => r.ledger_ref_id);
    expect(await unsigned()).toContain(w.ledger_ref_id);
    await expectCleanAudit(cage);
    // the job queued in the hand's end, for the cage to sign it
    const { rows: jobs } = await db.owner.query("select key from graphile_worker.jobs where task_identifier = 'cage_sign_bust_receipts'");
    expect(jobs).toEqual([{ key: 'cage_sign_bust_receipts' }]);
    // a bust settlement carries no chips
    const upB = await standUp(game, h.table_id, b.userId);
    await expect(settlePosition(cage, {
      userId: b.userId, tableId: h.table_id, playerId: upB.player_id, amount: 1n, historyHash: upB.history_hash, settlement: 'bust',
    })).rejects.toMatchObject({ code: 'CGBRQ' });
    await leave(cage, game, h.table_id, b.userId);
    expect(sb.player_id).toBe(upB.player_id);
    expect(await balanceOf(cage, b.id)).toBe(595n);
    // the rake stays in the escrow until it is reconciled to the house
    expect(await balanceOf(cage, await escrowOf(h.table_id))).toBe(5n);
    // signed (as the cage's route does: signBustReceipts), the receipt is the settlement's one receipt
    const signed = await signBustReceipts({ pool: cage, signer: TEST_RECEIPT_SIGNER, log: silentLog });
    expect(signed.failed).toBe(0);
    expect(await unsigned()).not.toContain(w.ledger_ref_id);
    const { rows: [r] } = await cage.query('select user_id, payload from cage.receipts where ledger_ref_id = $1', [w.ledger_ref_id]);
    expect(r.user_id).toBe(a.userId);
    expect(JSON.parse(r.payload.toString())).toMatchObject({ kind: 'bust', chipAmount: '0', ledgerRefId: w.ledger_ref_id, historyHash: w.history_hash, position: String(sa.player_id) });
    await expectCleanAudit(cage);
  });

  test('busts while the receipts job waits write nothing to the queue; a bust while it runs queues the next run (issue 33)', async () => {
    const job = async () => (await db.owner.query(
      "select id, revision, run_at, locked_at from graphile_worker.jobs where key = 'cage_sign_bust_receipts'")).rows;
    await db.owner.query("delete from graphile_worker._private_jobs where key = 'cage_sign_bust_receipts'");
    await headsUpBust();
    const [first] = await job();
    expect(first).toMatchObject({ revision: 0, locked_at: null });
    // waiting: the next bust's receipt is signed by that run; the job is not rewritten
    await headsUpBust();
    expect(await job()).toEqual([first]);
    // running (a worker holds it, and may have read the unsigned busts already): a bust queues another run
    await db.owner.query("update graphile_worker._private_jobs set locked_at = now(), locked_by = 'test-worker' where key = 'cage_sign_bust_receipts'");
    const { busted } = await headsUpBust();
    expect(busted).toHaveLength(1);
    const queued = await db.owner.query(
      "select count(*)::int as n from graphile_worker.jobs where task_identifier = 'cage_sign_bust_receipts' and locked_at is null");
    expect(queued.rows[0].n).toBe(1);
    // one that failed for good never runs again: a bust queues a run that will
    await db.owner.query("delete from graphile_worker._private_jobs where locked_by = 'test-worker'");
    await db.owner.query("update graphile_worker._private_jobs set attempts = max_attempts where key = 'cage_sign_bust_receipts'");
    await headsUpBust();
    const { rows: after } = await db.owner.query(
      "select attempts, max_attempts, locked_at from graphile_worker.jobs where key = 'cage_sign_bust_receipts'");
    expect(after).toEqual([{ attempts: 0, max_attempts: 25, locked_at: null }]);
  });

  test('the audit names a bust whose receipt stays unsigned past its lag', async () => {
    const { sa } = await headsUpBust();
    const { rows: [w] } = await db.owner.query('select ledger_ref_id from cage.withdraw_intents where player_id = $1', [sa.player_id]);
    await expectCleanAudit(cage);
    await db.owner.query("update cage.withdraw_intents set created_at = now() - cage_private.bust_receipt_lag() - interval '1 second' where player_id = $1", [sa.player_id]);
    const { rows } = await cage.query("select invariant, subject, detail ->> 'problem' as problem from cage.audit() where subject = $1", [`settlement:${w.ledger_ref_id}`]);
    expect(rows).toEqual([{ invariant: 'provenance', subject: `settlement:${w.ledger_ref_id}`, problem: 'bust receipt unsigned past its lag' }]);
    await signBustReceipts({ pool: cage, signer: TEST_RECEIPT_SIGNER, log: silentLog });
    await expectCleanAudit(cage);
  });

  test('nothing_to_withdraw: a cash-out of zero', async () => {
    const { table: h, b } = await headsUpBust();
    const up = await standUp(game, h.table_id, b.userId);
    await expect(settlePosition(cage, {
      userId: b.userId, tableId: h.table_id, playerId: up.player_id, amount: 0n, historyHash: up.history_hash, settlement: 'cash_out',
    })).rejects.toMatchObject({ code: 'CGNTW', message: 'nothing_to_withdraw' });
    await leave(cage, game, h.table_id, b.userId);
    await signBustReceipts({ pool: cage, signer: TEST_RECEIPT_SIGNER, log: silentLog });
    await expectCleanAudit(cage);
  });

  test('a frozen table refuses a cash-out and a custody settlement', async () => {
    const { table: f, b } = await headsUpBust();
    await setTableStatus(db.owner, f.table_id, 'frozen');
    const upB = await standUp(game, f.table_id, b.userId);
    await expect(settlePosition(cage, {
      userId: b.userId, tableId: f.table_id, playerId: upB.player_id, amount: 200n, historyHash: upB.history_hash, settlement: 'cash_out',
    })).rejects.toMatchObject({ code: 'CGFRZ', message: 'table_frozen' });
    await expect(settlePosition(cage, {
      userId: b.userId, tableId: f.table_id, playerId: upB.player_id, amount: 200n, historyHash: upB.history_hash, settlement: 'custody',
    })).rejects.toMatchObject({ code: 'CGFRZ' });
    await setTableStatus(db.owner, f.table_id, 'active');
    await settlePosition(cage, {
      userId: b.userId, tableId: f.table_id, playerId: upB.player_id, amount: 200n, historyHash: upB.history_hash, settlement: 'cash_out',
    });
    await expectCleanAudit(cage);
  });

  test('the cage pays out only the stack the game froze for that position', async () => {
    const a = await player(500n);
    const b = await player(500n);
    const { seat } = await sit(cage, game, a.userId, t.table_id, 4, 100n);
    const base = { userId: a.userId, tableId: t.table_id, playerId: seat.player_id, historyHash: seat.history_hash, settlement: 'cash_out' as const };
    // still seated (not stood up): its stack is in play
    await expect(settlePosition(cage, { ...base, amount: 100n })).rejects.toMatchObject({ code: 'CGBRQ' });
    const up = await standUp(game, t.table_id, a.userId);
    // more (or less) than the frozen stack, another chain head, another user, another table
    await expect(settlePosition(cage, { ...base, amount: 101n })).rejects.toMatchObject({ code: 'CGBRQ' });
    await expect(settlePosition(cage, { ...base, amount: 99n })).rejects.toMatchObject({ code: 'CGBRQ' });
    await expect(settlePosition(cage, { ...base, amount: 100n, historyHash: 'f'.repeat(64) })).rejects.toMatchObject({ code: 'CGBRQ' });
    await expect(settlePosition(cage, { ...base, amount: 100n, userId: b.userId })).rejects.toMatchObject({ code: 'CGBRQ' });
    const other = await createTable(cage);
    await expect(settlePosition(cage, { ...base, amount: 100n, tableId: other.table_id })).rejects.toMatchObject({ code: 'CGBRQ' });
    await expect(settlePosition(cage, { ...base, amount: 100n, playerId: 999999999n })).rejects.toMatchObject({ code: 'CGBRQ' });
    expect(await balanceOf(cage, a.id)).toBe(400n);
    expect(up.history_hash).toBe(seat.history_hash);
    await settlePosition(cage, { ...base, amount: 100n });
    expect(await balanceOf(cage, a.id)).toBe(500n);
    await expectCleanAudit(cage);
  });

  test.each([
    ['a key that is not 0x + 64 hex', { key: 'abc' }],
    ['a chain head that is not 64 hex', { historyHash: 'xyz' }],
    ['an unknown settlement', { settlement: 'refund' }],
    ['a negative amount', { amount: -1n }],
  ])('refuses %s with bad_request', async (_what, override) => {
    const p = {
      userId: randomUUID(), tableId: t.table_id, playerId: 1n, amount: 10n, historyHash: 'a'.repeat(64),
      key: `0x${'b'.repeat(64)}`, settlement: 'cash_out' as const, ...override,
    } as Parameters<typeof settlePosition>[1];
    await expect(settlePosition(cage, p)).rejects.toMatchObject({ code: 'CGBRQ', message: 'bad_request' });
  });
});

describe('mark_withdrawal_settled', () => {
  test('a settlement is marked with its seat closed; marking again changes nothing; an unknown key is refused', async () => {
    const a = await player(500n);
    const t = await createTable(cage);
    await sit(cage, game, a.userId, t.table_id, 0, 100n);
    const position = await standUp(game, t.table_id, a.userId);
    const settled = await settlePosition(cage, {
      userId: a.userId, tableId: t.table_id, playerId: position.player_id, amount: position.chip_balance,
      historyHash: position.history_hash, settlement: 'cash_out', forced: false,
    });
    const mark = async () => (await cage.query('select settled_at from cage.mark_withdrawal_settled($1)', [settled.idempotency_key])).rows[0];
    // the settlement closed the seat with its ledger row, in its transaction
    const { rows: [seat] } = await db.owner.query('select status, chip_balance, closing_ref_id from game.table_players where id = $1', [String(position.player_id)]);
    expect(seat).toEqual({ status: 'closed', chip_balance: 0n, closing_ref_id: settled.ledger_ref_id });
    const { rows: [row] } = await db.owner.query('select settled_at from cage.withdraw_intents where idempotency_key = $1', [settled.idempotency_key]);
    expect(row.settled_at).toBeInstanceOf(Date);
    expect((await mark()).settled_at).toEqual(row.settled_at);
    // one an older release left unmarked (its seat zeroed by the game afterwards) is marked now
    await db.owner.query('update cage.withdraw_intents set settled_at = null where idempotency_key = $1', [settled.idempotency_key]);
    expect((await mark()).settled_at).toBeInstanceOf(Date);
    await expect(cage.query('select cage.mark_withdrawal_settled($1)', [`0x${'0'.repeat(64)}`])).rejects.toMatchObject({ code: 'CGBRQ' });
    await expectCleanAudit(cage);
  });
});

describe('grant_play_chips', () => {
  let userId: Awaited<ReturnType<typeof authUser>>;
  let wallet: string;
  beforeAll(async () => {
    userId = await authUser(db.owner);
    wallet = solanaAddress();
    await db.owner.query('select * from auth.link_wallet($1, $2, $3, $4)', [userId, wallet, 'solana', 0]);
  });

  const grant = async (recipient: string, amount: bigint, claimId: string) =>
    (await cage.query('select * from cage.grant_play_chips($1, $2, $3)', [recipient, String(amount), claimId])).rows[0];

  test('mints play chips to the owner of the linked Solana wallet, once per claim id, only for the open claim behind it', async () => {
    const claimId = await openClaimIntent(db.owner, userId, 250n, wallet);
    const intent = (await db.owner.query('select section_key, period from claims.claim_intents where claim_id = $1', [claimId])).rows[0];
    expect(await grant(wallet, 250n, claimId)).toEqual({ user_id: userId, amount: 250n, ref_id: claimId, status: 'created' });
    const account = await userAccount(db.owner, 'play', userId);
    expect(await balanceOf(cage, account.id)).toBe(250n);
    const source = await systemOf('grant_source');
    expect(await entries(claimId)).toEqual([expect.objectContaining({
      kind: 'grant', money_kind: 'play', accounts: [source, account.id], amounts: [-250n, 250n],
      memo: { recipient: wallet, user_id: userId, section_key: intent.section_key, period: intent.period },
    })]);

    const n = await entryCount();
    expect(await grant(wallet, 250n, claimId)).toEqual({ user_id: userId, amount: 250n, ref_id: claimId, status: 'replayed' });
    expect(await entryCount()).toBe(n);
    expect(await balanceOf(cage, account.id)).toBe(250n);
    await expect(grant(wallet, 251n, claimId)).rejects.toMatchObject({ code: 'CGREF', message: 'ref_id_conflict' });
    // no open claim under the id, or one of another amount: nothing minted
    await expect(grant(wallet, 250n, newKey('claim'))).rejects.toMatchObject({ code: 'CGGNB', message: 'grant_not_backed' });
    await expect(grant(wallet, 251n, await openClaimIntent(db.owner, userId, 250n, wallet))).rejects.toMatchObject({ code: 'CGGNB' });
    await expectCleanAudit(cage);
  });

  test('refuses an unknown recipient, an EVM-only match, a bad amount or claim id', async () => {
    await expect(grant(solanaAddress(), 10n, newKey('claim'))).rejects.toMatchObject({ code: 'CGRNF', message: 'recipient_not_found' });
    // only a Solana wallet receives grants: a linked EVM address is not a recipient
    const evm = `0x${randomBytes(20).toString('hex')}`;
    await db.owner.query('select * from auth.link_wallet($1, $2, $3, $4)', [userId, evm, 'evm', 1]);
    await expect(grant(evm, 10n, newKey('claim'))).rejects.toMatchObject({ code: 'CGRNF' });
    await expect(grant(wallet, 0n, newKey('claim'))).rejects.toMatchObject({ code: 'CGIAM' });
    await expect(grant(wallet, 9007199254740992n, newKey('claim'))).rejects.toMatchObject({ code: 'CGIAM' });
    await expect(grant(wallet, 10n, '')).rejects.toMatchObject({ code: 'CGBRQ' });
    await expect(grant('', 10n, newKey('claim'))).rejects.toMatchObject({ code: 'CGBRQ' });
    // a claim id already used by another kind of movement is not a grant replay
    const a = await player(100n);
    const d = await openDeposit(cage, a.userId, newKey(), (await createTable(cage)).table_id, 0, 50n);
    await expect(grant(wallet, 50n, d.ref_id)).rejects.toMatchObject({ code: 'CGREF' });
    await cage.query('select * from cage.fail_deposit($1, $2)', [d.ref_id, 'test']);
    await expectCleanAudit(cage);
  });
});

describe('exchange_chips', () => {
  let userId: Awaited<ReturnType<typeof authUser>>;
  beforeAll(async () => {
    userId = await authUser(db.owner);
  });

  const exchange = async (direction: string, user: string, amount: bigint, ref: string, moneyKind = 'real') =>
    (await cage.query('select * from cage.exchange_chips($1, $2, $3, $4, $5, $6)', [direction, user, String(amount), ref, moneyKind, await fixtureOperator(db.owner)])).rows[0];

  test('a purchase brings chips in from outside, once per external ref', async () => {
    const ref = newKey('pay');
    expect(await exchange('purchase', userId, 300n, ref)).toEqual({ ref_id: `purchase:${ref}`, status: 'created', balance: 300n });
    const outside = await systemOf('outside', 'real');
    const account = await userAccount(db.owner, 'real', userId);
    expect(await entries(`purchase:${ref}`)).toEqual([expect.objectContaining({
      kind: 'purchase', money_kind: 'real', accounts: [outside, account.id], amounts: [-300n, 300n],
    })]);
    const n = await entryCount();
    expect(await exchange('purchase', userId, 300n, ref)).toEqual({ ref_id: `purchase:${ref}`, status: 'replayed', balance: 300n });
    expect(await entryCount()).toBe(n);
    await expect(exchange('purchase', userId, 301n, ref)).rejects.toMatchObject({ code: 'CGREF' });
    // the same external ref for another user is not a replay
    await expect(exchange('purchase', await authUser(db.owner), 300n, ref)).rejects.toMatchObject({ code: 'CGREF' });
    await expectCleanAudit(cage);
  });

  test('a redemption takes chips out, never beyond the balance, once per external ref', async () => {
    const u = await authUser(db.owner);
    await exchange('purchase', u, 100n, newKey('pay'));
    const ref = newKey('redeem');
    expect(await exchange('redemption', u, 60n, ref)).toEqual({ ref_id: `redemption:${ref}`, status: 'created', balance: 40n });
    expect(await entries(`redemption:${ref}`)).toEqual([expect.objectContaining({ kind: 'redemption', amounts: [60n, -60n] })]);
    expect(await exchange('redemption', u, 60n, ref)).toMatchObject({ status: 'replayed', balance: 40n });
    await expect(exchange('redemption', u, 41n, newKey('redeem'))).rejects.toMatchObject({ code: 'CGNSF', message: 'insufficient_cage_balance' });
    expect(await exchange('redemption', u, 40n, newKey('redeem'))).toMatchObject({ status: 'created', balance: 0n });
    await expectCleanAudit(cage);
  });

  test('refuses an unknown user, a bad direction, ref or money kind, and a bad amount', async () => {
    await expect(exchange('purchase', randomUUID(), 10n, newKey('pay'))).rejects.toMatchObject({ code: 'CGUNF', message: 'user_not_found' });
    await expect(exchange('gift', userId, 10n, newKey('pay'))).rejects.toMatchObject({ code: 'CGBRQ' });
    await expect(exchange('purchase', userId, 10n, 'has space')).rejects.toMatchObject({ code: 'CGBRQ' });
    await expect(exchange('purchase', userId, 10n, newKey('pay'), 'gold')).rejects.toMatchObject({ code: 'CGBRQ' });
    await expect(exchange('purchase', userId, 0n, newKey('pay'))).rejects.toMatchObject({ code: 'CGIAM' });
  });
});

describe('claim_custody', () => {
  test('only the owner claims a FREE entry; the claim credits chips (base units / 10^6) once', async () => {
    const t = await createTable(cage);
    const a = await player(500n);
    await sit(cage, game, a.userId, t.table_id, 0, 120n);
    const { settled } = await leave(cage, game, t.table_id, a.userId, 'custody');
    const entryId = settled.custody_entry_id!;
    expect(await balanceOf(cage, a.id)).toBe(380n);

    const claim = async (userId: string, id: bigint) =>
      claimCustody(cage, userId, id);
    await expect(claim(randomUUID(), entryId)).rejects.toMatchObject({ code: 'CGCNF', message: 'custody_entry_not_found' });
    await expect(claim(a.userId, 999999999n)).rejects.toMatchObject({ code: 'CGCNF' });

    const custody = await systemOf('custody');
    const custodyBefore = await balanceOf(cage, custody);
    const first = await claim(a.userId, entryId);
    expect(first).toEqual({
      entry_id: entryId, ref_id: `custody-claim:custody:${settled.idempotency_key}`, amount: 120n, money_kind: 'play',
      table_id: t.table_id, replayed: false,
    });
    expect(await entries(first.ref_id)).toEqual([expect.objectContaining({ kind: 'custody_claim', accounts: [custody, a.id], amounts: [-120n, 120n] })]);
    expect(await balanceOf(cage, a.id)).toBe(500n);
    expect(await balanceOf(cage, custody)).toBe(custodyBefore - 120n);
    const { rows: [entry] } = await cage.query('select status, claim_ref_id, claimed_at from cage.custody_entries where id = $1', [String(entryId)]);
    expect(entry).toEqual({ status: 'claimed', claim_ref_id: first.ref_id, claimed_at: expect.any(Date) });

    const n = await entryCount();
    expect(await claim(a.userId, entryId)).toEqual({ ...first, replayed: true });
    expect(await entryCount()).toBe(n);
    expect(await balanceOf(cage, a.id)).toBe(500n);
    await expectCleanAudit(cage);
  });

  test('an entry held for dispute or reconciliation is not claimable', async () => {
    const t = await createTable(cage);
    const a = await player(500n);
    await sit(cage, game, a.userId, t.table_id, 0, 100n);
    const { settled } = await leave(cage, game, t.table_id, a.userId, 'custody');
    await db.owner.query("update cage.custody_entries set status = 'disputed' where id = $1", [String(settled.custody_entry_id)]);
    await expect(cage.query('select * from cage.claim_custody($1, $2)', [await playerGrant(cage, a.userId), String(settled.custody_entry_id)]))
      .rejects.toMatchObject({ code: 'CGCNC', message: 'custody_not_claimable' });
    await db.owner.query("update cage.custody_entries set status = 'free' where id = $1", [String(settled.custody_entry_id)]);
    await claimCustody(cage, a.userId, settled.custody_entry_id!);
    expect(await balanceOf(cage, a.id)).toBe(500n);
    await expectCleanAudit(cage);
  });
});

describe('concurrency', () => {
  test('20 concurrent opens of one deposit key post exactly one buy-in', async () => {
    const t = await createTable(cage);
    const a = await player(1000n);
    const results = await Promise.all(Array.from({ length: 20 }, () => openDeposit(cage, a.userId, 'race', t.table_id, 0, 100n)));
    expect(results.filter((r) => !r.replayed)).toHaveLength(1);
    expect(new Set(results.map((r) => r.ref_id))).toEqual(new Set([`deposit:${a.userId}:race`]));
    expect(await entries(`deposit:${a.userId}:race`)).toHaveLength(1);
    expect(await balanceOf(cage, a.id)).toBe(900n);
    await expectCleanAudit(cage);
    await creditSeat(game, results[0]!.ref_id, t.table_id, a.userId, 0, 100n);
    await cage.query('select * from cage.confirm_deposit($1)', [results[0]!.ref_id]);
    await expectCleanAudit(cage);
  });

  test('20 concurrent settlements of one position under one key post exactly one cash-out', async () => {
    const t = await createTable(cage);
    const a = await player(1000n);
    await sit(cage, game, a.userId, t.table_id, 0, 150n);
    const up = await standUp(game, t.table_id, a.userId);
    const results = await Promise.all(Array.from({ length: 20 }, () => settlePosition(cage, {
      userId: a.userId, tableId: t.table_id, playerId: up.player_id, amount: 150n, historyHash: up.history_hash, settlement: 'cash_out',
    })));
    expect(results.filter((r) => !r.replayed)).toHaveLength(1);
    expect(await entries(results[0]!.ledger_ref_id)).toHaveLength(1);
    expect(await balanceOf(cage, a.id)).toBe(1000n);
    await game.query('select * from game.settle_seat($1, $2, $3)', [String(up.player_id), results[0]!.ledger_ref_id, 'cash_out']);
    await expectCleanAudit(cage);
  });

  test('open_deposit: a twin under the key that commits, seated, between the key read and the buy-in check is a replay', async () => {
    const t = await createTable(cage); // maxBuyIn 200
    const a = await player(1000n);
    const key = newKey('twin');
    const ref = `deposit:${a.userId}:${key}`;
    const open = 'select * from cage.open_deposit($1, $2, $3, $4, $5)';
    const args = [await playerGrant(cage, a.userId), key, t.table_id, 0, '150'];
    const result = await twinCommitsAfterKeyRead(
      `select * from cage.open_deposit(null, 'k', 'x', 0, 1)`,
      (c) => c.query(open, args),
      async (h) => {
        // the first call under the key opens the deposit and the game funds the seat with it
        await h.query(open, args);
        await h.query('select * from game.credit_seat($1, $2, $3, $4, $5)', [ref, t.table_id, a.userId, 0, '150']);
        await h.query('select * from cage.confirm_deposit($1)', [ref]);
      });
    // judged before its claim, the twin's 150 on the seat read as this call topping it up past maxBuyIn
    expect(result).toMatchObject({ rows: [{ ref_id: ref, status: 'confirmed', amount: 150n, replayed: true }] });
    expect(await entries(ref)).toHaveLength(1);
    expect(await balanceOf(cage, a.id)).toBe(850n);
    await expectCleanAudit(cage);
    await leave(cage, game, t.table_id, a.userId);
    expect(await balanceOf(cage, a.id)).toBe(1000n);
    await expectCleanAudit(cage);
  });

  test('settle_position: a twin under the key that commits, and whose seat the game zeroes, before the position check is a replay', async () => {
    const t = await createTable(cage);
    const a = await player(1000n);
    await sit(cage, game, a.userId, t.table_id, 0, 150n);
    const up = await standUp(game, t.table_id, a.userId);
    const key = withdrawKey(a.userId, t.table_id, up.history_hash, 150n);
    const settle = 'select * from cage.settle_position($1, $2, $3, $4, $5, $6, $7, $8)';
    const args = [a.userId, t.table_id, String(up.player_id), '150', up.history_hash, key, 'cash_out', false];
    const result = await twinCommitsAfterKeyRead(
      `select * from cage.settle_position(null, 'x', 1, 0, '', '', 'bust', false)`,
      (c) => c.query(settle, args),
      async (h) => {
        // the first call under the key settles the position, and the game zeroes the seat
        const { rows: [first] } = await h.query(settle, args);
        await h.query('select * from game.settle_seat($1, $2, $3)', [String(up.player_id), first.ledger_ref_id, 'cash_out']);
        await h.query('select * from cage.mark_withdrawal_settled($1)', [key]);
      });
    // judged before its claim, the closed seat read as a position that was never stood up
    expect(result).toMatchObject({ rows: [{ idempotency_key: key, ledger_ref_id: `withdraw:${key}`, amount: 150n, replayed: true }] });
    expect(await entries(`withdraw:${key}`)).toHaveLength(1);
    // the raw calls above write no receipt; the cage's route writes it in the settlement's transaction
    await issueReceipt(cage, TEST_RECEIPT_SIGNER, settlementReceiptFields(a.userId, t.table_id, (result as { rows: any[] }).rows[0]));
    expect(await balanceOf(cage, a.id)).toBe(1000n);
    await expectCleanAudit(cage);
  });

  test('cancel_credit racing the compensation\'s tombstone answers cancelled, not a unique violation', async () => {
    const t = await createTable(cage);
    const a = await player(500n);
    const d = await openDeposit(cage, a.userId, newKey(), t.table_id, 0, 100n);
    // the request compensates a refused push (a tombstone, the reversal) while the reconciler asks
    // the game to cancel the same key: the cancel looks for the key before the tombstone commits
    const holder = await worker.connect();
    let answer: Promise<unknown> | undefined;
    try {
      await holder.query('begin');
      await holder.query('select * from cage.fail_deposit($1, $2)', [d.ref_id, 'seat_taken']);
      answer = game.query('select game.cancel_credit($1, $2, $3, $4) as answer', [d.ref_id, t.table_id, a.userId, '100'])
        .then((r) => r.rows[0].answer, (err: unknown) => err);
      await waitForLockWait(db.owner, 'poker_game');
      await holder.query('commit');
    } finally {
      await holder.query('rollback').catch(() => undefined);
      holder.release();
    }
    expect(await answer).toBe('cancelled');
    // the reconciler then fails the deposit: already failed, nothing more is posted
    const n = await entryCount();
    expect((await worker.query('select status from cage.fail_deposit($1, $2)', [d.ref_id, 'seat_funding_failed'])).rows[0].status).toBe('failed');
    expect(await entryCount()).toBe(n);
    expect(await balanceOf(cage, a.id)).toBe(500n);
    await expect(creditSeat(game, d.ref_id, t.table_id, a.userId, 0, 100n)).rejects.toMatchObject({ code: 'GMCCN' });
    await expectCleanAudit(cage);
  });

  test('grant_play_chips: a twin under the claim id that commits first replays only for the same recipient (another is refused)', async () => {
    const userId = await authUser(db.owner);
    const [w1, w2] = [solanaAddress(), solanaAddress()];
    for (const w of [w1, w2]) await db.owner.query('select * from auth.link_wallet($1, $2, $3, $4)', [userId, w, 'solana', 0]);
    const account = await userAccount(db.owner, 'play', userId);
    const grant = 'select * from cage.grant_play_chips($1, $2, $3)';
    // the second call looks for the claim id while the first has posted it but not committed
    async function race(claimId: string, secondRecipient: string) {
      const holder = await cage.connect();
      try {
        await holder.query('begin');
        await holder.query(grant, [w1, '500', claimId]);
        const second = cage.query(grant, [secondRecipient, '500', claimId]).then((r) => r.rows[0], (err: unknown) => err);
        await waitForLockWait(db.owner, 'poker_cage');
        await holder.query('commit');
        return await second;
      } finally {
        await holder.query('rollback').catch(() => undefined);
        holder.release();
      }
    }
    const same = await openClaimIntent(db.owner, userId, 500, w1);
    expect(await race(same, w1)).toEqual({ user_id: userId, amount: 500n, ref_id: same, status: 'replayed' });
    // another wallet of the same user: the legs are the same, the grant is not; the claim names its
    // recipient, so the other wallet is refused at once, whether the twin has committed or not
    const other = await openClaimIntent(db.owner, userId, 500, w1);
    const holder = await cage.connect();
    try {
      await holder.query('begin');
      await holder.query(grant, [w1, '500', other]);
      await expect(cage.query(grant, [w2, '500', other])).rejects.toMatchObject({ code: 'CGGNB', message: 'grant_not_backed' });
      await holder.query('commit');
    } finally {
      await holder.query('rollback').catch(() => undefined);
      holder.release();
    }
    await expect(cage.query(grant, [w2, '500', other])).rejects.toMatchObject({ code: 'CGREF', message: 'ref_id_conflict' });
    expect(await entries(other)).toEqual([expect.objectContaining({ memo: expect.objectContaining({ recipient: w1, user_id: userId }) })]);
    expect(await balanceOf(cage, account.id)).toBe(1000n);
    await expectCleanAudit(cage);
  });

  test('20 concurrent cash-outs of one position under different keys settle it once', async () => {
    const t = await createTable(cage);
    const a = await player(1000n);
    await sit(cage, game, a.userId, t.table_id, 0, 150n);
    const up = await standUp(game, t.table_id, a.userId);
    const results = await Promise.allSettled(Array.from({ length: 20 }, () => settlePosition(cage, {
      userId: a.userId, tableId: t.table_id, playerId: up.player_id, amount: 150n, historyHash: up.history_hash,
      key: `0x${randomBytes(32).toString('hex')}`, settlement: 'cash_out',
    })));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    for (const r of results) {
      if (r.status === 'rejected') expect(r.reason).toMatchObject({ code: 'CGSAS' });
    }
    expect(await balanceOf(cage, a.id)).toBe(1000n);
    await expectCleanAudit(cage);
  });
});
