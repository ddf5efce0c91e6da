// The runnable SQL examples (db/examples/*.sql) produce exactly their checked-in transcripts
// (db/examples/*.out): each on a fresh database cloned from the migrated template, ids and times
// scrubbed. `UPDATE_EXAMPLES=1` rewrites the .out files instead (then review the diff).
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { EXAMPLES, runExamples, scrub, statements } from '../../scripts/sql-examples.ts';
import { createTestDatabase } from '../helpers/db.ts';

test('each example prints exactly its .out', async () => {
  const results = await runExamples(createTestDatabase);
  expect(results.size).toBeGreaterThan(0);
  for (const [name, text] of results) {
    const file = path.join(EXAMPLES, `${name}.out`);
    if (process.env.UPDATE_EXAMPLES === '1') await writeFile(file, text);
    expect([name, text]).toEqual([name, await readFile(file, 'utf8')]);
  }
});

test('the runner splits statements at line ends and scrubs what differs between runs', () => {
  expect(statements("-- a comment\nselect 1;\nselect 'a;b' as x;\n-- only a comment;\n")).toEqual(['-- a comment\nselect 1', "select 'a;b' as x"]);
  const id = '0b5e7c1e-2f0a-4a8e-9c1d-3e4f5a6b7c8d';
  expect(scrub(`${id} and ${id}, 2026-11-24T00:12:34.567Z, ${'ab'.repeat(32)}`)).toBe('<uuid-1> and <uuid-1>, <time>, <hash-1>');
});
