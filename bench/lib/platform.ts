// The HTTP benchmarks' shared pieces (bench/cage.ts, bench/claims.ts): the auth, game and cage
// roles started in this process, JSON calls with their status, a failure tally, the interleaved
// rounds with this process's event-loop load, and a probe that counts what one operation costs.
import { AsyncLocalStorage } from 'node:async_hooks';
import http from 'node:http';
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { loadConfig } from '../../server/config/index.ts';
import { exchange, type Agents } from '../../server/http/service-client.ts';
import type { Platform } from '../../server/platform.ts';
import { createLogger } from '../../server/telemetry/index.ts';
import { fmtRate } from './harness.ts';

export interface Answer {
  status: number;
  body: any;
}

/** The benchmark client's connections, kept open between calls as a real client's would be. */
const clientAgents: Agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };

/**
 * A JSON call: POST when there is a body, else GET, unless `method` says otherwise. On node:http with
 * keep-alive (the roles' own service client's exchange), not fetch: the client shares the roles'
 * process and cores, and fetch costs several times the CPU per call.
 */
export async function call(
  url: string, init: { method?: string; headers?: Record<string, string>; body?: unknown } = {},
): Promise<Answer> {
  const res = await exchange(new URL(url), {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: { ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
    timeoutMs: 60_000,
    agents: clientAgents,
  });
  let body: unknown = res.text;
  try {
    body = res.text ? JSON.parse(res.text) : undefined;
  } catch {
    // not JSON: kept as text for the failure report
  }
  return { status: res.status, body };
}

export const describeAnswer = (a: Answer) => `${a.status} ${JSON.stringify(a.body)}`.slice(0, 600);
/** The answer's `error` code, or '-'. */
export const errorCode = (a: Answer) =>
  (a.body && typeof a.body === 'object' && typeof a.body.error === 'string' ? a.body.error : '-');

/** The auth, game and cage roles in this process on ephemeral ports, as test/helpers/platform.ts starts them. */
export async function startRoles(options: { databaseUrl: string; secret: string; issuer: string; serviceKey: string }) {
  // Grafast reads GRAPHILE_ENV at import
  process.env.GRAPHILE_ENV ??= 'development';
  const { startPlatform } = await import('../../server/platform.ts');
  const platform: Platform = await startPlatform({
    config: loadConfig({
      NODE_ENV: 'test', LOG_LEVEL: 'silent', PORT: '0', GAME_PORT: '0', CAGE_PORT: '0', SERVICE_KEY: options.serviceKey,
      AUTH_SECRET: options.secret, AUTH_BASE_URL: options.issuer, ENABLE_TEST_AUTH: 'true', CAGE_AUDIT_CRON: '0 0 1 1 *', CAGE_RAKE_RECONCILE_CRON: '0 0 1 1 *',
    }),
    roles: ['auth', 'game', 'cage'],
    log: createLogger('silent'),
    databaseUrl: options.databaseUrl,
  });
  const urlOf = (role: 'auth' | 'game' | 'cage') => platform.roles.find((r) => r.role === role)!.url!;
  return { platform, urls: { auth: urlOf('auth'), game: urlOf('game'), cage: urlOf('cage') } };
}

/** `database: <source>; server_version=..., fsync=..., synchronous_commit=..., max_connections=...` */
export async function databaseLine(owner: pg.Pool, source: string) {
  const names = ['server_version', 'fsync', 'synchronous_commit', 'max_connections'];
  const { rows } = await owner.query<{ name: string; setting: string }>(
    'select name, setting from pg_settings where name = any ($1)', [names],
  );
  const byName = new Map(rows.map((r) => [r.name, r.setting]));
  return `database: ${source}; ${names.map((n) => `${n}=${byName.get(n) ?? '?'}`).join(', ')}`;
}

/** Failures by kind, with the first detail of each kind. A failure is a bug, not noise. */
export class Failures {
  count = 0;
  readonly byKind = new Map<string, { count: number; first: string }>();
  add(what: string, detail: string) {
    this.count++;
    const f = this.byKind.get(what);
    if (f) f.count++;
    else this.byKind.set(what, { count: 1, first: detail });
  }
  lines(): string[] {
    return [...this.byKind].map(([what, f]) => `  ${f.count} x ${what}\n      first: ${f.first}`);
  }
}

export interface Case {
  name: string;
  unit: string;
  /** Runs the case for `seconds`; resolves to units per second. */
  run: (seconds: number) => Promise<number>;
}

/**
 * A warm-up (at most 1 s per case) and `rounds` measured rounds of every case, the order rotated
 * each round, each round's line printed with the failures it added (`noun`: "failed round trip").
 * Returns each case's rates and this process's event-loop utilization per measured round.
 */
/**
 * BENCH_PROFILE=<case name>: a CPU profile of this process (client and roles) while that case runs
 * in the first measured round, written to BENCH_PROFILE_DIR (default the temp dir) for
 * Chrome DevTools. Returns the function that stops it and answers the file, or null.
 */
async function startCaseProfile(name: string): Promise<(() => Promise<string>) | null> {
  if (process.env.BENCH_PROFILE !== name) return null;
  const { Session } = await import('node:inspector/promises');
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return async () => {
    const { profile } = await session.post('Profiler.stop');
    session.disconnect();
    const { writeFile } = await import('node:fs/promises');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const file = join(process.env.BENCH_PROFILE_DIR ?? tmpdir(), `bench-${name.replace(/[^\w.-]/g, '_')}-${Date.now()}.cpuprofile`);
    await writeFile(file, JSON.stringify(profile));
    return file;
  };
}

export async function interleavedRounds(options: {
  cases: Case[];
  rounds: number;
  seconds: number;
  failures: Failures;
  noun: string;
  log: (msg: string) => void;
  /** Before each round (the warm-up is round -1), untimed. */
  beforeRound?: (round: number) => Promise<void>;
}) {
  const { cases, rounds, seconds, failures, noun, log } = options;
  const results = new Map<string, number[]>(cases.map((c) => [c.name, []]));
  const busy = new Map<string, number[]>(cases.map((c) => [c.name, []])); // this process's event loop
  const failedByRound: number[] = [];
  for (let round = -1; round < rounds; round++) {
    const warmUp = round < 0;
    await options.beforeRound?.(round);
    const order = cases.map((_, i) => cases[(i + Math.max(0, round)) % cases.length]!);
    const failedBefore = failures.count;
    const line: string[] = [];
    for (const c of order) {
      const elu = performance.eventLoopUtilization();
      const profiling = !warmUp && round === 0 ? await startCaseProfile(c.name) : null;
      const rate = await c.run(warmUp ? Math.min(1, seconds) : seconds);
      if (profiling) log(`cpu profile of ${c.name} (round 1): ${await profiling()}`);
      if (!warmUp) {
        results.get(c.name)!.push(rate);
        busy.get(c.name)!.push(performance.eventLoopUtilization(elu).utilization);
      }
      line.push(`${c.name} ${fmtRate(rate)}`);
    }
    const roundFailures = failures.count - failedBefore;
    if (!warmUp) failedByRound.push(roundFailures);
    log(`${warmUp ? 'warm-up' : `round ${round + 1}/${rounds}`}: ${line.join(', ')}${roundFailures ? `  <- ${roundFailures} ${noun}(s)` : ''}`);
  }
  return { results, busy, failedByRound };
}

export interface Composition {
  /** Journal transactions (cage.cage_entries rows) written. */
  entries: number;
  /** SQL statements sent by any pg client of this process. */
  sql: number;
  /** Transactions that wrote (transaction ids assigned). */
  writes: number;
  /** HTTP calls made by the roles' request handlers, and by the operation itself. */
  interRole: number;
  client: number;
  interRoleDetail: string;
  clientDetail: string;
}

/**
 * One operation with every fetch and every SQL statement of this process counted: the journal
 * transactions it wrote, the client's calls (made inside the operation's async context) and the
 * calls between roles (made by the roles' request handlers), the statements sent by any pg client.
 */
export async function probe(owner: pg.Pool, op: () => Promise<unknown>, urls: Record<string, string>): Promise<Composition> {
  const roleOf = new Map(Object.entries(urls).map(([role, url]) => [new URL(url).origin, role]));
  const calls: { to: string; path: string; fromClient: boolean }[] = [];
  const client = new AsyncLocalStorage<true>();
  let sql = 0;
  const last = async () => (await owner.query<{ id: bigint | null }>('select max(id) as id from cage.cage_entries')).rows[0]!.id ?? 0n;
  // the next transaction id to be assigned: only transactions that write get one
  const nextXid = async () => BigInt((await owner.query<{ x: string }>('select pg_snapshot_xmax(pg_current_snapshot())::text as x')).rows[0]!.x);
  const before = await last();
  const xidBefore = await nextXid();
  const realFetch = globalThis.fetch;
  const realQuery = pg.Client.prototype.query;
  globalThis.fetch = ((input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(input instanceof Request ? input.url : input);
    calls.push({ to: roleOf.get(url.origin) ?? url.origin, path: url.pathname, fromClient: client.getStore() === true });
    return realFetch(input, init);
  }) as typeof fetch;
  // the roles call each other on node:http (server/http/service-client.ts reads http.request at each call)
  const realRequest = http.request;
  http.request = ((...a: Parameters<typeof http.request>) => {
    if (a[0] instanceof URL) calls.push({ to: roleOf.get(a[0].origin) ?? a[0].origin, path: a[0].pathname, fromClient: client.getStore() === true });
    return (realRequest as (...x: unknown[]) => http.ClientRequest)(...a);
  }) as typeof http.request;
  pg.Client.prototype.query = function (this: pg.Client, ...a: unknown[]) {
    sql++;
    return (realQuery as (...x: unknown[]) => unknown).apply(this, a);
  } as typeof realQuery;
  try {
    await client.run(true, op);
  } finally {
    globalThis.fetch = realFetch;
    http.request = realRequest;
    pg.Client.prototype.query = realQuery;
  }
  const writes = Number((await nextXid()) - xidBefore);
  const entries = Number((await owner.query<{ n: bigint }>('select count(*) as n from cage.cage_entries where id > $1', [before])).rows[0]!.n);
  const interRole = calls.filter((c) => !c.fromClient);
  const fromClient = calls.filter((c) => c.fromClient);
  // a user id in a path is shown as :id, so the line reads the same every run
  const shown = (p: string) => p.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, ':id');
  const list = (cs: typeof calls) => (cs.length ? ` (${cs.map((c) => `${c.to} ${shown(c.path)}`).join(', ')})` : '');
  return {
    entries, sql, writes, interRole: interRole.length, client: fromClient.length,
    interRoleDetail: list(interRole), clientDetail: list(fromClient),
  };
}
