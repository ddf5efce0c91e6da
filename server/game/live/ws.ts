// The game role's websocket: live tables (docs/protocol.md). One `ws` server on the game port at
// `/ws` (and `/ws/tables/:tableId`, which joins that table at once). Messages are JSON
// `{ type, ... }`; a refused message gets `{ type:'error', code, ref? }` and the connection stays
// usable.
//
// Identity: a player presents their access JWT (`Authorization: Bearer` on the upgrade, `?token=`,
// or a first `{ type:'auth', token }` message); without one the connection is a spectator. An agent
// connects with its owner's JWT and names itself with `agentId` (one of the owner's agents) in its
// `auth` or `join` message; it then plays the owner's seat.
import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type pg from 'pg';
import type { Logger } from 'pino';
import { WebSocketServer, type WebSocket } from 'ws';
import type { JwtVerifier } from '../../http/jwt.ts';
import type { ClaimBoard } from '../../claims/board.ts';
import type { createHands } from '../hands/hands.ts';
import type { GameProcess } from './lease.ts';
import type { Room, RoomOptions, Watcher } from './room.ts';
import { createRoomRegistry, every } from './rooms.ts';
import { stoodUp, toJson } from './wire.ts';
import type { ServiceClient } from '../../http/service-client.ts';
import { parseClientMessage, type ClientMessage, type ClientMessageType } from './messages.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** A table id as the database allows one (tables_table_id_shape): anything else cannot exist. */
const TABLE_ID = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/;
const MAX_MESSAGE_BYTES = 16 * 1024;
/** How deep a message's arrays and objects may nest (docs/protocol.md); counted on the text, before parsing. */
export const MAX_JSON_DEPTH = 64;
/** The close code of a connection whose send buffer passed the bound (docs/protocol.md). */
export const SLOW_CONSUMER_CLOSE = 4008;
/** How long a stop waits for clients to answer the close before it drops them. */
const STOP_GRACE_MS = 2000;

// the client's messages: one zod discriminated union (messages.ts); the fuzz suite reads the types
export { CLIENT_MESSAGE_TYPES } from './messages.ts';

interface Connection extends Watcher {
  ws: WebSocket;
  token: string | null;
  tables: Set<string>;
  /** Answered the last ping (or was just opened). */
  alive: boolean;
}


export interface LiveLimits {
  /** A connection whose send buffer passes this is closed slow_consumer. */
  maxBufferedBytes: number;
  /** Pings every this often; a connection that did not answer the previous one is terminated. */
  pingIntervalMs: number;
  /** A cash room with nothing in it this long unloads (its lease released). */
  idleUnloadMs: number;
}

/** True when the JSON text nests arrays or objects deeper than `max` (brackets inside strings skipped): one pass, no parse. */
export function nestsDeeper(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 92) i++; // a backslash escapes the next character
      else if (ch === 34) inString = false;
    } else if (ch === 34) inString = true;
    else if (ch === 91 || ch === 123) {
      if (++depth > max) return true;
    } else if (ch === 93 || ch === 125) depth--;
  }
  return false;
}

/** `decodeURIComponent`, or null for a malformed escape (never a throw). */
function decodeSegment(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

/** An HTTP answer on a socket that asked to upgrade (the upgrade did not happen): JSON `{ error }`, then closed. */
function refuseUpgrade(socket: Duplex, status: number, code: string): void {
  try {
    if (socket.writable) {
      const body = JSON.stringify({ error: code });
      socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json; charset=utf-8\r\n`
        + `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
    } else socket.destroy();
  } catch {
    socket.destroy();
  }
}

export interface LiveTablesDeps {
  pool: pg.Pool;
  log: Logger;
  jwt: JwtVerifier;
  hands: ReturnType<typeof createHands>;
  board: ClaimBoard;
  options: RoomOptions;
  /** The bank's base URL (the cage), read at call time. */
  /** The bank (the cage), through the roles' one client. */
  bank: ServiceClient;
  /** This process's presence and table leases: a poker room runs only under its table's lease. */
  process: GameProcess;
  limits: LiveLimits;
}

export function createLiveTables(deps: LiveTablesDeps) {
  const { pool, log } = deps;
  const { limits } = deps;
  const registry = createRoomRegistry({ ...deps, idleUnloadMs: limits.idleUnloadMs });
  const { room } = registry;
  const connections = new Set<Connection>();
  let nextId = 1;
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE_BYTES });

  const heartbeat = every(log, limits.pingIntervalMs, 'websocket heartbeat', pingAll);

  /** Half-open connections: one that did not answer the previous ping is terminated (and leaves its rooms). */
  function pingAll(): void {
    for (const c of connections) {
      if (c.ws.readyState !== c.ws.OPEN) continue;
      if (!c.alive) {
        log.info({ connection: c.id, userId: c.userId }, 'websocket terminated: no pong');
        leaveAll(c);
        c.ws.terminate();
        continue;
      }
      c.alive = false;
      try {
        c.ws.ping();
      } catch (err) {
        log.warn({ err: (err as Error).message, connection: c.id }, 'websocket ping not sent');
      }
    }
  }

  /** The connection leaves every table it joined (closed, terminated, or closing). */
  function leaveAll(c: Connection): void {
    for (const t of c.tables) void registry.current(t)?.then((r) => r.watchers.delete(c)).catch(() => undefined);
    c.tables.clear();
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
    for (const t of c.tables) {
      void room(t).then((r) => {
        r.tokens.set(c.userId!, token);
        c.send(r.stateFor(c));
      }).catch((err) => log.warn({ err: (err as Error).message, tableId: t }, 'state after auth not sent'));
    }
    return null;
  }

  async function join(c: Connection, tableId: unknown, ref?: unknown): Promise<void> {
    if (typeof tableId !== 'string' || tableId.length === 0 || tableId.length > 64) return refuse(c, 'bad_request', ref, { field: 'tableId' });
    // an id the database cannot hold names no table (and never reaches SQL)
    if (!TABLE_ID.test(tableId)) return refuse(c, 'table_not_found', ref, { tableId });
    let r: Room | null = null;
    // a room that unloaded while this join waited for it is loaded again
    for (let attempt = 0; attempt < 3 && !r; attempt++) {
      const loading = room(tableId);
      try {
        const loaded = await loading;
        if (registry.current(tableId) === loading) r = loaded;
      } catch (err) {
        const code = (err as { code?: string }).code;
        // the table runs on another game process: the client connects there (docs/operations.md)
        if (code === 'table_elsewhere') return refuse(c, 'table_elsewhere', ref, { tableId, url: (err as { url?: string | null }).url ?? null });
        const known = code === 'table_not_found' || code === 'table_closed';
        return refuse(c, known ? code : 'unavailable', ref, { tableId });
      }
    }
    if (!r) return refuse(c, 'unavailable', ref, { tableId });
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

  /** What each client message type does: one handler per member of the union, no more and no fewer. */
  const handlers: { [T in ClientMessageType]: (c: Connection, m: Extract<ClientMessage, { type: T }>, ref: unknown) => Promise<void> | void } = {
    ping: (c, _m, ref) => send(c, { type: 'pong', ref }),
    async auth(c, m, ref) {
      const error = await authenticate(c, typeof m.token === 'string' ? m.token : null, m.agentId);
      return error ? refuse(c, error, ref) : send(c, { type: 'authenticated', userId: c.userId, agentId: c.agentId, ref });
    },
    async join(c, m, ref) {
      if (m.agentId !== undefined && c.token) {
        const error = await authenticate(c, c.token, m.agentId);
        if (error) return refuse(c, error, ref);
      }
      return join(c, m.tableId, ref);
    },
    async leave(c, m, ref) {
      const r = await joined(c, m.tableId, ref);
      if (!r) return;
      r.watchers.delete(c);
      c.tables.delete(r.tableId);
      return send(c, { type: 'left', tableId: r.tableId, ref });
    },
    async sit(c, m, ref) {
      const r = await joined(c, m.tableId, ref);
      if (!r) return;
      if (!c.userId || !c.token) return refuse(c, 'not_authenticated', ref);
      const gate = audience(r, c);
      if (gate) return refuse(c, gate, ref);
      if (r.record.mode === 'sng') return refuse(c, 'use_tournament_registration', ref);
      const userId = c.userId;
      const token = c.token;
      const agentId = c.agentId;
      // The cage refuses a deposit without a key. The client's key makes its retries safe (a sit
      // sent again after a lost answer replays the first); without one, this message is one intent
      // of its own: the game sends it exactly once, and a reconnecting client reads the outcome
      // from the table's state (docs/decisions.md, "Deposit keys").
      const idempotencyKey = m.idempotencyKey ?? `ws-sit:${randomUUID()}`;
      const body = { tableId: r.tableId, seatIndex: m.seatIndex, amount: m.amount, idempotencyKey };
      const { pending, answer } = await r.requestSit(userId, agentId, c, () => registry.bank('/api/deposit', body, { token }));
      if (pending) send(c, { type: 'sit_pending', tableId: r.tableId, ref });
      const seated = async () => {
        const res = await answer;
        if (res.status !== 200) return refuse(c, String(res.body.error ?? 'sit_refused'), ref);
        send(c, { type: 'seated', tableId: r.tableId, seatIndex: res.body.seatIndex, chipBalance: res.body.chipBalance, ref });
        return r.broadcastState();
      };
      // a pending sit completes at the hand's end; the connection's other messages go on meanwhile
      if (pending) return void seated().catch((err) => log.error({ err }, 'pending sit failed'));
      return seated();
    },
    async action(c, m, ref) {
      const r = await joined(c, m.tableId, ref);
      if (!r) return;
      if (!c.userId) return refuse(c, 'not_authenticated', ref);
      // the audience gate holds for play too (a seat funded over HTTP is played by whoever connects)
      const gate = audience(r, c);
      if (gate) return refuse(c, gate, ref);
      const result = await r.act(c.userId, m);
      if (result.error) return refuse(c, result.error, ref);
      return send(c, { type: 'action_ack', tableId: r.tableId, ref, ...(result.duplicate ? { duplicate: true } : {}) });
    },
    sit_out: (c, m, ref) => sittingOut(c, m, ref, true),
    sit_in: (c, m, ref) => sittingOut(c, m, ref, false),
    async stand_up(c, m, ref) {
      const r = await joined(c, m.tableId, ref);
      if (!r) return;
      if (!c.userId || !c.token) return refuse(c, 'not_authenticated', ref);
      if (r.record.mode === 'sng') return refuse(c, 'stand_up_not_allowed_in_tournament', ref);
      r.tokens.set(c.userId, c.token);
      const res = await r.requestStandUp(c.userId);
      if (res.pending) return send(c, { type: 'stand_up_pending', tableId: r.tableId, ref });
      if (res.status !== 200) return refuse(c, String(res.body.error ?? 'stand_up_refused'), ref);
      return c.send(stoodUp(r.tableId, res.body, ref));
    },
  };

  async function sittingOut(c: Connection, m: { tableId: string }, ref: unknown, out: boolean): Promise<void> {
    const r = await joined(c, m.tableId, ref);
    if (!r) return;
    if (!c.userId) return refuse(c, 'not_authenticated', ref);
    const error = r.setSittingOut(c.userId, out);
    return error ? refuse(c, error, ref) : send(c, { type: out ? 'sat_out' : 'sat_in', tableId: r.tableId, ref });
  }

  /** One message: refused malformed_message past the depth bound or when it is not a JSON object, else dispatched by type. */
  async function handle(c: Connection, raw: string): Promise<void> {
    let value: Record<string, unknown>;
    try {
      if (nestsDeeper(raw, MAX_JSON_DEPTH)) throw new Error('nested too deep');
      value = JSON.parse(raw);
      if (!value || typeof value !== 'object' || Array.isArray(value)) throw new Error('not an object');
    } catch {
      return refuse(c, 'malformed_message');
    }
    const parsed = parseClientMessage(value);
    if (!parsed.ok) return refuse(c, parsed.code, value.ref, parsed.field ? { field: parsed.field } : {});
    const m = parsed.message;
    return (handlers[m.type] as (c: Connection, m: ClientMessage, ref: unknown) => Promise<void> | void)(c, m, m.ref);
  }

  function onConnection(ws: WebSocket, req: IncomingMessage, url: URL, autoJoin: string | null) {
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
      id: nextId++, ws, userId: null, agentId: null, token: null, tables: new Set(), alive: true,
      send: (message) => {
        if (ws.readyState !== ws.OPEN) return;
        if (socket && !corked) {
          corked = true;
          socket.cork();
          queueMicrotask(uncork);
        }
        ws.send(message);
        // a client that does not read would make the server hold everything sent to it
        if (ws.bufferedAmount > limits.maxBufferedBytes) slowConsumer(c);
      },
    };
    connections.add(c);
    let queue = Promise.resolve();
    const enqueue = (work: () => Promise<void>) => {
      queue = queue.then(work).catch((err) => {
        log.error({ err, connection: c.id }, 'websocket message failed');
        try {
          refuse(c, 'internal_error');
        } catch {
          ws.terminate();
        }
      });
    };
    ws.on('message', (data, isBinary) => {
      try {
        if (isBinary) return refuse(c, 'malformed_message');
        const text = data.toString();
        enqueue(() => handle(c, text));
      } catch (err) {
        log.error({ err, connection: c.id }, 'websocket message not taken');
      }
    });
    ws.on('pong', () => (c.alive = true));
    ws.on('close', () => {
      connections.delete(c);
      leaveAll(c);
    });
    ws.on('error', () => undefined);
    const header = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/.exec(req.headers.authorization ?? '')?.[1];
    const token = header ?? url.searchParams.get('token');
    enqueue(async () => {
      if (token) {
        const error = await authenticate(c, token, url.searchParams.get('agentId') ?? undefined);
        if (error) refuse(c, error);
      }
      send(c, { type: 'hello', userId: c.userId, agentId: c.agentId, role: c.userId ? 'player' : 'spectator' });
      if (autoJoin) await join(c, autoJoin);
    });
  }

  /** The send buffer passed the bound: the connection leaves its tables and is closed slow_consumer (nothing more is queued for it). */
  function slowConsumer(c: Connection): void {
    log.warn({ connection: c.id, userId: c.userId, bufferedBytes: c.ws.bufferedAmount, bound: limits.maxBufferedBytes }, 'websocket closed: slow consumer');
    leaveAll(c);
    c.ws.close(SLOW_CONSUMER_CLOSE, 'slow_consumer');
  }

  /** An upgrade request: the path names `/ws` or `/ws/tables/:tableId`; anything else is a coded HTTP answer. */
  function upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    if (registry.stopping) return refuseUpgrade(socket, 503, 'server_stopping');
    const url = new URL(req.url ?? '/', 'http://x');
    const match = /^\/ws(?:\/tables\/([^/]+))?\/?$/.exec(url.pathname);
    if (!match) return refuseUpgrade(socket, 404, 'not_found');
    const tableId = match[1] ? decodeSegment(match[1]) : null;
    if (tableId === null && match[1]) return refuseUpgrade(socket, 400, 'malformed_path');
    wss.handleUpgrade(req, socket, head, (ws) => {
      try {
        onConnection(ws, req, url, tableId);
      } catch (err) {
        log.error({ err }, 'websocket connection failed to start');
        ws.terminate();
      }
    });
  }

  /**
   * A stop: every room's watchers get `table_closed` (server_stopping), the rooms stop and release
   * their leases, and every connection is closed 1001 (dropped if it does not answer in time).
   */
  async function close(): Promise<void> {
    clearInterval(heartbeat);
    await registry.stop();
    const closed = [...connections].map((c) => new Promise<void>((resolve) => {
      if (c.ws.readyState === c.ws.CLOSED) return resolve();
      c.ws.once('close', () => resolve());
      c.ws.close(1001, 'server_stopping');
    }));
    const grace = new Promise<void>((resolve) => setTimeout(resolve, STOP_GRACE_MS).unref());
    await Promise.race([Promise.all(closed), grace]);
    for (const client of wss.clients) client.terminate();
    wss.close();
  }

  return {
    seatsChanged: registry.seatsChanged,
    room,
    unload: registry.unload,
    close,
    /** What this process holds now: open connections, loaded rooms and their watchers (for tests and operators). */
    async inspect(): Promise<{ connections: number; rooms: Record<string, { watchers: number }> }> {
      return { connections: connections.size, rooms: await registry.inspect() };
    },
    attach(server: Server) {
      // the upgrade's own boundary: whatever throws is a coded 400 on that socket, logged, and the process goes on
      server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
        try {
          upgrade(req, socket, head);
        } catch (err) {
          log.warn({ err, url: String(req.url).slice(0, 200) }, 'websocket upgrade refused');
          refuseUpgrade(socket, 400, 'malformed_request');
        }
      });
    },
  };
}

export type LiveTables = ReturnType<typeof createLiveTables>;
