// The game role's websocket edge (issue 10): a malformed upgrade path is a coded 400 and the process
// goes on; JSON nested past the depth bound is `malformed_message`; a client that never reads is
// closed `slow_consumer` (4008) once its send buffer passes WS_MAX_BUFFERED_BYTES; a client that
// answers no ping is terminated and leaves its rooms; idle cash rooms unload and release their
// leases (tournament rooms stay while they run); room timers have their own boundaries; a stop
// sends `table_closed` (server_stopping) and closes every connection with 1001.
import { signerFromPrivateKey } from '../../server/crypto/signing.ts';
import net from 'node:net';
import pino from 'pino';
import WebSocket from 'ws';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { expectCleanAudit } from '../helpers/cage.ts';
import { captureLogger, waitForLine } from '../helpers/logs.ts';
import { liveClient, sleep, until, type LiveClient } from '../helpers/live.ts';
import { POKER_SETTINGS, startMoneyPlatform } from '../helpers/money.ts';
import * as wsModule from '../../server/game/live/ws.ts';
import type { LiveTables } from '../../server/game/live/ws.ts';
import { Room, type RoomDeps, type TableRecord, type Watcher } from '../../server/game/live/room.ts';

let db: TestDatabase;
let m: Awaited<ReturnType<typeof startMoneyPlatform>>;
let live: LiveClient;
const logs = captureLogger('info');
const BUFFER_BOUND = 65_536;
const CLIENT_MESSAGE_TYPES: readonly string[] = (wsModule as { CLIENT_MESSAGE_TYPES?: readonly string[] }).CLIENT_MESSAGE_TYPES ?? [];

beforeAll(async () => {
  db = await createTestDatabase();
  m = await startMoneyPlatform(db, {
    log: logs.log,
    env: {
      HAND_DELAY_MS: '100', WS_PING_INTERVAL_SECONDS: '1', ROOM_IDLE_UNLOAD_SECONDS: '1',
      WS_MAX_BUFFERED_BYTES: String(BUFFER_BOUND), TABLE_CREATE_LIMIT: '1000',
    },
  });
  live = liveClient(m, db);
});
afterAll(async () => {
  await live?.closeAll();
  await m?.platform.stop().catch(() => undefined);
  await db?.drop();
});

const tables = () => m.platform.role<{ role: string; live: LiveTables; stop(): Promise<void> }>('game').live;

/** A raw upgrade request on the game port: the status line and the body of the answer. */
function rawUpgrade(path: string): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(m.game);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => {
      socket.write(`GET ${path} HTTP/1.1\r\nhost: ${hostname}\r\nconnection: Upgrade\r\nupgrade: websocket\r\n`
        + 'sec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n');
    });
    let text = '';
    socket.on('data', (d) => (text += d));
    socket.on('error', reject);
    socket.on('close', () => resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), body: text.split('\r\n\r\n')[1] ?? '' }));
  });
}

test('a malformed %-escape (or any bad path) on the upgrade is a coded 400 and the game role goes on', async () => {
  for (const path of ['/ws/tables/%', '/ws/tables/%E0%A4%A', '/ws/tables/a%ZZ']) {
    const r = await rawUpgrade(path);
    expect(r.status).toBe(400);
    expect(JSON.parse(r.body)).toEqual({ error: 'malformed_path' });
  }
  const unknown = await rawUpgrade('/ws/elsewhere');
  expect(unknown.status).toBe(404);
  expect(JSON.parse(unknown.body)).toEqual({ error: 'not_found' });
  expect((await fetch(`${m.game}/health`)).status).toBe(200);
  // a table id that cannot exist (a NUL, a space) never reaches SQL: table_not_found
  const ws = await live.open(`/ws/tables/${encodeURIComponent('a\u0000b')}`);
  expect(await ws.next((x) => x.type === 'error')).toMatchObject({ code: 'table_not_found' });
  expect(await live.request(ws, { type: 'join', tableId: 'bad id' })).toMatchObject({ type: 'error', code: 'table_not_found' });
  expect(await live.request(ws, { type: 'ping' })).toMatchObject({ type: 'pong' });
});

test('JSON nested past the depth bound is malformed_message, counted on the text (brackets in strings do not count)', async () => {
  const ws = await live.open();
  const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
  for (const raw of [`{"type":"ping","ref":${deep(5000)}}`, `{"type":"join","tableId":${deep(100)}}`, `{"type":"ping","ref":${'{"a":'.repeat(65)}1${'}'.repeat(65)}}`]) {
    const sock = new WebSocket(`${live.wsUrl}/ws`);
    const got: Record<string, any>[] = [];
    sock.on('message', (d) => got.push(JSON.parse(d.toString())));
    await new Promise((r) => sock.once('open', r));
    sock.send(raw);
    sock.send(JSON.stringify({ type: 'ping', ref: 'after' }));
    await until(() => got.some((x) => x.ref === 'after'), 'the pong after the deep frame');
    expect(got.filter((x) => x.type !== 'hello')[0]).toEqual({ type: 'error', code: 'malformed_message' });
    sock.close();
  }
  // at the bound, and with brackets inside strings, the message is read
  expect(await live.request(ws, { type: 'ping', x: JSON.parse(deep(60)) })).toMatchObject({ type: 'pong' });
  expect(await live.request(ws, { type: 'ping', x: '['.repeat(5000) })).toMatchObject({ type: 'pong' });
});

test('a client that never reads is closed slow_consumer (4008) once its send buffer passes the bound', async () => {
  const sock = new WebSocket(`${live.wsUrl}/ws`);
  let closed: { code: number; reason: string } | null = null;
  sock.on('close', (code, reason) => (closed = { code, reason: reason.toString() }));
  sock.on('message', () => undefined);
  await new Promise((r) => sock.once('open', r));
  // the client stops reading: the server's answers pile up in its buffers
  const raw = (sock as unknown as { _socket: net.Socket })._socket;
  raw.pause();
  const ref = 'r'.repeat(15_000);
  let sent = 0;
  const logged = () => logs.lines.find((l) => l.msg === 'websocket closed: slow consumer');
  while (!logged() && sent < 6000) {
    for (let i = 0; i < 100; i++) sock.send(JSON.stringify({ type: 'ping', ref }));
    sent += 100;
    await sleep(20);
  }
  const line = await waitForLine(logs.lines, (l) => l.msg === 'websocket closed: slow consumer');
  expect(Number(line.bufferedBytes)).toBeGreaterThan(BUFFER_BOUND);
  // reading again, the client gets what was sent before the bound and then the close code
  raw.resume();
  await until(() => closed, 'the close of the slow consumer', 20_000);
  expect(closed).toEqual({ code: 4008, reason: 'slow_consumer' });
  expect((await fetch(`${m.game}/health`)).status).toBe(200);
});

test('a half-open connection (no pong) is terminated and leaves its rooms; one that answers stays', async () => {
  const p = await m.player(0);
  const tableId = await m.table(p.auth);
  const mute = new WebSocket(`${live.wsUrl}/ws/tables/${tableId}`, { autoPong: false });
  let muteClosed = false;
  mute.on('close', () => (muteClosed = true));
  mute.on('message', () => undefined);
  const answering = await live.open(`/ws/tables/${tableId}`);
  await answering.next((x) => x.type === 'joined');
  await until(async () => (await tables().inspect()).rooms[tableId]?.watchers === 2, 'both watching');
  await until(() => muteClosed, 'the silent connection terminated', 15_000);
  const seen = await tables().inspect();
  expect(seen.rooms[tableId]?.watchers).toBe(1);
  expect(await live.request(answering, { type: 'ping' })).toMatchObject({ type: 'pong' });
  await answering.close();
});

test('idle cash rooms unload and release their leases; a watched room and a running tournament stay', async () => {
  const p = await live.player(0);
  const ids: string[] = [];
  for (let i = 0; i < 30; i++) ids.push(await m.table(p.auth));
  for (const id of ids) {
    await live.join(p, id);
    expect(await live.request(p.ws, { type: 'leave', tableId: id })).toMatchObject({ type: 'left' });
  }
  const watched = await m.table(p.auth);
  await live.join(p, watched);
  // tables are created cash over HTTP; a tournament table is one the database says is (registering)
  const tournament = await m.table(p.auth);
  await db.owner.query(`update game.tables set mode = 'sng', tournament_state = 'registering' where table_id = $1`, [tournament]);
  await live.join(p, tournament);
  expect(await live.request(p.ws, { type: 'leave', tableId: tournament })).toMatchObject({ type: 'left' });
  const held = async () => (await db.owner.query<{ table_id: string }>(
    'select table_id from game.table_leases where holder is not null and table_id = any($1)', [[...ids, watched]])).rows.map((r) => r.table_id);
  await until(async () => {
    const loaded = Object.keys((await tables().inspect()).rooms);
    return ids.every((id) => !loaded.includes(id)) && loaded;
  }, 'the idle rooms unloaded', 20_000, 50);
  const loaded = Object.keys((await tables().inspect()).rooms);
  expect(loaded).toContain(watched);
  expect(loaded).toContain(tournament);
  expect(await until(async () => {
    const h = await held();
    return h.length === 1 && h;
  }, 'the idle leases released', 10_000, 50)).toEqual([watched]);
  // an unloaded table loads again on the next join
  expect(await live.join(p, ids[0]!)).toMatchObject({ type: 'joined', tableId: ids[0] });
  expect((await held()).sort()).toEqual([ids[0]!, watched].sort());
});

test('CLIENT_MESSAGE_TYPES lists what the handler dispatches: every listed type is handled, an unlisted one is unknown', async () => {
  expect([...CLIENT_MESSAGE_TYPES].sort()).toEqual(['action', 'auth', 'deal_seed', 'join', 'leave', 'ping', 'register_for_tournament', 'sit', 'sit_in', 'sit_out', 'stand_up']);
  const ws = await live.open();
  for (const type of CLIENT_MESSAGE_TYPES) {
    expect(await live.request(ws, { type })).not.toMatchObject({ code: 'unknown_message_type' });
  }
  for (const type of ['toString', '__proto__', 'constructor', 'hasOwnProperty', 'PING']) {
    expect(await live.request(ws, { type })).toMatchObject({ type: 'error', code: 'unknown_message_type' });
  }
});

// ---- room timers: a failure inside one is logged and the room goes on (no unhandled rejection) ----

function fakeRoom(query: (sql: string) => unknown, turnTimeSec = 30) {
  const errors: string[] = [];
  const log = pino({ level: 'error' }, { write: (line: string) => void errors.push(JSON.parse(line).msg) });
  const record: TableRecord = {
    table_id: 'fake', game_type: 'poker', settings: { ...POKER_SETTINGS, turnTimeSec }, status: 'active', mode: 'cash',
    kind: 'open', money_kind: 'play', current_hand_id: null, bank: 'cage',
  };
  const deps = {
    pool: { query: async (sql: string) => query(sql) },
    log,
    hands: {
      seats: async () => (await query('select * from game.seats_of($1)') as { rows: unknown[] }).rows,
      deal: async () => (await query('select * from game.deal_hand($1, $2, $3, $4, $5)') as { rows: unknown[] }).rows,
      openDeals: async () => ({ handNumber: 0, head: null, pending: [] }), commitDeal: async () => undefined,
      pendingDeals: async () => ({ head: null, pending: [] }), revealAbandoned: async () => '0'.repeat(64),
      end: async () => ({ replayed: false, state: null, busted: [] }),
      abandon: async () => null, release: async () => void (await query('select game.release_hand($1, $2, $3)')), sitOut: async () => undefined, idle: async () => [],
    },
    options: { handDelayMs: 0, timeoutsBeforeSitOut: 2 },
    forcedWithdraw: async () => undefined,
    standUp: async () => ({ status: 200, body: {} }),
    dealer: signerFromPrivateKey(new Uint8Array(32).fill(7)),
  } as unknown as RoomDeps;
  return { room: new Room(record, deps), errors };
}

const seatRows = [
  { id: '1', user_id: 'u1', agent_id: null, seat_index: 0, chip_balance: '100', status: 'seated' },
  { id: '2', user_id: 'u2', agent_id: null, seat_index: 1, chip_balance: '100', status: 'seated' },
];
const watcher = (userId: string, send: (m: string) => void = () => undefined): Watcher => ({ id: Math.random(), userId, agentId: null, send });

test('a failure in the next-deal timer is logged and the room goes on', async () => {
  const { room, errors } = fakeRoom((sql) => {
    if (sql.includes('count(*)')) return { rows: [{ n: '0' }] };
    // the seats were taken meanwhile (none left to deal to), and releasing the table fails
    if (sql.includes('release_hand')) throw new Error('database gone');
    return { rows: sql.includes('seats_of') ? seatRows : [] };
  });
  await room.open();
  room.watchers.add(watcher('u1'));
  room.watchers.add(watcher('u2'));
  await until(() => errors.includes('room step failed'), 'the failed deal logged');
  room.close();
});

test('a failure in the turn timer is logged and the room goes on', async () => {
  let failing = false;
  const { room, errors } = fakeRoom((sql) => {
    if (sql.includes('count(*)')) return { rows: [{ n: '0' }] };
    return { rows: sql.includes('seats_of') || sql.includes('deal_hand') ? seatRows : [] };
  }, 0.05);
  await room.open();
  const send = () => {
    if (failing) throw new Error('socket gone');
  };
  room.watchers.add(watcher('u1', send));
  room.watchers.add(watcher('u2', send));
  await until(() => room.stateFor(watcher('u1')).includes('"betting"'), 'a hand dealt');
  failing = true;
  await until(() => errors.includes('room step failed'), 'the failed expiry logged');
  room.close();
});

test('a request whose room step fails is answered (rejected), never left hanging', async () => {
  let failing = false;
  const { room } = fakeRoom((sql) => {
    if (failing) throw new Error('database gone');
    if (sql.includes('count(*)')) return { rows: [{ n: '0' }] };
    return { rows: sql.includes('seats_of') ? seatRows : [] };
  });
  await room.open();
  failing = true;
  const settled = (p: Promise<unknown>) => p.then(() => 'resolved', () => 'rejected');
  expect(await settled(room.requestStandUp('u1'))).toBe('rejected');
  // a sit is answered before the bank is asked: its answer comes all the same, coded
  const sit = await room.requestSit('u3', null, watcher('u3'), async () => ({ status: 200, body: {} }));
  expect(await sit.answer).toEqual({ status: 503, body: { error: 'unavailable' } });
  room.close();
});

// ---- last: a stop ----

test('a stop sends table_closed (server_stopping) to every watcher and closes every connection with 1001', async () => {
  const p = await m.player(0);
  const [t1, t2] = [await m.table(p.auth), await m.table(p.auth)];
  const sockets = [`/ws/tables/${t1}`, `/ws/tables/${t2}`, '/ws'].map((path) => {
    const s = new WebSocket(`${live.wsUrl}${path}`);
    const got = { messages: [] as Record<string, any>[], code: 0 };
    s.on('message', (d) => got.messages.push(JSON.parse(d.toString())));
    s.on('close', (code) => (got.code = code));
    return got;
  });
  await until(() => sockets[0]!.messages.some((x) => x.type === 'joined') && sockets[1]!.messages.some((x) => x.type === 'joined')
    && sockets[2]!.messages.some((x) => x.type === 'hello'), 'connected and joined');
  await m.platform.stop();
  await until(() => sockets.every((s) => s.code !== 0), 'every connection closed');
  expect(sockets.map((s) => s.code)).toEqual([1001, 1001, 1001]);
  expect(sockets[0]!.messages.find((x) => x.type === 'table_closed')).toEqual({ type: 'table_closed', tableId: t1, reason: 'server_stopping' });
  expect(sockets[1]!.messages.find((x) => x.type === 'table_closed')).toEqual({ type: 'table_closed', tableId: t2, reason: 'server_stopping' });
  const { rows } = await db.owner.query('select table_id from game.table_leases where holder is not null');
  expect(rows).toEqual([]);
  await expectCleanAudit(db.owner);
});
