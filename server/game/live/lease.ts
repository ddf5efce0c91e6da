// One table, one dealer (db/functions/game/35_leases.sql). This game process registers itself and
// holds its presence lock on a connection of its own for its whole life: Postgres frees the lock
// the moment that connection dies (a kill -9 included), and that is how other processes know this
// one is gone. Each room runs under a lease on its table: taken when it loads, renewed here every
// few seconds in one call for all of them, released when it stops. A lease this process lost
// (taken over after it looked gone, or recovered after expiring) stops its room. The same
// connection LISTENs on game_seats, so the room learns of seat changes made by the cage's calls on
// whichever game process they landed.
import pg from 'pg';
import type { Logger } from 'pino';
import { loginUrl } from '../../db/roles.ts';

export type Take =
  | { granted: true; epoch: bigint; recoveredHand: string | null }
  | { granted: false; holderUrl: string | null };

interface Held {
  epoch: bigint;
  onLost: () => void;
}

export interface GameProcessOptions {
  databaseUrl: string;
  /** The game role's pool (poker_game): lease calls go through it. */
  pool: pg.Pool;
  log: Logger;
  /** How long a lease lasts without renewal (the backstop for a holder that is present but stuck). */
  ttlSeconds: number;
  /** The URL clients are sent to for this process's tables; set later with setUrl when unknown. */
  url?: string;
  /** DB_ROLE_SECRET (the presence connection logs in as poker_game). */
  dbRoleSecret?: string;
}

const RECONNECT_MS = 1000;

export async function startGameProcess(options: GameProcessOptions) {
  const { pool, log, ttlSeconds } = options;
  const held = new Map<string, Held>();
  const seatListeners: ((tableId: string) => void)[] = [];
  let id: string | null = null;
  let url = options.url ?? null;
  let presence: pg.Client | null = null;
  let closed = false;
  let reconnect: NodeJS.Timeout | null = null;

  /** Connects, registers (the same id again after a lost connection) and listens. */
  async function connect(): Promise<void> {
    // the game role's own login, as its pool (server/db/roles.ts)
    const client = new pg.Client({
      connectionString: loginUrl(options.databaseUrl, 'poker_game', options.dbRoleSecret),
      options: '-c role=poker_game', application_name: 'game-presence', keepAlive: true,
    });
    client.on('error', (err) => log.warn({ err: err.message, processId: id }, 'game presence connection failed'));
    client.on('end', () => {
      if (presence !== client) return;
      presence = null;
      if (closed) return;
      log.warn({ processId: id }, 'game presence lost: reconnecting (its tables may be taken over meanwhile; their rooms stop if so)');
      scheduleReconnect();
    });
    client.on('notification', (n) => {
      if (n.channel !== 'game_seats' || !n.payload) return;
      for (const listener of seatListeners) listener(n.payload);
    });
    try {
      await client.connect();
      const { rows } = await client.query<{ process_id: string }>('select process_id from game.register_process($1, $2)', [url, id]);
      await client.query('listen game_seats');
      id = rows[0]!.process_id;
      presence = client;
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
  }

  function scheduleReconnect() {
    if (reconnect || closed) return;
    reconnect = setTimeout(() => {
      reconnect = null;
      connect().then(() => {
        log.info({ processId: id }, 'game presence back');
        // notifications sent while away were missed: every room reads its seats again
        for (const tableId of held.keys()) for (const listener of seatListeners) listener(tableId);
      }, (err) => {
        log.warn({ err: (err as Error).message }, 'game presence not back yet');
        scheduleReconnect();
      });
    }, RECONNECT_MS);
    reconnect.unref();
  }

  await connect();

  /** A tenure is over (`epoch`: the one a refused boundary was sent under; a later tenure of ours stays). */
  function lost(tableId: string, epoch: bigint | null = null): void {
    const h = held.get(tableId);
    if (!h || (epoch !== null && h.epoch !== epoch)) return;
    held.delete(tableId);
    log.warn({ tableId, epoch: h.epoch.toString(), processId: id }, 'table lease lost: its room stops');
    h.onLost();
  }

  async function renewAll(): Promise<void> {
    if (held.size === 0) return;
    const sent = new Map([...held].map(([t, h]) => [t, h.epoch]));
    const { rows } = await pool.query<{ t: string }>('select t from game.renew_leases($1, $2::text[], $3::bigint[], $4) t', [
      id, [...sent.keys()], [...sent.values()].map(String), ttlSeconds,
    ]);
    // a table released and taken again while the call ran is a new tenure, not a loss
    for (const r of rows) lost(r.t, sent.get(r.t)!);
  }
  const renewer = setInterval(() => {
    renewAll().catch((err) => log.warn({ err: (err as Error).message }, 'lease renewal failed'));
  }, Math.max(200, Math.floor((ttlSeconds * 1000) / 3)));
  renewer.unref();

  return {
    get id() {
      return id!;
    },
    /** The URL clients are sent to (known once the game role listens). */
    async setUrl(publicUrl: string): Promise<void> {
      url = publicUrl;
      await pool.query('select game.set_process_url($1, $2)', [id, publicUrl]);
    },
    /** At start, before answering: tables holding a hand that no live lease covers are released. */
    async recoverInterruptedHands(): Promise<{ tableId: string; handId: string }[]> {
      const { rows } = await pool.query<{ table_id: string; hand_id: string }>('select table_id, hand_id from game.recover_interrupted_hands()');
      return rows.map((r) => ({ tableId: r.table_id, handId: r.hand_id }));
    },
    /** Takes a table for a room of this process; `onLost` stops the room if the lease is lost later. */
    async take(tableId: string, onLost: () => void): Promise<Take> {
      const { rows } = await pool.query<{ granted: boolean; epoch: bigint; holder_url: string | null; recovered_hand: string | null }>(
        'select granted, epoch, holder_url, recovered_hand from game.take_lease($1, $2, $3)', [tableId, id, ttlSeconds],
      );
      const r = rows[0]!;
      if (!r.granted) return { granted: false, holderUrl: r.holder_url };
      held.set(tableId, { epoch: r.epoch, onLost });
      return { granted: true, epoch: r.epoch, recoveredHand: r.recovered_hand };
    },
    /** The epoch a hand boundary of this table carries: this process's tenure, or null (no room here). */
    epochOf(tableId: string): bigint | null {
      return held.get(tableId)?.epoch ?? null;
    },
    /** A hand boundary was refused lease_lost: the room stops. */
    lost,
    /** Lets a table go (its room stopped); a hand still in progress is abandoned. Returns that hand. */
    async release(tableId: string): Promise<string | null> {
      const h = held.get(tableId);
      if (!h) return null;
      held.delete(tableId);
      const { rows } = await pool.query<{ hand: string | null }>('select game.release_lease($1, $2, $3) as hand', [tableId, id, h.epoch.toString()]);
      return rows[0]?.hand ?? null;
    },
    /** Seat changes of any table (the rooms of this process pick theirs). */
    onSeatsChanged(listener: (tableId: string) => void): void {
      seatListeners.push(listener);
    },
    /** A clean stop, after the rooms released their tables: the process's row goes, then its connection. */
    async close(): Promise<void> {
      closed = true;
      clearInterval(renewer);
      if (reconnect) clearTimeout(reconnect);
      for (const tableId of [...held.keys()]) {
        await this.release(tableId).catch((err: Error) => log.warn({ err: err.message, tableId }, 'lease not released'));
      }
      const client = presence;
      presence = null;
      if (!client) return;
      await client.query('select game.unregister_process($1)', [id]).catch(() => undefined);
      await client.end().catch(() => undefined);
    },
  };
}

export type GameProcess = Awaited<ReturnType<typeof startGameProcess>>;

/** True when a database error is the fence refusing a stale tenure. */
export const isLeaseLost = (err: unknown) => (err as { code?: string } | null)?.code === 'GMLSE';
