// The dealer benchmark (issue 6, issue 22). Cases, in one process and one run:
//   evaluator   seven-card hands/s of the evaluator's score path (server/game/poker/evaluator.ts,
//               scoreSeven) against the `phe` package's seven-card evaluator, on the same
//               pre-generated random hands (two cases, and their ratio);
//   engine      hands/s of the pure engine (server/game/poker/engine.ts), 6-max, one core: each
//               hand takes 32 bytes from a fast PRNG, shuffles them into a deck (deck.ts,
//               randomDeck: SHA-256 counter mode and Fisher–Yates, as the game role deals), starts
//               with fresh stacks and is played to its end by random legal actions (uniform over
//               legalActions(); bet/raise to a uniform amount in minRaiseTo..maxRaiseTo); and the same
//               with commit and reveal as the room does it (a server seed from the OS, its
//               commitment, two contributions mixed in; the hand's record chained and signed): their
//               ratio is what a provably fair deal costs a hand;
//   live        hands/s over real websockets: --tables tables of --bots bot clients each
//               (bench/lib/live-bots.ts, in a worker thread), HAND_DELAY_MS small, the turn timer
//               off, once for each placement of the roles (--live; bench/lib/live-roles.ts), each a
//               case of its own with its own users and tables on the one database:
//                 in-process     auth, game and cage in this process's main thread, as before;
//                 start          one child process started as `npm start` starts it (the telemetry
//                                hook loaded), running auth, game and cage;
//                 start-no-hook  the same without the hook: the two side by side price the hook;
//                 game-x1        auth and cage in one child, the game role in another (hook loaded);
//                 game-x2        auth and cage in one child, the game role in two others: table i
//                                goes to game process i mod 2 (a router keyed by table), the
//                                table lease decides which runs it; against game-x1, what a
//                                second process adds;
//                 floor          no roles: a bare websocket server in a child of its own
//                                (bench/lib/live-floor.ts: the product's engine and state builders,
//                                its framed writes, nothing durable or remote), played by the same
//                                bots: what the bots and the websocket traffic alone cost on this
//                                machine, the ceiling of any placement's hands/s. Each product
//                                placement's hands/s is printed as a ratio to it, and the floor's
//                                own against the issue's target (can this machine reach it at all?).
//               Each bot is a user of its own with chips bought through POST
//               /api/operator/purchase, connects with its JWT, joins its table, sits through the ws
//               `sit` (and sits again when it busts), and answers every game_state that carries
//               `legal` with a random legal action. A unit is a hand_result (counted on one bot per
//               table); the latency is from sending an action to the next game_state on that bot's
//               connection. Each window also reads the CPU the roles' processes, PostgreSQL (its
//               postmaster and backends, /proc) and the bots' thread spent, printed per hand. After
//               the rounds, one more window per placement runs with a CPU profile of every process
//               of its roles, printed as CPU ms per hand by part (bench/lib/cpu-profile.ts): where
//               the time goes.
// As everywhere in bench/, cases are interleaved (every round runs every case for a fixed time, in
// a rotated order), rates are medians over rounds and ratios are taken within a round, then their
// median is quoted; the live latency goal is the median over rounds of each round's p99. The live
// bots are paused (they hold their turn, so every table stands still) while the other cases run,
// and the roles finish what was in flight before another case runs. At the end, for every
// placement, the bots stand up through the ws, every seat must be empty, the bots' cage balances
// plus the tables' escrows must equal what was bought and the hand histories stored must be the
// hand_results seen; then every role stops and the cage audit (of the whole journal) must be clean.
// Any failure, an error a bot did not expect, or an error logged by the roles makes the exit code 1.
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import type pg from 'pg';
import { createKeyStore } from '../server/auth/keys.ts';
import { benchJwtKey } from './lib/keys.ts';
import { audit } from '../server/cage/ledger.ts';
import { migrate } from '../server/db/migrate.ts';
import { createOwnerPool, createRolePool } from '../server/db/pools.ts';
import { randomBytes } from 'node:crypto';
import { signerFromPrivateKey } from '../server/crypto/signing.ts';
import { GENESIS, recordOf, signRecord } from '../server/game/hands/hand-record.ts';
import type { Card } from '../server/game/poker/cards.ts';
import { randomDeck } from '../server/game/poker/deck.ts';
import { commitmentOf, deckOf, LEGACY_ALGORITHM as DEAL_ALGORITHM, toHex } from '../server/game/poker/fair-deal.ts';
import { applyAction, isRefusal, legalActions, startHand, type Action, type HandState, type RakeRule, type SeatInput } from '../server/game/poker/engine.ts';
import { scoreSeven } from '../server/game/poker/evaluator.ts';
import { loadPhe, randomHands } from '../test/helpers/evaluator.ts';
import { PARTS, type Part } from './lib/cpu-profile.ts';
import { benchDatabase, fmtRate, fmtRatio, median, numericFlags, sfc32, table, timed, UsageError } from './lib/harness.ts';
import { LIVE_SETTLE_S, LiveConfig, type LiveShared, type ProfileResult } from './lib/live.ts';
import { isFloor, PLACEMENT_LABELS, PLACEMENTS, startRoles, type Placement, type RunningRoles } from './lib/live-roles.ts';
import { databaseLine, Failures } from './lib/platform.ts';
import { available as procAvailable, PostgresCpu } from './lib/proc-cpu.ts';

const CASE_GROUPS = ['evaluator', 'engine', 'live'] as const;
type CaseGroup = (typeof CASE_GROUPS)[number];

const USAGE = `usage: npm run bench -- dealer [--seconds N] [--rounds N] [--hands N] [--tables N] [--bots N] [--delay MS] [--cases LIST] [--live LIST]
  --seconds  measured seconds per case per round (default 2)
  --rounds   interleaved rounds; medians are taken over them (default 5)
  --hands    pre-generated random seven-card hands, shared by the evaluator cases (default 1048576)
  --tables   live cases: tables, each with its own bots (default 20)
  --bots     live cases: bot clients (and seats) per table, 2..9 (default 6)
  --delay    live cases: HAND_DELAY_MS, the pause between hands (default 5)
  --audit    live cases: 1 runs the worker role beside the \`npm start\` placements' roles, its periodic
             audit (both halves: the sums and the audit of causes) every minute (default 0)
  --cases    a comma-separated subset of ${CASE_GROUPS.join(',')} (default all)
  --live     the live cases' placements of the roles, a comma-separated subset of
             ${PLACEMENTS.join(',')} (default all)
  The live cases need PostgreSQL: DATABASE_URL when set (it is migrated; its users, tables and
  hands stay), otherwise an embedded, durable one in a temp dir, deleted at the end.
  DEALER_ROLES_LOG=<file>: the roles' warning and error log lines are also appended to that file
  (the report shows the first of each kind).
  DEALER_PROFILE_DIR=<dir>: the profiled windows' CPU profiles are also written there (.cpuprofile,
  for Chrome DevTools), one per process of the roles.`;

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
  /** 'min': value >= target (default); 'max': value < target; 'info': a figure shown with no target (target ignored). */
  kind?: 'min' | 'max' | 'info';
  target: number;
}

/** What each group of cases adds to the run. */
interface Plan {
  cases: Case[];
  goals: Goal[];
  checks: (() => Promise<boolean>)[];
  cleanups: (() => Promise<void>)[];
  /** After the rounds, before the checks: the live profiles. */
  afterRounds: (() => Promise<void>)[];
  /** Each case's rates over the measured rounds, once they ran. */
  rates?: (name: string) => number[];
}

const EVALUATOR = 'evaluator 7-card hands/s (ours, score path)';
const PHE = 'phe 7-card hands/s';
const ENGINE = 'engine hands/s (6-max, random legal actions)';
const FAIR_ENGINE = 'engine hands/s with commit and reveal (seed, commitment, record, signature)';
const liveCase = (p: Placement) => `live hands/s, ${PLACEMENT_LABELS[p]}`;

const log = (msg: string) => console.log(msg);

/** `batch` repeated for `seconds` on this thread; units per second. */
const batched = (batch: () => number) => async (seconds: number) => (await timed(1, seconds, async () => batch())).perSecond;

interface Flags {
  seconds: number;
  rounds: number;
  hands: number;
  tables: number;
  bots: number;
  delay: number;
  /** 1: the `npm start` placements also run the worker, its periodic audit every minute (a soak's check that the audit keeps pace). */
  audit: number;
}

/** A comma-separated list flag (`--name a,b` or `--name=a,b`), taken out of `args`. */
function listFlag(args: string[], name: string): { rest: string[]; value: string | undefined } {
  const rest: string[] = [];
  let value: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === `--${name}`) value = args[++i] ?? '';
    else if (a.startsWith(`--${name}=`)) value = a.slice(name.length + 3);
    else rest.push(a);
  }
  return { rest, value };
}

function listOf<T extends string>(value: string | undefined, all: readonly T[], name: string): T[] {
  const listed = value === undefined ? [...all] : value.split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = listed.filter((c) => !(all as readonly string[]).includes(c));
  if (!listed.length || unknown.length) throw new UsageError(`--${name}: unknown or empty (${unknown.join(',') || value})\n${USAGE}`);
  return [...new Set(listed)] as T[];
}

function parseArgs(args: string[]): { flags: Flags; groups: Set<CaseGroup>; placements: Placement[] } | null {
  try {
    const cases = listFlag(args, 'cases');
    const live = listFlag(cases.rest, 'live');
    const flags = numericFlags(live.rest, { seconds: 2, rounds: 5, hands: 1 << 20, tables: 20, bots: 6, delay: 5, audit: 0 }, USAGE);
    if (flags.bots < 2 || flags.bots > 9) throw new UsageError(`--bots must be 2..9\n${USAGE}`);
    return { flags, groups: new Set(listOf(cases.value, CASE_GROUPS, 'cases')), placements: listOf(live.value, PLACEMENTS, 'live') };
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(err.message);
      return null;
    }
    throw err;
  }
}

export default async function dealerBench(args: string[]): Promise<number> {
  const parsed = parseArgs(args);
  if (!parsed) return 2;
  const { flags, groups, placements } = parsed;
  const rounds = Math.max(1, Math.round(flags.rounds));
  const began = performance.now();
  const plan: Plan = { cases: [], goals: [], checks: [], cleanups: [], afterRounds: [] };
  log(`dealer benchmark: node ${process.version}, ${cpus()[0]?.model ?? 'unknown CPU'} (${cpus().length} CPUs; the evaluator and engine cases use one)`);
  try {
    if (groups.has('evaluator') && !addEvaluator(plan, flags)) return 1;
    if (groups.has('engine')) addEngine(plan);
    if (groups.has('live')) await addLive(plan, flags, placements);
    if (!plan.cases.length) return 2;
    log(`${rounds} rounds x ${plan.cases.length} cases x ${flags.seconds} s, order rotated each round${groups.has('live') ? ` (each live case: ${LIVE_SETTLE_S} s unmeasured after resuming its bots, then the measured seconds)` : ''}\n`);
    const results = await runRounds(plan.cases, rounds, flags.seconds);
    for (const after of plan.afterRounds) await after();
    const rates = (name: string) => results.get(name) ?? [];
    plan.rates = rates;
    printRates(plan.cases, rates);
    if (groups.has('evaluator')) log(`\nevaluator vs phe on the same hands: ${fmtRatio(ratioOf(rates, EVALUATOR, PHE))} (median of within-round ratios)`);
    let ok = true;
    log('');
    for (const check of plan.checks) ok = (await check()) && ok;
    printGoals(plan.goals, rates, rounds);
    log(`total ${((performance.now() - began) / 1000).toFixed(0)} s`);
    return ok ? 0 : 1;
  } finally {
    for (const c of plan.cleanups) await c().catch((err) => console.error('cleanup failed:', err));
  }
}

/** Median over rounds of the within-round ratio a / b. */
const ratioOf = (rates: (name: string) => number[], a: string, b: string) => median(rates(a).map((v, i) => v / rates(b)[i]!));

/** A warm-up round (at most 1 s per case) and `rounds` measured ones, the order rotated each round; each case's rates. */
async function runRounds(cases: Case[], rounds: number, seconds: number): Promise<Map<string, number[]>> {
  const results = new Map<string, number[]>(cases.map((c) => [c.name, []]));
  const runRound = async (round: number, secs: number, record: boolean) => {
    const line: string[] = [];
    for (const c of cases.map((_, i) => cases[(i + round) % cases.length]!)) {
      const rate = await c.run(secs, record);
      if (record) results.get(c.name)!.push(rate);
      line.push(`${c.name} ${fmtRate(rate)}`);
    }
    log(`${record ? `round ${round + 1}/${rounds}` : 'warm-up'}: ${line.join(', ')}`);
  };
  await runRound(0, Math.min(1, seconds), false);
  for (let r = 0; r < rounds; r++) await runRound(r, seconds, true);
  return results;
}

function printRates(cases: Case[], rates: (name: string) => number[]) {
  log('\nmedian rates over rounds');
  log(table(
    ['case', 'unit', 'median/s', 'min/s', 'max/s'],
    cases.map((c) => [c.name, c.unit, fmtRate(median(rates(c.name))), fmtRate(Math.min(...rates(c.name))), fmtRate(Math.max(...rates(c.name)))]),
  ));
}

function printGoals(goals: Goal[], rates: (name: string) => number[], rounds: number) {
  log(`\nfinal: medians over ${rounds} rounds and the median of the within-round ratios`);
  log(table(
    ['goal', 'median', 'baseline/s', 'ratio', 'target', 'result'],
    goals.map((g) => {
      const value = g.value ? g.value() : g.baseline ? ratioOf(rates, g.subject, g.baseline) : median(rates(g.subject));
      const met = g.kind === 'max' ? value < g.target : value >= g.target;
      const shown = g.show ?? ((v: number) => `${fmtRate(v)}/s`);
      const target = g.kind === 'info' ? '-' : g.baseline ? `>= ${fmtRatio(g.target)}` : g.kind === 'max' ? `< ${shown(g.target)}` : `>= ${shown(g.target)}`;
      return [
        g.label, g.value ? shown(value) : `${fmtRate(median(rates(g.subject)))}/s`, g.baseline ? fmtRate(median(rates(g.baseline))) : '-',
        g.baseline ? fmtRatio(value) : '-', target, g.kind === 'info' ? '-' : met ? 'PASS' : 'MISS',
      ];
    }),
  ));
}

// ---------------------------------------------------------------------------------------------
// The evaluator against phe

/** Adds the evaluator cases; false when the two evaluators disagree on the hands. */
function addEvaluator(plan: Plan, flags: Flags): boolean {
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
    return false;
  }
  plan.cases.push(
    { name: EVALUATOR, unit: 'hands', run: batched(() => { ourSum = ours(); return count; }) },
    { name: PHE, unit: 'hands', run: batched(() => { theirSum = theirs(); return count; }) },
  );
  plan.goals.push(
    { label: EVALUATOR, subject: EVALUATOR, target: 10_000_000 },
    { label: 'evaluator vs phe, same hands', subject: EVALUATOR, baseline: PHE, target: 1.0 },
  );
  plan.checks.push(async () => {
    if (ourSum + theirSum === 7463 * count) return true;
    log('the evaluators changed their answers during the run');
    return false;
  });
  log(`${fmtRate(count)} random seven-card hands (seed ${SEED}), pre-generated and shared by the evaluator cases`);
  return true;
}

// ---------------------------------------------------------------------------------------------
// The engine case

function addEngine(plan: Plan) {
  const engine = engineCase(false);
  const fair = engineCase(true);
  plan.cases.push({ name: ENGINE, unit: 'hands', run: batched(() => engine.play(256)) });
  plan.cases.push({ name: FAIR_ENGINE, unit: 'hands', run: batched(() => fair.play(256)) });
  plan.goals.push({ label: ENGINE, subject: ENGINE, target: 20_000 });
  plan.checks.push(async () => {
    // what commit and reveal adds to a hand, from the two cases' within-round ratio
    const rates = plan.rates!;
    const ratio = ratioOf(rates, FAIR_ENGINE, ENGINE);
    const addedUs = 1e6 / median(rates(FAIR_ENGINE)) - 1e6 / median(rates(ENGINE));
    log(`commit and reveal: ${fmtRatio(ratio)} the engine's hands/s (median of within-round ratios), about ${addedUs.toFixed(1)} µs more CPU per hand`);
    const s = engine.stats;
    log(`engine: ${fmtRate(s.hands)} hands played in all, ${(s.actions / s.hands).toFixed(2)} actions/hand, ` +
      `${(100 * s.showdowns / s.hands).toFixed(1)}% to a showdown, ${(100 * s.raises / s.actions).toFixed(1)}% of actions bets or raises; ` +
      `chips conserved in every hand: ${s.failures.count ? 'NO' : 'yes'}`);
    for (const line of s.failures.lines()) log(line);
    return s.failures.count === 0;
  });
}

const ENGINE_SEATS = 6;
const ENGINE_STACK = 200n; // 100 big blinds
const ENGINE_RAKE: RakeRule = { percent: 5, cap: 10n, minPot: 0n, requiresFlop: true };

/**
 * A hand's commit and reveal as the room does it (deal-seeds.ts): a server seed from the OS, its
 * commitment, two players' contributions mixed in, the deck; at the end the record, chained and
 * signed with the dealer's key.
 */
function fairDeal(handId: string) {
  const signer = signerFromPrivateKey(randomBytes(32));
  let prev = GENESIS;
  return {
    deck(hand: number): Card[] {
      const serverSeed = randomBytes(32);
      const contributions = [{ seat: 1, seed: `a${hand}-k3Jd82pQ` }, { seat: 4, seed: `b${hand}-x9Lm` }];
      return deckOf({ algorithm: DEAL_ALGORITHM, commitment: commitmentOf(serverSeed), serverSeed: toHex(serverSeed), contributions }, handId);
    },
    record(state: HandState, hand: number): void {
      const deal = { algorithm: DEAL_ALGORITHM, commitment: 'c'.repeat(64), serverSeed: 's'.repeat(64), contributions: [] } as const;
      prev = signRecord(recordOf(state, { tableId: 'bench', handNumber: hand, prev, deal }), signer).hash;
    },
  };
}

function engineCase(withFairDeal: boolean) {
  const rng = sfc32(SEED);
  const deckBytes = new Uint8Array(32);
  const fair = withFairDeal ? fairDeal('bench') : null;
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
        deck: fair ? fair.deck(stats.hands) : randomDeck(deckBytes), rake: ENGINE_RAKE,
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
      fair?.record(state, stats.hands);
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

// ---------------------------------------------------------------------------------------------
// The live tables: one case per placement of the roles (bench/lib/live.ts)

const SECRET = 'bench-dealer-auth-secret-0123456789abcdef';
const ISSUER = 'https://auth.bench.local';
const SERVICE_KEY = 'bench-service-key-0123456789abcdef';
/** The issue's goals for the live path, measured with the telemetry hook loaded as `npm start` loads it. */
const LIVE_HANDS_TARGET = 330;
const LIVE_P99_TARGET_MS = 25;

/** The database, its pools and what the placements share; everything stopped by the plan's cleanup. */
async function liveBase(plan: Plan) {
  const db = await benchDatabase(log);
  const pools: pg.Pool[] = [];
  plan.cleanups.push(async () => {
    for (const p of pools) await p.end().catch(() => undefined);
    await db.stop();
  });
  await migrate(db.url);
  const owner = createOwnerPool(db.url, 4);
  const cagePool = createRolePool(db.url, 'poker_cage', { max: 2, applicationName: 'bench-dealer-audit' });
  const authPool = createRolePool(db.url, 'poker_auth', { max: 2, applicationName: 'bench-dealer-auth' });
  pools.push(owner, cagePool, authPool);
  log(await databaseLine(owner, db.source));
  const postgres = procAvailable() ? await PostgresCpu.find(owner) : null;
  log(postgres
    ? `postgres CPU: its postmaster (pid ${postgres.postmaster}) and every process it forked, utime + stime from /proc`
    : 'postgres CPU: not measured (the database is not on this machine, or there is no /proc)');
  const shared: LiveShared = { owner, keys: createKeyStore(authPool, { privateKey: await benchJwtKey(), issuer: ISSUER }), postgres, log };
  return { db, owner, cagePool, shared };
}

/** Starts the roles of every placement, then each placement's users, tables and bots. */
async function startPlacements(plan: Plan, flags: Flags, placements: Placement[], base: Awaited<ReturnType<typeof liveBase>>) {
  const running: RunningRoles[] = [];
  const configs: LiveConfig[] = [];
  let stopped = false;
  const stopRoles = async () => {
    if (stopped) return;
    stopped = true;
    for (const c of configs) await c.close();
    for (const r of running) await r.stop().catch((err) => console.error(`stopping ${r.placement} failed:`, err));
  };
  plan.cleanups.unshift(stopRoles);
  const settings = { databaseUrl: base.db.url, secret: SECRET, issuer: ISSUER, serviceKey: SERVICE_KEY, handDelayMs: Math.round(flags.delay), audit: flags.audit > 0 };
  // every placement at once: on this machine the start of a child is mostly waiting (imports, the migrator's lock)
  const t0 = performance.now();
  const up = await Promise.allSettled(placements.map(async (p) => {
    const roles = await startRoles(p, settings);
    running.push(roles);
    log(`${PLACEMENT_LABELS[p]}: roles up after ${((performance.now() - t0) / 1000).toFixed(1)} s (${roles.processes.map((x) => `${x.name}${x.pid === 'self' ? ' in this process' : ` pid ${x.pid}`}`).join(', ')})`);
  }));
  const down = up.find((r) => r.status === 'rejected');
  if (down) throw (down as PromiseRejectedResult).reason;
  running.sort((a, b) => placements.indexOf(a.placement) - placements.indexOf(b.placement));
  const options = { tables: Math.max(1, Math.round(flags.tables)), bots: Math.round(flags.bots), delayMs: Math.round(flags.delay), seed: SEED };
  const run = Date.now().toString(36);
  // one placement after another: the setup's own work (users, purchases, sits) in this thread would
  // starve roles running here, and their calls to each other would time out
  for (const r of running) configs.push(await LiveConfig.start(r, base.shared, options, `bench-${run}-${r.placement}`));
  log(`live tables: HAND_DELAY_MS=${options.delayMs}, turn timer off, blinds 1/2, buy-in 200, rake 5% capped at 10; the bots mostly check or call, fold more the larger the call against their stack, bet or raise 10% of the time (to minRaiseTo..maxRaiseTo, cubed-uniform), and sit again after a bust`);
  return { configs, stopRoles, tables: options.tables };
}

async function addLive(plan: Plan, flags: Flags, placements: Placement[]) {
  const base = await liveBase(plan);
  const { configs, stopRoles, tables } = await startPlacements(plan, flags, placements, base);
  const sessions = async () => Number((await base.owner.query<{ n: string }>('select sessions::text as n from pg_stat_database where datname = current_database()')).rows[0]?.n ?? NaN);
  const sessionsBefore = await sessions();
  const startedAt = new Date();
  for (const c of configs) plan.cases.push({ name: liveCase(c.placement), unit: 'hands', run: (s, record) => c.measure(s, record) });
  plan.goals.push(...liveGoals(configs, tables));
  const profiles = new Map<Placement, ProfileResult>();
  plan.afterRounds.push(async () => {
    log(`\nprofiled windows (not counted in the rates): ${flags.seconds} s per placement, every process of its roles under the CPU profiler`);
    for (const c of configs) profiles.set(c.placement, await c.profile(flags.seconds));
  });
  plan.checks.push(async () => {
    printLive(configs, profiles, plan);
    log(`PostgreSQL sessions opened while the bots played: ${(await sessions()) - sessionsBefore} (node-postgres's pools close a connection idle for 10 s, as the paused placements' are, and drop one whose query raised)`);
    if (flags.audit > 0) await reportPeriodicAudits(base.owner, startedAt);
    return finishLive(configs, stopRoles, base.cagePool);
  });
}

/**
 * The issue's goals for the focus placement (npm start with the hook, else the first product one);
 * a second game process against one; and, with the floor in the run, the focus's hands/s as a
 * ratio to the floor's and the floor's own against the hands/s target: a floor under it says the
 * target is out of this machine's reach whatever the product does.
 */
function liveGoals(configs: LiveConfig[], tables: number): Goal[] {
  const goals: Goal[] = [];
  const has = (p: Placement) => configs.some((c) => c.placement === p);
  const focus = configs.find((c) => c.placement === 'start') ?? configs.find((c) => !isFloor(c.placement));
  if (focus) {
    goals.push(
      { label: `${liveCase(focus.placement)} (${tables} tables)`, subject: liveCase(focus.placement), target: LIVE_HANDS_TARGET },
      {
        label: `live action -> next game_state p99, ${focus.label}`, subject: liveCase(focus.placement), kind: 'max', target: LIVE_P99_TARGET_MS,
        value: () => median(focus.roundP99), show: (v) => `${v.toFixed(1)} ms`,
      },
    );
  }
  if (has('game-x1') && has('game-x2')) goals.push({ label: 'live hands/s, 2 game processes vs 1', subject: liveCase('game-x2'), baseline: liveCase('game-x1'), target: 1.0 });
  if (has('floor')) {
    if (focus) goals.push({ label: `live hands/s, ${focus.label} vs the floor`, subject: liveCase(focus.placement), baseline: liveCase('floor'), kind: 'info', target: 0 });
    goals.push({ label: `${liveCase('floor')} (${tables} tables): the target reachable here at all?`, subject: liveCase('floor'), target: LIVE_HANDS_TARGET });
  }
  return goals;
}

/** With --audit: the worker's periodic audits while the bots played (both halves; each run records what it read). */
async function reportPeriodicAudits(owner: pg.Pool, since: Date): Promise<void> {
  const { rows } = await owner.query<{ runs: number; clean: number; hands: number; links: number }>(
    `select count(*)::int as runs, count(*) filter (where clean)::int as clean, coalesce(sum(hands_read), 0)::int as hands,
            coalesce(sum(links_read), 0)::int as links
       from cage_private.audit_runs where periodic and ran_at >= $1`, [since]);
  const r = rows[0]!;
  log(`periodic audits while the bots played (the worker's, every minute): ${r.runs} runs, ${r.clean} clean; the audit of causes read ${r.hands.toLocaleString('en-US')} hands and ${r.links.toLocaleString('en-US')} position links`);
}

/** Every placement's stand-up and money checks, then every role stops, then the audit and the roles' logs. */
async function finishLive(configs: LiveConfig[], stopRoles: () => Promise<void>, cagePool: pg.Pool): Promise<boolean> {
  const failures = new Failures();
  for (const c of configs) await c.finish(failures);
  await stopRoles();
  const violations = await audit(cagePool);
  if (violations.length) {
    failures.add('cage audit violations', violations.slice(0, 5).map((v) => `${v.invariant} ${v.subject} ${JSON.stringify(v.detail)}`).join('; '));
  }
  log(`audit (the whole journal, every placement's money): ${violations.length ? `${violations.length} violation(s)` : 'clean (0 violations)'}`);
  for (const c of configs) c.reportRolesLog(failures);
  if (failures.count) {
    log(`live FAILURES: ${failures.count}`);
    for (const line of failures.lines()) log(line);
  } else {
    log('live: no failures (every error a bot received was an expected race, no error logged by the roles)');
  }
  return failures.count === 0;
}

const ms = (v: number | null | undefined, digits = 2) => (v === null || v === undefined || !Number.isFinite(v) ? '-' : v.toFixed(digits));

/** Median over the measured windows of CPU ms per hand of one consumer. */
function cpuPerHand(c: LiveConfig, of: 'roles' | 'postgres' | 'bots'): number | null {
  const values = c.windows.filter((w) => w.hands > 0 && w.cpu[of] !== null).map((w) => w.cpu[of]! / w.hands);
  return values.length ? median(values) : null;
}

/** Median over the measured windows of one process's CPU ms per hand. */
function processCpuPerHand(c: LiveConfig, i: number): number | null {
  const values = c.windows.filter((w) => w.hands > 0 && w.cpu.byProcess[i] !== null).map((w) => w.cpu.byProcess[i]! / w.hands);
  return values.length ? median(values) : null;
}

/** The hands one Postgres core carries at a placement's measured cost (its CPU ms per hand); '-' for the floor, which writes nothing. */
function perPostgresCore(c: LiveConfig, pgCpuMsPerHand: number | null): string {
  if (isFloor(c.placement) || pgCpuMsPerHand === null || pgCpuMsPerHand <= 0) return '-';
  return fmtRate(1000 / pgCpuMsPerHand);
}

function printLive(configs: LiveConfig[], profiles: Map<Placement, ProfileResult>, plan: Plan) {
  const rates = plan.rates!;
  const has = (p: Placement) => configs.some((c) => c.placement === p);
  log('\nlive, by placement of the roles: medians over rounds; CPU ms per hand from /proc over each measured window (2 cores in all)');
  log(table(
    ['placement', 'hands/s', 'p99 ms', 'roles CPU', 'postgres CPU', 'bots CPU', 'sum', 'db writes/hand', 'WAL KB/hand', 'hands/s per pg core'],
    configs.map((c) => {
      const [roles, pgCpu, bots] = [cpuPerHand(c, 'roles'), cpuPerHand(c, 'postgres'), cpuPerHand(c, 'bots')];
      const perHand = (of: 'writes' | 'walBytes') => median(c.windows.filter((w) => w.hands > 0).map((w) => w[of] / w.hands));
      return [
        c.label, fmtRate(median(rates(liveCase(c.placement)))), ms(median(c.roundP99), 1), ms(roles), ms(pgCpu), ms(bots),
        ms((roles ?? NaN) + (pgCpu ?? 0) + (bots ?? 0)), ms(perHand('writes'), 1), ms(perHand('walBytes') / 1024, 1),
        perPostgresCore(c, pgCpu),
      ];
    }),
  ));
  log('(hands/s per pg core: the hands one core of Postgres carries at this placement\'s cost, 1000 / its postgres CPU ms per hand: the platform\'s ceiling per database core, whatever the number of game machines)');
  if (has('floor')) log('(the floor\'s "roles CPU" is its bare server\'s process; it writes nothing, so its db writes and postgres CPU are the other placements\' lease renewals and the database\'s own background work)');
  log('(db writes: transactions that wrote, i.e. that were given a transaction id, each one commit waiting for its WAL flush; both counted over the whole database, so a paused placement\'s lease renewals are in them, a few per 10 s)');
  const pairs: [Placement, Placement, string][] = [
    ['start', 'in-process', 'npm start (hook) vs the roles in the benchmark\'s thread'],
    ['start', 'start-no-hook', 'npm start: with the telemetry hook vs without'],
    ['game-x1', 'start', 'game apart (1 process) vs npm start (one process)'],
    ['game-x2', 'game-x1', '2 game processes vs 1'],
  ];
  for (const [a, b, what] of pairs) {
    if (has(a) && has(b)) log(`${what}: ${fmtRatio(ratioOf(rates, liveCase(a), liveCase(b)))} hands/s (median of within-round ratios)`);
  }
  if (has('floor')) printFloor(configs, rates);
  printWal(configs);
  printProfiles(configs, profiles);
}

/** Where each placement's WAL goes: bytes and records per hand by relation and record type, over its measured windows (pg_walinspect). */
function printWal(configs: LiveConfig[]) {
  for (const c of configs.filter((x) => !isFloor(x.placement))) {
    const read = c.windows.filter((w) => w.hands > 0 && w.walBy !== null);
    const hands = read.reduce((a, w) => a + w.hands, 0);
    if (!hands) continue;
    const total = new Map<string, { records: number; bytes: number }>();
    for (const w of read) {
      for (const [rel, v] of w.walBy!) {
        const t = total.get(rel) ?? { records: 0, bytes: 0 };
        total.set(rel, { records: t.records + v.records, bytes: t.bytes + v.bytes });
      }
    }
    const rows = [...total].sort((a, b) => b[1].bytes - a[1].bytes);
    const all = rows.reduce((a, [, v]) => a + v.bytes, 0);
    log(`\n${c.label}: WAL per hand by relation and record type (records with a block, ${read.length} windows, ${fmtRate(hands)} hands: ${ms(all / hands / 1024, 2)} KB a hand of them)`);
    log(table(['relation record type', 'records/hand', 'bytes/record', 'bytes/hand'],
      rows.slice(0, 15).map(([rel, v]) => [rel, ms(v.records / hands, 2), ms(v.bytes / v.records, 0), ms(v.bytes / hands, 0)])));
  }
}

/**
 * The product against the floor: each placement's hands/s as a ratio to the floor's, and the most
 * hands/s this machine's cores could give the floor's load even with every core busy (its server's
 * and the bots' CPU per hand, measured): a product placement carries that load and its own.
 */
function printFloor(configs: LiveConfig[], rates: (name: string) => number[]) {
  for (const c of configs.filter((x) => !isFloor(x.placement))) {
    log(`live hands/s, ${c.label} vs the floor: ${fmtRatio(ratioOf(rates, liveCase(c.placement), liveCase('floor')))} (median of within-round ratios)`);
  }
  const floor = configs.find((c) => isFloor(c.placement))!;
  const [server, bots] = [cpuPerHand(floor, 'roles'), cpuPerHand(floor, 'bots')];
  if (server === null || bots === null) return;
  const cores = cpus().length;
  log(`the floor: ${ms(server + bots)} CPU ms per hand (its server ${ms(server)}, the bots ${ms(bots)}): ${cores} cores busy all the time would give it at most ${fmtRate((cores * 1000) / (server + bots))} hands/s (the target: ${LIVE_HANDS_TARGET})`);
}

/** Where the time goes: each placement's profiled window, CPU ms per hand by part, summed over its processes. */
function printProfiles(configs: LiveConfig[], profiles: Map<Placement, ProfileResult>) {
  const shown = configs.filter((c) => profiles.has(c.placement));
  if (!shown.length) return;
  const perHand = (p: ProfileResult, us: number) => {
    const wall = p.total.wallUs / Math.max(1, p.processes.length) / 1e6; // the profiles' seconds, a little over the window's
    return p.hands ? us / 1000 / (p.hands * (wall / p.elapsed)) : NaN;
  };
  const column = (c: LiveConfig, row: (p: ProfileResult) => number | null) => ms(row(profiles.get(c.placement)!));
  const part = (name: Part) => (p: ProfileResult) => perHand(p, p.total.parts.get(name) ?? 0);
  const rows: string[][] = PARTS.map((name) => [name, ...shown.map((c) => column(c, part(name)))]);
  const busy = (p: ProfileResult) => perHand(p, [...p.total.parts.values()].reduce((a, b) => a + b, 0));
  const writes = (name: Part) => (p: ProfileResult) => perHand(p, p.total.writes.get(name) ?? 0);
  rows.push(
    ['busy, all parts (profiled threads)', ...shown.map((c) => column(c, busy))],
    ['  of SQL: in write syscalls (writev)', ...shown.map((c) => column(c, writes('SQL (pg)')))],
    ['  of websocket: in write syscalls', ...shown.map((c) => column(c, writes('websocket (ws)')))],
    ['roles CPU, every thread (/proc, rounds)', ...shown.map((c) => ms(cpuPerHand(c, 'roles')))],
    ['postgres CPU (/proc, rounds)', ...shown.map((c) => ms(cpuPerHand(c, 'postgres')))],
    ['bots CPU (their thread, rounds)', ...shown.map((c) => ms(cpuPerHand(c, 'bots')))],
    ['hands in the profiled window', ...shown.map((c) => String(profiles.get(c.placement)!.hands))],
  );
  log('\nwhere the time goes: ms per hand in each placement\'s profiled window. A part is the main threads\' time in its code (self time; a native frame such as writev goes to its nearest caller in a file: pg\'s writes are SQL, ws\'s are the websocket); a thread descheduled inside a syscall counts as busy in it, so on a busy machine "busy" runs over the thread\'s CPU (a writev that wakes Postgres waits while it runs)');
  log(table(['part', ...shown.map((c) => c.label)], rows));
  for (const c of shown) {
    const p = profiles.get(c.placement)!;
    if (p.processes.length > 1) log(`${c.label}: CPU ms per hand by process (/proc, median over the rounds): ${p.processes.map((x, i) => `${x.name} ${ms(processCpuPerHand(c, i))}`).join(', ')}`);
    const other = [...p.total.otherUrls].sort((a, b) => b[1] - a[1]).slice(0, 4);
    if (other.length) log(`${c.label}: most of 'other': ${other.map(([url, us]) => `${url} ${ms(perHand(p, us))}`).join(', ')}`);
  }
}
