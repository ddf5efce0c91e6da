// For SQL tests that need no commit: each test runs in one transaction on one client, rolled back
// after it, so nothing a test writes reaches the next one and assertions can be exact (a shared
// account's balance is what this test made it, not "at most" what every earlier test left). Tests
// of concurrency keep their own committed clone (test/helpers/db.ts): a rolled-back transaction
// cannot show what another connection sees.
import type pg from 'pg';

export interface RollbackEachTest {
  /** The client of the running test, inside its transaction. */
  readonly client: pg.PoolClient;
}

export function rollbackEachTest(pool: () => pg.Pool): RollbackEachTest {
  let current: pg.PoolClient | undefined;
  beforeEach(async () => {
    current = await pool().connect();
    await current.query('begin');
  });
  afterEach(async () => {
    const c = current;
    current = undefined;
    if (!c) return;
    try {
      await c.query('rollback');
    } finally {
      c.release();
    }
  });
  return {
    get client() {
      if (!current) throw new Error('rollbackEachTest: no test is running');
      return current;
    },
  };
}
