// The Sit-and-Go lifecycle in SQL (db/functions/tournaments), called as the roles call it (the
// cage, game and worker database roles): every transition and every refusal code, concurrent
// registrations for the last seat, several busts in one hand (the bigger start stack places higher;
// equal stacks share their places' prizes), force-end, the blind deadline, payouts and closing, and
// the cage audit's tournament books (including a tampered pool).
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { correct, expectCleanAudit, fund, userAccount } from '../helpers/cage.ts';
import { markHandsAudited } from '../helpers/tournament.ts';
import { createTestDatabase, playerGrant, type TestDatabase } from '../helpers/db.ts';
import { audit } from '../../server/cage/ledger.ts';
import { resolveSngSettings } from '../../server/tournaments/settings.ts';
import { createTournamentPayoutReconcileTask, payoutIntentKey } from '../../tasks/tournament_timers.ts';

let db: TestDatabase;
let cage: pg.Pool;
let game: pg.Pool;
let worker: pg.Pool;

beforeAll(async () => {
  db = await createTestDatabase();
  cage = db.pool('poker_cage');
  game = db.pool('poker_game');
  worker = db.pool('poker_worker');
});
/** Tables whose books a test tampered with on purpose (the audit must name them, and only them). */
const tampered = new Set<string>();
afterAll(async () => {
  expect((await audit(cage)).filter((v) => !tampered.has(v.subject))).toEqual([]);
  await db.drop();
});

const BLINDS = { startingSmallBlind: 10, increaseFactor: 2, levelDurationSeconds: 60, anteStartLevel: null, startingAnte: 0, anteIncreaseFactor: 1 };

async function sngTable(over: Record<string, unknown> = {}, kind = 'open') {
  const tableId = `sql-${randomUUID().slice(0, 8)}`;
  const settings = resolveSngSettings({ mode: 'sng', seats: 4, entryFee: 100, rakeFee: 10, startingStack: 1000, blindStructure: BLINDS, ...over });
  await db.owner.query("select game.create_table($1, 'poker', $2, 'play', null, null, null, 'sng', $3)", [tableId, JSON.stringify(settings), kind]);
  return tableId;
}

async function funded(chips = 1000) {
  const u = await userAccount(db.owner);
  if (chips > 0) await fund(db.owner, u.id, BigInt(chips));
  return u;
}

const codeOf = (p: Promise<unknown>) => p.then(() => 'ok', (err: { message: string }) => err.message);

/** Registers and pays (the sng deposit) for `n` fresh users; returns their user ids. */
async function fill(tableId: string, n: number, fee = 100) {
  const users: string[] = [];
  for (let i = 0; i < n; i++) {
    const u = await funded();
    await cage.query('select * from cage.open_tournament_entry($1, $2, $3, null, $4, 120)', [await playerGrant(cage, u.userId), `k-${randomUUID()}`, tableId, fee]);
    users.push(u.userId);
  }
  return users;
}

const tableRow = async (tableId: string) => (await db.owner.query('select * from game.tables where table_id = $1', [tableId])).rows[0];
const players = async (tableId: string) =>
  (await db.owner.query('select * from game.table_players where table_id = $1 order by seat_index', [tableId])).rows;

/** starting -> playing now (the grace is made past instead of waited for). */
async function play(tableId: string) {
  await db.owner.query("update game.tables set starts_at = now() - interval '1 s' where table_id = $1", [tableId]);
  await worker.query('select game.tournament_begin_play($1)', [tableId]);
}

async function hand(tableId: string, stacks: Record<string, number>, autoFolds = 0) {
  const handId = `h-${randomUUID().slice(0, 8)}`;
  const epoch = await db.leaseEpoch(tableId);
  await db.owner.query('select game.begin_hand($1, $2, $3)', [tableId, handId, epoch]);
  const { rows } = await db.owner.query('select * from game.finish_tournament_hand($1, $2, $3::jsonb, $4, $5)', [tableId, handId, JSON.stringify(stacks), autoFolds, epoch]);
  return rows;
}

describe('registration', () => {
  test('every refusal of the reserve: not a tournament, audience gates, advisor gates, already registered, full, not in registration', async () => {
    const u = await funded(0);
    const cash = `cash-${randomUUID().slice(0, 8)}`;
    await db.owner.query("select game.create_table($1, 'poker', '{}', 'play', null)", [cash]);
    const reserve = async (t: string, user: string, agent: string | null = null, advisor: string | null = null) =>
      codeOf(game.query('select * from game.tournament_reserve($1, $2, $3, $4, 120)', [t, await playerGrant(db.owner, user), agent, advisor]));
    expect(await reserve(cash, u.userId)).toBe('not_a_tournament');
    expect(await reserve('nope', u.userId)).toBe('table_not_found');

    const { rows: [agent] } = await db.owner.query("insert into game.agents (owner_user_id, name) values ($1, 'a') returning id", [u.userId]);
    const { rows: [strange] } = await db.owner.query("insert into game.agents (owner_user_id, name) values ($1, 'b') returning id", [randomUUID()]);
    expect(await reserve(await sngTable({}, 'agent'), u.userId)).toBe('humans_not_allowed_at_agent_table');
    expect(await reserve(await sngTable({}, 'human_only'), u.userId, agent.id)).toBe('agent_not_allowed_at_human_table');
    const copilot = await sngTable({}, 'copilot');
    expect(await reserve(copilot, u.userId)).toBe('advisor_required');
    expect(await reserve(copilot, u.userId, null, strange.id)).toBe('agent_not_found');
    expect(await reserve(copilot, u.userId, null, agent.id)).toBe('ok');
    expect(await reserve(await sngTable(), u.userId, null, agent.id)).toBe('advisor_on_non_copilot_kind');

    const open = await sngTable({ seats: 2 });
    expect(await reserve(open, u.userId)).toBe('ok');
    expect(await reserve(open, u.userId)).toBe('tournament_already_registered');
    expect(await reserve(open, randomUUID())).toBe('ok');
    expect(await reserve(open, randomUUID())).toBe('tournament_full');
    await db.owner.query("update game.tables set tournament_state = 'starting' where table_id = $1", [open]);
    expect(await reserve(open, randomUUID())).toBe('tournament_full');
    await db.owner.query("update game.tables set tournament_state = 'playing' where table_id = $1", [open]);
    expect(await reserve(open, randomUUID())).toBe('tournament_not_in_registration');
  });

  test('concurrent registrations for the last seat: exactly one wins, the others are refused tournament_full', async () => {
    const tableId = await sngTable({ seats: 3 });
    await fill(tableId, 2);
    const contenders = await Promise.all(Array.from({ length: 6 }, () => funded()));
    const results = await Promise.all(contenders.map((u) => codeOf(
      playerGrant(cage, u.userId).then((sid) => cage.query('select * from cage.open_tournament_entry($1, $2, $3, null, 100, 120)', [sid, `race-${randomUUID()}`, tableId])),
    )));
    expect(results.filter((r) => r === 'ok')).toHaveLength(1);
    expect(results.filter((r) => r !== 'ok')).toEqual(Array(5).fill('tournament_full'));
    expect((await tableRow(tableId)).tournament_state).toBe('starting');
    const seats = (await players(tableId)).map((p) => p.seat_index).sort();
    expect(seats).toEqual([0, 1, 2]); // the shuffle kept one player per seat
  });

  test('the internal unregister releases an unpaid reserve only; expiry releases an unpaid reserve once due; a paid entry is refunded', async () => {
    const tableId = await sngTable();
    const u = await funded();
    await game.query('select * from game.tournament_reserve($1, $2, null, null, 120)', [tableId, await playerGrant(db.owner, u.userId)]);
    const [reserved] = await players(tableId);
    // not due: the expiry job keeps it
    expect((await worker.query('select game.tournament_release_reserve($1, null, $2) as r', [tableId, reserved.id])).rows[0].r).toBe(false);
    await db.owner.query("update game.table_players set reserved_until = now() - interval '1 s' where id = $1", [reserved.id]);
    expect((await worker.query('select game.tournament_release_reserve($1, null, $2) as r', [tableId, reserved.id])).rows[0].r).toBe(true);
    expect(await codeOf(game.query('select game.tournament_release_reserve($1, $2, null)', [tableId, u.userId]))).toBe('tournament_not_registered');

    await cage.query('select * from cage.open_tournament_entry($1, $2, $3, null, 100, 120)', [await playerGrant(cage, u.userId), `k-${randomUUID()}`, tableId]);
    expect(await codeOf(game.query('select game.tournament_release_reserve($1, $2, null)', [tableId, u.userId]))).toBe('paid_registration_use_refund_path');
    const { rows: [refund] } = await cage.query('select * from cage.refund_tournament_entry($1, $2)', [await playerGrant(cage, u.userId), tableId]);
    expect(refund).toMatchObject({ outcome: 'refunded', amount: 100n });
    expect((await db.owner.query("select balance from cage.cage_accounts where account_type = 'tournament_pool' and scope = $1", [tableId])).rows[0].balance).toBe(0n);
    await expectCleanAudit(cage);
  });
});

describe('play, busts and settlement', () => {
  test('several busts in one hand: the bigger start stack places higher, equal start stacks share the prizes of their places', async () => {
    const tableId = await sngTable({ seats: 5, prizeStructure: [{ position: 1, percent: 50 }, { position: 2, percent: 30 }, { position: 3, percent: 20 }] });
    await fill(tableId, 5);
    await play(tableId);
    const ps = await players(tableId);
    const id = (i: number) => String(ps[i].id);
    // hand 1: seat 0 wins everything from seats 3 and 4 (equal start stacks: they tie for 4th and 5th)
    const first = await hand(tableId, { [id(0)]: 3000, [id(1)]: 1000, [id(2)]: 1000, [id(3)]: 0, [id(4)]: 0 }, 2);
    expect(first.map((r) => [r.elimination_order, r.tie_place])).toEqual([[4, 4], [5, 4]]);
    // hand 2: seats 1 (1000) and 2 (600 at the start) bust together after a 400-chip transfer; 1 places higher
    await hand(tableId, { [id(0)]: 3400, [id(2)]: 600 });
    const second = await hand(tableId, { [id(0)]: 5000, [id(1)]: 0, [id(2)]: 0 });
    expect(second.map((r) => [String(r.player_id), r.elimination_order, r.tie_place, r.state])).toEqual([
      [id(1), 2, 2, 'ended'], [id(2), 3, 3, 'ended'],
    ]);
    const t = await tableRow(tableId);
    expect(t).toMatchObject({ tournament_state: 'ended', auto_fold_count: 2 });
    expect((await players(tableId)).find((p) => String(p.id) === id(0))).toMatchObject({ elimination_order: 1, tie_place: 1 });

    await markHandsAudited(db.owner, tableId);
    await worker.query('select cage.settle_tournament($1)', [tableId]);
    const { rows: payouts } = await db.owner.query('select position, amount from cage.payout_intents where table_id = $1 order by position', [tableId]);
    // pool (100 - 10) x 5 = 450: 225 / 135 / 90; 4th and 5th share nothing (no prize for those places)
    expect(payouts).toEqual([{ position: 1, amount: 225n }, { position: 2, amount: 135n }, { position: 3, amount: 90n }]);
    const { rows: [view] } = await db.owner.query('select place_amounts from game.tournaments where table_id = $1', [tableId]);
    expect(view.place_amounts).toEqual(['225', '135', '90']);
    expect((await tableRow(tableId)).tournament_state).toBe('settling');
    await expectCleanAudit(cage);
    for (const p of payouts) await cage.query('select * from cage.pay_tournament_payout($1, $2, $3)', [tableId, p.position, p.amount]);
    expect((await tableRow(tableId)).tournament_state).toBe('closed');
    expect((await db.owner.query("select balance from cage.cage_accounts where account_type = 'tournament_pool' and scope = $1", [tableId])).rows[0].balance).toBe(50n);
    await expectCleanAudit(cage);
  });

  test('a tie across paid places shares their sum: the remainder goes one chip each to the better-placed rows', async () => {
    const tableId = await sngTable({ seats: 3, entryFee: 101, rakeFee: 0, prizeStructure: [{ position: 1, percent: 60 }, { position: 2, percent: 40 }] });
    await fill(tableId, 3, 101);
    await play(tableId);
    const ps = await players(tableId);
    const [a, b, c] = ps.map((p) => String(p.id));
    // force-end with two equal stacks behind the leader: they tie for 2nd and 3rd
    await hand(tableId, { [a!]: 1000, [b!]: 1000, [c!]: 1000 });
    await db.owner.query('update game.table_players set tournament_stack = case when id = $2 then 1500 else 750 end where table_id = $1', [tableId, a]);
    expect(await codeOf(db.pool('poker_game').query('select game.tournament_force_end($1)', ['missing-table']))).toBe('table_not_found');
    await game.query('select game.tournament_force_end($1)', [tableId]);
    await markHandsAudited(db.owner, tableId);
    await worker.query('select cage.settle_tournament($1)', [tableId]);
    const { rows } = await db.owner.query('select position, amount from cage.payout_intents where table_id = $1 order by position', [tableId]);
    // pool 303: 1st 60% = 181 (+1 dust = 182), 2nd 40% = 121; 2nd and 3rd share 121: 61 and 60
    expect(rows).toEqual([{ position: 1, amount: 182n }, { position: 2, amount: 61n }, { position: 3, amount: 60n }]);
    await expectCleanAudit(cage);
    for (const p of rows) await cage.query('select * from cage.pay_tournament_payout($1, $2, $3)', [tableId, p.position, p.amount]);
    await expectCleanAudit(cage);
  });

  test('force-end: only from playing (the state in the refusal); a hand in flight is abandoned, its start stacks stand', async () => {
    const tableId = await sngTable({ seats: 2 });
    expect(await codeOf(game.query('select game.tournament_force_end($1)', [tableId]))).toBe('cannot_force_end');
    const err = await game.query('select game.tournament_force_end($1)', [tableId]).catch((e: { detail: string }) => e);
    expect((err as { detail: string }).detail).toBe('registering');
    await fill(tableId, 2);
    await play(tableId);
    await db.owner.query("select game.begin_hand($1, 'flight-1', $2)", [tableId, await db.leaseEpoch(tableId)]);
    await game.query('select game.tournament_force_end($1)', [tableId]);
    const t = await tableRow(tableId);
    expect(t).toMatchObject({ tournament_state: 'ended', current_hand_id: null });
    expect((await db.owner.query("select status from game.hand_histories where hand_id = 'flight-1'")).rows[0].status).toBe('abandoned');
    expect(await codeOf(game.query('select game.tournament_force_end($1)', [tableId]))).toBe('cannot_force_end');
    await markHandsAudited(db.owner, tableId);
    await worker.query('select cage.settle_tournament($1)', [tableId]);
    const { rows } = await db.owner.query('select position, amount from cage.payout_intents where table_id = $1', [tableId]);
    for (const p of rows) await cage.query('select * from cage.pay_tournament_payout($1, $2, $3)', [tableId, p.position, p.amount]);
    await expectCleanAudit(cage);
  });

  test('a hand end refuses unconserved chips and positions that are not alive; no rake exists in a tournament', async () => {
    const tableId = await sngTable({ seats: 2 });
    const users = await fill(tableId, 2);
    await play(tableId);
    const ps = await players(tableId);
    const epoch = await db.leaseEpoch(tableId);
    await db.owner.query("select game.begin_hand($1, 'cons-1', $2)", [tableId, epoch]);
    const finish = (stacks: Record<string, number>) =>
      codeOf(db.owner.query("select * from game.finish_tournament_hand($1, 'cons-1', $2::jsonb, 0, $3)", [tableId, JSON.stringify(stacks), epoch]));
    expect(await finish({ [ps[0].id]: 1500, [ps[1].id]: 600 })).toBe('invalid_hand');
    expect(await finish({ [ps[0].id]: 2000, '999999': 0 })).toBe('invalid_hand');
    expect(await finish({ [ps[0].id]: 1000, [ps[1].id]: 1000 })).toBe('ok');
    expect(users).toHaveLength(2);
    await game.query('select game.tournament_force_end($1)', [tableId]);
    await markHandsAudited(db.owner, tableId);
    await worker.query('select cage.settle_tournament($1)', [tableId]);
    const { rows } = await db.owner.query('select position, amount from cage.payout_intents where table_id = $1', [tableId]);
    expect(await codeOf(cage.query('select * from cage.pay_tournament_payout($1, 1, 1)', [tableId]))).toBe('payout_amount_mismatch');
    expect(await codeOf(cage.query('select * from cage.pay_tournament_payout($1, 9, 1)', [tableId]))).toBe('payout_not_found');
    for (const p of rows) {
      const first = await cage.query('select * from cage.pay_tournament_payout($1, $2, $3)', [tableId, p.position, p.amount]);
      const again = await cage.query('select * from cage.pay_tournament_payout($1, $2, $3)', [tableId, p.position, p.amount]);
      expect(first.rows[0].replayed).toBe(false);
      expect(again.rows[0]).toMatchObject({ replayed: true, ref_id: first.rows[0].ref_id });
    }
    await expectCleanAudit(cage);
  });
});

describe('the blind deadline', () => {
  test('an early or stale firing changes nothing; at the deadline the next level starts at the deadline itself; a missed one fires at once', async () => {
    const tableId = await sngTable({ seats: 2 });
    await fill(tableId, 2);
    await play(tableId);
    const advance = (level: number) => worker.query('select * from game.tournament_advance_level($1, $2)', [tableId, level]).then((r) => r.rows[0]);
    expect((await advance(0)).advanced).toBe(false); // 60 s to go
    expect((await advance(3)).advanced).toBe(false); // stale
    // three levels' worth of time passed (a worker that was down): each firing advances one level
    await db.owner.query("update game.tables set level_started_at = now() - interval '185 s', play_started_at = now() - interval '185 s' where table_id = $1", [tableId]);
    const start = (await tableRow(tableId)).level_started_at as Date;
    const one = await advance(0);
    expect(one).toMatchObject({ advanced: true, current_level: 1 });
    expect((one.level_started_at as Date).getTime() - start.getTime()).toBe(60_000);
    expect((await advance(1)).current_level).toBe(2);
    expect((await advance(2)).current_level).toBe(3);
    expect((await advance(3)).advanced).toBe(false); // the 4th deadline is 55 s away
    const { rows: jobs } = await db.owner.query(
      "select run_at, payload from graphile_worker._private_jobs where key = $1", [`tournament:${tableId}:blinds`],
    );
    expect(jobs).toHaveLength(1);
    expect(jobs[0].payload).toEqual({ tableId, level: 3 });
    expect((await worker.query('select game.tournament_rearm() as n')).rows[0].n).toBeGreaterThan(0);
    await game.query('select game.tournament_force_end($1)', [tableId]);
    await markHandsAudited(db.owner, tableId);
    await worker.query('select cage.settle_tournament($1)', [tableId]);
    const { rows } = await db.owner.query('select position, amount from cage.payout_intents where table_id = $1', [tableId]);
    for (const p of rows) await cage.query('select * from cage.pay_tournament_payout($1, $2, $3)', [tableId, p.position, p.amount]);
  });
});

describe('the payout reconciler', () => {
  test('payouts unconfirmed for more than 30 s are posted again to their bank (failedAt cleared, submittedAt set); each outcome recorded on its intent', async () => {
    const tableId = await sngTable({ seats: 2 });
    await fill(tableId, 2);
    await play(tableId);
    await game.query('select game.tournament_force_end($1)', [tableId]);
    await markHandsAudited(db.owner, tableId);
    await worker.query('select cage.settle_tournament($1)', [tableId]);
    const { rows: intents } = await db.owner.query('select position, amount from cage.payout_intents where table_id = $1 order by position', [tableId]);
    await cage.query("select cage.mark_payout_failed($1, $2, 'the chain said no')", [tableId, intents[0].position]);
    const due = async () => (await worker.query("select intent_key from cage.due_intents('cage_payout', null, 100)")).rows
      .map((r) => r.intent_key).filter((k: string) => k.startsWith(`${tableId}:`)).sort();
    expect(await due()).toEqual([]); // younger than 30 s
    await db.owner.query("update cage.payout_intents set created_at = now() - interval '31 s' where table_id = $1", [tableId]);
    // the worker's key of a payout intent is the view's
    expect(await due()).toEqual(intents.map((i) => payoutIntentKey(tableId, i.position)).sort());
    const posted: { path: string; body: unknown }[] = [];
    // the bank's transport, recorded: the cage answers each payout as refused (a bank that says no)
    const bank = { post: async (path: string, body: unknown) => (posted.push({ path, body }), { ok: false, status: 409, body: { error: 'payout_refused_here' } }) };
    const silent = { warn: () => undefined, info: () => undefined, error: () => undefined } as never;
    await createTournamentPayoutReconcileTask({ pool: worker, log: silent, cage: bank as never, chainBank: bank as never })({}, {} as never);
    expect(posted.filter((p) => (p.body as { tableId: string }).tableId === tableId).map((p) => p.body)
      .sort((a, b) => (a as { payoutIntent: { position: number } }).payoutIntent.position - (b as { payoutIntent: { position: number } }).payoutIntent.position))
      .toEqual(intents.map((i) => ({ tableId, payoutIntent: { position: i.position, amount: String(i.amount) } })));
    const { rows: after } = await db.owner.query('select failed_at, submitted_at from cage.payout_intents where table_id = $1', [tableId]);
    expect(after.every((r) => r.failed_at === null && r.submitted_at !== null)).toBe(true);
    // each refusal recorded: stuck since now, why, and backing off (not due again at once)
    const { rows: attempts } = await db.owner.query('select intent_key, attempts, last_error, stuck_since, next_attempt_at > now() as backing_off from cage.intent_attempts where kind = $1 and intent_key like $2', ['cage_payout', `${tableId}:%`]);
    expect(attempts.map((a) => [a.attempts, a.last_error, a.stuck_since instanceof Date, a.backing_off])).toEqual(intents.map(() => [1, 'the cage answered 409 payout_refused_here', true, true]));
    expect(await due()).toEqual([]);
    for (const p of intents) await cage.query('select * from cage.pay_tournament_payout($1, $2, $3)', [tableId, p.position, p.amount]);
    expect(await due()).toEqual([]);
  });
});

describe('the audit', () => {
  test('a pool moved by anything but entries, refunds and payouts, or holding other than it owes, is named', async () => {
    const tableId = await sngTable({ seats: 3 });
    await fill(tableId, 1);
    await expectCleanAudit(cage);
    const { rows: [poolAccount] } = await db.owner.query("select id from cage.cage_accounts where account_type = 'tournament_pool' and scope = $1", [tableId]);
    const thief = await userAccount(db.owner);
    tampered.add(`table:${tableId}`);
    await correct(db.owner, [poolAccount.id, thief.id], [-40n, 40n]);
    const violations = (await audit(cage)).filter((v) => v.subject === `table:${tableId}`);
    expect(violations).toEqual([expect.objectContaining({ invariant: 'tournament_pool', detail: expect.objectContaining({ pool: 60, entry_claims: 100 }) })]);
    await correct(db.owner, [thief.id, poolAccount.id], [-40n, 40n]);
    // put back: the pool holds its claim again, but it was moved by something other than the tournament
    expect((await audit(cage)).filter((v) => v.subject === `table:${tableId}`)[0]?.detail).toMatchObject({ other_movements: 2 });
  });
});

