// Tournament helpers for the live tests and the sng benchmark: fast settings (every duration divided
// by the harness's clockFactor), a websocket bot with a fixed seeded policy, and the table's books.
import type pg from 'pg';
import { installTelemetry, shutdownTelemetry } from '../../server/telemetry/index.ts';
import { expectCleanAudit } from './cage.ts';
import { createTestDatabase, type TestDatabase } from './db.ts';
import { calmAction, latestState, liveClient, randomAction, type LiveClient, type LivePlayer, type Msg } from './live.ts';
import { startMoneyPlatform } from './money.ts';

/** A fast tournament: 30 s levels, 3 s turns and the 3 s grace, all divided by the clock factor. */
export const SNG = (over: Record<string, unknown> = {}) => ({
  mode: 'sng', seats: 2, entryFee: 100, rakeFee: 10, startingStack: 1000,
  blindStructure: { startingSmallBlind: 10, increaseFactor: 2, levelDurationSeconds: 30, anteStartLevel: null, startingAnte: 0, anteIncreaseFactor: 1 },
  actionTimeoutSeconds: 3, clockFactor: 60, ...over,
});

export interface BotStats {
  actions: number;
  refused: number;
}

/**
 * Plays `p`'s seat until the tournament ends or `p` is eliminated: on each game state asking it to
 * act, the seeded random legal action of helpers/live.ts (bets and raises 20% of the time, all-ins
 * often). Actions the server refuses (a turn that timed out meanwhile) are counted, not fatal.
 */
export async function playBot(
  live: LiveClient, p: LivePlayer, tableId: string, rng: () => number, policy: 'random' | 'calm' = 'random', timeoutMs = 120_000,
): Promise<BotStats> {
  const stats = { actions: 0, refused: 0 };
  const answered = new Set<string>();
  for (;;) {
    const m = await p.ws.next((x) => x.tableId === tableId && (
      (x.type === 'game_state' && x.legal) || x.type === 'tournament_ended' || (x.type === 'player_eliminated' && x.userId === p.userId)
    ), timeoutMs);
    if (m.type !== 'game_state') return stats;
    const s = latestState(p.ws, tableId);
    if (!s?.legal || answered.has(`${s.legal.handId}:${s.legal.seq}`)) continue;
    answered.add(`${s.legal.handId}:${s.legal.seq}`);
    const { action, amount } = policy === 'calm' ? calmAction(rng, s.legal) : randomAction(rng, s.legal);
    const r = await live.request(p.ws, { type: 'action', tableId, handId: s.legal.handId, seq: s.legal.seq, action, ...(amount ? { amount } : {}) });
    if (r.type === 'action_ack') stats.actions += 1;
    else stats.refused += 1;
  }
}

/** The messages of one table a connection received, in order. */
export const tableMessages = (p: { ws: { messages: Msg[] } }, tableId: string) => p.ws.messages.filter((x) => x.tableId === tableId);

/**
 * The post-commit order at a hand end with busts: each `player_eliminated` of the hand, then a fresh
 * `game_state`, then the hand's `hand_result`, with nothing of this table in between. Returns how
 * many hands had busts.
 */
export function expectBustOrder(messages: Msg[]): number {
  let hands = 0;
  for (let i = 0; i < messages.length; i++) {
    if (messages[i]!.type !== 'player_eliminated' || messages[i - 1]?.type === 'player_eliminated') continue;
    hands += 1;
    const handId = messages[i]!.handId;
    let j = i;
    while (messages[j]?.type === 'player_eliminated') {
      if (messages[j]!.handId !== handId) throw new Error(`eliminations of two hands run together at ${j}`);
      j += 1;
    }
    if (messages[j]?.type !== 'game_state') throw new Error(`after the eliminations of ${handId}: ${messages[j]?.type}, not game_state`);
    if (messages[j + 1]?.type !== 'hand_result' || messages[j + 1]!.handId !== handId) {
      throw new Error(`after the eliminations of ${handId} and its game_state: ${messages[j + 1]?.type} ${messages[j + 1]?.handId}, not its hand_result`);
    }
    // the fresh state shows the busted players out
    for (let k = i; k < j; k++) {
      const seat = messages[j]!.seats.find((s: Msg) => s.userId === messages[k]!.userId);
      if (seat && seat.stack !== '0') throw new Error(`the state after ${handId} shows busted ${messages[k]!.userId} with ${seat.stack}`);
    }
  }
  return hands;
}

/** The tournament's lifecycle row and its pool, read by the owner. */
export async function tournamentBooks(owner: pg.Pool, tableId: string) {
  const { rows } = await owner.query(
    `select t.tournament_state as state, t.current_level as level, t.auto_fold_count as "autoFolds",
            coalesce((select balance from cage.cage_accounts where account_type = 'tournament_pool' and scope = t.table_id), 0) as pool,
            (select coalesce(sum(amount), 0)::bigint from cage.payout_intents i where i.table_id = t.table_id) as payouts,
            (select count(*)::int from cage.payout_intents i where i.table_id = t.table_id and i.confirmed_at is null) as unconfirmed
       from game.tables t where t.table_id = $1`,
    [tableId],
  );
  return rows[0] as { state: string; level: number; autoFolds: number; pool: bigint; payouts: bigint; unconfirmed: number };
}

/**
 * The running platform of a tournament test file (auth, game, cage and worker roles, HAND_DELAY_MS 5,
 * spans kept in memory), started before its tests and stopped after them with the cage audit checked.
 */
export function tournamentPlatform(serviceName: string) {
  const ctx = {} as { db: TestDatabase; cagePool: pg.Pool; m: Awaited<ReturnType<typeof startMoneyPlatform>>; live: LiveClient };
  beforeAll(async () => {
    await installTelemetry({ serviceName, memory: true });
    ctx.db = await createTestDatabase();
    ctx.cagePool = ctx.db.pool('poker_cage');
    ctx.m = await startMoneyPlatform(ctx.db, { alsoWorker: true, env: { HAND_DELAY_MS: '5' } });
    ctx.live = liveClient(ctx.m, ctx.db);
  });
  afterAll(async () => {
    await ctx.live?.closeAll();
    await ctx.m?.platform.stop();
    if (ctx.cagePool) await expectCleanAudit(ctx.cagePool);
    await ctx.db?.drop();
    await shutdownTelemetry();
  });
  return ctx;
}

/**
 * For tests that decide a tournament without dealt hands (standings written as the owner, or
 * game.finish_tournament_hand, which stores no history): the mark the audit of causes leaves once it
 * has covered a table's hands (issue 31), written as the owner. Settlements and bet settlements wait
 * for it (cage_private.hands_audited); the audit itself would name stacks no hand ended with.
 */
export async function markHandsAudited(owner: Pick<pg.Pool, 'query'>, tableId: string) {
  await owner.query(
    `insert into cage_private.cause_table_marks (table_id, hand_number)
     select $1, coalesce((select max(h.hand_number) from game.hand_histories h where h.table_id = $1 and h.status = 'finished'), -1)
     on conflict (table_id) do update set hand_number = excluded.hand_number`, [tableId]);
}
