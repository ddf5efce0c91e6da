// Jobs trust no payload (issue 18): the worker's login may queue any job, so a job whose payload
// names a forged amount, user or table must move nothing. Each money job re-reads what it acts on
// (a payout's amount and place, a settlement's state, a reserve's expiry, a level's deadline, a
// condition's state); here forged jobs are queued as the worker's own login, the running worker
// takes them, and every user's holdings and the audit stay as they were.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { resolveSngSettings } from '../../server/tournaments/settings.ts';
import { expectCleanAudit } from '../helpers/cage.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startMoneyPlatform } from '../helpers/money.ts';

type Money = Awaited<ReturnType<typeof startMoneyPlatform>>;
let db: TestDatabase;
let m: Money;
let worker: pg.Pool;

beforeAll(async () => {
  db = await createTestDatabase();
  m = await startMoneyPlatform(db, { alsoWorker: true });
  worker = db.pool('poker_worker', 2);
});
afterAll(async () => {
  await m?.platform.stop();
  await expectCleanAudit(db.pool('poker_cage', 1));
  await db?.drop();
});

/** What every user owns (cage balances, positions' chips, unpaid prizes), and the lit claim sections. */
async function holdings() {
  const { rows } = await db.owner.query<{ fp: string }>(`
    select coalesce((select string_agg(user_id || ':' || money_kind || ':' || balance, ',' order by user_id, money_kind)
                       from cage.cage_accounts where account_type = 'user'), '')
        || '|' || coalesce((select string_agg(id || ':' || chip_balance || ':' || status, ',' order by id) from game.table_players), '')
        || '|' || coalesce((select string_agg(table_id || ':' || position || ':' || coalesce(confirmed_at::text, ''), ',' order by table_id, position) from cage.payout_intents), '')
        || '|' || coalesce((select string_agg(user_id || ':' || section_key || ':' || state, ',' order by user_id, section_key) from claims.user_claim_sections), '')
        || '|' || coalesce((select string_agg(table_id || ':' || coalesce(tournament_state, '') || ':' || coalesce(current_level, -1), ',' order by table_id) from game.tables), '')
      as fp`);
  return rows[0]!.fp;
}

/** Queues a job as the worker's login and waits until the worker has run it (done, or failed once). */
async function forge(task: string, payload: Record<string, unknown>) {
  const { rows } = await worker.query<{ id: string }>('select (graphile_worker.add_job($1, $2::json, max_attempts => 1)).id::text as id', [task, JSON.stringify(payload)]);
  const id = rows[0]!.id;
  for (let i = 0; i < 200; i++) {
    const job = await db.owner.query<{ attempts: number }>('select attempts from graphile_worker._private_jobs where id = $1', [id]);
    if (job.rows.length === 0 || job.rows[0]!.attempts >= 1) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`job ${task} was not run`);
}

async function sngTable(seats = 2) {
  const tableId = `forged-${randomUUID().slice(0, 8)}`;
  const settings = resolveSngSettings({
    mode: 'sng', seats, entryFee: 100, rakeFee: 10, startingStack: 1000,
    blindStructure: { startingSmallBlind: 10, increaseFactor: 2, levelDurationSeconds: 600, anteStartLevel: null, startingAnte: 0, anteIncreaseFactor: 1 },
  });
  await db.owner.query("select game.create_table($1, 'poker', $2, 'play', null, null, null, 'sng', 'open')", [tableId, JSON.stringify(settings)]);
  return tableId;
}

test('forged money jobs as the worker\'s login move nothing: payouts, settlements, reserves, levels, conditions', async () => {
  const victim = await m.player(1000);
  const registering = await sngTable(3);
  const entry = await m.deposit(victim.auth, { tableId: registering, amount: 100 });
  expect(entry.status).toBe(200);
  const cash = await m.table(victim.auth);
  const before = await holdings();

  // a payout of a place that does not exist, or of another amount, on a tournament and a cash table
  for (const tableId of [registering, cash]) await forge('tournament_payout', { tableId, position: 1, amount: '5000' });
  // a settlement of a tournament still registering; a made-up table
  await forge('tournament_settle', { tableId: registering });
  await forge('tournament_settle', { tableId: 'no-such-table' });
  // the expiry of a paid entry's reserve
  const { rows: [pos] } = await db.owner.query<{ id: string }>('select id::text from game.table_players where table_id = $1', [registering]);
  await forge('tournament_reserve_expiry', { tableId: registering, playerId: pos!.id });
  // a level jump and a start of a tournament that is not playing
  await forge('tournament_blinds', { tableId: registering, level: 7 });
  await forge('tournament_start', { tableId: registering });
  // a condition that does not hold (no linked wallet): lights nothing
  await forge('deliver_condition', { userId: victim.userId, conditionKey: 'wallet_linked', idempotencyKey: `forged-${randomUUID()}` });
  await forge('deliver_condition', { userId: randomUUID(), conditionKey: 'hand_flagged', idempotencyKey: `forged-${randomUUID()}` });

  expect(await holdings()).toBe(before);
  expect((await db.owner.query('select count(*)::int as n from claims.user_claim_sections where user_id = $1', [victim.userId])).rows[0].n).toBe(0);
  // the entry stands: the victim's registration was not released, nor paid out
  expect((await db.owner.query('select entry_state, status from game.table_players where id = $1', [pos!.id])).rows[0]).toEqual({ entry_state: 'paid', status: 'seated' });
  await expectCleanAudit(db.pool('poker_cage', 1));
});

test('issue 31, class 6: only the worker login queues a job directly; the others queue only through the owner\'s functions', async () => {
  for (const login of ['poker_cage', 'poker_auth', 'poker_game', 'poker_betting', 'poker_bank', 'poker_admin', 'poker_anonymous'] as const) {
    const pool = db.pool(login, 1);
    await expect(pool.query("select graphile_worker.add_job('tournament_payout', '{}'::json)")).rejects.toMatchObject({ code: '42501' });
    await expect(pool.query('insert into graphile_worker._private_jobs (task_id, payload) values (1, \'{}\')')).rejects.toMatchObject({ code: '42501' });
    await expect(pool.query('select payload from graphile_worker._private_jobs')).rejects.toMatchObject({ code: '42501' });
  }
  // the worker login: add_job and add_jobs only, of graphile-worker's functions
  const { rows } = await db.owner.query<{ fn: string }>(`
    select p.proname as fn from pg_proc p join pg_namespace n on n.oid = p.pronamespace
     where n.nspname = 'graphile_worker' and has_function_privilege('poker_worker', p.oid, 'execute') order by 1`);
  expect(rows.map((r) => r.fn)).toEqual(['add_job', 'add_jobs']);
});
