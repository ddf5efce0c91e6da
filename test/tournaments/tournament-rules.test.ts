// Each rule once (issue 22): the tournament rules are SQL's (db/functions/game/07_tournament_rules.sql
// and the lifecycle states of migration 000036). The TypeScript constants are generated from
// game.tournament_rules() (server/tournaments/rules.generated.ts: this test fails when they differ,
// and RULES_WRITE=1 writes the file again); the clock factor and the place amounts are SQL's alone
// (the room reads them from game.tournaments): they are checked here against the spec's arithmetic
// (the clock: durations divided by the factor, bounded 1..max; the places: server/tournaments/math.ts,
// the pure reference the tournament oracle tests check).
import { randomInt, randomUUID } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { basisPoints, storedSng } from '../../server/tournaments/lifecycle.ts';
import { payoutAmounts, prizePool } from '../../server/tournaments/math.ts';
import { resolveSngSettings } from '../../server/tournaments/settings.ts';
import { TOURNAMENT_RULES } from '../../server/tournaments/rules.generated.ts';

const GENERATED = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../server/tournaments/rules.generated.ts');

let db: TestDatabase;
let game: pg.Pool;
beforeAll(async () => {
  db = await createTestDatabase();
  game = db.pool('poker_game');
});
afterAll(async () => {
  await db?.drop();
});

/** The generated module's text for the rules the database returns. */
function render(rules: Record<string, unknown>): string {
  const value = (v: unknown) => (Array.isArray(v) ? `[${v.map((x) => `'${String(x)}'`).join(', ')}]` : String(v));
  return [
    '// Generated from game.tournament_rules() (db/functions/game/07_tournament_rules.sql): do not edit.',
    '// test/tournaments/tournament-rules.test.ts fails when this differs from the database; RULES_WRITE=1 with that',
    '// test writes it again.',
    'export const TOURNAMENT_RULES = {',
    ...Object.entries(rules).map(([k, v]) => `  ${k}: ${value(v)},`),
    '} as const;',
    '',
  ].join('\n');
}

test('server/tournaments/rules.generated.ts is what game.tournament_rules() says', async () => {
  const { rows } = await db.owner.query<{ rules: Record<string, unknown> }>('select game.tournament_rules() as rules');
  const wanted = render(rows[0]!.rules);
  if (process.env.RULES_WRITE === '1') await writeFile(GENERATED, wanted);
  expect(await readFile(GENERATED, 'utf8')).toBe(wanted);
  expect(TOURNAMENT_RULES.lifecycleStates).toEqual(rows[0]!.rules.lifecycleStates);
});

test('the table refuses a lifecycle state the rules do not list, and takes every one they do', async () => {
  const tableId = await sngTable({ seats: 2, entryFee: 10, startingStack: 100 });
  for (const state of TOURNAMENT_RULES.lifecycleStates) {
    await db.owner.query('update game.tables set tournament_state = $2, announced_state = $2 where table_id = $1', [tableId, state]);
  }
  for (const column of ['tournament_state', 'announced_state']) {
    await expect(db.owner.query(`update game.tables set ${column} = 'paused' where table_id = $1`, [tableId])).rejects.toMatchObject({ code: '23514' });
  }
});

async function sngTable(input: Record<string, unknown>, clock?: number) {
  const tableId = `rules-${randomUUID().slice(0, 8)}`;
  const settings = { ...resolveSngSettings({ mode: 'sng', blindStructure: BLINDS, ...input }), ...(clock === undefined ? {} : { clockFactor: clock }) };
  await db.owner.query("select game.create_table($1, 'poker', $2, 'play', null, null, null, 'sng', 'open')", [tableId, JSON.stringify(settings)]);
  return tableId;
}
const BLINDS = { startingSmallBlind: 10, increaseFactor: 2, levelDurationSeconds: 90 };

/** What the game role reads of a table's rules from the view. */
async function viewed(tableId: string) {
  const { rows } = await game.query<{ settings: Record<string, unknown>; clock_factor: string; level_ms: number; action_ms: number; place_amounts: string[] }>(
    'select settings, clock_factor, level_ms, action_ms, place_amounts from game.tournaments where table_id = $1', [tableId],
  );
  return rows[0]!;
}

test('the clock factor (game.tournaments): 1 when absent or below 1, at most the rules\' maximum; every duration divided by it', async () => {
  for (const clock of [undefined, 0.5, 1, 1.5, 7, 60, 999.5, 1000, 5000]) {
    const tableId = await sngTable({ seats: 3, entryFee: 100, startingStack: 1000, actionTimeoutSeconds: 7 }, clock);
    const v = await viewed(tableId);
    const s = storedSng(v.settings);
    const factor = clock === undefined ? 1 : Math.min(Math.max(clock, 1), TOURNAMENT_RULES.maxClockFactor);
    expect([clock, Number(v.clock_factor)]).toEqual([clock, factor]);
    expect(v.level_ms).toBeCloseTo((s.levelDurationSeconds * 1000) / factor, 6);
    expect(v.action_ms).toBeCloseTo(7000 / factor, 6);
  }
});

test('the place amounts (game.tournaments, as settlement pays them) are the reference arithmetic\'s on random fields', async () => {
  for (let i = 0; i < 40; i++) {
    const seats = randomInt(2, 11);
    const entryFee = randomInt(1, 100_000);
    const input: Record<string, unknown> = { seats, entryFee, rakeFee: randomInt(0, entryFee), startingStack: 1000 };
    if (i % 3 === 1) input.payoutStructure = { paidPlacesPercent: randomInt(0, 101), topHeaviness: randomInt(0, 300) / 100, minPaidPlaces: randomInt(1, seats + 1) };
    if (i % 3 === 2) {
      const places = randomInt(1, seats + 1);
      const cuts = Array.from({ length: places - 1 }, () => randomInt(1, 10_000)).sort((a, b) => a - b);
      const bounds = [0, ...cuts, 10_000];
      input.prizeStructure = Array.from({ length: places }, (_, k) => ({ position: k + 1, percent: (bounds[k + 1]! - bounds[k]!) / 100 }))
        .filter((p) => p.percent > 0).map((p, k) => ({ ...p, position: k + 1 }));
    }
    const v = await viewed(await sngTable(input));
    const s = storedSng(v.settings);
    expect([input, v.place_amounts.map(BigInt)]).toEqual([input, payoutAmounts(prizePool(BigInt(s.entryFee), BigInt(s.rakeFee ?? 0), s.seats), basisPoints(s))]);
  }
});
