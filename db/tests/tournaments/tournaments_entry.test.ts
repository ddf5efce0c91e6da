// A tournament entry on the cage in SQL (cage.open_tournament_entry, cage.refund_tournament_entry,
// the view cage.deposit_states), called as the cage role calls them: the entry replayed once per key,
// a refusal for want of balance that writes nothing (issue 32: no reserve made and closed again, so
// refused retries add no rows), a held reserve released by the overdraft (spec), and the refund
// status that the read and the replay both answer from one definition. The file ends with a clean audit.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { expectCleanAudit, fund, userAccount } from '../../../test/helpers/cage.ts';
import { createTestDatabase, playerGrant, type TestDatabase } from '../../../test/helpers/db.ts';
import { resolveSngSettings } from '../../../server/tournaments/settings.ts';

let db: TestDatabase;
let cage: pg.Pool;
let game: pg.Pool;

beforeAll(async () => {
  db = await createTestDatabase();
  cage = db.pool('poker_cage');
  game = db.pool('poker_game');
});
afterAll(async () => {
  await expectCleanAudit(cage);
  await db.drop();
});

const BLINDS = { startingSmallBlind: 10, increaseFactor: 2, levelDurationSeconds: 60, anteStartLevel: null, startingAnte: 0, anteIncreaseFactor: 1 };

async function sngTable() {
  const tableId = `sqle-${randomUUID().slice(0, 8)}`;
  const settings = resolveSngSettings({ mode: 'sng', seats: 3, entryFee: 100, rakeFee: 10, startingStack: 1000, blindStructure: BLINDS });
  await db.owner.query("select game.create_table($1, 'poker', $2, 'play', null, null, null, 'sng', 'open')", [tableId, JSON.stringify(settings)]);
  return tableId;
}

async function funded(chips: number) {
  const u = await userAccount(db.owner);
  if (chips > 0) await fund(db.owner, u.id, BigInt(chips));
  return { ...u, sid: await playerGrant(cage, u.userId) };
}

const enter = (sid: string, key: string, tableId: string, amount = 100) =>
  cage.query('select * from cage.open_tournament_entry($1, $2, $3, null, $4, 120)', [sid, key, tableId, amount]).then((r) => r.rows[0]);

/** Row counts of what an entry writes: the journal, the intents, the positions and their chain links. */
async function written() {
  const { rows } = await db.owner.query(`select
      (select count(*)::int from cage.cage_entries) as entries,
      (select count(*)::int from cage.deposit_intents) as intents,
      (select count(*)::int from game.table_players) as positions,
      (select count(*)::int from game.position_links) as links`);
  return rows[0] as Record<string, number>;
}

test('an entry short of balance writes nothing, however often it is retried: no reserve, no intent, no journal entry', async () => {
  const tableId = await sngTable();
  const poor = await funded(50);
  const before = await written();
  for (let i = 0; i < 4; i++) {
    expect(await enter(poor.sid, `k-${randomUUID()}`, tableId)).toMatchObject({ ref_id: null, outcome: 'insufficient', seat_index: null, registered_count: 0 });
  }
  expect(await written()).toEqual(before);
});

test('an overdraft releases a seat held from before (one write, as the spec says); the retry after it writes nothing', async () => {
  const tableId = await sngTable();
  const poor = await funded(50);
  await game.query('select * from game.tournament_reserve($1, $2, null, null, 120)', [tableId, poor.sid]);
  const { rows: held } = await db.owner.query("select id from game.table_players where table_id = $1 and status <> 'closed'", [tableId]);
  expect(held).toHaveLength(1);
  expect(await enter(poor.sid, `k-${randomUUID()}`, tableId)).toMatchObject({ outcome: 'insufficient', seat_index: expect.any(Number), registered_count: 0 });
  expect((await db.owner.query("select count(*)::int as n from game.table_players where table_id = $1 and status <> 'closed'", [tableId])).rows[0].n).toBe(0);
  const before = await written();
  expect(await enter(poor.sid, `k-${randomUUID()}`, tableId)).toMatchObject({ outcome: 'insufficient', seat_index: null });
  expect(await written()).toEqual(before);
});

test('an entry replays once per key; refunded since, the replay and the view both say refunded', async () => {
  const tableId = await sngTable();
  const a = await funded(300);
  const key = `k-${randomUUID()}`;
  const paid = await enter(a.sid, key, tableId);
  expect(paid).toMatchObject({ outcome: 'paid', registered_count: 1 });
  const state = async () => (await cage.query('select status, refund_ref_id from cage.deposit_states where ref_id = $1', [paid.ref_id])).rows[0];
  expect(await state()).toEqual({ status: 'confirmed', refund_ref_id: null });
  const before = await written();
  expect(await enter(a.sid, key, tableId)).toMatchObject({ ref_id: paid.ref_id, outcome: 'replayed' });
  expect(await written()).toEqual(before);
  // the same key for another amount is not a replay
  await expect(enter(a.sid, key, tableId, 101)).rejects.toMatchObject({ message: 'idempotency_key_reused' });

  const { rows: [refund] } = await cage.query('select * from cage.refund_tournament_entry($1, $2)', [a.sid, tableId]);
  expect(refund).toMatchObject({ outcome: 'refunded', amount: 100n, registered_count: 0 });
  expect(await enter(a.sid, key, tableId)).toMatchObject({ ref_id: paid.ref_id, outcome: 'replayed_refunded' });
  expect(await state()).toEqual({ status: 'refunded', refund_ref_id: `tournament-refund:${paid.ref_id}` });
  // the intent itself is left as it was: the view is the one place the refund shows
  expect((await db.owner.query('select status from cage.deposit_intents where ref_id = $1', [paid.ref_id])).rows[0]).toEqual({ status: 'confirmed' });
});

test('the cage login reads its deposits through cage.deposit_states; the other service logins do not', async () => {
  await expect(cage.query('select count(*) from cage.deposit_states')).resolves.toBeDefined();
  for (const login of ['poker_game', 'poker_auth', 'poker_bank'] as const) {
    await expect(db.pool(login, 1).query('select count(*) from cage.deposit_states')).rejects.toMatchObject({ code: '42501' });
  }
});
