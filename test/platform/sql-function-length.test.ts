// SQL functions over 100 lines say why (issue 22, "Each rule once"): a function in db/functions whose
// definition runs past 100 lines (blank and comment-only lines not counted, as the lint counts
// TypeScript) must carry a header line `-- Long because: ...` in the comment block above it, or be
// split. The reason is for the reader: what a split would cost (one snapshot, one lock order, one
// plan cached per session).
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const FUNCTIONS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../db/functions');
const LIMIT = 100;
const MARKER = /^--\s*Long because:\s*\S/;

interface SqlFunction { file: string; name: string; lines: number; reason: boolean }

/** Every `create [or replace] function` of a file: its counted length and whether its header states a reason. */
function sqlFunctions(file: string, text: string): SqlFunction[] {
  const lines = text.split('\n');
  const found: SqlFunction[] = [];
  for (let i = 0; i < lines.length; i++) {
    const m = /^create\s+(?:or\s+replace\s+)?function\s+([\w.]+)\s*\(/i.exec(lines[i]!);
    if (!m) continue;
    // the body: from the line that opens it (`as $$`) to the next line holding `$$`
    let open = i;
    while (open < lines.length && !/\bas\s+\$\$/i.test(lines[open]!)) open++;
    let end = open;
    if (!/\bas\s+\$\$.*\$\$/i.test(lines[open] ?? '')) {
      end = open + 1;
      while (end < lines.length && !lines[end]!.includes('$$')) end++;
    }
    const counted = lines.slice(i, end + 1).filter((l) => l.trim() !== '' && !l.trim().startsWith('--')).length;
    let head = i - 1;
    const header: string[] = [];
    while (head >= 0 && lines[head]!.startsWith('--')) header.push(lines[head--]!);
    found.push({ file, name: m[1]!, lines: counted, reason: header.some((l) => MARKER.test(l)) });
  }
  return found;
}

async function allFunctions(): Promise<SqlFunction[]> {
  const entries = await readdir(FUNCTIONS, { withFileTypes: true, recursive: true });
  const files = entries.filter((e) => e.isFile() && e.name.endsWith('.sql')).map((e) => path.join(e.parentPath, e.name));
  const texts = await Promise.all(files.map(async (f) => ({ file: path.relative(FUNCTIONS, f), text: await readFile(f, 'utf8') })));
  return texts.flatMap(({ file, text }) => sqlFunctions(file, text));
}

const fn = (header: string[], bodyLines: number) => [
  ...header, 'create or replace function x.f() returns void', '  language plpgsql', 'as $$', 'begin',
  ...Array.from({ length: bodyLines }, (_, k) => `  perform ${k};`), 'end;', '$$;',
].join('\n');

test('the check counts a function as the lint does and reads its header', () => {
  // 6 lines around the statements: 95 statements make 101 counted lines, 94 make 100
  expect(sqlFunctions('t', fn(['-- does a thing'], 95))).toEqual([{ file: 't', name: 'x.f', lines: 101, reason: false }]);
  expect(sqlFunctions('t', fn(['-- does a thing'], 94))[0]!.lines).toBe(100);
  expect(sqlFunctions('t', fn(['-- does a thing', '--', '-- Long because: one snapshot.'], 96))[0]!.reason).toBe(true);
  // a blank line ends the header: a reason above it belongs to something else
  expect(sqlFunctions('t', fn(['-- Long because: not this one', '', '-- does a thing'], 96))[0]!.reason).toBe(false);
  expect(sqlFunctions('t', 'create function x.g() returns int language sql as $$ select 1 $$;')[0]!.lines).toBe(1);
});

test(`every SQL function over ${LIMIT} lines says why in its header (-- Long because: ...)`, async () => {
  const all = await allFunctions();
  expect(all.length).toBeGreaterThan(200); // the scan found the functions
  const unexplained = all.filter((f) => f.lines > LIMIT && !f.reason).map((f) => `${f.file} ${f.name} (${f.lines} lines)`);
  expect(unexplained).toEqual([]);
});
