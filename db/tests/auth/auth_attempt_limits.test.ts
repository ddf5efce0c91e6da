// The attempt limiter's store: the auth role counts only through auth.count_attempt (it cannot
// reset a count or clear a window), no other role sees the table, and concurrent counts are exact.
import type pg from 'pg';
import { attemptCounter } from '../../../server/auth/rate-limit.ts';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/db.ts';

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
  const counter = attemptCounter(auth, 'recovery:concurrent', 7, 60);
  const results = await Promise.all(Array.from({ length: 200 }, () => counter.consume('peer')));
  expect(results.filter((r) => r.allowed)).toHaveLength(7);
  expect(new Set(results.map((r) => r.points)).size).toBe(200);
  for (const r of results.filter((x) => !x.allowed)) expect(r.msBeforeNext).toBeGreaterThan(0);
  expect((await db.owner.query("select points from auth.attempt_limits where key = 'recovery:concurrent:peer'")).rows[0].points).toBe(200);
});

test('a lapsed window starts again; a shorter window asked for does not reset a running one', async () => {
  const counter = attemptCounter(auth, 'recovery:window', 1, 60);
  expect((await counter.consume('peer')).allowed).toBe(true);
  expect((await counter.consume('peer')).allowed).toBe(false);
  expect((await attemptCounter(auth, 'recovery:window', 1, 1).consume('peer')).allowed).toBe(false);
  await db.owner.query("update auth.attempt_limits set expire = 1 where key = 'recovery:window:peer'");
  expect(await counter.consume('peer')).toMatchObject({ allowed: true, points: 1 });
  await expect(auth.query("select * from auth.count_attempt('', 60)")).rejects.toMatchObject({ code: 'AUATT' });
  await expect(auth.query("select * from auth.count_attempt('recovery:k', 0)")).rejects.toMatchObject({ code: 'AUATT' });
});

test('no role writes the table directly, the auth login included; no other role reads it', async () => {
  for (const role of ['poker_game', 'poker_cage', 'poker_admin', 'poker_anonymous', 'poker_worker'] as const) {
    const pool = db.pool(role, 1);
    await expect(pool.query('select * from auth.attempt_limits')).rejects.toMatchObject({ code: '42501' });
  }
  for (const sql of [
    "insert into auth.attempt_limits (key, points, expire) values ('x', 0, 0)",
    "update auth.attempt_limits set points = 0",
    'delete from auth.attempt_limits',
    'select * from auth.attempt_limits',
  ]) {
    await expect(auth.query(sql)).rejects.toMatchObject({ code: '42501' });
  }
});
