// The example agent (examples/agent/) as an agent author runs it: `npm run agent -- ...` as a child
// process against a running platform (auth, game and cage roles on ephemeral ports, a real
// database), its owner's JWT and agent id in the environment, at a cash table with one opponent
// (a test bot on its own websocket). Its websocket goes through a TCP proxy that cuts it mid-hand
// right after it sent an action (the server acted, the agent never heard): it must reconnect, resend
// that action (acknowledged as a duplicate), play its hands to the end, stand up with its chips back,
// and leave the cage audit empty.
import { spawn } from 'node:child_process';
import { jest } from '@jest/globals';
import type pg from 'pg';
import { expectCleanAudit } from '../helpers/cage.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { calmAction, latestState, liveClient, prng, until, type LiveClient, type LivePlayer, type Msg } from '../helpers/live.ts';
import { POKER_SETTINGS, startMoneyPlatform } from '../helpers/money.ts';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.ts';
import { playBot, SNG, tournamentBooks } from '../helpers/tournament.ts';

jest.setTimeout(120_000);

let db: TestDatabase;
let cagePool: pg.Pool;
let m: Awaited<ReturnType<typeof startMoneyPlatform>>;
let live: LiveClient;
let proxy: TcpProxy;

beforeAll(async () => {
  db = await createTestDatabase();
  cagePool = db.pool('poker_cage');
  // the worker runs the Sit-and-Go's timers (start, blinds, settlement, payouts)
  m = await startMoneyPlatform(db, { alsoWorker: true, env: { HAND_DELAY_MS: '5' } });
  live = liveClient(m, db);
  proxy = await startTcpProxy(m.game);
});

afterAll(async () => {
  await live?.closeAll();
  await proxy?.close();
  await m?.platform.stop();
  await db?.drop();
});

/** The opponent: answers each of its turns with the calm policy of helpers/live.ts until `stop()`. */
async function opponent(p: LivePlayer, tableId: string, stop: () => boolean): Promise<number> {
  const rng = prng(21);
  const answered = new Set<string>();
  let actions = 0;
  while (!stop()) {
    const s = await live.turnOf(p, tableId, answered, 250).catch(() => null);
    if (!s) continue;
    answered.add(`${s.legal.handId}:${s.legal.seq}`);
    const { action, amount } = calmAction(rng, s.legal);
    const r = await live.request(p.ws, { type: 'action', tableId, handId: s.legal.handId, seq: s.legal.seq, action, ...(amount ? { amount } : {}) });
    if (r.type === 'action_ack') actions += 1;
  }
  return actions;
}

/** `npm run agent -- ...` as a child process: its exit code and its output. */
function runAgent(args: string[], env: Record<string, string>) {
  const child = spawn('npm', ['run', '--silent', 'agent', '--', ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (c: Buffer) => void (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => void (out += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

test('the example agent plays 20 hands against a bot, survives a cut socket mid-hand (its action resent, acknowledged as a duplicate), stands up with its chips back; the audit is empty', async () => {
  const HANDS = 20;
  const owner = await m.player(1000);
  const agentId = await live.createAgent(owner.auth, 'example');
  const tableId = await m.table(owner.auth, { ...POKER_SETTINGS, deckSeed: 'example-agent' });
  const bot = await live.player(1000);
  expect(await live.sit(bot, tableId, 1, 200)).toMatchObject({ type: 'seated', seatIndex: 1 });

  let done = false;
  const botPlay = opponent(bot, tableId, () => done);
  const started = Date.now();
  const agent = runAgent(['--game', proxy.url, '--bank', m.cage, '--table', tableId, '--hands', String(HANDS), '--buy-in', '200'], {
    POKER_TOKEN: owner.jwt, POKER_AGENT_ID: agentId,
  });
  try {
    // the agent is seated (as its agent) and a hand runs; at its turn in the third hand or later, the cut
    const seated = await until(() => {
      const s = latestState(bot.ws, tableId);
      return s?.seats.find((x: Msg) => x.agentId === agentId) && s.status === 'betting' ? s : undefined;
    }, 'the agent seated and a hand running', 30_000);
    const agentSeat = seated.seats.find((x: Msg) => x.agentId === agentId).seatIndex;
    const firstHand = seated.handId;
    await until(() => {
      const s = latestState(bot.ws, tableId);
      return s && s.handId !== firstHand && s.status === 'betting' && s.toAct === agentSeat && live.clients.length > 0;
    }, 'the agent to act in a later hand', 30_000);
    proxy.cutAfterNextClientData();
    await until(() => proxy.cuts === 1, 'the agent\'s socket cut after its action', 10_000);

    expect(await agent.exited).toBe(0);
  } finally {
    done = true;
    agent.child.kill();
  }
  await botPlay;
  const out = agent.output();
  const summary = JSON.parse(/^summary (.*)$/m.exec(out)![1]!);
  const hands = Number(/^hands played: (\d+)$/m.exec(out)![1]);
  process.stdout.write(`example agent: ${hands} hands played in ${Date.now() - started} ms, ${summary.actions} actions, `
    + `${summary.reconnects} reconnect(s), ${summary.resends} resend(s), ${summary.duplicates} duplicate ack(s)\n`);
  expect(hands).toBeGreaterThanOrEqual(HANDS);
  expect(summary).toMatchObject({ agentId, tableId, hands, reconnects: 1, resends: 1, duplicates: 1, ignored: 0 });
  expect(out).toMatch(/resending the unacknowledged action/);

  // stood up with its chips back: its stack went to its cage balance; its seat is closed
  const stack = BigInt(summary.stoodUp.amount);
  expect(BigInt(await m.balance(owner.auth))).toBe(1000n - 200n + stack);
  const room = (await m.room(tableId)).body;
  expect(room.seats.map((s: Msg) => s.userId)).toEqual([bot.userId]);
  // the hands it played are stored as its agent's
  const { rows } = await db.owner.query('select count(*)::int as n from game.hand_histories where table_id = $1 and $2 = any(agents)', [tableId, agentId]);
  expect(rows[0].n).toBeGreaterThanOrEqual(HANDS);

  await live.standUpAll([bot], tableId);
  await expectCleanAudit(cagePool);
});

test('the example agent with --tournament registers for a two-seat Sit-and-Go, pays the entry fee through the bank, plays it to its end against a bot; the tournament closes, the audit is empty', async () => {
  const owner = await m.player(1000);
  const agentId = await live.createAgent(owner.auth, 'sng-example');
  const tableId = await m.table(owner.auth, SNG({ seats: 2 }));
  const agent = runAgent(['--game', m.game, '--bank', m.cage, '--table', tableId, '--tournament'], { POKER_TOKEN: owner.jwt, POKER_AGENT_ID: agentId });
  try {
    // the bot registers once the agent holds its seat (a human's entry: register, then the deposit)
    const bot = await live.player(1000);
    await live.join(bot, tableId);
    await until(async () => (await m.room(tableId)).body.seats.length === 1, 'the agent registered', 30_000, 20);
    const r = await live.request(bot.ws, { type: 'register_for_tournament', tableId });
    expect(r).toMatchObject({ type: 'tournament_registered' });
    expect((await m.deposit(bot.auth, { tableId, amount: 100, seatIndex: r.seatIndex })).status).toBe(200);
    await playBot(live, bot, tableId, prng(13), 'calm', 60_000);
    expect(await agent.exited).toBe(0);
  } finally {
    agent.child.kill();
  }
  const summary = JSON.parse(/^summary (.*)$/m.exec(agent.output())![1]!);
  expect([1, 2]).toContain(summary.place);
  expect(summary.actions).toBeGreaterThan(0);
  process.stdout.write(`example agent (Sit-and-Go): place ${summary.place} after ${summary.hands} hands, ${summary.actions} actions\n`);
  await until(async () => (await tournamentBooks(db.owner, tableId)).state === 'closed', 'the tournament closed', 30_000, 50);
  await expectCleanAudit(cagePool);
});
