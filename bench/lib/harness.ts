// Shared pieces of the benchmarks: flags, a database (DATABASE_URL or an embedded, durable one),
// timed concurrent loops, medians and a plain-text table.
import { mkdtemp } from 'node:fs/promises';
import { freePort } from '../../test/helpers/ports.ts';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../../server/db/embedded.ts';

/** `--name value` flags with numeric values; unknown flags are refused. */
export function numericFlags<T extends Record<string, number>>(args: string[], defaults: T, usage: string): T {
  const out: Record<string, number> = { ...defaults };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const eq = arg.indexOf('=');
    const key = (eq >= 0 ? arg.slice(0, eq) : arg).replace(/^--/, '');
    if (!arg.startsWith('--') || !(key in defaults)) throw new UsageError(`unknown flag ${arg}\n${usage}`);
    const raw = eq >= 0 ? arg.slice(eq + 1) : args[++i];
    const value = Number(raw);
    if (raw === undefined || !Number.isFinite(value) || value <= 0) throw new UsageError(`--${key} needs a positive number\n${usage}`);
    out[key] = value;
  }
  return out as T;
}

export class UsageError extends Error {}

export interface BenchDatabase {
  url: string;
  /** 'embedded' (ours, stopped and deleted at the end) or 'DATABASE_URL'. */
  source: 'embedded' | 'DATABASE_URL';
  stop(): Promise<void>;
}

/**
 * The live benchmark starts every placement of the roles at once (8 processes with the floor's
 * child: up to 20 connections per role pool each, kept 10 s after use) and pauses all but one: at
 * the server's 200 a placement that stands 120 bots up after the others had played could be refused
 * "too many clients". Slots are cheap; production sizes its own.
 */
const BENCH_MAX_CONNECTIONS = 600;

/**
 * DATABASE_URL when set; otherwise a fresh embedded PostgreSQL in a temp dir with the server's
 * default, durable settings (fsync on, synchronous_commit on), because that is what production has.
 */
export async function benchDatabase(log: (msg: string) => void): Promise<BenchDatabase> {
  const url = process.env.DATABASE_URL;
  if (url) return { url, source: 'DATABASE_URL', stop: async () => {} };
  const dataDir = await mkdtemp(path.join(tmpdir(), 'poker-bench-pg-'));
  const port = await freePort();
  log(`starting an embedded PostgreSQL in ${dataDir} on port ${port} (durable defaults; max_connections ${BENCH_MAX_CONNECTIONS})`);
  const pg: EmbeddedPostgres = await startEmbeddedPostgres({ dataDir, port, ephemeral: true, settings: { max_connections: String(BENCH_MAX_CONNECTIONS) } });
  let stopping = false;
  const onSignal = () => {
    if (stopping) return;
    stopping = true;
    void pg.stop().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return {
    url: pg.url,
    source: 'embedded',
    stop: async () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      await pg.stop();
    },
  };
}

/**
 * Runs `op` in `workers` concurrent loops until `seconds` have passed and returns units per second
 * (an op returns how many units it completed, e.g. the postings of a batch). Ops started before the
 * deadline finish; the elapsed time runs until the last one does.
 */
export async function timed(workers: number, seconds: number, op: (worker: number) => Promise<number>) {
  const start = performance.now();
  const deadline = start + seconds * 1000;
  let units = 0;
  let ops = 0;
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      while (performance.now() < deadline) {
        const n = await op(w); // not `units += await op(w)`: that reads units before the await
        units += n;
        ops++;
      }
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  return { perSecond: units / elapsed, units, ops, elapsed };
}

export function median(values: readonly number[]): number {
  if (!values.length) return NaN;
  const s = [...values].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Left-aligned first column, right-aligned others. */
export function table(header: string[], rows: string[][]): string {
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) =>
    r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ').trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

export const fmtRate = (v: number) => (Number.isFinite(v) ? Math.round(v).toLocaleString('en-US') : '-');
export const fmtRatio = (v: number) => (Number.isFinite(v) ? `${v.toFixed(2)}x` : '-');

/** numericFlags for a benchmark's entry point: on a usage error it prints the usage and answers null (exit 2). */
export function flagsOrUsage<T extends Record<string, number>>(args: string[], defaults: T, usage: string): T | null {
  try {
    return numericFlags(args, defaults, usage);
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(err.message);
      return null;
    }
    throw err;
  }
}

/** sfc32: a small, fast 32-bit PRNG (PractRand-clean), seeded deterministically. */
export function sfc32(seed: number): () => number {
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

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Nearest-rank percentile of ascending values. */
export function percentile(sorted: Float64Array, p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
}
