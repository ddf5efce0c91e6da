// The Sit-and-Go benchmark (issue 13): complete 10-seat tournaments per minute on ONE game process,
// on the accelerated clock, against the same tournaments' hands played by the pure engine in the
// same run (the ratio), with where the game process spent its time and the live latency.
//
//   live     --tournaments tournaments of 10 websocket bots each, --parallel at a time, against the
//            auth, game, cage and worker roles of this process (HAND_DELAY_MS 5). Each tournament is
//            created through POST /api/tables (clockFactor --factor: 30 s levels and 30 s turns last
//            30/factor s), its ten entries paid through the bank's deposit, and played by bots with a
//            fixed seeded policy (calm: check when free, call up to a tenth of the stack behind or a
//            quarter of the time, min-raise one time in ten, else fold) until the worker's jobs have
//            settled it, paid every place and closed it. A unit is a closed tournament; the rate is
//            closed tournaments over the wall time of the whole batch.
//   engine   the hands those tournaments dealt (read back from game.hand_histories: seats, stacks,
//            blinds, the seeded deck, every action), replayed by the pure engine on this thread.
//            Tournaments per minute = tournaments / the engine's time for all their hands.
// While the tournaments run: the game pool's query time (wall, summed over queries), the engine's
// and the websocket fan-out's CPU time in the main thread (a V8 CPU profile: self time by source
// file, natives charged to their caller), and the p99 from an action sent to the next game_state on
// that bot's connection. The bots run in a worker thread, so the profile holds only the roles. At
// the end every tournament must be closed, its payouts must sum to its pool less the house fee, and
// the cage audit must be empty; otherwise the exit code is 1.
import { randomBytes, randomUUID } from 'node:crypto';
import { Session } from 'node:inspector/promises';
import { performance } from 'node:perf_hooks';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import pg from 'pg';
import WebSocket from 'ws';
import { createKeyStore } from '../server/auth/keys.ts';
import { benchJwtKey } from './lib/keys.ts';
import { audit } from '../server/cage/ledger.ts';
import { loadConfig } from '../server/config/index.ts';
import { migrate } from '../server/db/migrate.ts';
import { createOwnerPool, createRolePool } from '../server/db/pools.ts';
import { shuffledDeck } from '../server/game/poker/deck.ts';
import { storedHand } from '../server/game/hands/compact.ts';
import { replay, type RecordedAction, type SeatInput } from '../server/game/poker/engine.ts';
import type { Platform } from '../server/platform.ts';
import { createLogger } from '../server/telemetry/index.ts';
import { calmAction, prng } from '../test/helpers/live.ts';
import { signInOperator } from '../test/helpers/operator.ts';
import { benchDatabase, fmtRatio, numericFlags, UsageError } from './lib/harness.ts';
import { call, databaseLine, describeAnswer as describe } from './lib/platform.ts';

const USAGE = `usage: npm run bench -- sng [--tournaments N] [--parallel N] [--factor F]
  --tournaments  10-seat tournaments to play (default 6)
  --parallel     tournaments running at once on the one game process (default 3)
  --factor       the clock factor: every duration divided by it (default 30: 1 s levels and turns)
  PostgreSQL: DATABASE_URL when set, otherwise an embedded one in a temp dir, deleted at the end.`;

const SECRET = 'bench-sng-auth-secret-0123456789abcdef';
const ISSUER = 'https://auth.bench.local';
const SERVICE_KEY = 'bench-sng-service-key-0123456789abcdef';
const SEATS = 10;
const ENTRY = 100;
const FEE = 10;
const SEED = 20261126;
const log = (msg: string) => console.log(msg);

interface Bot { userId: string; token: string; seed: number }
interface Tour { tableId: string; bots: Bot[] }
type FromBots = { type: 'closed'; tableId: string } | { type: 'done'; latencies: number[]; actions: number; refused: number } | { type: 'crashed'; error: string };

export default async function sngBench(args: string[]): Promise<number> {
  let flags: { tournaments: number; parallel: number; factor: number };
  try {
    flags = numericFlags(args, { tournaments: 6, parallel: 3, factor: 30 }, USAGE);
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(err.message);
      return 2;
    }
    throw err;
  }
  const db = await benchDatabase(log);
  let platform: Platform | undefined;
  const pools: pg.Pool[] = [];
  try {
    await migrate(db.url);
    const owner = createOwnerPool(db.url, 4);
    pools.push(owner);
    log(await databaseLine(owner, db.source));
    process.env.GRAPHILE_ENV ??= 'development';
    const { startPlatform } = await import('../server/platform.ts');
    platform = await startPlatform({
      config: loadConfig({
        NODE_ENV: 'test', LOG_LEVEL: 'silent', PORT: '0', GAME_PORT: '0', CAGE_PORT: '0', SERVICE_KEY,
        AUTH_SECRET: SECRET, AUTH_BASE_URL: ISSUER, ENABLE_TEST_AUTH: 'true', CAGE_AUDIT_CRON: '0 0 1 1 *', CAGE_RAKE_RECONCILE_CRON: '0 0 1 1 *',
        HAND_DELAY_MS: '5',
      }),
      roles: ['auth', 'game', 'cage', 'worker'],
      log: createLogger('silent'),
      databaseUrl: db.url,
    });
    const urlOf = (role: 'auth' | 'game' | 'cage') => platform!.roles.find((r) => r.role === role)!.url!;
    const authPool = createRolePool(db.url, 'poker_auth', { max: 2, applicationName: 'bench-sng-auth' });
    const cagePool = createRolePool(db.url, 'poker_cage', { max: 2, applicationName: 'bench-sng-audit' });
    pools.push(authPool, cagePool);
    const tours = await prepare(owner, authPool, urlOf('cage'), urlOf('auth'), flags);
    log(`clock factor ${flags.factor}: 30 s levels and 30 s turns last ${(30 / flags.factor).toFixed(2)} s, the 3 s grace ${(3 / flags.factor).toFixed(2)} s; blinds 10/20 x1.5 a level, antes from level 4; 10 seats, stacks 3000, entry ${ENTRY} (house fee ${FEE})`);
    log('bot policy (fixed, seeded): calm: check when free; call up to a tenth of the stack behind, or a quarter of the time; min-raise one time in ten; else fold');

    const live = await runLive(owner, urlOf('game'), urlOf('cage'), tours, flags);
    const engine = await replayHands(owner, tours);
    const ratio = live.perMinute / engine.perMinute;
    log('');
    log(`live:   ${live.closed} tournaments closed in ${(live.seconds).toFixed(1)} s: ${live.perMinute.toFixed(1)} tournaments/min (${flags.parallel} at a time), ${live.hands} hands, ${(live.hands / live.seconds).toFixed(0)} hands/s`);
    log(`engine: the same ${engine.hands} hands replayed in ${(engine.seconds * 1000).toFixed(1)} ms: ${engine.perMinute.toFixed(0)} tournaments/min, ${(engine.hands / engine.seconds).toFixed(0)} hands/s`);
    log(`ratio live / engine (tournaments per minute): ${ratio >= 0.01 ? fmtRatio(ratio) : `${ratio.toPrecision(3)}x`} (the engine is ${(1 / ratio).toFixed(0)}x faster: the live tournaments wait on their clocks, the database and the network)`);
    const total = live.dbMs + live.engineMs + live.fanoutMs;
    log(`game process time: database ${live.dbMs.toFixed(0)} ms (${pct(live.dbMs, total)}, wall time of the game pool's queries), engine ${live.engineMs.toFixed(0)} ms (${pct(live.engineMs, total)}, CPU), websocket fan-out ${live.fanoutMs.toFixed(0)} ms (${pct(live.fanoutMs, total)}, CPU); per hand ${(live.dbMs / live.hands).toFixed(2)} / ${(live.engineMs / live.hands).toFixed(3)} / ${(live.fanoutMs / live.hands).toFixed(3)} ms`);
    log(`latency, action sent -> next game_state (${live.latencies.length} actions, ${live.refused} refused after a timeout): p50 ${q(live.latencies, 0.5).toFixed(2)} ms, p99 ${q(live.latencies, 0.99).toFixed(2)} ms, max ${q(live.latencies, 1).toFixed(1)} ms`);
    const failures = await check(owner, cagePool, tours);
    for (const f of failures) log(`FAILURE: ${f}`);
    return failures.length ? 1 : 0;
  } finally {
    await platform?.stop().catch(() => undefined);
    for (const p of pools) await p.end().catch(() => undefined);
    await db.stop();
  }
}

const pct = (v: number, total: number) => `${total > 0 ? ((100 * v) / total).toFixed(0) : 0}%`;
function q(values: number[], p: number): number {
  if (!values.length) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

/** The bots (users with chips and a day-long JWT), the tournaments, and every entry paid. */
async function prepare(owner: pg.Pool, authPool: pg.Pool, cage: string, auth: string, flags: { tournaments: number; factor: number }): Promise<Tour[]> {
  const operator = await signInOperator(owner, auth);
  const keys = createKeyStore(authPool, { privateKey: await benchJwtKey(), issuer: ISSUER });
  const run = Date.now().toString(36);
  const tours: Tour[] = [];
  for (let t = 0; t < flags.tournaments; t++) {
    const bots: Bot[] = [];
    for (let i = 0; i < SEATS; i++) {
      const invite = `inv_${randomBytes(12).toString('hex')}`;
      await owner.query('select auth.mint_invite($1)', [invite]);
      const { rows } = await owner.query<{ user_id: string }>("select user_id from auth.bridge_sign_in('oidc', $1, null, $2)", [randomUUID(), invite]);
      const userId = rows[0]!.user_id;
      const token = await keys.sign({ sub: userId, walletAddress: null }, { ttlSeconds: 86_400 });
      const bought = await call(`${cage}/api/operator/purchase`, { headers: operator.auth, body: { userId, amount: 1000, externalRef: `pay-${randomUUID()}`, moneyKind: 'play' } });
      if (bought.status !== 200) throw new Error(`purchase failed: ${describe(bought)}`);
      bots.push({ userId, token, seed: SEED + t * SEATS + i });
    }
    const tableId = `sng-${run}-${t}`;
    const created = await call(`${cage}/api/tables`, {
      headers: { authorization: `Bearer ${bots[0]!.token}` },
      body: {
        tableId, gameType: 'poker', settings: {
          mode: 'sng', seats: SEATS, entryFee: ENTRY, rakeFee: FEE, startingStack: 3000, actionTimeoutSeconds: 30, clockFactor: flags.factor, deckSeed: `bench-${t}`,
          blindStructure: { startingSmallBlind: 10, increaseFactor: 1.5, levelDurationSeconds: 30, anteStartLevel: 4, startingAnte: 5, anteIncreaseFactor: 1.5 },
        },
      },
    });
    if (created.status !== 200) throw new Error(`table failed: ${describe(created)}`);
    tours.push({ tableId, bots });
  }
  return tours;
}

/** Pays the entries of `tour` (the last one moves it to starting). */
async function register(cage: string, tour: Tour) {
  for (const b of tour.bots) {
    const paid = await call(`${cage}/api/deposit`, { headers: { authorization: `Bearer ${b.token}`, 'idempotency-key': randomUUID() }, body: { tableId: tour.tableId, amount: ENTRY } });
    if (paid.status !== 200) throw new Error(`entry failed: ${describe(paid)}`);
  }
}

/** The game pool's query time (wall), summed: pg.Pool.prototype.query wrapped for the pool named 'game'. */
function timeGameQueries() {
  const original = pg.Pool.prototype.query;
  let ms = 0;
  pg.Pool.prototype.query = function (this: pg.Pool & { options: { application_name?: string } }, ...args: unknown[]) {
    const result = (original as (...a: unknown[]) => unknown).apply(this, args);
    if (this.options.application_name !== 'game' || !(result instanceof Promise)) return result;
    const began = performance.now();
    return result.finally(() => {
      ms += performance.now() - began;
    });
  } as typeof original;
  return { stop: () => { pg.Pool.prototype.query = original; return ms; } };
}

async function runLive(owner: pg.Pool, game: string, cage: string, tours: Tour[], flags: { parallel: number }) {
  const worker = new Worker(new URL(import.meta.url), { workerData: { kind: 'sng-bots', wsUrl: `${game.replace(/^http/, 'ws')}/ws`, tours } });
  const closedTables = new Set<string>();
  let onClosed: () => void = () => undefined;
  let result: Extract<FromBots, { type: 'done' }> | undefined;
  let crashed: string | undefined;
  const finished = new Promise<void>((resolve) => {
    worker.on('message', (m: FromBots) => {
      if (m.type === 'closed') {
        closedTables.add(m.tableId);
        onClosed();
      } else if (m.type === 'done') {
        result = m;
        resolve();
      } else {
        crashed = m.error;
        resolve();
      }
    });
    worker.on('error', (err) => {
      crashed = err.message;
      resolve();
    });
  });
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  const queries = timeGameQueries();
  await session.post('Profiler.start');
  const began = performance.now();
  // --parallel tournaments at a time: the next one's entries are paid when one closes
  let next = 0;
  const startNext = async () => {
    if (next < tours.length) await register(cage, tours[next++]!);
  };
  for (let i = 0; i < Math.min(flags.parallel, tours.length); i++) await startNext();
  await new Promise<void>((resolve) => {
    onClosed = () => {
      if (closedTables.size >= tours.length) resolve();
      else void startNext();
    };
    void finished.then(() => resolve());
  });
  const seconds = (performance.now() - began) / 1000;
  const { profile } = await session.post('Profiler.stop');
  const dbMs = queries.stop();
  session.disconnect();
  worker.postMessage({ type: 'end' });
  await finished;
  await worker.terminate();
  if (crashed) throw new Error(`the bots crashed: ${crashed}`);
  const cpu = cpuByCategory(profile);
  const { rows } = await owner.query<{ n: number }>("select count(*)::int as n from game.hand_histories where table_id = any($1) and status = 'finished'", [tours.map((t) => t.tableId)]);
  return {
    closed: closedTables.size, seconds, perMinute: (60 * closedTables.size) / seconds, hands: rows[0]!.n,
    dbMs, engineMs: cpu.engine, fanoutMs: cpu.fanout, latencies: result?.latencies ?? [], refused: result?.refused ?? 0,
  };
}

type Profile = { nodes: { id: number; callFrame: { url: string }; children?: number[] }[]; samples?: number[]; timeDeltas?: number[] };

/** Self CPU time (ms) of the engine's and the fan-out's source, natives charged to their nearest caller with a source. */
function cpuByCategory(profile: Profile) {
  const parent = new Map<number, number>();
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const categoryOf = new Map<number, string>();
  const category = (id: number): string => {
    const known = categoryOf.get(id);
    if (known) return known;
    const url = byId.get(id)?.callFrame.url ?? '';
    let c = 'other';
    if (url.includes('/server/game/poker/')) c = 'engine';
    else if (url.includes('/server/game/live/wire.ts') || url.includes('/node_modules/ws/')) c = 'fanout';
    else if (!url && parent.has(id)) c = category(parent.get(id)!);
    categoryOf.set(id, c);
    return c;
  };
  const out = { engine: 0, fanout: 0, other: 0 } as Record<string, number>;
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  for (let i = 0; i < samples.length; i++) out[category(samples[i]!)]! += (deltas[i] ?? 0) / 1000;
  return { engine: out.engine!, fanout: out.fanout! };
}

/** The tournaments' hands, as stored, replayed by the pure engine (the seeded deck of each hand). */
async function replayHands(owner: pg.Pool, tours: Tour[]) {
  const { rows } = await owner.query<{ hand_id: string; table_id: string; hand_number: string; history: any[] | null; compact: Buffer | null }>(
    "select hand_id, table_id, hand_number::text, history, compact from game.hand_histories where table_id = any($1) and status = 'finished' order by table_id, hand_number",
    [tours.map((t) => t.tableId)],
  );
  const inputs = rows.map((row) => {
    // the history as stored: compact since issue 33 (server/game/hands/compact.ts)
    const r = { ...row, history: storedHand(row).history as any[] };
    const started = r.history.find((e) => e.type === 'hand_started');
    const seats: SeatInput[] = started.seats.map((s: any) => ({ seat: s.seat, playerId: s.playerId, stack: BigInt(s.stack) }));
    const actions: RecordedAction[] = r.history.filter((e) => e.type === 'action').map((e) => ({
      seat: e.seat, type: e.action, timeout: e.timeout, ...(e.action === 'bet' || e.action === 'raise' ? { amount: BigInt(e.to) } : {}),
    }));
    const t = Number(r.table_id.split('-').at(-1));
    return {
      input: {
        handId: r.hand_id, seats, button: started.button, smallBlindSeat: started.smallBlindSeat, bigBlindSeat: started.bigBlindSeat,
        smallBlind: BigInt(started.smallBlind), bigBlind: BigInt(started.bigBlind), ante: BigInt(started.ante),
        deck: shuffledDeck(`bench-${t}:${r.hand_number}`), rake: { percent: 0, cap: 0n, minPot: 0n, requiresFlop: true },
      },
      actions,
    };
  });
  // warm up once, then time three passes and keep the fastest
  for (const h of inputs) replay(h.input, h.actions);
  let best = Infinity;
  for (let pass = 0; pass < 3; pass++) {
    const began = performance.now();
    for (const h of inputs) replay(h.input, h.actions);
    best = Math.min(best, (performance.now() - began) / 1000);
  }
  return { hands: inputs.length, seconds: best, perMinute: (60 * tours.length) / best };
}

async function check(owner: pg.Pool, cagePool: pg.Pool, tours: Tour[]): Promise<string[]> {
  const failures: string[] = [];
  const { rows } = await owner.query<{ table_id: string; tournament_state: string; paid: string }>(
    `select t.table_id, t.tournament_state, (select coalesce(sum(i.amount), 0)::text from cage.payout_intents i where i.table_id = t.table_id and i.confirmed_at is not null) as paid
       from game.tables t where t.table_id = any($1)`, [tours.map((t) => t.tableId)],
  );
  for (const r of rows) {
    if (r.tournament_state !== 'closed') failures.push(`${r.table_id} is ${r.tournament_state}, not closed`);
    if (BigInt(r.paid) !== BigInt((ENTRY - FEE) * SEATS)) failures.push(`${r.table_id} paid ${r.paid}, not ${(ENTRY - FEE) * SEATS}`);
  }
  const violations = await audit(cagePool);
  if (violations.length) failures.push(`cage audit: ${JSON.stringify(violations).slice(0, 600)}`);
  else log('books: every tournament closed, its payouts summing to its pool less the house fee; the cage audit is empty');
  return failures;
}

// ---- the bots (a worker thread) -------------------------------------------------------------

async function runBots(data: { wsUrl: string; tours: Tour[] }) {
  const latencies: number[] = [];
  let actions = 0;
  let refused = 0;
  const sockets: WebSocket[] = [];
  await Promise.all(data.tours.flatMap((tour) => tour.bots.map(async (bot, i) => {
    const ws = new WebSocket(data.wsUrl, { headers: { authorization: `Bearer ${bot.token}` } });
    sockets.push(ws);
    await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject); });
    const rng = prng(bot.seed);
    let sentAt: number | null = null;
    let answered = '';
    ws.on('message', (raw) => {
      const m = JSON.parse(raw.toString());
      if (m.tableId !== tour.tableId) return;
      if (m.type === 'game_state') {
        if (sentAt !== null) {
          latencies.push(performance.now() - sentAt);
          sentAt = null;
        }
        const legal = m.legal;
        if (!legal || answered === `${legal.handId}:${legal.seq}`) return;
        answered = `${legal.handId}:${legal.seq}`;
        const { action, amount } = calmAction(rng, legal);
        sentAt = performance.now();
        actions += 1;
        ws.send(JSON.stringify({ type: 'action', tableId: tour.tableId, handId: legal.handId, seq: legal.seq, action, ...(amount ? { amount } : {}) }));
      } else if (m.type === 'error') {
        refused += 1;
      } else if (m.type === 'tournament_state_changed' && m.state === 'closed' && i === 0) {
        parentPort!.postMessage({ type: 'closed', tableId: tour.tableId });
      }
    });
    ws.send(JSON.stringify({ type: 'join', tableId: tour.tableId }));
  })));
  parentPort!.on('message', (m: { type: string }) => {
    if (m.type !== 'end') return;
    for (const ws of sockets) ws.close();
    parentPort!.postMessage({ type: 'done', latencies, actions, refused });
  });
}

if (!isMainThread && (workerData as { kind?: string })?.kind === 'sng-bots') {
  runBots(workerData as { wsUrl: string; tours: Tour[] }).catch((err: Error) => parentPort!.postMessage({ type: 'crashed', error: err.stack ?? err.message }));
}
