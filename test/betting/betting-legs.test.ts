// The betting legs against the real roles (auth, game, cage and betting roles on a real database).
// Betting has one boundary (issue 32): the cage's player routes move the money and write the bet in
// one SQL transaction each, so the cage reaches no betting service (the betting role runs as a
// platform of its own, not a peer of the cage's, to prove it). A stake, twins of one key, the one stakeRef schema, an unbet (from
// either side), claims of a settled market (20 concurrent claims credit once) and of a voided one,
// the refusals and replays of every route. Every test ends with the cage audit empty (afterEach).
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { expectCleanAudit } from '../helpers/cage.ts';
import { markHandsAudited } from '../helpers/tournament.ts';
import { createTestDatabase, playerGrant, type TestDatabase } from '../helpers/db.ts';
import { until } from '../helpers/live.ts';
import { call, moneyClient, AUTH_SECRET, ISSUER } from '../helpers/money.ts';
import { startTestPlatform, TEST_SERVICE_KEY } from '../helpers/platform.ts';
import { SNG } from '../helpers/tournament.ts';

let db: TestDatabase;
let cagePool: pg.Pool;
let bettingUrl = '';
let bettingPlatform: Awaited<ReturnType<typeof startTestPlatform>> | undefined;
let m: ReturnType<typeof moneyClient>;

beforeAll(async () => {
  db = await createTestDatabase();
  cagePool = db.pool('poker_cage');
  const platform = await startTestPlatform({
    databaseUrl: db.url,
    roles: ['auth', 'game', 'cage'],
    env: { AUTH_SECRET, AUTH_BASE_URL: ISSUER, ENABLE_TEST_AUTH: 'true', GAME_CALL_TIMEOUT_MS: '1000' },
  });
  // the betting service runs apart, as its own process would: the cage has no peer to reach it by
  bettingPlatform = await startTestPlatform({ databaseUrl: db.url, roles: ['betting'], env: {} });
  bettingUrl = bettingPlatform.url('betting');
  m = moneyClient(db, platform);
});
afterEach(async () => {
  await expectCleanAudit(cagePool);
});
afterAll(async () => {
  await m?.platform.stop();
  await bettingPlatform?.stop();
  await db?.drop();
});

type Player = Awaited<ReturnType<typeof m.player>>;

/**
 * A Sit-and-Go of two paid players, moved to playing as the worker's start job would (the grace
 * elapsed; the harness's clock at 1, so no hand reaches an elimination during a test), and its market
 * once the betting role opened it.
 */
async function playingTournament() {
  const host = await m.player();
  const tableId = await m.table(host.auth, SNG({ clockFactor: 1 }));
  const players: Player[] = [];
  for (let i = 0; i < 2; i++) {
    const p = await m.player(500);
    expect((await m.deposit(p.auth, { tableId, amount: 100 })).status).toBe(200);
    players.push(p);
  }
  await db.owner.query("update game.tables set starts_at = now() - interval '1 s' where table_id = $1", [tableId]);
  await db.owner.query('select game.tournament_begin_play($1)', [tableId]);
  const market = await until(async () => (await call(`${m.cage}/api/betting/markets?tableId=${tableId}`)).body?.markets?.[0], 'the market opened');
  expect(market).toMatchObject({ status: 'open', tableId, pool: '0', moneyKind: 'play' });
  return { tableId, players, marketId: market.marketId as string, runners: players.map((p) => p.userId) };
}

/** The standings of a played-out end (the winner holds every chip), as game.finish_tournament_hand leaves them. */
async function endWithWinner(tableId: string, winner: string) {
  await db.owner.query(
    `update game.table_players set tournament_stack = case when user_id = $2 then 2000 else 0 end,
            elimination_order = case when user_id = $2 then 1 else 2 end, tie_place = case when user_id = $2 then 1 else 2 end
      where table_id = $1 and status <> 'closed'`, [tableId, winner]);
  await db.owner.query("update game.tables set tournament_state = 'ended', ended_at = now(), current_hand_id = null where table_id = $1", [tableId]);
  await markHandsAudited(db.owner, tableId);
}

const stake = (p: Player, body: Record<string, unknown>, key: string = randomUUID()) =>
  call(`${m.cage}/api/betting/stake`, { headers: { ...p.auth, 'idempotency-key': key }, body });
const betsOf = async (p: Player) => (await call(`${m.cage}/api/betting/bets`, { headers: p.auth })).body.bets;
const market = async (marketId: string) => (await call(`${m.cage}/api/betting/markets/${encodeURIComponent(marketId)}`)).body;

describe('stake', () => {
  test('a stake debits the cage balance and the betting service records it; the market shows its pools and odds; a replay answers the same and moves nothing', async () => {
    const t = await playingTournament();
    const bettor = await m.player(300);
    const key = `stake-${randomUUID()}`;
    const r = await stake(bettor, { marketId: t.marketId, runnerUserId: t.runners[0], amount: 100 }, key);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'confirmed', marketId: t.marketId, runnerUserId: t.runners[0], amount: '100', idempotencyKey: key });
    expect(r.body.stakeRef).toBe(`bet-stake:${bettor.userId}:${key}`);
    expect(await m.balance(bettor.auth)).toBe(200);
    const other = await m.player(300);
    expect((await stake(other, { marketId: t.marketId, runnerUserId: t.runners[1], amount: '300' })).status).toBe(200);
    const shown = await market(t.marketId);
    expect(shown).toMatchObject({ status: 'open', pool: '400' });
    // (the market lists its runners in its own order: compared as a set)
    const byUser = (a: { userId: string }, b: { userId: string }) => a.userId.localeCompare(b.userId);
    expect([...shown.runners].sort(byUser)).toEqual([
      { userId: t.runners[0]!, pool: '100', bets: 1, odds: '4.00' },
      { userId: t.runners[1]!, pool: '300', bets: 1, odds: '1.33' },
    ].sort(byUser));

    const replay = await stake(bettor, { marketId: t.marketId, runnerUserId: t.runners[0], amount: 100 }, key);
    expect(replay.status).toBe(200);
    expect(replay.body).toMatchObject({ status: 'confirmed', stakeRef: r.body.stakeRef, replay: true });
    expect(await m.balance(bettor.auth)).toBe(200);
    expect(await betsOf(bettor)).toEqual([expect.objectContaining({ stakeRef: r.body.stakeRef, status: 'confirmed', amount: '100' })]);
    // the same key for another stake
    expect((await stake(bettor, { marketId: t.marketId, runnerUserId: t.runners[1], amount: 100 }, key)).body).toEqual({ error: 'idempotency_key_reused' });
  });

  test('refusals: no token, a bad body, no key, an unknown market, a runner not playing, a player betting on their own tournament, an overdraft, real money off; nothing moves', async () => {
    const t = await playingTournament();
    const bettor = await m.player(50);
    const body = { marketId: t.marketId, runnerUserId: t.runners[0], amount: 10 };
    expect((await call(`${m.cage}/api/betting/stake`, { body })).status).toBe(401);
    for (const bad of [{ ...body, amount: -1 }, { ...body, amount: 1.5 }, { ...body, runnerUserId: 'nobody' }, { ...body, extra: 1 }, {}, { ...body, marketId: 'x'.repeat(81) }]) {
      const r = await stake(bettor, bad);
      expect([r.status, r.body.error]).toEqual([400, 'bad_request']);
      expect(r.body.issues.length).toBeGreaterThan(0);
    }
    expect((await call(`${m.cage}/api/betting/stake`, { headers: bettor.auth, body })).body).toEqual({ error: 'missing_idempotency_key' });
    expect(await stake(bettor, { ...body, marketId: 'sng:no-such-table' })).toEqual({ status: 404, body: { error: 'market_not_found' } });
    expect(await stake(bettor, { ...body, runnerUserId: randomUUID() })).toEqual({ status: 404, body: { error: 'runner_not_found' } });
    expect(await stake(t.players[0]!, { ...body, runnerUserId: t.runners[1] })).toEqual({ status: 403, body: { error: 'bettor_is_player' } });
    expect(await stake(bettor, { ...body, amount: 51 })).toEqual({ status: 402, body: { error: 'insufficient_cage_balance' } });
    expect(await m.balance(bettor.auth)).toBe(50);
    expect(await betsOf(bettor)).toEqual([]);
    expect((await market(t.marketId)).pool).toBe('0');
  });
});

describe('one boundary', () => {
  test('a stake, an unbet, a claim and the market reads need no hop to another process: the cage reaches no betting service at all', async () => {
    // the cage's platform has no betting role (beforeAll): whatever reached for it would answer 503
    const t = await playingTournament();
    const bettor = await m.player(200);
    const r = await stake(bettor, { marketId: t.marketId, runnerUserId: t.runners[0], amount: 120 });
    expect(r).toMatchObject({ status: 200, body: { status: 'confirmed', amount: '120' } });
    expect(await m.balance(bettor.auth)).toBe(80);
    expect((await market(t.marketId)).pool).toBe('120');
    const back = await call(`${m.cage}/api/betting/unbet`, { headers: bettor.auth, body: { stakeRef: r.body.stakeRef } });
    expect(back).toMatchObject({ status: 200, body: { status: 'unbet', amount: '120' } });
    expect(await m.balance(bettor.auth)).toBe(200);
    expect((await stake(bettor, { marketId: t.marketId, runnerUserId: t.runners[0], amount: 50 })).status).toBe(200);
    await endWithWinner(t.tableId, t.runners[0]!);
    const claimed = await call(`${m.cage}/api/betting/claim`, { headers: bettor.auth, body: { marketId: t.marketId } });
    expect(claimed).toMatchObject({ status: 200, body: { status: 'confirmed', amount: '50', txHash: `bet-claim:${t.marketId}:${bettor.userId}` } });
    expect(await m.balance(bettor.auth)).toBe(200);
  });

  test('twenty concurrent stakes with one key: every answer is the one confirmed stake, one debit, one bet', async () => {
    const t = await playingTournament();
    const bettor = await m.player(300);
    const key = `twin-${randomUUID()}`;
    const answers = await Promise.all(Array.from({ length: 20 }, () => stake(bettor, { marketId: t.marketId, runnerUserId: t.runners[1], amount: 90 }, key)));
    expect(answers.map((a) => [a.status, a.body.status])).toEqual(Array(20).fill([200, 'confirmed']));
    expect(answers.filter((a) => !a.body.replay)).toHaveLength(1);
    expect(await m.balance(bettor.auth)).toBe(210);
    expect((await market(t.marketId)).pool).toBe('90');
  });

  test('one stakeRef schema: the cage and the betting service refuse the same malformed ref the same way (400 bad_request)', async () => {
    const bettor = await m.player(0);
    const key = { 'x-service-key': TEST_SERVICE_KEY };
    for (const ref of ['nope', `bet-stake:${randomUUID()}`, 'x'.repeat(200)]) {
      expect((await call(`${m.cage}/api/betting/unbet`, { headers: bettor.auth, body: { stakeRef: ref } })).body.error).toBe('bad_request');
      expect((await call(`${bettingUrl}/internal/bets`, { headers: key, body: { stakeRef: ref } })).body.error).toBe('bad_request');
    }
    // a well-formed ref of nobody's stake: not found on both sides
    const ref = `bet-stake:${randomUUID()}:k`;
    expect(await call(`${m.cage}/api/betting/unbet`, { headers: bettor.auth, body: { stakeRef: ref } })).toEqual({ status: 404, body: { error: 'stake_not_found' } });
    expect(await call(`${bettingUrl}/internal/bets`, { headers: key, body: { stakeRef: ref } })).toEqual({ status: 404, body: { error: 'stake_not_found' } });
  });

  test('the betting service\'s own unbet (its route, the bettor\'s grant) credits the stake back in the same transaction: nothing is left for a reconciler', async () => {
    const t = await playingTournament();
    const bettor = await m.player(100);
    const r = await stake(bettor, { marketId: t.marketId, runnerUserId: t.runners[0], amount: 70 });
    expect(r.status).toBe(200);
    const sid = await playerGrant(db.owner, bettor.userId);
    const done = await call(`${bettingUrl}/internal/unbets`, { headers: { 'x-service-key': TEST_SERVICE_KEY }, body: { stakeRef: r.body.stakeRef, sid } });
    expect(done).toMatchObject({ status: 200, body: { status: 'unbet', stakeRef: r.body.stakeRef, amount: '70' } });
    expect(await m.balance(bettor.auth)).toBe(100);
    expect((await betsOf(bettor))[0]).toMatchObject({ status: 'unbet', refundTxHash: `bet-unbet:${r.body.stakeRef}` });
  });
});

describe('unbet', () => {
  test('while the market is open the bet leaves the pool and the journal credits it back (one transaction); a replay moves nothing; refusals', async () => {
    const t = await playingTournament();
    const bettor = await m.player(200);
    const r = await stake(bettor, { marketId: t.marketId, runnerUserId: t.runners[0], amount: 150 });
    expect(r.status).toBe(200);
    const thief = await m.player(0);
    const unbet = (p: Player, body: unknown) => call(`${m.cage}/api/betting/unbet`, { headers: p.auth, body });
    expect(await unbet(thief, { stakeRef: r.body.stakeRef })).toEqual({ status: 404, body: { error: 'stake_not_found' } });
    expect((await unbet(bettor, { stakeRef: 5 })).body.error).toBe('bad_request');
    expect((await call(`${m.cage}/api/betting/unbet`, { body: { stakeRef: r.body.stakeRef } })).status).toBe(401);
    const done = await unbet(bettor, { stakeRef: r.body.stakeRef });
    expect(done).toEqual({ status: 200, body: { status: 'unbet', stakeRef: r.body.stakeRef, txHash: `bet-unbet:${r.body.stakeRef}`, amount: '150', moneyKind: 'play' } });
    expect(await m.balance(bettor.auth)).toBe(200);
    expect((await market(t.marketId)).pool).toBe('0');
    expect((await unbet(bettor, { stakeRef: r.body.stakeRef })).body).toMatchObject({ status: 'unbet', replay: true });
    expect(await m.balance(bettor.auth)).toBe(200);

    const kept = await stake(bettor, { marketId: t.marketId, runnerUserId: t.runners[0], amount: 20 });
    // once the market closed (the first elimination), no unbet
    await endWithWinner(t.tableId, t.runners[1]!);
    expect(await unbet(bettor, { stakeRef: kept.body.stakeRef })).toEqual({ status: 409, body: { error: 'market_closed' } });
    expect(await m.balance(bettor.auth)).toBe(180);
  });
});

describe('settlement and claims', () => {
  test('a settled market pays the winner\'s backers the whole pool pro rata; 20 concurrent claims credit once; a loser has nothing to claim', async () => {
    const t = await playingTournament();
    const [w, l] = t.runners as [string, string];
    const a = await m.player(1000);
    const b = await m.player(1000);
    const c = await m.player(1000);
    expect((await stake(a, { marketId: t.marketId, runnerUserId: w, amount: 100 })).status).toBe(200);
    expect((await stake(b, { marketId: t.marketId, runnerUserId: w, amount: 200 })).status).toBe(200);
    expect((await stake(c, { marketId: t.marketId, runnerUserId: l, amount: 701 })).status).toBe(200);
    const claim = (p: Player) => call(`${m.cage}/api/betting/claim`, { headers: p.auth, body: { marketId: t.marketId } });
    expect(await claim(a)).toEqual({ status: 409, body: { error: 'market_not_settled' } });

    await endWithWinner(t.tableId, w);
    // pool 1001: a 1001 x 100/300 = 333.67, b 667.33: floors 333 + 667 = 1000, the chip left to the bigger stake
    const shown = await until(async () => { const s = await market(t.marketId); return s.status === 'settled' && s; }, 'settled');
    expect(shown).toMatchObject({ winnerUserId: w, pool: '1001', voidReason: null });
    const claims = await Promise.all(Array.from({ length: 20 }, () => claim(a)));
    expect(claims.map((r) => r.status)).toEqual(Array(20).fill(200));
    expect(claims.filter((r) => !r.body.replay)).toHaveLength(1);
    expect(new Set(claims.map((r) => r.body.txHash))).toEqual(new Set([`bet-claim:${t.marketId}:${a.userId}`]));
    expect(claims.every((r) => r.body.amount === '333')).toBe(true);
    expect(await m.balance(a.auth)).toBe(900 + 333);
    expect((await claim(b)).body).toMatchObject({ status: 'confirmed', amount: '668' });
    expect(await m.balance(b.auth)).toBe(800 + 668);
    expect(await claim(c)).toEqual({ status: 409, body: { error: 'nothing_to_claim' } });
    expect((await call(`${m.cage}/api/betting/claim`, { headers: c.auth, body: { marketId: 'sng:none' } })).body).toEqual({ error: 'market_not_found' });
    expect((await call(`${m.cage}/api/betting/claim`, { headers: c.auth, body: {} })).body.error).toBe('bad_request');
    const { rows } = await db.owner.query("select balance from cage.cage_accounts where account_type = 'betting' and money_kind = 'play'");
    expect(rows[0].balance).toBeGreaterThanOrEqual(0n);
  });

  test('a force-ended tournament voids its market: every bettor claims their stakes back', async () => {
    const t = await playingTournament();
    const a = await m.player(100);
    expect((await stake(a, { marketId: t.marketId, runnerUserId: t.runners[0], amount: 30 })).status).toBe(200);
    expect((await stake(a, { marketId: t.marketId, runnerUserId: t.runners[1], amount: 20 })).status).toBe(200);
    await db.owner.query('select game.tournament_force_end($1)', [t.tableId]);
    const shown = await until(async () => { const s = await market(t.marketId); return s.status === 'void' && s; }, 'void');
    expect(shown.voidReason).toBe('force_ended');
    const r = await call(`${m.cage}/api/betting/claim`, { headers: a.auth, body: { marketId: t.marketId } });
    expect(r.body).toMatchObject({ status: 'confirmed', amount: '50' });
    expect(await m.balance(a.auth)).toBe(100);
  });

  test('nobody backed the winner: void, stakes back', async () => {
    const t = await playingTournament();
    const a = await m.player(100);
    expect((await stake(a, { marketId: t.marketId, runnerUserId: t.runners[0], amount: 30 })).status).toBe(200);
    await endWithWinner(t.tableId, t.runners[1]!);
    const shown = await until(async () => { const s = await market(t.marketId); return s.status === 'void' && s; }, 'void');
    expect(shown.voidReason).toBe('nobody_backed_the_winner');
    expect((await call(`${m.cage}/api/betting/claim`, { headers: a.auth, body: { marketId: t.marketId } })).body).toMatchObject({ amount: '30' });
    expect(await m.balance(a.auth)).toBe(100);
  });
});

describe('the other routes', () => {
  test('market create is a no-op that answers success; the reads refuse bad input with a code', async () => {
    expect(await call(`${m.cage}/api/betting/markets`, { body: { tableId: 'anything' } })).toMatchObject({ status: 200, body: { ok: true } });
    expect((await call(`${m.cage}/api/betting/markets`)).body.error).toBe('bad_request');
    expect(await call(`${m.cage}/api/betting/markets?tableId=nope`)).toEqual({ status: 200, body: { tableId: 'nope', markets: [] } });
    expect(await call(`${m.cage}/api/betting/markets/sng%3Anope`)).toEqual({ status: 404, body: { error: 'market_not_found' } });
    expect((await call(`${m.cage}/api/betting/bets`)).status).toBe(401);
    // the betting role's internal routes take the service key only
    for (const [path, body] of [['/internal/bets', { stakeRef: 'bet-stake:x' }], ['/internal/unbets', {}], ['/internal/claims', {}]] as const) {
      expect(await call(`${bettingUrl}${path}`, { body })).toEqual({ status: 401, body: { error: 'invalid_service_key' } });
    }
    const key = { 'x-service-key': TEST_SERVICE_KEY };
    expect((await call(`${bettingUrl}/internal/bets`, { headers: key, body: { stakeRef: 'nope' } })).body.error).toBe('bad_request');
    expect(await call(`${bettingUrl}/internal/bets`, { headers: key, body: { stakeRef: `bet-stake:${randomUUID()}:k` } })).toEqual({ status: 404, body: { error: 'stake_not_found' } });
    expect(await call(`${bettingUrl}/internal/unbets`, { headers: key, body: { stakeRef: `bet-stake:${randomUUID()}:k`, sid: randomUUID() } })).toEqual({ status: 401, body: { error: 'session_required' } });
    expect(await call(`${bettingUrl}/internal/claims`, { headers: key, body: { marketId: 'sng:none', sid: randomUUID() } })).toEqual({ status: 401, body: { error: 'session_required' } });
  });
});
