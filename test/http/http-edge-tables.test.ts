// Table creation has limits: a user creates at most TABLE_CREATE_LIMIT tables per
// TABLE_CREATE_WINDOW_SECONDS, counted in SQL so it holds under concurrency and across cage processes
// (429 table_limit_reached); and a turn timer above an hour is refused at creation (a value above
// 2,147,483 s used to overflow setTimeout and fire after 1 ms).
import { randomUUID } from 'node:crypto';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { expectCleanAudit } from '../helpers/cage.ts';
import { call, POKER_SETTINGS, startMoneyPlatform } from '../helpers/money.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';

const LIMIT = 3;
let db: TestDatabase;
let m: Awaited<ReturnType<typeof startMoneyPlatform>>;
let secondCage: TestPlatform;

beforeAll(async () => {
  db = await createTestDatabase();
  const env = { TABLE_CREATE_LIMIT: String(LIMIT), TABLE_CREATE_WINDOW_SECONDS: '3600' };
  m = await startMoneyPlatform(db, { env });
  // a second cage process on the same database, verifying the same auth role's tokens
  secondCage = await startTestPlatform({
    databaseUrl: db.url, roles: ['cage'],
    env: { ...env, AUTH_JWKS_URL: `${m.platform.url('auth')}/api/auth/jwks`, AUTH_BASE_URL: 'https://auth.poker.test' },
  });
});
afterAll(async () => {
  await secondCage?.stop();
  await m?.platform.stop();
  await expectCleanAudit(db.owner);
  await db?.drop();
});

const create = (cage: string, auth: Record<string, string>, settings: Record<string, unknown> = POKER_SETTINGS, tableId = `t-${randomUUID().slice(0, 12)}`, gameType = 'poker') =>
  call(`${cage}/api/tables`, { headers: auth, body: { tableId, gameType, settings } });
const tablesOf = async (userId: string) =>
  (await db.owner.query<{ n: number }>('select count(*)::int as n from game.tables where created_by = $1', [userId])).rows[0]!.n;

describe('tables per user per window', () => {
  test(`the ${LIMIT + 1}th table is 429 table_limit_reached; a replayed id does not count; another user is not limited`, async () => {
    const p = await m.player();
    const first = `t-${randomUUID().slice(0, 12)}`;
    expect((await create(m.cage, p.auth, POKER_SETTINGS, first)).status).toBe(200);
    expect((await create(m.cage, p.auth, POKER_SETTINGS, first)).status).toBe(409);
    for (let i = 1; i < LIMIT; i++) expect((await create(m.cage, p.auth)).status).toBe(200);
    const refused = await create(m.cage, p.auth);
    expect({ status: refused.status, body: refused.body }).toEqual({ status: 429, body: { error: 'table_limit_reached' } });
    expect(await tablesOf(p.userId)).toBe(LIMIT);
    const other = await m.player();
    expect((await create(m.cage, other.auth)).status).toBe(200);
  });

  test('concurrent creations on two cage processes: exactly the limit is created', async () => {
    const p = await m.player();
    const cages = [m.cage, secondCage.url('cage')];
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => create(cages[i % 2]!, p.auth)));
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses).toEqual([...Array(LIMIT).fill(200), ...Array(12 - LIMIT).fill(429)]);
    expect(await tablesOf(p.userId)).toBe(LIMIT);
  });

  test('tables older than the window do not count', async () => {
    const p = await m.player();
    for (let i = 0; i < LIMIT; i++) expect((await create(m.cage, p.auth)).status).toBe(200);
    expect((await create(m.cage, p.auth)).status).toBe(429);
    await db.owner.query("update game.tables set created_at = now() - interval '2 hours' where created_by = $1", [p.userId]);
    expect((await create(m.cage, p.auth)).status).toBe(200);
  });
});

describe('turnTimeSec at most one hour', () => {
  test.each([
    ['poker', 3601], ['poker', 2_147_484], ['arena', 3601],
  ] as const)('%s turnTimeSec %i is 400 validation_failed', async (gameType, turnTimeSec) => {
    const p = await m.player();
    const settings = gameType === 'poker' ? { ...POKER_SETTINGS, turnTimeSec }
      : { minBuyIn: 50, maxBuyIn: 500, maxPlayers: 4, rakePercent: 2.5, rakeCap: 5, turnTimeSec, turnTimerEnabled: true, scoreTarget: 100 };
    const r = await create(m.cage, p.auth, settings, undefined, gameType);
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('validation_failed');
    expect(r.body.issues).toEqual([expect.objectContaining({ path: ['settings', 'turnTimeSec'], code: 'too_big' })]);
    expect(await tablesOf(p.userId)).toBe(0);
  });

  test('3600 is accepted', async () => {
    const p = await m.player();
    expect((await create(m.cage, p.auth, { ...POKER_SETTINGS, turnTimeSec: 3600 })).status).toBe(200);
  });
});
