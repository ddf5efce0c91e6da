// The live benchmark's bots (bench/dealer.ts, the live case), in a worker thread of the benchmark:
// one websocket per bot, connected to the game process its table goes to (a router keyed by table:
// table i to game process i mod N; a join refused `table_elsewhere` follows the holder's URL, as a
// client must, and is counted). Each bot joins its table, sits through the ws `sit` (again after a
// bust) and answers every game_state that carries `legal` with a random legal action. A unit is a
// hand_result (counted on one bot per table); the latency is from sending an action to the next
// game_state on that bot's connection.
//
// They run in a worker thread so that the roles' event loop (when the roles run in the benchmark's
// main thread) carries only the server: the client's JSON parsing and its ends of the sockets would
// otherwise queue in front of the game's work and be counted in its latency.
import { performance } from 'node:perf_hooks';
import { isMainThread, parentPort, workerData, type MessagePort } from 'node:worker_threads';
import WebSocket from 'ws';
import { sfc32, sleep } from './harness.ts';
import { Failures } from './platform.ts';

export const BUY_IN = 200; // the table's maximum: 100 big blinds
const STAND_UP_TIMEOUT_MS = 30_000;
export const STAND_UP_TIMEOUT_S = STAND_UP_TIMEOUT_MS / 1000;
const SIT_BACKOFF_MS = 200;
/** Refusals a bot can meet in a fair race; counted and reported, not failures. */
const EXPECTED = {
  act: new Set(['stale_sequence', 'stale_hand']),
  // a sit during a hand waits for its end (sit_pending) and is made before the next deal, so no
  // refusal of a sit is expected;
  // hand_in_progress: a hand held the table when the bank came to stand the bot up (see the
  // report for stand-ups); not_at_table: the bot busted (its seat closed) while its stand-up was
  // on the way; nothing_to_withdraw: it busted and its stand-up reached the seat before the bust
  // was settled
  sit: new Set<string>(),
  up: new Set(['hand_in_progress', 'not_at_table', 'nothing_to_withdraw']),
};

export interface BotSpec {
  userId: string;
  token: string;
  table: number;
  seat: number;
  /** Counts its table's hand_results. */
  counter: boolean;
}

export interface BotsData {
  kind: 'dealer-bots';
  /** Each table's game process (base URL), by table index. */
  tableUrls: string[];
  /** Any game process: the table read route, for the stand-up check. */
  gameUrl: string;
  tableIds: string[];
  bots: BotSpec[];
  seed: number;
}

export type ToBots = { type: 'seat' | 'resume' | 'start' | 'end' | 'pause' | 'stand-up' | 'close' };
type Kinds = [string, { count: number; first: string }][];
export type FromBots =
  | { type: 'ready'; redirects: number }
  | { type: 'seated'; seated: number; refused: string[] }
  | { type: 'window'; perTable: number[]; elapsed: number; latencies: Float64Array; busy: number; cpuMs: number }
  | { type: 'stood'; left: string[]; seconds: number; standUps: number; pendingStandUps: number }
  | {
    type: 'final'; hands: number; showdowns: number; dealtIn: number; counts: Record<string, number>;
    failures: Kinds; expected: [string, number][];
  }
  | { type: 'crashed'; error: string };

interface GameState {
  status: string;
  seats: { userId: string; seatIndex: number; stack: string; inHand: boolean; folded: boolean }[];
  legal: { actions: string[]; toCall: string; minRaiseTo: string | null; maxRaiseTo: string | null; seq: number; handId: string } | null;
}

interface Bot extends BotSpec {
  tableId: string;
  ws: WebSocket;
  seated: boolean;
  status: string;
  sitting: boolean;
  /** No sit attempt before this time (performance.now()): a backoff after a refused sit. */
  sitAfter: number;
  /** The last game_state offering this bot a turn, not yet answered. */
  pending: GameState | null;
  answered: string;
  /** When the last action went out (0: none awaiting its game_state). */
  sentAt: number;
  standing: 'no' | 'sent' | 'pending' | 'done';
  /** Its seat in the last game_state: dealt in, folded. */
  inHand: boolean;
  folded: boolean;
  /** Answers awaited by ref (the seating). */
  answers: Map<string, (m: Record<string, any>) => void>;
}

/** A game_state's status: its first `status` key is the message's own (its seats have none). */
const STATE_STATUS = /"status":"([a-z_]+)"/;

const wsUrl = (base: string) => `${base.replace(/^http/, 'ws')}/ws`;

class Bots {
  mode: 'paused' | 'running' | 'stopping' = 'paused';
  measuring = false;
  windowStart = 0;
  windowElu = performance.eventLoopUtilization();
  windowCpu = process.threadCpuUsage();
  latencies: number[] = [];
  readonly perTable: number[];
  readonly totals = { hands: 0, showdowns: 0, dealtIn: 0 };
  readonly counts = { actions: 0, raises: 0, folds: 0, sits: 0, duplicates: 0, standUps: 0, pendingStandUps: 0 };
  readonly failures = new Failures();
  readonly expected = new Map<string, number>();
  readonly random: () => number;
  bots: Bot[] = [];
  redirects = 0;
  closing = false;

  readonly data: BotsData;

  constructor(data: BotsData) {
    this.data = data;
    this.perTable = data.tableIds.map(() => 0);
    const rng = sfc32(data.seed ^ 0x5eed);
    this.random = () => rng() / 0x1_0000_0000;
  }

  send(b: Bot, m: Record<string, unknown>) {
    b.ws.send(JSON.stringify(m));
  }

  /** The action for a turn: mostly check/call, a fold likelier the larger the call against the stack, some bets and raises. */
  choose(b: Bot, s: GameState): { action: string; amount?: string } {
    const legal = s.legal!;
    // a bot rarely calls off its stack, so busts stay occasional; a raise goes to an amount anywhere
    // in minRaiseTo..maxRaiseTo, weighted towards the small end (cubed uniform): an all-in is
    // possible on every raise, just not the usual one
    const has = (a: string) => legal.actions.includes(a);
    const behind = Number(s.seats.find((x) => x.userId === b.userId)?.stack ?? 0);
    const callShare = behind > 0 ? Math.min(1, Number(legal.toCall) / behind) : 1;
    if (has('fold') && this.random() < 0.03 + 0.9 * callShare) return { action: 'fold' };
    if ((has('raise') || has('bet')) && this.random() < 0.1) {
      const min = BigInt(legal.minRaiseTo!);
      const span = Number(BigInt(legal.maxRaiseTo!) - min) + 1;
      return { action: has('raise') ? 'raise' : 'bet', amount: (min + BigInt(Math.floor(this.random() ** 3 * span))).toString() };
    }
    return { action: has('check') ? 'check' : 'call' };
  }

  act(b: Bot) {
    const s = b.pending!;
    b.pending = null;
    const legal = s.legal!;
    const key = `${legal.handId}:${legal.seq}`;
    if (key === b.answered) return;
    b.answered = key;
    const { action, amount } = this.choose(b, s);
    this.counts.actions++;
    if (amount !== undefined) this.counts.raises++;
    if (action === 'fold') this.counts.folds++;
    b.sentAt = performance.now();
    this.send(b, { type: 'action', tableId: b.tableId, handId: legal.handId, seq: legal.seq, action, ...(amount !== undefined ? { amount } : {}), ref: 'act' });
  }

  drive(b: Bot) {
    if (this.mode === 'running') {
      if (b.pending) this.act(b);
      else if (!b.seated && !b.sitting && b.status === 'waiting' && performance.now() >= b.sitAfter) {
        b.sitting = true;
        this.send(b, { type: 'sit', tableId: b.tableId, seatIndex: b.seat, amount: BUY_IN, ref: 'sit' });
      }
    } else if (this.mode === 'stopping' && b.seated && b.standing === 'no') {
      b.standing = 'sent';
      this.send(b, { type: 'stand_up', tableId: b.tableId, ref: 'up' });
    }
  }

  /** Sends a message with `ref` and resolves to the answer carrying that ref. */
  answer(b: Bot, ref: string, m: Record<string, unknown>) {
    return new Promise<Record<string, any>>((resolve) => {
      b.answers.set(ref, resolve);
      this.send(b, { ...m, ref });
    });
  }

  onGameState(b: Bot, s: GameState, at: number) {
    if (b.sentAt) {
      if (this.measuring) this.latencies.push(at - b.sentAt);
      b.sentAt = 0;
    }
    const mine = s.seats.find((x) => x.userId === b.userId);
    b.seated = mine !== undefined;
    b.inHand = mine?.inHand === true && s.status === 'betting';
    b.folded = mine?.folded === true;
    b.status = s.status;
    b.pending = s.legal ? s : null;
    if (b.standing === 'pending' && b.seated && s.status === 'waiting') {
      this.failures.add('stand_up_pending, but still seated after the hand', `${b.tableId} seat ${b.seat} (user ${b.userId})`);
      b.standing = 'no';
    }
    if (b.standing === 'pending' && !b.seated) b.standing = 'done';
    this.drive(b);
  }

  /**
   * A game_state that offers this bot no turn, while the bots play (5 in 6 of them at a 6-max
   * table), read without parsing the whole message (the bots share the roles' two cores): its status
   * (the head's: no seat has one) and the bot's own seat (the one object that holds its user id,
   * parsed alone) are all onGameState reads of it. Anything else (a turn, any other message, the
   * stand-ups) is parsed whole. False when the text is not such a game_state.
   */
  readState(b: Bot, text: string, at: number): boolean {
    if (!text.startsWith('{"type":"game_state",') || !text.includes('"legal":null')) return false;
    const status = STATE_STATUS.exec(text)?.[1];
    if (status === undefined) return false;
    const own = text.indexOf(`"userId":${JSON.stringify(b.userId)},`);
    const seat = own < 0 ? [] : [JSON.parse(text.slice(text.lastIndexOf('{', own), text.indexOf('}', own) + 1)) as GameState['seats'][number]];
    this.onGameState(b, { status, seats: seat, legal: null }, at);
    return true;
  }

  onError(b: Bot, m: Record<string, any>) {
    const what = m.ref === 'act' || m.ref === 'sit' || m.ref === 'up' ? (m.ref as 'act' | 'sit' | 'up') : null;
    if (what === 'act') b.sentAt = 0;
    if (what === 'sit') {
      b.sitting = false;
      // lost the race with the next deal: try again at a hand boundary after a short backoff
      // (each attempt is a buy-in and its refund in the journal)
      b.sitAfter = performance.now() + SIT_BACKOFF_MS * (0.5 + this.random());
    }
    if (what === 'up') b.standing = m.code === 'hand_in_progress' ? 'no' : 'done';
    // a stand-up refused while a hand holds the table: was the bot in that hand?
    const where = what === 'up' && m.code === 'hand_in_progress' ? (b.inHand ? (b.folded ? ' (folded, by its last game_state)' : ' (in the hand, by its last game_state)') : ' (not in a hand, by its last game_state)') : '';
    const label = `${what ?? 'unsolicited'} refused ${m.code}${where}`;
    if (what && EXPECTED[what].has(m.code)) this.expected.set(label, (this.expected.get(label) ?? 0) + 1);
    else this.failures.add(label, `${b.tableId} seat ${b.seat}: ${JSON.stringify(m).slice(0, 300)}`);
  }

  onMessage(b: Bot, m: Record<string, any>, at: number) {
    const waiter = typeof m.ref === 'string' ? b.answers.get(m.ref) : undefined;
    if (waiter) {
      b.answers.delete(m.ref);
      if (m.type === 'error') this.failures.add(`${m.ref} refused ${m.code}`, `${b.tableId} seat ${b.seat}: ${JSON.stringify(m).slice(0, 300)}`);
      return waiter(m);
    }
    const c = this.counts;
    switch (m.type) {
      case 'game_state': return this.onGameState(b, m as GameState, at);
      case 'hand_result':
        if (b.counter) {
          this.totals.hands++;
          if (this.measuring) this.perTable[b.table]!++;
          if (m.showdown) this.totals.showdowns++;
          this.totals.dealtIn += (m.stacks as unknown[]).length;
        }
        return;
      case 'action_ack': if (m.duplicate) c.duplicates++; return;
      case 'seated': b.sitting = false; c.sits++; return;
      case 'stood_up': b.standing = 'done'; c.standUps++; return;
      case 'stand_up_pending': b.standing = 'pending'; c.pendingStandUps++; return;
      case 'error': return this.onError(b, m);
      default:
    }
  }

  /**
   * Opens the bot's websocket to `base` and joins its table; a join refused `table_elsewhere` (the
   * table runs on another game process) goes to the holder's URL, like a client behind a router.
   */
  connect(b: Bot, base: string, hops = 0): Promise<void> {
    b.ws = new WebSocket(wsUrl(base), { headers: { authorization: `Bearer ${b.token}` }, perMessageDeflate: false });
    return new Promise<void>((resolve, reject) => {
      b.ws.once('error', reject);
      b.ws.on('message', (raw) => {
        const at = performance.now();
        const text = raw.toString();
        if (this.mode === 'running' && this.readState(b, text, at)) return;
        let m: Record<string, any>;
        try {
          m = JSON.parse(text);
        } catch {
          this.failures.add('a message that is not JSON', String(raw).slice(0, 200));
          return;
        }
        if (m.type === 'error' && m.ref === 'join' && m.code === 'table_elsewhere' && typeof m.url === 'string' && hops < 3) {
          this.redirects++;
          b.ws.removeAllListeners();
          b.ws.close();
          return void this.connect(b, m.url, hops + 1).then(resolve, reject);
        }
        if (m.type === 'error' && m.ref === 'join') return reject(new Error(`join refused: ${JSON.stringify(m).slice(0, 300)}`));
        if (m.type === 'joined') resolve();
        this.onMessage(b, m, at);
      });
      b.ws.once('open', () => this.send(b, { type: 'join', tableId: b.tableId, ref: 'join' }));
    });
  }

  async connectAll() {
    this.bots = this.data.bots.map((spec) => ({
      ...spec, tableId: this.data.tableIds[spec.table]!, ws: null as unknown as WebSocket,
      seated: false, status: 'unknown', sitting: false, sitAfter: 0, pending: null, answered: '', sentAt: 0, standing: 'no', inHand: false, folded: false, answers: new Map(),
    }));
    await Promise.all(this.bots.map((b) => this.connect(b, this.data.tableUrls[b.table]!)));
    for (const b of this.bots) {
      b.ws.on('error', (err) => this.failures.add('websocket error', `${b.tableId} seat ${b.seat}: ${err.message}`));
      b.ws.on('close', () => {
        if (!this.closing) this.failures.add('websocket closed by the server', `${b.tableId} seat ${b.seat}`);
      });
    }
  }

  /**
   * Every bot takes its seat before the first deal: sit, then sit out until the table is full, then
   * all sit in (one table after another would be slow; one bot after another per table is needed: a
   * player sitting out is not ready, so no hand starts until the sit_ins).
   */
  async seat(): Promise<FromBots> {
    await Promise.all(this.data.tableIds.map(async (_, t) => {
      for (const b of this.bots.filter((x) => x.table === t)) {
        const sat = await this.answer(b, 'seat', { type: 'sit', tableId: b.tableId, seatIndex: b.seat, amount: BUY_IN });
        if (sat.type !== 'seated') continue;
        this.counts.sits++;
        await this.answer(b, 'out', { type: 'sit_out', tableId: b.tableId });
      }
    }));
    await Promise.all(this.bots.map((b) => this.answer(b, 'in', { type: 'sit_in', tableId: b.tableId })));
    return { type: 'seated', seated: this.bots.filter((b) => b.seated).length, refused: this.failures.lines().slice(0, 3) };
  }

  startWindow() {
    this.perTable.fill(0);
    this.latencies = [];
    this.windowElu = performance.eventLoopUtilization();
    this.windowCpu = process.threadCpuUsage();
    this.windowStart = performance.now();
    this.measuring = true;
  }

  endWindow(): FromBots & { type: 'window' } {
    this.measuring = false;
    const cpu = process.threadCpuUsage(this.windowCpu);
    return {
      type: 'window', perTable: [...this.perTable], elapsed: (performance.now() - this.windowStart) / 1000, latencies: Float64Array.from(this.latencies),
      busy: performance.eventLoopUtilization(this.windowElu).utilization, cpuMs: (cpu.user + cpu.system) / 1000,
    };
  }

  /** Every bot stands up (one in a hand checks or folds its way out of it); answers the tables still seated. */
  async standUp(): Promise<FromBots> {
    this.mode = 'stopping';
    const start = performance.now();
    let left: string[] = [];
    for (;;) {
      for (const b of this.bots) this.drive(b);
      const rooms = await Promise.all(this.data.tableIds.map(async (id) => {
        const res = await fetch(`${this.data.gameUrl}/api/tables/${id}`);
        return { id, status: res.status, body: (await res.json()) as { seats?: unknown[] } };
      }));
      left = rooms.filter((r) => !Array.isArray(r.body.seats) || r.body.seats.length > 0).map((r) => `${r.id}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
      if (!left.length || performance.now() - start > STAND_UP_TIMEOUT_MS) break;
      await sleep(100);
    }
    return { type: 'stood', left, seconds: (performance.now() - start) / 1000, standUps: this.counts.standUps, pendingStandUps: this.counts.pendingStandUps };
  }

  /** The last hand_results may still be on their way: closes each connection and waits for its close. */
  async close(): Promise<FromBots> {
    this.closing = true;
    await Promise.all(this.bots.map((b) => new Promise<void>((resolve) => {
      if (b.ws.readyState === WebSocket.CLOSED) return resolve();
      b.ws.once('close', () => resolve());
      b.ws.close();
    })));
    return { type: 'final', ...this.totals, counts: this.counts, failures: [...this.failures.byKind], expected: [...this.expected] };
  }

  async command(m: ToBots): Promise<FromBots | null> {
    switch (m.type) {
      case 'resume':
        this.mode = 'running';
        for (const b of this.bots) this.drive(b);
        return null;
      case 'pause': this.mode = 'paused'; return null;
      case 'seat': return this.seat();
      case 'start': this.startWindow(); return null;
      case 'end': return this.endWindow();
      case 'stand-up': return this.standUp();
      case 'close': return this.close();
      default: return null;
    }
  }
}

async function runBots(data: BotsData, port: MessagePort): Promise<void> {
  const bots = new Bots(data);
  await bots.connectAll();
  port.on('message', async (m: ToBots) => {
    const answer = await bots.command(m);
    if (answer) port.postMessage(answer, answer.type === 'window' ? [answer.latencies.buffer as ArrayBuffer] : []);
  });
  port.postMessage({ type: 'ready', redirects: bots.redirects } satisfies FromBots);
}

if (!isMainThread && (workerData as { kind?: string } | null)?.kind === 'dealer-bots') {
  runBots(workerData as BotsData, parentPort!).catch((err: Error) => parentPort!.postMessage({ type: 'crashed', error: err.stack ?? err.message } satisfies FromBots));
}
