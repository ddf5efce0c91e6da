// `npm run bench -- <name> [flags]`: runs bench/<name>.ts, whose default export takes the remaining
// arguments and resolves to the process exit code. Every benchmark measures its subject against a
// baseline in the same run and prints ratios (ARCHITECTURE.md, "Benchmarks").
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export type Benchmark = (args: string[]) => Promise<number>;

const dir = path.dirname(fileURLToPath(import.meta.url));
const available = readdirSync(dir, { withFileTypes: true })
  .filter((e) => e.isFile() && e.name.endsWith('.ts') && e.name !== 'run.ts')
  .map((e) => e.name.slice(0, -3))
  .sort();

const [name, ...args] = process.argv.slice(2);

if (!name || !available.includes(name)) {
  if (name && name !== '--help' && name !== '-h') console.error(`unknown benchmark: ${name}\n`);
  console.error('usage: npm run bench -- <name> [flags]\n\nbenchmarks:');
  for (const b of available) console.error(`  ${b}`);
  console.error('\nflags are the benchmark\'s own; e.g. npm run bench -- ledger --seconds 3 --rounds 5');
  process.exit(2);
}

const mod = (await import(pathToFileURL(path.join(dir, `${name}.ts`)).href)) as { default?: Benchmark };
if (typeof mod.default !== 'function') {
  console.error(`bench/${name}.ts has no default export (args: string[]) => Promise<exit code>`);
  process.exit(2);
}
try {
  process.exitCode = await mod.default(args);
} catch (err) {
  console.error(`bench ${name} failed:`, err);
  process.exitCode = 1;
}
