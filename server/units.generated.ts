// Generated from cage.chip_units() (db/functions/00_units.sql): do not edit.
// test/platform/units.test.ts fails when this differs from the database; UNITS_WRITE=1 with that
// test writes it again. Every chip <-> base unit conversion in TypeScript is one of these.
export const CHIP_UNITS = {
  baseUnitsPerChip: 1000000n,
  tokenDecimals: 6,
} as const;

/** One chip in base units (the chip token's, custody entries', gas micro-units). */
export const BASE_UNITS_PER_CHIP = CHIP_UNITS.baseUnitsPerChip;

/** Chips to base units. */
export function chipsToBaseUnits(chips: bigint | number): bigint {
  return BigInt(chips) * BASE_UNITS_PER_CHIP;
}

/** Base units to whole chips (rounded down). */
export function baseUnitsToChips(baseUnits: bigint): bigint {
  return baseUnits / BASE_UNITS_PER_CHIP;
}
