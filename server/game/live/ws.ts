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
import type { Ed25519Signer } from '../../crypto/signing.ts';
import type { JwtVerifier } from '../../http/jwt.ts';
import type { ClaimBoard } from '../../claims/board.ts';
import type { createHands } from '../hands/hands.ts';
import type { GameProcess } from './lease.ts';
import type { Room, RoomOptions, Watcher } from './room.ts';
import { createRoomRegistry, every, type RoomRegistry } from './rooms.ts';
import { reserveSeat } from '../../tournaments/registration.ts';
import { REFUSALS } from '../../http/errors.ts';
import { stoodUp, toJson, type ServerMessage } from './wire.ts';
import type { BankClients } from '../../bank-contract/routing.ts';
import { parseClientMessage, type ClientMessage } from './messages.ts';

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
  /** The grant of the connection's access JWT (its `sid`). */
  sid: string | null;
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
  /** Both banks, one client each: a table's sit, stand-up and unregister go to its own (game.tables.bank). */
  banks: BankClients;
  /** This process's presence and table leases: a poker room runs only under its table's lease. */
  process: GameProcess;
  limits: LiveLimits;
  /** The dealer's key: every hand's record is signed with it (server/game/hands/dealer-key.ts). */
  dealer: Ed25519Signer;
}

/** Sends one message: its shape checked against the server messages' schemas (server-messages.ts). */
const send = (c: Connection, message: ServerMessage) => c.send(toJson(message));
const refuse = (c: Connection, code: string, ref?: unknown, extra: { tableId?: string; field?: string; url?: string | null; message?: string } = {}) =>
  send(c, { type: 'error', code, ...(ref !== undefined ? { ref } : {}), ...extra });

/** Who may sit at this table (spec: the audience gate). */
function audience(r: Room, c: Connection): string | null {
  const isAgent = c.agentId !== null;
  if ((r.record.kind === 'agent' || r.settings.hostedOnly) && !isAgent) return 'humans_not_allowed_at_agent_table';
  if (r.record.kind === 'human_only' && isAgent) return 'agent_not_allowed_at_human_table';
  return null;
}

/** The bytes of a frame's header for a text payload of `n` bytes (a server's frames are not masked: RFC 6455, 5.2). */
const headerBytes = (n: number) => (n < 126 ? 2 : n < 65536 ? 4 : 10);

/** Text frames (FIN, opcode 1), one per message, in one buffer: what ws's send would write, framed once for a whole step. */
export function textFrames(messages: readonly string[]): Buffer {
  const lengths = messages.map((m) => Buffer.byteLength(m));
  let size = 0;
  for (const n of lengths) size += headerBytes(n) + n;
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (let i = 0; i < messages.length; i++) {
    const n = lengths[i]!;
    out[at] = 0x81;
    if (n < 126) {
      out[at + 1] = n;
      at += 2;
    } else if (n < 65536) {
      out[at + 1] = 126;
      out.writeUInt16BE(n, at + 2);
      at += 4;
    } else {
      out[at + 1] = 127;
      out.writeUInt32BE(Math.floor(n / 0x1_0000_0000), at + 2);
      out.writeUInt32BE(n >>> 0, at + 6);
      at += 10;
    }
    at += out.write(messages[i]!, at);
  }
  return out;
}

/**
 * The connection's send: the messages of one step leave in one socket write. The first send of a
 * step queues a microtask that frames every message sent until it runs (after the step's
 * synchronous sends, and after an action's ack, whose continuation was queued first) and writes
 * them at once. On loopback a write costs the sender the receiver's TCP work too, so writes, not
 * bytes, are what a busy table pays for; framing here rather than through ws's send (two buffered
 * chunks per message, a writev at the uncork) also skips the stream's per-chunk bookkeeping. ws
 * writes only control frames (pong, close) on its own, which may come between messages; a
 * connection no longer open gets nothing more (as ws's send, which drops it).
 */
export function batchedSend(ws: WebSocket, afterWrite: () => void): (message: string) => void {
  // `_socket` is ws's socket: without permessage-deflate (off here) ws writes each frame to it at once
  const socket = (ws as unknown as { _socket?: import('node:net').Socket })._socket;
  let pending: string[] = [];
  const flush = () => {
    const batch = pending;
    pending = [];
    if (ws.readyState !== ws.OPEN || !socket) return;
    socket.write(textFrames(batch));
    afterWrite();
  };
  return (message) => {
    if (ws.readyState !== ws.OPEN) return;
    if (pending.length === 0) queueMicrotask(flush);
    pending.push(message);
  };
}

/** The websocket side of the game role: connections, their messages, and the rooms they join. */
export class LiveTables {
  private readonly deps: LiveTablesDeps;
  readonly registry: RoomRegistry;
  private readonly connections = new Set<Connection>();
  private nextId = 1;
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE_BYTES, perMessageDeflate: false }) // batchedSend frames uncompressed;
  private readonly heartbeat: NodeJS.Timeout;

  constructor(deps: LiveTablesDeps) {
    this.deps = deps;
    this.registry = createRoomRegistry({ ...deps, idleUnloadMs: deps.limits.idleUnloadMs });
    this.heartbeat = every(deps.log, deps.limits.pingIntervalMs, 'websocket heartbeat', () => this.pingAll());
  }

  get seatsChanged() {
    return this.registry.seatsChanged;
  }

  get room() {
    return this.registry.room;
  }

  /** The hand boundaries this process's rooms call (one object: a test may wrap one of them to lose an answer). */
  get hands() {
    return this.deps.hands;
  }

  get unload() {
    return this.registry.unload;
  }

  /** Half-open connections: one that did not answer the previous ping is terminated (and leaves its rooms). */
  private pingAll(): void {
    for (const c of this.connections) {
      if (c.ws.readyState !== c.ws.OPEN) continue;
      if (!c.alive) {
        this.deps.log.info({ connection: c.id, userId: c.userId }, 'websocket terminated: no pong');
        this.leaveAll(c);
        c.ws.terminate();
        continue;
      }
      c.alive = false;
      try {
        c.ws.ping();
      } catch (err) {
        this.deps.log.warn({ err: (err as Error).message, connection: c.id }, 'websocket ping not sent');
      }
    }
  }

  /** The connection leaves every table it joined (closed, terminated, or closing). */
  private leaveAll(c: Connection): void {
    for (const t of c.tables) void this.registry.current(t)?.then((r) => r.watchers.delete(c)).catch(() => undefined);
    c.tables.clear();
  }

  private async authenticate(c: Connection, token: string | null, agentId?: unknown): Promise<string | null> {
    if (!token) return null;
    try {
      const claims = await this.deps.jwt.verify(token);
      // another user on this connection: the previous user's agent is not theirs
      if (claims.sub !== c.userId) c.agentId = null;
      c.userId = claims.sub;
      c.token = token;
      // the token's grant: what the SQL that acts for this player takes (never the user id)
      c.sid = typeof claims.sid === 'string' ? claims.sid : null;
    } catch {
      return 'invalid_token';
    }
    if (agentId !== undefined && agentId !== null) {
      if (typeof agentId !== 'string' || !UUID.test(agentId)) return 'agent_not_found';
      const { rows } = await this.deps.pool.query('select 1 from game.agent_records where id = $1 and owner_user_id = $2', [agentId, c.userId]);
      if (!rows[0]) return 'agent_not_found';
      c.agentId = agentId;
    }
    for (const t of c.tables) {
      void this.room(t).then((r) => {
        r.tokens.set(c.userId!, token);
        c.send(r.stateFor(c));
      }).catch((err) => this.deps.log.warn({ err: (err as Error).message, tableId: t }, 'state after auth not sent'));
    }
    return null;
  }

  /** The room of a table, loaded for this join (a room that unloaded while the join waited is loaded again), or the refusal. */
  private async roomForJoin(c: Connection, tableId: string, ref: unknown): Promise<Room | null> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const loading = this.room(tableId);
      try {
        const loaded = await loading;
        if (this.registry.current(tableId) === loading) return loaded;
      } catch (err) {
        const code = (err as { code?: string }).code;
        // the table runs on another game process: the client connects there (docs/operations.md)
        if (code === 'table_elsewhere') refuse(c, 'table_elsewhere', ref, { tableId, url: (err as { url?: string | null }).url ?? null });
        else refuse(c, code === 'table_not_found' || code === 'table_closed' ? code : 'unavailable', ref, { tableId });
        return null;
      }
    }
    refuse(c, 'unavailable', ref, { tableId });
    return null;
  }

  private async join(c: Connection, tableId: string, ref?: unknown): Promise<void> {
    // an id the database cannot hold names no table (and never reaches SQL)
    if (!TABLE_ID.test(tableId)) return refuse(c, 'table_not_found', ref, { tableId });
    const r = await this.roomForJoin(c, tableId, ref);
    if (!r) return;
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
  private async joined(c: Connection, tableId: string, ref?: unknown): Promise<Room | null> {
    if (!c.tables.has(tableId)) {
      refuse(c, 'not_joined', ref, { tableId });
      return null;
    }
    return this.room(tableId);
  }

  /** One parsed message, to the handler of its type (every member of the union has one). */
  private dispatch(c: Connection, m: ClientMessage): Promise<void> | void {
    switch (m.type) {
      case 'ping': return send(c, { type: 'pong', ref: m.ref });
      case 'auth': return this.onAuth(c, m);
      case 'join': return this.onJoin(c, m);
      case 'leave': return this.onLeave(c, m);
      case 'sit': return this.onSit(c, m);
      case 'action': return this.onAction(c, m);
      case 'sit_out': return this.sittingOut(c, m, true);
      case 'sit_in': return this.sittingOut(c, m, false);
      case 'stand_up': return this.onStandUp(c, m);
      case 'register_for_tournament': return this.onRegister(c, m);
      case 'deal_seed': return this.onDealSeed(c, m);
    }
  }

  private async onAuth(c: Connection, m: Extract<ClientMessage, { type: 'auth' }>) {
    const error = await this.authenticate(c, typeof m.token === 'string' ? m.token : null, m.agentId);
    return error ? refuse(c, error, m.ref) : send(c, { type: 'authenticated', userId: c.userId, agentId: c.agentId, ref: m.ref });
  }

  private async onJoin(c: Connection, m: Extract<ClientMessage, { type: 'join' }>) {
    if (m.agentId !== undefined && c.token) {
      const error = await this.authenticate(c, c.token, m.agentId);
      if (error) return refuse(c, error, m.ref);
    }
    return this.join(c, m.tableId, m.ref);
  }

  private async onLeave(c: Connection, m: Extract<ClientMessage, { type: 'leave' }>) {
    const r = await this.joined(c, m.tableId, m.ref);
    if (!r) return;
    r.watchers.delete(c);
    c.tables.delete(r.tableId);
    return send(c, { type: 'left', tableId: r.tableId, ref: m.ref });
  }

  private async onSit(c: Connection, m: Extract<ClientMessage, { type: 'sit' }>) {
    const { ref } = m;
    const r = await this.joined(c, m.tableId, ref);
    if (!r) return;
    if (!c.userId || !c.token) return refuse(c, 'not_authenticated', ref);
    const gate = audience(r, c);
    if (gate) return refuse(c, gate, ref);
    if (r.record.mode === 'sng') return refuse(c, 'use_tournament_registration', ref);
    const token = c.token;
    // The cage refuses a deposit without a key. The client's key makes its retries safe (a sit
    // sent again after a lost answer replays the first); without one, this message is one intent
    // of its own: the game sends it exactly once, and a reconnecting client reads the outcome
    // from the table's state (docs/decisions.md, "Deposit keys").
    // A chain table's deposit is keyed by its permit (the chain bank's body carries no other key).
    const body = r.record.bank === 'chain'
      ? { tableId: r.tableId, seatIndex: m.seatIndex, amount: m.amount, permit: m.permit, signerAddress: m.signerAddress }
      : { tableId: r.tableId, seatIndex: m.seatIndex, amount: m.amount, idempotencyKey: m.idempotencyKey ?? `ws-sit:${randomUUID()}` };
    const { pending, answer } = await r.requestSit(c.userId, c.agentId, c, () => this.registry.bank(r.record.bank, '/api/deposit', body, { token }));
    if (pending) send(c, { type: 'sit_pending', tableId: r.tableId, ref });
    const seated = async () => {
      const res = await answer;
      if (res.status !== 200) return refuse(c, String(res.body.error ?? 'sit_refused'), ref);
      // a chain deposit not confirmed within its window: the seat is funded once it confirms (the table's state shows it)
      if (res.body.status !== 'confirmed') return refuse(c, 'deposit_not_confirmed', ref);
      // the seat as the bank's deposit answered it (the contract: seatIndex, chipBalance a decimal string), else as it stands (a replay)
      const seat = typeof res.body.chipBalance === 'string' ? { seatIndex: res.body.seatIndex as number, chipBalance: res.body.chipBalance } : await this.seatNow(r.tableId, c.userId!);
      if (!seat) return refuse(c, 'not_at_table', ref);
      send(c, { type: 'seated', tableId: r.tableId, ...seat, ref });
      return r.broadcastState();
    };
    // a pending sit completes at the hand's end; the connection's other messages go on meanwhile
    if (pending) return void seated().catch((err) => this.deps.log.error({ err }, 'pending sit failed'));
    return seated();
  }

  /** A player's open seat at a table as it stands (a replayed deposit's answer carries none). */
  private async seatNow(tableId: string, userId: string): Promise<{ seatIndex: number; chipBalance: string } | undefined> {
    const { rows } = await this.deps.pool.query<{ seat_index: number; chip_balance: string }>(
      "select seat_index, chip_balance::text as chip_balance from game.seats where table_id = $1 and user_id = $2 and status <> 'closed'", [tableId, userId],
    );
    return rows[0] ? { seatIndex: rows[0].seat_index, chipBalance: rows[0].chip_balance } : undefined;
  }

  private async onAction(c: Connection, m: Extract<ClientMessage, { type: 'action' }>) {
    const r = await this.joined(c, m.tableId, m.ref);
    if (!r) return;
    if (!c.userId) return refuse(c, 'not_authenticated', m.ref);
    // the audience gate holds for play too (a seat funded over HTTP is played by whoever connects)
    const gate = audience(r, c);
    if (gate) return refuse(c, gate, m.ref);
    const result = await r.act(c.userId, m);
    if (result.error) return refuse(c, result.error, m.ref);
    return send(c, { type: 'action_ack', tableId: r.tableId, ref: m.ref, ...(result.duplicate ? { duplicate: true } : {}) });
  }

  private async onStandUp(c: Connection, m: Extract<ClientMessage, { type: 'stand_up' }>) {
    const r = await this.joined(c, m.tableId, m.ref);
    if (!r) return;
    if (!c.userId || !c.token) return refuse(c, 'not_authenticated', m.ref);
    if (r.record.mode === 'sng') return this.leaveTournament(c, r, m.ref);
    r.tokens.set(c.userId, c.token);
    const res = await r.requestStandUp(c.userId);
    if (res.pending) return send(c, { type: 'stand_up_pending', tableId: r.tableId, ref: m.ref });
    if (res.status !== 200) return refuse(c, String(res.body.error ?? 'stand_up_refused'), m.ref);
    return c.send(stoodUp(r.tableId, res.body, m.ref));
  }

  /**
   * A human registers for a tournament: a server-assigned seat is reserved (game.tournament_reserve)
   * until the entry fee is paid through the bank's deposit (amount = entryFee, seatIndex = this seat
   * or none). On a copilot table the message names the player's advisor agent.
   */
  private async onRegister(c: Connection, m: Extract<ClientMessage, { type: 'register_for_tournament' }>) {
    const r = await this.joined(c, m.tableId, m.ref);
    if (!r) return;
    if (!c.userId) return refuse(c, 'not_authenticated', m.ref);
    if (r.record.mode !== 'sng') return refuse(c, 'not_a_tournament', m.ref);
    try {
      const seat = await reserveSeat(this.deps.pool, { tableId: r.tableId, sid: c.sid, agentId: c.agentId, advisorAgentId: m.advisorAgentId ?? null });
      send(c, {
        type: 'tournament_registered', tableId: r.tableId, seatIndex: seat.seatIndex, reservedUntil: seat.reservedUntil.getTime(),
        entryFee: String(r.record.settings.entryFee), registeredCount: seat.registeredCount, ref: m.ref,
      });
    } catch (err) {
      const code = REFUSALS.get((err as { code?: string }).code ?? '')?.code;
      if (code) return refuse(c, code, m.ref);
      throw err;
    }
  }

  /**
   * stand_up on a tournament table: while it registers, the registration is withdrawn through the
   * bank (a paid entry refunded); once it starts, refused stand_up_not_allowed_in_tournament.
   */
  private async leaveTournament(c: Connection, r: Room, ref: unknown) {
    if (r.tournamentPhase !== 'registering') return refuse(c, 'stand_up_not_allowed_in_tournament', ref);
    const res = await this.registry.bank(r.record.bank, '/api/tournament/unregister', { tableId: r.tableId }, { token: c.token });
    if (res.status !== 200) return refuse(c, String(res.body.error ?? 'unregister_refused'), ref);
    // a chain refund not confirmed yet carries its payment state and a note (the bank's reconciler pays it);
    // status, amount (a decimal string) and txHash as the bank's unregister answered them
    const body = res.body as { status: 'refunded' | 'released'; amount: string; txHash?: string | null };
    return send(c, {
      type: 'tournament_unregistered', tableId: r.tableId, status: body.status, amount: body.amount, txHash: body.txHash ?? null,
      ...(typeof res.body.payment === 'string' ? { payment: res.body.payment } : {}), ...(typeof res.body.note === 'string' ? { note: res.body.note } : {}), ref,
    });
  }

  /** A seated player's seed for the next hand's deal (docs/dealer.md): it must name that hand's commitment. */
  private async onDealSeed(c: Connection, m: Extract<ClientMessage, { type: 'deal_seed' }>): Promise<void> {
    const r = await this.joined(c, m.tableId, m.ref);
    if (!r) return;
    if (!c.userId) return refuse(c, 'not_authenticated', m.ref);
    const error = r.contribute(c.userId, m.commitment, m.seed);
    return error ? refuse(c, error, m.ref) : send(c, { type: 'deal_seed_accepted', tableId: r.tableId, commitment: m.commitment, ref: m.ref });
  }

  private async sittingOut(c: Connection, m: { tableId: string; ref?: unknown }, out: boolean): Promise<void> {
    const r = await this.joined(c, m.tableId, m.ref);
    if (!r) return;
    if (!c.userId) return refuse(c, 'not_authenticated', m.ref);
    const error = r.setSittingOut(c.userId, out);
    return error ? refuse(c, error, m.ref) : send(c, { type: out ? 'sat_out' : 'sat_in', tableId: r.tableId, ref: m.ref });
  }

  /** One message: refused malformed_message past the depth bound or when it is not a JSON object, else parsed and dispatched. */
  private async handle(c: Connection, raw: string): Promise<void> {
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
    return this.dispatch(c, parsed.message);
  }

  /**
   * A new connection. Messages sent in one step (an action's ack and the state it produced) leave in
   * one socket write (batchedSend). A client that does not read would make the server hold
   * everything sent to it: past the bound it is closed slow_consumer.
   */
  private onConnection(ws: WebSocket, req: IncomingMessage, url: URL, autoJoin: string | null) {
    const c: Connection = {
      id: this.nextId++, ws, userId: null, agentId: null, token: null, sid: null, tables: new Set(), alive: true,
      send: batchedSend(ws, () => {
        if (ws.bufferedAmount > this.deps.limits.maxBufferedBytes) this.slowConsumer(c);
      }),
    };
    this.connections.add(c);
    const enqueue = this.messageQueue(c);
    ws.on('message', (data, isBinary) => {
      try {
        if (isBinary) return refuse(c, 'malformed_message');
        const text = data.toString();
        enqueue(() => this.handle(c, text));
      } catch (err) {
        this.deps.log.error({ err, connection: c.id }, 'websocket message not taken');
      }
    });
    ws.on('pong', () => (c.alive = true));
    ws.on('close', () => {
      this.connections.delete(c);
      this.leaveAll(c);
    });
    ws.on('error', () => undefined);
    const header = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/.exec(req.headers.authorization ?? '')?.[1];
    const token = header ?? url.searchParams.get('token');
    enqueue(async () => {
      if (token) {
        const error = await this.authenticate(c, token, url.searchParams.get('agentId') ?? undefined);
        if (error) refuse(c, error);
      }
      send(c, { type: 'hello', userId: c.userId, agentId: c.agentId, role: c.userId ? 'player' : 'spectator' });
      if (autoJoin) await this.join(c, autoJoin);
    });
  }

  /** The connection's messages, one at a time; a failure inside one is logged and answered internal_error. */
  private messageQueue(c: Connection): (work: () => Promise<void>) => void {
    let queue = Promise.resolve();
    return (work) => {
      queue = queue.then(work).catch((err) => {
        this.deps.log.error({ err, connection: c.id }, 'websocket message failed');
        try {
          refuse(c, 'internal_error');
        } catch {
          c.ws.terminate();
        }
      });
    };
  }

  /** The send buffer passed the bound: the connection leaves its tables and is closed slow_consumer (nothing more is queued for it). */
  private slowConsumer(c: Connection): void {
    this.deps.log.warn({ connection: c.id, userId: c.userId, bufferedBytes: c.ws.bufferedAmount, bound: this.deps.limits.maxBufferedBytes }, 'websocket closed: slow consumer');
    this.leaveAll(c);
    c.ws.close(SLOW_CONSUMER_CLOSE, 'slow_consumer');
  }

  /** An upgrade request: the path names `/ws` or `/ws/tables/:tableId`; anything else is a coded HTTP answer. */
  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    if (this.registry.stopping) return refuseUpgrade(socket, 503, 'server_stopping');
    const url = new URL(req.url ?? '/', 'http://x');
    const match = /^\/ws(?:\/tables\/([^/]+))?\/?$/.exec(url.pathname);
    if (!match) return refuseUpgrade(socket, 404, 'not_found');
    const tableId = match[1] ? decodeSegment(match[1]) : null;
    if (tableId === null && match[1]) return refuseUpgrade(socket, 400, 'malformed_path');
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      try {
        this.onConnection(ws, req, url, tableId);
      } catch (err) {
        this.deps.log.error({ err }, 'websocket connection failed to start');
        ws.terminate();
      }
    });
  }

  /**
   * A stop: every room's watchers get `table_closed` (server_stopping), the rooms stop and release
   * their leases, and every connection is closed 1001 (dropped if it does not answer in time).
   */
  async close(): Promise<void> {
    clearInterval(this.heartbeat);
    await this.registry.stop();
    const closed = [...this.connections].map((c) => new Promise<void>((resolve) => {
      if (c.ws.readyState === c.ws.CLOSED) return resolve();
      c.ws.once('close', () => resolve());
      c.ws.close(1001, 'server_stopping');
    }));
    const grace = new Promise<void>((resolve) => setTimeout(resolve, STOP_GRACE_MS).unref());
    await Promise.race([Promise.all(closed), grace]);
    for (const client of this.wss.clients) client.terminate();
    this.wss.close();
  }

  /** What this process holds now: open connections, loaded rooms and their watchers (for tests and operators). */
  async inspect(): Promise<{ connections: number; rooms: Record<string, { watchers: number }> }> {
    return { connections: this.connections.size, rooms: await this.registry.inspect() };
  }

  attach(server: Server) {
    // the upgrade's own boundary: whatever throws is a coded 400 on that socket, logged, and the process goes on
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      try {
        this.upgrade(req, socket, head);
      } catch (err) {
        this.deps.log.warn({ err, url: String(req.url).slice(0, 200) }, 'websocket upgrade refused');
        refuseUpgrade(socket, 400, 'malformed_request');
      }
    });
  }
}

export function createLiveTables(deps: LiveTablesDeps): LiveTables {
  return new LiveTables(deps);
}
