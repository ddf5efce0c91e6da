// Durability under a hard kill: the whole platform (`node server/main.ts`, every role, on this file's
// own database) runs as a child process while websocket bots play two tables, players deposit and
// withdraw over HTTP at two more, and others claim from the claim board; it is `kill -9`ed with all
// of that in flight and started again. Then: the cage audit is empty, every acknowledged (2xx)
// deposit, withdrawal and claim is in the books exactly once, and a hand completes on every table.
// The restart-to-playable time (spawn of the restart until a hand is dealt on every table that was
// playing) is printed, never asserted.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { expectCleanAudit } from '../helpers/cage.ts';
import { linkSolana } from '../helpers/claims.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { liveClient, prng, resultsOf, sleep, until, type LiveClient, type LivePlayer, type Msg } from '../helpers/live.ts';
import { AUTH_SECRET, call, ISSUER, moneyClient, POKER_SETTINGS } from '../helpers/money.ts';
import { QUIET_CRON, TEST_SERVICE_KEY, type TestPlatform } from '../helpers/platform.ts';
import { freePort } from '../helpers/ports.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const ROLES = ['auth', 'game', 'cage', 'admin', 'worker'] as const;
const SETTINGS = { ...POKER_SETTINGS, turnTimeSec: 5 };

interface Child {
  proc: ChildProcess;
  output: string;
  exit: Promise<unknown>;
}

let db: TestDatabase;
let cagePool: pg.Pool;
let env: Record<string, string>;
let child: Child | undefined;
const clients: LiveClient[] = [];

function spawnPlatform(): Child {
  const proc = spawn(process.execPath, ['server/main.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const c: Child = { proc, output: '', exit: new Promise((resolve) => proc.once('exit', resolve)) };
  proc.stdout!.on('data', (chunk) => (c.output += chunk));
  proc.stderr!.on('data', (chunk) => (c.output += chunk));
  return c;
}

/** Resolves once main printed a line for every role (they all listen then). */
function started(c: Child) {
  return until(() => {
    if (c.proc.exitCode !== null || c.proc.signalCode !== null) throw new Error(`the platform exited:\n${c.output}`);
    return ROLES.every((role) => new RegExp(`^${role} +\\S`, 'm').test(c.output));
  }, 'the platform to start', 30_000, 20);
}

beforeAll(async () => {
  db = await createTestDatabase();
  cagePool = db.pool('poker_cage');
  const [auth, game, cage, admin] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin', NODE_ENV: 'test', LOG_LEVEL: 'warn', DATABASE_URL: db.url,
    SERVICE_KEY: TEST_SERVICE_KEY, AUTH_SECRET, AUTH_BASE_URL: ISSUER, ENABLE_TEST_AUTH: 'true',
    // the same ports after the restart, so the clients come back to the same addresses
    PORT: String(auth), GAME_PORT: String(game), CAGE_PORT: String(cage), ADMIN_PORT: String(admin), CHAIN_BANK_PORT: '0', BETTING_PORT: '0', WEB_PORT: '0',
    HAND_DELAY_MS: '20', CAGE_AUDIT_CRON: QUIET_CRON, CAGE_RAKE_RECONCILE_CRON: QUIET_CRON,
  };
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.closeAll()));
  if (child && child.proc.exitCode === null && child.proc.signalCode === null) {
    child.proc.kill('SIGINT');
    await Promise.race([child.exit, sleep(20_000)]);
    if (child.proc.exitCode === null && child.proc.signalCode === null) child.proc.kill('SIGKILL');
  }
  await db?.drop();
});

/** The money client of the helpers, pointed at the child's fixed addresses (it reads only `url`). */
function clientOf(): ReturnType<typeof moneyClient> {
  const url = (role: string) => `http://127.0.0.1:${env[{ auth: 'PORT', game: 'GAME_PORT', cage: 'CAGE_PORT', admin: 'ADMIN_PORT' }[role]!]}`;
  return moneyClient(db, { url } as unknown as TestPlatform);
}

/**
 * A patient player: checks or calls nearly always, bets and raises the minimum now and then, folds
 * a little, never shoves; so nobody busts in the few hands this test needs (a table that lost all
 * but one player could not show it plays again).
 */
function patientAction(rng: () => number, legal: Msg): { action: string; amount?: string } {
  const aggressive = (legal.actions as string[]).find((a) => a === 'bet' || a === 'raise');
  const r = rng();
  if (aggressive && r < 0.1) return { action: aggressive, amount: String(legal.minRaiseTo) };
  if (legal.actions.includes('check')) return { action: 'check' };
  return { action: r < 0.2 ? 'fold' : 'call' };
}

/** Answers every turn its bots are asked to act on, until stopped; refusals (a timer that fired first) are ignored. */
function driveBots(bots: LivePlayer[], tableId: string, seed: number, stop: () => boolean) {
  const rng = prng(seed);
  const answered = new Set<string>();
  return (async () => {
    while (!stop()) {
      for (const bot of bots) {
        const s = bot.ws.messages.findLast((x) => x.type === 'game_state' && x.tableId === tableId);
        const key = s?.legal && `${s.legal.handId}:${s.legal.seq}`;
        if (!key || answered.has(key)) continue;
        answered.add(key);
        bot.ws.send({ type: 'action', tableId, handId: s.legal.handId, seq: s.legal.seq, ...patientAction(rng, s.legal), ref: randomUUID() });
      }
      await sleep(3);
    }
  })();
}

interface Acked {
  deposits: { txHash: string; userId: string; tableId: string }[];
  withdrawals: { txHash: string; userId: string; tableId: string }[];
  claims: { claimId: string; userId: string }[];
  /** HTTP requests sent and not yet answered. */
  inFlight: number;
}

/** The answer of `request`, or undefined when none came (the platform was killed or is down). */
async function counted<T>(acked: Acked, request: Promise<T>): Promise<T | undefined> {
  acked.inFlight++;
  try {
    return await request;
  } catch {
    return undefined;
  } finally {
    acked.inFlight--;
  }
}

/** Deposits to a seat and withdraws it again over HTTP, over and over; records what was answered 2xx. */
async function cashier(m: ReturnType<typeof clientOf>, p: { userId: string; auth: Record<string, string> }, tableId: string, seatIndex: number, acked: Acked, stop: () => boolean) {
  while (!stop()) {
    const d = await counted(acked, m.deposit(p.auth, { tableId, seatIndex, amount: 40 }, { 'idempotency-key': randomUUID() }));
    if (d && d.status >= 200 && d.status < 300 && d.body.status === 'confirmed') acked.deposits.push({ txHash: d.body.txHash as string, userId: p.userId, tableId });
    const w = await counted(acked, m.withdraw(p.auth, { tableId }));
    if (w && w.status >= 200 && w.status < 300) acked.withdrawals.push({ txHash: w.body.txHash as string, userId: p.userId, tableId });
    if (!d || !w) await sleep(20); // the platform is down
  }
}

/** Claims the weekly baseline for one ISO week after another (the harness clock), recording the credited claims. */
async function claimer(m: ReturnType<typeof clientOf>, p: { userId: string; auth: Record<string, string> }, acked: Acked, stop: () => boolean) {
  for (let week = 1; !stop(); week++) {
    const clock = new Date(Date.now() + week * 7 * 86_400_000).toISOString();
    const r = await counted(acked, call(`${m.game}/claim-board/claim`, { headers: { ...p.auth, 'x-test-clock': clock }, body: { sectionKey: 'weekly_baseline' } }));
    if (r && r.status >= 200 && r.status < 300) acked.claims.push({ claimId: r.body.claimId as string, userId: p.userId });
    if (!r) await sleep(20);
  }
}

/** Bots for a table: funded users connected over the websocket and sat through the bank (at the next hand's end when one runs). */
async function seatBots(live: LiveClient, tableId: string, seats: number[]): Promise<LivePlayer[]> {
  const bots = await Promise.all(seats.map(() => live.player(1000)));
  for (const [i, bot] of bots.entries()) {
    const r = await live.sit(bot, tableId, seats[i]!, 100);
    if (r.type !== 'seated' && r.type !== 'sit_pending') throw new Error(`bot not seated: ${JSON.stringify(r)}`);
  }
  return bots;
}

/** What the books hold for each acknowledged operation: one row per reference, and of the kind expected. */
async function booked(acked: Acked) {
  const entries = async (refs: string[]) => (await db.owner.query<{ ref_id: string; kind: string; n: number }>(
    'select ref_id, kind::text as kind, count(*)::int as n from cage.cage_entries where ref_id = any($1) group by 1, 2', [refs],
  )).rows;
  const reversals = (await db.owner.query('select ref_id from cage.cage_entries where ref_id = any($1)', [acked.deposits.map((d) => `${d.txHash}:reversal`)])).rows;
  const intents = (await db.owner.query<{ status: string; n: number }>(
    'select status::text as status, count(*)::int as n from cage.deposit_intents where ref_id = any($1) group by 1', [acked.deposits.map((d) => d.txHash)],
  )).rows;
  const ledger = (await db.owner.query<{ n: number }>('select count(*)::int as n from claims.claim_ledger where claim_id = any($1)', [acked.claims.map((c) => c.claimId)])).rows[0]!.n;
  return {
    deposits: await entries(acked.deposits.map((d) => d.txHash)), reversals, intents,
    withdrawals: await entries(acked.withdrawals.map((w) => w.txHash)),
    grants: await entries(acked.claims.map((c) => c.claimId)), ledger,
  };
}

const oncePerRef = (refs: string[], kind: string) => refs.map((ref) => ({ ref_id: ref, kind, n: 1 })).sort((a, b) => a.ref_id.localeCompare(b.ref_id));
const byRef = (rows: { ref_id: string }[]) => [...rows].sort((a, b) => a.ref_id.localeCompare(b.ref_id));

type Money = ReturnType<typeof clientOf>;
interface Scene {
  m: Money;
  live: LiveClient;
  botTables: string[];
  cashTables: string[];
  bots: LivePlayer[][];
  cashiers: { userId: string; auth: Record<string, string> }[];
  claimers: { userId: string; auth: Record<string, string> }[];
}

/** Two tables with three bots each (funded before their rooms load: all dealt into the first hand), two for the cashiers, claimers with wallets. */
async function setTheScene(m: Money): Promise<Scene> {
  const live = liveClient(m, db);
  clients.push(live);
  const on = await call(`${m.game}/admin/claim-settings`, { method: 'PATCH', headers: (await m.operator()).auth, body: { claimBoardEnabled: true } });
  expect(on.status).toBe(200);
  const owner = await m.player(5000);
  const botTables = [await m.table(owner.auth, SETTINGS), await m.table(owner.auth, SETTINGS)];
  const cashTables = [await m.table(owner.auth, SETTINGS), await m.table(owner.auth, SETTINGS)];
  const bots = await Promise.all(botTables.map(async (t) => {
    const players = await Promise.all([0, 1, 2].map(() => live.player(1000)));
    await live.seatBeforeRoom(players, t, [200, 200, 200]);
    return players;
  }));
  const cashiers = await Promise.all([0, 1, 2, 3].map(() => m.player(100_000)));
  const claimers = await Promise.all([0, 1, 2, 3].map(async () => {
    const p = await m.player();
    await linkSolana(db, p.userId);
    return p;
  }));
  return { m, live, botTables, cashTables, bots, cashiers, claimers };
}

/** Bots, cashiers and claimers all at once; `kill -9` once each has done some and a hand runs on every table. */
async function runAndKill(scene: Scene, acked: Acked) {
  const { m, bots, botTables, cashTables } = scene;
  let running = true;
  const stop = () => !running;
  const loops = [
    ...bots.map((b, i) => driveBots(b, botTables[i]!, i + 1, stop)),
    ...scene.cashiers.map((p, i) => cashier(m, p, cashTables[i % 2]!, Math.floor(i / 2), acked, stop)),
    ...scene.claimers.map((p) => claimer(m, p, acked, stop)),
  ];
  const progress = () => ({
    hands: bots.map((b, i) => resultsOf(b[0]!.ws, botTables[i]!).length),
    deposits: acked.deposits.length, withdrawals: acked.withdrawals.length, claims: acked.claims.length,
  });
  await until(() => {
    const p = progress();
    return p.hands.every((n) => n >= 3) && p.deposits >= 5 && p.withdrawals >= 5 && p.claims >= 5;
  }, 'play, cash and claims under way', 30_000, 20).catch((err: Error) => {
    const last = bots.map((b, i) => b[0]!.ws.messages.filter((x) => x.tableId === botTables[i]).slice(-2));
    throw new Error(`${err.message}: ${JSON.stringify(progress())}; last messages ${JSON.stringify(last)}\n${child!.output.slice(-3000)}`);
  });
  // the kill lands in the middle of a hand on every table, not in the pause between two
  const midHand = (b: LivePlayer[], table: string) => b[0]!.ws.messages.findLast((x: Msg) => x.type === 'game_state' && x.tableId === table)?.status === 'betting';
  await until(() => bots.every((b, i) => midHand(b, botTables[i]!)), 'a hand running on every table', 10_000, 1);
  const inFlightAtKill = acked.inFlight;
  child!.proc.kill('SIGKILL');
  await child!.exit;
  await sleep(200); // requests that were in flight fail now
  running = false;
  await Promise.all(loops);
  await scene.live.closeAll();
  return inFlightAtKill;
}

/**
 * The restart: the bots come back on new connections and play; resolves with the time from the
 * spawn until a hand was dealt on every table that was playing, once a hand completed on each.
 * The cashiers' tables play too (two fresh bots each, next to whatever seat a killed withdrawal left).
 */
async function restartAndPlay(scene: Scene): Promise<number> {
  const { m, bots, botTables, cashTables } = scene;
  const spawnedAt = Date.now();
  child = spawnPlatform();
  await started(child);
  const live = liveClient(m, db);
  clients.push(live);
  for (const [i, table] of botTables.entries()) {
    for (const bot of bots[i]!) {
      bot.ws = await live.open('/ws', bot.auth);
      await live.join(bot, table);
    }
  }
  let running = true;
  const stop = () => !running;
  const loops = bots.map((b, i) => driveBots(b, botTables[i]!, 100 + i, stop));
  const dealt = (b: LivePlayer[], table: string) => b[0]!.ws.messages.some((x: Msg) => x.type === 'game_state' && x.tableId === table && x.status === 'betting');
  await until(() => bots.every((b, i) => dealt(b, botTables[i]!)), 'a hand dealt on every table after the restart', 20_000, 5);
  const restartToPlayable = Date.now() - spawnedAt;
  await until(() => bots.every((b, i) => resultsOf(b[0]!.ws, botTables[i]!).length >= 1), 'a hand completed on every table after the restart', 20_000, 10);

  const lateBots = await Promise.all(cashTables.map((t) => seatBots(live, t, [4, 5])));
  loops.push(...lateBots.map((b, i) => driveBots(b, cashTables[i]!, 200 + i, stop)));
  await until(() => lateBots.every((b, i) => resultsOf(b[0]!.ws, cashTables[i]!).length >= 1), 'a hand completed on every cashier table', 20_000, 10);
  running = false;
  await Promise.all(loops);
  await live.closeAll();
  return restartToPlayable;
}

test('kill -9 with bots playing, deposits, withdrawals and claims in flight: the books hold every acknowledged one once, the audit is empty, every table plays again', async () => {
  child = spawnPlatform();
  await started(child);
  const scene = await setTheScene(clientOf());
  const acked: Acked = { deposits: [], withdrawals: [], claims: [], inFlight: 0 };
  const inFlightAtKill = await runAndKill(scene, acked);
  const restartToPlayable = await restartAndPlay(scene);

  // the books: each acknowledged operation once, nothing reversed, the audit empty after a clean stop
  const books = await booked(acked);
  expect(byRef(books.deposits)).toEqual(oncePerRef(acked.deposits.map((d) => d.txHash), 'table_buy_in'));
  expect(books.reversals).toEqual([]);
  expect(books.intents).toEqual([{ status: 'confirmed', n: acked.deposits.length }]);
  expect(byRef(books.withdrawals)).toEqual(oncePerRef(acked.withdrawals.map((w) => w.txHash), 'table_cash_out'));
  expect(byRef(books.grants)).toEqual(oncePerRef(acked.claims.map((c) => c.claimId), 'grant'));
  expect(books.ledger).toBe(acked.claims.length);
  const recovered = (child.output.match(/interrupted hand recovered at start|hand abandoned when the table was taken over/g) ?? []).length;
  child.proc.kill('SIGINT');
  await child.exit;
  await expectCleanAudit(cagePool);

  console.log(
    `durability: before the kill ${acked.deposits.length} deposits, ${acked.withdrawals.length} withdrawals, ${acked.claims.length} claims acknowledged, `
    + `${inFlightAtKill} HTTP requests in flight at the kill; ${recovered} interrupted hands recovered; `
    + `restart-to-playable ${restartToPlayable} ms (spawn until a hand was dealt on each of ${scene.botTables.length} tables)`,
  );
}, 90_000);
