// Whole tournaments over real websockets against running roles (auth, game, cage, worker): ten
// bots (humans registered over the websocket, agents through the internal route) play a 10-seat
// tournament to the end on an accelerated clock; the events' order after busts; stand_up in each
// state; the internal routes' codes; force-end and the operator's reads; a reserve expiring; and a
// restart of the game role and of the worker in the middle of a level.
import type pg from 'pg';
import { expectCleanAudit } from '../helpers/cage.ts';
import type { TestDatabase } from '../helpers/db.ts';
import { prng, until, type LiveClient, type LivePlayer, type Msg } from '../helpers/live.ts';
import { call, startMoneyPlatform } from '../helpers/money.ts';
import { startTestPlatform } from '../helpers/platform.ts';
import { expectBustOrder, playBot, SNG, tableMessages, tournamentBooks, tournamentPlatform } from '../helpers/tournament.ts';
import { finishedSpans } from '../../server/telemetry/index.ts';
import type { LiveTables } from '../../server/game/live/ws.ts';

const t = tournamentPlatform('tournament-live-test');
let db: TestDatabase;
let cagePool: pg.Pool;
let m: Awaited<ReturnType<typeof startMoneyPlatform>>;
let live: LiveClient;
beforeAll(() => {
  ({ db, cagePool, m, live } = t);
});

const internal = (path: string, body: Record<string, unknown>) => call(`${m.game}${path}`, { headers: m.service, body });

/** A human registered over the websocket and paid through the bank's deposit (its reserved seat named). */
async function humanEntry(tableId: string, chips = 1000): Promise<LivePlayer> {
  const p = await live.player(chips);
  await live.join(p, tableId);
  const r = await live.request(p.ws, { type: 'register_for_tournament', tableId });
  if (r.type !== 'tournament_registered') throw new Error(`registration refused: ${JSON.stringify(r)}`);
  const paid = await m.deposit(p.auth, { tableId, amount: 100, seatIndex: r.seatIndex });
  if (paid.status !== 200) throw new Error(`entry refused: ${JSON.stringify(paid.body)}`);
  return p;
}

/** An agent registered through the internal route (its owner pays), playing over its own connection. */
async function agentEntry(tableId: string, chips = 1000): Promise<LivePlayer> {
  const p = await live.player(chips, { agent: true });
  const r = await internal('/internal/tournament-register', { tableId, agentId: p.agentId });
  expect(r).toMatchObject({ status: 200, body: { ok: true, status: 'reserved', ownerUserId: p.userId } });
  await live.join(p, tableId);
  const paid = await m.deposit(p.auth, { tableId, amount: 100 });
  if (paid.status !== 200) throw new Error(`entry refused: ${JSON.stringify(paid.body)}`);
  return p;
}

test('ten bots play a 10-seat tournament to the end: closed, payouts summing to the pool, the house fee kept, the books clean, the events in order', async () => {
  const host = await m.player();
  // levels of 30 s at a clock factor of 30 (1 s each), turns of 30 s (1 s)
  const tableId = await m.table(host.auth, SNG({
    seats: 10, clockFactor: 30, actionTimeoutSeconds: 30, deckSeed: 'ten-bots', startingStack: 5000,
    blindStructure: { startingSmallBlind: 10, increaseFactor: 1.5, levelDurationSeconds: 30, anteStartLevel: 2, startingAnte: 5, anteIncreaseFactor: 1.5 },
  }));
  const spectator = await live.player(0);
  await live.join(spectator, tableId);
  const players: LivePlayer[] = [];
  for (let i = 0; i < 7; i++) players.push(await humanEntry(tableId));
  for (let i = 0; i < 3; i++) players.push(await agentEntry(tableId));
  expect((await tournamentBooks(db.owner, tableId)).state).not.toBe('registering');

  // two bots random (all-ins often), eight calm (the blinds do the work): the field lasts several levels
  const stats = await Promise.all(players.map((p, i) => playBot(live, p, tableId, prng(1000 + i), i < 2 ? 'random' : 'calm')));
  const closed = await spectator.ws.next((x) => x.tableId === tableId && x.type === 'tournament_state_changed' && x.state === 'closed', 60_000);
  expect(typeof closed.closedAt).toBe('number');

  const books = await tournamentBooks(db.owner, tableId);
  expect(books).toMatchObject({ state: 'closed', unconfirmed: 0, payouts: 900n, pool: 100n }); // (100 - 10) x 10 paid out, 10 x 10 kept
  const balances = await Promise.all(players.map((p) => m.balance(p.auth)));
  expect(balances.reduce((t, b) => t + b, 0)).toBe(10 * 1000 - 100 * 10 + 900);

  const seen = tableMessages(spectator, tableId);
  const ended = seen.find((x) => x.type === 'tournament_ended')!;
  expect(ended.payouts.map((p: Msg) => p.position)).toEqual([1, 2, 3]);
  expect(ended.payouts.reduce((t: bigint, p: Msg) => t + BigInt(p.amount), 0n)).toBe(900n);
  expect(ended.finalStandings.map((s: Msg) => s.position)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  expect(seen.filter((x) => x.type === 'player_eliminated')).toHaveLength(9);
  expect(expectBustOrder(seen)).toBeGreaterThan(0);
  expect(seen.filter((x) => x.type === 'tournament_payout_settled').map((x) => x.position).sort()).toEqual([1, 2, 3]);
  const states = seen.filter((x) => x.type === 'tournament_state_changed').map((x) => x.state);
  expect(states).toEqual(['starting', 'playing', 'ended', 'settling', 'closed']);
  // closed comes after every payout is settled, and the standings before them
  const at = (pred: (x: Msg) => boolean) => seen.findIndex(pred);
  const closedAt = at((x) => x.type === 'tournament_state_changed' && x.state === 'closed');
  expect(seen.map((x, i) => [x.type, i]).filter(([type]) => type === 'tournament_payout_settled').every(([, i]) => (i as number) < closedAt)).toBe(true);
  expect(at((x) => x.type === 'tournament_ended')).toBeLessThan(at((x) => x.type === 'tournament_payout_settled'));
  // every level the database reached while it played was announced, in order, with its blinds
  const levels = seen.filter((x) => x.type === 'blind_level_changed');
  const reached = (await db.owner.query('select current_level from game.tables where table_id = $1', [tableId])).rows[0].current_level;
  expect(levels.map((x) => x.currentLevel).at(-1) ?? 0).toBe(reached);
  // each level once, none skipped
  expect(levels.map((x) => x.currentLevel)).toEqual(Array.from({ length: reached }, (_, i) => i + 1));
  expect(levels.every((x, i) => (i === 0 || x.currentLevel > levels[i - 1]!.currentLevel) && typeof x.levelEndsAt === 'number' && BigInt(x.bigBlind) === 2n * BigInt(x.smallBlind))).toBe(true);
  // a player's view while it played
  const view = players[0]!.ws.messages.find((x) => x.type === 'game_state' && x.tournamentMyView);
  expect(view?.tournamentMyView).toMatchObject({ rank: expect.any(Number), stackInBigBlinds: expect.any(Number), mRatio: expect.any(Number) });
  expect(stats.reduce((t, s) => t + s.actions, 0)).toBeGreaterThan(10);
  await expectCleanAudit(cagePool);
}, 90_000);

test('a tournament hand end that committed but whose answer was lost is retried and read back: the hand recorded once, its bust announced once', async () => {
  const host = await m.player();
  const tableId = await m.table(host.auth, SNG({ seats: 2, clockFactor: 30, actionTimeoutSeconds: 30, deckSeed: 'lost-answer', startingStack: 1000 }));
  const spectator = await live.player(0);
  await live.join(spectator, tableId);
  const hands = m.platform.role<{ role: string; live: LiveTables; stop(): Promise<void> }>('game').live.hands;
  const end = hands.end;
  let lost = 0;
  // the end that busts someone commits, then its answer is lost (as a connection dropped after the commit)
  hands.end = async (h) => {
    const answer = await end(h);
    if (h.tableId === tableId && answer.busted.length > 0 && lost++ === 0) throw new Error('Connection terminated unexpectedly');
    return answer;
  };
  try {
    const players = [await humanEntry(tableId), await humanEntry(tableId)];
    await Promise.all(players.map((p, i) => playBot(live, p, tableId, prng(77 + i), 'random')));
    // the retry (1 s later) reads the commit back and announces the bust; then the lifecycle closes
    const bust = await spectator.ws.next((x) => x.tableId === tableId && x.type === 'player_eliminated', 30_000);
    await spectator.ws.next((x) => x.type === 'hand_result' && x.handId === bust.handId, 10_000);
    await until(async () => (await tournamentBooks(db.owner, tableId)).state === 'closed', 'the tournament closed');
  } finally {
    hands.end = end;
  }
  expect(lost).toBe(2); // the first attempt, and the retry that read the commit back
  const seen = tableMessages(spectator, tableId);
  const eliminated = seen.filter((x) => x.type === 'player_eliminated');
  expect(eliminated).toHaveLength(1);
  expect(eliminated[0]).toMatchObject({ position: 2, remaining: 1 });
  const { rows } = await db.owner.query(
    "select hand_id from game.hand_histories where table_id = $1 and status = 'finished' and cardinality(busted) > 0", [tableId]);
  expect(rows).toEqual([{ hand_id: eliminated[0]!.handId }]);
  const results = seen.filter((x) => x.type === 'hand_result').map((x) => x.handId);
  expect(new Set(results).size).toBe(results.length);
  expect(results).toContain(eliminated[0]!.handId);
  expect((await tournamentBooks(db.owner, tableId)).state).toBe('closed');
  await expectCleanAudit(cagePool);
}, 90_000);

test('stand_up: a refund while registering, refused once it starts; the internal routes answer every code', async () => {
  const host = await m.player();
  const tableId = await m.table(host.auth, SNG({ seats: 2, clockFactor: 1 }));
  const cash = await m.table(host.auth);
  const a = await humanEntry(tableId);
  expect(await m.balance(a.auth)).toBe(900);
  const left = await live.request(a.ws, { type: 'stand_up', tableId });
  expect(left).toMatchObject({ type: 'tournament_unregistered', status: 'refunded', amount: '100' });
  expect(await m.balance(a.auth)).toBe(1000);

  const agent = await live.player(1000, { agent: true });
  expect((await internal('/internal/tournament-register', { tableId: cash, agentId: agent.agentId })).body).toEqual({ error: 'not_a_tournament' });
  expect((await internal('/internal/tournament-register', { tableId: 'no-such-table', agentId: agent.agentId })).body).toEqual({ error: 'table_not_found' });
  expect((await internal('/internal/tournament-register', { tableId, agentId: '00000000-0000-4000-8000-000000000000' })).body).toEqual({ error: 'agent_not_found' });
  expect((await internal('/internal/tournament-register', { tableId, agentId: agent.agentId })).status).toBe(200);
  expect(await internal('/internal/tournament-register', { tableId, agentId: agent.agentId })).toEqual({ status: 409, body: { error: 'tournament_already_registered' } });
  expect((await call(`${m.game}/internal/tournament-register`, { body: { tableId, agentId: agent.agentId } })).status).toBe(401);
  expect((await internal('/internal/tournament-unregister', { tableId, agentId: agent.agentId })).body).toMatchObject({ ok: true, status: 'released' });
  expect((await internal('/internal/tournament-register', { tableId, agentId: agent.agentId })).status).toBe(200);
  expect((await m.deposit(agent.auth, { tableId, amount: 100 })).status).toBe(200);
  expect(await internal('/internal/tournament-unregister', { tableId, agentId: agent.agentId })).toEqual({ status: 409, body: { error: 'paid_registration_use_refund_path' } });

  const b = await humanEntry(tableId); // the field is full: starting
  await b.ws.next((x) => x.type === 'tournament_state_changed' && x.state === 'starting', 5000);
  expect(await live.request(b.ws, { type: 'stand_up', tableId })).toMatchObject({ type: 'error', code: 'stand_up_not_allowed_in_tournament' });
  expect((await call(`${m.cage}/api/tournament/unregister`, { headers: b.auth, body: { tableId } })).body).toEqual({ error: 'tournament_not_in_registration' });
  // the audience gates, on each path
  const humansOnly = await m.table(host.auth, SNG({ seats: 3, kind: 'human_only' }));
  const agentsOnly = await m.table(host.auth, SNG({ seats: 3, kind: 'agent' }));
  const bot = await live.player(1000, { agent: true });
  expect(await internal('/internal/tournament-register', { tableId: humansOnly, agentId: bot.agentId })).toEqual({ status: 403, body: { error: 'agent_not_allowed_at_human_table' } });
  expect((await internal('/internal/tournament-register', { tableId: agentsOnly, agentId: bot.agentId })).status).toBe(200);
  const human = await live.player(1000);
  await live.join(human, agentsOnly);
  expect(await live.request(human.ws, { type: 'register_for_tournament', tableId: agentsOnly })).toMatchObject({ type: 'error', code: 'humans_not_allowed_at_agent_table' });
  expect((await m.deposit(human.auth, { tableId: agentsOnly, amount: 100 })).body).toEqual({ error: 'humans_not_allowed_at_agent_table' });
  expect(await m.balance(human.auth)).toBe(1000);
  const other = await humanEntry(await m.table(host.auth, SNG({ seats: 3 })));
  // the field filled (starting: tournament_full) or play began (tournament_not_in_registration)
  const late = await internal('/internal/tournament-register', { tableId, agentId: (await live.player(0, { agent: true })).agentId });
  expect(late.status).toBe(409);
  expect(['tournament_full', 'tournament_not_in_registration']).toContain(late.body.error);
  // the operator sees what became of each registration: a refunded human, a released agent
  const detail = await call(`${m.game}/admin/tournaments/${tableId}`, { headers: (await m.operator()).auth });
  expect(detail.body.entrants.map((e: Msg) => e.registration).sort()).toEqual(['paid', 'paid', 'refunded', 'released']);
  expect(detail.body.registeredCount).toBe(2);
  expect(other).toBeDefined();
});

test('force-end: 409 with the state outside playing; in play the live seats are ranked by stack and paid; the operator reads list and detail', async () => {
  const host = await m.player();
  const tableId = await m.table(host.auth, SNG({ seats: 2, clockFactor: 1, actionTimeoutSeconds: 300 }));
  expect(await internal('/admin/force-end-tournament', { tableId })).toEqual({ status: 409, body: { error: "cannot force-end from state 'registering'", code: 'cannot_force_end', state: 'registering' } });
  const a = await humanEntry(tableId);
  await humanEntry(tableId);
  expect(await internal('/internal/force-end-tournament', { tableId })).toEqual({ status: 409, body: { error: "cannot force-end from state 'starting'", code: 'cannot_force_end', state: 'starting' } });
  await a.ws.next((x) => x.type === 'game_state' && x.handId && x.tournament?.state === 'playing', 10_000);
  expect(await internal('/admin/force-end-tournament', { tableId })).toMatchObject({ status: 200, body: { ok: true, state: 'ended' } });
  await a.ws.next((x) => x.type === 'tournament_state_changed' && x.state === 'closed', 20_000);
  expect(await internal('/admin/force-end-tournament', { tableId })).toEqual({ status: 409, body: { error: "cannot force-end from state 'closed'", code: 'cannot_force_end', state: 'closed' } });
  const books = await tournamentBooks(db.owner, tableId);
  expect(books).toMatchObject({ state: 'closed', payouts: 180n, pool: 20n });

  const { auth } = await m.operator();
  const list = await call(`${m.game}/admin/tournaments`, { headers: auth });
  expect(list.status).toBe(200);
  // the field that played is counted once the tournament is over
  expect(list.body.tournaments.find((t: Msg) => t.tableId === tableId)).toMatchObject({ state: 'closed', seats: 2, entryFee: '100', registeredCount: 2, forceEndAvailable: false });
  const detail = await call(`${m.game}/admin/tournaments/${tableId}`, { headers: auth });
  // no hand finished (turns of 300 s): equal stacks at the force-end tie, and share 1st's prize
  expect(detail.body).toMatchObject({
    tableId, state: 'closed',
    payouts: [{ position: 1, amount: '90', confirmedAt: expect.any(String) }, { position: 2, amount: '90', confirmedAt: expect.any(String) }],
  });
  expect(detail.body.entrants.map((e: Msg) => e.position).sort()).toEqual([1, 2]);
  expect(detail.body).toMatchObject({ registeredCount: 2 });
  expect(detail.body.entrants.map((e: Msg) => e.registration)).toEqual(['played', 'played']);
  expect((await call(`${m.game}/admin/tournaments`, { headers: (await m.player()).auth })).status).toBe(403);
  expect((await call(`${m.game}/admin/tournaments/${tableId}`)).status).toBe(401);
  expect((await call(`${m.game}/admin/tournaments/no-such`, { headers: auth })).status).toBe(404);
  await expectCleanAudit(cagePool);
});

test('copilot tables: register_for_tournament names the player\'s own advisor agent; without one, or on another kind, the coded refusals', async () => {
  const host = await m.player();
  const copilot = await m.table(host.auth, SNG({ seats: 3, kind: 'copilot' }));
  const open = await m.table(host.auth, SNG({ seats: 3 }));
  const p = await live.player(1000);
  const advisor = await live.createAgent(p.auth, 'advisor');
  const strangers = await live.createAgent((await m.player()).auth, 'not-mine');
  await live.join(p, copilot);
  await live.join(p, open);
  expect(await live.request(p.ws, { type: 'register_for_tournament', tableId: copilot })).toMatchObject({ type: 'error', code: 'advisor_required' });
  expect(await live.request(p.ws, { type: 'register_for_tournament', tableId: copilot, advisorAgentId: strangers })).toMatchObject({ type: 'error', code: 'agent_not_found' });
  expect(await live.request(p.ws, { type: 'register_for_tournament', tableId: open, advisorAgentId: advisor })).toMatchObject({ type: 'error', code: 'advisor_on_non_copilot_kind' });
  expect(await live.request(p.ws, { type: 'register_for_tournament', tableId: copilot, advisorAgentId: advisor })).toMatchObject({ type: 'tournament_registered', registeredCount: 1 });
  const { rows } = await db.owner.query("select copilot_advisor_agent_id from game.table_players where table_id = $1 and status <> 'closed'", [copilot]);
  expect(rows).toEqual([{ copilot_advisor_agent_id: advisor }]);
  expect(await live.request(p.ws, { type: 'register_for_tournament', tableId: copilot, advisorAgentId: advisor })).toMatchObject({ type: 'error', code: 'tournament_already_registered' });
  const cash = await m.table(host.auth);
  await live.join(p, cash);
  expect(await live.request(p.ws, { type: 'register_for_tournament', tableId: cash })).toMatchObject({ type: 'error', code: 'not_a_tournament' });
});

test('an unpaid reserve self-releases after 120 s of the table\'s clock (a worker job)', async () => {
  const host = await m.player();
  const tableId = await m.table(host.auth, SNG({ seats: 3, clockFactor: 120 })); // 120 s = 1 s
  const agent = await live.player(0, { agent: true });
  expect((await internal('/internal/tournament-register', { tableId, agentId: agent.agentId })).status).toBe(200);
  await until(async () => (await db.owner.query("select count(*)::int as n from game.table_players where table_id = $1 and status <> 'closed'", [tableId])).rows[0].n === 0,
    'the reserve released', 10_000, 50);
  // the seat is free again
  expect((await internal('/internal/tournament-register', { tableId, agentId: agent.agentId })).status).toBe(200);
});

test('a restart of the game role and of the worker mid-level: the hand in flight replays from its start stacks, the timer is re-armed, no chip is lost', async () => {
  const host = await m.player();
  // turns of 300 s: nobody acts, so a hand is in flight when the game role stops
  const tableId = await m.table(host.auth, SNG({ seats: 2, clockFactor: 10, actionTimeoutSeconds: 300 })); // 3 s levels
  const a = await humanEntry(tableId);
  await humanEntry(tableId);
  const inFlight = await a.ws.next((x) => x.type === 'game_state' && x.handId && x.tournament?.state === 'playing', 10_000);
  const gameUrl = m.game;
  await m.platform.role('game').stop();
  await m.platform.role('worker').stop();
  const { rows: [abandoned] } = await db.owner.query('select status from game.hand_histories where hand_id = $1', [inFlight.handId]);
  expect(abandoned.status).toBe('abandoned');
  expect((await db.owner.query('select sum(tournament_stack)::int as s from game.table_players where table_id = $1', [tableId])).rows[0].s).toBe(2000);

  // a level passes while both are down: its escalation fires as soon as the worker is back
  await new Promise((r) => setTimeout(r, 3500));
  const port = new URL(gameUrl).port;
  const back = await startTestPlatform({
    databaseUrl: db.url, roles: ['game', 'worker'],
    env: {
      GAME_PORT: port, HAND_DELAY_MS: '5', ENABLE_TEST_AUTH: 'true', AUTH_SECRET: 'cash-loop-test-secret-0123456789abcdef', AUTH_BASE_URL: 'https://auth.poker.test',
      AUTH_JWKS_URL: `${m.platform.url('auth')}/api/auth/jwks`, AUTH_URL: m.platform.url('auth'), CAGE_URL: m.cage, GAME_URL: gameUrl,
    },
  });
  try {
    const watcher = await live.player(0);
    await live.join(watcher, tableId);
    const replayed = await watcher.ws.next((x) => x.type === 'game_state' && x.handId && x.handId !== inFlight.handId, 10_000);
    expect(replayed.seats.map((s: Msg) => s.stack).sort()).not.toContain('0');
    await watcher.ws.next((x) => x.type === 'blind_level_changed', 10_000);
    // force-end to finish quickly: the payouts still flow through the cage
    expect((await call(`${gameUrl}/admin/force-end-tournament`, { headers: m.service, body: { tableId } })).status).toBe(200);
    await until(async () => (await tournamentBooks(db.owner, tableId)).state === 'closed', 'closed', 20_000, 50);
    expect(await tournamentBooks(db.owner, tableId)).toMatchObject({ payouts: 180n, pool: 20n });
    await expectCleanAudit(cagePool);
    // the lifecycle span ended with the state reached at the stop; the new process continued it, linked
    const spans = await until(() => {
      const found = finishedSpans().filter((x) => x.name === 'tournament.lifecycle' && x.attributes['tournament.table_id'] === tableId);
      return found.length === 2 ? found : undefined;
    }, 'both lifecycle spans');
    const [first, second] = spans;
    expect(first!.attributes).toMatchObject({ 'tournament.suspended': true, 'tournament.state_reached': 'playing' });
    // nobody acted (turns of 30 s on this clock): equal stacks at the force-end share the prize
    expect(second!.attributes).toMatchObject({ 'tournament.continued': true, 'tournament.actual_payouts': '1:90,2:90' });
    expect(second!.links[0]?.context.spanId).toBe(first!.spanContext().spanId);
    expect(second!.events.map((e) => e.attributes?.['tournament.to'])).toEqual(['ended', 'settling', 'closed']);
    // what the stopped process announced is not announced again (no second `playing`); what came after
    // is, each move once and in order, the payouts before closed
    const told = tableMessages(watcher, tableId);
    expect(told.filter((x) => x.type === 'tournament_state_changed').map((x) => x.state)).toEqual(['ended', 'settling', 'closed']);
    const closedIndex = told.findIndex((x) => x.type === 'tournament_state_changed' && x.state === 'closed');
    expect(told.slice(0, closedIndex).filter((x) => x.type === 'tournament_payout_settled').map((x) => x.position).sort()).toEqual([1, 2]);
    const levelsTold = told.filter((x) => x.type === 'blind_level_changed').map((x) => x.currentLevel);
    expect(new Set(levelsTold).size).toBe(levelsTold.length);
    const { rows: [recorded] } = await db.owner.query('select announced_state, announced_level, current_level, announced_payouts from game.tables where table_id = $1', [tableId]);
    expect(recorded).toMatchObject({ announced_state: 'closed', announced_level: recorded.current_level, announced_payouts: [1, 2] });
  } finally {
    await back.stop();
  }
}, 60_000);
