// Claims racing over real HTTP: one user firing 100 claims of one lit section at once, and 20 users
// firing 5 baseline claims each at once. Each earned claim is credited exactly once: one 200, the
// rest 409 already_claimed, one claim-ledger row, one cage grant entry, the balance = the amount.
import type pg from 'pg';
import { expectCleanAudit } from '../helpers/cage.ts';
import { claimRecords, claimsClient, linkSolana, specClaimId } from '../helpers/claims.ts';
import { createTestDatabase, harnessSwitchOn, type TestDatabase } from '../helpers/db.ts';
import { startMoneyPlatform } from '../helpers/money.ts';

let db: TestDatabase;
let cagePool: pg.Pool;
let m: Awaited<ReturnType<typeof startMoneyPlatform>>;
let c: ReturnType<typeof claimsClient>;
let rec: ReturnType<typeof claimRecords>;
beforeAll(async () => {
  db = await createTestDatabase();
  // the claims here are judged at the clocks the tests name: the test harness's
  await harnessSwitchOn(db);
  cagePool = db.pool('poker_cage');
  m = await startMoneyPlatform(db);
  c = claimsClient(m);
  rec = claimRecords(db);
  expect((await c.settings({ claimBoardEnabled: true })).body).toMatchObject({ claimBoardEnabled: true });
});
afterAll(async () => {
  await m?.platform.stop();
  await expectCleanAudit(cagePool);
  await db.drop();
});

const tally = (answers: { status: number; body: { outcome?: string; error?: string } }[]) => {
  const counts: Record<string, number> = {};
  for (const a of answers) {
    const key = `${a.status} ${a.body?.outcome ?? a.body?.error}`;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
};

test('100 concurrent claims of one lit unlock by one user: one credited, 99 already_claimed, one ledger row, one grant', async () => {
  const p = await m.player();
  await linkSolana(db, p.userId);
  expect((await c.light(p.userId, 'agent_version_republished')).body.lit).toEqual(['tune_republish']);
  const answers = await Promise.all(Array.from({ length: 100 }, () => c.claim(p.auth, { sectionKey: 'tune_republish' })));
  expect(tally(answers)).toEqual({ '200 credited': 1, '409 already_claimed': 99 });
  const id = specClaimId(p.userId, 'tune_republish', 'once');
  expect(answers.find((a) => a.status === 200)!.body).toMatchObject({ amount: 2500, claimId: id });
  expect(await rec.ledger(p.userId)).toEqual([expect.objectContaining({ section_key: 'tune_republish', amount: 2500, claim_id: id })]);
  expect(await rec.grants(id)).toHaveLength(1);
  expect(await m.balance(p.auth)).toBe(2500);
  expect(await rec.userSection(p.userId, 'tune_republish')).toMatchObject({ state: 'claimed', claim_id: id });
  await expectCleanAudit(cagePool);
});

test('20 users x 5 concurrent baseline claims each: every user credited exactly once', async () => {
  const players = await Promise.all(Array.from({ length: 20 }, () => m.player()));
  await Promise.all(players.map((p) => linkSolana(db, p.userId)));
  const clock = '2026-06-10T08:00:00.000Z';
  const period = '2026-W24';
  const answers = await Promise.all(
    players.flatMap((p) => Array.from({ length: 5 }, () => c.claim(p.auth, { sectionKey: 'weekly_baseline' }, clock).then((a) => ({ p, a })))),
  );
  expect(tally(answers.map((x) => x.a))).toEqual({ '200 credited': 20, '409 already_claimed': 80 });
  for (const p of players) {
    const mine = answers.filter((x) => x.p === p).map((x) => x.a);
    expect(tally(mine)).toEqual({ '200 credited': 1, '409 already_claimed': 4 });
    const id = specClaimId(p.userId, 'weekly_baseline', period);
    expect(mine.find((a) => a.status === 200)!.body).toMatchObject({ amount: 500, period, claimId: id });
    expect(await rec.ledger(p.userId)).toEqual([expect.objectContaining({ section_key: 'weekly_baseline', period, amount: 500, claim_id: id })]);
    expect(await rec.grants(id)).toHaveLength(1);
    expect(await m.balance(p.auth)).toBe(500);
  }
  const { rows } = await db.owner.query(
    `select count(*)::int as n, coalesce(sum(amount), 0)::int as total from claims.claim_ledger where section_key = 'weekly_baseline' and period = $1`,
    [period],
  );
  expect(rows[0]).toEqual({ n: 20, total: 10_000 });
});
