// One configuration of the live benchmark (bench/dealer.ts): the roles placed one way
// (live-roles.ts), its own users with chips, its own tables and its own bots' thread (live-bots.ts),
// on the database every configuration shares. It measures windows (hands/s, latency, and the CPU
// the roles, PostgreSQL and the bots spent in them), profiles one window (where the roles' time
// goes, cpu-profile.ts) and at the end stands every bot up and checks the money of its users and
// tables and the hand histories it stored. The floor (live-roles.ts, live-floor.ts) has no users,
// no cage and no money: its bots are made up here, and it has nothing of the sort to check.
import { randomBytes, randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import type pg from 'pg';
import type { createKeyStore } from '../../server/auth/keys.ts';
import { signInOperator } from '../../test/helpers/operator.ts';
import { breakdown, sumBreakdowns, type Breakdown, type Profiler } from './cpu-profile.ts';
import { fmtRate, percentile, sleep } from './harness.ts';
import { BUY_IN, STAND_UP_TIMEOUT_S, type BotsData, type BotSpec, type FromBots, type ToBots } from './live-bots.ts';
import { isFloor, PLACEMENT_LABELS, type Placement, type RunningRoles } from './live-roles.ts';
import { call, describeAnswer as describe, Failures } from './platform.ts';
import { PostgresCpu, processCpuMs } from './proc-cpu.ts';

export const CHIPS = 100_000; // bought per bot; enough for hundreds of rebuys
export const LIVE_SETTLE_S = 0.5; // unmeasured, after the bots resume, before each live measurement

export interface LiveOptions {
  tables: number;
  bots: number;
  delayMs: number;
  seed: number;
}

/** What every configuration shares: the database, its owner's pool, the key store that signs the bots' tokens. */
export interface LiveShared {
  owner: pg.Pool;
  keys: ReturnType<typeof createKeyStore>;
  postgres: PostgresCpu | null;
  log: (msg: string) => void;
}

/** CPU spent in a window, ms (null: not measurable here). */
export interface WindowCpu {
  roles: number | null;
  /** Each process of the roles (null: this process). */
  byProcess: (number | null)[];
  postgres: number | null;
  bots: number;
}

export interface Window {
  hands: number;
  /** Write transactions the database committed or began (transaction ids assigned) and WAL bytes written in the window. */
  writes: number;
  walBytes: number;
  /** The window's WAL by the relation and record type of each record (pg_walinspect); null where it cannot be read. */
  walBy: Map<string, { records: number; bytes: number }> | null;
  elapsed: number;
  sorted: Float64Array;
  perTable: number[];
  cpu: WindowCpu;
  botsBusy: number;
}

export interface ProfileResult {
  hands: number;
  /** The measured window's seconds (the profiles run a few ms longer around it). */
  elapsed: number;
  /** Each process of the roles: its name and its breakdown. */
  processes: { name: string; breakdown: Breakdown }[];
  total: Breakdown;
}

/** The table settings of every bot table: blinds 1/2, buy-in up to 100 big blinds, the turn timer off. */
const tableSettings = (seats: number) => ({
  smallBlind: 1, bigBlind: 2, minBuyIn: 40, maxBuyIn: BUY_IN, maxPlayers: seats, rakePercent: 5, rakeCap: 10,
  rakeMinPot: 0, rakeRequiresFlop: true, turnTimeSec: 30, turnTimerEnabled: false,
});

/** The bots' users: each signed in through the bridge, with a day's token and CHIPS play chips bought through the operator route. */
async function makeBots(shared: LiveShared, roles: RunningRoles, options: LiveOptions): Promise<BotSpec[]> {
  const { owner, keys } = shared;
  const operator = await signInOperator(owner, roles.auth);
  const total = options.tables * options.bots;
  const bots: BotSpec[] = [];
  let made = 0;
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (made < total) {
      const i = made++;
      const invite = `inv_${randomBytes(12).toString('hex')}`;
      await owner.query('select auth.mint_invite($1)', [invite]);
      const { rows } = await owner.query<{ user_id: string }>("select user_id from auth.bridge_sign_in('oidc', $1, null, $2)", [randomUUID(), invite]);
      const userId = rows[0]!.user_id;
      // a day, not the default 15 minutes: long runs must not see their tokens expire
      const token = await keys.sign({ sub: userId, walletAddress: null }, { ttlSeconds: 86_400 });
      const bought = await call(`${roles.cage}/api/operator/purchase`, {
        headers: operator.auth, body: { userId, amount: CHIPS, externalRef: `pay-${randomUUID()}`, moneyKind: 'play' },
      });
      if (bought.status !== 200) throw new Error(`purchase failed: ${describe(bought)}`);
      bots[i] = { userId, token, table: Math.floor(i / options.bots), seat: i % options.bots, counter: i % options.bots === 0 };
    }
  }));
  return bots;
}

/**
 * The floor's bots: the same tables, seats and counters as makeBots', each user a made-up id that is
 * also its bearer token (the floor's server takes the token as the user's name; it verifies nothing).
 */
function floorBots(options: LiveOptions): BotSpec[] {
  return Array.from({ length: options.tables * options.bots }, (_, i) => {
    const userId = randomUUID();
    return { userId, token: userId, table: Math.floor(i / options.bots), seat: i % options.bots, counter: i % options.bots === 0 };
  });
}

/** The configuration's table ids (the floor makes a table at its first join; the product's are made by makeTables). */
const tableIdsOf = (options: LiveOptions, prefix: string) => Array.from({ length: options.tables }, (_, t) => `${prefix}-${t}`);

/** The configuration's tables, each created through the cage by its first bot. */
async function makeTables(roles: RunningRoles, bots: BotSpec[], options: LiveOptions, prefix: string): Promise<string[]> {
  const tableIds = tableIdsOf(options, prefix);
  for (let t = 0; t < options.tables; t++) {
    const created = await call(`${roles.cage}/api/tables`, {
      headers: { authorization: `Bearer ${bots[t * options.bots]!.token}` },
      body: { tableId: tableIds[t]!, gameType: 'poker', settings: tableSettings(options.bots) },
    });
    if (created.status !== 200) throw new Error(`table failed: ${describe(created)}`);
  }
  return tableIds;
}

/** The bots' worker thread and a request/answer channel to it. */
function botsThread(data: BotsData) {
  const w = new Worker(new URL('./live-bots.ts', import.meta.url), { workerData: data });
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
  return { ask, tell, terminate: () => w.terminate() };
}

export class LiveConfig {
  readonly label: string;
  readonly roundP50: number[] = [];
  readonly roundP99: number[] = [];
  readonly windows: Window[] = [];
  private idleTables = 0;
  private bots: BotSpec[] = [];
  private tableIds: string[] = [];
  private thread: ReturnType<typeof botsThread> | null = null;

  readonly roles: RunningRoles;
  private readonly shared: LiveShared;
  private readonly options: LiveOptions;

  private constructor(roles: RunningRoles, shared: LiveShared, options: LiveOptions) {
    this.roles = roles;
    this.shared = shared;
    this.options = options;
    this.label = PLACEMENT_LABELS[roles.placement];
  }

  get placement(): Placement {
    return this.roles.placement;
  }

  /** Users, chips, tables, the bots' thread (connected and joined), every bot seated. */
  static async start(roles: RunningRoles, shared: LiveShared, options: LiveOptions, prefix: string): Promise<LiveConfig> {
    const c = new LiveConfig(roles, shared, options);
    const began = performance.now();
    const floor = isFloor(roles.placement);
    c.bots = floor ? floorBots(options) : await makeBots(shared, roles, options);
    c.tableIds = floor ? tableIdsOf(options, prefix) : await makeTables(roles, c.bots, options, prefix);
    c.thread = botsThread({
      kind: 'dealer-bots', tableUrls: c.tableIds.map((_, t) => roles.games[t % roles.games.length]!), gameUrl: roles.games[0]!,
      tableIds: c.tableIds, bots: c.bots, seed: options.seed,
    });
    const ready = await c.thread.ask(null, 'ready');
    const seating = await c.thread.ask('seat', 'seated');
    const total = options.tables * options.bots;
    if (seating.seated !== total) throw new Error(`${c.label}: only ${seating.seated} of ${total} bots could sit:\n${seating.refused.join('\n')}`);
    shared.log(`${c.label}: ${total} bots (${options.tables} tables x ${options.bots}${roles.games.length > 1 ? `, table i on game process i mod ${roles.games.length}` : ''}) set up, joined and seated in ${((performance.now() - began) / 1000).toFixed(1)} s${ready.redirects ? `; ${ready.redirects} joins sent elsewhere (table_elsewhere) and followed` : ''}`);
    return c;
  }

  private rolesCpu(): number {
    return this.roles.cpuMs() ?? processCpuMs(process.pid);
  }

  /** CPU of the window: the roles' processes, PostgreSQL, the bots' thread. In-process, the roles are this process less the bots' thread. */
  private processesCpu(): (number | null)[] {
    return this.roles.processes.map((p) => (p.pid === 'self' ? null : processCpuMs(p.pid)));
  }

  private windowCpu(roles0: number, each0: (number | null)[], pg0: Map<number, number> | null, bots: number): WindowCpu {
    const rolesMs = this.rolesCpu() - roles0;
    const byProcess = this.processesCpu().map((v, i) => (v === null ? null : v - each0[i]!));
    const pgNow = this.shared.postgres?.snapshot() ?? null;
    return { roles: this.roles.cpuMs() === null ? rolesMs - bots : rolesMs, byProcess, postgres: pg0 === null || pgNow === null ? null : PostgresCpu.since(pg0, pgNow), bots };
  }

  /**
   * After the bots pause, the work they started (a hand's end: its database writes, the bust
   * settlements through the cage; a sit on its way through the bank) must finish before the next
   * case: the evaluator and engine cases hold this thread, and so in-process roles' event loop, for
   * seconds, and a call between roles caught in that would time out (GAME_CALL_TIMEOUT_MS); another
   * configuration's window would carry it. Waits until the roles have been nearly idle for 200 ms
   * (at most 5 s): this thread's event loop, or the children's CPU.
   */
  private async quiesce() {
    const until = performance.now() + 5000;
    let quiet = 0;
    while (quiet < 2 && performance.now() < until) {
      const elu = performance.eventLoopUtilization();
      const cpu = this.roles.cpuMs();
      await sleep(100);
      const load = cpu === null ? performance.eventLoopUtilization(elu).utilization : (this.roles.cpuMs()! - cpu) / 100;
      quiet = load < 0.05 ? quiet + 1 : 0;
    }
  }

  /** The next transaction id and the WAL position: what the database wrote since, read later by databaseSince. */
  private async databaseMark(): Promise<{ x: string; l: string }> {
    return (await this.shared.owner.query<{ x: string; l: string }>('select pg_snapshot_xmax(pg_current_snapshot())::text as x, pg_current_wal_lsn()::text as l')).rows[0]!;
  }

  private async databaseSince(mark: { x: string; l: string }): Promise<{ writes: number; walBytes: number; walBy: Window['walBy'] }> {
    const r = (await this.shared.owner.query<{ x: string; b: string; l: string }>(
      'select (pg_snapshot_xmax(pg_current_snapshot())::text::bigint - $1::bigint)::text as x, pg_wal_lsn_diff(pg_current_wal_lsn(), $2)::text as b, pg_current_wal_lsn()::text as l',
      [mark.x, mark.l],
    )).rows[0]!;
    return { writes: Number(r.x), walBytes: Number(r.b), walBy: await this.walBy(mark.l, r.l) };
  }

  /** Whether pg_walinspect could be installed (a login that may not create it, a server without it: no breakdown). */
  private walInspect: Promise<boolean> | undefined;

  /**
   * The WAL between two positions by the relation each record changes (its first block: a row's
   * table or an index) and its type, records and bytes (full-page images included): where a hand's
   * WAL goes, for the next cut. Read after the window, outside the measured time; null when the
   * extension is missing or the WAL was already recycled (a checkpoint during the window).
   */
  private async walBy(from: string, to: string): Promise<Window['walBy']> {
    this.walInspect ??= this.shared.owner.query('create extension if not exists pg_walinspect').then(() => true, () => false);
    if (!(await this.walInspect)) return null;
    try {
      const { rows } = await this.shared.owner.query<{ rel: string; records: string; bytes: string }>(
        `select coalesce(pg_filenode_relation(b.reltablespace, b.relfilenode)::regclass::text, '(other)') || ' ' || b.record_type as rel,
                count(*)::text as records, sum(b.record_length)::text as bytes
           from pg_get_wal_block_info($1::pg_lsn, $2::pg_lsn) b
          where b.block_id = 0 and b.reldatabase in (0, (select d.oid from pg_database d where d.datname = current_database()))
          group by 1`, [from, to]);
      return new Map(rows.map((r) => [r.rel, { records: Number(r.records), bytes: Number(r.bytes) }]));
    } catch {
      return null;
    }
  }

  /** Resumes the bots, lets them settle, runs `during` over a window of `seconds`, pauses them. */
  private async window<T>(seconds: number, around: { before?: () => Promise<void>; after?: () => Promise<T> } = {}): Promise<{ w: Window; extra: T | undefined }> {
    const thread = this.thread!;
    thread.tell('resume');
    await sleep(LIVE_SETTLE_S * 1000);
    await around.before?.();
    const db0 = await this.databaseMark();
    const roles0 = this.rolesCpu();
    const each0 = this.processesCpu();
    const pg0 = this.shared.postgres?.snapshot() ?? null;
    thread.tell('start');
    await sleep(seconds * 1000);
    const end = await thread.ask('end', 'window');
    const cpu = this.windowCpu(roles0, each0, pg0, end.cpuMs);
    const db = await this.databaseSince(db0);
    const extra = await around.after?.();
    thread.tell('pause');
    await this.quiesce();
    const hands = end.perTable.reduce((a, b) => a + b, 0);
    return { w: { hands, ...db, elapsed: end.elapsed, sorted: Float64Array.from(end.latencies).sort(), perTable: end.perTable, cpu, botsBusy: end.busy }, extra };
  }

  /** One window of the rounds: hands/s. */
  async measure(seconds: number, record: boolean): Promise<number> {
    const { w } = await this.window(seconds);
    const idle = w.perTable.filter((n) => n === 0).length;
    if (record) {
      this.windows.push(w);
      this.roundP50.push(percentile(w.sorted, 0.5));
      this.roundP99.push(percentile(w.sorted, 0.99));
      if (idle) this.idleTables = Math.max(this.idleTables, idle);
    }
    const perHand = (ms: number | null) => (ms === null || !w.hands ? '-' : (ms / w.hands).toFixed(1));
    this.shared.log(`  ${this.label}: ${fmtRate(w.hands / w.elapsed)} hands/s, ${fmtRate(w.sorted.length / w.elapsed)} actions/s, latency p50 ${percentile(w.sorted, 0.5).toFixed(2)} ms, p99 ${percentile(w.sorted, 0.99).toFixed(2)} ms, max ${(w.sorted.at(-1) ?? NaN).toFixed(1)} ms; hands per table ${Math.min(...w.perTable)}..${Math.max(...w.perTable)}; CPU ms/hand: roles ${perHand(w.cpu.roles)}, postgres ${perHand(w.cpu.postgres)}, bots ${perHand(w.cpu.bots)}`);
    return w.hands / w.elapsed;
  }

  /** One window with every process of the roles profiled (not one of the rounds: the profiler costs a little). */
  async profile(seconds: number): Promise<ProfileResult> {
    const profilers: Profiler[] = await Promise.all(this.roles.processes.map((p) => p.profiler()));
    const { w, extra } = await this.window(seconds, {
      before: async () => void await Promise.all(profilers.map((p) => p.start())),
      after: async () => Promise.all(profilers.map((p) => p.stop())),
    });
    if (process.env.DEALER_PROFILE_DIR) {
      // the raw profiles, for Chrome DevTools (Performance, load profile)
      for (const [i, p] of this.roles.processes.entries()) {
        const file = path.join(process.env.DEALER_PROFILE_DIR, `dealer-${this.placement}-${p.name.replace(/[^\w.-]/g, '_')}-${Date.now()}.cpuprofile`);
        await writeFile(file, JSON.stringify(extra![i]));
        this.shared.log(`${this.label}: cpu profile of ${p.name}: ${file}`);
      }
    }
    const processes = this.roles.processes.map((p, i) => ({ name: p.name, breakdown: breakdown(extra![i]!) }));
    return { hands: w.hands, elapsed: w.elapsed, processes, total: sumBreakdowns(processes.map((p) => p.breakdown)) };
  }

  /** Stops the bots, stands everyone up, checks the money and the histories of this configuration; adds what failed. */
  async finish(failures: Failures): Promise<void> {
    const { log } = this.shared;
    const pooled = Float64Array.from(this.windows.flatMap((w) => [...w.sorted])).sort();
    log(`${this.label}: latency, action sent -> next game_state on that connection, every measured round (${fmtRate(pooled.length)} actions): p50 ${percentile(pooled, 0.5).toFixed(2)} ms, p90 ${percentile(pooled, 0.9).toFixed(2)} ms, p99 ${percentile(pooled, 0.99).toFixed(2)} ms, p99.9 ${percentile(pooled, 0.999).toFixed(2)} ms, max ${(pooled.at(-1) ?? NaN).toFixed(1)} ms; by round p50 ${this.roundP50.map((v) => v.toFixed(1)).join(' / ')}, p99 ${this.roundP99.map((v) => v.toFixed(1)).join(' / ')}`);
    if (this.idleTables) failures.add(`${this.label}: a table finished no hand in a measured window`, `${this.idleTables} of ${this.options.tables} tables`);
    const thread = this.thread!;
    const stood = await thread.ask('stand-up', 'stood');
    if (stood.left.length) failures.add(`${this.label}: seats still taken ${STAND_UP_TIMEOUT_S} s after every bot asked to stand up`, `${stood.left.length} tables; ${stood.left[0]}`);
    log(`${this.label}: stand-up: ${stood.left.length ? `${stood.left.length} tables still had seats taken` : 'every seat empty'} after ${stood.seconds.toFixed(1)} s (${stood.standUps} stood up at once, ${stood.pendingStandUps} pending until their hand ended)`);
    const final = await thread.ask('close', 'final');
    await thread.terminate();
    this.thread = null;
    for (const [kind, f] of final.failures) for (let i = 0; i < f.count; i++) failures.add(`${this.label}: ${kind}`, f.first);
    const c = final.counts;
    const total = this.options.tables * this.options.bots;
    log(`${this.label}: ${fmtRate(final.hands)} hands in all (${(100 * final.showdowns / final.hands).toFixed(0)}% to a showdown, ${(final.dealtIn / final.hands).toFixed(2)} players dealt in per hand), ${fmtRate(c.actions!)} actions (${(100 * c.raises! / c.actions!).toFixed(1)}% bets or raises, ${(100 * c.folds! / c.actions!).toFixed(1)}% folds), ${c.sits} sits (${c.sits! - total} after a bust), ${c.duplicates} duplicate acks`);
    if (final.expected.length) log(`${this.label}: refusals expected in a race (counted, not failures): ${final.expected.map(([k, n]) => `${n} x ${k}`).join(', ')}`);
    if (isFloor(this.placement)) log(`${this.label}: no money or histories to check (it buys nothing, stores nothing and its busted bots sit again with chips from nowhere)`);
    else await this.checkMoney(final.hands, failures);
  }

  /** What was bought is in the bots' cage balances and the tables' escrows (the rake); a history for every hand_result. */
  private async checkMoney(hands: number, failures: Failures) {
    const userIds = this.bots.map((b) => b.userId);
    const bought = BigInt(CHIPS) * BigInt(this.bots.length);
    const money = (await this.shared.owner.query<{ balances: string; escrow: string; rake: string; stacks: string; other: string; histories: string }>(
      `select (select coalesce(sum(balance), 0) from cage.cage_accounts where account_type = 'user' and money_kind = 'play' and user_id = any($2))::text as balances,
              (select coalesce(sum(balance), 0) from cage.account_balances where account_type = 'table_escrow' and scope = any($1))::text as escrow,
              (select coalesce(sum(unreconciled_rake + reconciled_rake), 0) from game.tables where table_id = any($1))::text as rake,
              (select coalesce(sum(chip_balance), 0) from game.table_players where table_id = any($1) and status <> 'closed')::text as stacks,
              (select coalesce(sum(balance), 0) from cage.cage_accounts where account_type <> 'user' and account_type <> 'table_escrow' and bounded and user_id = any($2))::text as other,
              (select count(*) from game.hand_histories where table_id = any($1) and status = 'finished')::text as histories`,
      [this.tableIds, userIds],
    )).rows[0]!;
    const balances = BigInt(money.balances);
    const escrow = BigInt(money.escrow);
    const l = this.label;
    if (balances + escrow !== bought) failures.add(`${l}: money not conserved`, `bought ${bought}, bots' cage balances ${balances} + table escrows ${escrow} = ${balances + escrow}`);
    if (escrow !== BigInt(money.rake) + BigInt(money.stacks)) failures.add(`${l}: escrow is not the stacks plus the rake`, `escrow ${escrow}, stacks ${money.stacks}, unreconciled rake ${money.rake}`);
    if (BigInt(money.histories) !== BigInt(hands)) failures.add(`${l}: hand histories stored != hand_results seen`, `${money.histories} stored, ${hands} seen`);
    this.shared.log(`${l}: money: bought ${bought}; the bots' cage balances ${balances} + the tables' escrows ${escrow} (rake ${money.rake}, stacks left ${money.stacks}) = ${balances + escrow}: ${balances + escrow === bought ? 'conserved' : 'NOT conserved'}; the bots' other accounts (custody): ${money.other}; ${money.histories} hand histories stored, ${hands} hand_results seen`);
  }

  /** The roles' warnings and errors, printed; each error a failure. Call after the roles stopped. */
  reportRolesLog(failures: Failures) {
    const { log } = this.roles;
    if (log.count) {
      this.shared.log(`${this.label}: the roles logged ${log.count} warning(s)/error(s):`);
      for (const line of log.lines()) this.shared.log(line);
    }
    for (const [kind, f] of log.byKind) if (kind.startsWith('error')) failures.add(`${this.label}: the roles logged an error: ${kind}`, f.first);
  }

  async close(): Promise<void> {
    await this.thread?.terminate();
    this.thread = null;
  }
}
