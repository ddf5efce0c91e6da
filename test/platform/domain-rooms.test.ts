// Domains keep to their rooms (docs/architecture.md, "The nevers"; eslint.config.js): the lint
// refuses an import from one money domain into another's internals, from the shared floor into any
// domain's, and anything of the server in the clients but the wire (web/: its types only). Each case
// is linted as a file at that path with the repository's own configuration. And every entry of the
// temporary crossings list is still a crossing: an entry whose import is gone must be deleted.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ESLint } from 'eslint';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** The crossings eslint.config.js lets through for now, each in a file another part is changing. */
const { TEMPORARY_CROSSINGS } = (await import(pathToFileURL(path.join(ROOT, 'eslint.config.js')).href)) as {
  TEMPORARY_CROSSINGS: { file: string; to: string; owner: string }[];
};
const eslint = new ESLint({ cwd: ROOT });

/** The import rules' messages for `code` linted as the file at `file`. */
async function importFindings(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(`${code}\nexport {};\n`, { filePath: path.join(ROOT, file) });
  return result!.messages
    .filter((m) => m.ruleId === null || /restricted-imports|import-type-side-effects/.test(m.ruleId))
    .map((m) => `${m.ruleId}: ${m.message}`);
}

test.each([
  ['a domain into another\'s internals', 'server/game/live/x.ts', 'import { a } from \'../../cage/ledger.ts\';'],
  ['a re-export of another\'s internals', 'server/game/live/x.ts', 'export { a } from \'../../bank/reconcile.ts\';'],
  ['a type from another\'s internals', 'server/betting/x.ts', 'import type { A } from \'../cage/betting.ts\';'],
  ['the chain bank into the cage', 'server/bank/x.ts', 'import { a } from \'../cage/seams.ts\';'],
  ['the cage into the chain bank', 'server/cage/x.ts', 'import { a } from \'../bank/withdraw.ts\';'],
  ['a tournament module that is no door', 'server/game/x.ts', 'import { a } from \'../tournaments/routes.ts\';'],
  ['the shared floor into a domain', 'server/http/x.ts', 'import { a } from \'../game/tables/read.ts\';'],
  ['the bank contract into a bank', 'server/bank-contract/x.ts', 'import { a } from \'../cage/cash.ts\';'],
  ['the web client: a value of the wire', 'web/x.ts', 'import { serverMessage } from \'../server/game/live/server-messages.ts\';'],
  ['the web client: inline type specifiers (an empty import left behind)', 'web/x.ts', 'import { type ServerMessage } from \'../server/game/live/server-messages.ts\';'],
  ['the web client: server code beyond the wire', 'web/x.ts', 'import type { A } from \'../server/game/live/wire.ts\';'],
  ['the example agent: server code beyond the wire', 'examples/agent/x.ts', 'import { toJson } from \'../../server/game/live/wire.ts\';'],
])('refused: %s', async (_what, file, code) => {
  expect(await importFindings(file, code)).toHaveLength(1);
});

test.each([
  ['a domain\'s own folder', 'server/cage/x.ts', 'import { a } from \'./seams.ts\';'],
  ['the shared floor', 'server/game/live/x.ts', 'import { a } from \'../../http/errors.ts\'; import { b } from \'../../chain/client.ts\';'],
  ['the bank contract', 'server/bank/x.ts', 'import { a } from \'../bank-contract/contract.ts\';'],
  ['a door', 'server/game/live/x.ts', 'import { a } from \'../../tournaments/lifecycle.ts\'; import type { B } from \'../../claims/board.ts\';'],
  ['a composition (a role)', 'server/roles/x.ts', 'import { a } from \'../cage/cash.ts\'; import { b } from \'../bank/withdraw.ts\';'],
  ['the web client: the wire\'s types', 'web/x.ts', 'import type { ServerMessage } from \'../server/game/live/server-messages.ts\';'],
  ['the example agent: the wire', 'examples/agent/x.ts', 'import { clientMessage } from \'../../server/game/live/messages.ts\';'],
])('allowed: %s', async (_what, file, code) => {
  expect(await importFindings(file, code)).toEqual([]);
});

/** The modules `file` imports (relative imports, as repository paths). */
function importsOf(file: string): string[] {
  const text = readFileSync(path.join(ROOT, file), 'utf8');
  const specifiers = [...text.matchAll(/(?:import|export)\s[^'";]*?from\s+'(\.[^']+)'|import\(\s*'(\.[^']+)'\s*\)/g)].map((m) => m[1] ?? m[2]!);
  return specifiers.map((s) => path.relative(ROOT, path.resolve(path.dirname(path.join(ROOT, file)), s)));
}

test('every temporary crossing is still a crossing (delete the entries whose import is gone)', () => {
  const stale = TEMPORARY_CROSSINGS.filter((c) => !existsSync(path.join(ROOT, c.file)) || !importsOf(c.file).includes(`server/${c.to}`));
  expect(stale).toEqual([]);
});
