// The rooms this game process runs: each table's room loaded once, under the table's lease (one
// dealer per table, lease.ts), ticked, unloaded when idle long enough (ROOM_IDLE_UNLOAD_SECONDS) or
// when the process stops, and stopped when the lease is lost. The websocket (ws.ts) joins
// connections to them; the cage's seat calls reach them through seatsChanged.
import type pg from 'pg';
import type { Logger } from 'pino';
import type { Ed25519Signer } from '../../crypto/signing.ts';
import type { BankName } from '../../bank-contract/contract.ts';
import type { BankClients } from '../../bank-contract/routing.ts';
import type { ClaimBoard } from '../../claims/board.ts';
import type { createHands } from '../hands/hands.ts';
import type { GameProcess } from './lease.ts';
import { Room, type RoomDeps, type RoomOptions, type TableRecord, type Watcher } from './room.ts';
import { toJson, type ServerMessageOf } from './wire.ts';
import { TournamentSpans } from '../../tournaments/lifecycle-span.ts';

/** How long a stopping room's step in flight may take before its lease is released anyway. */
const ROOM_STEP_GRACE_MS = 5000;

export interface RoomRegistryDeps {
  pool: pg.Pool;
  log: Logger;
  hands: ReturnType<typeof createHands>;
  options: RoomOptions;
  /** Both banks, one client each (server/bank-contract/routing.ts): a table's calls go to its own. */
  banks: BankClients;
  /** This process's presence and table leases: a poker room runs only under its table's lease. */
  process: GameProcess;
  /** A cash room with nothing in it this long unloads (its lease released). */
  idleUnloadMs: number;
  /** The claim board: an agent taking a seat meets `agent_seated` in the seat's transaction. */
  board: ClaimBoard;
  /** The dealer's key: each room signs its hands' records with it. */
  dealer: Ed25519Signer;
}

/** A timer with its own boundary: a failure is logged and the timer goes on (unref'd). */
export function every(log: Logger, ms: number, what: string, work: () => void): NodeJS.Timeout {
  const timer = setInterval(() => {
    try {
      work();
    } catch (err) {
      log.error({ err }, `${what} failed`);
    }
  }, ms);
  timer.unref();
  return timer;
}

const failure = (code: string, extra: Record<string, unknown> = {}) => Object.assign(new Error(code), { code, ...extra });

/** The rooms this process runs: loaded on demand under their table's lease, unloaded when idle or stopped. */
export class RoomRegistry {
  private readonly deps: RoomRegistryDeps;
  private readonly rooms = new Map<string, Promise<Room>>();
  /** Tables whose room is unloading: a load waits for the lease to be released first. */
  private readonly releasing = new Map<string, Promise<void>>();
  /** When each loaded room was first seen idle (no entry: busy, or not seen idle yet). */
  private readonly idleSince = new Map<string, number>();
  private readonly timers: NodeJS.Timeout[];
  /** The tournament.lifecycle spans of the tournaments this process runs. */
  private readonly spans: TournamentSpans;
  stopping = false;

  constructor(deps: RoomRegistryDeps) {
    this.deps = deps;
    const { log } = deps;
    this.spans = new TournamentSpans({ pool: deps.pool, log });
    this.timers = [
      every(log, 5_000, 'room tick', () => {
        for (const r of this.rooms.values()) void r.then((room) => room.tick()).catch((err) => log.error({ err }, 'room tick failed'));
      }),
      every(log, Math.max(100, Math.min(5_000, Math.floor(deps.idleUnloadMs / 4))), 'idle room sweep', () => this.sweepIdle()),
    ];
    // seat changes made by the cage's calls, on whichever game process they landed
    deps.process.onSeatsChanged((tableId) => this.seatsChanged(tableId));
    deps.process.onTournamentEvent((event) => void this.tournamentEvent(event));
  }

  /**
   * A tournament's lifecycle event (NOTIFY game_tournament, from whichever role made the move): the
   * room of the table relays it. A tournament that starts or plays needs its dealer even with nobody
   * watching: its room is loaded here (under the lease: one process of several wins it; the others
   * leave it be).
   */
  tournamentEvent = async (event: Record<string, unknown>): Promise<void> => {
    const tableId = String(event.tableId);
    const live = event.type === 'tournament_state_changed' && (event.state === 'starting' || event.state === 'playing');
    const r = this.rooms.get(tableId) ?? (live && !this.stopping ? this.room(tableId) : undefined);
    if (!r) return;
    try {
      const room = await r;
      await room.tournamentEvent(event);
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code !== 'table_elsewhere') this.deps.log.warn({ err: (err as Error).message, tableId, type: event.type }, 'tournament event not relayed');
    }
  };

  /** At start: the tournaments starting or playing get their rooms (and their dealer) again. */
  resumeTournaments = async (): Promise<string[]> => {
    const { rows } = await this.deps.pool.query<{ table_id: string }>(
      "select table_id from game.tournaments where tournament_state in ('starting', 'playing') order by table_id",
    );
    for (const r of rows) {
      await this.room(r.table_id).catch((err: { code?: string; message: string }) => {
        // another game process runs it: nothing to resume here
        if (err.code !== 'table_elsewhere') this.deps.log.warn({ err: err.message, tableId: r.table_id }, 'tournament room not resumed');
      });
    }
    return rows.map((r) => r.table_id);
  };

  /**
   * A call to the table's own bank (`bank`: game.tables.bank, the room's record), through that
   * bank's client: the player's token forwarded, or the service key for the room's own calls. When
   * the bank cannot answer (refused or reset, no answer within the call timeout, not JSON, a 5xx)
   * the answer is a 503: the spec's `cage_unavailable` from the cage, `chain_bank_unavailable` from
   * the chain bank. The sit is refused within seconds, nothing is assumed.
   */
  bank = async (bank: BankName, path: string, body: unknown, auth: { token?: string | null; service?: boolean }) => {
    const answer = await this.deps.banks[bank].post(path, body, auth.token ? { bearer: auth.token } : {});
    if ('unreachable' in answer) return { status: 503, body: { error: bank === 'cage' ? 'cage_unavailable' : 'chain_bank_unavailable' } as Record<string, unknown> };
    return { status: answer.status, body: answer.body as Record<string, unknown> };
  };

  private async readRecord(tableId: string): Promise<TableRecord | undefined> {
    const { rows } = await this.deps.pool.query<TableRecord>(
      'select table_id, game_type, settings, status, mode, kind, money_kind, current_hand_id, bank from game.table_records where table_id = $1',
      [tableId],
    );
    return rows[0];
  }

  /** One dealer per table: another live process running it keeps it, and the client is sent there. */
  private async lease(tableId: string): Promise<void> {
    const { log } = this.deps;
    const lease = await this.deps.process.take(tableId, () => void this.stopRoom(tableId, 'lease_lost').catch((err) => log.error({ err, tableId }, 'room not stopped')));
    if (!lease.granted) throw failure('table_elsewhere', { url: lease.holderUrl });
    if (lease.recoveredHand) log.warn({ tableId, handId: lease.recoveredHand, epoch: lease.epoch.toString() }, 'hand abandoned when the table was taken over: the stacks of its start stand');
  }

  private async load(tableId: string): Promise<Room> {
    await this.releasing.get(tableId);
    if (this.stopping) throw failure('table_closed');
    let record = await this.readRecord(tableId);
    if (!record) throw failure('table_not_found');
    if (record.game_type === 'poker') {
      await this.lease(tableId);
      record = (await this.readRecord(tableId))!;
    }
    const room = new Room(record, this.roomDeps(tableId, record.bank));
    if (record.game_type === 'poker') {
      await room.open().catch(async (err) => {
        await this.deps.process.release(tableId).catch(() => undefined);
        throw err;
      });
    }
    return room;
  }

  /** What a room of this table calls out to: the claim board, its bank's withdrawals. */
  private roomDeps(tableId: string, bank: BankName): RoomDeps {
    const { pool, log, hands, options, board, dealer } = this.deps;
    return {
      pool, log, hands, options, dealer,
      lifecycleStates: async (states) => {
        for (const state of states) await this.spans.observe(tableId, state);
      },
      agentSeated: async (client, userId, agentId) => {
        await board.markConditionMet(userId, 'agent_seated', `agent_seated:${agentId}:${tableId}`, client);
      },
      forcedWithdraw: async (userId) => {
        const r = await this.bank(bank, '/api/withdraw', { tableId, forced: true, userId }, { service: true });
        if (r.status >= 400 && r.body.error !== 'not_at_table') throw new Error(String(r.body.error ?? r.status));
      },
      standUp: async ({ userId, token }) => {
        const r = token
          ? await this.bank(bank, '/api/withdraw', { tableId }, { token })
          : await this.bank(bank, '/api/withdraw', { tableId, forced: true, userId }, { service: true });
        if (r.status >= 400) log.warn({ tableId, userId, status: r.status, error: r.body.error }, 'stand-up refused by the bank');
        return r;
      },
    };
  }

  /**
   * A room stops while the process goes on: its table's lease was lost (`lease_lost`: another
   * process runs the table now) or it unloads. Its watchers get `table_closed` with the reason and
   * leave it (their connections stay open); joining again finds where the table runs now.
   */
  private async stopRoom(tableId: string, reason: ServerMessageOf<'table_closed'>['reason']): Promise<void> {
    const r = this.rooms.get(tableId);
    if (!r) return;
    this.rooms.delete(tableId);
    this.idleSince.delete(tableId);
    this.spans.suspend(tableId);
    const room = await r.catch(() => null);
    if (!room) return;
    room.close();
    await room.stepsDone(ROOM_STEP_GRACE_MS);
    const message = toJson({ type: 'table_closed', tableId, reason } satisfies ServerMessageOf<'table_closed'>);
    for (const w of room.watchers) {
      w.send(message);
      (w as Watcher & { tables?: Set<string> }).tables?.delete(tableId);
    }
    room.watchers.clear();
  }

  /**
   * Unloads a room: it stops and its table's lease is released (a hand in progress is abandoned). A
   * join meanwhile loads the room again only once the lease is released (so it takes a new one).
   */
  unload = (tableId: string, reason: ServerMessageOf<'table_closed'>['reason'] = 'idle'): Promise<void> => {
    this.idleSince.delete(tableId);
    const done = (async () => {
      await this.stopRoom(tableId, reason);
      await this.deps.process.release(tableId).catch((err) => this.deps.log.warn({ err: (err as Error).message, tableId }, 'lease not released'));
    })();
    this.releasing.set(tableId, done);
    return done.finally(() => {
      if (this.releasing.get(tableId) === done) this.releasing.delete(tableId);
    });
  };

  /**
   * Whether a loaded room may unload: nothing holds it (no watcher, no hand, no waiting sit or
   * stand-up, no step running) and, for a tournament table, the tournament is closed (a tournament
   * keeps its room, and its lifecycle span, from registration to its last payout).
   */
  private async unloadable(room: Room): Promise<boolean> {
    if (!room.idle) return false;
    if (room.record.mode !== 'sng') return true;
    const { rows } = await this.deps.pool.query<{ s: string | null }>('select tournament_state as s from game.tournaments where table_id = $1', [room.tableId]);
    return rows[0]?.s === 'closed';
  }

  /** Unloads the rooms that stayed unloadable for the idle time (each checked again just before). */
  private sweepIdle(): void {
    const now = Date.now();
    for (const [tableId, r] of this.rooms) {
      void r.then(async (room) => {
        if (!(await this.unloadable(room)) || this.rooms.get(tableId) !== r) return void this.idleSince.delete(tableId);
        const since = this.idleSince.get(tableId) ?? now;
        this.idleSince.set(tableId, since);
        if (now - since < this.deps.idleUnloadMs) return;
        this.deps.log.info({ tableId }, 'idle room unloaded');
        await this.unload(tableId, 'idle');
      }).catch((err) => this.deps.log.warn({ err: (err as Error).message, tableId }, 'idle check failed'));
    }
  }

  /** The room of a table, loaded once (a failed load is forgotten, so a later call retries). */
  room = (tableId: string): Promise<Room> => {
    let r = this.rooms.get(tableId);
    if (!r) {
      r = this.load(tableId);
      this.rooms.set(tableId, r);
      r.catch(() => this.rooms.delete(tableId));
    }
    return r;
  };

  /** The room loading or loaded for a table now, if any (no load is started). */
  current = (tableId: string): Promise<Room> | undefined => this.rooms.get(tableId);

  /** A seat route touched this table: a loaded room re-reads its seats. */
  seatsChanged = (tableId: string): void => {
    const r = this.rooms.get(tableId);
    if (r) void r.then((room) => room.refresh()).catch(() => undefined);
  };

  /** A stop: every room's watchers get `table_closed` (server_stopping), the rooms stop and release their leases. */
  stop = async (): Promise<void> => {
    this.stopping = true;
    for (const timer of this.timers) clearInterval(timer);
    await Promise.all([...this.rooms.keys()].map((tableId) => this.unload(tableId, 'server_stopping')));
  };

  /** The loaded rooms and how many watch each. */
  inspect = async (): Promise<Record<string, { watchers: number }>> => {
    const out: Record<string, { watchers: number }> = {};
    for (const [tableId, r] of this.rooms) {
      const loaded = await r.catch(() => null);
      if (loaded) out[tableId] = { watchers: loaded.watchers.size };
    }
    return out;
  };
}

export function createRoomRegistry(deps: RoomRegistryDeps): RoomRegistry {
  return new RoomRegistry(deps);
}


