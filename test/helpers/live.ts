// Live tables from the clients' side: players (and agents) on real websockets against running
// roles, requests answered by `ref`, waiting on game states without consuming them, a seeded
// random player, and the table's books (escrow, stacks, rake) as the database holds them.
import type { TestDatabase } from './db.ts';
import { call, type moneyClient } from './money.ts';
import { connect, type WsClient } from './ws-client.ts';

type Money = ReturnType<typeof moneyClient>;
export type Msg = Record<string, any>;

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `probe` until it returns something truthy (returned), or fails after `timeoutMs`. */
export async function until<T>(probe: () => T | undefined | null | false | Promise<T | undefined | null | false>, what: string, timeoutMs = 5000, everyMs = 5): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

export const statesOf = (ws: WsClient, tableId: string) => ws.messages.filter((x) => x.type === 'game_state' && x.tableId === tableId);
export const latestState = (ws: WsClient, tableId: string) => statesOf(ws, tableId).at(-1);
export const resultsOf = (ws: WsClient, tableId: string) => ws.messages.filter((x) => x.type === 'hand_result' && x.tableId === tableId);
export const seatIn = (state: Msg, seatIndex: number): Msg | undefined => state.seats.find((s: Msg) => s.seatIndex === seatIndex);

/** The first game state of the table received at or after message index `from` that satisfies `match` (nothing is consumed). */
export function stateWhere(ws: WsClient, tableId: string, match: (s: Msg) => boolean, what: string, options: { from?: number; timeoutMs?: number } = {}) {
  return until(() => ws.messages.slice(options.from ?? 0).find((x) => x.type === 'game_state' && x.tableId === tableId && match(x)), what, options.timeoutMs ?? 5000);
}

/** A small seeded PRNG (mulberry32): the same seed, the same play. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A random legal action for `legal` (a game state's `legal`): bets and raises between minRaiseTo and maxRaiseTo, all-ins often. */
export function randomAction(rng: () => number, legal: Msg): { action: string; amount?: string } {
  const actions: string[] = legal.actions;
  const aggressive = actions.find((a) => a === 'bet' || a === 'raise');
  const r = rng();
  if (aggressive && r < 0.2) {
    const min = BigInt(legal.minRaiseTo);
    const max = BigInt(legal.maxRaiseTo);
    const amount = rng() < 0.2 ? max : min + BigInt(Math.floor(rng() * rng() * Number(max - min + 1n)));
    return { action: aggressive, amount: amount.toString() };
  }
  if (actions.includes('check')) return { action: 'check' };
  if (actions.includes('fold') && r > 0.6) return { action: 'fold' };
  return { action: 'call' };
}

/**
 * A calm policy: checks when it can; calls up to a tenth of what it still holds behind (a shove is
 * called one time in four); min-raises one time in ten; else folds. Tournaments last longer with it,
 * so the blind levels do the work.
 */
export function calmAction(rng: () => number, legal: Msg): { action: string; amount?: string } {
  const actions: string[] = legal.actions;
  const aggressive = actions.find((a) => a === 'bet' || a === 'raise');
  if (aggressive && rng() < 0.1) return { action: aggressive, amount: String(legal.minRaiseTo) };
  if (actions.includes('check')) return { action: 'check' };
  const toCall = BigInt(legal.toCall ?? 0);
  const behind = BigInt(legal.maxRaiseTo ?? 0);
  if (actions.includes('call') && (toCall * 10n <= behind || rng() < 0.25)) return { action: 'call' };
  return { action: actions.includes('fold') ? 'fold' : 'call' };
}

export interface LivePlayer {
  userId: string;
  jwt: string;
  auth: Record<string, string>;
  agentId: string | null;
  ws: WsClient;
}

/** Clients of one running platform's live tables. */
export function liveClient(m: Money, db: TestDatabase) {
  const clients: WsClient[] = [];
  const wsUrl = m.game.replace(/^http/, 'ws');
  let refs = 0;

  /** A connection (the hello consumed). */
  async function open(path = '/ws', headers: Record<string, string> = {}): Promise<WsClient> {
    const ws = await connect(`${wsUrl}${path}`, headers);
    clients.push(ws);
    await ws.next((x) => x.type === 'hello');
    return ws;
  }

  /** Sends `message` with a fresh `ref` and resolves to the answer carrying it. */
  function request(ws: WsClient, message: Record<string, unknown>, timeoutMs = 5000): Promise<Msg> {
    const ref = `r${++refs}`;
    ws.send({ ...message, ref });
    return ws.next((x) => x.ref === ref, timeoutMs);
  }

  async function createAgent(auth: Record<string, string>, name = 'bot'): Promise<string> {
    const r = await call(`${m.game}/api/agents`, { headers: auth, body: { name } });
    if (r.status !== 201) throw new Error(`agent not created: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.agentId;
  }

  /** A user holding `chips` in the cage, connected (as an agent of theirs with `agent: true`). */
  async function player(chips: number, options: { agent?: boolean } = {}): Promise<LivePlayer> {
    const p = await m.player(chips);
    const agentId = options.agent ? await createAgent(p.auth) : null;
    const ws = await open(agentId ? `/ws?agentId=${agentId}` : '/ws', p.auth);
    return { ...p, agentId, ws };
  }

  async function join(p: { ws: WsClient }, tableId: string): Promise<Msg> {
    const r = await request(p.ws, { type: 'join', tableId });
    if (r.type !== 'joined') throw new Error(`join refused: ${JSON.stringify(r)}`);
    return r;
  }

  /** Joins and sits over the websocket (the bank's deposit): the answer (`seated` or `error`). */
  async function sit(p: LivePlayer, tableId: string, seatIndex: number, amount: number): Promise<Msg> {
    await join(p, tableId);
    return request(p.ws, { type: 'sit', tableId, seatIndex, amount });
  }

  /** Funds seats over HTTP (the cage's deposit) before any room is loaded, then everyone joins at once: all are dealt into the first hand. */
  async function seatBeforeRoom(players: LivePlayer[], tableId: string, amounts: number[]) {
    for (const [i, p] of players.entries()) {
      const r = await m.deposit(p.auth, { tableId, seatIndex: i, amount: amounts[i] });
      if (r.status !== 200) throw new Error(`deposit refused: ${r.status} ${JSON.stringify(r.body)}`);
    }
    // all at once: a room deals only to connected players, so a sequential join could see the first
    // hand dealt before the last player joined
    await Promise.all(players.map((p) => join(p, tableId)));
    // a room already open learns of the seats the deposits funded after they answered (rooms.ts
    // refreshes it on the notice): done when every player has seen a state that seats them all
    const all = (s: Msg) => players.every((p) => s.seats.some((x: Msg) => x.userId === p.userId));
    await Promise.all(players.map((p) => stateWhere(p.ws, tableId, all, `a state seating every player, seen by ${p.userId}`)));
  }

  /** The next state asking `p` to act that was not answered yet (`answered` holds `handId:seq`). */
  function turnOf(p: LivePlayer, tableId: string, answered: Set<string>, timeoutMs = 5000): Promise<Msg> {
    return until(() => {
      const s = latestState(p.ws, tableId);
      return s?.legal && !answered.has(`${s.legal.handId}:${s.legal.seq}`) ? s : undefined;
    }, `a turn of ${p.userId}`, timeoutMs);
  }

  /** Acts on `state` (its legal handId and seq); refusals throw. */
  async function act(p: LivePlayer, tableId: string, state: Msg, action: string, amount?: string | bigint, answered?: Set<string>): Promise<Msg> {
    answered?.add(`${state.legal.handId}:${state.legal.seq}`);
    const r = await request(p.ws, {
      type: 'action', tableId, handId: state.legal.handId, seq: state.legal.seq, action, ...(amount !== undefined ? { amount: amount.toString() } : {}),
    });
    if (r.type !== 'action_ack') throw new Error(`${action} refused: ${JSON.stringify(r)} (legal ${JSON.stringify(state.legal)})`);
    return r;
  }

  /**
   * Everybody seated leaves through the bank: `stood_up` between hands, `stand_up_pending` in a
   * hand (they check or fold to its end); a player seated but out of the running hand is refused
   * `hand_in_progress` by the bank and asks again. Resolves once the table has no open seat.
   */
  async function standUpAll(players: LivePlayer[], tableId: string): Promise<Msg[]> {
    const answers = await Promise.all(players.map(async (p) => {
      for (let i = 0; i < 2000; i++) {
        const r = await request(p.ws, { type: 'stand_up', tableId });
        if (r.type === 'stood_up' || r.type === 'stand_up_pending' || r.code === 'not_at_table') return r;
        if (r.code !== 'hand_in_progress') throw new Error(`stand_up refused: ${JSON.stringify(r)}`);
        await sleep(3);
      }
      throw new Error('stand_up kept being refused hand_in_progress');
    }));
    await until(async () => (await m.room(tableId)).body.seats.length === 0, `table ${tableId} empty`, 10_000, 20);
    return answers;
  }

  /** The table's books in one snapshot: escrow (cage), open stacks and the rake taken, reconciled or not (game). */
  async function books(tableId: string) {
    const { rows } = await db.owner.query(
      `select coalesce((select balance from cage.account_balances where account_type = 'table_escrow' and scope = $1), 0) as escrow,
              (select coalesce(sum(chip_balance), 0) from game.table_players where table_id = $1 and status <> 'closed') as stacks,
              (select unreconciled_rake + reconciled_rake from game.tables where table_id = $1) as rake,
              (select coalesce(jsonb_object_agg(seat_index::text, chip_balance::text), '{}') from game.table_players
                where table_id = $1 and status <> 'closed') as seats`,
      [tableId],
    );
    const r = rows[0];
    return {
      escrow: BigInt(r.escrow), stacks: BigInt(r.stacks), rake: BigInt(r.rake),
      seats: Object.fromEntries(Object.entries(r.seats as Record<string, string>).map(([k, v]) => [Number(k), BigInt(v)])) as Record<number, bigint>,
    };
  }

  const closeAll = () => Promise.all(clients.map((c) => c.close()));

  return { clients, wsUrl, open, request, createAgent, player, join, sit, seatBeforeRoom, turnOf, act, standUpAll, books, closeAll };
}

export type LiveClient = ReturnType<typeof liveClient>;
