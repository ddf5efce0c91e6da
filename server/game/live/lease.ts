// One table, one dealer (db/functions/game/35_leases.sql). This game process registers itself and
// holds its presence lock on a connection of its own for its whole life: Postgres frees the lock
// the moment that connection dies (a kill -9 included), and that is how other processes know this
// one is gone. A process is who its connection proves: every lease call (take, renew, release, the
// URL, the clean stop) goes through that same presence connection, and SQL acts for the process that
// connection registered, never for an id named to it. Each room runs under a lease on its table:
// taken when it loads, renewed here every few seconds in one call for all of them, released when it
// stops. A lease this process lost (taken over after it looked gone, or recovered after expiring)
// stops its room. After a lost connection the process comes back under its id with the succession
// secret its last registration returned (kept in memory only): a thief of the game login who ends
// the connection cannot take its place. The same connection LISTENs on game_seats, so the room
// learns of seat changes made by the cage's calls on whichever game process they landed.
import pg from 'pg';
import type { Logger } from 'pino';
import { loginUrl } from '../../db/roles.ts';
import { refusalState, refusedWith } from '../../http/errors.ts';

export type Take =
  | { granted: true; epoch: bigint; recoveredHand: string | null }
  | { granted: false; holderUrl: string | null };

interface Held {
  epoch: bigint;
  onLost: () => void;
}

export interface GameProcessOptions {
  databaseUrl: string;
  /** The game role's pool (poker_game): the start's recovery goes through it (the lease calls go through the presence connection). */
  pool: pg.Pool;
  log: Logger;
  /** How long a lease lasts without renewal (the backstop for a holder that is present but stuck). */
  ttlSeconds: number;
  /** The URL clients are sent to for this process's tables; set later with setUrl when unknown. */
  url?: string;
  /** DB_ROLE_SECRET (the presence connection logs in as poker_game). */
  dbRoleSecret?: string;
  /** poker_game's own password (DB_PASSWORD_POKER_GAME), used instead of deriving it. */
  dbPassword?: string;
}

const RECONNECT_MS = 1000;

/**
 * The presence connection: registers this process (the same id again after a lost connection, with
 * its succession secret), holds its presence lock, makes every lease call and LISTENs on
 * game_seats; when it drops, it comes back every second.
 */
class Presence {
  id: string | null = null;
  url: string | null;
  /** The secret the last registration returned: it alone brings this process back under its id. */
  private succession: string | null = null;
  /** A URL the operators have not listed (yet): registered without it, announced once listed. */
  unlisted: string | null = null;
  private client: pg.Client | null = null;
  private closed = false;
  private reconnect: NodeJS.Timeout | null = null;

  private readonly options: GameProcessOptions;
  private readonly onSeats: (tableId: string) => void;
  /** Tournament lifecycle events (channel game_tournament: a JSON object naming its tableId). */
  onTournament: (event: Record<string, unknown>) => void = () => undefined;
  /** After a reconnect: notifications sent while away were missed. */
  private readonly onBack: () => void;

  constructor(options: GameProcessOptions, onSeats: (tableId: string) => void, onBack: () => void) {
    this.options = options;
    this.onSeats = onSeats;
    this.onBack = onBack;
    this.url = options.url ?? null;
  }

  async connect(): Promise<void> {
    const { log } = this.options;
    // the game role's own login, as its pool (server/db/roles.ts)
    const client = new pg.Client({
      connectionString: loginUrl(this.options.databaseUrl, 'poker_game', this.options.dbRoleSecret, this.options.dbPassword),
      options: '-c role=poker_game', application_name: 'game-presence', keepAlive: true,
    });
    client.on('error', (err) => log.warn({ err: err.message, processId: this.id }, 'game presence connection failed'));
    client.on('end', () => this.ended(client));
    client.on('notification', (n) => {
      if (n.channel === 'game_seats' && n.payload) this.onSeats(n.payload);
      if (n.channel === 'game_tournament' && n.payload) this.tournamentNotification(n.payload);
    });
    try {
      await client.connect();
      const rows = [await this.register(client)];
      await client.query('listen game_seats');
      await client.query('listen game_tournament');
      if (this.id && this.id !== rows[0]!.process_id) this.options.log.warn({ was: this.id, now: rows[0]!.process_id }, 'game presence back under a new id: the tables of the old one are lost');
      this.id = rows[0]!.process_id;
      this.succession = rows[0]!.succession;
      this.client = client;
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
  }

  /** Registers on this connection; a URL not on the operators' list is left out (announced once listed). */
  private async register(client: pg.Client): Promise<{ process_id: string; succession: string }> {
    const sql = 'select process_id, succession from game.register_process($1, $2)';
    try {
      return (await client.query<{ process_id: string; succession: string }>(sql, [this.url, this.succession])).rows[0]!;
    } catch (err) {
      if (!refusedWith(err, 'game', 'process_url_unlisted')) throw err;
      this.options.log.error({ url: this.url }, 'game process url not on the operators\' list (npm run ops -- process-url add URL): no client is sent here until it is');
      this.unlisted = this.url;
      return (await client.query<{ process_id: string; succession: string }>(sql, [null, this.succession])).rows[0]!;
    }
  }

  private tournamentNotification(payload: string) {
    try {
      const event = JSON.parse(payload) as Record<string, unknown>;
      if (typeof event.tableId === 'string') this.onTournament(event);
    } catch (err) {
      this.options.log.warn({ err: (err as Error).message }, 'tournament notification not handled');
    }
  }

  private ended(client: pg.Client) {
    if (this.client !== client) return;
    this.client = null;
    if (this.closed) return;
    this.options.log.warn({ processId: this.id }, 'game presence lost: reconnecting (its tables may be taken over meanwhile; their rooms stop if so)');
    this.scheduleReconnect();
  }

  private scheduleReconnect() {
    if (this.reconnect || this.closed) return;
    this.reconnect = setTimeout(() => {
      this.reconnect = null;
      this.connect().then(() => {
        this.options.log.info({ processId: this.id }, 'game presence back');
        this.onBack();
      }, (err) => {
        this.options.log.warn({ err: (err as Error).message }, 'game presence not back yet');
        this.scheduleReconnect();
      });
    }, RECONNECT_MS);
    this.reconnect.unref();
  }

  /** A lease call on the presence connection (SQL acts for the process it registered); refused while it is away. */
  async query<R extends pg.QueryResultRow>(sql: string, params: unknown[]): Promise<pg.QueryResult<R>> {
    if (!this.client) throw Object.assign(new Error('game_process_gone: the presence connection is away'), { code: refusalState('game', 'game_process_gone') });
    return this.client.query<R>(sql, params);
  }

  /** The process's row goes, then its connection. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.reconnect) clearTimeout(this.reconnect);
    const client = this.client;
    this.client = null;
    if (!client) return;
    await client.query('select game.unregister_process()').catch(() => undefined);
    await client.end().catch(() => undefined);
  }
}

/** This game process: its presence, and the leases of the tables its rooms run. */
export class GameProcessLeases {
  private readonly held = new Map<string, Held>();
  private readonly seatListeners: ((tableId: string) => void)[] = [];
  private readonly presence: Presence;
  private renewer: NodeJS.Timeout | null = null;

  private readonly options: GameProcessOptions;

  constructor(options: GameProcessOptions) {
    this.options = options;
    this.presence = new Presence(
      options,
      (tableId) => this.seatsChanged(tableId),
      () => { for (const tableId of this.held.keys()) this.seatsChanged(tableId); },
    );
  }

  async start(): Promise<void> {
    await this.presence.connect();
    this.renewer = setInterval(() => {
      if (this.presence.unlisted) void this.announceListed(this.presence.unlisted);
      this.renewAll().catch((err) => this.options.log.warn({ err: (err as Error).message }, 'lease renewal failed'));
    }, Math.max(200, Math.floor((this.options.ttlSeconds * 1000) / 3)));
    this.renewer.unref();
  }

  get id(): string {
    return this.presence.id!;
  }

  private seatsChanged(tableId: string) {
    for (const listener of this.seatListeners) listener(tableId);
  }

  private async renewAll(): Promise<void> {
    if (this.held.size === 0) return;
    const sent = new Map([...this.held].map(([t, h]) => [t, h.epoch]));
    const { rows } = await this.presence.query<{ t: string }>('select t from game.renew_leases($1::text[], $2::bigint[], $3) t', [
      [...sent.keys()], [...sent.values()].map(String), this.options.ttlSeconds,
    ]);
    // a table released and taken again while the call ran is a new tenure, not a loss
    for (const r of rows) this.lost(r.t, sent.get(r.t)!);
  }

  /** A URL registered before the operators listed it: announced as soon as they do. */
  private async announceListed(url: string): Promise<void> {
    try {
      await this.setUrl(url);
      this.presence.unlisted = null;
      this.options.log.info({ url }, 'game process url listed by the operators: announced');
    } catch {
      // not listed yet: tried again at the next renewal
    }
  }

  /** The URL clients are sent to (known once the game role listens; one on the operators' list). */
  async setUrl(publicUrl: string): Promise<void> {
    try {
      await this.presence.query('select game.set_process_url($1)', [publicUrl]);
    } catch (err) {
      // not listed (yet): tried again at each renewal, announced once the operators list it
      if (refusedWith(err, 'game', 'process_url_unlisted')) this.presence.unlisted = publicUrl;
      throw err;
    }
    this.presence.url = publicUrl;
  }

  /** At start, before answering: tables holding a hand that no live lease covers are released. */
  async recoverInterruptedHands(): Promise<{ tableId: string; handId: string }[]> {
    const { rows } = await this.options.pool.query<{ table_id: string; hand_id: string }>('select table_id, hand_id from game.recover_interrupted_hands()');
    return rows.map((r) => ({ tableId: r.table_id, handId: r.hand_id }));
  }

  /** Takes a table for a room of this process; `onLost` stops the room if the lease is lost later. */
  async take(tableId: string, onLost: () => void): Promise<Take> {
    const { rows } = await this.presence.query<{ granted: boolean; epoch: bigint; holder_url: string | null; recovered_hand: string | null }>(
      'select granted, epoch, holder_url, recovered_hand from game.take_lease($1, $2)', [tableId, this.options.ttlSeconds],
    );
    const r = rows[0]!;
    if (!r.granted) return { granted: false, holderUrl: r.holder_url };
    this.held.set(tableId, { epoch: r.epoch, onLost });
    return { granted: true, epoch: r.epoch, recoveredHand: r.recovered_hand };
  }

  /** The epoch a hand boundary of this table carries: this process's tenure, or null (no room here). */
  epochOf(tableId: string): bigint | null {
    return this.held.get(tableId)?.epoch ?? null;
  }

  /**
   * A hand boundary was refused lease_lost, or a renewal found the lease gone: that tenure is over and
   * its room stops (`epoch`: the one the refused boundary was sent under; a later tenure of ours stays).
   */
  lost = (tableId: string, epoch: bigint | null = null): void => {
    const h = this.held.get(tableId);
    if (!h || (epoch !== null && h.epoch !== epoch)) return;
    this.held.delete(tableId);
    this.options.log.warn({ tableId, epoch: h.epoch.toString(), processId: this.presence.id }, 'table lease lost: its room stops');
    h.onLost();
  };

  /** Lets a table go (its room stopped); a hand still in progress is abandoned. Returns that hand. */
  async release(tableId: string): Promise<string | null> {
    const h = this.held.get(tableId);
    if (!h) return null;
    this.held.delete(tableId);
    const { rows } = await this.presence.query<{ hand: string | null }>('select game.release_lease($1, $2) as hand', [tableId, h.epoch.toString()]);
    return rows[0]?.hand ?? null;
  }

  /** Tournament lifecycle events of any table (the rooms of this process pick theirs, or load it). */
  onTournamentEvent(listener: (event: Record<string, unknown>) => void): void {
    this.presence.onTournament = listener;
  }

  /** Seat changes of any table (the rooms of this process pick theirs). */
  onSeatsChanged(listener: (tableId: string) => void): void {
    this.seatListeners.push(listener);
  }

  /** A clean stop, after the rooms released their tables: the process's row goes, then its connection. */
  async close(): Promise<void> {
    if (this.renewer) clearInterval(this.renewer);
    for (const tableId of [...this.held.keys()]) {
      await this.release(tableId).catch((err: Error) => this.options.log.warn({ err: err.message, tableId }, 'lease not released'));
    }
    await this.presence.close();
  }
}

export async function startGameProcess(options: GameProcessOptions): Promise<GameProcessLeases> {
  const process = new GameProcessLeases(options);
  await process.start();
  return process;
}

export type GameProcess = GameProcessLeases;

/** True when a database error is the fence refusing a stale tenure. */
export const isLeaseLost = (err: unknown) => refusedWith(err, 'game', 'lease_lost');
