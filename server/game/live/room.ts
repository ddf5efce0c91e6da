// One live table: its seats (as stored), the hand being played (the pure engine), the turn timer,
// and who watches. Seats change only between hands (the database refuses seat funding and stand-up
// while a hand holds the table), so the room re-reads them at each boundary and whenever a seat
// route touched them. Money never moves here: the stacks of a hand are written at its end
// (game.finish_hand), busts are settled by the cage, sits and stand-ups go through the bank.
import { randomBytes, randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Logger } from 'pino';
import { inTransaction } from '../../db/transaction.ts';
import { applyAction, isRefusal, startHand, timeout, type Action, type HandState } from '../poker/engine.ts';
import { randomDeck, shuffledDeck } from '../poker/deck.ts';
import { comeBack, nextHand, sitOut, type Positions, type TableSeat } from '../poker/table.ts';
import type { createHands, HandEnd } from '../hands/hands.ts';
import { isLeaseLost } from './lease.ts';
import { chipAmount, handResult, stateWriter, stoodUp, historyJson, toJson, type SeatView, type ServerMessageOf, type TournamentState } from './wire.ts';
import { actionMs, LIFECYCLE_STATES, levelMs, levelOf, myView, storedSng, tournamentWire, type LifecycleState, type StoredSng, type TournamentRow } from '../../tournaments/lifecycle.ts';
import { refusedWith } from '../../http/errors.ts';

/** A seat as the room reads it. */
interface SeatRow {
  id: string;
  user_id: string;
  agent_id: string | null;
  seat_index: number;
  chip_balance: string;
  status: string;
  /** Sat out by the dealer (game.set_sitting_out): a reloaded room keeps them out. */
  sat_out?: boolean;
}

/** The tournament states in their order (spec: Tournament lifecycle). */
const LIFECYCLE: readonly string[] = LIFECYCLE_STATES;

/** A lifecycle broadcast as announcements() builds it (publish adds the tableId). */
type Announcement = DistributiveOmit<ServerMessageOf<'tournament_state_changed' | 'blind_level_changed' | 'tournament_ended' | 'tournament_payout_settled'>, 'tableId'>;
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** The longest turn a table may give (one hour): creation refuses more, and stored rows above it are clamped when a room loads. */
import { MAX_TURN_TIME_SEC } from '../tables/rules.ts'; export { MAX_TURN_TIME_SEC };

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

interface Seat extends TableSeat {
  positionId: string;
  userId: string;
  agentId: string | null;
  timeouts: number;
  leaveAfterHand: boolean;
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

const big = (v: unknown, fallback = 0n) => (typeof v === 'number' && Number.isInteger(v) ? BigInt(v) : fallback);

/** A stored turn time as the timer may use it: past one hour (older rows) it is clamped, so setTimeout never overflows. */
export function turnTimeSec(stored: unknown): number {
  if (typeof stored !== 'number' || !Number.isFinite(stored) || stored <= 0) return 30;
  return Math.min(stored, MAX_TURN_TIME_SEC);
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
  record: TableRecord;
  private seats = new Map<number, Seat>();
  private positions: Positions | null = null;
  private hand: HandState | null = null;
  private handNumber = 0;
  private handStartedAt = 0;
  private turnTimer: NodeJS.Timeout | null = null;
  private turnDeadline: number | null = null;
  private nextDeal: NodeJS.Timeout | null = null;
  /** A complete hand whose end could not be written yet, and the timer of its next attempt. */
  private finishRetry: NodeJS.Timeout | null = null;
  private finishAttempts = 0;
  private busy: Promise<void> = Promise.resolve();
  private closed = false;
  /** The connections at the table (added and removed by the websocket server). */
  readonly watchers: Set<Watcher> = new Watchers(() => this.watchersChanged());
  /** Actions applied in this hand and the last one (`handId:seat:seq` → the action): the same one resent is acknowledged, not applied. */
  private applied = new Map<string, string>();
  private previousApplied = new Map<string, string>();
  private pendingSits: PendingSit[] = [];

  private readonly deps: RoomDeps;

  constructor(record: TableRecord, deps: RoomDeps) {
    this.deps = deps;
    this.tableId = record.table_id;
    this.record = record;
    const stored = record.settings.turnTimeSec;
    if (typeof stored === 'number' && stored > MAX_TURN_TIME_SEC) {
      deps.log.warn({ tableId: record.table_id, turnTimeSec: stored }, `stored turnTimeSec above ${MAX_TURN_TIME_SEC}: clamped`);
      this.record = { ...record, settings: { ...record.settings, turnTimeSec: MAX_TURN_TIME_SEC } };
    }
  }


  /** The stored tournament settings of an SnG table (null: a cash table). */
  get sng(): StoredSng | null {
    return this.record.mode === 'sng' ? storedSng(this.record.settings) : null;
  }

  get settings() {
    const s = this.record.settings;
    const sng = this.sng;
    if (sng) {
      // the blinds of the current level (read again before each deal), no rake, the action timeout
      const level = levelOf(sng, this.tournament?.current_level ?? 0);
      return {
        smallBlind: level.smallBlind, bigBlind: level.bigBlind, ante: level.ante, turnMs: actionMs(sng), turnTimerEnabled: true,
        rake: { percent: 0, cap: 0n, minPot: 0n, requiresFlop: true },
        deckSeed: typeof s.deckSeed === 'string' ? s.deckSeed : null, hostedOnly: false, showHands: false,
      };
    }
    return {
      smallBlind: big(s.smallBlind), bigBlind: big(s.bigBlind, 2n), ante: big(s.ante),
      turnMs: turnTimeSec(s.turnTimeSec) * 1000,
      turnTimerEnabled: s.turnTimerEnabled !== false,
      rake: {
        percent: typeof s.rakePercent === 'number' ? s.rakePercent : 0,
        cap: big(s.rakeCap), minPot: big(s.rakeMinPot), requiresFlop: s.rakeRequiresFlop !== false,
      },
      deckSeed: typeof s.deckSeed === 'string' ? s.deckSeed : null,
      hostedOnly: s.hostedOnly === true,
      showHands: s.showHands === true,
    };
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

  /** Steps queued or running. */
  private steps = 0;

  /**
   * Nothing holds the room: nobody watches, no hand is dealt, no sit or stand-up waits, no step is
   * queued or running. The websocket server unloads a room idle long enough (ROOM_IDLE_UNLOAD_SECONDS).
   */
  get idle(): boolean {
    return this.watchers.size === 0 && this.hand === null && this.steps === 0 && this.pendingSits.length === 0
      && ![...this.seats.values()].some((s) => s.leaveAfterHand);
  }

  /** Loads the room: a hand left by a stopped process is abandoned (its start stacks stand). */
  async open(): Promise<void> {
    if (this.record.current_hand_id) {
      const hand = await this.deps.hands.abandon(this.tableId);
      this.deps.log.warn({ tableId: this.tableId, handId: hand }, 'hand abandoned after a restart: the stacks of its start stand');
    }
    const { rows } = await this.deps.pool.query<{ n: string }>('select count(*) as n from game.hand_histories where table_id = $1', [this.tableId]);
    this.handNumber = Number(rows[0]?.n ?? 0);
    await this.reloadSeats();
    this.scheduleDeal();
  }

  close(): void {
    this.closed = true;
    if (this.turnTimer) clearTimeout(this.turnTimer);
    if (this.nextDeal) clearTimeout(this.nextDeal);
    if (this.finishRetry) clearTimeout(this.finishRetry);
    for (const p of this.pendingSits.splice(0)) p.done({ status: 503, body: { error: 'table_closed' } });
  }

  /** Seats changed in the database (funded, topped up, stood up, settled): read them again. */
  refresh(): Promise<void> {
    return this.serial(async () => {
      if (this.hand) return; // seats cannot change while a hand holds the table; its end re-reads them
      await this.reloadSeats();
      // a tournament catches up what its notices would have announced (one missed while away)
      if (this.record.mode === 'sng') await this.catchUp();
      this.broadcastState();
      this.scheduleDeal();
    });
  }

  private async reloadSeats(): Promise<void> {
    const rows = this.record.mode === 'sng' ? await this.readTournament() : (await this.deps.pool.query<SeatRow>(
      `select id::text, user_id, agent_id, seat_index, chip_balance::text, status, sat_out_at is not null as sat_out from game.table_players
        where table_id = $1 and status = 'seated' order by seat_index`,
      [this.tableId],
    )).rows;
    const running = this.positions !== null;
    const next = new Map<number, Seat>();
    for (const r of rows) {
      const known = this.seats.get(r.seat_index);
      const same = known && known.positionId === r.id;
      const seat: Seat = same ? { ...known, agentId: r.agent_id, stack: BigInt(r.chip_balance) } : {
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
    return stateWriter({ tableId: this.tableId, smallBlind: st.smallBlind, bigBlind: st.bigBlind, ante: st.ante }, this.views(), this.hand, this.turnDeadline, this.tournamentState());
  }

  // ---- tournament ----------------------------------------------------------------------------

  /** The lifecycle row of an SnG table, as last read (null on a cash table). */
  private tournament: TournamentRow | null = null;

  /** The tournament's state as the room last read it (null on a cash table). */
  get tournamentPhase(): string | null {
    return this.tournament?.tournament_state ?? null;
  }
  /** Turns of this hand that timed out (auto-folds), written with its end. */
  private autoFolds = 0;

  /**
   * A tournament's lifecycle row and its seats in one query: its registrants (their stacks are
   * tournament chips; chip_balance is the entry claim), the row repeated on each (one row with no
   * seat when nobody registered).
   */
  private async readTournament(): Promise<SeatRow[]> {
    const { rows } = await this.deps.pool.query<TournamentRow & Partial<SeatRow>>(
      `select t.tournament_state, t.current_level, t.level_started_at, t.starts_at, t.play_started_at, t.closed_at,
              t.announced_state, t.announced_level, t.announced_payouts,
              (select count(*)::integer from game.table_players q where q.table_id = t.table_id and q.status <> 'closed') as registered_count,
              (select count(*)::integer from game.table_players q
                where q.table_id = t.table_id and q.entry_state = 'paid' and q.tournament_stack > 0) as alive_count,
              p.id::text as id, p.user_id, p.agent_id, p.seat_index, coalesce(p.tournament_stack, 0)::text as chip_balance, p.status
         from game.tables t
         left join game.table_players p on p.table_id = t.table_id and p.status = 'seated' and p.entry_state is not null
        where t.table_id = $1 order by p.seat_index`,
      [this.tableId],
    );
    this.tournament = rows[0] ?? null;
    // what the rooms before this one announced (a restart, another process): not announced again
    if (!this.announcedLoaded && this.tournament) {
      this.announcedLoaded = true;
      const t = this.tournament as TournamentRow & { announced_state: string | null; announced_level: number | null; announced_payouts: number[] };
      if (t.announced_state) {
        this.announced = {
          state: t.announced_state, level: t.announced_level, ended: LIFECYCLE.indexOf(t.announced_state) >= LIFECYCLE.indexOf('settling'),
        };
      }
      for (const position of t.announced_payouts ?? []) this.announcedPayouts.add(position);
    }
    return rows.filter((r): r is TournamentRow & SeatRow => r.id !== null && r.id !== undefined);
  }

  /** game_state's tournament fields (absent in cash mode). */
  private tournamentState(): TournamentState | undefined {
    const sng = this.sng;
    if (!sng || !this.tournament) return undefined;
    const wire = tournamentWire(sng, this.tournament);
    const level = levelOf(sng, this.tournament.current_level ?? 0);
    // stacks as of the hand's start (between hands: as they stand)
    const stackOf = (seat: number) => this.seats.get(seat)?.stack ?? 0n;
    const alive = [...this.seats.values()].map((s) => stackOf(s.seat)).filter((x) => x > 0n);
    return {
      shared: wire,
      mine: (seat) => {
        if (seat === null || this.tournament?.tournament_state !== 'playing') return null;
        const stack = stackOf(seat);
        return stack > 0n ? myView(sng, level, alive, stack) : null;
      },
    };
  }

  /**
   * What this room last told its connections of the lifecycle (a replayed or stale notice repeats
   * nothing); registering is a tournament's birth state, never a move to announce.
   */
  private announced: { state: string; level: number | null; ended: boolean } = { state: 'registering', level: null, ended: false };
  private announcedLoaded = false;

  /**
   * A lifecycle notice of this table (the SQL's NOTIFY game_tournament), relayed to the room's
   * connections. The notice is only a trigger: the room re-reads its lifecycle row and seats and
   * announces what the database holds (so nothing a notice carries reaches a client unchecked, and a
   * repeated or stale notice announces nothing), then deals once the tournament plays. A force-end
   * abandoned the hand in flight (its start stacks stand): dropped here.
   */
  tournamentEvent(event: Record<string, unknown>): Promise<void> {
    return new Promise((resolve, reject) => {
      this.serial(async () => {
        if (this.closed || this.record.mode !== 'sng') return resolve();
        if (this.hand) await this.readTournament();
        if (this.tournament?.tournament_state !== 'playing' && this.hand?.status === 'betting') this.dropHand();
        if (!this.hand) await this.reloadSeats();
        // a payout is announced from the payout rows, after the moves before it (settling, the
        // standings): never ahead of them
        const messages = event.type === 'tournament_payout_settled'
          ? [...(await this.announcements('tournament_state_changed', 'settling')), ...(await this.pendingPayouts())]
          : await this.announcements(event.type, event.state);
        await this.publish(messages);
        this.broadcastState();
        this.scheduleDeal();
        resolve();
      }).catch(reject);
    });
  }

  /** The lifecycle moves the database made that this room has not announced yet, announced now. */
  private async catchUp(): Promise<void> {
    const messages = [
      ...(await this.announcements('tournament_state_changed', null)),
      ...(await this.announcements('blind_level_changed', null)),
      ...(await this.announcements('tournament_ended', null)),
    ];
    await this.publish(messages);
  }

  /**
   * Lifecycle messages sent to the room's connections, then recorded as announced (so the room that
   * runs the table next announces none of them again); the tournament's span follows the moves.
   */
  private async publish(messages: Announcement[]): Promise<void> {
    if (messages.length === 0) return;
    for (const m of messages) {
      const json = toJson({ ...m, tableId: this.tableId } satisfies ServerMessageOf<Announcement['type']>);
      for (const w of this.watchers) w.send(json);
    }
    await this.deps.pool.query('select game.record_tournament_announced($1, $2, $3, $4)', [
      this.tableId, this.announced.state, this.announced.level, [...this.announcedPayouts],
    ]).catch((err: Error) => this.deps.log.warn({ tableId: this.tableId, err: err.message }, 'announcements not recorded'));
    const states = messages.flatMap((m) => (m.type === 'tournament_state_changed' ? [m.state] : []));
    if (states.length) await this.deps.lifecycleStates?.(states);
  }

  private dropHand(): void {
    if (this.turnTimer) clearTimeout(this.turnTimer);
    this.turnTimer = null;
    this.turnDeadline = null;
    this.hand = null;
    this.autoFolds = 0;
  }

  /**
   * The lifecycle messages the database's state calls for, given what was announced already: every
   * move in order (none skipped, also when notices were missed or the room was away), the final
   * standings right after `settling`, every confirmed payout before `closed`, and every level reached.
   */
  private async announcements(type: unknown, claimed: unknown): Promise<Announcement[]> {
    const t = this.tournament;
    if (!t) return [];
    const out: Announcement[] = [];
    const ms = (d: Date | null) => (d ? d.getTime() : null);
    // the state the notice names, when the database has reached it (a fast worker may be further on
    // already); otherwise the database's own
    const order = (x: unknown) => LIFECYCLE.indexOf(x as string);
    const target = order(claimed) >= 0 && order(claimed) <= order(t.tournament_state) ? String(claimed) : t.tournament_state;
    if (type === 'tournament_state_changed') {
      for (let i = order(this.announced.state) + 1; i <= order(target); i++) {
        const state = LIFECYCLE_STATES[i] as Exclude<LifecycleState, 'registering'>; // i >= 1: registering is never a move
        // a level reached while playing is announced before the play ends
        if (state === 'ended' && this.announced.state === 'playing') out.push(...this.levelAnnouncements());
        if (state === 'closed') out.push(...(await this.pendingPayouts()));
        this.announced.state = state;
        const moved = 'tournament_state_changed' as const;
        out.push(
          state === 'starting' ? { type: moved, state, startsAt: ms(t.starts_at) }
          : state === 'playing' ? { type: moved, state, currentLevel: 0, levelStartedAt: ms(t.play_started_at) }
          : state === 'ended' ? { type: moved, state, forced: t.alive_count > 1 }
          : state === 'closed' ? { type: moved, state, closedAt: ms(t.closed_at) }
          : { type: moved, state },
        );
        if (state === 'playing') this.announced.level = Math.max(this.announced.level ?? 0, 0);
        if (state === 'settling' && !this.announced.ended) {
          this.announced.ended = true;
          out.push({ type: 'tournament_ended', ...(await this.standings()) });
        }
      }
    }
    if (type === 'blind_level_changed' && t.tournament_state === 'playing') out.push(...this.levelAnnouncements());
    if (type === 'tournament_ended' && !this.announced.ended && order(this.announced.state) >= order('settling')) {
      this.announced.ended = true;
      out.push({ type: 'tournament_ended', ...(await this.standings()) });
    }
    return out;
  }

  /** Every level the tournament reached that was not announced yet, in order (each with the time it began). */
  private levelAnnouncements(): Announcement[] {
    const t = this.tournament;
    if (!t || t.current_level === null || this.announced.state !== 'playing') return [];
    const out: Announcement[] = [];
    const duration = levelMs(this.sng!);
    const current = t.current_level;
    for (let level = (this.announced.level ?? 0) + 1; level <= current; level++) {
      const startedAt = t.level_started_at ? t.level_started_at.getTime() - (current - level) * duration : null;
      const l = levelOf(this.sng!, level);
      out.push({
        type: 'blind_level_changed', currentLevel: level, levelStartedAt: startedAt,
        smallBlind: l.smallBlind.toString(), bigBlind: l.bigBlind.toString(), ...(l.ante > 0n ? { ante: l.ante.toString() } : {}),
        levelEndsAt: startedAt === null ? null : startedAt + duration,
      });
      this.announced.level = level;
    }
    return out;
  }

  /**
   * The confirmed payouts this room has not announced, in place order: each once, from its row,
   * whether its confirmation call (/internal/payout-confirmed) came or is still on its way.
   */
  private async pendingPayouts(): Promise<Announcement[]> {
    const { rows } = await this.deps.pool.query<{ position: number; user_id: string; amount: bigint; tx_hash: string }>(
      'select position, user_id, amount, tx_hash from game.tournament_payouts($1) where confirmed_at is not null order by position', [this.tableId],
    );
    const out: Announcement[] = [];
    for (const r of rows) {
      if (this.announcedPayouts.has(r.position)) continue;
      this.announcedPayouts.add(r.position);
      out.push({ type: 'tournament_payout_settled', position: r.position, userId: r.user_id, amount: String(r.amount), txHash: r.tx_hash });
    }
    return out;
  }

  /** The final standings and the payouts, as settlement wrote them. */
  private async standings() {
    const [{ rows: finalStandings }, { rows: payouts }] = await Promise.all([
      this.deps.pool.query(
        `select elimination_order as position, user_id as "userId", agent_id as "agentId", tie_place as "tiedFrom"
           from game.table_players where table_id = $1 and entry_state = 'paid' and closing_ref_id = 'tournament:' || $1
          order by elimination_order`, [this.tableId]),
      this.deps.pool.query(`select position, user_id as "userId", amount::text from game.tournament_payouts($1)`, [this.tableId]),
    ]);
    return { finalStandings, payouts };
  }

  /** The places whose payout this room announced. */
  private readonly announcedPayouts = new Set<number>();

  /**
   * A tournament hand's end: the tournament stacks written, its busts placed (game.finish_tournament_hand);
   * then, in this order, `player_eliminated` for each bust, a fresh `game_state`, `hand_result`.
   */
  private async finishTournament(hand: HandState): Promise<void> {
    const stacks: Record<string, bigint> = {};
    for (const p of hand.players) stacks[p.playerId] = p.stack;
    let end: Awaited<ReturnType<RoomDeps['hands']['finishTournament']>>;
    try {
      end = await this.deps.hands.finishTournament(this.tableId, hand.handId, stacks, this.autoFolds);
      this.finishAttempts = 0;
    } catch (err) {
      // the lease is gone (the room stops), or a force-end abandoned this hand (its start stacks stand)
      if (isLeaseLost(err)) {
        this.hand = null;
        throw err;
      }
      if (!refusedWith(err, 'game', 'no_hand_in_progress')) return this.retryFinish(hand, err);
      this.hand = null;
      await this.reloadSeats();
      return;
    }
    this.autoFolds = 0;
    await this.recordHand(hand);
    const result = toJson(handResult(this.tableId, hand.handId, hand.result!, this.views()));
    this.hand = null;
    const remaining = hand.players.length - end.busted.length;
    for (const b of end.busted) {
      const message = toJson({
        type: 'player_eliminated', tableId: this.tableId, handId: hand.handId, userId: b.userId, seatIndex: b.seat, position: b.place, tiedFrom: b.tiePlace, remaining,
      } satisfies ServerMessageOf<'player_eliminated'>);
      for (const w of this.watchers) w.send(message);
    }
    await this.reloadSeats();
    this.broadcastState();
    for (const w of this.watchers) w.send(result);
    this.scheduleDeal();
  }

  private viewOf(write: ReturnType<typeof stateWriter>, w: Watcher): string {
    const seat = this.seatOf(w.userId);
    const st = this.record.settings;
    return write({ seat, seesAllCards: seat === null && st.hostedOnly === true && st.showHands === true });
  }

  // ---- dealing -------------------------------------------------------------------------------

  /**
   * The next hand, dealt only to players watching the room: a funded seat whose user (or agent) has
   * no connection at the table is out of this deal as if sat out, but counts no timeout and starts
   * no idle clock (a restarted room waits for its players instead of dealing to nobody). A tournament
   * deals to every seat: an absent player is blinded away by the timer (docs/dealer.md).
   */
  private plan() {
    if (this.record.mode === 'sng') {
      return this.tournament?.tournament_state === 'playing' ? nextHand([...this.seats.values()], this.positions) : null;
    }
    const watching = new Set<string | null>();
    for (const w of this.watchers) watching.add(w.userId);
    return nextHand([...this.seats.values()].map((s) => (watching.has(s.userId) ? s : { ...s, sittingOut: true })), this.positions);
  }

  /** A connection joined or left: a player who connects may complete the two a deal needs. */
  private watchersChanged(): void {
    this.scheduleDeal();
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
    const handId = `${this.tableId}:${this.handNumber + 1}:${randomUUID().slice(0, 8)}`;
    try {
      await this.deps.hands.begin(this.tableId, handId);
    } catch (err) {
      this.deps.log.warn({ tableId: this.tableId, err: (err as Error).message }, 'hand not started');
      return;
    }
    // the table is ours now: no seat changes until the hand ends; read the seats as they stand (a
    // tournament: its level too, and any move a missed notice did not announce)
    await this.reloadSeats();
    if (this.record.mode === 'sng') await this.catchUp();
    const plan = this.plan();
    if (!plan) {
      // nobody left to deal to (they stood up or disconnected meanwhile): no hand, none recorded
      await this.deps.hands.release(this.tableId, handId);
      return;
    }
    const st = this.settings;
    this.handNumber += 1;
    const deck = st.deckSeed ? shuffledDeck(`${st.deckSeed}:${this.handNumber}`) : randomDeck(randomBytes(32));
    const hand = startHand({
      handId, seats: plan.seats, button: plan.button, smallBlindSeat: plan.smallBlindSeat, bigBlindSeat: plan.bigBlindSeat,
      smallBlind: st.smallBlind, bigBlind: st.bigBlind, ante: st.ante, deck, rake: st.rake,
    });
    this.positions = plan.positions;
    this.hand = hand;
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
      await this.finish(hand);
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
    // a tournament has no sit-out: an absent player stays dealt in and times out (an auto-fold)
    if (this.record.mode === 'sng') this.autoFolds += 1;
    else if (seat) {
      seat.timeouts += 1;
      if (seat.timeouts >= this.deps.options.timeoutsBeforeSitOut && !seat.sittingOut) {
        this.seats.set(seat.seat, { ...sitOut([seat], seat.seat)[0]!, ...{ positionId: seat.positionId, userId: seat.userId, agentId: seat.agentId, timeouts: seat.timeouts, leaveAfterHand: seat.leaveAfterHand } } as Seat);
        this.recordSitOut(seat.userId, true);
        this.deps.log.info({ tableId: this.tableId, userId: seat.userId }, 'player sat out after timeouts');
      }
    }
    await this.afterStep();
  }

  /** The hand's history and result, stored (best effort: a failure is logged). */
  private async recordHand(hand: HandState): Promise<void> {
    const agents = hand.players.map((p) => this.seats.get(p.seat)?.agentId).filter((a): a is string => Boolean(a));
    await this.deps.pool.query('select game.record_hand($1, $2, $3, $4, $5::jsonb, $6::jsonb, $7::uuid[], $8::timestamptz)', [
      this.tableId, hand.handId, this.handNumber, 'finished', JSON.stringify(historyJson(hand.history)),
      toJson(handResult(this.tableId, hand.handId, hand.result!, this.views())), agents, new Date(this.handStartedAt).toISOString(),
    ]).catch((err) => this.deps.log.error({ err, handId: hand.handId }, 'hand history not stored'));
  }

  private async finish(hand: HandState): Promise<void> {
    if (this.record.mode === 'sng') return this.finishTournament(hand);
    const result = hand.result!;
    const stacks: Record<string, bigint> = {};
    for (const p of hand.players) stacks[p.playerId] = p.stack;
    const end = await this.writeEnd(hand, stacks);
    if (!end) return;
    await this.recordHand(hand);
    const message = toJson(handResult(this.tableId, hand.handId, result, this.views()));
    for (const w of this.watchers) w.send(message);
    this.deps.log.debug({ tableId: this.tableId, handId: hand.handId, busted: end.busted.length, rake: result.rake.toString(), ms: Date.now() - this.handStartedAt }, 'hand finished');

    const leaving = [...this.seats.values()].filter((s) => s.leaveAfterHand);
    this.hand = null;
    await this.reloadSeats();
    for (const s of leaving) await this.standUpAfterHand(s.userId);
    if (leaving.length) await this.reloadSeats();
    await this.kickIdle();
    await this.seatPending();
    this.broadcastState();
    this.scheduleDeal();
  }

  /**
   * Writes the hand's end. A failure that is not the fence's (the database unreachable, a lock
   * timeout) leaves the hand complete in the room and the table held, and the write is tried again
   * with backoff (1 s doubling to 30 s): the stacks the hand ended with are the ones written, never
   * the start's. When an earlier attempt did commit and only its answer was lost, the table no
   * longer holds the hand (`no_hand_in_progress`) and that commit is the end. Null while it waits.
   */
  private async writeEnd(hand: HandState, stacks: Record<string, bigint>): Promise<HandEnd | null> {
    try {
      const end = await this.deps.hands.finish(this.tableId, hand.handId, stacks, hand.result!.rake);
      this.finishAttempts = 0;
      return end;
    } catch (err) {
      if (isLeaseLost(err)) throw err;
      if (this.finishAttempts > 0 && refusedWith(err, 'game', 'no_hand_in_progress')) {
        this.finishAttempts = 0;
        return { busted: [] }; // busts left unsettled are settled when their seat is next touched
      }
      this.retryFinish(hand, err);
      return null;
    }
  }

  /** A hand end not written: tried again with backoff (1 s doubling to 30 s), the table held meanwhile. */
  private retryFinish(hand: HandState, err: unknown): void {
    this.finishAttempts += 1;
    const delayMs = Math.min(30_000, 1000 * 2 ** (this.finishAttempts - 1));
    this.deps.log.error({ err, tableId: this.tableId, handId: hand.handId, attempt: this.finishAttempts, retryInMs: delayMs }, 'hand end not written: retrying');
    if (this.closed) return;
    this.finishRetry = setTimeout(() => {
      this.finishRetry = null;
      this.serial(async () => {
        if (this.hand === hand) await this.finish(hand);
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
    for (const w of this.watchers) if (w.userId === userId) w.send(message);
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
   * anyone else, so the room asks it rather than its own clock.
   */
  private async kickIdle(): Promise<void> {
    await this.sitOutWrites;
    const idle = [...this.seats.values()].some((s) => s.sittingOut) ? await this.deps.hands.idle(this.tableId) : [];
    for (const userId of idle) {
      this.deps.log.info({ tableId: this.tableId, userId }, 'idle player removed (forced withdraw)');
      await this.deps.forcedWithdraw(userId).catch((err) => this.deps.log.warn({ err: (err as Error).message, userId }, 'idle kick failed'));
    }
    await this.reloadSeats();
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
    return new Promise((resolve, reject) => {
      this.serial(async () => {
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
      }).catch(reject);
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
    return new Promise((resolve, reject) => {
      this.serial(async () => {
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
      }).catch(reject);
    });
  }
}
