// The rooms this game process runs: each table's room loaded once, under the table's lease (one
// dealer per table, lease.ts), ticked, unloaded when idle long enough (ROOM_IDLE_UNLOAD_SECONDS) or
// when the process stops, and stopped when the lease is lost. The websocket (ws.ts) joins
// connections to them; the cage's seat calls reach them through seatsChanged.
import type pg from 'pg';
import type { Logger } from 'pino';
import type { ServiceClient } from '../../http/service-client.ts';
import type { ClaimBoard } from '../../claims/board.ts';
import type { createHands } from '../hands/hands.ts';
import type { GameProcess } from './lease.ts';
import { Room, type RoomOptions, type TableRecord, type Watcher } from './room.ts';
import { toJson } from './wire.ts';

export interface RoomRegistryDeps {
  pool: pg.Pool;
  log: Logger;
  hands: ReturnType<typeof createHands>;
  options: RoomOptions;
  /** The bank (the cage), through the roles' one client (server/http/service-client.ts). */
  bank: ServiceClient;
  /** This process's presence and table leases: a poker room runs only under its table's lease. */
  process: GameProcess;
  /** A cash room with nothing in it this long unloads (its lease released). */
  idleUnloadMs: number;
  /** The claim board: an agent taking a seat meets `agent_seated` in the seat's transaction. */
  board: ClaimBoard;
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

export function createRoomRegistry(deps: RoomRegistryDeps) {
  const { pool, log } = deps;
  const rooms = new Map<string, Promise<Room>>();
  /** Tables whose room is unloading: a load waits for the lease to be released first. */
  const releasing = new Map<string, Promise<void>>();
  /** When each loaded room was first seen idle (no entry: busy, or not seen idle yet). */
  const idleSince = new Map<string, number>();
  let stopping = false;
  const ticker = every(log, 5_000, 'room tick', () => {
    for (const r of rooms.values()) void r.then((room) => room.tick()).catch((err) => log.error({ err }, 'room tick failed'));
  });
  const sweeper = every(log, Math.max(100, Math.min(5_000, Math.floor(deps.idleUnloadMs / 4))), 'idle room sweep', sweepIdle);

  /**
   * A call to the bank (the cage), through the roles' one client: the player's token forwarded, or
   * the service key for the room's own calls. When the bank cannot answer (refused or reset, no
   * answer within the call timeout, not JSON, a 5xx) the answer is the spec's 503
   * `cage_unavailable`: the sit is refused within seconds, nothing is assumed.
   */
  async function bank(path: string, body: unknown, auth: { token?: string | null; service?: boolean }) {
    const answer = await deps.bank.post(path, body, auth.token ? { bearer: auth.token } : {});
    if ('unreachable' in answer) return { status: 503, body: { error: 'cage_unavailable' } as Record<string, unknown> };
    return { status: answer.status, body: answer.body as Record<string, unknown> };
  }

  const readRecord = (tableId: string) => pool.query<TableRecord>(
    'select table_id, game_type, settings, status, mode, kind, money_kind, current_hand_id from game.tables where table_id = $1',
    [tableId],
  );

  async function load(tableId: string): Promise<Room> {
    await releasing.get(tableId);
    if (stopping) throw Object.assign(new Error('table_closed'), { code: 'table_closed' });
    let record = (await readRecord(tableId)).rows[0];
    if (!record) throw Object.assign(new Error('table_not_found'), { code: 'table_not_found' });
    if (record.game_type === 'poker') {
      // one dealer per table: another live process running it keeps it, and the client is sent there
      const lease = await deps.process.take(tableId, () => void stopRoom(tableId, 'lease_lost').catch((err) => log.error({ err, tableId }, 'room not stopped')));
      if (!lease.granted) throw Object.assign(new Error('table_elsewhere'), { code: 'table_elsewhere', url: lease.holderUrl });
      if (lease.recoveredHand) log.warn({ tableId, handId: lease.recoveredHand, epoch: lease.epoch.toString() }, 'hand abandoned when the table was taken over: the stacks of its start stand');
      record = (await readRecord(tableId)).rows[0]!;
    }
    const room = new Room(record, {
      pool, log, hands: deps.hands, options: deps.options,
      agentSeated: async (client, userId, agentId) => {
        await deps.board.markConditionMet(userId, 'agent_seated', `agent_seated:${agentId}:${tableId}`, client);
      },
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
    idleSince.delete(tableId);
    const room = await r.catch(() => null);
    if (!room) return;
    room.close();
    const message = toJson({ type: 'table_closed', tableId, reason });
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
  function unload(tableId: string, reason = 'unloaded'): Promise<void> {
    idleSince.delete(tableId);
    const done = (async () => {
      await stopRoom(tableId, reason);
      await deps.process.release(tableId).catch((err) => log.warn({ err: (err as Error).message, tableId }, 'lease not released'));
    })();
    releasing.set(tableId, done);
    return done.finally(() => {
      if (releasing.get(tableId) === done) releasing.delete(tableId);
    });
  }

  /**
   * Whether a loaded room may unload: nothing holds it (no watcher, no hand, no waiting sit or
   * stand-up, no step running) and, for a tournament table, the tournament is not registering or
   * running (only ended or closed tournaments unload).
   */
  async function unloadable(room: Room): Promise<boolean> {
    if (!room.idle) return false;
    if (room.record.mode !== 'sng') return true;
    const { rows } = await pool.query<{ s: string | null }>('select tournament_state as s from game.tables where table_id = $1', [room.tableId]);
    return rows[0]?.s === 'ended' || rows[0]?.s === 'closed';
  }

  /** Unloads the rooms that stayed unloadable for the idle time (each checked again just before). */
  function sweepIdle(): void {
    const now = Date.now();
    for (const [tableId, r] of rooms) {
      void r.then(async (room) => {
        if (!(await unloadable(room)) || rooms.get(tableId) !== r) return void idleSince.delete(tableId);
        const since = idleSince.get(tableId) ?? now;
        idleSince.set(tableId, since);
        if (now - since < deps.idleUnloadMs) return;
        log.info({ tableId }, 'idle room unloaded');
        await unload(tableId, 'idle');
      }).catch((err) => log.warn({ err: (err as Error).message, tableId }, 'idle check failed'));
    }
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

  /** A stop: every room's watchers get `table_closed` (server_stopping), the rooms stop and release their leases. */
  async function stop(): Promise<void> {
    stopping = true;
    for (const timer of [ticker, sweeper]) clearInterval(timer);
    await Promise.all([...rooms.keys()].map((tableId) => unload(tableId, 'server_stopping')));
  }

  // seat changes made by the cage's calls, on whichever game process they landed
  deps.process.onSeatsChanged(seatsChanged);

  return {
    room,
    /** A call to the bank (the cage): with the player's JWT, or with the service key. */
    bank,
    /** The room loading or loaded for a table now, if any (no load is started). */
    current: (tableId: string) => rooms.get(tableId),
    unload,
    seatsChanged,
    stop,
    get stopping() {
      return stopping;
    },
    /** The loaded rooms and how many watch each. */
    async inspect(): Promise<Record<string, { watchers: number }>> {
      const out: Record<string, { watchers: number }> = {};
      for (const [tableId, r] of rooms) {
        const loaded = await r.catch(() => null);
        if (loaded) out[tableId] = { watchers: loaded.watchers.size };
      }
      return out;
    },
  };
}

export type RoomRegistry = ReturnType<typeof createRoomRegistry>;
