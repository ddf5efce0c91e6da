// The read views of the game's records (db/functions/game/60_read_views.sql): each service login
// reads of game.tables and game.table_players only what it is granted, through the views (the game
// role also reads the tables themselves until the live room reads the views). The matrix below is
// the whole of it: a grant added or lost in db/policies fails here. The views' values that encode a
// rule (a ref's meaning, a registration's fate, the stack a hand deals) are checked on real rows.
import { randomUUID } from 'node:crypto';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import type { DbRole } from '../../server/db/pools.ts';
import { resolveSngSettings } from '../../server/tournaments/settings.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

const RELATIONS = ['game.tables', 'game.table_players', 'game.table_records', 'game.tournaments', 'game.seats'];
const ALL = '*';
/** role -> relation -> the columns it may select (ALL: every column). A relation not named: none. */
const EXPECTED: Record<string, Record<string, string[]>> = {
  poker_game: { 'game.tables': [ALL], 'game.table_players': [ALL], 'game.table_records': [ALL], 'game.tournaments': [ALL], 'game.seats': [ALL] },
  // the bank contract's table check (issue 32): each bank reads a table's bank and money kind
  poker_cage: { 'game.table_records': ['bank', 'mode', 'money_kind', 'reconciled_rake', 'status', 'table_id', 'unreconciled_rake'] },
  poker_bank: {
    'game.table_records': ['bank', 'mode', 'money_kind', 'status', 'table_id'],
    'game.tournaments': ['registered_count', 'table_id', 'tournament_state'],
    'game.seats': ['entry_ref_id', 'seat_index', 'table_id'],
  },
  poker_auth: {},
  poker_worker: {},
  poker_betting: {},
};

test('each login selects exactly the columns of the game records it is granted', async () => {
  const { rows } = await db.owner.query<{ role: string; relation: string; columns: string[]; total: number }>(`
    select r.rolname as role, c.oid::regclass::text as relation,
           coalesce(array_agg(a.attname::text order by a.attname) filter (where has_column_privilege(r.oid, c.oid, a.attnum, 'select')), '{}') as columns,
           count(*)::int as total
      from pg_roles r cross join pg_class c join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
     where r.rolname = any($1) and c.oid::regclass::text = any($2)
     group by r.rolname, c.oid`, [Object.keys(EXPECTED), RELATIONS]);
  const actual: Record<string, Record<string, string[]>> = Object.fromEntries(Object.keys(EXPECTED).map((role) => [role, {}]));
  for (const r of rows) {
    if (r.columns.length) actual[r.role]![r.relation] = r.columns.length === r.total ? [ALL] : r.columns;
  }
  expect(actual).toEqual(EXPECTED);
});

const code = (p: Promise<unknown>) => p.then(() => 'ok', (err: { code?: string }) => err.code);

test('a login reads its columns of a view and is refused the rest (42501), whatever the other columns compute', async () => {
  const tableId = await sngTable();
  const as = (role: DbRole) => db.pool(role, 1);
  expect(await code(as('poker_bank').query('select table_id, tournament_state, registered_count from game.tournaments where table_id = $1', [tableId]))).toBe('ok');
  expect(await code(as('poker_bank').query('select settings from game.tournaments where table_id = $1', [tableId]))).toBe('42501');
  expect(await code(as('poker_bank').query('select * from game.table_players'))).toBe('42501');
  expect(await code(as('poker_cage').query('select mode, money_kind, status from game.table_records where table_id = $1', [tableId]))).toBe('ok');
  expect(await code(as('poker_cage').query('select settings from game.table_records'))).toBe('42501');
  expect(await code(as('poker_cage').query('select * from game.tables'))).toBe('42501');
  expect(await code(as('poker_cage').query('select * from game.seats'))).toBe('42501');
  expect(await code(as('poker_worker').query('select table_id from game.table_records'))).toBe('42501');
});

async function sngTable(seats = 3) {
  const tableId = `views-${randomUUID().slice(0, 8)}`;
  const settings = resolveSngSettings({
    mode: 'sng', seats, entryFee: 100, rakeFee: 10, startingStack: 1000,
    blindStructure: { startingSmallBlind: 10, increaseFactor: 2, levelDurationSeconds: 60 },
  });
  await db.owner.query("select game.create_table($1, 'poker', $2, 'play', null, null, null, 'sng', 'open')", [tableId, JSON.stringify(settings)]);
  return tableId;
}

/** A position row as the lifecycle would leave it (the owner writes it: the view reads what is there). */
async function position(tableId: string, seat: number, over: Record<string, unknown>) {
  const cols = { table_id: tableId, user_id: randomUUID(), seat_index: seat, chip_balance: 0, history_hash: '', ...over };
  const names = Object.keys(cols);
  const { rows } = await db.owner.query<{ id: string }>(
    `insert into game.table_players (${names.join(', ')}) values (${names.map((_, i) => `$${i + 1}`).join(', ')}) returning id::text as id`, Object.values(cols),
  );
  return rows[0]!.id;
}

test('game.seats says what a registration became, which stack a hand deals and who is in the final standings', async () => {
  const tableId = await sngTable(10);
  const past = new Date(Date.now() - 60_000);
  const ids = {
    reserved: await position(tableId, 0, { entry_state: 'reserved', reserved_until: new Date(Date.now() + 60_000) }),
    paid: await position(tableId, 1, { entry_state: 'paid', chip_balance: 100, tournament_stack: 700 }),
    refunded: await position(tableId, 2, { entry_state: 'paid', status: 'closed', closed_at: new Date(), closing_ref_id: `tournament-refund:deposit:x:${tableId}` }),
    expired: await position(tableId, 3, { entry_state: 'reserved', status: 'closed', reserved_until: past, closed_at: new Date() }),
    released: await position(tableId, 4, { entry_state: 'reserved', status: 'closed', reserved_until: new Date(Date.now() + 60_000), closed_at: new Date() }),
    played: await position(tableId, 5, { entry_state: 'paid', status: 'closed', closed_at: new Date(), closing_ref_id: `tournament:${tableId}`, elimination_order: 2, tie_place: 2 }),
    other: await position(tableId, 6, { entry_state: 'paid', status: 'closed', closed_at: new Date(), closing_ref_id: 'tournament:another-table' }),
  };
  const { rows } = await db.pool('poker_game', 1).query(
    'select player_id::text, registration, stack::text, refunded, in_final_standings from game.seats where table_id = $1 order by seat_index', [tableId],
  );
  expect(rows).toEqual([
    { player_id: ids.reserved, registration: 'reserved', stack: '0', refunded: false, in_final_standings: false },
    { player_id: ids.paid, registration: 'paid', stack: '700', refunded: false, in_final_standings: false },
    { player_id: ids.refunded, registration: 'refunded', stack: '0', refunded: true, in_final_standings: false },
    { player_id: ids.expired, registration: 'expired', stack: '0', refunded: false, in_final_standings: false },
    { player_id: ids.released, registration: 'released', stack: '0', refunded: false, in_final_standings: false },
    { player_id: ids.played, registration: 'played', stack: '0', refunded: false, in_final_standings: true },
    { player_id: ids.other, registration: 'played', stack: '0', refunded: false, in_final_standings: false },
  ]);
  const { rows: [t] } = await db.pool('poker_game', 1).query(
    'select registered_count, alive_count, played_count from game.tournaments where table_id = $1', [tableId],
  );
  // registered: the two open rows; alive: paid with chips; played: paid and not refunded (open or closed)
  expect(t).toEqual({ registered_count: 2, alive_count: 1, played_count: 3 });
});

test('game.seats deals a cash seat its chips, and marks it sat out', async () => {
  const tableId = `views-cash-${randomUUID().slice(0, 8)}`;
  await db.owner.query("select game.create_table($1, 'poker', $2, 'play', null)", [tableId, JSON.stringify({ smallBlind: 1, bigBlind: 2, minBuyIn: 40, maxBuyIn: 200, maxPlayers: 6 })]);
  const id = await position(tableId, 2, { chip_balance: 150, sat_out_at: new Date() });
  const { rows } = await db.pool('poker_game', 1).query('select player_id::text, stack::text, sat_out, registration from game.seats where table_id = $1', [tableId]);
  expect(rows).toEqual([{ player_id: id, stack: '150', sat_out: true, registration: null }]);
  const { rows: [r] } = await db.pool('poker_game', 1).query('select seated_count, hand_in_progress from game.table_records where table_id = $1', [tableId]);
  expect(r).toEqual({ seated_count: 1, hand_in_progress: false });
});
