// `npm run demo [-- --fresh]`: the platform in development mode (NODE_ENV=development,
// ENABLE_TEST_AUTH=true) with a world to look at: four users with play chips (alice is yours; bob,
// carol and dave each run the example agent), a cash table `demo-cash` where the three agents play
// around the clock, and a Sit-and-Go that registers. Prints every role's URL (the web client's when
// the build has a `web` role) and how to watch. Ctrl-C: the agents stand up, the roles stop, the
// database last.
//
// The database: DATABASE_URL when set; else an embedded PostgreSQL in `.data/demo` (kept: the next
// demo finds its world again, topped up) or, with `--fresh` (or DEMO_FRESH=1), in a temp directory
// deleted on stop. Ports are the usual ones (PORT, GAME_PORT, ...; 0 = any free port); the embedded
// database takes PG_PORT or a free port. Everything is seeded through the roles' own routes, as a
// client would: invites (service key), the bridge's test identity token, an operator's purchases.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { Agent } from '../examples/agent/agent.ts';
import { hashPassword } from '../server/auth/passwords.ts';
import { AVAILABLE_ROLES, loadConfig, type Role } from '../server/config/index.ts';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../server/db/embedded.ts';
import type { Platform } from '../server/platform.ts';
import { createLogger } from '../server/telemetry/index.ts';

const CASH_TABLE = 'demo-cash';
const BOTS = ['bob', 'carol', 'dave'] as const;
const CHIPS = 10_000;
const CASH_SETTINGS = {
  smallBlind: 1, bigBlind: 2, minBuyIn: 40, maxBuyIn: 200, maxPlayers: 6, rakePercent: 5, rakeCap: 10,
  rakeMinPot: 0, rakeRequiresFlop: true, turnTimeSec: 20, turnTimerEnabled: true,
};
const SNG_SETTINGS = {
  mode: 'sng', kind: 'open', seats: 3, entryFee: 100, rakeFee: 10, startingStack: 1500,
  blindStructure: { startingSmallBlind: 10, increaseFactor: 1.5, levelDurationSeconds: 120 }, actionTimeoutSeconds: 20,
};

const say = (line = '') => process.stdout.write(`${line}\n`);

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().once('error', reject).listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function call<T = Record<string, any>>(url: string, init: { headers?: Record<string, string>; body?: unknown } = {}): Promise<{ status: number; body: T }> {
  const res = await fetch(url, {
    method: init.body === undefined ? 'GET' : 'POST',
    headers: { ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : {}) as T };
}

async function expectOk<T>(what: string, answer: Promise<{ status: number; body: T }>, ok = [200, 201]): Promise<T> {
  const r = await answer;
  if (!ok.includes(r.status)) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

/** The database: DATABASE_URL, or an embedded one (kept in .data/demo, or a temp dir with --fresh). */
async function database(fresh: boolean): Promise<{ url: string; dataDir: string; embedded?: EmbeddedPostgres }> {
  if (process.env.DATABASE_URL) return { url: process.env.DATABASE_URL, dataDir: process.env.DEMO_DATA_DIR ?? '.data/demo' };
  const dataDir = fresh ? await mkdtemp(path.join(tmpdir(), 'poker-demo-')) : process.env.DEMO_DATA_DIR ?? '.data/demo';
  const port = process.env.PG_PORT ? Number(process.env.PG_PORT) : await freePort();
  const embedded = await startEmbeddedPostgres({ dataDir, port, ephemeral: fresh });
  return { url: embedded.url, dataDir, embedded };
}

async function startRoles(url: string, dataDir: string, fresh: boolean): Promise<{ platform: Platform; serviceKey: string }> {
  const serviceKey = process.env.SERVICE_KEY ?? randomBytes(24).toString('hex');
  const env: Record<string, string | undefined> = {
    ...process.env, NODE_ENV: 'development', ENABLE_TEST_AUTH: 'true', DATABASE_URL: url, SERVICE_KEY: serviceKey,
    // the signing keys (JWT, receipts): files beside the data directory, generated and pinned as the
    // owner by startPlatform (as npm start does); a fresh temp directory gets fresh ones
    PG_DATA_DIR: dataDir,
  };
  const config = loadConfig(env);
  process.env.GRAPHILE_ENV ??= 'development';
  const { startPlatform } = await import('../server/platform.ts');
  // every built role but the chain bank (it would start a local anvil); the web client when it exists
  const roles = AVAILABLE_ROLES.filter((r: Role) => r !== 'chain-bank');
  const log = createLogger(process.env.LOG_LEVEL ?? 'warn', 'poker-demo', pino.destination(2));
  return { platform: await startPlatform({ config, roles, log }), serviceKey };
}

/** An operator's access JWT: an admin made with the owner's connection, signed in with its password. */
async function operator(databaseUrl: string, auth: string): Promise<Record<string, string>> {
  const email = `demo-ops-${randomUUID().slice(0, 8)}@example.com`;
  const password = randomBytes(18).toString('base64url');
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query('select auth.create_admin($1, $2)', [email, await hashPassword(password)]);
  } finally {
    await client.end();
  }
  const session = await expectOk('operator sign-in', call<{ token: string }>(`${auth}/api/auth/sign-in/email`, { body: { email, password } }));
  const token = await expectOk('operator token', call<{ token: string }>(`${auth}/api/auth/token`, { headers: { authorization: `Bearer ${session.token}` } }));
  return { authorization: `Bearer ${token.token}` };
}

interface DemoUser { name: string; userId: string; token: string; agentId?: string }

/** A user through the bridge with the development provider's test token (an invite on the first sign-in), topped up to CHIPS. */
async function user(name: string, urls: Record<string, string>, serviceKey: string, ops: Record<string, string>): Promise<DemoUser> {
  const invite = await expectOk('invite', call<{ code: string }>(`${urls.auth}/admin/invite-codes`, { headers: { 'x-service-key': serviceKey }, body: {} }));
  const signIn = await expectOk(`sign-in ${name}`, call<{ token: string; user: { id: string } }>(`${urls.auth}/api/auth/bridge`, {
    body: { idToken: `test-idp-token:demo-${name}`, inviteCode: invite.code },
  }));
  const auth = { authorization: `Bearer ${signIn.token}` };
  const balances = await expectOk('balances', call<{ balances: { play: number } }>(`${urls.cage}/api/cage/balances`, { headers: auth }));
  const missing = CHIPS - Number(balances.balances.play ?? 0);
  if (missing > 0) {
    await expectOk(`chips for ${name}`, call(`${urls.cage}/api/operator/purchase`, {
      headers: ops, body: { userId: signIn.user.id, amount: missing, externalRef: `demo-${randomUUID()}`, moneyKind: 'play' },
    }));
  }
  return { name, userId: signIn.user.id, token: signIn.token };
}

/** The user's agent (their first one, else a new one). */
async function agentOf(u: DemoUser, game: string): Promise<string> {
  const auth = { authorization: `Bearer ${u.token}` };
  const mine = await expectOk('agents', call<{ agents: { agentId: string }[] }>(`${game}/api/agents`, { headers: auth }));
  if (mine.agents[0]) return mine.agents[0].agentId;
  return (await expectOk('agent', call<{ agentId: string }>(`${game}/api/agents`, { headers: auth, body: { name: `${u.name}-bot` } }))).agentId;
}

async function seed(urls: Record<string, string>, serviceKey: string, databaseUrl: string) {
  const ops = await operator(databaseUrl, urls.auth!);
  const users: DemoUser[] = [];
  for (const name of ['alice', ...BOTS]) users.push(await user(name, urls, serviceKey, ops));
  const alice = { authorization: `Bearer ${users[0]!.token}` };
  await expectOk('cash table', call(`${urls.cage}/api/tables`, { headers: alice, body: { tableId: CASH_TABLE, gameType: 'poker', settings: CASH_SETTINGS } }), [200, 409]);
  const sng = `demo-sng-${Date.now().toString(36)}`;
  await expectOk('sit-and-go', call(`${urls.cage}/api/tables`, { headers: alice, body: { tableId: sng, gameType: 'poker', settings: SNG_SETTINGS } }));
  for (const u of users.slice(1)) u.agentId = await agentOf(u, urls.game!);
  return { users, sng };
}

/** One bot: the example agent at the cash table, sat again if it busts, until the demo stops. */
function bot(u: DemoUser, seat: number, urls: Record<string, string>, stopping: () => boolean, hands: Set<unknown>) {
  let current: Agent | null = null;
  const quiet = new Set(['hand', 'sitting', 'joined', 'stand_up_pending: leaving when this hand ends']);
  const loop = (async () => {
    while (!stopping()) {
      current = new Agent({
        game: urls.game!, bank: urls.cage!, tableId: CASH_TABLE, hands: Number.MAX_SAFE_INTEGER, token: u.token, agentId: u.agentId, seat,
        log: (event, fields) => {
          if (event === 'hand') hands.add(fields?.handId);
          if (!quiet.has(event)) say(`[${u.name}] ${event}${fields ? ` ${JSON.stringify(fields)}` : ''}`);
        },
      });
      await current.run().catch((err: Error) => say(`[${u.name}] stopped: ${err.message}`));
      if (!stopping()) await new Promise((r) => setTimeout(r, 2000));
    }
  })();
  return { loop, standUp: () => current?.standUp() };
}

function printWelcome(platform: Platform, databaseUrl: string, users: DemoUser[], sng: string) {
  const url = (role: string) => platform.roles.find((r) => r.role === role)?.url ?? '';
  for (const r of platform.roles) say(r.url ? `${r.role.padEnd(8)} ${r.url}` : `${r.role.padEnd(8)} running (no HTTP)`);
  if (!process.env.DATABASE_URL) say(`postgres ${databaseUrl.replace(/:[^:@/]+@/, ':***@')}`);
  const game = url('game');
  const ws = game.replace(/^http/, 'ws');
  say();
  say(`seeded: users ${users.map((u) => u.name).join(', ')} (${CHIPS} play chips each); ${BOTS.join(', ')} run the example agent`);
  say(`  cash table  ${CASH_TABLE}  blinds 1/2, 6 seats, the bots playing`);
  say(`  sit-and-go  ${sng}  registering: 3 seats, entry 100`);
  say();
  say('watch:');
  if (url('web')) say(`  the web client       ${url('web')}  (sign in with the test identity token demo-alice)`);
  say(`  the table, live      ${ws}/ws/tables/${CASH_TABLE}  (a spectator websocket: game_state, hand_result)`);
  say(`  the room             curl ${game}/api/tables/${CASH_TABLE}`);
  say(`  the lobby            curl ${game}/api/tables`);
  say(`  alice's token        curl -s ${url('auth')}/api/auth/bridge -H 'content-type: application/json' -d '{"idToken":"test-idp-token:demo-alice"}'`);
  say(`  your own agent       POKER_TOKEN=<alice's token> npm run agent -- --game ${game} --bank ${url('cage')} --table ${CASH_TABLE} --hands 20`);
  say(`  or the sit-and-go    POKER_TOKEN=<alice's token> npm run agent -- --game ${game} --bank ${url('cage')} --table ${sng} --tournament`);
  say();
  say('demo ready (Ctrl-C stops)');
}

async function main() {
  const fresh = process.argv.includes('--fresh') || process.env.DEMO_FRESH === '1';
  const db = await database(fresh);
  let platform: Platform | undefined;
  let stopping = false;
  const bots: ReturnType<typeof bot>[] = [];
  const hands = new Set<unknown>();
  const stop = async (signal: string) => {
    if (stopping) process.exit(130);
    stopping = true;
    say(`\n${signal}: the bots stand up, then the platform stops`);
    for (const b of bots) b.standUp();
    const standing = Promise.all(bots.map((b) => b.loop));
    await Promise.race([standing, new Promise((r) => setTimeout(r, 15_000).unref())]);
    await platform?.stop();
    await db.embedded?.stop();
    say(`demo stopped (${hands.size} hands played at ${CASH_TABLE})`);
    process.exit(0);
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => void stop(signal));
  try {
    const started = await startRoles(db.url, db.dataDir, fresh);
    platform = started.platform;
    const urls = Object.fromEntries(platform.roles.filter((r) => r.url).map((r) => [r.role, r.url!]));
    const { users, sng } = await seed(urls, started.serviceKey, platform.databaseUrl);
    if (stopping) return;
    for (const [i, u] of users.slice(1).entries()) bots.push(bot(u, i, urls, () => stopping, hands));
    printWelcome(platform, platform.databaseUrl, users, sng);
  } catch (err) {
    process.stderr.write(`demo failed to start: ${(err as Error).stack ?? err}\n`);
    await platform?.stop();
    await db.embedded?.stop();
    process.exit(1);
  }
}

await main();
