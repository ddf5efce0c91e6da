// The claim board per user: conditions met (markConditionMet), the claim done as the game role's
// HTTP layer does it (claims.credit_claim: one transaction, the cage's grant movement in it), every row of the spec's claim section state table, the weekly baseline across ISO
// weeks, claim-once under concurrency and below the functions, the append-only ledger, and the
// agent registry whose events are the unlock conditions. Called as the game role.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { keccak256, toHex } from 'viem';
import { fixtureOperator } from '../../../test/helpers/cage.ts';
import { ensureClaimant, holdCondition, isoWeek } from '../../../test/helpers/claims.ts';
import { createTestDatabase, harnessSwitchOn, playerGrant, type TestDatabase } from '../../../test/helpers/db.ts';
import { createTable } from '../../../test/helpers/game.ts';

let db: TestDatabase;
let admin: string;
let game: pg.Pool;
beforeAll(async () => {
  db = await createTestDatabase();
  // the claims here are judged at the clocks the tests name: the test harness's
  await harnessSwitchOn(db);
  admin = await fixtureOperator(db.owner);
  game = db.pool('poker_game');
  await game.query('select * from claims.set_board_settings($1, $2, $3, $4)', [admin, 'local', true, null]);
});
afterAll(async () => {
  await db.drop();
});

const ENV = 'local';
const user = () => randomUUID();
let seq = 0;
const newKey = (prefix = 'sec') => `${prefix}_${process.pid}_${++seq}`;
/** spec: claim_id = keccak256 over the text `userId:sectionKey:period` */
const claimIdOf = (userId: string, sectionKey: string, period: string) => keccak256(toHex(`${userId}:${sectionKey}:${period}`));

// Monday-to-Sunday ISO weeks of January 2026 (2026-01-01 is a Thursday, so 2026-W01 began on 2025-12-29)
const W02 = new Date('2026-01-07T10:00:00Z');
const W03 = new Date('2026-01-14T10:00:00Z');
const W04 = new Date('2026-01-21T10:00:00Z');
const W05 = new Date('2026-01-28T10:00:00Z');
const NOW = W02;

interface Mark { section_key: string; state: string; newly_lit: boolean; replayed: boolean }
/** A condition met, made to hold in the platform's state first (a known condition lights only while it holds). */
const mark = async (userId: string, conditionKey: string, idempotencyKey: string | null = randomUUID(), env = ENV) => {
  if (userId) await holdCondition(db.owner, userId, conditionKey);
  return (await game.query<Mark>('select * from claims.mark_condition_met($1, $2, $3, $4)', [env, userId, conditionKey, idempotencyKey])).rows;
};

interface Step { outcome: string; amount: bigint | null; period: string | null; kind: string | null }
/** The claim ids of the periods a claim at `now` can fall in (as the game computes them). */
const claimIdsAt = (userId: string, key: string | null, now: Date) =>
  ({ once: claimIdOf(userId, key ?? '', 'once'), [isoWeek(now)]: claimIdOf(userId, key ?? '', isoWeek(now)) });
/** claims.credit_claim as the game calls it: the player's token grant, the claim ids of the periods. */
const creditClaim = async (c: pg.PoolClient | pg.Pool, userId: string, key: string | null, now: Date = NOW, env = ENV, ids: unknown = claimIdsAt(userId, key, now)) =>
  (await c.query<Step & { claim_id: string | null; grant_tx: string | null }>('select * from claims.credit_claim($1, $2, $3, $4, $5)', [
    env, await playerGrant(db.owner, userId), key, now, JSON.stringify(ids),
  ])).rows[0]!;

/** The claim as server/claims/board.ts makes it: one call, one transaction; the ledger row it wrote. */
async function claim(userId: string, key: string | null, now: Date = NOW, env = ENV) {
  await ensureClaimant(db.owner, userId); // the claim pays the user's linked Solana wallet
  const { claim_id: claimId, grant_tx: _grantTx, ...step } = await creditClaim(game, userId, key, now, env);
  if (step.outcome !== 'credited') return { outcome: step.outcome, step };
  const entry = (await db.owner.query('select * from claims.claim_ledger where claim_id = $1', [claimId])).rows[0];
  return { outcome: 'credited', step, entry };
}

const userRow = async (userId: string, key: string) =>
  (await db.owner.query('select * from claims.user_claim_sections where user_id = $1 and section_key = $2', [userId, key])).rows[0];
const ledger = async (userId: string, key?: string) =>
  (await db.owner.query('select * from claims.claim_ledger where user_id = $1 and ($2::text is null or section_key = $2) order by id', [userId, key ?? null])).rows;
const boardOf = async (userId: string, now: Date = NOW, env = ENV) =>
  (await game.query('select * from claims.board($1, $2, $3)', [env, userId, now])).rows;
const sectionOf = async (userId: string, key: string, now: Date = NOW, env = ENV) =>
  (await boardOf(userId, now, env)).find((s) => s.key === key);

/** A fresh unlock section in `all`, bound to a fresh condition, so a test's catalog edits touch no other test. */
async function freshUnlock(amount = 700) {
  const key = newKey();
  const condition = newKey('cond');
  await game.query('select * from claims.create_section($1, $2, $3)', [admin, 'all', JSON.stringify({
    key, kind: 'unlock', cadence: 'once', conditionKey: condition, amount, order: 60,
  })]);
  return { key, condition };
}

describe('markConditionMet', () => {
  test('locked -> lit: lit_at set; again: unchanged and idempotent; a replayed idempotency key reports replayed', async () => {
    const u = user();
    expect(await sectionOf(u, 'connect_wallet')).toMatchObject({ state: 'locked', claimable: false, lit_at: null });

    expect(await mark(u, 'wallet_linked', 'wl-1')).toEqual([{ section_key: 'connect_wallet', state: 'lit', newly_lit: true, replayed: false }]);
    const lit = await userRow(u, 'connect_wallet');
    expect(lit).toMatchObject({ state: 'lit', claimed_at: null, period: null, claim_id: null });
    expect(lit.lit_at).toBeInstanceOf(Date);
    expect(await sectionOf(u, 'connect_wallet')).toMatchObject({ state: 'lit', claimable: true, lit_at: lit.lit_at });

    // the same condition again, under another key: nothing changes (lit_at kept)
    expect(await mark(u, 'wallet_linked', 'wl-2')).toEqual([{ section_key: 'connect_wallet', state: 'lit', newly_lit: false, replayed: false }]);
    // without a key
    expect(await mark(u, 'wallet_linked', null)).toEqual([{ section_key: 'connect_wallet', state: 'lit', newly_lit: false, replayed: false }]);
    // the first key again: a replay
    expect(await mark(u, 'wallet_linked', 'wl-1')).toEqual([{ section_key: 'connect_wallet', state: 'lit', newly_lit: false, replayed: true }]);
    expect(await userRow(u, 'connect_wallet')).toEqual(lit);
    // only the bound section was touched
    expect((await db.owner.query('select section_key from claims.user_claim_sections where user_id = $1', [u])).rows).toEqual([{ section_key: 'connect_wallet' }]);
    expect(await ledger(u)).toEqual([]);
  });

  test('a replayed idempotency key lights nothing, and is refused for another user or condition', async () => {
    const a = user();
    const b = user();
    const key = `replay-${randomUUID()}`;
    await mark(a, 'wallet_linked', key);
    await expect(mark(b, 'wallet_linked', key)).rejects.toMatchObject({ code: 'CLIKR', message: 'idempotency_key_reused' });
    await expect(mark(a, 'agent_seated', key)).rejects.toMatchObject({ code: 'CLIKR', message: 'idempotency_key_reused' });
    expect(await userRow(b, 'connect_wallet')).toBeUndefined();
    expect(await userRow(a, 'seat_agent')).toBeUndefined();
    expect(await mark(a, 'wallet_linked', key)).toEqual([{ section_key: 'connect_wallet', state: 'lit', newly_lit: false, replayed: true }]);
  });

  test('a section already holding a locked row becomes lit, and says so; a locked claim writes no row', async () => {
    const u = user();
    expect(await claim(u, 'seat_agent')).toMatchObject({ outcome: 'locked' });
    expect(await userRow(u, 'seat_agent')).toBeUndefined();
    // a locked row (as an older release left behind a locked claim)
    await db.owner.query("insert into claims.user_claim_sections (user_id, section_key) values ($1, 'seat_agent')", [u]);
    expect(await userRow(u, 'seat_agent')).toMatchObject({ state: 'locked', lit_at: null });
    expect(await mark(u, 'agent_seated')).toEqual([{ section_key: 'seat_agent', state: 'lit', newly_lit: true, replayed: false }]);
    expect(await userRow(u, 'seat_agent')).toMatchObject({ state: 'lit', lit_at: expect.any(Date) });
    expect(await claim(u, 'seat_agent')).toMatchObject({ outcome: 'credited' });
  });

  test('lights every live section bound to the key and only those; an unbound key lights nothing', async () => {
    const condition = newKey('cond');
    const [one, two, hidden] = [newKey(), newKey(), newKey()];
    for (const key of [one, two, hidden]) {
      await game.query('select * from claims.create_section($1, $2, $3)', [admin, 'all', JSON.stringify({ key, kind: 'unlock', cadence: 'once', conditionKey: condition, amount: 1, order: 70 })]);
    }
    await game.query('select * from claims.patch_section($1, $2, $3, $4)', [admin, ENV, hidden, JSON.stringify({ enabled: false })]);
    const u = user();
    expect(await mark(u, condition)).toEqual([one, two].sort().map((k) => ({ section_key: k, state: 'lit', newly_lit: true, replayed: false })));
    expect(await userRow(u, hidden)).toBeUndefined();
    expect(await mark(u, newKey('unbound'))).toEqual([]);
    // the baseline has no condition and is never lit by one
    expect(await userRow(u, 'weekly_baseline')).toBeUndefined();
  });

  test('refused when the board is off, for a bad condition key, user or environment; nothing written', async () => {
    const u = user();
    // staging was never set: fail closed
    await expect(mark(u, 'wallet_linked', 'k', 'staging')).rejects.toMatchObject({ code: 'CLOFF', message: 'claim_board_disabled' });
    for (const [userId, condition] of [[u, 'Bad Key'], [u, ''], [u, null], [null, 'wallet_linked']] as const) {
      await expect(game.query('select * from claims.mark_condition_met($1, $2, $3, $4)', [ENV, userId, condition, 'k']))
        .rejects.toMatchObject({ code: 'CLCND', message: 'invalid_condition' });
    }
    await expect(mark(u, 'wallet_linked', '')).rejects.toMatchObject({ code: 'CLCND' });
    await expect(mark(u, 'wallet_linked', 'x'.repeat(201))).rejects.toMatchObject({ code: 'CLCND' });
    await expect(mark(u, 'wallet_linked', 'k', 'all')).rejects.toMatchObject({ code: 'CLENV', message: 'invalid_environment' });
    expect(await userRow(u, 'connect_wallet')).toBeUndefined();
    expect((await db.owner.query('select count(*)::int as n from claims.condition_events where user_id = $1', [u])).rows[0].n).toBe(0);
  });
});

describe('the claim (state table)', () => {
  test('lit (unlock) -> claimed: one ledger row with the grant, claimed_at, period `once` and the claim id', async () => {
    const u = user();
    await mark(u, 'wallet_linked');
    const r = await claim(u, 'connect_wallet');
    const id = claimIdOf(u, 'connect_wallet', 'once');
    expect(r.step).toEqual({ outcome: 'credited', amount: 500n, period: 'once', kind: 'unlock' });
    expect(r.entry).toMatchObject({ user_id: u, section_key: 'connect_wallet', period: 'once', amount: 500n, claim_id: id, grant_tx: id });
    expect(await ledger(u)).toEqual([r.entry]);
    const row = await userRow(u, 'connect_wallet');
    expect(row).toMatchObject({ state: 'claimed', period: 'once', claim_id: id, lit_at: expect.any(Date), claimed_at: expect.any(Date) });
    expect(await sectionOf(u, 'connect_wallet')).toMatchObject({ state: 'claimed', claimable: false, period: 'once' });

    // claimed + markConditionMet again: unchanged
    expect(await mark(u, 'wallet_linked')).toEqual([{ section_key: 'connect_wallet', state: 'claimed', newly_lit: false, replayed: false }]);
    expect(await userRow(u, 'connect_wallet')).toEqual(row);

    // claimed + claim: already_claimed, credits nothing
    expect(await claim(u, 'connect_wallet')).toEqual({
      outcome: 'already_claimed', step: { outcome: 'already_claimed', amount: 500n, period: 'once', kind: 'unlock' },
    });
    expect(await ledger(u)).toEqual([r.entry]);
    expect(await userRow(u, 'connect_wallet')).toEqual(row);
  });

  test('locked + claim: locked, nothing written', async () => {
    const u = user();
    expect(await claim(u, 'inspect_decision')).toEqual({
      outcome: 'locked', step: { outcome: 'locked', amount: 1000n, period: 'once', kind: 'unlock' },
    });
    expect(await userRow(u, 'inspect_decision')).toBeUndefined();
    expect(await ledger(u)).toEqual([]);
    expect(await sectionOf(u, 'inspect_decision')).toMatchObject({ state: 'locked', claimable: false });
  });

  test('the baseline with no user row is claimable; claimed this week it is already_claimed', async () => {
    const u = user();
    expect(await sectionOf(u, 'weekly_baseline')).toMatchObject({ kind: 'baseline', state: 'lit', claimable: true, period: '2026-W02' });
    const r = await claim(u, 'weekly_baseline');
    expect(r.step).toEqual({ outcome: 'credited', amount: 500n, period: '2026-W02', kind: 'baseline' });
    expect(await ledger(u)).toEqual([expect.objectContaining({
      section_key: 'weekly_baseline', period: '2026-W02', amount: 500n, claim_id: claimIdOf(u, 'weekly_baseline', '2026-W02'),
    })]);
    expect(await userRow(u, 'weekly_baseline')).toMatchObject({
      state: 'claimed', period: '2026-W02', claim_id: claimIdOf(u, 'weekly_baseline', '2026-W02'), claimed_at: expect.any(Date),
    });
    expect(await sectionOf(u, 'weekly_baseline')).toMatchObject({ state: 'claimed', claimable: false, period: '2026-W02' });
    // later the same ISO week (Sunday, last second)
    const sunday = new Date('2026-01-11T23:59:59Z');
    expect((await claim(u, 'weekly_baseline', sunday)).outcome).toBe('already_claimed');
    expect(await ledger(u)).toHaveLength(1);
  });

  test('the baseline in a later ISO week is claimable again, one window amount only: skipped weeks never accumulate', async () => {
    const u = user();
    expect((await claim(u, 'weekly_baseline', W02)).outcome).toBe('credited');
    for (const week of [W03, W04]) {
      expect(await sectionOf(u, 'weekly_baseline', week)).toMatchObject({ state: 'lit', claimable: true });
    }
    const r = await claim(u, 'weekly_baseline', W05);
    expect(r.step).toEqual({ outcome: 'credited', amount: 500n, period: '2026-W05', kind: 'baseline' });
    expect((await ledger(u)).map((l) => [l.period, l.amount])).toEqual([['2026-W02', 500n], ['2026-W05', 500n]]);
    expect(await userRow(u, 'weekly_baseline')).toMatchObject({ period: '2026-W05', claim_id: claimIdOf(u, 'weekly_baseline', '2026-W05') });
    expect((await claim(u, 'weekly_baseline', W05)).outcome).toBe('already_claimed');
    // the clock is the caller's: the board of an earlier week still shows that week's claim
    expect(await sectionOf(u, 'weekly_baseline', W02)).toMatchObject({ state: 'claimed', claimable: false });
    expect(await ledger(u)).toHaveLength(2);
  });

  test('the ISO week turns at Monday 00:00 UTC (2026 has 53 weeks)', async () => {
    const u = user();
    expect((await claim(u, 'weekly_baseline', new Date('2027-01-03T23:59:59Z'))).step.period).toBe('2026-W53');
    expect((await claim(u, 'weekly_baseline', new Date('2026-12-28T00:00:00Z'))).outcome).toBe('already_claimed');
    expect((await claim(u, 'weekly_baseline', new Date('2027-01-04T00:00:00Z'))).step).toMatchObject({ outcome: 'credited', period: '2027-W01' });
    expect((await ledger(u)).map((l) => l.period)).toEqual(['2026-W53', '2027-W01']);
  });

  test('an unlock claimed, its section deleted and recreated with the same key: still already_claimed', async () => {
    const { key, condition } = await freshUnlock(700);
    const u = user();
    const other = user();
    await mark(u, condition);
    await mark(other, condition);
    expect((await claim(u, key)).outcome).toBe('credited');

    await game.query('select * from claims.delete_section($1, $2, $3)', [admin, 'all', key]);
    expect(await sectionOf(u, key)).toBeUndefined();
    expect((await claim(u, key)).outcome).toBe('forged');
    expect((await claim(other, key)).outcome).toBe('forged');

    await game.query('select * from claims.create_section($1, $2, $3)', [admin, 'all', JSON.stringify({
      key, kind: 'unlock', cadence: 'once', conditionKey: condition, amount: 900, order: 60,
    })]);
    expect(await claim(u, key)).toMatchObject({ outcome: 'already_claimed' });
    expect(await sectionOf(u, key)).toMatchObject({ state: 'claimed', claimable: false });
    expect(await mark(u, condition)).toEqual([{ section_key: key, state: 'claimed', newly_lit: false, replayed: false }]);
    expect(await ledger(u, key)).toEqual([expect.objectContaining({ amount: 700n, period: 'once' })]);
    // a user who had it lit but unclaimed claims the recreated section at its new amount
    expect(await claim(other, key)).toMatchObject({ outcome: 'credited', step: { amount: 900n } });
  });

  test('a claimed unlock key cannot come back with another kind or cadence, even after its rows are deleted', async () => {
    const { key, condition } = await freshUnlock();
    const u = user();
    await mark(u, condition);
    await claim(u, key);
    await game.query('select * from claims.delete_section($1, $2, $3)', [admin, 'all', key]);
    // a once-ever key recreated as the weekly baseline would pay every week: the ledger remembers it
    await expect(game.query('select * from claims.create_section($1, $2, $3)', [admin, 'all', JSON.stringify({
      key, kind: 'baseline', cadence: 'weekly', amount: 5, order: 60,
    })])).rejects.toMatchObject({ code: 'CLKCI', message: 'kind_cadence_immutable' });
    // and an unlock is always once, a baseline always weekly
    await expect(game.query('select * from claims.create_section($1, $2, $3)', [admin, 'all', JSON.stringify({
      key: `${key}_w`, kind: 'unlock', cadence: 'weekly', conditionKey: condition, amount: 5, order: 60,
    })])).rejects.toMatchObject({ code: 'CLSEC' });
    expect(await claim(u, key)).toMatchObject({ outcome: 'forged' });
    expect(await ledger(u, key)).toEqual([expect.objectContaining({ period: 'once' })]);
  });

  test('the ledger row alone blocks an unlock, whatever the user row says', async () => {
    const { key, condition } = await freshUnlock();
    const u = user();
    await mark(u, condition);
    await claim(u, key);
    // the owner turning the state back (a restore, a bad migration): the ledger still holds
    await db.owner.query("update claims.user_claim_sections set state = 'lit' where user_id = $1 and section_key = $2", [u, key]);
    expect((await claim(u, key)).outcome).toBe('already_claimed');
    expect(await sectionOf(u, key)).toMatchObject({ claimable: false });
    expect(await ledger(u, key)).toHaveLength(1);
  });

  test('the kill switch off: markConditionMet refused, the claim disabled, for a lit section too; nothing written', async () => {
    const u = user();
    const set = (on: boolean) => game.query('select * from claims.set_board_settings($1, $2, $3, null)', [admin, 'staging', on]);
    await set(true);
    await mark(u, 'agent_seated', null, 'staging');
    expect(await userRow(u, 'seat_agent')).toMatchObject({ state: 'lit' });
    await set(false);
    await expect(mark(u, 'hand_flagged', null, 'staging')).rejects.toMatchObject({ code: 'CLOFF', message: 'claim_board_disabled' });
    for (const key of ['seat_agent', 'weekly_baseline', 'hand_flagged', 'no_such_section']) {
      expect(await claim(u, key, NOW, 'staging')).toEqual({
        outcome: 'disabled', step: { outcome: 'disabled', amount: null, period: null, kind: null },
      });
    }
    expect(await userRow(u, 'inspect_decision')).toBeUndefined();
    expect(await userRow(u, 'weekly_baseline')).toBeUndefined();
    expect(await userRow(u, 'seat_agent')).toMatchObject({ state: 'lit' });
    expect(await ledger(u)).toEqual([]);
    // switched back on, the lit section is claimable again
    await set(true);
    expect((await claim(u, 'seat_agent', NOW, 'staging')).outcome).toBe('credited');
    await set(false);
  });

  test('a section hidden in this environment, or unknown: forged, nothing written; the board does not list it', async () => {
    const { key, condition } = await freshUnlock();
    const u = user();
    await mark(u, condition);
    await game.query('select * from claims.patch_section($1, $2, $3, $4)', [admin, ENV, key, JSON.stringify({ enabled: false })]);
    expect(await sectionOf(u, key)).toBeUndefined();
    expect(await claim(u, key)).toEqual({ outcome: 'forged', step: { outcome: 'forged', amount: null, period: null, kind: null } });
    for (const k of ['no_such_section', '', null]) {
      expect((await claim(u, k)).outcome).toBe('forged');
    }
    expect(await ledger(u)).toEqual([]);
    // visible in another environment, where the `all` row applies
    await game.query('select * from claims.set_board_settings($1, $2, $3, null)', [admin, 'production', true]);
    expect(await sectionOf(u, key, NOW, 'production')).toMatchObject({ state: 'lit', claimable: true });
    expect((await claim(u, key, NOW, 'production')).outcome).toBe('credited');
    await game.query('select * from claims.set_board_settings($1, $2, $3, null)', [admin, 'production', false]);
  });

  test('the board: every live section, the baseline first, with state and claimable', async () => {
    const u = user();
    await mark(u, 'agent_version_published');
    await mark(u, 'agent_seated');
    await claim(u, 'seat_agent');
    await claim(u, 'weekly_baseline');
    const board = await boardOf(u);
    expect(board.slice(0, 6).map((s) => [s.key, s.kind, s.cadence, s.amount, s.state, s.claimable, s.period])).toEqual([
      ['weekly_baseline', 'baseline', 'weekly', 500n, 'claimed', false, '2026-W02'],
      ['connect_wallet', 'unlock', 'once', 500n, 'locked', false, 'once'],
      ['build_agent', 'unlock', 'once', 500n, 'lit', true, 'once'],
      ['seat_agent', 'unlock', 'once', 1000n, 'claimed', false, 'once'],
      ['inspect_decision', 'unlock', 'once', 1000n, 'locked', false, 'once'],
      ['tune_republish', 'unlock', 'once', 2500n, 'locked', false, 'once'],
    ]);
    expect(board[3]).toMatchObject({ condition_key: 'agent_seated', lit_at: expect.any(Date), claimed_at: expect.any(Date) });
    expect((await boardOf(u, W03))[0]).toMatchObject({ state: 'lit', claimable: true, period: '2026-W03' });
  });

  test('credit_claim refuses a missing or made-up session, a missing clock, an invalid environment, and no claim id for the period', async () => {
    await expect(game.query("select * from claims.credit_claim($1, $2, $3, $4, '{}')", [ENV, null, 'weekly_baseline', NOW]))
      .rejects.toMatchObject({ code: 'AUSES', message: 'session_required' });
    await expect(game.query("select * from claims.credit_claim($1, $2, $3, $4, '{}')", [ENV, user(), 'weekly_baseline', NOW]))
      .rejects.toMatchObject({ code: 'AUSES', message: 'session_required' });
    await expect(game.query("select * from claims.credit_claim($1, $2, $3, $4, '{}')", [ENV, await playerGrant(db.owner, user()), 'weekly_baseline', null]))
      .rejects.toMatchObject({ code: 'CLCLM', message: 'invalid_claim' });
    await expect(creditClaim(game, user(), 'weekly_baseline', NOW, 'all')).rejects.toMatchObject({ code: 'CLENV' });
    // claim ids for other periods only (or malformed): refused, nothing written
    const u = user();
    await ensureClaimant(db.owner, u);
    for (const ids of [{}, { once: claimIdOf(u, 'weekly_baseline', 'once') }, { '2026-W02': 'not-a-claim-id' }, []]) {
      await expect(creditClaim(game, u, 'weekly_baseline', NOW, ENV, ids)).rejects.toMatchObject({ code: 'CLCLM', message: 'invalid_claim' });
    }
    expect((await db.owner.query('select count(*)::int as n from claims.claim_intents where user_id = $1', [u])).rows[0].n).toBe(0);
    expect(await ledger(u)).toEqual([]);
  });

  test('a claim id already another claim\'s is refused; an intent a claim of before left open is taken up under its own claim id', async () => {
    const a = user();
    const b = user();
    const taken = await claim(a, 'weekly_baseline');
    await ensureClaimant(db.owner, b);
    await expect(creditClaim(game, b, 'weekly_baseline', NOW, ENV, { [isoWeek(NOW)]: taken.entry.claim_id }))
      .rejects.toMatchObject({ code: 'CLCLM', message: 'invalid_claim' });
    expect(await ledger(b)).toEqual([]);
    // an open intent under another claim id (what open_claim left before issue 33): the claim takes it up, one grant
    const c = user();
    await ensureClaimant(db.owner, c);
    const forged = `0x${'d'.repeat(64)}`;
    await db.owner.query("insert into claims.claim_intents (claim_id, user_id, section_key, period, amount, kind) values ($1, $2, 'weekly_baseline', $3, 500, 'baseline')", [forged, c, isoWeek(NOW)]);
    expect(await claim(c, 'weekly_baseline')).toMatchObject({ outcome: 'credited', entry: { claim_id: forged } });
    expect((await db.owner.query("select count(*)::int as n from cage.cage_entries where ref_id = $1 and kind = 'grant'", [forged])).rows[0].n).toBe(1);
  });
});

describe('claim once', () => {
  /** n claims of one section by one user at once, each its own connection and transaction. */
  async function race(userId: string, key: string, n = 8) {
    await ensureClaimant(db.owner, userId);
    const answers = await Promise.all(Array.from({ length: n }, () => creditClaim(game, userId, key)));
    return answers.map((a) => a.outcome).sort();
  }

  test('claims of a lit unlock at once: one credited, the rest already_claimed, one grant', async () => {
    const u = user();
    await mark(u, 'hand_flagged');
    expect(await race(u, 'inspect_decision')).toEqual(['already_claimed', 'already_claimed', 'already_claimed', 'already_claimed', 'already_claimed', 'already_claimed', 'already_claimed', 'credited']);
    expect(await ledger(u)).toEqual([expect.objectContaining({ section_key: 'inspect_decision', amount: 1000n })]);
    const id = claimIdOf(u, 'inspect_decision', 'once');
    expect((await db.owner.query("select count(*)::int as n from cage.cage_entries where ref_id = $1 and kind = 'grant'", [id])).rows[0].n).toBe(1);
  });

  test('first claims of the baseline at once (no user row yet): one credited, one intent, one grant', async () => {
    const u = user();
    expect(await race(u, 'weekly_baseline')).toEqual(['already_claimed', 'already_claimed', 'already_claimed', 'already_claimed', 'already_claimed', 'already_claimed', 'already_claimed', 'credited']);
    expect(await ledger(u)).toEqual([expect.objectContaining({ section_key: 'weekly_baseline', period: '2026-W02' })]);
    expect((await db.owner.query('select status from claims.claim_intents where user_id = $1', [u])).rows).toEqual([{ status: 'claimed' }]);
  });

  test('a claim that fails after its grant leaves nothing: the grant, the ledger row and the intent roll back together', async () => {
    const u = user();
    await ensureClaimant(db.owner, u);
    const client = await game.connect();
    try {
      await client.query('begin');
      expect((await creditClaim(client, u, 'weekly_baseline')).outcome).toBe('credited');
      await client.query('rollback');
    } finally {
      client.release();
    }
    const id = claimIdOf(u, 'weekly_baseline', '2026-W02');
    expect((await db.owner.query('select count(*)::int as n from cage.cage_entries where ref_id = $1', [id])).rows[0].n).toBe(0);
    expect((await db.owner.query('select count(*)::int as n from claims.claim_intents where claim_id = $1', [id])).rows[0].n).toBe(0);
    expect(await ledger(u)).toEqual([]);
    // retryable: the claim credits once
    expect(await claim(u, 'weekly_baseline')).toMatchObject({ outcome: 'credited', entry: { claim_id: id, amount: 500n } });
  });

  test('the ledger\'s own guards stand behind the claim (the owner writes past it)', async () => {
    const u = user();
    await claim(u, 'weekly_baseline', W02);
    const id = claimIdOf(u, 'weekly_baseline', '2026-W02');
    await expect(db.owner.query("insert into claims.claim_ledger (user_id, section_key, period, amount, claim_id) values ($1, 'weekly_baseline', '2026-W03', 500, $2)", [u, id]))
      .rejects.toMatchObject({ code: '23505', constraint: 'claim_ledger_claim_id_unique' });
    await expect(db.owner.query("insert into claims.claim_ledger (user_id, section_key, period, amount, claim_id) values ($1, 'weekly_baseline', '2026-W02', 500, $2)", [u, `0x${'c'.repeat(64)}`]))
      .rejects.toMatchObject({ code: '23505', constraint: 'claim_ledger_once_per_period' });
    expect(await ledger(u)).toHaveLength(1);
    expect(await userRow(u, 'weekly_baseline')).toMatchObject({ period: '2026-W02', claim_id: id });
  });

  test('the claim ledger is append-only, for the owner too', async () => {
    const u = user();
    await claim(u, 'weekly_baseline');
    for (const sql of [
      'update claims.claim_ledger set amount = amount + 1',
      "update claims.claim_ledger set period = 'x' where user_id = $1",
      'delete from claims.claim_ledger where user_id = $1',
      'truncate claims.claim_ledger',
      'truncate claims.claim_ledger cascade',
    ]) {
      await expect(db.owner.query(sql, sql.includes('$1') ? [u] : [])).rejects.toMatchObject({ code: 'CGIMM' });
    }
    expect(await ledger(u)).toHaveLength(1);
  });
});

describe('agents', () => {
  const createAgent = async (owner: string, name: string | null) =>
    (await game.query('select * from game.create_agent($1, $2)', [await playerGrant(db.owner, owner), name])).rows[0];
  const publish = async (userId: string, agentId: string, manifest: unknown = null) =>
    (await game.query('select * from game.publish_agent_version($1, $2, $3)', [await playerGrant(db.owner, userId), agentId, manifest === null ? null : JSON.stringify(manifest)])).rows[0];
  const flag = async (userId: string, agentId: string, handId: string | null = 'hand-1', note: string | null = null) =>
    (await game.query('select * from game.flag_agent_decision($1, $2, $3, $4)', [await playerGrant(db.owner, userId), agentId, handId, note])).rows[0];
  /** A hand stored by the live tables with these agents dealt in (hand ids are made unique per test run). */
  const played = async (agents: string[], handId = `hand-${randomUUID()}`) => {
    const table = await createTable(db.owner);
    await db.owner.query("select game.record_hand($1, $2, 1, 'finished', '[]'::jsonb, null, $3::uuid[])", [table.table_id, handId, agents]);
    return handId;
  };

  test('create_agent trims the name and refuses a bad one', async () => {
    const u = user();
    expect(await createAgent(u, '  Bot One ')).toMatchObject({ owner_user_id: u, name: 'Bot One', id: expect.any(String) });
    for (const name of ['', '   ', 'x'.repeat(65), null]) {
      await expect(createAgent(u, name)).rejects.toMatchObject({ code: 'GMAGT', message: 'invalid_agent' });
    }
    await expect(game.query('select * from game.create_agent($1, $2)', [null, 'x'])).rejects.toMatchObject({ code: 'AUSES' });
  });

  test('publish: the first version fires agent_version_published, the next none, one after a flag agent_version_republished', async () => {
    const u = user();
    const agent = await createAgent(u, 'bot');
    expect(await publish(u, agent.id, { strategy: 'tight' })).toMatchObject({ agent_id: agent.id, version: 1, event: 'agent_version_published' });
    expect(await publish(u, agent.id)).toMatchObject({ version: 2, event: null });
    const hand = await played([agent.id, randomUUID()]);
    expect(await flag(u, agent.id, hand, 'folded the nuts')).toMatchObject({ agent_id: agent.id, version: 2, hand_id: hand, flagged_by: u });
    expect(await publish(u, agent.id)).toMatchObject({ version: 3, event: 'agent_version_republished' });
    expect(await publish(u, agent.id)).toMatchObject({ version: 4, event: null });
    const { rows } = await db.owner.query('select version, manifest from game.agent_versions where agent_id = $1 order by version', [agent.id]);
    expect(rows).toEqual([
      { version: 1, manifest: { strategy: 'tight' } }, { version: 2, manifest: {} }, { version: 3, manifest: {} }, { version: 4, manifest: {} },
    ]);
  });

  test("another user's agent, or an unknown one, is agent_not_found; a flag before any version is invalid_agent", async () => {
    const owner = user();
    const agent = await createAgent(owner, 'bot');
    const intruder = user();
    await expect(publish(intruder, agent.id)).rejects.toMatchObject({ code: 'GMANF', message: 'agent_not_found' });
    await expect(flag(intruder, agent.id)).rejects.toMatchObject({ code: 'GMANF', message: 'agent_not_found' });
    await expect(publish(owner, randomUUID())).rejects.toMatchObject({ code: 'GMANF' });
    await expect(flag(owner, agent.id)).rejects.toMatchObject({ code: 'GMAGT', message: 'invalid_agent' });
    await expect(publish(owner, agent.id, [1, 2])).rejects.toMatchObject({ code: 'GMAGT' });
    await expect(publish(owner, agent.id, { blob: 'x'.repeat(17000) })).rejects.toMatchObject({ code: 'GMAGT' });
    expect((await db.owner.query('select count(*)::int as n from game.agent_versions where agent_id = $1', [agent.id])).rows[0].n).toBe(0);
    await publish(owner, agent.id);
    await expect(flag(owner, agent.id, '')).rejects.toMatchObject({ code: 'GMAGT' });
    await expect(flag(owner, agent.id, 'h', 'n'.repeat(1001))).rejects.toMatchObject({ code: 'GMAGT' });
    // a flag names a hand the agent was dealt into
    await expect(flag(owner, agent.id, null, null)).rejects.toMatchObject({ code: 'GMAGT', message: 'invalid_agent' });
    await expect(flag(owner, agent.id, `hand-${randomUUID()}`)).rejects.toMatchObject({ code: 'GMHNF', message: 'hand_not_found' });
    await expect(flag(owner, agent.id, await played([randomUUID()]))).rejects.toMatchObject({ code: 'GMHNF', message: 'hand_not_found' });
    const hand = await played([agent.id]);
    expect(await flag(owner, agent.id, hand, null)).toMatchObject({ version: 1, hand_id: hand });
    expect((await db.owner.query('select count(*)::int as n from game.agent_flags where agent_id = $1', [agent.id])).rows[0].n).toBe(1);
  });

  test('the events, reported as conditions, light build_agent, inspect_decision and tune_republish', async () => {
    const u = user();
    const agent = await createAgent(u, 'bot');
    const events: string[] = [];
    const report = async (event: string | null, key: string) => {
      if (!event) return;
      events.push(event);
      await mark(u, event, key);
    };
    const v1 = await publish(u, agent.id);
    await report(v1.event, `${v1.event}:${agent.id}:${v1.version}`);
    const f = await flag(u, agent.id, await played([agent.id]));
    await report('hand_flagged', `hand_flagged:${agent.id}:${f.id}`);
    const v2 = await publish(u, agent.id);
    await report(v2.event, `${v2.event}:${agent.id}:${v2.version}`);
    expect(events).toEqual(['agent_version_published', 'hand_flagged', 'agent_version_republished']);
    const board = await boardOf(u);
    expect(board.filter((s) => s.claimable).map((s) => s.key)).toEqual(['weekly_baseline', 'build_agent', 'inspect_decision', 'tune_republish']);
  });
});
