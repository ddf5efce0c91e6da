// Issue 31, class 4 (a process's identity taken on its word) and the built-ins every login may run.
// Each attack is made as a thief holding one service login's password would make it (connected
// with loginUrl as that login), against a running platform (auth, cage, game): read a value, then
// use it; terminate a connection, then take its place. Each asserts what the thief must NOT get
// (the effect), so the same test shows the attack working before the fix and refused after it.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { loginUrl } from '../../server/db/roles.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { until } from '../helpers/live.ts';
import { startMoneyPlatform } from '../helpers/money.ts';
import { connect, type WsClient } from '../helpers/ws-client.ts';

const LOGINS = ['poker_cage', 'poker_auth', 'poker_game', 'poker_worker', 'poker_betting', 'poker_bank', 'poker_graphql'] as const;
type Login = (typeof LOGINS)[number];

let db: TestDatabase;
let m: Awaited<ReturnType<typeof startMoneyPlatform>>;
const clients: pg.Client[] = [];
const sockets: WsClient[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  m = await startMoneyPlatform(db, { alsoWorker: true, env: { GAME_LEASE_TTL_SECONDS: '30' } });
});
afterAll(async () => {
  await Promise.all(sockets.map((s) => s.close().catch(() => undefined)));
  for (const c of clients) await c.end().catch(() => undefined);
  await m?.platform.stop();
  await db?.drop();
});

/** A connection as a service login, with its real password (what a thief of that password has). */
async function as(login: Login): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: loginUrl(db.url, login, undefined) });
  client.on('error', () => undefined);
  await client.connect();
  await client.query("set statement_timeout = '10s'");
  clients.push(client);
  return client;
}
const outcome = (p: Promise<unknown>) => p.then(() => 'ok', (err: { code?: string; message?: string }) => `${err.code} ${err.message}`);

/** A player's websocket on the real game role. */
async function playerSocket() {
  const p = await m.player(0);
  const ws = await connect(`${m.game.replace(/^http/, 'ws')}/ws`, p.auth);
  sockets.push(ws);
  await ws.next((x) => x.type === 'hello');
  return { ...p, ws };
}
/** A join at the real game role: what it answers (joined, or the refusal). */
async function join(tableId: string) {
  const p = await playerSocket();
  const ref = `j-${randomUUID().slice(0, 8)}`;
  p.ws.send({ type: 'join', tableId, ref });
  return p.ws.next((x) => x.ref === ref, 10_000);
}
/** The real game process: its id and the backend of its presence connection. */
async function realProcess() {
  const { rows } = await db.owner.query<{ id: string; url: string | null }>(
    "select id, url from game.game_processes where started_at = (select max(started_at) from game.game_processes gp where gp.url = $1) and url = $1", [m.game]);
  return rows[0];
}
const presencePids = async () => (await db.owner.query<{ pid: number }>(
  "select pid from pg_stat_activity where application_name = 'game-presence' and datname = current_database()")).rows.map((r) => r.pid);
const present = async (id: string) => (await db.owner.query<{ p: boolean }>('select game_private.process_present($1) as p', [id])).rows[0]!.p;

describe('class 4: a process is who its connection proves', () => {
  test('(a) unregistering the real game process by the id game.lease_holder shows: the real role still loads rooms', async () => {
    const first = await m.table((await m.player(0)).auth);
    expect(await join(first)).toMatchObject({ type: 'joined' });
    const game = await as('poker_game');
    // the id of the real process (game.lease_holder showed it to the game login; assume the thief knows it)
    const { rows: [held] } = await db.owner.query<{ holder: string }>('select holder from game.table_leases where table_id = $1', [first]);
    // the thief names the id (whatever the function's signature now is)
    await outcome(game.query('select game.unregister_process($1)', [held?.holder ?? randomUUID()]));
    await outcome(game.query('select game.unregister_process()'));
    const next = await m.table((await m.player(0)).auth);
    expect(await join(next)).toMatchObject({ type: 'joined' });
    expect((await db.owner.query('select 1 from game.game_processes where id = $1', [held?.holder ?? randomUUID()])).rowCount).toBe(1);
  });

  test('(b) terminating the real process\'s presence connection and registering its id does not hand over its identity; the real role recovers', async () => {
    const tableId = await m.table((await m.player(0)).auth);
    expect(await join(tableId)).toMatchObject({ type: 'joined' });
    const game = await as('poker_game');
    const { rows: [held] } = await db.owner.query<{ holder: string }>('select holder from game.table_leases where table_id = $1', [tableId]);
    const victim = held!.holder;
    const pids = await presencePids();
    expect(pids.length).toBeGreaterThan(0);
    // the same login may signal its own login's backends
    for (const pid of pids) expect(await outcome(game.query('select pg_terminate_backend($1)', [pid]))).toBe('ok');
    // and at once take its place: the id it read, and the presence lock that id's row names
    await outcome(game.query("select * from game.register_process('http://attacker.invalid', $1)", [victim]));
    await outcome(game.query(
      'select pg_try_advisory_lock(game_private_ns.ns, gp.lock_key) from (select 1734438245 as ns) game_private_ns, game.game_processes gp where gp.id = $1', [victim]));
    await outcome(game.query('select pg_try_advisory_lock(1734438245, k) from generate_series(1, 64) k'));
    // the thief holds no process identity: it can take no lease in the victim's name, nor in its own
    const other = await m.table((await m.player(0)).auth);
    expect(await outcome(game.query('select granted from game.take_lease($1, $2, 3600)', [other, victim]))).not.toBe('ok');
    expect(await outcome(game.query('select granted from game.take_lease($1, 3600)', [other]))).not.toBe('ok');
    // the real role notices it lost its presence, comes back on a new connection, and runs tables again
    await until(async () => {
      const p = await realProcess();
      const now = await presencePids();
      return p && now.some((pid) => !pids.includes(pid)) && (await present(p.id)) ? p : null;
    }, 'the real game process present again', 15_000);
    // whatever keys the thief took, none of them makes it the victim (or any process)
    expect(await outcome(game.query('select granted from game.take_lease($1, 3600)', [other]))).toBe('GMPGN game_process_gone');
    expect(await join(other)).toMatchObject({ type: 'joined' });
    const { rows: [now] } = await db.owner.query<{ holder_url: string }>('select holder_url from game.lease_holder($1)', [other]);
    expect(now?.holder_url).toBe(m.game);
  });

  test('(c) a lease taken under an attacker\'s URL: the real role never sends a player there', async () => {
    const tableId = await m.table((await m.player(0)).auth);
    const game = await as('poker_game');
    const registered = await outcome(game.query("select process_id from game.register_process('http://attacker.invalid')").then(async ({ rows: [r] }) => {
      // old signature: the id it was given; new: its own connection
      await game.query('select granted from game.take_lease($1, $2, 3600)', [tableId, r.process_id]).catch(() => game.query('select granted from game.take_lease($1, 3600)', [tableId]));
    }));
    expect(registered).toBe('GMPUL process_url_unlisted');
    const answer = await join(tableId);
    expect(answer).toMatchObject({ type: 'joined' });
    expect(JSON.stringify(answer)).not.toContain('attacker.invalid');
    // nor by setting its URL after registering without one
    await outcome(game.query('select * from game.register_process(null)'));
    expect(await outcome(game.query("select game.set_process_url('http://attacker.invalid')"))).toBe('GMPUL process_url_unlisted');
    expect((await db.owner.query("select 1 from game.game_processes where url like '%attacker.invalid%'")).rowCount).toBe(0);
  });

  test('(c) a process whose URL is not listed yet (production) runs with none, and announces it once the operators list it', async () => {
    const { startGameProcess } = await import('../../server/game/live/lease.ts');
    const { createLogger } = await import('../../server/telemetry/index.ts');
    const url = `http://unlisted-${randomUUID().slice(0, 8)}.test`;
    const pool = db.pool('poker_game', 2);
    const proc = await startGameProcess({ databaseUrl: db.url, pool, log: createLogger('silent'), ttlSeconds: 1, url });
    try {
      const urlOf = async () => (await db.owner.query<{ url: string | null }>('select url from game.game_processes where id = $1', [proc.id])).rows[0]?.url;
      expect(await urlOf()).toBeNull();
      await db.owner.query('insert into game.process_urls (url) values ($1)', [url]);
      await until(async () => (await urlOf()) === url, 'the URL announced once listed', 10_000);
    } finally {
      await proc.close();
    }
  });

  test('(d) freezing a table (withdrawals refused) is an operator act, not the game login\'s', async () => {
    const tableId = await m.table((await m.player(0)).auth);
    const game = await as('poker_game');
    await outcome(game.query("select game.set_table_status($1, 'frozen')", [tableId]));
    await outcome(game.query("select game.set_table_status($1, $2, 'frozen')", [randomUUID(), tableId]));
    expect((await db.owner.query('select status from game.tables where table_id = $1', [tableId])).rows[0].status).toBe('active');
  });
});

describe('the built-ins every login may run', () => {
  test('pg_terminate_backend: no login ends another role\'s backend (the owner\'s, another login\'s)', async () => {
    const conns = new Map<Login, pg.Client>();
    for (const login of LOGINS) conns.set(login, await as(login));
    const pidOf = async (c: pg.Client) => (await c.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
    const owner = await db.owner.connect();
    try {
      const ownerPid = (await owner.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
      for (const login of LOGINS) {
        const targets = [ownerPid, ...(await Promise.all(LOGINS.filter((o) => o !== login).map((o) => pidOf(conns.get(o)!))))];
        for (const target of targets) {
          expect([login, await outcome(conns.get(login)!.query('select pg_terminate_backend($1)', [target]))]).toEqual([login, expect.stringMatching(/^42501 /)]);
        }
      }
      expect((await owner.query('select 1 as alive')).rows).toEqual([{ alive: 1 }]);
    } finally {
      owner.release();
    }
  });

  test('advisory locks: a login holding every presence key (and the live process\'s) neither blocks a game process nor becomes one', async () => {
    for (const login of LOGINS) {
      const thief = await as(login);
      // the keys of the presence namespace a registration would pick next, and the ones in use
      await thief.query('select pg_try_advisory_lock(1734438245, k) from generate_series(1, 256) k');
      await thief.query('select pg_try_advisory_lock(1734438245, lock_key) from (select generate_series(1, 256) as lock_key) k');
      // a game process starting now still registers, holds its presence and takes a table
      const fresh = new pg.Client({ connectionString: loginUrl(db.url, 'poker_game', undefined), application_name: 'game-presence-test' });
      await fresh.connect();
      clients.push(fresh);
      const { rows: [proc] } = await fresh.query<{ process_id: string }>('select process_id from game.register_process(null)');
      expect(await present(proc!.process_id)).toBe(true);
      const tableId = await m.table((await m.player(0)).auth);
      expect((await fresh.query('select granted from game.take_lease($1, 30)', [tableId])).rows).toEqual([{ granted: true }]);
      await fresh.query('select game.unregister_process()');
      await fresh.end();
      // and the thief, holding those keys, is no process: it takes no table
      if (login === 'poker_game') {
        expect(await outcome(thief.query('select granted from game.take_lease($1, 30)', [tableId]))).toBe('GMPGN game_process_gone');
      }
      await thief.end();
    }
  }, 60_000);

  test('advisory locks: a login holding the migration runner\'s key does not stall a start (named and ended)', async () => {
    const { migrate } = await import('../../server/db/migrate.ts');
    const thief = await as('poker_worker');
    await thief.query("select pg_advisory_lock(hashtext('poker-platform:migrate'))");
    const said: string[] = [];
    await migrate(db.url, { log: (msg) => said.push(msg) });
    expect(said).toEqual(expect.arrayContaining([expect.stringMatching(/^migration lock held by login poker_worker \(pid \d+\), which never takes it: ended$/)]));
    expect(await outcome(thief.query('select 1'))).not.toBe('ok');
  }, 60_000);

  test('pg_notify on every channel the platform listens to is only a nudge: rooms re-read, the worker keeps running', async () => {
    const tableId = await m.table((await m.player(0)).auth);
    expect(await join(tableId)).toMatchObject({ type: 'joined' });
    const worker = m.platform.role<{ role: 'worker'; runner: { addJob: (t: string, p: unknown, o: unknown) => Promise<unknown> } } & Awaited<ReturnType<typeof m.platform.role>>>('worker');
    const exitCode = process.exitCode;
    try {
      for (const login of LOGINS) {
        const thief = await as(login);
        await thief.query("select pg_notify('game_seats', $1)", [tableId]);
        await thief.query("select pg_notify('game_tournament', $1)", [JSON.stringify({ tableId, type: 'tournament_payout_settled', position: 1 })]);
        await thief.query("select pg_notify('game_tournament', 'not json')");
        await thief.query(`select pg_notify('jobs:insert', '{"count":1000}')`);
        // graphile-worker shuts its runner down on a "breaking migration" notice: any login may send one
        await thief.query(`select pg_notify('worker:migrate', '{"migrationNumber":999,"breaking":true}')`);
        await thief.query('notify "worker:migrate", \'{"breaking":true}\'');
      }
      // the worker still runs jobs added after the notices (its LISTEN connection heard them first)
      const jobKey = `attack-${randomUUID()}`;
      await worker.runner.addJob('cage_audit', {}, { jobKey });
      await until(async () => (await db.owner.query('select 1 from graphile_worker.jobs where key = $1', [jobKey])).rowCount === 0, 'the job run', 20_000);
      expect(process.exitCode).toBe(exitCode);
      // the room still answers, its seats as they were
      expect(await join(tableId)).toMatchObject({ type: 'joined' });
      expect((await db.owner.query("select count(*)::int as n from game.table_players where table_id = $1 and status <> 'closed'", [tableId])).rows[0].n).toBe(0);
    } finally {
      process.exitCode = exitCode;
    }
  }, 60_000);

  test('set_config of the settings our SQL trusts gives nothing: a made-up admin sid reads no row; a presence nonce proves no process', async () => {
    const graphql = await as('poker_graphql');
    const operator = await m.operator();
    await graphql.query('begin');
    try {
      for (const sid of [randomUUID(), operator.adminId]) {
        await graphql.query("select set_config('poker.admin_sid', $1, true)", [sid]);
        await graphql.query('set local role poker_admin');
        expect((await graphql.query('select count(*)::int as n from game.tables')).rows[0].n).toBe(0);
        await graphql.query('reset role');
      }
    } finally {
      await graphql.query('rollback');
    }
    for (const login of LOGINS) {
      const thief = await as(login);
      await thief.query("select set_config('game_private.presence', $1, false)", [randomUUID()]);
      await thief.query("select set_config('transaction_isolation', 'serializable', false)").catch(() => undefined);
      if (login === 'poker_game') {
        const tableId = await m.table((await m.player(0)).auth);
        expect(await outcome(thief.query('select granted from game.take_lease($1, 30)', [tableId]))).toBe('GMPGN game_process_gone');
      }
    }
  });
});
