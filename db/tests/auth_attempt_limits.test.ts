// The attempt limiter's store: the auth role may run exactly the library's queries (count, read,
// delete the expired) and no other role sees the table; concurrent counts are exact.
import type pg from 'pg';
import { RateLimiterRes } from 'rate-limiter-flexible';
import { attemptCounter } from '../../server/auth/rate-limit.ts';
import { createTestDatabase, type TestDatabase } from '../../test/helpers/db.ts';

let db: TestDatabase;
let auth: pg.Pool;
beforeAll(async () => {
  db = await createTestDatabase();
  auth = db.pool('poker_auth', 10);
});
afterAll(async () => {
  await db.drop();
});

test('200 concurrent attempts on one key: exactly the limit pass, each refusal says when to come back', async () => {
  const counter = attemptCounter(auth, 'test:concurrent', 7, 60);
  const results = await Promise.allSettled(Array.from({ length: 200 }, () => counter.consume('peer')));
  expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(7);
  for (const r of results.filter((x) => x.status === 'rejected')) {
    expect(r.reason).toBeInstanceOf(RateLimiterRes);
    expect((r.reason as RateLimiterRes).msBeforeNext).toBeGreaterThan(0);
  }
  expect((await db.owner.query("select points from auth.attempt_limits where key = 'test:concurrent:peer'")).rows[0].points).toBe(200);
});

test('a lapsed window starts again; expired rows can be cleared by the auth role', async () => {
  const counter = attemptCounter(auth, 'test:window', 1, 60);
  await counter.consume('peer');
  await expect(counter.consume('peer')).rejects.toBeInstanceOf(RateLimiterRes);
  await db.owner.query("update auth.attempt_limits set expire = 1 where key = 'test:window:peer'");
  expect((await counter.consume('peer')).consumedPoints).toBe(1);
  await db.owner.query("update auth.attempt_limits set expire = 1 where key = 'test:window:peer'");
  // the library's own five-minute sweep (untyped in its .d.ts); it swallows errors, so the row count is the proof
  await (counter as unknown as { clearExpired(before: number): Promise<void> }).clearExpired(Date.now());
  expect((await db.owner.query("select count(*)::int as n from auth.attempt_limits where key = 'test:window:peer'")).rows[0].n).toBe(0);
});

test('no other role reads or writes the table', async () => {
  for (const role of ['poker_game', 'poker_cage', 'poker_admin', 'poker_anonymous', 'poker_worker'] as const) {
    const pool = db.pool(role, 1);
    await expect(pool.query('select * from auth.attempt_limits')).rejects.toMatchObject({ code: '42501' });
  }
  await expect(auth.query("update auth.attempt_limits set key = 'x'")).rejects.toMatchObject({ code: '42501' });
});
