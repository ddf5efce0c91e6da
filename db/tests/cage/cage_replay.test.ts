// Replay-once: a ref_id posts once; a replay returns the original and posts nothing.
import type pg from 'pg';
import { postMovement } from '../../../server/cage/ledger.ts';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/db.ts';
import { balanceOf, expectBalancedBooks, fund, refId, userAccount } from '../../../test/helpers/cage.ts';

let db: TestDatabase;
let cage: pg.Pool;
beforeAll(async () => {
  db = await createTestDatabase();
  cage = db.ownerPool(40);
});
afterEach(async () => {
  await expectBalancedBooks(cage);
});
afterAll(async () => {
  await db.drop();
});

const entriesFor = async (ref: string) =>
  (await cage.query<{ n: number }>('select count(*)::int as n from cage.cage_ledger where ref_id = $1', [ref])).rows[0]!.n;

test('a replayed ref_id returns the original entry and posts nothing', async () => {
  const a = await userAccount(cage);
  const b = await userAccount(cage);
  await fund(cage, a.id, 100n);
  const movement = { refId: refId('replay'), kind: 'adjustment', moneyKind: 'play' as const, accounts: [a.id, b.id], amounts: [-40n, 40n] };
  const first = await postMovement(cage, movement);
  const second = await postMovement(cage, { ...movement, memo: { retried: true } });
  expect(first.status).toBe('created');
  expect(second).toEqual({ entryId: first.entryId, status: 'replayed', createdAt: first.createdAt });
  expect(await balanceOf(cage, a.id)).toBe(60n);
  expect(await entriesFor(movement.refId)).toBe(2);
});

test('a replayed ref_id with different money fields is refused and posts nothing', async () => {
  const a = await userAccount(cage);
  const b = await userAccount(cage);
  await fund(cage, a.id, 100n);
  const ref = refId('conflict');
  await postMovement(cage, { refId: ref, kind: 'adjustment', moneyKind: 'play', accounts: [a.id, b.id], amounts: [-40n, 40n] });
  await expect(
    postMovement(cage, { refId: ref, kind: 'adjustment', moneyKind: 'play', accounts: [a.id, b.id], amounts: [-41n, 41n] }),
  ).rejects.toMatchObject({ code: 'CGREF', message: 'ref_id_conflict' });
  await expect(
    postMovement(cage, { refId: ref, kind: 'grant', moneyKind: 'play', accounts: [a.id, b.id], amounts: [-40n, 40n] }),
  ).rejects.toMatchObject({ code: 'CGREF' });
  expect(await balanceOf(cage, a.id)).toBe(60n);
  expect(await entriesFor(ref)).toBe(2);
});

test('racing replays: exactly one posts, every other returns the same entry', async () => {
  const a = await userAccount(cage);
  const b = await userAccount(cage);
  await fund(cage, a.id, 100n);
  const ref = refId('race');
  const results = await Promise.all(
    Array.from({ length: 30 }, () =>
      cage.query('select * from cage.post_movement($1, $2, $3, $4::bigint[], $5::bigint[])', [
        ref, 'adjustment', 'play', [a.id, b.id].map(String), ['-25', '25'],
      ]),
    ),
  );
  const rows = results.map((r) => r.rows[0]);
  expect(rows.filter((r) => r.status === 'created')).toHaveLength(1);
  expect(rows.filter((r) => r.status === 'replayed')).toHaveLength(29);
  expect(new Set(rows.map((r) => r.entry_id)).size).toBe(1);
  expect(await balanceOf(cage, a.id)).toBe(75n);
  expect(await entriesFor(ref)).toBe(2);
});

test('a refused movement does not burn its ref_id: the same ref_id can post once funds arrive', async () => {
  const a = await userAccount(cage);
  const b = await userAccount(cage);
  const movement = { refId: refId('retry'), kind: 'adjustment', moneyKind: 'play' as const, accounts: [a.id, b.id], amounts: [-10n, 10n] };
  await expect(postMovement(cage, movement)).rejects.toMatchObject({ code: 'CGNSF' });
  await fund(cage, a.id, 10n);
  expect((await postMovement(cage, movement)).status).toBe('created');
});
