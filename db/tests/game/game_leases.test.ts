// One table, one dealer, in SQL: game processes register with a presence lock held on their own
// connection; a table's lease is taken by one present process at a time, renewed by its holder,
// taken over only when the holder is gone (its connection closed) or let the lease expire; every
// take bumps the epoch, and a hand boundary under an old epoch is refused (lease_lost). Hands left
// by a process that is gone are recovered at a start, by a takeover, or by the next seat call.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/db.ts';
import { createTable, creditSeat, openDepositsAs, newKey, standUp } from '../../../test/helpers/game.ts';

let db: TestDatabase;
let cage: pg.Pool;
let game: pg.Pool;
const presences: pg.Client[] = [];
beforeAll(async () => {
  db = await createTestDatabase();
  cage = db.pool('poker_cage');
  game = db.pool('poker_game');
  openDepositsAs(db.owner);
});
afterAll(async () => {
  for (const c of presences) await c.end().catch(() => undefined);
  await db.drop();
});

/** A game process: its own connection holds its presence lock until `die()` closes it. */
async function startProcess(url = `http://game-${randomUUID().slice(0, 6)}.test`) {
  const presence = new pg.Client({ connectionString: db.url, options: '-c role=poker_game' });
  presence.on('error', () => undefined);
  await presence.connect();
  presences.push(presence);
  // the operators' list of process URLs (kept by the owner here, as in development)
  await db.owner.query('insert into game.process_urls (url) values ($1) on conflict (url) do nothing', [url]);
  const { rows } = await presence.query<{ process_id: string }>('select process_id from game.register_process($1)', [url]);
  return { id: rows[0]!.process_id, url, presence, die: () => presence.end() };
}

type Proc = Awaited<ReturnType<typeof startProcess>>;

async function take(p: Proc, tableId: string, ttl = 30) {
  // a process acts on its own presence connection (the lease functions act for the calling connection's process)
  const { rows } = await p.presence.query('select granted, epoch::text, holder_url, recovered_hand from game.take_lease($1, $2)', [tableId, ttl]);
  return { ...rows[0], epoch: BigInt(rows[0].epoch) } as { granted: boolean; epoch: bigint; holder_url: string | null; recovered_hand: string | null };
}
const renew = async (p: Proc, held: [string, bigint][]) =>
  (await p.presence.query<{ t: string }>('select t from game.renew_leases($1::text[], $2::bigint[], 30) t', [
    held.map(([t]) => t), held.map(([, e]) => String(e)),
  ])).rows.map((r) => r.t);
// the harness's boundaries (as the owner: no service login executes begin_hand and finish_hand)
const begin = (tableId: string, handId: string, epoch: bigint | null) =>
  db.owner.query('select game.begin_hand($1, $2, $3)', [tableId, handId, epoch === null ? null : String(epoch)]);
const finish = (tableId: string, handId: string, stacks: Record<string, number>, epoch: bigint | null) =>
  db.owner.query('select * from game.finish_hand($1, $2, $3, 0, $4)', [tableId, handId, JSON.stringify(stacks), epoch === null ? null : String(epoch)]);
const abandon = (tableId: string, epoch: bigint | null) =>
  game.query('select game.abandon_hand($1, $2)', [tableId, epoch === null ? null : String(epoch)]);
async function until(probe: () => Promise<boolean>) {
  for (let i = 0; i < 400 && !(await probe()); i++) await new Promise((resolve) => setTimeout(resolve, 25));
}
const tableRow = async (tableId: string) => (await db.owner.query('select * from game.tables where table_id = $1', [tableId])).rows[0];
const lease = async (tableId: string) => (await db.owner.query('select * from game.table_leases where table_id = $1', [tableId])).rows[0];

/** A table with two funded seats (100 chips each). */
async function seatedTable() {
  const t = await createTable(cage);
  const a = await creditSeat(game, newKey(), t.table_id, randomUUID(), 0, 100n);
  const b = await creditSeat(game, newKey(), t.table_id, randomUUID(), 1, 100n);
  return { tableId: t.table_id, a: a.player_id, b: b.player_id };
}

test('a present process takes a free table for a new tenure; another present process is sent to it', async () => {
  const p1 = await startProcess();
  const p2 = await startProcess();
  const t = await createTable(cage);
  const first = await take(p1, t.table_id);
  expect(first).toEqual({ granted: true, epoch: 1n, holder_url: p1.url, recovered_hand: null });
  expect(await take(p2, t.table_id)).toEqual({ granted: false, epoch: 1n, holder_url: p1.url, recovered_hand: null });
  expect(await lease(t.table_id)).toMatchObject({ holder: p1.id, epoch: 1n });
  const { rows } = await db.owner.query('select epoch, holder_url from game.lease_holder($1)', [t.table_id]);
  expect(rows).toEqual([{ epoch: 1n, holder_url: p1.url }]);
  // the holder taking it again (its room reloaded) is a new tenure too
  expect((await take(p1, t.table_id)).epoch).toBe(2n);
});

test('the holder renews; a renewal under an old epoch or by another process reports the table lost', async () => {
  const p1 = await startProcess();
  const p2 = await startProcess();
  const t = await createTable(cage);
  const { epoch } = await take(p1, t.table_id, 5);
  const before = (await lease(t.table_id)).expires_at as Date;
  await new Promise((r) => setTimeout(r, 20));
  expect(await renew(p1, [[t.table_id, epoch]])).toEqual([]);
  expect(((await lease(t.table_id)).expires_at as Date).getTime()).toBeGreaterThan(before.getTime());
  expect(await renew(p1, [[t.table_id, epoch - 1n]])).toEqual([t.table_id]);
  expect(await renew(p2, [[t.table_id, epoch]])).toEqual([t.table_id]);
  expect(await lease(t.table_id)).toMatchObject({ holder: p1.id, epoch });
});

test('a lease is taken over only when its holder is gone or let it expire', async () => {
  const p1 = await startProcess();
  const p2 = await startProcess();
  const t1 = await createTable(cage);
  const t2 = await createTable(cage);
  await take(p1, t1.table_id);
  await take(p1, t2.table_id);
  expect((await take(p2, t1.table_id)).granted).toBe(false);

  // expired while its holder is still present (hung, or cut off): the backstop
  await db.owner.query(`update game.table_leases set expires_at = now() - interval '1 second' where table_id = $1`, [t2.table_id]);
  expect(await take(p2, t2.table_id)).toMatchObject({ granted: true, epoch: 2n });
  expect(await renew(p1, [[t2.table_id, 1n]])).toEqual([t2.table_id]);

  // the holder's connection closes (a kill -9 closes it): taken over at once, no wait for expiry
  await p1.die();
  expect(await take(p2, t1.table_id)).toMatchObject({ granted: true, epoch: 2n, holder_url: p2.url });
});

test('a process that is not present cannot take a lease', async () => {
  const p = await startProcess();
  const t = await createTable(cage);
  await p.die();
  // any other connection is no process: not the dead one's, not one it names
  const other = new pg.Client({ connectionString: db.url, options: '-c role=poker_game' });
  await other.connect();
  presences.push(other);
  await expect(other.query('select * from game.take_lease($1, 30)', [t.table_id])).rejects.toMatchObject({ code: 'GMPGN', message: 'game_process_gone' });
  expect(await lease(t.table_id)).toBeUndefined();
});

test('a process comes back under its id only with its succession secret; the id alone, or a live process\'s secret, gives nothing', async () => {
  const url = `http://game-${randomUUID().slice(0, 6)}.test`;
  await db.owner.query('insert into game.process_urls (url) values ($1)', [url]);
  const connect = async () => {
    const c = new pg.Client({ connectionString: db.url, options: '-c role=poker_game' });
    c.on('error', () => undefined);
    await c.connect();
    presences.push(c);
    return c;
  };
  const first = await connect();
  const { rows: [reg] } = await first.query('select process_id, succession from game.register_process($1)', [url]);
  // a second connection with the live process's secret: refused (it is present)
  const thief = await connect();
  await expect(thief.query('select * from game.register_process(null, $1)', [reg.succession])).rejects.toMatchObject({ code: 'GMPGN' });
  // registering twice on one connection is refused
  await expect(first.query('select * from game.register_process(null)')).rejects.toMatchObject({ code: 'GMPAR', message: 'process_already_registered' });
  await first.end();
  // after the connection is gone: the real secret brings the id back, once; a made-up one is a new process
  await until(async () => !(await db.owner.query('select game_private.process_present($1) as p', [reg.process_id])).rows[0].p);
  const back = await connect();
  const { rows: [again] } = await back.query('select process_id, succession from game.register_process(null, $1)', [reg.succession]);
  expect(again.process_id).toBe(reg.process_id);
  expect(again.succession).not.toBe(reg.succession);
  // the used secret (rotated at each registration) is now a made-up one: a new process, not the id
  const stranger = await connect();
  const { rows: [fresh] } = await stranger.query('select process_id from game.register_process(null, $1)', [reg.succession]);
  expect(fresh.process_id).not.toBe(reg.process_id);
  expect((await db.owner.query('select url from game.game_processes where id = $1', [reg.process_id])).rows).toEqual([{ url }]);
  // an unlisted URL is refused; removing a URL from the list hides it from lease_holder at once
  await expect(stranger.query("select game.set_process_url('http://elsewhere.invalid')")).rejects.toMatchObject({ code: 'GMPUL', message: 'process_url_unlisted' });
  const t = await createTable(cage);
  expect((await back.query('select holder_url from game.take_lease($1, 30)', [t.table_id])).rows).toEqual([{ holder_url: url }]);
  await db.owner.query('delete from game.process_urls where url = $1', [url]);
  expect((await db.owner.query('select holder_url from game.lease_holder($1)', [t.table_id])).rows).toEqual([{ holder_url: null }]);
});

test('fencing: hand boundaries under an epoch that is not the current one are refused and change nothing', async () => {
  const p1 = await startProcess();
  const p2 = await startProcess();
  const { tableId, a, b } = await seatedTable();
  const { epoch: e1 } = await take(p1, tableId);
  // a leased table takes no unfenced boundary
  await expect(begin(tableId, 'h-null', null)).rejects.toMatchObject({ code: 'GMLSE', message: 'lease_lost' });
  await expect(begin(tableId, 'h-old', e1 - 1n)).rejects.toMatchObject({ code: 'GMLSE' });
  await begin(tableId, 'h-1', e1);
  await finish(tableId, 'h-1', { [String(a)]: 110, [String(b)]: 90 }, e1);
  await begin(tableId, 'h-2', e1);

  await p1.die();
  const taken = await take(p2, tableId);
  expect(taken).toMatchObject({ granted: true, epoch: e1 + 1n, recovered_hand: 'h-2' });
  // the old holder's end of h-2, and any boundary it tries next, are refused
  await expect(finish(tableId, 'h-2', { [String(a)]: 200, [String(b)]: 0 }, e1)).rejects.toMatchObject({ code: 'GMLSE' });
  await expect(begin(tableId, 'h-3', e1)).rejects.toMatchObject({ code: 'GMLSE' });
  await expect(abandon(tableId, e1)).rejects.toMatchObject({ code: 'GMLSE' });
  // the stacks of h-2's start stand, and the new holder deals on
  const { rows } = await db.owner.query('select id, chip_balance from game.table_players where table_id = $1 order by seat_index', [tableId]);
  expect(rows.map((r) => r.chip_balance)).toEqual([110n, 90n]);
  expect((await db.owner.query('select status from game.hand_histories where hand_id = $1', ['h-2'])).rows).toEqual([{ status: 'abandoned' }]);
  await begin(tableId, 'h-3', taken.epoch);
  expect((await tableRow(tableId)).current_hand_id).toBe('h-3');
});

test('a table no room has taken has no hand boundary: a null or made-up epoch is refused, nothing changes', async () => {
  const { tableId, a, b } = await seatedTable();
  for (const epoch of [null, 0n, 1n]) {
    await expect(begin(tableId, 'h-x', epoch)).rejects.toMatchObject({ code: 'GMLSE', message: 'lease_lost' });
    await expect(finish(tableId, 'h-x', { [String(a)]: 200, [String(b)]: 0 }, epoch)).rejects.toMatchObject({ code: 'GMLSE' });
    await expect(abandon(tableId, epoch)).rejects.toMatchObject({ code: 'GMLSE' });
  }
  expect((await tableRow(tableId)).current_hand_id).toBeNull();
  expect(await lease(tableId)).toBeUndefined();
});

test('release lets the table go and abandons the hand in progress; a stale release changes nothing', async () => {
  const p1 = await startProcess();
  const p2 = await startProcess();
  const { tableId } = await seatedTable();
  const { epoch } = await take(p1, tableId);
  await begin(tableId, 'h-r', epoch);
  expect((await p1.presence.query('select game.release_lease($1, $2) as hand', [tableId, String(epoch - 1n)])).rows[0].hand).toBeNull();
  expect((await tableRow(tableId)).current_hand_id).toBe('h-r');
  expect((await p1.presence.query('select game.release_lease($1, $2) as hand', [tableId, String(epoch)])).rows[0].hand).toBe('h-r');
  expect((await tableRow(tableId)).current_hand_id).toBeNull();
  expect(await lease(tableId)).toMatchObject({ holder: null, epoch });
  // released: anyone takes it, for the next tenure
  expect(await take(p2, tableId)).toMatchObject({ granted: true, epoch: epoch + 1n, recovered_hand: null });
});

test('recovery at a start: hands under a lease whose holder is gone, or under none, are abandoned; live ones are not', async () => {
  const dead = await startProcess();
  const alive = await startProcess();
  const orphan = await seatedTable();
  const held = await seatedTable();
  const harness = await seatedTable();
  const e = (await take(dead, orphan.tableId)).epoch;
  const h = (await take(alive, held.tableId)).epoch;
  await begin(orphan.tableId, 'h-orphan', e);
  await begin(held.tableId, 'h-held', h);
  // a hand under no lease (left by an older release that allowed one): the owner writes it
  await db.owner.query("update game.tables set current_hand_id = 'h-harness', current_hand_started_at = now() where table_id = $1", [harness.tableId]);
  await dead.die();

  const { rows } = await game.query('select table_id, hand_id from game.recover_interrupted_hands()');
  const mine = rows.filter((r) => [orphan.tableId, held.tableId, harness.tableId].includes(r.table_id));
  expect(mine).toEqual(expect.arrayContaining([
    { table_id: orphan.tableId, hand_id: 'h-orphan' }, { table_id: harness.tableId, hand_id: 'h-harness' },
  ]));
  expect(mine).toHaveLength(2);
  expect((await tableRow(orphan.tableId)).current_hand_id).toBeNull();
  expect((await tableRow(harness.tableId)).current_hand_id).toBeNull();
  expect((await tableRow(held.tableId)).current_hand_id).toBe('h-held');
  // the dead tenure is over: its epoch moved on and nobody holds the table
  expect(await lease(orphan.tableId)).toMatchObject({ holder: null, epoch: e + 1n });
  await expect(finish(orphan.tableId, 'h-orphan', {}, e)).rejects.toMatchObject({ code: 'GMLSE' });
});

test('the seat path recovers a hand whose holder is gone, and still waits for a live one', async () => {
  const dead = await startProcess();
  const alive = await startProcess();
  const orphan = await seatedTable();
  const held = await seatedTable();
  await begin(orphan.tableId, 'h-o', (await take(dead, orphan.tableId)).epoch);
  await begin(held.tableId, 'h-h', (await take(alive, held.tableId)).epoch);
  await dead.die();

  const newcomer = randomUUID();
  await expect(creditSeat(game, newKey(), held.tableId, newcomer, 2, 100n)).rejects.toMatchObject({ code: 'GMHIP' });
  const seat = await creditSeat(game, newKey(), orphan.tableId, newcomer, 2, 100n);
  expect(seat).toMatchObject({ status: 'credited', chip_balance: 100n });
  expect((await tableRow(orphan.tableId)).current_hand_id).toBeNull();

  // a stand-up too
  const again = await seatedTable();
  const p = await startProcess();
  await begin(again.tableId, 'h-s', (await take(p, again.tableId)).epoch);
  await p.die();
  const owner = (await db.owner.query('select user_id from game.table_players where id = $1', [String(again.a)])).rows[0].user_id;
  expect(await standUp(game, again.tableId, owner)).toMatchObject({ chip_balance: 100n });
});

test('a stand-up records when the seat started leaving; seat changes are announced on game_seats', async () => {
  const listener = new pg.Client({ connectionString: db.url });
  await listener.connect();
  try {
    const heard: string[] = [];
    listener.on('notification', (n) => heard.push(n.payload ?? ''));
    await listener.query('listen game_seats');
    const t = await createTable(cage);
    const u = randomUUID();
    await creditSeat(game, newKey(), t.table_id, u, 0, 100n);
    const up = await standUp(game, t.table_id, u);
    const { rows } = await db.owner.query('select status, leaving_at from game.table_players where id = $1', [String(up.player_id)]);
    expect(rows[0]).toMatchObject({ status: 'leaving', leaving_at: expect.any(Date) });
    for (let i = 0; i < 50 && heard.length < 2; i++) await new Promise((r) => setTimeout(r, 20));
    expect(heard).toEqual([t.table_id, t.table_id]);
  } finally {
    await listener.end();
  }
});

test('sitting out is the lease holder\'s to record; a forced (idle) stand-up waits for the house\'s idle time; dealing in again clears it', async () => {
  const t = await seatedTable();
  const user = (id: bigint) => db.owner.query('select user_id from game.table_players where id = $1', [String(id)]).then((r) => r.rows[0].user_id as string);
  const [ua, ub] = [await user(t.a), await user(t.b)];
  const satOut = (u: string, out: boolean, epoch: bigint | null) =>
    game.query('select game.set_sitting_out($1, $2, $3, $4) as found', [t.tableId, u, out, epoch === null ? null : String(epoch)]).then((r) => r.rows[0].found);
  const idle = () => game.query('select u from game.idle_players($1) u', [t.tableId]).then((r) => r.rows.map((x) => x.u));
  const standUpIdle = (u: string) => game.query('select * from game.stand_up_idle($1, $2)', [t.tableId, u]);
  const p = await startProcess();
  const { epoch } = await take(p, t.tableId);
  await expect(satOut(ua, true, null)).rejects.toMatchObject({ message: 'lease_lost' });
  await expect(satOut(ua, true, epoch - 1n)).rejects.toMatchObject({ message: 'lease_lost' });
  expect(await satOut(ua, true, epoch)).toBe(true);
  expect(await satOut(randomUUID(), true, epoch)).toBe(false);
  const first = (await db.owner.query('select sat_out_at from game.table_players where id = $1', [String(t.a)])).rows[0].sat_out_at;
  expect(first).toBeInstanceOf(Date);
  // sitting out again keeps when it began
  expect(await satOut(ua, true, epoch)).toBe(true);
  expect((await db.owner.query('select sat_out_at from game.table_players where id = $1', [String(t.a)])).rows[0].sat_out_at).toEqual(first);
  // the house's idle time (300 s by default) has not passed: nobody is idle, the forced stand-up is refused
  expect(await idle()).toEqual([]);
  await expect(standUpIdle(ua)).rejects.toMatchObject({ code: 'GMIDL', message: 'player_not_idle' });
  await expect(standUpIdle(ub)).rejects.toMatchObject({ code: 'GMIDL', message: 'player_not_idle' });
  // the operators' house rule, not the caller, says how long: with 0 s the sat-out player is idle (only them)
  await db.owner.query('update game.house_rules set idle_kick_seconds = 0');
  try {
    expect(await idle()).toEqual([ua]);
    await expect(standUpIdle(ub)).rejects.toMatchObject({ code: 'GMIDL' });
    // dealt in again: not idle any more
    expect(await satOut(ua, false, epoch)).toBe(true);
    expect(await idle()).toEqual([]);
    await expect(standUpIdle(ua)).rejects.toMatchObject({ code: 'GMIDL' });
    expect(await satOut(ua, true, epoch)).toBe(true);
    expect(await standUpIdle(ua).then((r) => r.rows[0])).toMatchObject({ player_id: t.a, chip_balance: 100n });
    expect((await db.owner.query('select status from game.table_players where id = $1', [String(t.a)])).rows[0].status).toBe('leaving');
  } finally {
    await db.owner.query('update game.house_rules set idle_kick_seconds = 300');
  }
  // no service login may change the house rules
  for (const login of [game, cage]) {
    await expect(login.query('update game.house_rules set idle_kick_seconds = 0')).rejects.toMatchObject({ code: '42501' });
  }
});

test('the cage role cannot touch leases', async () => {
  await expect(cage.query('select * from game.take_lease($1, 30)', ['t'])).rejects.toMatchObject({ code: '42501' });
  await expect(cage.query('select * from game.recover_interrupted_hands()')).rejects.toMatchObject({ code: '42501' });
});
