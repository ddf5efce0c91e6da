// Real concurrent clients against the posting function: no lost update, no deadlock, no overdraft.
import type pg from 'pg';
import { createTestDatabase, type TestDatabase, waitForLockWait } from '../../../test/helpers/db.ts';
import { balanceOf, expectBalancedBooks, fund, refId, systemAccount, userAccount } from '../../../test/helpers/cage.ts';

let db: TestDatabase;
let cage: pg.Pool;
beforeAll(async () => {
  db = await createTestDatabase();
  cage = db.ownerPool(50);
});
afterEach(async () => {
  await expectBalancedBooks(cage);
});
afterAll(async () => {
  await db.drop();
});

/** The raw SQL call, no retry: whatever the database says reaches the test. */
const post = (accounts: bigint[], amounts: bigint[], ref = refId()) =>
  cage.query('select * from cage.post_movement($1, $2, $3, $4::bigint[], $5::bigint[])', [
    ref, 'adjustment', 'play', accounts.map(String), amounts.map(String),
  ]);

test('50 concurrent credits to one account: no lost update', async () => {
  const target = await userAccount(cage);
  const sources = await Promise.all(Array.from({ length: 50 }, () => userAccount(cage)));
  for (const s of sources) await fund(cage, s.id, 10n);
  const results = await Promise.allSettled(sources.map((s, i) => post([s.id, target.id], [-BigInt(i + 1) % 10n - 1n, BigInt(i + 1) % 10n + 1n])));
  expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
  const expected = sources.reduce((sum, _s, i) => sum + (BigInt(i + 1) % 10n + 1n), 0n);
  expect(await balanceOf(cage, target.id)).toBe(expected);
  const { rows } = await cage.query('select version from cage.cage_accounts where id = $1', [target.id]);
  expect(rows[0].version).toBe(50n);
});

test('50 concurrent debits from one account: exactly what the balance allows, never below zero', async () => {
  const spender = await userAccount(cage);
  const house = await systemAccount(cage, 'house');
  await fund(cage, spender.id, 1000n);
  const results = await Promise.allSettled(Array.from({ length: 50 }, () => post([spender.id, house], [-30n, 30n])));
  const ok = results.filter((r) => r.status === 'fulfilled');
  const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  expect(ok).toHaveLength(33);
  expect(refused).toHaveLength(17);
  for (const r of refused) expect(r.reason).toMatchObject({ code: 'CGNSF', message: 'insufficient_cage_balance' });
  expect(await balanceOf(cage, spender.id)).toBe(10n);
  const { rows } = await cage.query('select min(balance_after) as low from cage.cage_ledger where account_id = $1', [spender.id]);
  expect(rows[0].low).toBeGreaterThanOrEqual(0n);
});

test('opposite-direction transfers between the same two accounts from many clients: no deadlock, exact arithmetic', async () => {
  const a = await userAccount(cage);
  const b = await userAccount(cage);
  await fund(cage, a.id, 1000n);
  await fund(cage, b.id, 1000n);
  // Legs in both orders too: the function, not the caller, fixes the lock order.
  const jobs = Array.from({ length: 60 }, (_, i) => {
    if (i % 4 === 0) return post([a.id, b.id], [-7n, 7n]);
    if (i % 4 === 1) return post([b.id, a.id], [-5n, 5n]);
    if (i % 4 === 2) return post([b.id, a.id], [7n, -7n]);
    return post([a.id, b.id], [5n, -5n]);
  });
  const results = await Promise.allSettled(jobs);
  expect(results.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason.code)).toEqual([]);
  // a: -7*15 (i%4==0) +5*15 (i%4==1) -7*15 (i%4==2) +5*15 (i%4==3) = -60
  expect(await balanceOf(cage, a.id)).toBe(940n);
  expect(await balanceOf(cage, b.id)).toBe(1060n);
});

test('a ring of transfers across many accounts from many clients: no deadlock', async () => {
  const accounts = await Promise.all(Array.from({ length: 6 }, () => userAccount(cage)));
  for (const acc of accounts) await fund(cage, acc.id, 500n);
  const jobs = Array.from({ length: 120 }, (_, i) => {
    const from = accounts[i % 6]!;
    const to = accounts[(i * 5 + 1) % 6]!;
    const other = accounts[(i + 3) % 6]!;
    if (from.id === to.id) return post([from.id, other.id], [-1n, 1n]);
    if (other.id === from.id || other.id === to.id) return post([from.id, to.id], [-2n, 2n]);
    return post([from.id, to.id, other.id], [-3n, 2n, 1n]);
  });
  const results = await Promise.allSettled(jobs);
  expect(results.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason.code)).toEqual([]);
  let total = 0n;
  for (const acc of accounts) total += await balanceOf(cage, acc.id);
  expect(total).toBe(3000n);
});

test('a single posting and a batch item under the same ref_id take their locks in one order: no deadlock', async () => {
  // ids ascend in creation order: y < x < z
  const y = await userAccount(cage);
  const x = await userAccount(cage);
  const z = await userAccount(cage);
  for (const acc of [y, x, z]) await fund(cage, acc.id, 100n);
  const ref = refId('lock-order');
  const single = await cage.connect();
  const batch = await cage.connect();
  const holder = await db.owner.connect();
  let first: Promise<unknown> | undefined;
  let second: Promise<unknown> | undefined;
  try {
    // compile both functions on their connections first, so each stops where the test means it to
    await single.query("select * from cage.post_movement('', 'adjustment', 'play', '{}', '{}')").catch(() => undefined);
    await batch.query("select * from cage.post_movements('[]')").catch(() => undefined);
    // the holder keeps y locked: the single posting claims the ref_id, then waits for y
    await holder.query('begin');
    await holder.query('select 1 from cage.cage_accounts where id = $1 for no key update', [y.id]);
    first = single.query('select status from cage.post_movement($1, $2, $3, $4::bigint[], $5::bigint[])', [
      ref, 'adjustment', 'play', [String(y.id), String(x.id)], ['-1', '1'],
    ]).then((r) => r.rows[0].status, (err: unknown) => err);
    await waitForLockWait(db.owner, 'poker_owner', { atLeast: 1 });
    // a batch item under the same ref_id that touches x (and not y)
    second = batch.query('select status, code from cage.post_movements($1::jsonb)', [JSON.stringify([
      { refId: ref, kind: 'adjustment', moneyKind: 'play', accounts: [String(x.id), String(z.id)], amounts: ['-1', '1'] },
    ])]).then((r) => r.rows, (err: unknown) => err);
    await waitForLockWait(db.owner, 'poker_owner', { atLeast: 2 });
    // y is free: the single posting goes on to lock y, then x
    await holder.query('commit');
    const [a, b] = await Promise.all([first, second]);
    // locked in opposite orders (batch: x, then the ref_id; single: the ref_id, then x) one of the
    // two would be killed as a deadlock (40P01) after deadlock_timeout
    expect(a).toBe('created');
    // the batch waited for the single posting's ref_id before it locked anything, and found it taken
    // with other fields once that committed: its own transient refusal, retried by the caller
    expect(b).toMatchObject({ code: '40001' });
  } finally {
    await holder.query('rollback').catch(() => undefined);
    holder.release();
    single.release();
    batch.release();
  }
  // retried, the batch sees the journal entry: a conflict, refused for that item only
  const retried = await cage.query('select status, code from cage.post_movements($1::jsonb)', [JSON.stringify([
    { refId: ref, kind: 'adjustment', moneyKind: 'play', accounts: [String(x.id), String(z.id)], amounts: ['-1', '1'] },
  ])]);
  expect(retried.rows).toEqual([{ status: 'refused', code: 'ref_id_conflict' }]);
  expect(await balanceOf(cage, y.id)).toBe(99n);
  expect(await balanceOf(cage, x.id)).toBe(101n);
  expect(await balanceOf(cage, z.id)).toBe(100n);
});
