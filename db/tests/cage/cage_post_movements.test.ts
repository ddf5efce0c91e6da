// cage.post_movements: the batch form. Each movement has its own ref_id and its own result.
import type pg from 'pg';
import { postMovements, type Movement } from '../../../server/cage/ledger.ts';
import { createTestDatabase, type TestDatabase, waitForLockWait } from '../../../test/helpers/db.ts';
import { balanceOf, expectBalancedBooks, fund, refId, systemAccount, userAccount } from '../../../test/helpers/cage.ts';

let db: TestDatabase;
let cage: pg.Pool;
beforeAll(async () => {
  db = await createTestDatabase();
  cage = db.ownerPool(20);
});
afterEach(async () => {
  await expectBalancedBooks(cage);
});
afterAll(async () => {
  await db.drop();
});

const move = (accounts: bigint[], amounts: bigint[], ref = refId('batch'), kind = 'adjustment'): Movement => ({
  refId: ref, kind, moneyKind: 'play', accounts, amounts,
});

test('every movement gets its own result: created, replayed, refused', async () => {
  const a = await userAccount(cage);
  const b = await userAccount(cage);
  const real = await userAccount(cage, 'real');
  await fund(cage, a.id, 100n);
  const existing = move([a.id, b.id], [-10n, 10n]);
  await postMovements(cage, [existing]);

  const dup = move([a.id, b.id], [-1n, 1n]);
  const results = await postMovements(cage, [
    move([a.id, b.id], [-20n, 20n]), // 1 created
    existing, // 2 replay of a journal entry
    { ...existing, amounts: [-11n, 11n] }, // 3 conflict with a journal entry
    move([a.id, b.id], [-1000n, 1000n]), // 4 overdraft
    move([a.id, b.id], [-5n, 4n]), // 5 unbalanced
    move([a.id, 424242n], [-1n, 1n]), // 6 unknown account
    move([a.id, real.id], [-1n, 1n]), // 7 other money kind
    { ...move([a.id, b.id], [-1n, 1n]), kind: 'gift' }, // 8 unknown kind
    dup, // 9 created
    dup, // 10 in-batch replay of 9
    { ...dup, amounts: [-2n, 2n] }, // 11 in-batch conflict with 9
    move([b.id, a.id], [-30n, 30n]), // 12 b has 10 + 20 + 1 = 31 by now: created
  ]);
  expect(results.map((r) => [r.idx, r.status, r.code])).toEqual([
    [1, 'created', null],
    [2, 'replayed', null],
    [3, 'refused', 'ref_id_conflict'],
    [4, 'refused', 'insufficient_cage_balance'],
    [5, 'refused', 'unbalanced_movement'],
    [6, 'refused', 'account_not_found'],
    [7, 'refused', 'money_kind_mismatch'],
    [8, 'refused', 'unknown_movement_kind'],
    [9, 'created', null],
    [10, 'replayed', null],
    [11, 'refused', 'ref_id_conflict'],
    [12, 'created', null],
  ]);
  expect(results[9]!.entryId).toBe(results[8]!.entryId);
  expect(await balanceOf(cage, a.id)).toBe(100n - 10n - 20n - 1n + 30n);
  expect(await balanceOf(cage, b.id)).toBe(10n + 20n + 1n - 30n);
});

test('movements apply in order: a later one may spend what an earlier one credited; an overdraft refuses only itself', async () => {
  const a = await userAccount(cage);
  const b = await userAccount(cage);
  const c = await userAccount(cage);
  await fund(cage, a.id, 50n);
  const results = await postMovements(cage, [
    move([b.id, c.id], [-10n, 10n]), // b has nothing yet: refused
    move([a.id, b.id], [-50n, 50n]), // now b has 50
    move([b.id, c.id], [-30n, 30n]), // ok: b 20
    move([b.id, c.id], [-30n, 30n]), // refused: b has 20
    move([b.id, c.id], [-20n, 20n]), // ok: b 0
  ]);
  expect(results.map((r) => r.code ?? r.status)).toEqual([
    'insufficient_cage_balance', 'created', 'created', 'insufficient_cage_balance', 'created',
  ]);
  expect(await balanceOf(cage, b.id)).toBe(0n);
  expect(await balanceOf(cage, c.id)).toBe(50n);
  const { rows } = await cage.query('select balance_after, account_version from cage.cage_ledger where account_id = $1 order by id', [b.id]);
  expect(rows).toEqual([
    { balance_after: 50n, account_version: 1n },
    { balance_after: 20n, account_version: 2n },
    { balance_after: 0n, account_version: 3n },
  ]);
});

test('a replay of a refused in-batch movement gets the same refusal', async () => {
  const a = await userAccount(cage);
  const b = await userAccount(cage);
  const m = move([a.id, b.id], [-5n, 5n]);
  const results = await postMovements(cage, [m, m]);
  expect(results.map((r) => [r.status, r.code])).toEqual([
    ['refused', 'insufficient_cage_balance'],
    ['refused', 'insufficient_cage_balance'],
  ]);
});

test('1000 payouts from one pool in one call', async () => {
  const house = await systemAccount(cage, 'house');
  const users = await Promise.all(Array.from({ length: 1000 }, () => userAccount(cage)));
  const results = await postMovements(cage, users.map((u, i) => move([house, u.id], [-BigInt(i + 1), BigInt(i + 1)], refId('payout'), 'tournament_payout')));
  expect(results.every((r) => r.status === 'created')).toBe(true);
  expect(await balanceOf(cage, users[999]!.id)).toBe(1000n);
  expect(await balanceOf(cage, house)).toBe(-500500n);
  // the whole batch again: every one a replay, nothing posted
  const again = await postMovements(cage, users.map((u, i) => move([house, u.id], [-BigInt(i + 1), BigInt(i + 1)], results[i]!.refId!, 'tournament_payout')));
  expect(again.every((r) => r.status === 'replayed')).toBe(true);
  expect(await balanceOf(cage, house)).toBe(-500500n);
});

test('concurrent batches over the same accounts, in opposite orders: no deadlock, exact arithmetic', async () => {
  const accounts = await Promise.all(Array.from({ length: 8 }, () => userAccount(cage)));
  for (const acc of accounts) await fund(cage, acc.id, 1000n);
  const batch = (dir: number) =>
    Array.from({ length: 50 }, (_, i) => {
      const from = accounts[(i * (dir > 0 ? 1 : 7)) % 8]!;
      const to = accounts[(i * (dir > 0 ? 1 : 7) + 1) % 8]!;
      return move([from.id, to.id], [-3n, 3n]);
    });
  const results = await Promise.all(
    Array.from({ length: 10 }, (_, i) => cage.query('select * from cage.post_movements($1::jsonb)', [
      JSON.stringify(batch(i % 2 ? 1 : -1).map((m) => ({ ...m, accounts: m.accounts.map(String), amounts: m.amounts.map(String) }))),
    ])),
  );
  expect(results.flatMap((r) => r.rows).every((r) => r.status === 'created')).toBe(true);
  let total = 0n;
  for (const acc of accounts) total += await balanceOf(cage, acc.id);
  expect(total).toBe(8000n);
});

describe('malformed batches', () => {
  test.each([
    ['not an array', '{"refId":"x"}'],
    ['empty', '[]'],
  ])('refuses the whole call when %s', async (_name, json) => {
    await expect(cage.query('select * from cage.post_movements($1::jsonb)', [json])).rejects.toMatchObject({ code: 'CGBAT', message: 'invalid_batch' });
  });

  test('refuses malformed items one by one', async () => {
    const a = await userAccount(cage);
    const b = await userAccount(cage);
    await fund(cage, a.id, 10n);
    const { rows } = await cage.query('select idx, status, code from cage.post_movements($1::jsonb)', [
      JSON.stringify([
        'not an object',
        { kind: 'adjustment', moneyKind: 'play', accounts: [String(a.id), String(b.id)], amounts: [-1, 1] },
        { refId: refId(), kind: 'adjustment', moneyKind: 'play', accounts: [String(a.id), String(b.id)], amounts: [-1.5, 1.5] },
        { refId: refId(), kind: 'adjustment', moneyKind: 'play', accounts: 'a,b', amounts: [-1, 1] },
        { refId: refId(), kind: 'adjustment', moneyKind: 'play', accounts: [String(a.id), String(b.id)], amounts: ['-99999999999999999999999', '99999999999999999999999'] },
        { refId: refId(), kind: 'adjustment', moneyKind: 'gold', accounts: [String(a.id), String(b.id)], amounts: [-1, 1] },
        { refId: refId(), kind: 'adjustment', moneyKind: 'play', accounts: [String(a.id), String(b.id)], amounts: [-1, 1] },
      ]),
    ]);
    expect(rows.map((r) => [r.idx, r.status, r.code])).toEqual([
      [1, 'refused', 'invalid_postings'],
      [2, 'refused', 'invalid_ref_id'],
      [3, 'refused', 'invalid_amount'],
      [4, 'refused', 'invalid_postings'],
      [5, 'refused', 'amount_out_of_range'],
      [6, 'refused', 'unknown_money_kind'],
      [7, 'created', null],
    ]);
    expect(await balanceOf(cage, b.id)).toBe(1n);
  });
});

describe('judged before the lock, checked under it', () => {
  // The batch claims its ref_ids before it locks its accounts (the global lock order), so it judges
  // overdrafts on the committed balances first and checks the judgement once the accounts are locked.
  // Here a concurrent posting holds an account the batch needs and commits while the batch waits.

  const json = (ms: Movement[]) =>
    JSON.stringify(ms.map((m) => ({ ...m, accounts: m.accounts.map(String), amounts: m.amounts.map(String) })));

  /** The raw batch call (no retry) while `concurrent` posts in a transaction that commits once the batch waits. */
  async function batchAgainst(concurrent: Movement, ms: Movement[]) {
    const holder = await cage.connect();
    try {
      await holder.query('begin');
      await holder.query('select * from cage.post_movement($1, $2, $3, $4::bigint[], $5::bigint[])', [
        concurrent.refId, concurrent.kind, concurrent.moneyKind, concurrent.accounts.map(String), concurrent.amounts.map(String),
      ]);
      const call = cage.query('select status, code from cage.post_movements($1::jsonb)', [json(ms)])
        .then((r) => r.rows, (err: unknown) => err);
      await waitForLockWait(db.owner, 'poker_owner');
      await holder.query('commit');
      return await call;
    } finally {
      await holder.query('rollback').catch(() => undefined);
      holder.release();
    }
  }

  async function entryOf(ref: string) {
    const { rows } = await cage.query('select id from cage.cage_entries where ref_id = $1', [ref]);
    return rows.length;
  }

  test('an accepted movement the concurrent debit leaves short: the batch is retried (40001), then refuses it', async () => {
    const a = await userAccount(cage);
    const b = await userAccount(cage);
    const c = await userAccount(cage);
    await fund(cage, a.id, 100n);
    const ms = [move([a.id, c.id], [-50n, 50n])];
    expect(await batchAgainst(move([a.id, b.id], [-80n, 80n]), ms)).toMatchObject({ code: '40001' });
    expect(await entryOf(ms[0]!.refId)).toBe(0);
    expect((await postMovements(cage, ms)).map((r) => [r.status, r.code])).toEqual([['refused', 'insufficient_cage_balance']]);
    expect(await balanceOf(cage, a.id)).toBe(20n);
    expect(await balanceOf(cage, c.id)).toBe(0n);
  });

  test('a refused movement the concurrent credit would let through: the batch is retried (40001), then creates it', async () => {
    const a = await userAccount(cage);
    const b = await userAccount(cage);
    const c = await userAccount(cage);
    await fund(cage, a.id, 10n);
    await fund(cage, b.id, 100n);
    const ms = [move([a.id, c.id], [-50n, 50n]), move([b.id, c.id], [-5n, 5n])];
    expect(await batchAgainst(move([b.id, a.id], [-60n, 60n]), ms)).toMatchObject({ code: '40001' });
    expect(await entryOf(ms[1]!.refId)).toBe(0);
    expect((await postMovements(cage, ms)).map((r) => r.status)).toEqual(['created', 'created']);
    expect(await balanceOf(cage, a.id)).toBe(20n);
    expect(await balanceOf(cage, c.id)).toBe(55n);
  });

  test('a concurrent change that leaves every outcome as judged: results as usual, from the locked balances', async () => {
    const a = await userAccount(cage);
    const b = await userAccount(cage);
    const c = await userAccount(cage);
    await fund(cage, a.id, 10n);
    await fund(cage, b.id, 101n);
    // meanwhile b pays a 5: a is still short of 50, b still has enough for 5 and then 70
    const ms = [move([a.id, c.id], [-50n, 50n]), move([b.id, c.id], [-5n, 5n]), move([b.id, c.id], [-70n, 70n])];
    expect(await batchAgainst(move([b.id, a.id], [-5n, 5n]), ms)).toEqual([
      { status: 'refused', code: 'insufficient_cage_balance' },
      { status: 'created', code: null },
      { status: 'created', code: null },
    ]);
    expect(await balanceOf(cage, a.id)).toBe(15n);
    expect(await balanceOf(cage, b.id)).toBe(101n - 5n - 5n - 70n);
    expect(await balanceOf(cage, c.id)).toBe(75n);
    const { rows } = await cage.query('select balance_after from cage.cage_ledger where account_id = $1 order by id', [b.id]);
    expect(rows.map((r) => r.balance_after)).toEqual([101n, 96n, 91n, 21n]);
  });
});
