// Chip units once (issue 32): one chip is 10^6 base units, defined in SQL (db/functions/00_units.sql,
// cage.chip_units()) and generated into server/units.generated.ts, which every conversion in
// TypeScript imports. This test fails when the generated file differs from the database
// (UNITS_WRITE=1 writes it again), and when a conversion is spelled anywhere else in server/, tasks/
// or bench/ (a literal 10^6 or a decimals helper next to a chip amount).
import { readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { BASE_UNITS_PER_CHIP, CHIP_UNITS, baseUnitsToChips, chipsToBaseUnits } from '../../server/units.generated.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const GENERATED = path.join(ROOT, 'server/units.generated.ts');

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

/** The generated module's text for the units the database returns. */
function render(units: { baseUnitsPerChip: number; tokenDecimals: number }): string {
  return [
    '// Generated from cage.chip_units() (db/functions/00_units.sql): do not edit.',
    '// test/platform/units.test.ts fails when this differs from the database; UNITS_WRITE=1 with that',
    '// test writes it again. Every chip <-> base unit conversion in TypeScript is one of these.',
    'export const CHIP_UNITS = {',
    `  baseUnitsPerChip: ${units.baseUnitsPerChip}n,`,
    `  tokenDecimals: ${units.tokenDecimals},`,
    '} as const;',
    '',
    '/** One chip in base units (the chip token\'s, custody entries\', gas micro-units). */',
    'export const BASE_UNITS_PER_CHIP = CHIP_UNITS.baseUnitsPerChip;',
    '',
    '/** Chips to base units. */',
    'export function chipsToBaseUnits(chips: bigint | number): bigint {',
    '  return BigInt(chips) * BASE_UNITS_PER_CHIP;',
    '}',
    '',
    '/** Base units to whole chips (rounded down). */',
    'export function baseUnitsToChips(baseUnits: bigint): bigint {',
    '  return baseUnits / BASE_UNITS_PER_CHIP;',
    '}',
    '',
  ].join('\n');
}

test('server/units.generated.ts is what cage.chip_units() says', async () => {
  const { rows } = await db.owner.query<{ units: { baseUnitsPerChip: number; tokenDecimals: number } }>('select cage.chip_units() as units');
  const wanted = render(rows[0]!.units);
  if (process.env.UNITS_WRITE === '1') await writeFile(GENERATED, wanted);
  expect(await readFile(GENERATED, 'utf8')).toBe(wanted);
  expect(CHIP_UNITS.baseUnitsPerChip).toBe(10n ** BigInt(CHIP_UNITS.tokenDecimals));
  expect([chipsToBaseUnits(7), baseUnitsToChips(7_999_999n)]).toEqual([7n * BASE_UNITS_PER_CHIP, 7n]);
});

test('the SQL that converts calls cage_private.base_units(): no other function spells 10^6', async () => {
  const { rows } = await db.owner.query<{ fn: string }>(`
    select p.oid::regprocedure::text as fn from pg_proc p join pg_namespace n on n.oid = p.pronamespace
     where n.nspname in ('cage', 'cage_private', 'bank', 'bank_private', 'game', 'game_private', 'claims', 'claims_private', 'betting', 'betting_private')
       and p.prosrc ~ '[^0-9]1000000[^0-9]' and p.proname <> 'base_units'
       and p.prosrc !~ 'p_amount > 1000000'`);
  expect(rows.map((r) => r.fn)).toEqual([]);
});

async function sources(dir: string): Promise<string[]> {
  const entries = await readdir(path.join(ROOT, dir), { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile() && e.name.endsWith('.ts')).map((e) => path.join(e.parentPath, e.name));
}

test('no TypeScript outside the generated file spells the chip conversion', async () => {
  const spelled: string[] = [];
  for (const file of [...(await sources('server')), ...(await sources('tasks')), ...(await sources('bench'))]) {
    if (file === GENERATED) continue;
    const text = await readFile(file, 'utf8');
    text.split('\n').forEach((line, i) => {
      if (/\b1_?000_?000n\b|\*\s*1_?000_?000\b|\/\s*1_?000_?000\b|10n\s*\*\*\s*6n|parseUnits\(/.test(line)) spelled.push(`${path.relative(ROOT, file)}:${i + 1}: ${line.trim()}`);
    });
  }
  expect(spelled).toEqual([]);
});
