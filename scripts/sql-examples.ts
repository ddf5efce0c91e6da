// Runnable SQL examples with their expected output (after pgledger's examples/*.sql + .out): each
// db/examples/NAME.sql runs statement by statement on a fresh migrated database, and its transcript
// (each statement, then its rows as an aligned table or its error's SQLSTATE and code) must equal
// db/examples/NAME.out. Ids and times that differ from run to run are scrubbed (a uuid becomes
// <uuid-1>, <uuid-2>, ... in order of appearance; a timestamp <time>; a 64-hex hash <hash-1>, ...).
// The embedded PostgreSQL ships no psql, so this is the runner.
//   npm run examples              compare every example with its .out (exit 1 on a difference)
//   npm run examples -- --update  write the .out files
// test/platform/sql-examples.test.ts runs the same comparison in CI.
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer, type AddressInfo } from 'node:net';
import pg from 'pg';

export const EXAMPLES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../db/examples');

/** The statements of a script: split at `;` ending a line; comments-only chunks dropped. */
export function statements(sql: string): string[] {
  return sql.split(/;[ \t]*(?:\r?\n|$)/).map((s) => s.trim())
    .filter((s) => s.split('\n').some((line) => line.trim() && !line.trim().startsWith('--')));
}

function cell(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (value instanceof Date) return value.toISOString();
  if (Buffer.isBuffer(value)) return `\\x${value.toString('hex')}`;
  if (typeof value === 'object') return JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v));
  return String(value);
}

function table(fields: string[], rows: Record<string, unknown>[]): string {
  const cells = rows.map((r) => fields.map((f) => cell(r[f])));
  const widths = fields.map((f, i) => Math.max(f.length, ...cells.map((c) => c[i]!.length)));
  const line = (values: string[]) => values.map((v, i) => v.padEnd(widths[i]!)).join(' | ').trimEnd();
  return [line(fields), widths.map((w) => '-'.repeat(w)).join('-+-'), ...cells.map(line), `(${rows.length} row${rows.length === 1 ? '' : 's'})`].join('\n');
}

/** Replaces what differs between runs with stable placeholders, numbered in order of appearance. */
export function scrub(text: string): string {
  const seen = new Map<string, string>();
  const stable = (kind: string, value: string) => {
    const key = `${kind}:${value}`;
    if (!seen.has(key)) seen.set(key, `<${kind}-${[...seen.keys()].filter((k) => k.startsWith(`${kind}:`)).length + 1}>`);
    return seen.get(key)!;
  };
  return text
    .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g, (m) => stable('uuid', m))
    .replace(/\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}(?::?\d{2})?)?/g, '<time>')
    .replace(/\b(?<!0x)[0-9a-f]{64}\b/g, (m) => (m === 'e'.repeat(64) ? m : stable('hash', m)));
}

/** Runs a script on one connection and returns its transcript (unscrubbed). */
export async function transcript(client: pg.Client | pg.PoolClient, sql: string): Promise<string> {
  const out: string[] = [];
  for (const statement of statements(sql)) {
    const comments = statement.split('\n').filter((l) => l.trim().startsWith('--'));
    const code = statement.split('\n').filter((l) => !l.trim().startsWith('--')).join('\n');
    out.push(...comments, `${code};`);
    try {
      const result = await client.query(code);
      const last = Array.isArray(result) ? result.at(-1)! : result;
      out.push(last.fields?.length ? table(last.fields.map((f: { name: string }) => f.name), last.rows) : last.command ?? 'OK');
    } catch (err) {
      const e = err as { code?: string; message?: string };
      out.push(`ERROR ${e.code}: ${e.message}`);
    }
    out.push('');
  }
  return out.join('\n');
}

/** Runs every example on its own fresh database (made by `freshDatabase`) and returns name -> scrubbed transcript. */
export async function runExamples(freshDatabase: () => Promise<{ url: string; drop(): Promise<void> }>): Promise<Map<string, string>> {
  const names = (await readdir(EXAMPLES)).filter((f) => f.endsWith('.sql')).sort();
  const results = new Map<string, string>();
  for (const name of names) {
    const db = await freshDatabase();
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      results.set(name.replace(/\.sql$/, ''), scrub(await transcript(client, await readFile(path.join(EXAMPLES, name), 'utf8'))));
    } finally {
      await client.end();
      await db.drop();
    }
  }
  return results;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

async function main() {
  const update = process.argv.includes('--update');
  const { startEmbeddedPostgres } = await import('../server/db/embedded.ts');
  const { migrate } = await import('../server/db/migrate.ts');
  const dataDir = await mkdtemp(path.join(tmpdir(), 'poker-examples-pg-'));
  const embedded = await startEmbeddedPostgres({ dataDir, port: await freePort(), ephemeral: true });
  let failed = false;
  try {
    let n = 0;
    const results = await runExamples(async () => {
      const name = `example_${process.pid}_${++n}`;
      const admin = new pg.Client({ connectionString: embedded.url });
      await admin.connect();
      await admin.query(`create database ${name}`);
      await admin.end();
      const url = new URL(embedded.url);
      url.pathname = `/${name}`;
      await migrate(url.toString());
      return { url: url.toString(), drop: async () => undefined };
    });
    for (const [name, text] of results) {
      const file = path.join(EXAMPLES, `${name}.out`);
      if (update) {
        await writeFile(file, text);
        process.stdout.write(`wrote db/examples/${name}.out\n`);
        continue;
      }
      const expected = await readFile(file, 'utf8').catch(() => '');
      if (expected === text) process.stdout.write(`ok   ${name}\n`);
      else {
        failed = true;
        process.stdout.write(`DIFF ${name}: the transcript differs from db/examples/${name}.out (npm run examples -- --update rewrites it)\n`);
      }
    }
  } finally {
    await embedded.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
  process.exit(failed ? 1 : 0);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await main();
