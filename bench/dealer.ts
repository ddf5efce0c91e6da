// The dealer benchmark (issue 6). Four cases, in one process and one run:
//   evaluator   seven-card hands/s of the evaluator's score path (server/game/poker/evaluator.ts,
//               scoreSeven) against the `phe` package's seven-card evaluator, on the same
//               pre-generated random hands (two cases, and their ratio);
//   engine      hands/s of the pure engine (server/game/poker/engine.ts), 6-max, one core: each
//               hand takes 32 bytes from a fast PRNG, shuffles them into a deck (deck.ts,
//               randomDeck: SHA-256 counter mode and Fisher–Yates, as the game role deals), starts
//               with fresh stacks and is played to its end by random legal actions (uniform over
//               legalActions(); bet/raise to a uniform amount in minRaiseTo..maxRaiseTo);
//   live        hands/s over real websockets: --tables tables of --bots bot clients each against
//               ONE game process (the auth, game and cage roles in this process, as bench/cage.ts
//               starts them, HAND_DELAY_MS small, the turn timer off). Each bot is a user of its
//               own with chips bought through POST /api/operator/purchase, connects with its JWT,
//               joins its table, sits through the ws `sit` (and sits again when it busts), and
//               answers every game_state that carries `legal` with a random legal action. A unit
//               is a hand_result (counted on one bot per table); the latency is from sending an
//               action to the next game_state on that bot's connection.
//               The bots run in a worker thread of this process, the roles on the main thread.
// As everywhere in bench/, cases are interleaved (every round runs every case for a fixed time, in
// a rotated order), rates are medians over rounds and ratios are taken within a round, then their
// median is quoted; the live latency goal is the median over rounds of each round's p99. The live
// bots are paused (they hold their turn, so every table stands still) while the other cases run,
// and the roles finish what was in flight before those cases take the main thread. At the end the
// bots stand up through the ws, every seat must be empty, the bots' cage balances plus the tables'
// escrows must equal what was bought, the hand histories stored must be the hand_results seen and
// the cage audit must be clean; any failure, an error a bot did not expect, or an error logged by
// the roles makes the exit code 1.
import { randomBytes, randomUUID } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { isMainThread, parentPort, Worker, workerData, type MessagePort } from 'node:worker_threads';
import type pg from 'pg';
import WebSocket from 'ws';
import { createKeyStore } from '../server/auth/keys.ts';
import { audit } from '../server/cage/ledger.ts';
import { loadConfig } from '../server/config/index.ts';
import { migrate } from '../server/db/migrate.ts';
import { createOwnerPool, createRolePool } from '../server/db/pools.ts';
import { randomDeck } from '../server/game/poker/deck.ts';
import { applyAction, isRefusal, legalActions, startHand, type Action, type RakeRule, type SeatInput } from '../server/game/poker/engine.ts';
import { scoreSeven } from '../server/game/poker/evaluator.ts';
import type { Platform } from '../server/platform.ts';
import { createLogger } from '../server/telemetry/index.ts';
import { loadPhe, randomHands } from '../test/helpers/evaluator.ts';
import { signInOperator } from '../test/helpers/operator.ts';
import { benchDatabase, fmtRate, fmtRatio, median, numericFlags, table, timed, UsageError } from './lib/harness.ts';
import { call, databaseLine, describeAnswer as describe, Failures } from './lib/platform.ts';

const CASE_GROUPS = ['evaluator', 'engine', 'live'] as const;
type CaseGroup = (typeof CASE_GROUPS)[number];

const USAGE = `usage: npm run bench -- dealer [--seconds N] [--rounds N] [--hands N] [--tables N] [--bots N] [--delay MS] [--cases LIST]
  --seconds  measured seconds per case per round (default 2)
  --rounds   interleaved rounds; medians are taken over them (default 5)
  --hands    pre-generated random seven-card hands, shared by the evaluator cases (default 1048576)
  --tables   live case: tables, each with its own bots (default 20)
  --bots     live case: bot clients (and seats) per table, 2..9 (default 6)
  --delay    live case: HAND_DELAY_MS, the pause between hands (default 5)
  --cases    a comma-separated subset of ${CASE_GROUPS.join(',')} (default all)
  The live case needs PostgreSQL: DATABASE_URL when set (it is migrated; its users, tables and
  hands stay), otherwise an embedded, durable one in a temp dir, deleted at the end.
  DEALER_ROLES_LOG=<file>: the roles' warning and error log lines are also appended to that file
  (the report shows the first of each kind).`;

const SEED = 20240601;

interface Case {
  name: string;
  /** What a unit is, for the report. */
  unit: string;
  /** Runs the case for about `seconds` (a measured round when `record`); resolves to units per second. */
  run: (seconds: number, record: boolean) => Promise<number>;
}

interface Goal {
  label: string;
  /** The case measured; with `baseline`, the goal is the within-round ratio, else the median rate. */
  subject: string;
  baseline?: string;
  /** A figure that is not a case's rate (a latency): its value and how it is shown. */
  value?: () => number;
  show?: (v: number) => string;
  /** 'min': value >= target (default); 'max': value < target. */
  kind?: 'min' | 'max';
  target: number;
}

const EVALUATOR = 'evaluator 7-card hands/s (ours, score path)';
const PHE = 'phe 7-card hands/s';
const ENGINE = 'engine hands/s (6-max, random legal actions)';
const LIVE = 'live hands/s (ws bots)';

const log = (msg: string) => console.log(msg);

/** `batch` repeated for `seconds` on this thread; units per second. */
const batched = (batch: () => number) => async (seconds: number) => (await timed(1, seconds, async () => batch())).perSecond;

export default async function dealerBench(args: string[]): Promise<number> {
  let flags;
  let groups: Set<CaseGroup>;
  try {
    const rest: string[] = [];
    let casesArg: string | undefined;
    for (let i = 0; i < args.length; i++) {
      const a = args[i]!;
      if (a === '--cases') casesArg = args[++i] ?? '';
      else if (a.startsWith('--cases=')) casesArg = a.slice('--cases='.length);
      else rest.push(a);
    }
    flags = numericFlags(rest, { seconds: 2, rounds: 5, hands: 1 << 20, tables: 20, bots: 6, delay: 5 }, USAGE);
    const listed = casesArg === undefined ? [...CASE_GROUPS] : casesArg.split(',').map((s) => s.trim()).filter(Boolean);
    const unknown = listed.filter((c) => !(CASE_GROUPS as readonly string[]).includes(c));
    if (!listed.length || unknown.length) throw new UsageError(`--cases: unknown or empty (${unknown.join(',') || casesArg})\n${USAGE}`);
    groups = new Set(listed as CaseGroup[]);
    if (flags.bots < 2 || flags.bots > 9) throw new UsageError(`--bots must be 2..9\n${USAGE}`);
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(err.message);
      return 2;
    }
    throw err;
  }
  const rounds = Math.max(1, Math.round(flags.rounds));
  const began = performance.now();
  const cases: Case[] = [];
  const goals: Goal[] = [];
  const checks: (() => Promise<boolean>)[] = [];
  const cleanups: (() => Promise<void>)[] = [];

  console.log(`dealer benchmark: node ${process.version}, ${cpus()[0]?.model ?? 'unknown CPU'} (${cpus().length} CPUs; the evaluator and engine cases use one)`);

  try {
    // ---- the evaluator against phe ---------------------------------------------------------
    if (groups.has('evaluator')) {
      const count = Math.max(1, Math.round(flags.hands));
      const hands = randomHands(count, SEED);
      const evaluate7 = loadPhe().evaluate7;
      // two loops, not one taking a function: each call site stays monomorphic and inlinable
      const ours = () => {
        let sum = 0;
        for (let i = 0; i < hands.length; i += 7) {
          sum += scoreSeven(hands[i]!, hands[i + 1]!, hands[i + 2]!, hands[i + 3]!, hands[i + 4]!, hands[i + 5]!, hands[i + 6]!);
        }
        return sum;
      };
      const theirs = () => {
        let sum = 0;
        for (let i = 0; i < hands.length; i += 7) {
          sum += evaluate7(hands[i]!, hands[i + 1]!, hands[i + 2]!, hands[i + 3]!, hands[i + 4]!, hands[i + 5]!, hands[i + 6]!);
        }
        return sum;
      };
      // The same hands and the same answers: our scores are 7,463 minus phe's values, hand for hand.
      // The sums also keep the loops' results alive, so no work is optimised away.
      let ourSum = ours();
      let theirSum = theirs();
      if (ourSum + theirSum !== 7463 * count) {
        console.error(`the evaluators disagree on these hands: sums ${ourSum} + ${theirSum} != 7463 x ${count}`);
        return 1;
      }
      cases.push(
        { name: EVALUATOR, unit: 'hands', run: batched(() => { ourSum = ours(); return count; }) },
        { name: PHE, unit: 'hands', run: batched(() => { theirSum = theirs(); return count; }) },
      );
      goals.push(
        { label: EVALUATOR, subject: EVALUATOR, target: 10_000_000 },
        { label: 'evaluator vs phe, same hands', subject: EVALUATOR, baseline: PHE, target: 1.0 },
      );
      checks.push(async () => {
        if (ourSum + theirSum === 7463 * count) return true;
        log('the evaluators changed their answers during the run');
        return false;
      });
      log(`${fmtRate(count)} random seven-card hands (seed ${SEED}), pre-generated and shared by the evaluator cases`);
    }

    // ---- the pure engine -------------------------------------------------------------------
    if (groups.has('engine')) {
      const engine = engineCase();
      cases.push({ name: ENGINE, unit: 'hands', run: batched(() => engine.play(256)) });
      goals.push({ label: ENGINE, subject: ENGINE, target: 20_000 });
      checks.push(async () => {
        const s = engine.stats;
        log(`engine: ${fmtRate(s.hands)} hands played in all, ${(s.actions / s.hands).toFixed(2)} actions/hand, ` +
          `${(100 * s.showdowns / s.hands).toFixed(1)}% to a showdown, ${(100 * s.raises / s.actions).toFixed(1)}% of actions bets or raises; ` +
          `chips conserved in every hand: ${s.failures.count ? 'NO' : 'yes'}`);
        for (const line of s.failures.lines()) log(line);
        return s.failures.count === 0;
      });
    }

    // ---- the live tables -------------------------------------------------------------------
    if (groups.has('live')) {
      const live = await startLive({
        tables: Math.max(1, Math.round(flags.tables)), bots: Math.round(flags.bots), delayMs: Math.round(flags.delay),
      });
      cleanups.push(() => live.close());
      cases.push({ name: LIVE, unit: 'hands', run: (seconds, record) => live.measure(seconds, record) });
      goals.push({
        label: 'live action -> next game_state p99', subject: LIVE, kind: 'max', target: 20,
        value: () => median(live.roundP99), show: (v) => `${v.toFixed(1)} ms`,
      });
      checks.push(() => live.finish());
    }

    if (!cases.length) return 2;
    log(`${rounds} rounds x ${cases.length} cases x ${flags.seconds} s, order rotated each round${groups.has('live') ? ` (the live case: ${LIVE_SETTLE_S} s unmeasured after resuming its bots, then the measured seconds)` : ''}\n`);

    const results = new Map<string, number[]>(cases.map((c) => [c.name, []]));
    const runRound = async (round: number, seconds: number, record: boolean) => {
      const line: string[] = [];
      for (const c of cases.map((_, i) => cases[(i + round) % cases.length]!)) {
        const rate = await c.run(seconds, record);
        if (record) results.get(c.name)!.push(rate);
        line.push(`${c.name} ${fmtRate(rate)}`);
      }
      log(`${record ? `round ${round + 1}/${rounds}` : 'warm-up'}: ${line.join(', ')}`);
    };
    await runRound(0, Math.min(1, flags.seconds), false);
    for (let r = 0; r < rounds; r++) await runRound(r, flags.seconds, true);

    const rates = (name: string) => results.get(name) ?? [];
    /** Median over rounds of the within-round ratio. */
    const ratio = (a: string, b: string) => median(rates(a).map((v, i) => v / rates(b)[i]!));

    log('\nmedian rates over rounds');
    log(table(
      ['case', 'unit', 'median/s', 'min/s', 'max/s'],
      cases.map((c) => [c.name, c.unit, fmtRate(median(rates(c.name))), fmtRate(Math.min(...rates(c.name))), fmtRate(Math.max(...rates(c.name)))]),
    ));
    if (groups.has('evaluator')) log(`\nevaluator vs phe on the same hands: ${fmtRatio(ratio(EVALUATOR, PHE))} (median of within-round ratios)`);

    let ok = true;
    log('');
    for (const check of checks) ok = (await check()) && ok;

    log(`\nfinal: medians over ${rounds} rounds and the median of the within-round ratios`);
    log(table(
      ['goal', 'median', 'baseline/s', 'ratio', 'target', 'result'],
      goals.map((g) => {
        const value = g.value ? g.value() : g.baseline ? ratio(g.subject, g.baseline) : median(rates(g.subject));
        const met = g.kind === 'max' ? value < g.target : value >= g.target;
        const shown = g.show ?? ((v: number) => `${fmtRate(v)}/s`);
        return [
          g.label, g.value ? shown(value) : `${fmtRate(median(rates(g.subject)))}/s`, g.baseline ? fmtRate(median(rates(g.baseline))) : '-',
          g.baseline ? fmtRatio(value) : '-',
          g.baseline ? `>= ${fmtRatio(g.target)}` : g.kind === 'max' ? `< ${shown(g.target)}` : `>= ${shown(g.target)}`,
          met ? 'PASS' : 'MISS',
        ];
      }),
    ));
    log(`total ${((performance.now() - began) / 1000).toFixed(0)} s`);
    return ok ? 0 : 1;
  } finally {
    for (const c of cleanups) await c().catch((err) => console.error('cleanup failed:', err));
  }
}

// ---------------------------------------------------------------------------------------------
// The engine case

/** sfc32: a small, fast 32-bit PRNG (PractRand-clean), seeded deterministically. */
function sfc32(seed: number): () => number {
  let a = 0x9e3779b9, b = 0x243f6a88, c = 0xb7e15162, d = seed | 0;
  const next = () => {
    let t = (a + b) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    d = (d + 1) | 0;
    t = (t + d) | 0;
    c = (c + t) | 0;
    return t >>> 0;
  };
  for (let i = 0; i < 15; i++) next();
  return next;
}

const ENGINE_SEATS = 6;
const ENGINE_STACK = 200n; // 100 big blinds
const ENGINE_RAKE: RakeRule = { percent: 5, cap: 10n, minPot: 0n, requiresFlop: true };

function engineCase() {
  const rng = sfc32(SEED);
  const deckBytes = new Uint8Array(32);
  const stats = { hands: 0, actions: 0, raises: 0, showdowns: 0, failures: new Failures() };
  const total = ENGINE_STACK * BigInt(ENGINE_SEATS);
  const play = (n: number): number => {
    for (let k = 0; k < n; k++) {
      for (let i = 0; i < 32; i += 4) {
        const w = rng();
        deckBytes[i] = w >>> 24;
        deckBytes[i + 1] = w >>> 16;
        deckBytes[i + 2] = w >>> 8;
        deckBytes[i + 3] = w;
      }
      const seats: SeatInput[] = [];
      for (let s = 0; s < ENGINE_SEATS; s++) seats.push({ seat: s, playerId: `p${s}`, stack: ENGINE_STACK });
      let state = startHand({
        handId: 'bench', seats, button: stats.hands % ENGINE_SEATS, smallBlind: 1n, bigBlind: 2n, ante: 0n,
        deck: randomDeck(deckBytes), rake: ENGINE_RAKE,
      });
      while (state.status === 'betting') {
        const legal = legalActions(state)!;
        const type = legal.actions[rng() % legal.actions.length]!;
        let action: Action;
        if (type === 'bet' || type === 'raise') {
          const span = Number(legal.maxRaiseTo! - legal.minRaiseTo!) + 1;
          action = { type, amount: legal.minRaiseTo! + BigInt(Math.floor((rng() / 0x1_0000_0000) * span)) };
          stats.raises++;
        } else {
          action = { type };
        }
        const next = applyAction(state, legal.seat, action, legal.seq);
        if (isRefusal(next)) {
          stats.failures.add(`engine refused a legal ${type}: ${next.error}`, next.message);
          break;
        }
        state = next;
        stats.actions++;
      }
      stats.hands++;
      const result = state.result;
      if (!result) continue;
      if (result.showdown) stats.showdowns++;
      let sum = result.rake;
      for (const s of result.stacks) sum += s.stack;
      if (sum !== total) stats.failures.add('chips not conserved', `hand ${stats.hands}: stacks + rake = ${sum}, not ${total}`);
    }
    return n;
  };
  return { play, stats };
}

// ---------------------------------------------------------------------------------------------
// The live case: the server side (this thread) and the bots (a worker thread of this process)
//
// The bots run in a worker thread so that the roles' event loop carries only the server: the
// client's JSON parsing and its ends of the 120 sockets would otherwise queue in front of the
// game's work and be counted in its latency. Both threads, PostgreSQL and the kernel's loopback
// share this machine's CPUs.

const SECRET = 'bench-dealer-auth-secret-0123456789abcdef';
const ISSUER = 'https://auth.bench.local';
const SERVICE_KEY = 'bench-service-key-0123456789abcdef';
const CHIPS = 100_000; // bought per bot; enough for hundreds of rebuys
const BUY_IN = 200; // the table's maximum: 100 big blinds
const LIVE_SETTLE_S = 0.5; // unmeasured, after the bots resume, before each live measurement
const STAND_UP_TIMEOUT_MS = 30_000;
const SIT_BACKOFF_MS = 200;
/** Refusals a bot can meet in a fair race; counted and reported, not failures. */
const EXPECTED = {
  act: new Set(['stale_sequence', 'stale_hand']),
  // a sit during a hand waits for its end (sit_pending) and is made before the next deal, so no
  // refusal of a sit is expected;
  // hand_in_progress: a hand held the table when the bank came to stand the bot up (see the
  // report for stand-ups); not_at_table: the bot busted (its seat closed) while its stand-up was
  // on the way; nothing_to_withdraw: it busted and its stand-up reached the seat before the bust
  // was settled
  sit: new Set<string>(),
  up: new Set(['hand_in_progress', 'not_at_table', 'nothing_to_withdraw']),
};

interface BotSpec {
  userId: string;
  token: string;
  table: number;
  seat: number;
  /** Counts its table's hand_results. */
  counter: boolean;
}

interface BotsData {
  kind: 'dealer-bots';
  wsUrl: string;
  gameUrl: string;
  tableIds: string[];
  bots: BotSpec[];
  seed: number;
}

type ToBots = { type: 'seat' | 'resume' | 'start' | 'end' | 'pause' | 'stand-up' | 'close' };
type Kinds = [string, { count: number; first: string }][];
type FromBots =
  | { type: 'ready' }
  | { type: 'seated'; seated: number }
  | { type: 'window'; perTable: number[]; elapsed: number; latencies: Float64Array; busy: number }
  | { type: 'stood'; left: string[]; seconds: number; standUps: number; pendingStandUps: number }
  | {
    type: 'final'; hands: number; showdowns: number; dealtIn: number; counts: Record<string, number>;
    failures: Kinds; expected: [string, number][];
  }
  | { type: 'crashed'; error: string };

async function startLive(options: { tables: number; bots: number; delayMs: number }) {
  const began = performance.now();
  const db = await benchDatabase(log);
  let owner: pg.Pool | undefined;
  let cagePool: pg.Pool | undefined;
  let authPool: pg.Pool | undefined;
  let platform: Platform | undefined;
  let worker: Worker | undefined;
  const close = async () => {
    await worker?.terminate();
    worker = undefined;
    await platform?.stop().catch(() => undefined);
    platform = undefined;
    await authPool?.end().catch(() => undefined);
    await cagePool?.end().catch(() => undefined);
    await owner?.end().catch(() => undefined);
    authPool = cagePool = owner = undefined;
    await db.stop();
  };
  try {
    await migrate(db.url);
    owner = createOwnerPool(db.url, 4);
    cagePool = createRolePool(db.url, 'poker_cage', { max: 2, applicationName: 'bench-dealer-audit' });
    authPool = createRolePool(db.url, 'poker_auth', { max: 2, applicationName: 'bench-dealer-auth' });
    log(await databaseLine(owner, db.source));

    // the roles' warnings and errors are counted (the logger is otherwise silent)
    const serverLog = new Failures();
    const destination = {
      write(line: string) {
        if (process.env.DEALER_ROLES_LOG) appendFileSync(process.env.DEALER_ROLES_LOG, line);
        try {
          const o = JSON.parse(line) as Record<string, any>;
          const detail = JSON.stringify({ ...o, time: undefined, pid: undefined, hostname: undefined }).slice(0, 400);
          serverLog.add(`${o.level >= 50 ? 'error' : 'warn'}: ${o.msg}`, detail);
        } catch {
          serverLog.add('unparsed log line', line.slice(0, 400));
        }
      },
    };
    process.env.GRAPHILE_ENV ??= 'development'; // Grafast reads it at import
    const { startPlatform } = await import('../server/platform.ts');
    platform = await startPlatform({
      config: loadConfig({
        NODE_ENV: 'test', LOG_LEVEL: 'warn', PORT: '0', GAME_PORT: '0', CAGE_PORT: '0', SERVICE_KEY,
        AUTH_SECRET: SECRET, AUTH_BASE_URL: ISSUER, ENABLE_TEST_AUTH: 'true', CAGE_AUDIT_CRON: '0 0 1 1 *', CAGE_RAKE_RECONCILE_CRON: '0 0 1 1 *',
        HAND_DELAY_MS: String(options.delayMs),
      }),
      roles: ['auth', 'game', 'cage'],
      log: createLogger('warn', 'poker', destination),
      databaseUrl: db.url,
    });
    const urlOf = (role: 'auth' | 'game' | 'cage') => platform!.roles.find((r) => r.role === role)!.url!;
    const cage = urlOf('cage');
    const game = urlOf('game');
    const operator = await signInOperator(owner!, urlOf('auth'));

    // ---- users, chips, tables ----------------------------------------------------------------
    const keys = createKeyStore(authPool, { secret: SECRET, issuer: ISSUER });
    const run = Date.now().toString(36);
    const tableIds = Array.from({ length: options.tables }, (_, t) => `bench-${run}-${t}`);
    const settings = {
      smallBlind: 1, bigBlind: 2, minBuyIn: 40, maxBuyIn: BUY_IN, maxPlayers: options.bots, rakePercent: 5, rakeCap: 10,
      rakeMinPot: 0, rakeRequiresFlop: true, turnTimeSec: 30, turnTimerEnabled: false,
    };
    const total = options.tables * options.bots;
    const bots: BotSpec[] = [];
    let made = 0;
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (made < total) {
        const i = made++;
        const invite = `inv_${randomBytes(12).toString('hex')}`;
        await owner!.query('select auth.mint_invite($1)', [invite]);
        const { rows } = await owner!.query<{ user_id: string }>("select user_id from auth.bridge_sign_in('oidc', $1, null, $2)", [randomUUID(), invite]);
        const userId = rows[0]!.user_id;
        // a day, not the default 15 minutes: long runs must not see their tokens expire
        const token = await keys.sign({ sub: userId, walletAddress: null }, { ttlSeconds: 86_400 });
        const bought = await call(`${cage}/api/operator/purchase`, {
          headers: operator.auth, body: { userId, amount: CHIPS, externalRef: `pay-${randomUUID()}`, moneyKind: 'play' },
        });
        if (bought.status !== 200) throw new Error(`purchase failed: ${describe(bought)}`);
        bots[i] = { userId, token, table: Math.floor(i / options.bots), seat: i % options.bots, counter: i % options.bots === 0 };
      }
    }));
    for (let t = 0; t < options.tables; t++) {
      const created = await call(`${cage}/api/tables`, {
        headers: { authorization: `Bearer ${bots[t * options.bots]!.token}` },
        body: { tableId: tableIds[t]!, gameType: 'poker', settings },
      });
      if (created.status !== 200) throw new Error(`table failed: ${describe(created)}`);
    }
    const bought = BigInt(CHIPS) * BigInt(total);

    // ---- the bots' thread ---------------------------------------------------------------------
    const data: BotsData = { kind: 'dealer-bots', wsUrl: `${game.replace(/^http/, 'ws')}/ws`, gameUrl: game, tableIds, bots, seed: SEED };
    const w = new Worker(new URL(import.meta.url), { workerData: data });
    worker = w;
    const waiting = new Map<string, (m: FromBots) => void>();
    let crashed: string | null = null;
    const failAll = (why: string) => {
      crashed ??= why;
      for (const resolve of waiting.values()) resolve({ type: 'crashed', error: why });
      waiting.clear();
    };
    w.on('message', (m: FromBots) => {
      if (m.type === 'crashed') return failAll(m.error);
      const resolve = waiting.get(m.type);
      waiting.delete(m.type);
      resolve?.(m);
    });
    w.on('error', (err) => failAll(`the bots' thread threw: ${err.stack ?? err.message}`));
    w.on('exit', (code) => failAll(`the bots' thread exited (${code})`));
    const ask = <T extends FromBots['type']>(command: ToBots['type'] | null, answer: T): Promise<Extract<FromBots, { type: T }>> => {
      const reply = new Promise<FromBots>((resolve) => {
        if (crashed) return resolve({ type: 'crashed', error: crashed });
        waiting.set(answer, resolve);
      });
      if (command) w.postMessage({ type: command } satisfies ToBots);
      return reply.then((m) => {
        if (m.type === 'crashed') throw new Error(m.error);
        return m as Extract<FromBots, { type: T }>;
      });
    };
    const tell = (command: ToBots['type']) => w.postMessage({ type: command } satisfies ToBots);
    await ask(null, 'ready');
    log(`set up ${total} bots (${options.tables} tables x ${options.bots}, each a user with ${CHIPS} play chips bought through the operator route, connected and joined; they run in a worker thread) in ${((performance.now() - began) / 1000).toFixed(1)} s`);
    log(`live tables: HAND_DELAY_MS=${options.delayMs}, turn timer off, blinds 1/2, buy-in ${BUY_IN}, rake 5% capped at 10; the bots mostly check or call, fold more the larger the call against their stack, bet or raise 10% of the time (to minRaiseTo..maxRaiseTo, cubed-uniform), and sit again after a bust`);

    // every bot takes its seat before the first deal: sit, then sit out until the table is full,
    // then all sit in (a sit is refused while a hand holds the table, and the first hand is dealt
    // HAND_DELAY_MS after a second player is ready)
    const seatStart = performance.now();
    const seating = await ask('seat', 'seated');
    log(`seating: ${seating.seated} of ${total} bots seated in ${((performance.now() - seatStart) / 1000).toFixed(1)} s (sit, sit_out; then sit_in)`);
    if (seating.seated !== total) throw new Error(`only ${seating.seated} of ${total} bots could sit`);
    const sessions = async () => Number((await owner!.query<{ n: string }>('select sessions::text as n from pg_stat_database where datname = current_database()')).rows[0]?.n ?? NaN);
    const sessionsBefore = await sessions();

    /**
     * After the bots pause, the work they started (a hand's end: its database writes, the bust
     * settlements through the cage; a sit on its way through the bank) must finish before the next
     * case: the evaluator and engine cases hold this thread, and so the roles' event loop, for
     * seconds, and a call between roles caught in that would time out (GAME_CALL_TIMEOUT_MS).
     * Waits until the event loop has been nearly idle for 200 ms (at most 5 s).
     */
    const quiesce = async () => {
      const until = performance.now() + 5000;
      let quiet = 0;
      while (quiet < 2 && performance.now() < until) {
        const elu = performance.eventLoopUtilization();
        await sleep(100);
        quiet = performance.eventLoopUtilization(elu).utilization < 0.05 ? quiet + 1 : 0;
      }
    };

    const roundP50: number[] = [];
    const roundP99: number[] = [];
    const all: Float64Array[] = [];
    const serverBusy: number[] = [];
    const botsBusy: number[] = [];
    let idleTables = 0;

    return {
      roundP99,
      close,
      /** Resumes the bots, lets them settle, measures `seconds`, pauses them; hands/s. */
      async measure(seconds: number, record: boolean): Promise<number> {
        tell('resume');
        await sleep(LIVE_SETTLE_S * 1000);
        tell('start');
        const elu = performance.eventLoopUtilization();
        await sleep(seconds * 1000);
        const window = await ask('end', 'window');
        const busy = performance.eventLoopUtilization(elu).utilization;
        tell('pause');
        await quiesce();
        const hands = window.perTable.reduce((a, b) => a + b, 0);
        const sorted = Float64Array.from(window.latencies).sort();
        const idle = window.perTable.filter((n) => n === 0).length;
        if (record) {
          all.push(sorted);
          roundP50.push(percentile(sorted, 0.5));
          roundP99.push(percentile(sorted, 0.99));
          serverBusy.push(busy);
          botsBusy.push(window.busy);
          if (idle) idleTables = Math.max(idleTables, idle);
        }
        log(`  live: ${fmtRate(hands / window.elapsed)} hands/s, ${fmtRate(sorted.length / window.elapsed)} actions/s, latency p50 ${percentile(sorted, 0.5).toFixed(2)} ms, p99 ${percentile(sorted, 0.99).toFixed(2)} ms, max ${(sorted.at(-1) ?? NaN).toFixed(1)} ms; hands per table ${Math.min(...window.perTable)}..${Math.max(...window.perTable)}; event loops busy: roles ${(100 * busy).toFixed(0)}%, bots ${(100 * window.busy).toFixed(0)}%`);
        return hands / window.elapsed;
      },
      /** Stops the bots, stands everyone up and checks the money; true when all is well. */
      async finish(): Promise<boolean> {
        const failures = new Failures();
        const pooled = Float64Array.from(all.flatMap((a) => [...a])).sort();
        log(`live latency, action sent -> next game_state on that connection, every measured round (${fmtRate(pooled.length)} actions): p50 ${percentile(pooled, 0.5).toFixed(2)} ms, p90 ${percentile(pooled, 0.9).toFixed(2)} ms, p99 ${percentile(pooled, 0.99).toFixed(2)} ms, p99.9 ${percentile(pooled, 0.999).toFixed(2)} ms, max ${(pooled.at(-1) ?? NaN).toFixed(1)} ms; by round p50 ${roundP50.map((v) => v.toFixed(1)).join(' / ')}, p99 ${roundP99.map((v) => v.toFixed(1)).join(' / ')}`);
        log(`live event loops busy in each measured window: the roles (auth, game, cage) ${serverBusy.map((v) => `${(100 * v).toFixed(0)}%`).join(' / ')}; the bots ${botsBusy.map((v) => `${(100 * v).toFixed(0)}%`).join(' / ')}`);
        if (idleTables) failures.add('a table finished no hand in a measured window', `${idleTables} of ${options.tables} tables`);

        log(`PostgreSQL sessions opened while the bots played: ${(await sessions()) - sessionsBefore} (node-postgres's pool drops a connection whose query raised, e.g. a seat funding refused hand_in_progress)`);

        // stop the bots; every bot stands up (one in a hand checks or folds its way out of it)
        const stood = await ask('stand-up', 'stood');
        if (stood.left.length) failures.add(`seats still taken ${STAND_UP_TIMEOUT_MS / 1000} s after every bot asked to stand up`, `${stood.left.length} tables; ${stood.left[0]}`);
        log(`stand-up: ${stood.left.length ? `${stood.left.length} tables still had seats taken` : 'every seat empty'} after ${stood.seconds.toFixed(1)} s (${stood.standUps} stood up at once, ${stood.pendingStandUps} pending until their hand ended)`);
        const final = await ask('close', 'final');
        await w.terminate();
        worker = undefined;
        for (const [kind, f] of final.failures) {
          for (let i = 0; i < f.count; i++) failures.add(kind, f.first);
        }
        const c = final.counts;
        log(`live: ${fmtRate(final.hands)} hands in all (${(100 * final.showdowns / final.hands).toFixed(0)}% to a showdown, ${(final.dealtIn / final.hands).toFixed(2)} players dealt in per hand), ${fmtRate(c.actions!)} actions (${(100 * c.raises! / c.actions!).toFixed(1)}% bets or raises, ${(100 * c.folds! / c.actions!).toFixed(1)}% folds), ${c.sits} sits (${c.sits! - total} after a bust), ${c.duplicates} duplicate acks`);

        // the money: what was bought is in the bots' cage balances and the tables' escrows (the rake)
        const userIds = bots.map((b) => b.userId);
        const money = (await owner!.query<{ balances: string; escrow: string; rake: string; stacks: string; other: string; histories: string }>(
          `select (select coalesce(sum(balance), 0) from cage.cage_accounts where account_type = 'user' and money_kind = 'play' and user_id = any($2))::text as balances,
                  (select coalesce(sum(balance), 0) from cage.account_balances where account_type = 'table_escrow' and scope = any($1))::text as escrow,
                  (select coalesce(sum(unreconciled_rake + reconciled_rake), 0) from game.tables where table_id = any($1))::text as rake,
                  (select coalesce(sum(chip_balance), 0) from game.table_players where table_id = any($1) and status <> 'closed')::text as stacks,
                  (select coalesce(sum(balance), 0) from cage.cage_accounts where account_type <> 'user' and account_type <> 'table_escrow' and bounded and user_id = any($2))::text as other,
                  (select count(*) from game.hand_histories where table_id = any($1) and status = 'finished')::text as histories`,
          [tableIds, userIds],
        )).rows[0]!;
        const balances = BigInt(money.balances);
        const escrow = BigInt(money.escrow);
        if (balances + escrow !== bought) failures.add('money not conserved', `bought ${bought}, bots' cage balances ${balances} + table escrows ${escrow} = ${balances + escrow}`);
        if (escrow !== BigInt(money.rake) + BigInt(money.stacks)) failures.add('escrow is not the stacks plus the rake', `escrow ${escrow}, stacks ${money.stacks}, unreconciled rake ${money.rake}`);
        if (BigInt(money.histories) !== BigInt(final.hands)) failures.add('hand histories stored != hand_results seen', `${money.histories} stored, ${final.hands} seen`);
        log(`money: bought ${bought}; the bots' cage balances ${balances} + the tables' escrows ${escrow} (rake ${money.rake}, stacks left ${money.stacks}) = ${balances + escrow}: ${balances + escrow === bought ? 'conserved' : 'NOT conserved'}; the bots' other accounts (custody): ${money.other}; ${money.histories} hand histories stored, ${final.hands} hand_results seen`);

        await platform!.stop();
        platform = undefined;
        const violations = await audit(cagePool!);
        if (violations.length) {
          failures.add('cage audit violations', violations.slice(0, 5).map((v) => `${v.invariant} ${v.subject} ${JSON.stringify(v.detail)}`).join('; '));
        }
        log(`audit: ${violations.length ? `${violations.length} violation(s)` : 'clean (0 violations)'}`);

        if (final.expected.length) log(`refusals expected in a race (counted, not failures): ${final.expected.map(([k, n]) => `${n} x ${k}`).join(', ')}`);
        if (serverLog.count) {
          log(`the roles logged ${serverLog.count} warning(s)/error(s):`);
          for (const line of serverLog.lines()) log(line);
        }
        for (const kind of serverLog.byKind.keys()) {
          if (kind.startsWith('error')) failures.add(`the roles logged an error: ${kind}`, serverLog.byKind.get(kind)!.first);
        }
        if (failures.count) {
          log(`live FAILURES: ${failures.count}`);
          for (const line of failures.lines()) log(line);
        } else {
          log('live: no failures (every error a bot received was an expected race, no error logged by the roles)');
        }
        return failures.count === 0;
      },
    };
  } catch (err) {
    await close();
    throw err;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Nearest-rank percentile of ascending values. */
function percentile(sorted: Float64Array, p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
}

// ---- the bots (in the worker thread) ------------------------------------------------------------

interface GameState {
  status: string;
  seats: { userId: string; seatIndex: number; stack: string; inHand: boolean; folded: boolean }[];
  legal: { actions: string[]; toCall: string; minRaiseTo: string | null; maxRaiseTo: string | null; seq: number; handId: string } | null;
}

interface Bot extends BotSpec {
  tableId: string;
  ws: WebSocket;
  seated: boolean;
  status: string;
  sitting: boolean;
  /** No sit attempt before this time (performance.now()): a backoff after a refused sit. */
  sitAfter: number;
  /** The last game_state offering this bot a turn, not yet answered. */
  pending: GameState | null;
  answered: string;
  /** When the last action went out (0: none awaiting its game_state). */
  sentAt: number;
  standing: 'no' | 'sent' | 'pending' | 'done';
  /** Its seat in the last game_state: dealt in, folded. */
  inHand: boolean;
  folded: boolean;
  /** Answers awaited by ref (the seating). */
  answers: Map<string, (m: Record<string, any>) => void>;
}

async function runBots(data: BotsData, port: MessagePort): Promise<void> {
  const reply = (m: FromBots, transfer: ArrayBuffer[] = []) => port.postMessage(m, transfer);
  let mode: 'paused' | 'running' | 'stopping' = 'paused';
  let measuring = false;
  let windowStart = 0;
  let windowElu = performance.eventLoopUtilization();
  let latencies: number[] = [];
  const perTable = data.tableIds.map(() => 0);
  const totals = { hands: 0, showdowns: 0, dealtIn: 0 };
  const counts = { actions: 0, raises: 0, folds: 0, sits: 0, duplicates: 0, standUps: 0, pendingStandUps: 0 };
  const failures = new Failures();
  const expected = new Map<string, number>();
  const rng = sfc32(data.seed ^ 0x5eed);
  const random = () => rng() / 0x1_0000_0000;

  const send = (b: Bot, m: Record<string, unknown>) => b.ws.send(JSON.stringify(m));
  const act = (b: Bot) => {
    const s = b.pending!;
    b.pending = null;
    const legal = s.legal!;
    const key = `${legal.handId}:${legal.seq}`;
    if (key === b.answered) return;
    b.answered = key;
    // mostly check/call (hands reach showdowns), a fold more likely the larger the call is against
    // the stack (a bot rarely calls off its stack, so busts stay occasional), and some bets and
    // raises to an amount anywhere in minRaiseTo..maxRaiseTo, weighted towards the small end
    // (cubed uniform): an all-in is possible on every raise, just not the usual one
    const has = (a: string) => legal.actions.includes(a);
    const behind = Number(s.seats.find((x) => x.userId === b.userId)?.stack ?? 0);
    const callShare = behind > 0 ? Math.min(1, Number(legal.toCall) / behind) : 1;
    let action: string;
    let amount: string | undefined;
    if (has('fold') && random() < 0.03 + 0.9 * callShare) action = 'fold';
    else if ((has('raise') || has('bet')) && random() < 0.1) {
      action = has('raise') ? 'raise' : 'bet';
      const min = BigInt(legal.minRaiseTo!);
      const span = Number(BigInt(legal.maxRaiseTo!) - min) + 1;
      amount = (min + BigInt(Math.floor(random() ** 3 * span))).toString();
    } else action = has('check') ? 'check' : 'call';
    counts.actions++;
    if (amount !== undefined) counts.raises++;
    if (action === 'fold') counts.folds++;
    b.sentAt = performance.now();
    send(b, { type: 'action', tableId: b.tableId, handId: legal.handId, seq: legal.seq, action, ...(amount !== undefined ? { amount } : {}), ref: 'act' });
  };
  const drive = (b: Bot) => {
    if (mode === 'running') {
      if (b.pending) act(b);
      else if (!b.seated && !b.sitting && b.status === 'waiting' && performance.now() >= b.sitAfter) {
        b.sitting = true;
        send(b, { type: 'sit', tableId: b.tableId, seatIndex: b.seat, amount: BUY_IN, ref: 'sit' });
      }
    } else if (mode === 'stopping' && b.seated && b.standing === 'no') {
      b.standing = 'sent';
      send(b, { type: 'stand_up', tableId: b.tableId, ref: 'up' });
    }
  };
  /** Sends a message with `ref` and resolves to the answer carrying that ref. */
  const answer = (b: Bot, ref: string, m: Record<string, unknown>) => new Promise<Record<string, any>>((resolve) => {
    b.answers.set(ref, resolve);
    send(b, { ...m, ref });
  });
  const onMessage = (b: Bot, m: Record<string, any>, at: number) => {
    const waiter = typeof m.ref === 'string' ? b.answers.get(m.ref) : undefined;
    if (waiter) {
      b.answers.delete(m.ref);
      if (m.type === 'error') failures.add(`${m.ref} refused ${m.code}`, `${b.tableId} seat ${b.seat}: ${JSON.stringify(m).slice(0, 300)}`);
      return waiter(m);
    }
    switch (m.type) {
      case 'game_state': {
        if (b.sentAt) {
          if (measuring) latencies.push(at - b.sentAt);
          b.sentAt = 0;
        }
        const s = m as GameState;
        const mine = s.seats.find((x) => x.userId === b.userId);
        b.seated = mine !== undefined;
        b.inHand = mine?.inHand === true && s.status === 'betting';
        b.folded = mine?.folded === true;
        b.status = s.status;
        b.pending = s.legal ? s : null;
        if (b.standing === 'pending' && b.seated && s.status === 'waiting') {
          failures.add('stand_up_pending, but still seated after the hand', `${b.tableId} seat ${b.seat} (user ${b.userId})`);
          b.standing = 'no';
        }
        if (b.standing === 'pending' && !b.seated) b.standing = 'done';
        drive(b);
        return;
      }
      case 'hand_result':
        if (b.counter) {
          totals.hands++;
          if (measuring) perTable[b.table]!++;
          if (m.showdown) totals.showdowns++;
          totals.dealtIn += (m.stacks as unknown[]).length;
        }
        return;
      case 'action_ack':
        if (m.duplicate) counts.duplicates++;
        return;
      case 'seated':
        b.sitting = false;
        counts.sits++;
        return;
      case 'stood_up':
        b.standing = 'done';
        counts.standUps++;
        return;
      case 'stand_up_pending':
        b.standing = 'pending';
        counts.pendingStandUps++;
        return;
      case 'error': {
        const what = m.ref === 'act' || m.ref === 'sit' || m.ref === 'up' ? (m.ref as 'act' | 'sit' | 'up') : null;
        if (what === 'act') b.sentAt = 0;
        if (what === 'sit') {
          b.sitting = false;
          // lost the race with the next deal: try again at a hand boundary after a short backoff
          // (each attempt is a buy-in and its refund in the journal)
          b.sitAfter = performance.now() + SIT_BACKOFF_MS * (0.5 + random());
        }
        if (what === 'up') b.standing = m.code === 'hand_in_progress' ? 'no' : 'done';
        // a stand-up refused while a hand holds the table: was the bot in that hand?
        const where = what === 'up' && m.code === 'hand_in_progress' ? (b.inHand ? (b.folded ? ' (folded, by its last game_state)' : ' (in the hand, by its last game_state)') : ' (not in a hand, by its last game_state)') : '';
        const label = `${what ?? 'unsolicited'} refused ${m.code}${where}`;
        if (what && EXPECTED[what].has(m.code)) expected.set(label, (expected.get(label) ?? 0) + 1);
        else failures.add(label, `${b.tableId} seat ${b.seat}: ${JSON.stringify(m).slice(0, 300)}`);
        return;
      }
      default:
    }
  };

  const bots: Bot[] = data.bots.map((spec) => ({
    ...spec, tableId: data.tableIds[spec.table]!,
    ws: new WebSocket(data.wsUrl, { headers: { authorization: `Bearer ${spec.token}` }, perMessageDeflate: false }),
    seated: false, status: 'unknown', sitting: false, sitAfter: 0, pending: null, answered: '', sentAt: 0, standing: 'no', inHand: false, folded: false, answers: new Map(),
  }));
  let closing = false;
  await Promise.all(bots.map((b) => new Promise<void>((resolve, reject) => {
    b.ws.once('error', reject);
    b.ws.on('message', (raw) => {
      const at = performance.now();
      let m: Record<string, any>;
      try {
        m = JSON.parse(raw.toString());
      } catch {
        failures.add('a message that is not JSON', String(raw).slice(0, 200));
        return;
      }
      if (m.type === 'joined') resolve();
      onMessage(b, m, at);
    });
    b.ws.once('open', () => send(b, { type: 'join', tableId: b.tableId }));
  })));
  for (const b of bots) {
    b.ws.on('error', (err) => failures.add('websocket error', `${b.tableId} seat ${b.seat}: ${err.message}`));
    b.ws.on('close', () => {
      if (!closing) failures.add('websocket closed by the server', `${b.tableId} seat ${b.seat}`);
    });
  }

  port.on('message', async (m: ToBots) => {
    switch (m.type) {
      case 'resume':
        mode = 'running';
        for (const b of bots) drive(b);
        return;
      case 'pause':
        mode = 'paused';
        return;
      case 'seat': {
        // one table after another would be slow, one bot after another per table is needed: a
        // player sitting out is not ready, so no hand starts until the sit_ins
        await Promise.all(data.tableIds.map(async (_, t) => {
          for (const b of bots.filter((x) => x.table === t)) {
            const sat = await answer(b, 'seat', { type: 'sit', tableId: b.tableId, seatIndex: b.seat, amount: BUY_IN });
            if (sat.type !== 'seated') continue;
            counts.sits++;
            await answer(b, 'out', { type: 'sit_out', tableId: b.tableId });
          }
        }));
        await Promise.all(bots.map((b) => answer(b, 'in', { type: 'sit_in', tableId: b.tableId })));
        return reply({ type: 'seated', seated: bots.filter((b) => b.seated).length });
      }
      case 'start':
        perTable.fill(0);
        latencies = [];
        windowElu = performance.eventLoopUtilization();
        windowStart = performance.now();
        measuring = true;
        return;
      case 'end': {
        measuring = false;
        const elapsed = (performance.now() - windowStart) / 1000;
        const sample = Float64Array.from(latencies);
        return reply({
          type: 'window', perTable: [...perTable], elapsed, latencies: sample, busy: performance.eventLoopUtilization(windowElu).utilization,
        }, [sample.buffer]);
      }
      case 'stand-up': {
        mode = 'stopping';
        const start = performance.now();
        let left: string[] = [];
        for (;;) {
          for (const b of bots) drive(b);
          const rooms = await Promise.all(data.tableIds.map(async (id) => {
            const res = await fetch(`${data.gameUrl}/api/tables/${id}`);
            return { id, status: res.status, body: (await res.json()) as { seats?: unknown[] } };
          }));
          left = rooms.filter((r) => !Array.isArray(r.body.seats) || r.body.seats.length > 0).map((r) => `${r.id}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
          if (!left.length || performance.now() - start > STAND_UP_TIMEOUT_MS) break;
          await sleep(100);
        }
        return reply({ type: 'stood', left, seconds: (performance.now() - start) / 1000, standUps: counts.standUps, pendingStandUps: counts.pendingStandUps });
      }
      case 'close':
        // the last hand_results may still be on their way: close each connection and wait for its close
        closing = true;
        await Promise.all(bots.map((b) => new Promise<void>((resolve) => {
          if (b.ws.readyState === WebSocket.CLOSED) return resolve();
          b.ws.once('close', () => resolve());
          b.ws.close();
        })));
        return reply({
          type: 'final', ...totals, counts, failures: [...failures.byKind], expected: [...expected],
        });
      default:
    }
  });
  reply({ type: 'ready' });
}

// This module is also the bots' worker thread (bench/run.ts lists only bench/*.ts as benchmarks).
if (!isMainThread && (workerData as { kind?: string } | null)?.kind === 'dealer-bots') {
  runBots(workerData as BotsData, parentPort!).catch((err: Error) => parentPort!.postMessage({ type: 'crashed', error: err.stack ?? err.message } satisfies FromBots));
}
