// The live benchmark's floor (bench/dealer.ts, the live placement `floor`): a bare websocket server
// that the same bots (live-bots.ts) play against, run as a child process of the benchmark
// (`node bench/lib/live-floor.ts`, PORT and HAND_DELAY_MS from the environment; it prints
// `floor http://127.0.0.1:<port>` once it listens). It speaks the part of docs/protocol.md the bots
// use (join, sit, sit_out, sit_in, action, stand_up, leave, ping; GET /api/tables/:tableId for the
// stand-up check) and plays real hands with the product's pure engine (server/game/poker), deals
// with commit and reveal as the room does (fair-deal.ts), builds every game_state and hand_result
// with the room's own builders (wire.ts: stateWriter, handResult) and writes each connection's
// messages of a step in one framed write (ws.ts, batchedSend). So every message a bot parses has the
// room's shape and size.
//
// It does nothing durable or remote: no PostgreSQL, no cage or bank, no JWT (the bearer token names
// the user), no telemetry, no stored hand or signed record (hand_result's record carries a hash and
// a signature of their real sizes, made of zeros), and a bot that busts sits again with chips from
// nowhere. Nothing is awaited, so a hand's end (hand_result, then the next game_state) leaves with
// the last action's state in one write. It is the cost of the load generator and the websocket
// traffic alone: what any server speaking this protocol to these bots pays at least.
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { WebSocketServer, type WebSocket } from 'ws';
import { chipAmount, handResult, stateWriter, toJson, type SeatView } from '../../server/game/live/wire.ts';
import { batchedSend } from '../../server/game/live/ws.ts';
import { applyAction, isRefusal, startHand, timeout, type Action, type HandState } from '../../server/game/poker/engine.ts';
import { commitmentOf, deckOf, LEGACY_ALGORITHM as DEAL_ALGORITHM, SERVER_SEED_BYTES, toHex, type DealReveal } from '../../server/game/poker/fair-deal.ts';
import { comeBack, nextHand, sitOut, type Positions, type TableSeat } from '../../server/game/poker/table.ts';

/** The bots' tables' settings (live.ts, tableSettings): blinds 1/2, no ante, 5% rake capped at 10 from the flop. */
const BLINDS = { smallBlind: 1n, bigBlind: 2n, ante: 0n };
const RAKE = { percent: 5, cap: 10n, minPot: 0n, requiresFlop: true };
/** What a hand_result's record carries, at its real sizes (a SHA-256 and an Ed25519 signature, hex): the floor signs nothing. */
const UNSIGNED = { text: '', hash: '0'.repeat(64), signature: '0'.repeat(128), publicKey: '' };
const TABLE_ID = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/;

interface Conn {
  userId: string | null;
  send: (message: string) => void;
  tables: Set<string>;
}

interface FloorSeat extends TableSeat {
  userId: string;
  leaveAfterHand: boolean;
}

/** A message's fields as the bots send them (anything else is refused bad_request). */
type Msg = Record<string, unknown> & { type?: unknown; tableId?: unknown; ref?: unknown };

const withRef = (ref: unknown) => (ref !== undefined ? { ref } : {});
const error = (c: Conn, code: string, ref: unknown, tableId?: string) =>
  c.send(toJson({ type: 'error', code, ...withRef(ref), ...(tableId !== undefined ? { tableId } : {}) }));

/** One table: its seats, its hand (the pure engine), the next deal's committed seed and who watches. */
class FloorTable {
  readonly tableId: string;
  readonly watchers = new Set<Conn>();
  readonly seats = new Map<number, FloorSeat>();
  private positions: Positions | null = null;
  hand: HandState | null = null;
  private handNumber = 0;
  private nextSeed: Uint8Array | null = null;
  private reveal: DealReveal | null = null;
  private nextDeal: NodeJS.Timeout | null = null;
  private pendingSits: { c: Conn; seatIndex: number; amount: bigint; ref: unknown }[] = [];
  private readonly handDelayMs: number;

  constructor(tableId: string, handDelayMs: number) {
    this.tableId = tableId;
    this.handDelayMs = handDelayMs;
  }

  seatOf(userId: string | null): FloorSeat | null {
    for (const s of this.seats.values()) if (s.userId === userId) return s;
    return null;
  }

  private upcoming(): Uint8Array {
    return (this.nextSeed ??= new Uint8Array(randomBytes(SERVER_SEED_BYTES)));
  }

  views(): SeatView[] {
    return [...this.seats.values()].sort((a, b) => a.seat - b.seat)
      .map((s) => ({ seatIndex: s.seat, userId: s.userId, agentId: null, stack: s.stack, sittingOut: s.sittingOut === true }));
  }

  private writer() {
    const table = {
      tableId: this.tableId, ...BLINDS,
      dealCommitment: this.hand ? this.reveal?.commitment ?? null : null, nextDealCommitment: commitmentOf(this.upcoming()),
    };
    return stateWriter(table, this.views(), this.hand, null);
  }

  stateFor(c: Conn): string {
    return this.writer()({ seat: this.seatOf(c.userId)?.seat ?? null, seesAllCards: false });
  }

  broadcastState(): void {
    if (this.watchers.size === 0) return;
    const write = this.writer();
    for (const c of this.watchers) c.send(write({ seat: this.seatOf(c.userId)?.seat ?? null, seesAllCards: false }));
  }

  private sendAll(message: string, to: (c: Conn) => boolean = () => true): void {
    for (const c of this.watchers) if (to(c)) c.send(message);
  }

  /** Who the next hand is dealt to: as a cash table plans it, a seat whose player is not watching out of the deal. */
  private plan() {
    const watching = new Set<string | null>();
    for (const c of this.watchers) watching.add(c.userId);
    return nextHand([...this.seats.values()].map((s) => (watching.has(s.userId) ? s : { ...s, sittingOut: true })), this.positions);
  }

  scheduleDeal(): void {
    if (this.nextDeal || this.hand || this.plan() === null) return;
    this.nextDeal = setTimeout(() => {
      this.nextDeal = null;
      this.deal();
    }, this.handDelayMs);
  }

  private deal(): void {
    const plan = this.hand ? null : this.plan();
    if (!plan) return;
    this.handNumber += 1;
    const handId = `${this.tableId}:${this.handNumber}:${randomUUID().slice(0, 8)}`;
    const serverSeed = this.upcoming();
    this.nextSeed = null;
    this.reveal = { algorithm: DEAL_ALGORITHM, commitment: commitmentOf(serverSeed), serverSeed: toHex(serverSeed), contributions: [] };
    this.hand = startHand({
      handId, seats: plan.seats, button: plan.button, smallBlindSeat: plan.smallBlindSeat, bigBlindSeat: plan.bigBlindSeat,
      ...BLINDS, deck: deckOf(this.reveal, handId), rake: RAKE,
    });
    this.positions = plan.positions;
    for (const s of this.seats.values()) {
      if (plan.dealtIn.includes(s.seat)) s.waitingForBigBlind = false;
      else if (!s.sittingOut && s.stack > 0n) s.waitingForBigBlind = true;
    }
    this.afterStep();
  }

  /** After every change of the hand: its end, or a leaving player's turn taken for them, then the state to everyone. */
  afterStep(): void {
    const hand = this.hand!;
    if (hand.status === 'complete') {
      this.broadcastState();
      return this.ended(hand);
    }
    const leaving = hand.toAct !== null ? this.seats.get(hand.toAct) : undefined;
    if (leaving?.leaveAfterHand) {
      const next = timeout(hand);
      if (!isRefusal(next)) {
        this.hand = next;
        return this.afterStep();
      }
    }
    this.broadcastState();
  }

  /** The hand's end: hand_result, the busted seats gone (a bust refills nothing here), stand-ups and waiting sits made, the next deal. */
  private ended(hand: HandState): void {
    for (const p of hand.players) {
      const seat = this.seats.get(p.seat);
      if (seat) seat.stack = p.stack;
    }
    this.sendAll(JSON.stringify(handResult(this.tableId, hand.handId, hand.result!, this.views(), { deal: this.reveal!, record: UNSIGNED })));
    this.hand = null;
    for (const s of [...this.seats.values()]) {
      if (s.stack === 0n) this.seats.delete(s.seat);
      if (!s.leaveAfterHand) continue;
      this.seats.delete(s.seat);
      const stood = { type: 'stood_up', tableId: this.tableId, amount: s.stack.toString(), txHash: null, receipt: null, ...(s.stack === 0n ? { busted: true } : {}) };
      this.sendAll(toJson(stood), (c) => c.userId === s.userId);
    }
    if (this.seats.size < 2) this.positions = null;
    // a player who left the table meanwhile is not sat (as the room: nobody watches that seat)
    for (const p of this.pendingSits.splice(0)) {
      if (this.watchers.has(p.c)) this.sit(p.c, p.seatIndex, p.amount, p.ref);
      else error(p.c, 'sit_cancelled', p.ref);
    }
    this.broadcastState();
    this.scheduleDeal();
  }

  /** A sit: during a hand it waits for the hand's end (sit_pending); between hands the seat is funded from nowhere at once. */
  requestSit(c: Conn, seatIndex: number, amount: bigint, ref: unknown): void {
    if (this.hand) {
      if (this.pendingSits.some((p) => p.c.userId === c.userId)) return error(c, 'sit_already_pending', ref);
      this.pendingSits.push({ c, seatIndex, amount, ref });
      return c.send(toJson({ type: 'sit_pending', tableId: this.tableId, ...withRef(ref) }));
    }
    this.sit(c, seatIndex, amount, ref);
    this.broadcastState();
    this.scheduleDeal();
  }

  private sit(c: Conn, seatIndex: number, amount: bigint, ref: unknown): void {
    if (this.seatOf(c.userId)) return error(c, 'already_seated', ref);
    if (this.seats.has(seatIndex)) return error(c, 'seat_taken', ref);
    this.seats.set(seatIndex, {
      seat: seatIndex, playerId: randomUUID(), userId: c.userId!, stack: amount, sittingOut: false,
      waitingForBigBlind: this.positions !== null, leaveAfterHand: false,
    });
    c.send(toJson({ type: 'seated', tableId: this.tableId, seatIndex, chipBalance: amount.toString(), ...withRef(ref) }));
  }

  /** A player steps away or comes back (as the room: back waiting for the big blind). */
  setSittingOut(userId: string, out: boolean): string | null {
    const s = this.seatOf(userId);
    if (!s) return 'not_seated';
    if (!out && !s.sittingOut) return null;
    const changed = out ? sitOut([s], s.seat)[0]! : comeBack([s], s.seat)[0]!;
    s.sittingOut = changed.sittingOut;
    s.waitingForBigBlind = changed.waitingForBigBlind;
    this.broadcastState();
    if (!out) this.scheduleDeal();
    return null;
  }

  /** An action: refused as the room refuses it, else applied and the step's states sent. */
  act(c: Conn, m: Msg): void {
    const seat = this.seatOf(c.userId);
    if (!seat) return error(c, 'not_seated', m.ref);
    const type = m.action;
    if (type !== 'fold' && type !== 'check' && type !== 'call' && type !== 'bet' && type !== 'raise') return error(c, 'illegal_action', m.ref);
    let action: Action = { type };
    if (type === 'bet' || type === 'raise') {
      const amount = chipAmount(m.amount);
      if (amount === null) return error(c, 'illegal_amount', m.ref);
      action = { type, amount };
    }
    const hand = this.hand;
    if (!hand || hand.status !== 'betting') return error(c, 'no_hand_in_progress', m.ref);
    if (m.handId !== undefined && m.handId !== hand.handId) return error(c, 'stale_hand', m.ref);
    const next = applyAction(hand, seat.seat, action, typeof m.seq === 'number' ? m.seq : undefined);
    if (isRefusal(next)) return error(c, next.error, m.ref);
    this.hand = next;
    c.send(toJson({ type: 'action_ack', tableId: this.tableId, ...withRef(m.ref) }));
    this.afterStep();
  }

  /** A stand-up: at once between hands (the stack goes nowhere), else after the hand (checking or folding meanwhile). */
  standUp(c: Conn, ref: unknown): void {
    const s = this.seatOf(c.userId);
    if (!s) return error(c, 'not_at_table', ref, this.tableId);
    if (this.hand) {
      s.leaveAfterHand = true;
      s.sittingOut = true;
      c.send(toJson({ type: 'stand_up_pending', tableId: this.tableId, ...withRef(ref) }));
      if (this.hand.toAct === s.seat) this.afterStep();
      return;
    }
    this.seats.delete(s.seat);
    if (this.seats.size < 2) this.positions = null;
    c.send(toJson({ type: 'stood_up', tableId: this.tableId, amount: s.stack.toString(), txHash: null, receipt: null, ...withRef(ref) }));
    this.broadcastState();
    this.scheduleDeal();
  }
}

/** The floor's server: its tables (made by their first join), the websocket and the one HTTP route the bots read. */
class Floor {
  private readonly tables = new Map<string, FloorTable>();
  private readonly handDelayMs: number;
  readonly wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });

  constructor(handDelayMs: number) {
    this.handDelayMs = handDelayMs;
  }

  /** GET /api/tables/:tableId: who sits where (the bots' stand-up check reads `seats`). */
  http(req: IncomingMessage, res: ServerResponse): void {
    const id = /^\/api\/tables\/([^/?]+)$/.exec(req.url ?? '')?.[1];
    const t = req.method === 'GET' && id ? this.tables.get(decodeURIComponent(id)) : undefined;
    const [status, body] = t
      ? [200, { tableId: t.tableId, handInProgress: t.hand !== null, seats: t.views().map((s) => ({ seatIndex: s.seatIndex, userId: s.userId, chipBalance: s.stack.toString(), status: 'active' })) }]
      : [404, { error: id ? 'table_not_found' : 'not_found' }];
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' }).end(toJson(body));
  }

  connection(ws: WebSocket, req: IncomingMessage): void {
    const userId = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1] ?? null;
    const c: Conn = { userId, send: batchedSend(ws, () => undefined), tables: new Set() };
    ws.on('message', (data, isBinary) => {
      try {
        this.handle(c, isBinary ? '' : data.toString());
      } catch (err) {
        logError('floor message failed', err);
        error(c, 'internal_error', undefined);
      }
    });
    ws.on('close', () => {
      for (const t of c.tables) this.tables.get(t)?.watchers.delete(c);
    });
    ws.on('error', () => undefined);
    c.send(toJson({ type: 'hello', userId, agentId: null, role: userId ? 'player' : 'spectator' }));
  }

  private handle(c: Conn, raw: string): void {
    let m: Msg;
    try {
      m = JSON.parse(raw) as Msg;
      if (!m || typeof m !== 'object' || Array.isArray(m)) throw new Error('not an object');
    } catch {
      return error(c, 'malformed_message', undefined);
    }
    if (m.type === 'ping') return c.send(toJson({ type: 'pong', ...withRef(m.ref) }));
    if (typeof m.tableId !== 'string' || !TABLE_ID.test(m.tableId)) return error(c, m.type === 'join' ? 'table_not_found' : 'bad_request', m.ref);
    if (m.type === 'join') return this.join(c, m.tableId, m.ref);
    const t = c.tables.has(m.tableId) ? this.tables.get(m.tableId) : undefined;
    if (!t) return error(c, 'not_joined', m.ref, m.tableId);
    if (!c.userId) return error(c, 'not_authenticated', m.ref);
    return this.dispatch(c, t, m);
  }

  private dispatch(c: Conn, t: FloorTable, m: Msg): void {
    switch (m.type) {
      case 'sit': {
        const amount = chipAmount(m.amount);
        if (typeof m.seatIndex !== 'number' || !Number.isInteger(m.seatIndex) || m.seatIndex < 0 || m.seatIndex > 8 || amount === null || amount === 0n) return error(c, 'bad_request', m.ref);
        return t.requestSit(c, m.seatIndex, amount, m.ref);
      }
      case 'sit_out':
      case 'sit_in': {
        const code = t.setSittingOut(c.userId!, m.type === 'sit_out');
        return code ? error(c, code, m.ref) : c.send(toJson({ type: m.type === 'sit_out' ? 'sat_out' : 'sat_in', tableId: t.tableId, ...withRef(m.ref) }));
      }
      case 'action': return t.act(c, m);
      case 'stand_up': return t.standUp(c, m.ref);
      case 'leave':
        t.watchers.delete(c);
        c.tables.delete(t.tableId);
        return c.send(toJson({ type: 'left', tableId: t.tableId, ...withRef(m.ref) }));
      default: return error(c, 'unknown_message_type', m.ref); // the floor speaks only what the bots send
    }
  }

  private join(c: Conn, tableId: string, ref: unknown): void {
    let t = this.tables.get(tableId);
    if (!t) this.tables.set(tableId, (t = new FloorTable(tableId, this.handDelayMs)));
    c.tables.add(tableId);
    t.watchers.add(c);
    c.send(toJson({ type: 'joined', tableId, role: t.seatOf(c.userId) ? 'player' : 'spectator', ...withRef(ref) }));
    c.send(t.stateFor(c));
    t.scheduleDeal();
  }
}

/** An error, as a pino-like JSON line on stdout: the benchmark counts it as the roles' logged errors (a failure). */
function logError(msg: string, err: unknown): void {
  process.stdout.write(`${JSON.stringify({ level: 50, msg, err: err instanceof Error ? err.stack : String(err) })}\n`);
}

/** Listens on PORT (127.0.0.1); resolves to its base URL. */
export async function startFloor(port: number, handDelayMs: number): Promise<{ url: string; close: () => Promise<void> }> {
  const floor = new Floor(handDelayMs);
  const server = createServer((req, res) => floor.http(req, res));
  server.on('upgrade', (req, socket, head) => {
    if (!/^\/ws\/?(\?.*)?$/.test(req.url ?? '')) return void socket.destroy();
    floor.wss.handleUpgrade(req, socket, head, (ws) => floor.connection(ws, req));
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const address = server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : port}`;
  return {
    url,
    close: async () => {
      for (const ws of floor.wss.clients) ws.terminate();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const running = await startFloor(Number(process.env.PORT ?? 0), Number(process.env.HAND_DELAY_MS ?? 5));
  process.stdout.write(`floor ${running.url}\n`);
  process.on('uncaughtException', (err) => logError('floor uncaught exception', err));
  process.once('SIGTERM', () => void running.close().then(() => process.exit(0)));
}
