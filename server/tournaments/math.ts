// The Sit-and-Go's numbers, as pure functions (spec: "Parametric blind structure", "Parametric payout
// structure"): the blinds of any level, computed on demand from level 0, and the payouts of a field.
// No I/O; the lifecycle (db/functions/tournaments/, issue 13) and the room call these.
//
// Whole chips. A snapped value is m x 10^k with m in {1, 1.5, 2, 2.5, 3, 4, 5, 6, 8}; for k >= 1 it is
// a whole number, for k = 0 the halves (1.5, 2.5) are not, and below 1 nothing is. The rule: a
// snapped value that is not a whole chip rounds up to the next whole chip (1.5 -> 2, 2.5 -> 3, the
// same direction as the snap's ties), and no blind is below 1 chip. An ante of 0 stays 0 (no ante).

/** The mantissas a derived value snaps to (times a power of ten). */
export const NICE = [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8] as const;
/** Small blinds stop growing here; levels keep advancing. */
export const SMALL_BLIND_CAP = 1_000_000_000_000;

/** The nearest m x 10^k (m in NICE) to a positive value; a tie goes to the larger one. */
export function snap(value: number): number {
  if (!(value > 0)) return 0;
  if (!Number.isFinite(value)) return Infinity;
  let k = Math.floor(Math.log10(value));
  // log10 of a power of ten can land a hair below it: keep value within [10^k, 10^(k+1))
  if (10 ** (k + 1) <= value) k++;
  else if (value < 10 ** k) k--;
  const scale = 10 ** k;
  const candidates = [...NICE.map((m) => m * scale), 10 * scale];
  let best = candidates[0]!;
  for (const c of candidates) {
    const d = Math.abs(value - c);
    const bestD = Math.abs(value - best);
    // relative tolerance: 10^k is not exact in binary for k < 0
    if (d < bestD - 1e-9 * scale || (Math.abs(d - bestD) <= 1e-9 * scale && c > best)) best = c;
  }
  return best;
}

/** A snapped value as whole chips: not a whole chip rounds up; at least `floor` (1 for a blind). */
export function wholeChips(value: number, floor = 1): bigint {
  if (!(value > 0)) return 0n;
  const snapped = snap(value);
  const capped = Math.min(snapped, SMALL_BLIND_CAP);
  return BigInt(Math.max(floor, Math.ceil(capped - 1e-9)));
}

export interface BlindStructure {
  startingSmallBlind: number;
  increaseFactor: number;
  levelDurationSeconds: number;
  anteStartLevel: number | null;
  startingAnte: number;
  anteIncreaseFactor: number;
}

export interface LegacyLevel {
  sb: number;
  bb: number;
  ante?: number;
}

export interface Level {
  level: number;
  smallBlind: bigint;
  bigBlind: bigint;
  ante: bigint;
}

/**
 * Level n of a parametric structure, from level 0 (never from the previous level). Level 0 is the
 * structure's own startingSmallBlind and the ante level is its own startingAnte, as given; only the
 * levels derived from them are snapped (spec: "Each derived level is snapped").
 */
export function parametricLevel(s: BlindStructure, n: number): Level {
  const smallBlind = n === 0 ? BigInt(s.startingSmallBlind) : wholeChips(s.startingSmallBlind * s.increaseFactor ** n);
  const ante = s.anteStartLevel === null || n < s.anteStartLevel || s.startingAnte === 0
    ? 0n
    : n === s.anteStartLevel
      ? BigInt(s.startingAnte)
      : wholeChips(s.startingAnte * s.anteIncreaseFactor ** (n - s.anteStartLevel));
  return { level: n, smallBlind, bigBlind: 2n * smallBlind, ante };
}

/**
 * Level n of a legacy list: verbatim in range; past its end, the last level grown by the ratio of
 * the last two listed big blinds (flat when they are equal, or when the list has one level), applied
 * to the small blind, the big blind and the ante, each snapped to whole chips.
 */
export function legacyLevel(levels: readonly LegacyLevel[], n: number): Level {
  if (levels.length === 0) throw new Error('a legacy blind list needs at least one level');
  const listed = levels[n];
  if (listed) return { level: n, smallBlind: BigInt(listed.sb), bigBlind: BigInt(listed.bb), ante: BigInt(listed.ante ?? 0) };
  const last = levels.at(-1)!;
  const before = levels.at(-2);
  const ratio = before && before.bb > 0 ? last.bb / before.bb : 1;
  const steps = n - (levels.length - 1);
  if (ratio <= 1) return { level: n, smallBlind: BigInt(last.sb), bigBlind: BigInt(last.bb), ante: BigInt(last.ante ?? 0) };
  const grow = (v: number, floor: number) => wholeChips(v * ratio ** steps, floor);
  return { level: n, smallBlind: grow(last.sb, 1), bigBlind: grow(last.bb, 1), ante: last.ante ? grow(last.ante, 0) : 0n };
}

export interface PayoutStructure {
  paidPlacesPercent: number;
  topHeaviness: number;
  minPaidPlaces: number;
}

export const DEFAULT_PAYOUT: PayoutStructure = { paidPlacesPercent: 30, topHeaviness: 0.85, minPaidPlaces: 1 };

/** Paid places = clamp(max(minPaidPlaces, round(field x percent / 100)), 1, field); round is half-up. */
export function paidPlaces(field: number, s: PayoutStructure = DEFAULT_PAYOUT): number {
  const wanted = Math.max(s.minPaidPlaces, Math.round((field * s.paidPlacesPercent) / 100));
  return Math.min(field, Math.max(1, wanted));
}

/** Basis points per place (index 0 = 1st): weights p^-h, normalised and floored; the dust goes to 1st; sums to 10000. */
export function parametricBasisPoints(field: number, s: PayoutStructure = DEFAULT_PAYOUT): number[] {
  const places = paidPlaces(field, s);
  const weights = Array.from({ length: places }, (_, i) => (i + 1) ** -s.topHeaviness);
  const total = weights.reduce((a, b) => a + b, 0);
  const points = weights.map((w) => Math.floor((w / total) * 10000));
  points[0]! += 10000 - points.reduce((a, b) => a + b, 0);
  return points;
}

/** A legacy prizeStructure, verbatim: percent to basis points (floored), the dust to 1st. */
export function legacyBasisPoints(prizes: readonly { position: number; percent: number }[]): number[] {
  const sorted = [...prizes].sort((a, b) => a.position - b.position);
  const points = sorted.map((p) => Math.floor(p.percent * 100 + 1e-9));
  points[0]! += 10000 - points.reduce((a, b) => a + b, 0);
  return points;
}

/** The pool: (entryFee - rakeFee) x field, the field being the sealed entrant count. */
export function prizePool(entryFee: bigint, rakeFee: bigint, field: number): bigint {
  return (entryFee - rakeFee) * BigInt(field);
}

/** Chips per place: floor(pool x bp / 10000) each; what floors leave over goes to 1st. Sums to the pool. */
export function payoutAmounts(pool: bigint, basisPoints: readonly number[]): bigint[] {
  const amounts = basisPoints.map((bp) => (pool * BigInt(bp)) / 10000n);
  amounts[0]! += pool - amounts.reduce((a, b) => a + b, 0n);
  return amounts;
}

/** The settings' wire form of a resolved payout: `{ position, percent }` (percent = bp / 100). */
export function prizeStructureWire(basisPoints: readonly number[]): { position: number; percent: number }[] {
  return basisPoints.map((bp, i) => ({ position: i + 1, percent: bp / 100 }));
}

/** tournamentSchedule's form: `{ position, share }` (share = bp / 10000, a fraction of the pool). */
export function prizeShares(basisPoints: readonly number[]): { position: number; share: number }[] {
  return basisPoints.map((bp, i) => ({ position: i + 1, share: bp / 10000 }));
}
