// The game role's websocket: live tables (docs/protocol.md). One `ws` server on the game port at
// `/ws` (and `/ws/tables/:tableId`, which joins that table at once). Messages are JSON
// `{ type, ... }`; a refused message gets `{ type:'error', code, ref? }` and the connection stays
// usable.
//
// Identity: a player presents their access JWT (`Authorization: Bearer` on the upgrade, `?token=`,
// or a first `{ type:'auth', token }` message); without one the connection is a spectator. An agent
// connects with its owner's JWT and names itself with `agentId` (one of the owner's agents) in its
// `auth` or `join` message; it then plays the owner's seat.
import type { IncomingMessage, Server } from 'node:http';
import type pg from 'pg';
import type { Logger } from 'pino';
import { WebSocketServer, type WebSocket } from 'ws';
import type { JwtVerifier } from '../../http/jwt.ts';
import type { ClaimBoard } from '../claims.ts';
import type { createHands } from '../hands.ts';
import type { GameProcess } from './lease.ts';
import { Room, type RoomOptions, type TableRecord, type Watcher } from './room.ts';
import { stoodUp, toJson } from './wire.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MAX_MESSAGE_BYTES = 16 * 1024;

interface Connection extends Watcher {
  ws: WebSocket;
  token: string | null;
  tables: Set<string>;
}

export interface LiveTablesDeps {
  pool: pg.Pool;
  log: Logger;
  jwt: JwtVerifier;
  hands: ReturnType<typeof createHands>;
  board: ClaimBoard;
  options: RoomOptions;
  /** The bank's base URL (the cage), read at call time. */
  bankUrl: () => string;
  serviceKey: string | undefined;
  timeoutMs: number;
  /** This process's presence and table leases: a poker room runs only under its table's lease. */
  process: GameProcess;
}

export function createLiveTables(deps: LiveTablesDeps) {
  const { pool, log } = deps;
  const rooms = new Map<string, Promise<Room>>();
  let nextId = 1;
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE_BYTES });
  const ticker = setInterval(() => {
    for (const r of rooms.values()) void r.then((room) => room.tick()).catch(() => undefined);
  }, 5_000);
  ticker.unref();

  async function bank(path: string, body: unknown, auth: { token?: string | null; service?: boolean }) {
    const res = await fetch(`${deps.bankUrl().replace(/\/+$/, '')}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(auth.token ? { authorization: `Bearer ${auth.token}` } : {}),
        ...(auth.service ? { 'x-service-key': deps.serviceKey ?? '' } : {}),
      },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(deps.timeoutMs),
    });
    const json = (await res.json().catch(() => ({}))) as Record<string, unknown>;
    return { status: res.status, body: json };
  }

  const readRecord = (tableId: string) => pool.query<TableRecord>(
    'select table_id, game_type, settings, status, mode, kind, money_kind, current_hand_id from game.tables where table_id = $1',
    [tableId],
  );

  async function load(tableId: string): Promise<Room> {
    let record = (await readRecord(tableId)).rows[0];
    if (!record) throw Object.assign(new Error('table_not_found'), { code: 'table_not_found' });
    if (record.game_type === 'poker') {
      // one dealer per table: another live process running it keeps it, and the client is sent there
      const lease = await deps.process.take(tableId, () => void stopRoom(tableId, 'lease_lost'));
      if (!lease.granted) throw Object.assign(new Error('table_elsewhere'), { code: 'table_elsewhere', url: lease.holderUrl });
      if (lease.recoveredHand) log.warn({ tableId, handId: lease.recoveredHand, epoch: lease.epoch.toString() }, 'hand abandoned when the table was taken over: the stacks of its start stand');
      record = (await readRecord(tableId)).rows[0]!;
    }
    const room = new Room(record, {
      pool, log, hands: deps.hands, options: deps.options,
      forcedWithdraw: async (userId) => {
        const r = await bank('/api/withdraw', { tableId, forced: true, userId }, { service: true });
        if (r.status >= 400 && r.body.error !== 'not_at_table') throw new Error(String(r.body.error ?? r.status));
      },
      standUp: async ({ userId, token }) => {
        const r = token
          ? await bank('/api/withdraw', { tableId }, { token })
          : await bank('/api/withdraw', { tableId, forced: true, userId }, { service: true });
        if (r.status >= 400) log.warn({ tableId, userId, status: r.status, error: r.body.error }, 'stand-up refused by the bank');
        return r;
      },
    });
    if (record.game_type === 'poker') {
      await room.open().catch(async (err) => {
        await deps.process.release(tableId).catch(() => undefined);
        throw err;
      });
    }
    return room;
  }

  /**
   * A room stops while the process goes on: its table's lease was lost (`lease_lost`: another
   * process runs the table now) or it unloads. Its watchers get `table_closed` with the reason and
   * leave it (their connections stay open); joining again finds where the table runs now.
   */
  async function stopRoom(tableId: string, reason: string): Promise<void> {
    const r = rooms.get(tableId);
    if (!r) return;
    rooms.delete(tableId);
    const room = await r.catch(() => null);
    if (!room) return;
    room.close();
    const message = toJson({ type: 'table_closed', tableId, reason });
    for (const w of room.watchers) {
      w.send(message);
      (w as Connection).tables?.delete(tableId);
    }
    room.watchers.clear();
  }

  /** Unloads a room: it stops and its table's lease is released (a hand in progress is abandoned). */
  async function unload(tableId: string, reason = 'unloaded'): Promise<void> {
    await stopRoom(tableId, reason);
    await deps.process.release(tableId).catch((err) => log.warn({ err: (err as Error).message, tableId }, 'lease not released'));
  }

  /** The room of a table, loaded once (a failed load is forgotten, so a later call retries). */
  function room(tableId: string): Promise<Room> {
    let r = rooms.get(tableId);
    if (!r) {
      r = load(tableId);
      rooms.set(tableId, r);
      r.catch(() => rooms.delete(tableId));
    }
    return r;
  }

  /** A seat route touched this table: a loaded room re-reads its seats. */
  function seatsChanged(tableId: string): void {
    const r = rooms.get(tableId);
    if (r) void r.then((room) => room.refresh()).catch(() => undefined);
  }

  const send = (c: Connection, message: Record<string, unknown>) => c.send(toJson(message));
  const refuse = (c: Connection, code: string, ref?: unknown, extra: Record<string, unknown> = {}) =>
    send(c, { type: 'error', code, ...(ref !== undefined ? { ref } : {}), ...extra });

  async function authenticate(c: Connection, token: string | null, agentId?: unknown): Promise<string | null> {
    if (!token) return null;
    try {
      const claims = await deps.jwt.verify(token);
      // another user on this connection: the previous user's agent is not theirs
      if (claims.sub !== c.userId) c.agentId = null;
      c.userId = claims.sub;
      c.token = token;
    } catch {
      return 'invalid_token';
    }
    if (agentId !== undefined && agentId !== null) {
      if (typeof agentId !== 'string' || !UUID.test(agentId)) return 'agent_not_found';
      const { rows } = await pool.query('select 1 from game.agents where id = $1 and owner_user_id = $2', [agentId, c.userId]);
      if (!rows[0]) return 'agent_not_found';
      c.agentId = agentId;
    }
    for (const t of c.tables) void room(t).then((r) => { r.tokens.set(c.userId!, token); c.send(r.stateFor(c)); });
    return null;
  }

  async function join(c: Connection, tableId: unknown, ref?: unknown): Promise<void> {
    if (typeof tableId !== 'string' || tableId.length === 0 || tableId.length > 64) return refuse(c, 'bad_request', ref, { field: 'tableId' });
    let r: Room;
    try {
      r = await room(tableId);
    } catch (err) {
      const code = (err as { code?: string }).code;
      // the table runs on another game process: the client connects there (docs/operations.md)
      if (code === 'table_elsewhere') return refuse(c, 'table_elsewhere', ref, { tableId, url: (err as { url?: string | null }).url ?? null });
      return refuse(c, code === 'table_not_found' ? 'table_not_found' : 'unavailable', ref, { tableId });
    }
    if (r.record.game_type === 'arena') {
      return refuse(c, 'arena_engine_unavailable', ref, { tableId, message: 'arena tables can be created, but no arena engine runs yet' });
    }
    c.tables.add(tableId);
    r.watchers.add(c);
    if (c.userId && c.token) r.tokens.set(c.userId, c.token);
    send(c, { type: 'joined', tableId, role: r.seatOf(c.userId) !== null ? 'player' : 'spectator', ...(ref !== undefined ? { ref } : {}) });
    c.send(r.stateFor(c));
  }

  /** The table the message names, joined by this connection. */
  async function joined(c: Connection, tableId: unknown, ref?: unknown): Promise<Room | null> {
    if (typeof tableId !== 'string' || !c.tables.has(tableId)) {
      refuse(c, 'not_joined', ref, { tableId });
      return null;
    }
    return room(tableId);
  }

  /** Who may sit at this table (spec: the audience gate). */
  function audience(r: Room, c: Connection): string | null {
    const isAgent = c.agentId !== null;
    if ((r.record.kind === 'agent' || r.settings.hostedOnly) && !isAgent) return 'humans_not_allowed_at_agent_table';
    if (r.record.kind === 'human_only' && isAgent) return 'agent_not_allowed_at_human_table';
    return null;
  }

  async function handle(c: Connection, raw: string): Promise<void> {
    let m: Record<string, unknown>;
    try {
      m = JSON.parse(raw);
      if (!m || typeof m !== 'object' || Array.isArray(m)) throw new Error('not an object');
    } catch {
      return refuse(c, 'malformed_message');
    }
    const ref = m.ref;
    switch (m.type) {
      case 'ping':
        return send(c, { type: 'pong', ref });
      case 'auth': {
        const error = await authenticate(c, typeof m.token === 'string' ? m.token : null, m.agentId);
        return error ? refuse(c, error, ref) : send(c, { type: 'authenticated', userId: c.userId, agentId: c.agentId, ref });
      }
      case 'join':
        if (m.agentId !== undefined && c.token) {
          const error = await authenticate(c, c.token, m.agentId);
          if (error) return refuse(c, error, ref);
        }
        return join(c, m.tableId, ref);
      case 'leave': {
        const r = await joined(c, m.tableId, ref);
        if (!r) return;
        r.watchers.delete(c);
        c.tables.delete(r.tableId);
        return send(c, { type: 'left', tableId: r.tableId, ref });
      }
      case 'sit': {
        const r = await joined(c, m.tableId, ref);
        if (!r) return;
        if (!c.userId || !c.token) return refuse(c, 'not_authenticated', ref);
        const gate = audience(r, c);
        if (gate) return refuse(c, gate, ref);
        if (r.record.mode === 'sng') return refuse(c, 'use_tournament_registration', ref);
        const userId = c.userId;
        const token = c.token;
        const agentId = c.agentId;
        const body = { tableId: r.tableId, seatIndex: m.seatIndex, amount: m.amount, ...(typeof m.idempotencyKey === 'string' ? { idempotencyKey: m.idempotencyKey } : {}) };
        const { pending, answer } = await r.requestSit(userId, agentId, c, () => bank('/api/deposit', body, { token }));
        if (pending) send(c, { type: 'sit_pending', tableId: r.tableId, ref });
        const seated = async () => {
          const res = await answer;
          if (res.status !== 200) return refuse(c, String(res.body.error ?? 'sit_refused'), ref);
          if (agentId) {
            await deps.board.markConditionMet(userId, 'agent_seated', `agent_seated:${agentId}:${r.tableId}`).catch(() => undefined);
          }
          send(c, { type: 'seated', tableId: r.tableId, seatIndex: res.body.seatIndex, chipBalance: res.body.chipBalance, ref });
          return r.broadcastState();
        };
        // a pending sit completes at the hand's end; the connection's other messages go on meanwhile
        if (pending) return void seated().catch((err) => log.error({ err }, 'pending sit failed'));
        return seated();
      }
      case 'action': {
        const r = await joined(c, m.tableId, ref);
        if (!r) return;
        if (!c.userId) return refuse(c, 'not_authenticated', ref);
        // the audience gate holds for play too (a seat funded over HTTP is played by whoever connects)
        const gate = audience(r, c);
        if (gate) return refuse(c, gate, ref);
        if (typeof m.seq !== 'number') return refuse(c, 'missing_seq', ref);
        const result = await r.act(c.userId, m);
        if (result.error) return refuse(c, result.error, ref);
        return send(c, { type: 'action_ack', tableId: r.tableId, ref, ...(result.duplicate ? { duplicate: true } : {}) });
      }
      case 'sit_out':
      case 'sit_in': {
        const r = await joined(c, m.tableId, ref);
        if (!r) return;
        if (!c.userId) return refuse(c, 'not_authenticated', ref);
        const error = r.setSittingOut(c.userId, m.type === 'sit_out');
        return error ? refuse(c, error, ref) : send(c, { type: m.type === 'sit_out' ? 'sat_out' : 'sat_in', tableId: r.tableId, ref });
      }
      case 'stand_up': {
        const r = await joined(c, m.tableId, ref);
        if (!r) return;
        if (!c.userId || !c.token) return refuse(c, 'not_authenticated', ref);
        if (r.record.mode === 'sng') return refuse(c, 'stand_up_not_allowed_in_tournament', ref);
        r.tokens.set(c.userId, c.token);
        const res = await r.requestStandUp(c.userId);
        if (res.pending) return send(c, { type: 'stand_up_pending', tableId: r.tableId, ref });
        if (res.status !== 200) return refuse(c, String(res.body.error ?? 'stand_up_refused'), ref);
        return c.send(stoodUp(r.tableId, res.body, ref));
      }
      default:
        return refuse(c, 'unknown_message_type', ref);
    }
  }

  function onConnection(ws: WebSocket, req: IncomingMessage, autoJoin: string | null) {
    // Messages sent in one step (an action's ack and the state it produced) leave in one socket
    // write: the socket is corked at the first send and uncorked by a microtask queued then, which
    // runs after the step's synchronous sends and after the ack (its continuation was queued
    // first). On loopback a write costs the sender the receiver's TCP work too, so writes, not
    // bytes, are what a busy table pays for. (`_socket` is ws's socket; ws corks it around each
    // frame too, and corks nest.)
    const socket = (ws as unknown as { _socket?: import('node:net').Socket })._socket;
    let corked = false;
    const uncork = () => {
      corked = false;
      socket?.uncork();
    };
    const c: Connection = {
      id: nextId++, ws, userId: null, agentId: null, token: null, tables: new Set(),
      send: (message) => {
        if (ws.readyState !== ws.OPEN) return;
        if (socket && !corked) {
          corked = true;
          socket.cork();
          queueMicrotask(uncork);
        }
        ws.send(message);
      },
    };
    let queue = Promise.resolve();
    ws.on('message', (data, isBinary) => {
      if (isBinary) return refuse(c, 'malformed_message');
      const text = data.toString();
      queue = queue.then(() => handle(c, text)).catch((err) => {
        log.error({ err }, 'websocket message failed');
        refuse(c, 'internal_error');
      });
    });
    ws.on('close', () => {
      for (const t of c.tables) void rooms.get(t)?.then((r) => r.watchers.delete(c)).catch(() => undefined);
    });
    ws.on('error', () => undefined);
    const url = new URL(req.url ?? '/', 'http://x');
    const header = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/.exec(req.headers.authorization ?? '')?.[1];
    const token = header ?? url.searchParams.get('token');
    queue = queue.then(async () => {
      if (token) {
        const error = await authenticate(c, token, url.searchParams.get('agentId') ?? undefined);
        if (error) refuse(c, error);
      }
      send(c, { type: 'hello', userId: c.userId, agentId: c.agentId, role: c.userId ? 'player' : 'spectator' });
      if (autoJoin) await join(c, autoJoin);
    });
  }

  // seat changes made by the cage's calls, on whichever game process they landed
  deps.process.onSeatsChanged(seatsChanged);

  return {
    seatsChanged,
    room,
    unload,
    attach(server: Server) {
      server.on('upgrade', (req, socket, head) => {
        const path = new URL(req.url ?? '/', 'http://x').pathname;
        const match = /^\/ws(?:\/tables\/([^/]+))?\/?$/.exec(path);
        if (!match) {
          socket.write('HTTP/1.1 404 Not Found\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
          return void socket.destroy();
        }
        const tableId = match[1] ? decodeURIComponent(match[1]) : null;
        wss.handleUpgrade(req, socket, head, (ws) => onConnection(ws, req, tableId));
      });
    },
    async close() {
      clearInterval(ticker);
      for (const [tableId, r] of rooms) {
        await r.then((room) => room.close()).catch(() => undefined);
        // a clean stop lets the table go at once (a hand in progress is abandoned), no recovery needed
        await deps.process.release(tableId).catch((err) => log.warn({ err: (err as Error).message, tableId }, 'lease not released'));
      }
      for (const client of wss.clients) client.terminate();
      wss.close();
    },
  };
}

export type LiveTables = ReturnType<typeof createLiveTables>;
