// One live table: its seats (as stored), the hand being played (the pure engine), the turn timer,
// and who watches. The room deals and sends; what differs between a cash table and a Sit-and-Go
// table (their seats, settings, who is dealt in, a hand's end, a tournament's announcements) is
// its table's (cash-table.ts, tournament-table.ts, behind table-kind.ts). Seats change only
// between hands (the database refuses seat funding and stand-up while a hand holds the table), so
// the room reads them at each deal and whenever a seat route touched them. Money never moves here:
// a hand's stacks are written at its end (game.end_hand, which closes its busts too), sits and
// stand-ups go through the bank.
import type pg from 'pg';
import type { BankName } from '../../bank-contract/contract.ts';
import type { Logger } from 'pino';
import type { Ed25519Signer } from '../../crypto/signing.ts';
import { inTransaction } from '../../db/transaction.ts';
import { applyAction, isRefusal, startHand, timeout, type Action, type HandState } from '../poker/engine.ts';
import { comeBack, sitOut, type Positions } from '../poker/table.ts';
import type { createHands } from '../hands/hands.ts';
import { DealSeeds, type PendingDeal } from './deal-seeds.ts';
import { isLeaseLost } from './lease.ts';
import { chipAmount, stateWriter, stoodUp, toJson, type SeatView, type ServerMessageOf } from './wire.ts';
import { refusedWith } from '../../http/errors.ts';
import { CashTable } from './cash-table.ts';
import { escapeNotices } from './escape-notices.ts';
import { TournamentTable } from './tournament-table.ts';
import type { Announcement, EndOutcome, Seat, SeatRow, TableKind } from './table-kind.ts';
import { chainHeadOf } from '../queries.ts';

export { MAX_TURN_TIME_SEC, turnTimeSec } from '../tables/rules.ts';

export interface Watcher {
  id: number;
  userId: string | null;
  agentId: string | null;
  send(message: string): void;
}

export interface RoomOptions {
  /** Pause between one hand's end and the next deal. */
  handDelayMs: number;
  /** Consecutive turn-timer expiries after which a player is sat out. */
  timeoutsBeforeSitOut: number;
}

export interface TableRecord {
  table_id: string;
  game_type: 'poker' | 'arena';
  settings: Record<string, unknown>;
  status: string;
  mode: string;
  kind: 'open' | 'human_only' | 'agent' | 'copilot';
  money_kind: string;
  current_hand_id: string | null;
  /** Whose money the table's is (game.tables.bank): every bank call of the table goes there. */
  bank: BankName;
}

export interface RoomDeps {
  pool: pg.Pool;
  log: Logger;
  hands: ReturnType<typeof createHands>;
  options: RoomOptions;
  /** Players removed for idleness go through the bank (forced withdraw to custody). */
  forcedWithdraw: (userId: string) => Promise<void>;
  /** A player asked to stand up during a hand: done through the bank once it ends. */
  standUp: (seat: { userId: string; token: string | null }) => Promise<BankAnswer>;
  /** An agent took a seat: its claim-board condition, met in the transaction that stores the seat's agent. */
  agentSeated: (client: pg.PoolClient, userId: string, agentId: string) => Promise<void>;
  /** Lifecycle states this room announced, in order: the tournament's span follows them. */
  lifecycleStates?: (states: string[]) => Promise<void>;
  /** The dealer's key: each hand's record is signed with it. */
  dealer: Ed25519Signer;
}

/** What the bank answered a seat request (a deposit or a withdraw). */
export interface BankAnswer {
  status: number;
  body: Record<string, unknown>;
}

/** A sit asked for during a hand: made through the bank at its end, before the next deal. */
interface PendingSit {
  userId: string;
  agentId: string | null;
  watcher: Watcher;
  deposit: () => Promise<BankAnswer>;
  done: (answer: BankAnswer) => void;
}

/** The same action (type and amount): what a resend under an applied seq must be to count as a duplicate. */
const actionKey = (a: Action) => `${a.type}:${a.amount ?? ''}`;

/** The watchers of a room: a join or leave tells the room (it may now deal, or deal to fewer). */
class Watchers extends Set<Watcher> {
  private readonly changed: () => void;
  constructor(changed: () => void) {
    super();
    this.changed = changed;
  }

  override add(w: Watcher): this {
    const had = this.has(w);
    super.add(w);
    if (!had) this.changed();
    return this;
  }
}

export class Room {
  readonly tableId: string;
  readonly record: TableRecord;
  /** What the table's kind decides (cash or Sit-and-Go). */
  private readonly table: TableKind;
  private seats = new Map<number, Seat>();
  private positions: Positions | null = null;
  private hand: HandState | null = null;
  private handNumber = 0;
  private handStartedAt = 0;
  private turnTimer: NodeJS.Timeout | null = null;
  private turnDeadline: number | null = null;
  private nextDeal: NodeJS.Timeout | null = null;
  /** A complete hand whose end could not be written yet, and the timer of its next attempt. */
  private endRetry: NodeJS.Timeout | null = null;
  private endAttempts = 0;
  private busy: Promise<void> = Promise.resolve();
  private closed = false;
  /** Steps queued or running. */
  private steps = 0;
  /** The connections at the table (added and removed by the websocket server). */
  readonly watchers: Set<Watcher> = new Watchers(() => this.scheduleDeal());
  /** Actions applied in this hand and the last one (`handId:seat:seq` → the action): the same one resent is acknowledged, not applied. */
  private applied = new Map<string, string>();
  private previousApplied = new Map<string, string>();
  private pendingSits: PendingSit[] = [];
  /** Commit and reveal: the next hand's committed seed, the players' contributions, the chain head. */
  private readonly seeds: DealSeeds;

  private readonly deps: RoomDeps;

  constructor(record: TableRecord, deps: RoomDeps) {
    this.deps = deps;
    this.seeds = new DealSeeds(record.table_id, () => this.settings.deckSeed, deps.dealer);
    this.tableId = record.table_id;
    this.record = record;
    this.table = record.mode === 'sng'
      ? new TournamentTable(record.table_id, record.settings, deps)
      : new CashTable(record.table_id, record.settings, deps.hands, deps.log);
  }

  /** The next hand's settings, as the table's kind decides them. */
  get settings() {
    return this.table.settings();
  }

  /** The tournament's state as the room last read it (null on a cash table). */
  get tournamentPhase(): string | null {
    return this.table.phase;
  }

  /** Runs room work one step at a time (actions, timers and seat changes never interleave). */
  private serial(work: () => Promise<void>): Promise<void> {
    this.steps += 1;
    const next = this.busy.then(work, work);
    // the boundary of every step (timers' included): a failure is logged and the next step runs
    this.busy = next.catch((err) => this.deps.log.error({ err, tableId: this.tableId }, 'room step failed')).finally(() => {
      this.steps -= 1;
    });
    return next;
  }

  /** A step that answers: its result, or a rejection when it fails before it answers (never left hanging). */
  private answer<T>(work: (resolve: (value: T) => void) => Promise<void>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.serial(() => work(resolve)).catch(reject);
    });
  }

  /**
   * Nothing holds the room: nobody watches, no hand is dealt, no sit or stand-up waits, no step is
   * queued or running. The websocket server unloads a room idle long enough (ROOM_IDLE_UNLOAD_SECONDS).
   */
  get idle(): boolean {
    return this.watchers.size === 0 && this.hand === null && this.steps === 0 && this.pendingSits.length === 0
      && ![...this.seats.values()].some((s) => s.leaveAfterHand);
  }

  /**
   * Loads the room: a hand or a committed deal left by the table's previous room is abandoned (the
   * stacks of its start stand) and revealed here, in a signed record chained like any other; then
   * the next hand's deal is committed (kept sealed by the table) before its commitment is published.
   */
  async open(): Promise<void> {
    if (this.record.current_hand_id) this.deps.log.warn({ tableId: this.tableId, handId: this.record.current_hand_id }, 'hand abandoned after a restart: the stacks of its start stand');
    await this.syncDeals();
    await this.reloadSeats();
    this.scheduleDeal();
  }

  /**
   * The table's deals as stored become the room's: what a previous room (or a call under this room's
   * epoch) left committed or in play is abandoned and revealed, the hand number and chain head are
   * read, and a fresh next deal is committed before it is published.
   */
  private async syncDeals(): Promise<void> {
    const opened = await this.deps.hands.openDeals(this.tableId);
    this.handNumber = opened.handNumber;
    this.seeds.setHead(opened.head);
    this.seeds.forget();
    await this.revealAbandoned(opened.pending);
    await this.deps.hands.commitDeal(this.tableId, this.seeds.sealedNext(this.handNumber));
  }

  /** Abandoned deals of the table revealed, in hand order, each record extending the chain. */
  private async revealAbandoned(pending: readonly PendingDeal[]): Promise<void> {
    for (const p of pending) {
      const { deal, record } = this.seeds.revealAbandoned(p);
      if (!deal.serverSeed) this.deps.log.error({ tableId: this.tableId, handId: p.handId }, 'abandoned deal: its seal did not open (the dealer key changed); revealed without its seed');
      this.seeds.extended(await this.deps.hands.revealAbandoned(this.tableId, p.handId, deal, record));
      this.deps.log.warn({ tableId: this.tableId, handId: p.handId, handNumber: p.handNumber }, 'abandoned deal revealed');
    }
  }

  /** The table holds abandoned deals not revealed yet (a hand dropped): revealed now. */
  private async revealPending(): Promise<void> {
    const opened = await this.deps.hands.pendingDeals(this.tableId);
    this.seeds.setHead(opened.head);
    await this.revealAbandoned(opened.pending);
  }

  /**
   * The step running when the room closed, finished (at most `ms`): the room's lease is released
   * and its process's pool ended only after it, so a step in flight never writes under a lease given
   * up nor reaches a closed pool. The steps after it see the room closed and touch nothing.
   */
  async stepsDone(ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
      timer.unref();
    });
    await Promise.race([this.busy, waited]);
    clearTimeout(timer);
  }

  close(): void {
    this.closed = true;
    if (this.turnTimer) clearTimeout(this.turnTimer);
    if (this.nextDeal) clearTimeout(this.nextDeal);
    if (this.endRetry) clearTimeout(this.endRetry);
    for (const p of this.pendingSits.splice(0)) p.done({ status: 503, body: { error: 'table_closed' } });
  }

  /** Seats changed in the database (funded, topped up, stood up, settled): read them again. */
  refresh(): Promise<void> {
    return this.serial(async () => {
      // a seat route cannot fund or stand up a seat while a hand holds the table; whatever it did
      // change is read at the hand's end
      if (this.hand) {
        this.seatsChanged = true;
        return;
      }
      await this.reloadSeats();
      // a tournament catches up what its notices would have announced (one missed while away)
      await this.publish(await this.table.catchUp());
      this.broadcastState();
      this.scheduleDeal();
    });
  }

  /** A seat route touched the seats while a hand held the table: read them at its end. */
  private seatsChanged = false;

  /** `left`: players known to have left (the hand's busts): not escapes, so no notice is looked for. */
  private async reloadSeats(left: readonly string[] = []): Promise<void> {
    if (this.closed) return;
    const before = [...this.seats.values()].map((s) => s.userId);
    this.applySeats(await this.table.readSeats());
    const seated = new Set([...this.seats.values()].map((s) => s.userId));
    const gone = before.filter((u) => !seated.has(u) && !left.includes(u));
    if (gone.length > 0 && this.record.mode === 'cash') await this.tellEscaped(gone);
  }

  /** Seats vanished: the players an escape unseated are told their custody entry (escape-notices.ts). */
  private async tellEscaped(userIds: string[]): Promise<void> {
    const notices = await escapeNotices(this.deps.pool, this.tableId, userIds).catch((err: Error) => {
      this.deps.log.warn({ tableId: this.tableId, err: err.message }, 'escape notices not read');
      return [];
    });
    for (const n of notices) for (const w of this.watchers) if (w.userId === n.userId) w.send(n.message);
  }

  /** The seats as read: a position the room knows keeps its place in the game, a new one waits for the big blind. */
  private applySeats(rows: SeatRow[]): void {
    this.seatsChanged = false;
    const running = this.positions !== null;
    const next = new Map<number, Seat>();
    for (const r of rows) {
      const known = this.seats.get(r.seat_index);
      const seat: Seat = known && known.positionId === r.id ? { ...known, agentId: r.agent_id, stack: BigInt(r.chip_balance) } : {
        seat: r.seat_index, playerId: r.id, positionId: r.id, userId: r.user_id, agentId: r.agent_id, stack: BigInt(r.chip_balance),
        sittingOut: r.sat_out === true, waitingForBigBlind: running && r.sat_out !== true, timeouts: 0, leaveAfterHand: false,
      };
      next.set(r.seat_index, seat);
    }
    this.seats = next;
    if (this.seats.size < 2) this.positions = null; // the next game starts afresh
  }

  /** The agent playing the owner's seat, once the agent's sit succeeded: stored, then shown. */
  private async markAgent(userId: string, agentId: string): Promise<void> {
    // the seat's agent and the agent_seated condition commit together (the spec's in-process call)
    await inTransaction(this.deps.pool, async (client) => {
      await client.query('select game.set_seat_agent($1, $2, $3)', [this.tableId, userId, agentId]);
      await client.query('savepoint condition');
      await this.deps.agentSeated(client, userId, agentId).then(
        () => client.query('release savepoint condition'),
        async (err: Error) => {
          // a refused condition (the board switched off meanwhile) leaves the seat's agent stored
          await client.query('rollback to savepoint condition');
          this.deps.log.warn({ userId, agentId, err: err.message }, 'agent_seated condition not recorded');
        },
      );
    });
    for (const s of this.seats.values()) if (s.userId === userId) s.agentId = agentId;
  }

  seatOf(userId: string | null): number | null {
    if (!userId) return null;
    for (const s of this.seats.values()) if (s.userId === userId) return s.seat;
    return null;
  }

  private views(): SeatView[] {
    return [...this.seats.values()]
      .sort((a, b) => a.seat - b.seat)
      .map((s) => ({ seatIndex: s.seat, userId: s.userId, agentId: s.agentId, stack: s.stack, sittingOut: s.sittingOut === true }));
  }

  /** The game state as `w` may see it (one connection; a broadcast shares the work). */
  stateFor(w: Watcher): string {
    return this.viewOf(this.writer(), w);
  }

  broadcastState(): void {
    if (this.watchers.size === 0) return;
    const write = this.writer();
    for (const w of this.watchers) w.send(this.viewOf(write, w));
  }

  private writer() {
    const st = this.settings;
    const deal = { dealCommitment: this.seeds.currentCommitment, nextDealCommitment: this.seeds.nextCommitment(this.handNumber) };
    return stateWriter({ tableId: this.tableId, smallBlind: st.smallBlind, bigBlind: st.bigBlind, ante: st.ante, ...deal }, this.views(), this.hand, this.turnDeadline, this.table.tournamentState([...this.seats.values()]));
  }

  private viewOf(write: ReturnType<typeof stateWriter>, w: Watcher): string {
    const seat = this.seatOf(w.userId);
    const st = this.settings;
    return write({ seat, seesAllCards: seat === null && st.hostedOnly && st.showHands });
  }

  private sendAll(messages: readonly string[], to: (w: Watcher) => boolean = () => true): void {
    for (const m of messages) for (const w of this.watchers) if (to(w)) w.send(m);
  }

  // ---- a tournament's lifecycle ----------------------------------------------------------------

  /**
   * A lifecycle notice of this table (the SQL's NOTIFY game_tournament), relayed to the room's
   * connections. The notice is only a trigger: the table re-reads its lifecycle row and the room its
   * seats, and what the database holds is announced (so nothing a notice carries reaches a client
   * unchecked, and a repeated or stale notice announces nothing), then it deals once the tournament
   * plays. A force-end abandoned the hand in flight (its start stacks stand): dropped here.
   */
  tournamentEvent(event: Record<string, unknown>): Promise<void> {
    return this.answer<void>(async (resolve) => {
      const notice = this.table.notice?.bind(this.table);
      if (this.closed || !notice) return resolve();
      if (this.hand) await this.table.refreshLifecycle?.();
      if (this.table.phase !== 'playing' && this.hand?.status === 'betting') {
        this.dropHand();
        await this.revealPending();
      }
      if (!this.hand) await this.reloadSeats();
      await this.publish(await notice(event));
      this.broadcastState();
      this.scheduleDeal();
      resolve();
    });
  }

  /**
   * Lifecycle messages sent to the room's connections, then recorded as announced (so the room that
   * runs the table next announces none of them again); the tournament's span follows the moves.
   */
  private async publish(messages: Announcement[]): Promise<void> {
    if (messages.length === 0) return;
    this.sendAll(messages.map((m) => toJson({ ...m, tableId: this.tableId } satisfies ServerMessageOf<Announcement['type']>)));
    await this.table.announced(messages);
    const states = messages.flatMap((m) => (m.type === 'tournament_state_changed' ? [m.state] : []));
    if (states.length) await this.deps.lifecycleStates?.(states);
  }

  /** The hand in flight was abandoned unwritten (its start stacks stand): its deal is revealed before the next deal. */
  private dropHand(): void {
    if (this.turnTimer) clearTimeout(this.turnTimer);
    this.turnTimer = null;
    this.turnDeadline = null;
    this.hand = null;
    this.seeds.dropped();
    this.table.handDropped();
  }

  // ---- dealing -------------------------------------------------------------------------------

  /** Who the next hand is dealt to, as the table's kind decides (null: no hand now). */
  private plan() {
    const watching = new Set<string | null>();
    for (const w of this.watchers) watching.add(w.userId);
    return this.table.plan([...this.seats.values()], this.positions, watching);
  }

  private scheduleDeal(): void {
    // a hand not yet written (betting, or complete and waiting for its end's retry) holds the table
    if (this.closed || this.nextDeal || this.hand) return;
    if (this.plan() === null) return;
    this.nextDeal = setTimeout(() => {
      this.nextDeal = null;
      this.serial(() => this.deal()).catch(() => undefined); // logged by serial
    }, this.deps.options.handDelayMs);
  }

  private async deal(): Promise<void> {
    if (this.closed || this.hand?.status === 'betting' || this.plan() === null) return;
    // the hand id was drawn with the commitment published for this hand; the deal's write keeps it
    // sealed with the contributions so far, and commits the next hand's (published after this answer)
    const handId = this.seeds.nextHandId(this.handNumber);
    const deals = this.seeds.dealWrite(this.handNumber);
    // the table is ours now: no seat changes until the hand ends; the seats come as they stand (a
    // tournament: its level too, and any move a missed notice did not announce)
    let rows: SeatRow[];
    try {
      rows = await this.table.deal(handId, deals);
    } catch (err) {
      this.seeds.unstage();
      // the table's deals are not what the room holds (an abandoned deal to reveal first, or the
      // committed one abandoned under this room's epoch): the stored ones are revealed, a new one committed
      if (refusedWith(err, 'game', 'deal_unrevealed') || refusedWith(err, 'game', 'deal_not_committed')) {
        this.deps.log.warn({ tableId: this.tableId, err: (err as Error).message }, 'deal refused: the table\'s deals synced');
        if (refusedWith(err, 'game', 'deal_unrevealed')) await this.revealPending();
        else await this.syncDeals();
        this.broadcastState();
        this.scheduleDeal();
        return;
      }
      this.deps.log.warn({ tableId: this.tableId, err: (err as Error).message }, 'hand not started');
      return;
    }
    this.applySeats(rows);
    await this.publish(await this.table.catchUp());
    const plan = this.plan();
    if (!plan) {
      // nobody left to deal to (they stood up or disconnected meanwhile): no hand, none recorded, and
      // the committed deal stays the next one
      this.seeds.unstage();
      await this.deps.hands.release(this.tableId, handId);
      return;
    }
    const st = this.settings;
    this.handNumber += 1;
    // the committed seed with the contributions of the seats dealt in; the next hand's is committed now
    const { deck } = this.seeds.deal(this.handNumber);
    this.hand = startHand({
      handId, seats: plan.seats, button: plan.button, smallBlindSeat: plan.smallBlindSeat, bigBlindSeat: plan.bigBlindSeat,
      smallBlind: st.smallBlind, bigBlind: st.bigBlind, ante: st.ante, deck, rake: st.rake,
    });
    this.positions = plan.positions;
    this.handStartedAt = Date.now();
    this.previousApplied = this.applied;
    this.applied = new Map();
    for (const s of this.seats.values()) {
      if (plan.dealtIn.includes(s.seat)) s.waitingForBigBlind = false;
      // funded and not sat out, but not connected: missed this hand, so back in at the big blind
      else if (!s.sittingOut && s.stack > 0n) s.waitingForBigBlind = true;
    }
    await this.afterStep();
  }

  /** After every change of the hand: broadcast, then finish it or arm the turn timer. */
  private async afterStep(): Promise<void> {
    if (this.turnTimer) clearTimeout(this.turnTimer);
    this.turnTimer = null;
    this.turnDeadline = null;
    const hand = this.hand!;
    if (hand.status === 'complete') {
      this.broadcastState();
      await this.handEnded(hand);
      return;
    }
    // a player who asked to stand up checks when free, else folds, on each turn (as the turn timer
    // would) and leaves when the hand ends
    const leaving = hand.toAct !== null ? this.seats.get(hand.toAct) : undefined;
    if (leaving?.leaveAfterHand) {
      const folded = timeout(hand);
      if (!isRefusal(folded)) {
        this.hand = folded;
        return this.afterStep();
      }
    }
    const st = this.settings;
    if (st.turnTimerEnabled) {
      this.turnDeadline = Date.now() + st.turnMs;
      const seq = hand.seq;
      this.turnTimer = setTimeout(() => this.serial(() => this.expire(seq)).catch(() => undefined), st.turnMs); // logged by serial
    }
    this.broadcastState();
  }

  private async expire(seq: number): Promise<void> {
    const hand = this.hand;
    if (!hand || hand.status !== 'betting' || hand.seq !== seq || hand.toAct === null) return;
    const seat = this.seats.get(hand.toAct);
    const next = timeout(hand);
    if (isRefusal(next)) return;
    this.hand = next;
    if (this.table.turnExpired() && seat) {
      seat.timeouts += 1;
      if (seat.timeouts >= this.deps.options.timeoutsBeforeSitOut && !seat.sittingOut) {
        const out = sitOut([seat], seat.seat)[0]!;
        this.seats.set(seat.seat, { ...seat, sittingOut: out.sittingOut, waitingForBigBlind: out.waitingForBigBlind });
        this.recordSitOut(seat.userId, true);
        this.deps.log.info({ tableId: this.tableId, userId: seat.userId }, 'player sat out after timeouts');
      }
    }
    await this.afterStep();
  }

  // ---- a hand's end --------------------------------------------------------------------------

  /**
   * The hand's end, one path for every table: written by the table's kind in one transaction, then
   * sent in order (what comes before the fresh game_state, the seats' business of the boundary,
   * game_state, what comes after), then the next deal.
   */
  private async handEnded(hand: HandState): Promise<void> {
    const outcome = await this.writeEnd(hand);
    if (!outcome) return;
    this.deps.log.debug({ tableId: this.tableId, handId: hand.handId, busted: outcome.answer.busted.length, replayed: outcome.answer.replayed, ms: Date.now() - this.handStartedAt }, 'hand finished');
    const leaving = [...this.seats.values()].filter((s) => s.leaveAfterHand);
    this.hand = null;
    // the stacks are the hand's own; a bust (settled, or placed) changed the seats: read them
    for (const p of hand.players) {
      const seat = this.seats.get(p.seat);
      if (seat) seat.stack = p.stack;
    }
    this.sendAll(outcome.before);
    // the boundary's seat business, when there is any (most hands have none: then what the hand's end
    // sends leaves in one socket write per connection, as nothing is awaited in between)
    if (outcome.answer.busted.length > 0 || this.seatsChanged || leaving.length || this.pendingSits.length || this.anySatOut()) {
      if (outcome.answer.busted.length > 0 || this.seatsChanged) await this.reloadSeats(outcome.answer.busted.map((b) => b.userId));
      for (const s of leaving) await this.standUpAfterHand(s.userId);
      if (leaving.length) await this.reloadSeats();
      await this.kickIdle();
      await this.seatPending();
    }
    this.broadcastState();
    this.sendAll(outcome.after);
    this.scheduleDeal();
  }

  /**
   * Writes the hand's end. A refusal means it will never be written: the lease is gone (the room
   * stops), or the hand was abandoned meanwhile (a force-end: its start stacks stand, the hand is
   * dropped). Any other failure (the database unreachable, a lock timeout, an answer lost) leaves
   * the hand complete in the room and the table held, and the same end is tried again with backoff
   * (1 s doubling to 30 s): an end that did commit answers again what it committed. Null while it waits.
   */
  private async writeEnd(hand: HandState): Promise<EndOutcome | null> {
    const agents = hand.players.map((p) => this.seats.get(p.seat)?.agentId).filter((a): a is string => Boolean(a));
    const fair = this.seeds.signedRecord(hand, { tableId: this.tableId, handNumber: this.handNumber }, this.deps.dealer);
    try {
      const outcome = await this.table.endHand({ hand, handNumber: this.handNumber, startedAt: new Date(this.handStartedAt), views: this.views(), agents, ...fair });
      this.seeds.extended(fair.record.hash);
      this.endAttempts = 0;
      return outcome;
    } catch (err) {
      if (isLeaseLost(err)) {
        this.hand = null;
        throw err;
      }
      if (refusedWith(err, 'game', 'hand_abandoned') || refusedWith(err, 'game', 'no_hand_in_progress')) {
        this.deps.log.warn({ tableId: this.tableId, handId: hand.handId, err: (err as Error).message }, 'hand not written: abandoned meanwhile, the stacks of its start stand');
        this.endAttempts = 0;
        this.dropHand();
        await this.revealPending();
        await this.reloadSeats();
        this.broadcastState();
        this.scheduleDeal();
        return null;
      }
      // another record extended the table's chain meanwhile (a process that ran it before): read the head again
      if (refusedWith(err, 'game', 'record_not_in_chain')) await this.readChainHead();
      this.retryEnd(hand, err);
      return null;
    }
  }

  /** A hand end not written: tried again with backoff (1 s doubling to 30 s), the table held meanwhile. */
  private retryEnd(hand: HandState, err: unknown): void {
    this.endAttempts += 1;
    const delayMs = Math.min(30_000, 1000 * 2 ** (this.endAttempts - 1));
    this.deps.log.error({ err, tableId: this.tableId, handId: hand.handId, attempt: this.endAttempts, retryInMs: delayMs }, 'hand end not written: retrying');
    if (this.closed) return;
    this.endRetry = setTimeout(() => {
      this.endRetry = null;
      this.serial(async () => {
        if (this.hand === hand) await this.handEnded(hand);
      }).catch(() => undefined); // logged by serial
    }, delayMs);
  }

  /**
   * A stand-up asked during the hand, made now through the bank; the player's connections at the
   * table are told (`stood_up`, or `error` with the bank's code), as the request itself was answered
   * `stand_up_pending`. A player busted in the hand has no seat left (the cage settled it as a bust):
   * `stood_up` with amount "0" and `busted`.
   */
  private async standUpAfterHand(userId: string): Promise<void> {
    let message: string;
    if (this.seatOf(userId) === null) {
      message = toJson({ type: 'stood_up', tableId: this.tableId, amount: '0', txHash: null, receipt: null, busted: true } satisfies ServerMessageOf<'stood_up'>);
    } else {
      const answer = await this.bankCall(() => this.deps.standUp({ userId, token: this.tokens.get(userId) ?? null }));
      if (answer.status !== 200) this.deps.log.warn({ tableId: this.tableId, userId, status: answer.status, error: answer.body.error }, 'stand-up after the hand refused');
      message = answer.status === 200 ? stoodUp(this.tableId, answer.body)
        : toJson({ type: 'error', code: String(answer.body.error ?? 'stand_up_refused'), tableId: this.tableId } satisfies ServerMessageOf<'error'>);
    }
    this.sendAll([message], (w) => w.userId === userId);
  }

  /**
   * The sits asked for during the hand, in the order asked, now that no hand holds the table. A
   * player who left the table (or whose connection closed) meanwhile is not sat: nobody would be
   * told, and no chips move for a sit nobody watches.
   */
  private async seatPending(): Promise<void> {
    if (this.pendingSits.length === 0) return;
    const answered: [PendingSit, BankAnswer][] = [];
    for (const p of this.pendingSits.splice(0)) {
      const cancelled = !this.watchers.has(p.watcher);
      answered.push([p, cancelled ? { status: 409, body: { error: 'sit_cancelled' } } : await this.bankCall(p.deposit)]);
    }
    await this.reloadSeats();
    for (const [p, answer] of answered) await this.sat(p, answer);
  }

  /** Answers a sit once the seats are read again (the seat is there, with its agent stored). */
  private async sat(p: Pick<PendingSit, 'userId' | 'agentId' | 'done'>, answer: BankAnswer): Promise<void> {
    if (answer.status === 200 && p.agentId) {
      await this.markAgent(p.userId, p.agentId).catch((err) => this.deps.log.error({ err, userId: p.userId }, 'seat agent not stored'));
    }
    p.done(answer);
  }

  private bankCall(call: () => Promise<BankAnswer>): Promise<BankAnswer> {
    return call().catch(() => ({ status: 503, body: { error: 'cage_unavailable' } }));
  }

  /**
   * Sat-out players past the house's idle time are removed through the bank (forced withdraw to
   * custody). SQL keeps when each sat out and says who is idle; it refuses a forced stand-up of
   * anyone else, so the room asks it rather than its own clock. The seats are read again only
   * when someone was removed.
   */
  private anySatOut(): boolean {
    for (const s of this.seats.values()) if (s.sittingOut) return true;
    return false;
  }

  private async kickIdle(): Promise<void> {
    if (this.closed || !this.anySatOut()) return;
    await this.sitOutWrites;
    const idle = await this.deps.hands.idle(this.tableId);
    for (const userId of idle) {
      this.deps.log.info({ tableId: this.tableId, userId }, 'idle player removed (forced withdraw)');
      await this.deps.forcedWithdraw(userId).catch((err) => this.deps.log.warn({ err: (err as Error).message, userId }, 'idle kick failed'));
    }
    if (idle.length) await this.reloadSeats();
  }

  /** Sitting out is written in order, best effort (a failure is logged: the player is not removed for idleness). */
  private sitOutWrites: Promise<void> = Promise.resolve();
  private recordSitOut(userId: string, out: boolean): void {
    this.sitOutWrites = this.sitOutWrites.then(() => this.deps.hands.sitOut(this.tableId, userId, out)).catch((err: Error) => {
      this.deps.log.warn({ tableId: this.tableId, userId, out, err: err.message }, 'sitting out not recorded');
    });
  }

  /** Periodic check (the game role calls it): idle kicks happen between hands. */
  tick(): Promise<void> {
    return this.serial(async () => {
      if (this.hand) return; // idle kicks wait for the hand's end (written, or retried)
      const before = this.seats.size;
      await this.kickIdle();
      if (this.seats.size !== before) this.broadcastState();
    });
  }

  // ---- player requests -----------------------------------------------------------------------

  /** The bearer tokens of connected players: a stand-up after the hand is made with the player's own. */
  readonly tokens = new Map<string, string>();

  /** An action by a user; resolves to an error code, or null when applied (or a duplicate). */
  act(userId: string, message: { handId?: unknown; seq?: unknown; action?: unknown; amount?: unknown }): Promise<{ error?: string; duplicate?: boolean }> {
    // a step that fails before it answers rejects the request (never left hanging)
    return this.answer<{ error?: string; duplicate?: boolean }>(async (resolve) => {
      const hand = this.hand;
      const seat = this.seatOf(userId);
      if (seat === null) return resolve({ error: 'not_seated' });
      const seq = typeof message.seq === 'number' ? message.seq : undefined;
      const type = message.action;
      if (type !== 'fold' && type !== 'check' && type !== 'call' && type !== 'bet' && type !== 'raise') return resolve({ error: 'illegal_action' });
      let action: Action = { type };
      if (type === 'bet' || type === 'raise') {
        const amount = chipAmount(message.amount);
        if (amount === null) return resolve({ error: 'illegal_amount' });
        action = { type, amount };
      }
      // a resend under an applied seq: the same action is a duplicate, any other one is stale
      const key = `${String(message.handId)}:${seat}:${seq}`;
      const done = seq === undefined ? undefined : this.applied.get(key) ?? this.previousApplied.get(key);
      if (done !== undefined) return resolve(done === actionKey(action) ? { duplicate: true } : { error: 'stale_sequence' });
      if (!hand || hand.status !== 'betting') return resolve({ error: 'no_hand_in_progress' });
      if (message.handId !== undefined && message.handId !== hand.handId) return resolve({ error: 'stale_hand' });
      const next = applyAction(hand, seat, action, seq);
      if (isRefusal(next)) return resolve({ error: next.error });
      this.applied.set(`${hand.handId}:${seat}:${hand.seq}`, actionKey(action));
      const s = this.seats.get(seat);
      if (s) s.timeouts = 0;
      this.hand = next;
      resolve({});
      await this.afterStep();
    });
  }

  /**
   * A player asks to sit (or top up) through the bank's deposit. Between hands it is done at once,
   * inside the room's step, so the next deal cannot take the table between the request and the
   * seat funding. During a hand it is `pending` and done when the hand ends, before the next deal
   * (one pending sit per player; a second is refused `sit_already_pending`). `answer` resolves to
   * the bank's answer either way.
   */
  requestSit(userId: string, agentId: string | null, watcher: Watcher, deposit: () => Promise<BankAnswer>): Promise<{ pending: boolean; answer: Promise<BankAnswer> }> {
    return new Promise((resolve, reject) => {
      let done!: (answer: BankAnswer) => void;
      const answer = new Promise<BankAnswer>((r) => {
        done = r;
      });
      this.serial(async () => {
        if (this.closed) {
          done({ status: 503, body: { error: 'table_closed' } });
          return resolve({ pending: false, answer });
        }
        if (this.hand?.status === 'betting') {
          if (this.pendingSits.some((p) => p.userId === userId)) done({ status: 409, body: { error: 'sit_already_pending' } });
          else this.pendingSits.push({ userId, agentId, watcher, deposit, done });
          return resolve({ pending: this.pendingSits.some((p) => p.done === done), answer });
        }
        resolve({ pending: false, answer });
        const answered = await this.bankCall(deposit);
        await this.reloadSeats();
        await this.sat({ userId, agentId, done }, answered);
        this.broadcastState();
        this.scheduleDeal();
      }).catch((err) => {
        // a failed step answers the sit all the same (the next game_state shows the seats as stored)
        done({ status: 503, body: { error: 'unavailable' } });
        reject(err);
      });
    });
  }

  /** A seated player's seed for the next hand: it must name the commitment published for that hand. */
  contribute(userId: string, commitment: string, seed: string): string | null {
    const seat = this.seatOf(userId);
    if (seat === null) return 'not_at_table';
    return this.seeds.contribute(seat, commitment, seed, this.handNumber);
  }

  /** The table's latest signed record (its chain head), as stored. */
  private async readChainHead(): Promise<void> {
    this.seeds.setHead(await chainHeadOf(this.deps.pool, this.tableId));
  }

  /** A player steps away or comes back (comes back waiting for the big blind). */
  setSittingOut(userId: string, out: boolean): string | null {
    const seat = this.seatOf(userId);
    if (seat === null) return 'not_seated';
    const s = this.seats.get(seat)!;
    // a player who never stepped away has nothing to come back from (no wait for the big blind)
    if (!out && !s.sittingOut) return null;
    const changed = out ? sitOut([s], seat)[0]! : comeBack([s], seat)[0]!;
    this.seats.set(seat, { ...s, sittingOut: changed.sittingOut, waitingForBigBlind: changed.waitingForBigBlind, timeouts: 0 });
    this.recordSitOut(userId, out);
    this.broadcastState();
    if (!out) this.scheduleDeal();
    return null;
  }

  /**
   * A player asks to stand up. Between hands it is done at once, through the bank, inside the
   * room's step (so no hand can be dealt in between and hold the table). During a hand (whether the
   * player is still in it, folded, or sat out) it is `pending`: the player checks when free, else
   * folds, on each of their turns (at once if it is their turn now), and the bank is asked when the
   * hand ends.
   */
  requestStandUp(userId: string): Promise<{ pending: true } | ({ pending: false } & BankAnswer)> {
    return this.answer<{ pending: true } | ({ pending: false } & BankAnswer)>(async (resolve) => {
      const seat = this.seatOf(userId);
      if (seat === null) return resolve({ pending: false, status: 404, body: { error: 'not_at_table' } });
      const s = this.seats.get(seat)!;
      if (this.hand?.status === 'betting') {
        s.leaveAfterHand = true;
        s.sittingOut = true;
        resolve({ pending: true });
        if (this.hand.toAct === seat) await this.afterStep();
        return;
      }
      s.sittingOut = true; // not dealt in again, whatever the bank answers
      const answer = await this.bankCall(() => this.deps.standUp({ userId, token: this.tokens.get(userId) ?? null }));
      await this.reloadSeats();
      if (answer.status !== 200 && this.seats.has(seat)) this.seats.get(seat)!.sittingOut = false;
      resolve({ pending: false, ...answer });
      this.broadcastState();
      this.scheduleDeal();
    });
  }
}
