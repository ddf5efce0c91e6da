import { createTestDatabase, type TestDatabase } from '../../test/helpers/db.ts';
import { fund, userAccount, balanceOf, expectCleanAudit } from '../../test/helpers/cage.ts';

let db: TestDatabase;
beforeAll(async () => { db = await createTestDatabase(); });
afterAll(async () => { await db.drop(); });

test('smoke', async () => {
  const cage = db.pool('poker_cage');
  const a = await userAccount(cage);
  await fund(cage, a.id, 100n);
  expect(await balanceOf(cage, a.id)).toBe(100n);
  await expectCleanAudit(cage);
});
