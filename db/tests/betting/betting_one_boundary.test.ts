// Betting has one boundary (issue 32): a stake, an unbet and a claim are each ONE transaction across
// the cage and betting schemas, called as the login that calls them (the cage's for the player's
// routes, the betting service's for its own), so no money leg can commit without its betting leg:
//   - the stake's bet_stake debit and its bet are written together (no pending stake, no bet
//     without its debit), replay-once on the (bettor, key) pair, twins included;
//   - an unbet removes the bet and credits the stake back together, whoever calls it;
//   - a claim brings the market up to date itself (no quote from another process) and still waits
//     for the audit mark of the tournament's hands.
// Every test ends with the cage audit empty.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { resolveSngSettings } from '../../../server/tournaments/settings.ts';
import { expectCleanAudit, fund, userAccount } from '../../../test/helpers/cage.ts';
import { createTestDatabase, playerGrant, waitForLockWait, type TestDatabase } from '../../../test/helpers/db.ts';
import { markHandsAudited } from '../../../test/helpers/tournament.ts';

let db: TestDatabase;
let cage: pg.Pool;
let betting: pg.Pool;
beforeAll(async () => {
  db = await createTestDatabase();
  cage = db.pool('poker_cage', 12);
  betting = db.pool('poker_betting', 4);
});
afterEach(async () => {
  await expectCleanAudit(db.owner);
});
afterAll(async () => {
  await db?.drop();
});

const BLINDS = { startingSmallBlind: 10, increaseFactor: 2, levelDurationSeconds: 60, anteStartLevel: null, startingAnte: 0, anteIncreaseFactor: 1 };

async function funded(chips: number) {
  const u = await userAccount(db.owner);
  await fund(db.owner, u.id, BigInt(chips));
  return { ...u, sid: await playerGrant(db.owner, u.userId) };
}

/** A playing Sit-and-Go of two paid players and its open market, as the tournament's own rows make it. */
async function playingMarket() {
  const tableId = `bet-${randomUUID().slice(0, 8)}`;
  const settings = resolveSngSettings({ mode: 'sng', seats: 2, entryFee: 100, rakeFee: 10, startingStack: 1000, blindStructure: BLINDS });
  await db.owner.query("select game.create_table($1, 'poker', $2, 'play', null, null, null, 'sng', 'open')", [tableId, JSON.stringify(settings)]);
  const runners: string[] = [];
  for (let i = 0; i < 2; i++) {
    const p = await funded(200);
    await db.owner.query('select * from cage.open_tournament_entry($1, $2, $3, null, 100, 120)', [p.sid, `k-${randomUUID()}`, tableId]);
    runners.push(p.userId);
  }
  await db.owner.query("update game.tables set starts_at = now() - interval '1 s' where table_id = $1", [tableId]);
  await db.owner.query('select game.tournament_begin_play($1)', [tableId]);
  await db.owner.query('select betting.sync_market($1)', [tableId]);
  return { tableId, marketId: `sng:${tableId}`, runners };
}

const stake = (q: pg.Pool | pg.Client, sid: string, key: string, marketId: string, runner: string, amount: number) =>
  q.query('select * from cage.open_bet_stake($1, $2, $3, $4, $5)', [sid, key, marketId, runner, amount]).then((r) => r.rows[0]);
const balance = async (accountId: bigint) =>
  BigInt((await db.owner.query('select balance from cage.cage_accounts where id = $1', [accountId])).rows[0].balance);
const betOf = async (ref: string) => (await db.owner.query('select status, amount from betting.bets where stake_ref = $1', [ref])).rows[0];
const debits = async (ref: string) => (await db.owner.query("select count(*)::int as n from cage.cage_entries where ref_id = $1 and kind = 'bet_stake'", [ref])).rows[0].n;

test('a stake is one transaction: when the cage login\'s stake call commits, its debit and its bet are both there (confirmed, never pending)', async () => {
  const t = await playingMarket();
  const bettor = await funded(300);
  const s = await stake(cage, bettor.sid, `k-${randomUUID()}`, t.marketId, t.runners[0]!, 120);
  expect(s).toMatchObject({ status: 'confirmed', amount: 120n, replayed: false });
  expect(await betOf(s.ref_id)).toEqual({ status: 'active', amount: 120n });
  expect(await debits(s.ref_id)).toBe(1);
  expect(await balance(bettor.id)).toBe(180n);
  // no stake is left waiting for another process: nothing pending anywhere
  expect((await db.owner.query("select count(*)::int as n from cage.bet_stakes where status = 'pending'")).rows[0].n).toBe(0);
});

test('two concurrent stakes with one key: the twin waits, then replays the confirmed stake with its bet; one debit', async () => {
  const t = await playingMarket();
  const bettor = await funded(300);
  const key = `twin-${randomUUID()}`;
  const first = new pg.Client({ connectionString: db.url, application_name: 'twin-first' });
  await first.connect();
  try {
    await first.query('begin');
    const opened = await stake(first, bettor.sid, key, t.marketId, t.runners[1]!, 70);
    let settled = false;
    const twin = stake(cage, bettor.sid, key, t.marketId, t.runners[1]!, 70).finally(() => { settled = true; });
    await waitForLockWait(db.owner, 'poker_cage', { settled: () => settled });
    await first.query('commit');
    const replay = await twin;
    expect(replay).toMatchObject({ ref_id: opened.ref_id, status: 'confirmed', replayed: true });
    expect(await betOf(opened.ref_id)).toEqual({ status: 'active', amount: 70n });
  } finally {
    await first.end();
  }
  const many = await Promise.all(Array.from({ length: 10 }, () => stake(cage, bettor.sid, key, t.marketId, t.runners[1]!, 70)));
  expect(many.every((r) => r.status === 'confirmed' && r.replayed)).toBe(true);
  expect(await debits(`bet-stake:${bettor.userId}:${key}`)).toBe(1);
  expect(await balance(bettor.id)).toBe(230n);
});

test('an unbet is one transaction whoever calls it: the bet leaves the pool and the stake comes back together; a replay moves nothing', async () => {
  const t = await playingMarket();
  const bettor = await funded(300);
  const viaCage = await stake(cage, bettor.sid, `k-${randomUUID()}`, t.marketId, t.runners[0]!, 100);
  const viaService = await stake(cage, bettor.sid, `k-${randomUUID()}`, t.marketId, t.runners[0]!, 40);
  expect(await balance(bettor.id)).toBe(160n);
  // the betting service's own route (its login, the bettor's grant): the credit comes with it
  const removed = (await betting.query('select * from betting.remove_bet($1, $2)', [bettor.sid, viaService.ref_id])).rows[0];
  expect(removed).toMatchObject({ stake_ref: viaService.ref_id, amount: 40n, replayed: false });
  expect(await balance(bettor.id)).toBe(200n);
  // the cage's route, the same function
  expect((await cage.query('select * from betting.remove_bet($1, $2)', [bettor.sid, viaCage.ref_id])).rows[0]).toMatchObject({ replayed: false });
  expect(await balance(bettor.id)).toBe(300n);
  expect((await cage.query('select * from betting.remove_bet($1, $2)', [bettor.sid, viaCage.ref_id])).rows[0]).toMatchObject({ replayed: true });
  expect(await balance(bettor.id)).toBe(300n);
  expect(await betOf(viaCage.ref_id)).toEqual({ status: 'unbet', amount: 100n });
  const { rows } = await db.owner.query('select status, refund_ref_id from cage.bet_stakes where ref_id = $1', [viaCage.ref_id]);
  expect(rows[0]).toEqual({ status: 'unbet', refund_ref_id: `bet-unbet:${viaCage.ref_id}` });
});

test('a claim settles its market itself, after the audit mark of the tournament\'s hands, and credits the recorded payout once', async () => {
  const t = await playingMarket();
  const bettor = await funded(300);
  await stake(cage, bettor.sid, `k-${randomUUID()}`, t.marketId, t.runners[0]!, 100);
  await db.owner.query(
    `update game.table_players set tournament_stack = case when user_id = $2 then 2000 else 0 end,
            elimination_order = case when user_id = $2 then 1 else 2 end, tie_place = case when user_id = $2 then 1 else 2 end
      where table_id = $1 and status <> 'closed'`, [t.tableId, t.runners[0]]);
  await db.owner.query("update game.tables set tournament_state = 'ended', ended_at = now(), current_hand_id = null where table_id = $1", [t.tableId]);
  // the hands are not audited yet: not settled, nothing moves
  await expect(cage.query('select * from cage.claim_bet_payout($1, $2)', [bettor.sid, t.marketId])).rejects.toMatchObject({ message: 'market_not_settled' });
  expect(await balance(bettor.id)).toBe(200n);
  await markHandsAudited(db.owner, t.tableId);
  // nobody else brought the market up to date: the claim does
  const claims = await Promise.all(Array.from({ length: 5 }, () => cage.query('select * from cage.claim_bet_payout($1, $2)', [bettor.sid, t.marketId]).then((r) => r.rows[0])));
  expect(claims.filter((c) => !c.replayed)).toHaveLength(1);
  expect(claims.every((c) => c.amount === 100n)).toBe(true);
  expect(await balance(bettor.id)).toBe(300n);
});

test('refused stakes write nothing: a closed market, an overdraft, another stake under a used key', async () => {
  const t = await playingMarket();
  const bettor = await funded(50);
  const key = `k-${randomUUID()}`;
  await expect(stake(cage, bettor.sid, key, t.marketId, t.runners[0]!, 51)).rejects.toMatchObject({ message: 'insufficient_cage_balance' });
  await stake(cage, bettor.sid, key, t.marketId, t.runners[0]!, 10);
  await expect(stake(cage, bettor.sid, key, t.marketId, t.runners[0]!, 11)).rejects.toMatchObject({ message: 'idempotency_key_reused' });
  await db.owner.query('update game.table_players set elimination_order = 2, tie_place = 2 where table_id = $1 and user_id = $2', [t.tableId, t.runners[0]]);
  await expect(stake(cage, bettor.sid, `k-${randomUUID()}`, t.marketId, t.runners[1]!, 10)).rejects.toMatchObject({ message: 'market_closed' });
  await db.owner.query('update game.table_players set elimination_order = null, tie_place = null where table_id = $1', [t.tableId]);
  expect((await db.owner.query('select count(*)::int as n from cage.bet_stakes where user_id = $1', [bettor.userId])).rows[0].n).toBe(1);
  expect(await balance(bettor.id)).toBe(40n);
});

test('migration 000048 finishes what the two-step design left half-way, once: a pending stake confirmed or compensated, a removed bet credited', async () => {
  const { readFile } = await import('node:fs/promises');
  const migration = await readFile(new URL('../../migrations/000048_betting_one_boundary.sql', import.meta.url), 'utf8');
  const finish = migration.slice(migration.indexOf('do $$'), migration.indexOf('$$;') + 3);
  const neverPending = /^alter table cage\.bet_stakes add constraint bet_stakes_never_pending .*;$/m.exec(migration)![0];
  // the table as an earlier version left it (its stakes could be pending)
  await db.owner.query('alter table cage.bet_stakes drop constraint bet_stakes_never_pending');
  const t = await playingMarket();
  const [a, b, c] = [await funded(100), await funded(100), await funded(100)];
  // as the old cage.open_bet_stake left them: a debit and a pending stake (b's bet landed, a's never did)
  const legacy = async (u: typeof a, amount: number) => {
    const ref = `bet-stake:${u.userId}:legacy-${randomUUID()}`;
    await db.owner.query(
      `insert into cage.bet_stakes (ref_id, idempotency_key, user_id, market_id, runner_user_id, amount, money_kind, status)
       values ($1, split_part($1, ':', 3), $2, $3, $4, $5, 'play', 'pending')`, [ref, u.userId, t.marketId, t.runners[0], amount]);
    await db.owner.query(
      `select cage.post_movement($1, 'bet_stake', 'play',
         array[cage.ensure_account('user', $2::uuid, null, 'play'), cage.ensure_account('betting', null, null, 'play')], array[-$3::bigint, $3::bigint],
         jsonb_build_object('market_id', $4::text, 'runner_user_id', $5::uuid, 'user_id', $2::uuid))`, [ref, u.userId, amount, t.marketId, t.runners[0]]);
    return ref;
  };
  const lost = await legacy(a, 30);
  const landed = await legacy(b, 40);
  await db.owner.query("insert into betting.bets (stake_ref, market_id, user_id, runner_user_id, amount) values ($1, $2, $3, $4, 40)", [landed, t.marketId, b.userId, t.runners[0]]);
  // c's bet removed by the betting service, its credit never came
  const removed = await legacy(c, 50);
  await db.owner.query("update cage.bet_stakes set status = 'confirmed' where ref_id = $1", [removed]);
  await db.owner.query("insert into betting.bets (stake_ref, market_id, user_id, runner_user_id, amount, status, unbet_at) values ($1, $2, $3, $4, 50, 'unbet', now())", [removed, t.marketId, c.userId, t.runners[0]]);
  expect((await db.owner.query<{ subject: string }>("select subject from cage.audit() where invariant = 'betting'")).rows.map((r) => r.subject).sort())
    .toEqual([`stake:${landed}`, `stake:${lost}`, `stake:${removed}`].sort());

  for (let run = 0; run < 2; run++) await db.owner.query(finish);
  // and no stake is pending any more: the constraint validates
  await db.owner.query(neverPending);
  const status = async (ref: string) => (await db.owner.query('select status, refund_ref_id from cage.bet_stakes where ref_id = $1', [ref])).rows[0];
  expect(await status(lost)).toEqual({ status: 'compensated', refund_ref_id: `${lost}:compensation` });
  expect(await status(landed)).toEqual({ status: 'confirmed', refund_ref_id: null });
  expect(await status(removed)).toEqual({ status: 'unbet', refund_ref_id: `bet-unbet:${removed}` });
  expect([await balance(a.id), await balance(b.id), await balance(c.id)]).toEqual([100n, 60n, 100n]);
});
