// The Sit-and-Go's numbers (server/tournaments/math.ts) against hand-computed tables, and their
// invariants over many inputs (fast-check, seeded).
import fc from 'fast-check';
import {
  DEFAULT_PAYOUT, legacyBasisPoints, legacyLevel, paidPlaces, parametricBasisPoints, parametricLevel, payoutAmounts,
  prizePool, prizeShares, prizeStructureWire, snap, SMALL_BLIND_CAP, wholeChips, type BlindStructure,
} from '../../server/tournaments/math.ts';

const structure = (over: Partial<BlindStructure> = {}): BlindStructure => ({
  startingSmallBlind: 10, increaseFactor: 1.5, levelDurationSeconds: 60, anteStartLevel: null, startingAnte: 0, anteIncreaseFactor: 1, ...over,
});
const blinds = (s: BlindStructure, n: number) => Array.from({ length: n }, (_, i) => parametricLevel(s, i)).map((l) => [l.smallBlind, l.bigBlind, l.ante]);

describe('snap: the nearest m x 10^k, m in {1, 1.5, 2, 2.5, 3, 4, 5, 6, 8}, ties up', () => {
  test.each([
    [1, 1], [1.2, 1], [1.25, 1.5], [1.74, 1.5], [1.75, 2], [2.25, 2.5], [3.5, 4], [7, 8], [9, 10], [9.5, 10],
    [22.5, 25], [33.75, 30], [70, 80], [113.9, 100], [125, 150], [1000, 1000], [0.3, 0.3], [0.45, 0.5],
  ])('%p -> %p', (value, expected) => {
    expect(snap(value)).toBeCloseTo(expected, 9);
  });
});

test('whole chips: a snapped half rounds up, nothing below 1 chip, an ante of 0 stays 0', () => {
  expect([1.25, 1.5, 2.4, 0.2, 0.9].map((v) => wholeChips(v))).toEqual([2n, 2n, 3n, 1n, 1n]);
  expect(wholeChips(0)).toBe(0n);
  expect(wholeChips(0.2, 0)).toBe(1n); // a positive ante is at least one chip once snapped up
});

describe('parametric levels, each from level 0', () => {
  test('10 x 1.5^n: 10, 15, 25 (22.5 ties up), 30, 50, 80, 100; BB = 2 x SB', () => {
    expect(blinds(structure(), 7)).toEqual([
      [10n, 20n, 0n], [15n, 30n, 0n], [25n, 50n, 0n], [30n, 60n, 0n], [50n, 100n, 0n], [80n, 160n, 0n], [100n, 200n, 0n],
    ]);
  });
  test('small values: 1 x 1.25^n is 1, then 2 (1.25 snaps to 1.5, a half rounds up), 2, 2, 3 (2.44 -> 2.5 -> 3), 3', () => {
    expect(blinds(structure({ startingSmallBlind: 1, increaseFactor: 1.25 }), 6).map(([sb]) => sb)).toEqual([1n, 2n, 2n, 2n, 3n, 3n]);
  });
  test('antes from anteStartLevel: 5 x 2^(n - 2) from level 2, none before; null never', () => {
    expect(blinds(structure({ anteStartLevel: 2, startingAnte: 5, anteIncreaseFactor: 2 }), 7).map(([, , a]) => a)).toEqual([0n, 0n, 5n, 10n, 20n, 40n, 80n]);
    expect(blinds(structure({ anteStartLevel: null, startingAnte: 5, anteIncreaseFactor: 2 }), 5).map(([, , a]) => a)).toEqual([0n, 0n, 0n, 0n, 0n]);
  });
  test('small blinds plateau at 1e12 while levels keep advancing', () => {
    const s = structure({ startingSmallBlind: 100_000_000_000, increaseFactor: 2 });
    expect(parametricLevel(s, 4).smallBlind).toBe(BigInt(SMALL_BLIND_CAP));
    expect(parametricLevel(s, 100)).toEqual({ level: 100, smallBlind: BigInt(SMALL_BLIND_CAP), bigBlind: 2n * BigInt(SMALL_BLIND_CAP), ante: 0n });
    expect(parametricLevel(s, 10_000).smallBlind).toBe(BigInt(SMALL_BLIND_CAP));
  });
  test('level 0 is startingSmallBlind as given; a derived level never shrinks from the one before (any structure, seeded)', () => {
    fc.assert(fc.property(
      fc.integer({ min: 1, max: 10_000 }), fc.double({ min: 1.01, max: 3, noNaN: true }), fc.integer({ min: 1, max: 200 }),
      (sb0, factor, n) => {
        const s = structure({ startingSmallBlind: sb0, increaseFactor: factor });
        const [a, b] = [parametricLevel(s, n), parametricLevel(s, n + 1)];
        return parametricLevel(s, 0).smallBlind === BigInt(sb0)
          && b.smallBlind >= a.smallBlind && a.bigBlind === 2n * a.smallBlind && a.smallBlind >= 1n;
      },
    ), { seed: 13, numRuns: 500 });
  });

  test('level 0 and the ante level are not snapped: 7 plays 7/14, 35 plays 35/70, an ante of 7 is 7 (derived levels are)', () => {
    expect(parametricLevel(structure({ startingSmallBlind: 7, increaseFactor: 2 }), 0)).toMatchObject({ smallBlind: 7n, bigBlind: 14n });
    expect(parametricLevel(structure({ startingSmallBlind: 35, increaseFactor: 2 }), 0)).toMatchObject({ smallBlind: 35n, bigBlind: 70n });
    expect(parametricLevel(structure({ startingSmallBlind: 7, increaseFactor: 2 }), 1)).toMatchObject({ smallBlind: 15n, bigBlind: 30n });
    const antes = structure({ startingSmallBlind: 10, increaseFactor: 2, anteStartLevel: 2, startingAnte: 7, anteIncreaseFactor: 2 });
    expect([1, 2, 3].map((n) => parametricLevel(antes, n).ante)).toEqual([0n, 7n, 15n]);
  });
});

describe('legacy lists', () => {
  const list = [{ sb: 10, bb: 20 }, { sb: 15, bb: 30, ante: 5 }, { sb: 25, bb: 50, ante: 5 }];
  test('verbatim in range, then grown by the last two big blinds\' ratio (50/30), each snapped', () => {
    expect([0, 1, 2].map((n) => legacyLevel(list, n))).toEqual([
      { level: 0, smallBlind: 10n, bigBlind: 20n, ante: 0n }, { level: 1, smallBlind: 15n, bigBlind: 30n, ante: 5n },
      { level: 2, smallBlind: 25n, bigBlind: 50n, ante: 5n },
    ]);
    // level 3: 25, 50, 5 x 1.667 = 41.7 -> 40, 83.3 -> 80, 8.3 -> 8; level 4: 69.4 -> 60, 138.9 -> 150, 13.9 -> 15
    expect(legacyLevel(list, 3)).toEqual({ level: 3, smallBlind: 40n, bigBlind: 80n, ante: 8n });
    expect(legacyLevel(list, 4)).toEqual({ level: 4, smallBlind: 60n, bigBlind: 150n, ante: 15n });
  });
  test('flat when the list ends in equal levels, or has one level', () => {
    expect(legacyLevel([{ sb: 10, bb: 20 }, { sb: 10, bb: 20 }], 9)).toEqual({ level: 9, smallBlind: 10n, bigBlind: 20n, ante: 0n });
    expect(legacyLevel([{ sb: 5, bb: 10, ante: 1 }], 3)).toEqual({ level: 3, smallBlind: 5n, bigBlind: 10n, ante: 1n });
  });
});

describe('payouts', () => {
  test.each([
    [2, [10000]], [3, [10000]], [5, [6432, 3568]], [6, [6432, 3568]], [9, [5135, 2848, 2017]], [10, [5135, 2848, 2017]],
  ])('a field of %p with the defaults (30%% paid, top-heaviness 0.85) pays %j basis points', (field, expected) => {
    expect(parametricBasisPoints(field)).toEqual(expected);
  });
  test('paid places: round half up, at least minPaidPlaces, never more than the field', () => {
    expect([1, 2, 5, 9, 10].map((f) => paidPlaces(f))).toEqual([1, 1, 2, 3, 3]);
    expect(paidPlaces(9, { ...DEFAULT_PAYOUT, minPaidPlaces: 4 })).toBe(4);
    expect(paidPlaces(3, { ...DEFAULT_PAYOUT, minPaidPlaces: 9 })).toBe(3);
    expect(paidPlaces(10, { ...DEFAULT_PAYOUT, paidPlacesPercent: 0 })).toBe(1);
  });
  test('other shapes: half the field at heaviness 1; a flat split at heaviness 0 (dust to 1st)', () => {
    expect(parametricBasisPoints(10, { paidPlacesPercent: 50, topHeaviness: 1, minPaidPlaces: 1 })).toEqual([4383, 2189, 1459, 1094, 875]);
    expect(parametricBasisPoints(10, { paidPlacesPercent: 30, topHeaviness: 0, minPaidPlaces: 1 })).toEqual([3334, 3333, 3333]);
  });
  test('a legacy list is honoured verbatim (whatever its shape), percent to basis points, dust to 1st', () => {
    expect(legacyBasisPoints([{ position: 2, percent: 30 }, { position: 1, percent: 70 }])).toEqual([7000, 3000]);
    expect(legacyBasisPoints([{ position: 1, percent: 33.33 }, { position: 2, percent: 33.33 }, { position: 3, percent: 33.34 }])).toEqual([3333, 3333, 3334]);
    expect(legacyBasisPoints([{ position: 1, percent: 20 }, { position: 2, percent: 80 }])).toEqual([2000, 8000]);
  });
  test('chips: pool = (entryFee - rakeFee) x field; floor per place, the remainder to 1st; sums to the pool', () => {
    const pool = prizePool(100n, 10n, 10);
    expect(pool).toBe(900n);
    expect(payoutAmounts(pool, parametricBasisPoints(10))).toEqual([463n, 256n, 181n]); // 462.15 + 0.85 left over, 256.32, 181.53
    expect(payoutAmounts(7n, [3334, 3333, 3333])).toEqual([3n, 2n, 2n]);
  });
  test('wire forms: settings carry { position, percent }, the schedule { position, share }', () => {
    expect(prizeStructureWire([5135, 2848, 2017])).toEqual([{ position: 1, percent: 51.35 }, { position: 2, percent: 28.48 }, { position: 3, percent: 20.17 }]);
    expect(prizeShares([7000, 3000])).toEqual([{ position: 1, share: 0.7 }, { position: 2, share: 0.3 }]);
  });
  test('every parametric payout sums to 10000 and to the pool, and never grows down the places (seeded)', () => {
    fc.assert(fc.property(
      fc.integer({ min: 2, max: 10 }), fc.integer({ min: 0, max: 100 }), fc.double({ min: 0, max: 3, noNaN: true }), fc.integer({ min: 1, max: 10 }),
      fc.bigInt({ min: 1n, max: 10n ** 12n }), fc.bigInt({ min: 0n, max: 10n ** 9n }),
      (field, pct, heaviness, minPaid, entry, fee) => {
        const points = parametricBasisPoints(field, { paidPlacesPercent: pct, topHeaviness: heaviness, minPaidPlaces: minPaid });
        const pool = prizePool(entry + fee, fee, field);
        const amounts = payoutAmounts(pool, points);
        const sum = points.reduce((a, b) => a + b, 0);
        const nonIncreasing = <T>(xs: T[]) => xs.every((x, i) => i === 0 || xs[i - 1]! >= x);
        return sum === 10000 && amounts.reduce((a, b) => a + b, 0n) === pool && nonIncreasing(points) && nonIncreasing(amounts)
          && points.length >= 1 && points.length <= field;
      },
    ), { seed: 13, numRuns: 1000 });
  });
});
