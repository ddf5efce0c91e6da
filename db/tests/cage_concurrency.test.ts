// Real concurrent clients against the posting function: no lost update, no deadlock, no overdraft.
import type pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../../test/helpers/db.ts';
import { balanceOf, expectCleanAudit, fund, refId, systemAccount, userAccount } from '../../test/helpers/cage.ts';

let db: TestDatabase;
let cage: pg.Pool;
beforeAll(async () => {
  db = await createTestDatabase();
  cage = db.pool('poker_cage', 50);
});
afterEach(async () => {
  await expectCleanAudit(cage);
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
