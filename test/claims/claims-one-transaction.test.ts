// A credited claim is ONE write transaction (issue 33): the claim's ledger row, its claimed state,
// its claim intent and the cage's `grant` movement commit together, with no call from the game to
// the cage. Counted from outside: the game reaches its bank (BANK_URL) only through a counting proxy
// in front of the cage, and the write transactions are counted by transaction ids (a read-only
// transaction takes none): an observer's pg_current_xact_id() before and after the claim, on a
// database where nothing else writes meanwhile, and the xmin of every row the claim wrote. A refusal
// writes nothing. Twenty concurrent claims of one section by one user credit once. The cage audit
// closes every test.
import type pg from 'pg';
import { expectCleanAudit } from '../helpers/cage.ts';
import { startChaosProxy, type ChaosProxy } from '../helpers/chaos-proxy.ts';
import { claimRecords, claimsClient, linkSolana, specClaimId } from '../helpers/claims.ts';
import { createTestDatabase, harnessSwitchOn, type TestDatabase } from '../helpers/db.ts';
import { startMoneyPlatform } from '../helpers/money.ts';

const NOW = '2026-03-04T12:00:00.000Z'; // a Wednesday
const PERIOD = '2026-W10';

let db: TestDatabase;
let cagePool: pg.Pool;
let proxy: ChaosProxy;
let m: Awaited<ReturnType<typeof startMoneyPlatform>>;
let c: ReturnType<typeof claimsClient>;
let rec: ReturnType<typeof claimRecords>;

beforeAll(async () => {
  db = await createTestDatabase();
  // the claims here are judged at the clocks the tests name: the test harness's
  await harnessSwitchOn(db);
  cagePool = db.pool('poker_cage');
  let cageUrl = '';
  // the game's bank (BANK_URL) is this proxy in front of the cage: every request the game makes to it is counted
  proxy = await startChaosProxy(() => cageUrl, 20261205);
  m = await startMoneyPlatform(db, { env: { BANK_URL: proxy.url } });
  cageUrl = m.cage;
  c = claimsClient(m);
  rec = claimRecords(db);
  expect((await c.settings({ claimBoardEnabled: true })).body).toMatchObject({ claimBoardEnabled: true });
});
afterAll(async () => {
  await m?.platform.stop();
  await proxy?.close();
  await expectCleanAudit(cagePool);
  await db.drop();
});

const requestsToTheBank = () => Object.values(proxy.counts).reduce((n, k) => n + k.pass + k.drop + k.lose_answer, 0);
/** The transaction id the next write transaction would take (the observer's own is one of them). */
const nextXid = async () => BigInt((await db.owner.query<{ x: string }>('select pg_current_xact_id()::text as x')).rows[0]!.x);
/** Write transactions committed (or begun) between two observations: the ids taken, less the second observer's. */
async function writesDuring(act: () => Promise<unknown>): Promise<bigint> {
  const before = await nextXid();
  await act();
  return (await nextXid()) - before - 1n;
}

/**
 * The fewest writes any of up to five runs took. The transaction-id counter is the whole server's:
 * another test file's database on it takes ids too, so a run can only count more than its own
 * writes, never fewer; the minimum over runs is its own (stopping at the first run that shows
 * `expected`). A change that writes more than `expected` fails every run.
 */
async function fewestWrites(run: () => Promise<bigint>, expected: bigint): Promise<bigint> {
  let fewest: bigint | null = null;
  for (let i = 0; i < 5 && fewest !== expected; i++) {
    const n = await run();
    if (fewest === null || n < fewest) fewest = n;
  }
  return fewest!;
}

test('a credited claim commits exactly one write transaction and makes no call to the cage', async () => {
  const bankBefore = requestsToTheBank();
  // the observer itself counts: two observations with nothing between are no write at all
  expect(await fewestWrites(() => writesDuring(async () => undefined), 0n)).toBe(0n);
  // a credited claim (each run a fresh player with a linked wallet, set up outside the count)
  let p!: Awaited<ReturnType<typeof m.player>>;
  let answer!: Awaited<ReturnType<typeof c.claim>>;
  const writes = await fewestWrites(async () => {
    p = await m.player();
    await linkSolana(db, p.userId);
    return writesDuring(async () => { answer = await c.claim(p.auth, { sectionKey: 'weekly_baseline' }, NOW); });
  }, 1n);
  const id = specClaimId(p.userId, 'weekly_baseline', PERIOD);
  expect(answer).toMatchObject({ status: 200, body: { outcome: 'credited', amount: 500, period: PERIOD, claimId: id } });
  expect(writes).toBe(1n);
  expect(requestsToTheBank()).toBe(bankBefore);
  // every row the claim wrote carries the one transaction's id
  const { rows } = await db.owner.query<{ what: string; xmin: string }>(
    `select 'ledger' as what, xmin::text from claims.claim_ledger where claim_id = $1
     union all select 'intent', xmin::text from claims.claim_intents where claim_id = $1
     union all select 'section', xmin::text from claims.user_claim_sections where user_id = $2 and section_key = 'weekly_baseline'
     union all select 'grant', xmin::text from cage.cage_entries where ref_id = $1 and kind = 'grant'`,
    [id, p.userId],
  );
  expect(rows.map((r) => r.what).sort()).toEqual(['grant', 'intent', 'ledger', 'section']);
  expect(new Set(rows.map((r) => r.xmin)).size).toBe(1);
  // the cage's own record of the grant (its memo as the cage writes it) and the balance
  expect((await cagePool.query('select user_id, recipient, amount from cage.grant_records where ref_id = $1', [id])).rows)
    .toEqual([{ user_id: p.userId, recipient: expect.any(String), amount: 500n }]);
  expect(await m.balance(p.auth)).toBe(500);
  // the intent is closed in the same transaction: the operators' reading shows nothing left to do
  expect((await db.owner.query('select status from claims.claim_intents where claim_id = $1', [id])).rows).toEqual([{ status: 'claimed' }]);
  await expectCleanAudit(cagePool);
});

test('a refused claim writes nothing: already claimed, locked, no wallet', async () => {
  const p = await m.player();
  await linkSolana(db, p.userId);
  expect((await c.claim(p.auth, { sectionKey: 'weekly_baseline' }, NOW)).status).toBe(200);
  const bare = await m.player();
  const bankBefore = requestsToTheBank();
  for (const [auth, section, status, error] of [
    [p.auth, 'weekly_baseline', 409, 'already_claimed'],
    [p.auth, 'build_agent', 409, 'locked'],
    [bare.auth, 'weekly_baseline', 409, 'wallet_not_linked'],
  ] as const) {
    let answer!: Awaited<ReturnType<typeof c.claim>>;
    expect(await fewestWrites(() => writesDuring(async () => { answer = await c.claim(auth, { sectionKey: section }, NOW); }), 0n)).toBe(0n);
    expect(answer).toMatchObject({ status, body: { error } });
  }
  expect(requestsToTheBank()).toBe(bankBefore);
  await expectCleanAudit(cagePool);
});

test('20 concurrent claims of one section by one user (real HTTP requests) credit once', async () => {
  for (const section of ['weekly_baseline', 'connect_wallet']) {
    const p = await m.player();
    await linkSolana(db, p.userId);
    if (section === 'connect_wallet') expect((await c.light(p.userId, 'wallet_linked')).status).toBe(200);
    const answers = await Promise.all(Array.from({ length: 20 }, () => c.claim(p.auth, { sectionKey: section }, NOW)));
    const counts: Record<string, number> = {};
    for (const a of answers) counts[`${a.status} ${a.body.outcome ?? a.body.error}`] = (counts[`${a.status} ${a.body.outcome ?? a.body.error}`] ?? 0) + 1;
    expect(counts).toEqual({ '200 credited': 1, '409 already_claimed': 19 });
    const id = specClaimId(p.userId, section, section === 'weekly_baseline' ? PERIOD : 'once');
    expect(await rec.ledger(p.userId)).toEqual([expect.objectContaining({ section_key: section, amount: 500, claim_id: id })]);
    expect(await rec.grants(id)).toHaveLength(1);
    expect(await m.balance(p.auth)).toBe(500);
  }
  await expectCleanAudit(cagePool);
});
