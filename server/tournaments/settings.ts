// The settings of a Sit-and-Go table (spec: "SnG tournament settings", "Parametric blind structure",
// "Parametric payout structure"), validated (zod) and resolved: the effective level duration (the
// structure's own wins) and the payout as the wire always carries it, a `{ position, percent }` list.
// Pure: table creation (issue 13) stores what `resolveSngSettings` returns.
import { z } from 'zod';
import { DEFAULT_PAYOUT, legacyBasisPoints, parametricBasisPoints, prizeStructureWire } from './math.ts';
import { TOURNAMENT_RULES } from './rules.generated.ts';

const whole = () => z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

export const blindStructureSchema = z.object({
  startingSmallBlind: whole().min(1),
  increaseFactor: z.number().min(1.01).max(100),
  levelDurationSeconds: z.number().int().min(30).max(86_400),
  // no antes unless asked for: the three ante fields default to none (issue 21)
  anteStartLevel: z.number().int().min(0).max(10_000).nullable().default(null),
  startingAnte: whole().default(0),
  anteIncreaseFactor: z.number().min(1).max(100).default(1),
}).strict();

const legacyLevel = z.object({ sb: whole(), bb: whole().min(1), ante: whole().optional() }).strict();

export const payoutStructureSchema = z.object({
  paidPlacesPercent: z.number().min(0).max(100).default(DEFAULT_PAYOUT.paidPlacesPercent),
  topHeaviness: z.number().min(0).max(10).default(DEFAULT_PAYOUT.topHeaviness),
  minPaidPlaces: z.number().int().min(1).max(10).default(DEFAULT_PAYOUT.minPaidPlaces),
}).strict();

const prize = z.object({ position: z.number().int().min(1), percent: z.number().positive().max(100) }).strict();

export const sngSettingsSchema = z.object({
  mode: z.literal('sng'),
  kind: z.enum(['open', 'human_only', 'agent', 'copilot']).default('open'),
  seats: z.number().int().min(2).max(10),
  entryFee: whole().min(1),
  rakeFee: whole().default(0),
  startingStack: whole().min(1),
  blindStructure: blindStructureSchema.optional(),
  blindLevels: z.array(legacyLevel).min(1).max(200).optional(),
  levelDurationSeconds: z.number().int().min(30).max(86_400).optional(),
  payoutStructure: payoutStructureSchema.optional(),
  prizeStructure: z.array(prize).min(1).max(10).optional(),
  actionTimeoutSeconds: z.number().int().min(3).max(300).default(30),
  lateRegistrationSeconds: z.literal(0).default(0),
  rebuyConfig: z.null().default(null),
}).strip().superRefine((s, ctx) => {
  const issue = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: [path], message });
  if (!s.blindStructure && !s.blindLevels) issue('blindStructure', 'blindStructure or blindLevels is required');
  if (!s.blindStructure && s.levelDurationSeconds === undefined) issue('levelDurationSeconds', 'required with blindLevels (at least 30)');
  if (s.rakeFee >= s.entryFee) issue('rakeFee', 'the house fee is below the entry fee');
  if (s.blindLevels && !monotonic(s.blindLevels)) issue('blindLevels', 'levels never go down (sb, bb and ante)');
  if (s.blindLevels?.some((l) => l.bb < l.sb)) issue('blindLevels', 'a big blind is at least its small blind');
  if (s.prizeStructure) {
    const problem = prizeProblem(s.prizeStructure, s.seats);
    if (problem) issue('prizeStructure', problem);
  }
});

export type SngSettingsInput = z.input<typeof sngSettingsSchema>;

function monotonic(levels: readonly z.infer<typeof legacyLevel>[]): boolean {
  return levels.every((l, i) => i === 0 || (l.sb >= levels[i - 1]!.sb && l.bb >= levels[i - 1]!.bb && (l.ante ?? 0) >= (levels[i - 1]!.ante ?? 0)));
}

function prizeProblem(prizes: readonly { position: number; percent: number }[], seats: number): string | null {
  if (prizes.length > seats) return `at most one prize per seat (${seats})`;
  const positions = prizes.map((p) => p.position).sort((a, b) => a - b);
  if (positions.some((p, i) => p !== i + 1)) return 'positions are contiguous from 1';
  const total = prizes.reduce((a, p) => a + p.percent, 0);
  if (Math.abs(total - 100) > 1e-9) return `percents sum to 100 (they sum to ${total})`;
  return null;
}

/**
 * Valid settings, resolved: the effective level duration (the structure's own wins) and the payout
 * as the wire carries it. The payout source is the parametric structure when given, else the legacy
 * list verbatim, else the parametric defaults; its field is the full seat count.
 */
export function resolveSngSettings(input: unknown) {
  return resolveParsed(sngSettingsSchema.parse(input));
}

function resolveParsed<S extends z.infer<typeof sngSettingsSchema>>(s: S) {
  const points = s.payoutStructure
    ? parametricBasisPoints(s.seats, s.payoutStructure)
    : s.prizeStructure
      ? legacyBasisPoints(s.prizeStructure)
      : parametricBasisPoints(s.seats, DEFAULT_PAYOUT);
  return {
    ...s,
    levelDurationSeconds: s.blindStructure?.levelDurationSeconds ?? s.levelDurationSeconds!,
    prizeStructure: prizeStructureWire(points),
  };
}

export type ResolvedSngSettings = ReturnType<typeof resolveSngSettings> & { deckSeed?: string; clockFactor?: number };

/** The largest clock factor the harness may set (a 30 s level lasts 30 ms at it; SQL's game_private.max_clock_factor). */
export const MAX_CLOCK_FACTOR = TOURNAMENT_RULES.maxClockFactor;

/**
 * Table creation's schema for a Sit-and-Go table: the settings validated and resolved. While the
 * test harness is permitted it also takes `deckSeed` (deterministic decks) and `clockFactor`
 * (every duration of the table, the jobs' run_at included, divided by it: the injectable clock
 * that lets a whole tournament run in seconds without weakening the >= 30 s level rule).
 */
export function resolvedSngSettingsSchema(options: { testAuthPermitted: boolean }) {
  const harness = z.object({
    deckSeed: z.string().min(1).max(128).optional(),
    clockFactor: z.number().min(1).max(MAX_CLOCK_FACTOR).optional(),
  });
  return sngSettingsSchema.and(harness).superRefine((s, ctx) => {
    if (options.testAuthPermitted) return;
    for (const key of ['deckSeed', 'clockFactor'] as const) {
      if (s[key] !== undefined) ctx.addIssue({ code: 'custom', path: [key], message: `${key} is accepted only while the test harness is permitted` });
    }
  }).transform((s): ResolvedSngSettings => resolveParsed(s));
}
