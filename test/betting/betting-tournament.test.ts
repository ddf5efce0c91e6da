// A whole Sit-and-Go with a betting market, every part real (auth, game, cage, worker and betting roles):
// two players pay, the worker starts the tournament and the betting role opens its market; two
// bettors back one player each through the cage; the players play it out (seeded bots); the first
// elimination closes the market (a later stake is refused), the standings settle it; the winner's
// backer claims the whole pool once, the loser's has nothing to claim; the cage audit is empty.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { installTelemetry, shutdownTelemetry } from '../../server/telemetry/index.ts';
import { expectCleanAudit } from '../helpers/cage.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { liveClient, prng, until, type LiveClient, type Msg } from '../helpers/live.ts';
import { call, startMoneyPlatform } from '../helpers/money.ts';
import { playBot, SNG } from '../helpers/tournament.ts';

let db: TestDatabase;
let cagePool: pg.Pool;
let m: Awaited<ReturnType<typeof startMoneyPlatform>>;
let live: LiveClient;

beforeAll(async () => {
  await installTelemetry({ serviceName: 'betting-tournament-test', memory: true });
  db = await createTestDatabase();
  cagePool = db.pool('poker_cage');
  m = await startMoneyPlatform(db, { alsoWorker: true, alsoBetting: true, env: { HAND_DELAY_MS: '5' } });
  live = liveClient(m, db);
});
afterAll(async () => {
  await live?.closeAll();
  await m?.platform.stop();
  if (cagePool) await expectCleanAudit(cagePool);
  await db?.drop();
  await shutdownTelemetry();
});

const marketOf = async (tableId: string) => (await call(`${m.cage}/api/betting/markets?tableId=${tableId}`)).body.markets[0] as Msg | undefined;

test('a market opens when the tournament plays, closes at the first elimination, settles from the standings; the winner\'s backer claims the pool once', async () => {
  const host = await m.player();
  // 3 s levels and 0.3 s turns: nobody is out before the bettors stake (the players only act after)
  const tableId = await m.table(host.auth, SNG({ clockFactor: 10 }));
  const a = await live.player(500);
  const b = await live.player(500);
  // a spectator's connection watches the table (the bots read the players' own)
  const watcher = await live.player(0);
  for (const p of [a, b, watcher]) await live.join(p, tableId);
  expect(await marketOf(tableId)).toBeUndefined();
  expect((await m.deposit(a.auth, { tableId, amount: 100 })).status).toBe(200);
  expect((await m.deposit(b.auth, { tableId, amount: 100 })).body).toMatchObject({ status: 'confirmed', tournamentState: 'starting' });
  expect(await marketOf(tableId)).toBeUndefined(); // not before it plays

  await watcher.ws.next((x) => x.type === 'tournament_state_changed' && x.tableId === tableId && x.state === 'playing', 10_000);
  const opened = await until(() => marketOf(tableId), 'the market opened');
  expect(opened).toMatchObject({ status: 'open', pool: '0', closedAt: null, settledAt: null });
  expect(opened.runners.map((r: Msg) => r.userId).sort()).toEqual([a.userId, b.userId].sort());

  const backA = await m.player(300);
  const backB = await m.player(300);
  const stake = (p: { auth: Record<string, string> }, runnerUserId: string, amount: number) =>
    call(`${m.cage}/api/betting/stake`, { headers: { ...p.auth, 'idempotency-key': randomUUID() }, body: { marketId: opened.marketId, runnerUserId, amount } });
  expect((await stake(backA, a.userId, 100)).body).toMatchObject({ status: 'confirmed', amount: '100' });
  expect((await stake(backB, b.userId, 50)).body).toMatchObject({ status: 'confirmed', amount: '50' });
  expect(await marketOf(tableId)).toMatchObject({ status: 'open', pool: '150' });

  // the players play it out
  const rng = prng(19);
  const bots = [playBot(live, a, tableId, rng), playBot(live, b, tableId, rng)];
  const eliminated = await watcher.ws.next((x) => x.type === 'player_eliminated' && x.tableId === tableId, 120_000);
  // the first elimination closes it: a stake now is refused and nothing moves
  expect(await stake(backA, a.userId, 10)).toEqual({ status: 409, body: { error: 'market_closed' } });
  expect(await m.balance(backA.auth)).toBe(200);
  const ended = await watcher.ws.next((x) => x.type === 'tournament_ended' && x.tableId === tableId, 60_000);
  await Promise.all(bots);
  const winner = ended.finalStandings.find((s: Msg) => s.position === 1).userId as string;
  expect(winner).not.toBe(eliminated.userId);

  const settled = await until(async () => { const s = await marketOf(tableId); return s?.status === 'settled' && s; }, 'the market settled', 10_000);
  expect(settled).toMatchObject({ winnerUserId: winner, voidReason: null, pool: '150' });
  expect(new Date(settled.closedAt).getTime()).toBeLessThanOrEqual(new Date(settled.settledAt).getTime());
  const { rows } = await db.owner.query('select play_started_at from game.tables where table_id = $1', [tableId]);
  expect(new Date(opened.openedAt).getTime()).toBeGreaterThanOrEqual(rows[0].play_started_at.getTime());

  const [winning, losing] = winner === a.userId ? [backA, backB] : [backB, backA];
  const before = await m.balance(winning.auth);
  const claims = await Promise.all(Array.from({ length: 5 }, () => call(`${m.cage}/api/betting/claim`, { headers: winning.auth, body: { marketId: opened.marketId } })));
  expect(claims.every((r) => r.status === 200 && r.body.amount === '150')).toBe(true);
  expect(claims.filter((r) => !r.body.replay)).toHaveLength(1);
  expect(await m.balance(winning.auth)).toBe(before + 150);
  expect(await call(`${m.cage}/api/betting/claim`, { headers: losing.auth, body: { marketId: opened.marketId } })).toEqual({ status: 409, body: { error: 'nothing_to_claim' } });
  await expectCleanAudit(cagePool);
}, 180_000);
