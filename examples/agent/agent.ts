// The example agent: one websocket to the game role, as its owner's agent (the owner's access JWT on
// the upgrade, `?agentId=`), one table. It joins, buys in through the bank (`sit`: the game role
// calls the bank's deposit with our JWT) or registers for a Sit-and-Go and pays the entry fee,
// answers every `legal` with strategy.ts, and stands up after N hands (docs/protocol.md).
//
// What makes it survive a flaky network:
//   - the socket drops: reconnect (backoff 250 ms .. 5 s), `join` again, and go on from the
//     `game_state` the join answers (seated already? then no new sit);
//   - an action sent whose `action_ack` never came: resend the very same message (same handId, seq,
//     action, amount). The server applies it if it had not, or answers `action_ack` with
//     `duplicate: true` if it had; `stale_sequence` means the hand moved on (the turn timer acted):
//     nothing to do;
//   - the sit carries an `idempotencyKey` fixed for the run: resent, it replays, never buys in twice.
// A message of a type it does not know is logged and passed over, never a crash.
//
// Outgoing messages are the server's own schema (server/game/live/messages.ts), parsed before they
// are sent; incoming ones are typed by the types inferred from the zod schemas of what the server
// sends (server/game/live/server-messages.ts, the AsyncAPI document's source too).
import { randomBytes, randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import { clientMessage, type ClientMessage } from '../../server/game/live/messages.ts';
import type { ErrorMessage, GameStateMessage, HandResultMessage, ServerMessage } from '../../server/game/live/server-messages.ts';
import { decide } from './strategy.ts';

export interface AgentOptions {
  /** The game role's base URL (http://127.0.0.1:3674): its websocket is /ws, its REST /api. */
  game: string;
  /** The bank's base URL (the cage, http://127.0.0.1:3675): a Sit-and-Go's entry fee is paid there. */
  bank: string;
  tableId: string;
  /** Stand up after playing this many hands (cash tables). */
  hands: number;
  /** The owner's access JWT (the auth role's). */
  token: string;
  /** One of the owner's agents (POST /api/agents); created when absent. */
  agentId?: string;
  /** The buy-in; default 50 big blinds within the table's minBuyIn..maxBuyIn. */
  buyIn?: bigint;
  /** The seat; default the first free one. */
  seat?: number;
  /** Register for the Sit-and-Go at `tableId` instead of sitting at a cash table. */
  tournament?: boolean;
  log?: (event: string, fields?: Record<string, unknown>) => void;
}

export interface AgentSummary {
  agentId: string;
  tableId: string;
  /** Hands this agent was dealt into and saw to their end. */
  hands: number;
  actions: number;
  /** Connections after the first. */
  reconnects: number;
  /** Actions sent again after a reconnect, and how many of those the server knew already. */
  resends: number;
  duplicates: number;
  /** Messages of a type the agent does not handle (logged, passed over). */
  ignored: number;
  /** What standing up returned (cash), or the place (tournament). */
  stoodUp: { amount: string | null } | null;
  place: number | null;
}

type Phase = 'joining' | 'sitting' | 'registering' | 'playing' | 'standing' | 'done';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function http<T>(url: string, init: { token?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<{ status: number; body: T }> {
  const res = await fetch(url, {
    method: init.body === undefined ? 'GET' : 'POST',
    headers: {
      ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(init.token ? { authorization: `Bearer ${init.token}` } : {}),
      ...init.headers,
    },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : {}) as T };
}

/** Creates an agent for the token's user (POST /api/agents) and answers its id. */
export async function createAgent(game: string, token: string, name = 'example-agent'): Promise<string> {
  const r = await http<{ agentId?: string; error?: string }>(`${game}/api/agents`, { token, body: { name } });
  if (r.status !== 201 || !r.body.agentId) throw new Error(`POST /api/agents: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.agentId;
}

interface TableInfo {
  mode: 'cash' | 'sng';
  settings: { maxPlayers?: number; seats?: number; minBuyIn?: number; maxBuyIn?: number; bigBlind?: number; entryFee?: number };
  seats: { seatIndex: number; userId: string }[];
}

export class Agent {
  private readonly o: AgentOptions;
  private readonly log: NonNullable<AgentOptions['log']>;
  private agentId = '';
  private userId: string | null = null;
  private table!: TableInfo;
  private ws: WebSocket | null = null;
  private wsBase: string;
  private phase: Phase = 'joining';
  private seat: number | null = null;
  private refs = 0;
  private connections = 0;
  /** The action sent and not yet acknowledged: resent as is after a reconnect. */
  private pending: { ref: string; message: ClientMessage } | null = null;
  /** `handId:seq` of every turn answered (a state repeated by a broadcast is not answered twice). */
  private readonly answered = new Set<string>();
  /** The next hand's commitment we last sent a seed for, and the refs of the seeds not yet answered. */
  private contributedTo = '';
  private seededTable = false;
  private readonly seedRefs = new Set<string>();
  /** Hands we were dealt into whose result we saw. */
  private readonly played = new Set<string>();
  private readonly sitKey = `example-agent-sit:${randomUUID()}`;
  private standAfterHand = false;
  private standPending = false;
  /** Set by a reconnect: the first state after it resends what was left unanswered. */
  private rejoined = false;
  private finish: (summary: AgentSummary) => void = () => undefined;
  private fail: (err: Error) => void = () => undefined;
  private readonly done: Promise<AgentSummary>;
  readonly summary: AgentSummary;

  constructor(options: AgentOptions) {
    this.o = options;
    this.log = options.log ?? ((event, fields) => process.stdout.write(`[agent] ${event}${fields ? ` ${JSON.stringify(fields)}` : ''}\n`));
    this.wsBase = options.game.replace(/^http/, 'ws').replace(/\/$/, '');
    this.summary = {
      agentId: '', tableId: options.tableId, hands: 0, actions: 0, reconnects: 0, resends: 0, duplicates: 0, ignored: 0, stoodUp: null, place: null,
    };
    this.done = new Promise<AgentSummary>((resolve, reject) => {
      this.finish = resolve;
      this.fail = reject;
    });
  }

  /** Plays until done (stood up, or the tournament over for us); rejects on a refusal it cannot go on from. */
  async run(): Promise<AgentSummary> {
    this.agentId = this.o.agentId ?? await createAgent(this.o.game, this.o.token);
    this.summary.agentId = this.agentId;
    const t = await http<TableInfo & { error?: string }>(`${this.o.game}/api/tables/${encodeURIComponent(this.o.tableId)}`);
    if (t.status !== 200) throw new Error(`table ${this.o.tableId}: ${t.status} ${JSON.stringify(t.body)}`);
    this.table = t.body;
    if (Boolean(this.o.tournament) !== (this.table.mode === 'sng')) throw new Error(`table ${this.o.tableId} is a ${this.table.mode} table${this.o.tournament ? '' : ': use --tournament'}`);
    if (this.phase === 'done') return this.done; // stopped before it started
    this.connect();
    return this.done;
  }

  /** Stand up at the next chance (Ctrl-C, or the hands are played). */
  standUp(): void {
    if (this.phase === 'done' || this.phase === 'standing') return;
    if (this.table?.mode === 'sng') return this.stop(new Error('a Sit-and-Go is played to its end: stopping now leaves the seat to the turn timer'));
    if (this.seat === null) return this.stop();
    this.phase = 'standing';
    this.send({ type: 'stand_up', tableId: this.o.tableId });
  }

  // --- the connection ---------------------------------------------------------------------------

  private connect(): void {
    const url = `${this.wsBase}/ws?agentId=${encodeURIComponent(this.agentId)}`;
    const ws = new WebSocket(url, { headers: { authorization: `Bearer ${this.o.token}` } });
    this.ws = ws;
    this.connections += 1;
    if (this.connections > 1) {
      this.summary.reconnects += 1;
      this.rejoined = true;
      if (this.phase === 'sitting') this.phase = 'joining'; // seated or not, the join's state tells
    }
    ws.on('message', (data) => {
      let message: ServerMessage;
      try {
        message = JSON.parse(data.toString());
      } catch {
        return this.log('unreadable message', { data: data.toString().slice(0, 200) });
      }
      try {
        this.onMessage(message);
      } catch (err) {
        // a bug in handling one message must not end the agent: log it and go on
        this.log('message handling failed', { type: (message as { type?: unknown }).type, error: (err as Error).message });
      }
    });
    ws.on('error', (err) => this.log('socket error', { error: err.message }));
    ws.on('close', (code) => {
      if (this.ws !== ws || this.phase === 'done') return;
      this.log('disconnected', { code });
      void this.reconnect();
    });
  }

  private async reconnect(): Promise<void> {
    this.ws = null;
    for (let attempt = 0; this.phase !== 'done'; attempt++) {
      await sleep(Math.min(5000, 250 * 2 ** attempt));
      // reconnect only once the game role answers again (a restarting server refuses upgrades)
      const health = await fetch(`${this.wsBase.replace(/^ws/, 'http')}/health`).then((r) => r.ok, () => false);
      if (health) return this.connect();
      this.log('game role not reachable yet', { attempt });
    }
  }

  private send(message: ClientMessage): string {
    const ref = `a${++this.refs}`;
    // the server's own schema: a message it would refuse as malformed never leaves
    const checked = clientMessage.parse({ ...message, ref });
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(checked));
    return ref;
  }

  private stop(err?: Error): void {
    if (this.phase === 'done') return;
    this.phase = 'done';
    this.ws?.close();
    this.summary.hands = this.played.size;
    if (err) this.fail(err);
    else this.finish(this.summary);
  }

  // --- messages ---------------------------------------------------------------------------------

  private onMessage(m: ServerMessage): void {
    if ('tableId' in m && m.tableId !== undefined && m.tableId !== this.o.tableId) return;
    switch (m.type) {
      case 'hello':
        this.userId = m.userId;
        if (m.agentId !== this.agentId) return this.stop(new Error(`not authenticated as agent ${this.agentId}: ${JSON.stringify(m)}`));
        this.send({ type: 'join', tableId: this.o.tableId });
        return;
      case 'joined':
        this.log('joined', { tableId: m.tableId, connection: this.connections });
        return;
      case 'game_state':
        // the turn first: a seed for the next hand never delays (or rides in front of) an action
        this.onState(m);
        return this.contribute(m);
      case 'hand_result':
        return this.onResult(m);
      case 'seated':
        this.seat = m.seatIndex;
        this.phase = 'playing';
        this.log('seated', { seatIndex: m.seatIndex, chipBalance: m.chipBalance });
        return;
      case 'sit_pending':
        this.log(m.type);
        return;
      case 'stand_up_pending':
        this.standPending = true;
        this.log('stand_up_pending: leaving when this hand ends');
        return;
      case 'action_ack':
        if (this.pending?.ref === m.ref) this.pending = null;
        if (m.duplicate) {
          this.summary.duplicates += 1;
          this.log('resent action acknowledged as a duplicate (it had been applied)');
        }
        return;
      case 'error':
        return this.onError(m);
      case 'stood_up':
        this.summary.stoodUp = { amount: m.amount };
        this.log('stood up', { amount: m.amount, busted: m.busted ?? false });
        return this.stop();
      case 'tournament_registered':
        void this.payEntry(m.seatIndex, m.entryFee).catch((err) => this.stop(err as Error));
        return;
      case 'player_eliminated':
        if (m.userId === this.userId) {
          this.summary.place = m.position;
          this.log('eliminated', { position: m.position });
          return this.stop();
        }
        return;
      case 'tournament_ended':
        this.summary.place = m.finalStandings.find((s) => s.userId === this.userId)?.position ?? this.summary.place;
        this.log('tournament ended', { place: this.summary.place });
        return this.stop();
      case 'deal_seed_accepted':
        if (typeof m.ref === 'string') this.seedRefs.delete(m.ref);
        return;
      case 'table_closed':
        // server_stopping: the socket closes next and we reconnect; lease_lost: join again
        this.log('table closed', { reason: m.reason });
        if (m.reason === 'lease_lost') this.send({ type: 'join', tableId: this.o.tableId });
        return;
      default:
        this.summary.ignored += 1;
        this.log('ignored a message', { type: (m as { type?: unknown }).type });
    }
  }

  private onState(s: GameStateMessage): void {
    const mine = s.seats.find((x) => x.userId === this.userId);
    if (this.phase === 'joining') return this.afterJoin(s);
    if (mine) this.seat = mine.seatIndex;
    else if (this.phase === 'playing' && this.seat !== null && this.table.mode === 'cash') {
      // our seat is gone without a stand_up of ours: busted (the bank closed it) or removed while idle
      this.log('no longer seated (busted, or removed while sat out)');
      return this.stop();
    }
    if (this.rejoined) {
      this.rejoined = false;
      // the action the server never acknowledged, sent again exactly as it was
      if (this.pending) {
        this.summary.resends += 1;
        this.log('resending the unacknowledged action', { handId: (this.pending.message as { handId?: unknown }).handId, seq: (this.pending.message as { seq?: unknown }).seq });
        this.pending.ref = this.send(this.pending.message);
      }
      // a stand_up waiting for its hand's end does not outlive the connection's table: ask again
      if (this.phase === 'standing') this.send({ type: 'stand_up', tableId: this.o.tableId });
    }
    if (!s.legal || s.yourSeat === null) return;
    const turn = `${s.legal.handId}:${s.legal.seq}`;
    if (this.answered.has(turn)) return;
    this.answered.add(turn);
    const d = this.phase === 'standing' ? { action: s.legal.actions.includes('check') ? 'check' as const : 'fold' as const } : decide(s, s.legal);
    const message: ClientMessage = { type: 'action', tableId: this.o.tableId, handId: s.legal.handId, seq: s.legal.seq, ...d };
    this.summary.actions += 1;
    this.pending = { ref: this.send(message), message };
  }

  /** The first state after a join: seated already (a reconnect)? else sit or register. */
  private afterJoin(s: GameStateMessage): void {
    const mine = s.seats.find((x) => x.userId === this.userId);
    if (mine) {
      this.phase = this.standAfterHand ? 'standing' : 'playing';
      return this.onState(s);
    }
    if (this.table.mode === 'sng') {
      this.phase = 'registering';
      this.send({ type: 'register_for_tournament', tableId: this.o.tableId });
      return;
    }
    const taken = new Set(s.seats.map((x) => x.seatIndex));
    const seats = this.table.settings.maxPlayers ?? 6;
    const seatIndex = this.o.seat ?? [...Array(seats).keys()].find((i) => !taken.has(i));
    if (seatIndex === undefined) return this.stop(new Error('the table is full'));
    const { minBuyIn = 0, maxBuyIn = Number.MAX_SAFE_INTEGER, bigBlind = 2 } = this.table.settings;
    const wanted = this.o.buyIn ?? BigInt(bigBlind) * 50n;
    const amount = wanted < BigInt(minBuyIn) ? BigInt(minBuyIn) : wanted > BigInt(maxBuyIn) ? BigInt(maxBuyIn) : wanted;
    this.phase = 'sitting';
    this.log('sitting', { seatIndex, amount: amount.toString() });
    this.send({ type: 'sit', tableId: this.o.tableId, seatIndex, amount: amount.toString(), idempotencyKey: this.sitKey });
  }

  private onResult(r: HandResultMessage): void {
    const ours = r.stacks.find((x) => x.userId === this.userId);
    if (!ours) return;
    this.played.add(r.handId);
    this.summary.hands = this.played.size;
    this.log('hand', { n: this.played.size, handId: r.handId, stack: ours.stack, net: ours.net });
    if (this.table.mode === 'cash' && this.played.size >= this.o.hands) this.standAfterHand = true;
    if (this.standAfterHand && this.phase === 'playing') this.standUp();
    else if (this.standAfterHand && this.phase === 'standing' && !this.standPending) this.send({ type: 'stand_up', tableId: this.o.tableId });
  }

  /**
   * Mixes a fresh random seed into the next hand's deck (docs/dealer.md, "A deal anyone can check"),
   * once per commitment announced: the dealer committed to its seed before this one existed, so it
   * cannot choose the deck. A seed refused (the hand was dealt meanwhile, or a test-mode table) is
   * of no consequence: the next commitment gets another.
   */
  private contribute(s: GameStateMessage): void {
    if (this.phase === 'done' || this.seededTable || s.yourSeat === null || !s.nextDealCommitment || s.nextDealCommitment === this.contributedTo) return;
    this.contributedTo = s.nextDealCommitment;
    this.seedRefs.add(this.send({ type: 'deal_seed', tableId: this.o.tableId, commitment: s.nextDealCommitment, seed: randomBytes(16).toString('base64url') }));
  }

  private onError(e: ErrorMessage): void {
    if (typeof e.ref === 'string' && this.seedRefs.delete(e.ref)) {
      // a test-mode table deals from its deckSeed and mixes nothing in: no more seeds for it
      if (e.code === 'seeded_table') this.seededTable = true;
      return;
    }
    this.log('refused', { code: e.code, ref: e.ref });
    if (this.pending && e.ref === this.pending.ref) {
      // stale_sequence & co: the hand moved on without this action; the next state asks again
      this.pending = null;
      return;
    }
    if (e.code === 'table_elsewhere' && e.url) {
      // another game process runs the table: connect there
      this.wsBase = e.url.replace(/^http/, 'ws').replace(/\/$/, '');
      this.ws?.close();
      return;
    }
    if (this.phase === 'sitting') {
      if (e.code === 'seat_taken' && this.o.seat === undefined) {
        this.phase = 'joining'; // someone sat there first: join again, and take another free seat
        this.send({ type: 'join', tableId: this.o.tableId });
        return;
      }
      if (e.code === 'cage_unavailable' || e.code === 'hand_in_progress') {
        this.phase = 'joining'; // the next state sits again, under the same key
        return;
      }
      return this.stop(new Error(`sit refused: ${e.code}`));
    }
    if (this.phase === 'standing' && e.code === 'hand_in_progress') {
      this.standPending = false; // seated but out of the running hand: asked again after it
      return;
    }
    if (this.phase === 'standing' && e.code === 'not_at_table') return this.stop();
    if (this.phase === 'registering' && e.code !== 'cage_unavailable') return this.stop(new Error(`registration refused: ${e.code}`));
  }

  /** A Sit-and-Go's entry fee: the bank's deposit with `amount` = entryFee on the reserved seat. */
  private async payEntry(seatIndex: number, entryFee: string): Promise<void> {
    const key = `example-agent-entry:${this.o.tableId}:${this.agentId}`;
    const r = await http<{ status?: string; error?: string }>(`${this.o.bank}/api/deposit`, {
      token: this.o.token, headers: { 'idempotency-key': key }, body: { tableId: this.o.tableId, seatIndex, amount: entryFee },
    });
    if (r.status !== 200) throw new Error(`entry fee refused: ${r.status} ${JSON.stringify(r.body)}`);
    this.seat = seatIndex;
    this.phase = 'playing';
    this.log('registered and paid', { seatIndex, entryFee });
  }
}

export function runAgent(options: AgentOptions): Promise<AgentSummary> {
  return new Agent(options).run();
}
