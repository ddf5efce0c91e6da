// A Sit-and-Go table: the blinds of its current level, no rake, the action timeout; it deals to every
// registrant still alive while the tournament plays (an absent player is blinded away by the timer);
// a hand's end places its busts; and it turns the lifecycle the database records into the messages
// the room sends, each once (a repeated or stale notice announces nothing, a missed one is caught up).
import type pg from 'pg';
import type { Logger } from 'pino';
import { nextHand, type Positions } from '../poker/table.ts';
import type { createHands } from '../hands/hands.ts';
import { toJson, type ServerMessageOf, type TournamentState } from './wire.ts';
import { LIFECYCLE_STATES, levelOf, myView, storedSng, tournamentWire, type LifecycleState, type StoredSng, type TournamentRow } from '../../tournaments/lifecycle.ts';
import { endingOf, type Announcement, type EndedHand, type EndOutcome, type HandSettings, type Seat, type SeatRow, type TableKind } from './table-kind.ts';
import type { SealedDeal } from './deal-seeds.ts';

const LIFECYCLE: readonly string[] = LIFECYCLE_STATES;
const order = (x: unknown) => LIFECYCLE.indexOf(x as string);
const ms = (d: Date | null) => (d ? d.getTime() : null);

interface LifecycleRow extends TournamentRow {
  announced_state: string | null;
  announced_level: number | null;
  announced_payouts: number[] | null;
}

export class TournamentTable implements TableKind {
  private readonly tableId: string;
  private readonly sng: StoredSng;
  private readonly deckSeed: string | null;
  private readonly pool: pg.Pool;
  private readonly hands: ReturnType<typeof createHands>;
  private readonly log: Logger;
  /** The lifecycle row, as last read. */
  private row: TournamentRow | null = null;
  /** Turns of this hand that timed out (auto-folds), written with its end. */
  private autoFolds = 0;
  /**
   * What this table last announced of the lifecycle (a replayed or stale notice repeats nothing);
   * registering is a tournament's birth state, never a move to announce.
   */
  private said: { state: string; level: number | null; ended: boolean } = { state: 'registering', level: null, ended: false };
  private saidLoaded = false;
  /** The places whose payout was announced. */
  private readonly saidPayouts = new Set<number>();

  constructor(tableId: string, settings: Record<string, unknown>, deps: { pool: pg.Pool; hands: ReturnType<typeof createHands>; log: Logger }) {
    this.tableId = tableId;
    this.sng = storedSng(settings);
    this.deckSeed = typeof settings.deckSeed === 'string' ? settings.deckSeed : null;
    this.pool = deps.pool;
    this.hands = deps.hands;
    this.log = deps.log;
  }

  get phase(): string | null {
    return this.row?.tournament_state ?? null;
  }

  /** The blinds of the current level (read again before each deal), no rake, the action timeout. */
  settings(): HandSettings {
    const level = levelOf(this.sng, this.row?.current_level ?? 0);
    return {
      smallBlind: level.smallBlind, bigBlind: level.bigBlind, ante: level.ante, turnMs: this.row?.action_ms ?? this.sng.actionTimeoutSeconds * 1000, turnTimerEnabled: true,
      rake: { percent: 0, cap: 0n, minPot: 0n, requiresFlop: true },
      deckSeed: this.deckSeed, hostedOnly: false, showHands: false,
    };
  }

  async readSeats(): Promise<SeatRow[]> {
    const [seats] = await Promise.all([this.hands.seats(this.tableId), this.refreshLifecycle()]);
    return seats;
  }

  async deal(handId: string, deals: { deal: SealedDeal; next: SealedDeal }): Promise<SeatRow[]> {
    const seats = await this.hands.deal(this.tableId, handId, deals);
    await this.refreshLifecycle();
    return seats;
  }

  /**
   * The lifecycle row (with its registrant counts). The first read also learns what the rooms
   * before this one announced (a restart, another process): not announced again.
   */
  async refreshLifecycle(): Promise<void> {
    const { rows } = await this.pool.query<LifecycleRow>(
      `select tournament_state, current_level, level_started_at, starts_at, play_started_at, closed_at,
              announced_state, announced_level, announced_payouts, registered_count, alive_count, level_ms, action_ms, place_amounts
         from game.tournaments where table_id = $1`,
      [this.tableId],
    );
    const row = rows[0];
    this.row = row ?? null;
    if (this.saidLoaded || !row) return;
    this.saidLoaded = true;
    if (row.announced_state) {
      this.said = { state: row.announced_state, level: row.announced_level, ended: order(row.announced_state) >= order('settling') };
    }
    for (const position of row.announced_payouts ?? []) this.saidPayouts.add(position);
  }

  /** Every registrant still alive, while the tournament plays; an absent one is blinded away by the timer. */
  plan(seats: readonly Seat[], positions: Positions | null) {
    return this.row?.tournament_state === 'playing' ? nextHand(seats, positions) : null;
  }

  /** A tournament has no sit-out: an absent player stays dealt in and times out (an auto-fold). */
  turnExpired(): boolean {
    this.autoFolds += 1;
    return false;
  }

  /** game_state's tournament fields: stacks as of the hand's start (between hands: as they stand). */
  tournamentState(seats: readonly Seat[]): TournamentState | undefined {
    const t = this.row;
    if (!t) return undefined;
    const level = levelOf(this.sng, t.current_level ?? 0);
    const stackOf = new Map(seats.map((s) => [s.seat, s.stack]));
    const alive = seats.map((s) => s.stack).filter((x) => x > 0n);
    return {
      shared: tournamentWire(this.sng, t),
      mine: (seat) => {
        if (seat === null || this.row?.tournament_state !== 'playing') return null;
        const stack = stackOf.get(seat) ?? 0n;
        return stack > 0n ? myView(t, level, alive, stack) : null;
      },
    };
  }

  /**
   * The hand's end: the tournament stacks, the auto-folds, the places and the history in one
   * transaction; then `player_eliminated` for each bust, and `hand_result` after the fresh game_state.
   */
  async endHand(ended: EndedHand): Promise<EndOutcome> {
    const { hand } = ended;
    const { ending, result } = endingOf(this.tableId, ended, { rake: 0n, autoFolds: this.autoFolds });
    const answer = await this.hands.end(ending);
    this.autoFolds = 0;
    const remaining = hand.players.length - answer.busted.length;
    const eliminated = answer.busted.map((b) => toJson({
      type: 'player_eliminated', tableId: this.tableId, handId: hand.handId, userId: b.userId, seatIndex: b.seat,
      position: b.place!, tiedFrom: b.tiePlace!, remaining,
    } satisfies ServerMessageOf<'player_eliminated'>));
    return { answer, before: eliminated, after: [result] };
  }

  /** A hand dropped (a force-end abandoned it): its auto-folds are not counted. */
  handDropped(): void {
    this.autoFolds = 0;
  }

  /** The lifecycle moves the database made that were not announced yet. */
  async catchUp(): Promise<Announcement[]> {
    return [
      ...(await this.announcements('tournament_state_changed', null)),
      ...(await this.announcements('blind_level_changed', null)),
      ...(await this.announcements('tournament_ended', null)),
    ];
  }

  /**
   * A lifecycle notice (the SQL's NOTIFY game_tournament) is only a trigger: what it calls for is
   * read from the database. A payout is announced from the payout rows, after the moves before it
   * (settling, the standings): never ahead of them.
   */
  async notice(event: Record<string, unknown>): Promise<Announcement[]> {
    return event.type === 'tournament_payout_settled'
      ? [...(await this.announcements('tournament_state_changed', 'settling')), ...(await this.pendingPayouts())]
      : this.announcements(event.type, event.state);
  }

  async announced(): Promise<void> {
    await this.pool.query('select game.record_tournament_announced($1, $2, $3, $4)', [
      this.tableId, this.said.state, this.said.level, [...this.saidPayouts],
    ]).catch((err: Error) => this.log.warn({ tableId: this.tableId, err: err.message }, 'announcements not recorded'));
  }

  /**
   * The lifecycle messages the database's state calls for, given what was announced already: every
   * move in order (none skipped, also when notices were missed or the room was away), the final
   * standings right after `settling`, every confirmed payout before `closed`, and every level reached.
   */
  private async announcements(type: unknown, claimed: unknown): Promise<Announcement[]> {
    const t = this.row;
    if (!t) return [];
    const out: Announcement[] = [];
    if (type === 'tournament_state_changed') {
      // the state the notice names, when the database has reached it (a fast worker may be further
      // on already); otherwise the database's own
      const target = order(claimed) >= 0 && order(claimed) <= order(t.tournament_state) ? String(claimed) : t.tournament_state;
      for (let i = order(this.said.state) + 1; i <= order(target); i++) out.push(...(await this.move(LIFECYCLE_STATES[i] as Exclude<LifecycleState, 'registering'>, t)));
    }
    if (type === 'blind_level_changed' && t.tournament_state === 'playing') out.push(...this.levelAnnouncements());
    if (type === 'tournament_ended' && !this.said.ended && order(this.said.state) >= order('settling')) {
      this.said.ended = true;
      out.push({ type: 'tournament_ended', ...(await this.standings()) });
    }
    return out;
  }

  /** One lifecycle move, announced: what comes before it (levels, payouts), itself, and the standings after `settling`. */
  private async move(state: Exclude<LifecycleState, 'registering'>, t: TournamentRow): Promise<Announcement[]> {
    const out: Announcement[] = [];
    // a level reached while playing is announced before the play ends
    if (state === 'ended' && this.said.state === 'playing') out.push(...this.levelAnnouncements());
    if (state === 'closed') out.push(...(await this.pendingPayouts()));
    this.said.state = state;
    const moved = 'tournament_state_changed' as const;
    out.push(
      state === 'starting' ? { type: moved, state, startsAt: ms(t.starts_at) }
      : state === 'playing' ? { type: moved, state, currentLevel: 0, levelStartedAt: ms(t.play_started_at) }
      : state === 'ended' ? { type: moved, state, forced: t.alive_count > 1 }
      : state === 'closed' ? { type: moved, state, closedAt: ms(t.closed_at) }
      : { type: moved, state },
    );
    if (state === 'playing') this.said.level = Math.max(this.said.level ?? 0, 0);
    if (state === 'settling' && !this.said.ended) {
      this.said.ended = true;
      out.push({ type: 'tournament_ended', ...(await this.standings()) });
    }
    return out;
  }

  /** Every level the tournament reached that was not announced yet, in order (each with the time it began). */
  private levelAnnouncements(): Announcement[] {
    const t = this.row;
    if (!t || t.current_level === null || this.said.state !== 'playing') return [];
    const out: Announcement[] = [];
    const duration = t.level_ms;
    const current = t.current_level;
    for (let level = (this.said.level ?? 0) + 1; level <= current; level++) {
      const startedAt = t.level_started_at ? t.level_started_at.getTime() - (current - level) * duration : null;
      const l = levelOf(this.sng, level);
      out.push({
        type: 'blind_level_changed', currentLevel: level, levelStartedAt: startedAt,
        smallBlind: l.smallBlind.toString(), bigBlind: l.bigBlind.toString(), ...(l.ante > 0n ? { ante: l.ante.toString() } : {}),
        levelEndsAt: startedAt === null ? null : startedAt + duration,
      });
      this.said.level = level;
    }
    return out;
  }

  /**
   * The confirmed payouts not announced yet, in place order: each once, from its row, whether its
   * confirmation call (/internal/payout-confirmed) came or is still on its way.
   */
  private async pendingPayouts(): Promise<Announcement[]> {
    const { rows } = await this.pool.query<{ position: number; user_id: string; amount: bigint; tx_hash: string }>(
      'select position, user_id, amount, tx_hash from game.tournament_payouts($1) where confirmed_at is not null order by position', [this.tableId],
    );
    const out: Announcement[] = [];
    for (const r of rows) {
      if (this.saidPayouts.has(r.position)) continue;
      this.saidPayouts.add(r.position);
      out.push({ type: 'tournament_payout_settled', position: r.position, userId: r.user_id, amount: String(r.amount), txHash: r.tx_hash });
    }
    return out;
  }

  /** The final standings and the payouts, as settlement wrote them. */
  private async standings() {
    const [{ rows: finalStandings }, { rows: payouts }] = await Promise.all([
      this.pool.query(
        `select elimination_order as position, user_id as "userId", agent_id as "agentId", tie_place as "tiedFrom"
           from game.seats where table_id = $1 and entry_state = 'paid' and in_final_standings order by elimination_order`, [this.tableId]),
      this.pool.query(`select position, user_id as "userId", amount::text from game.tournament_payouts($1)`, [this.tableId]),
    ]);
    return { finalStandings, payouts };
  }
}
