// What the game process needs of a tournament beyond the SQL lifecycle (db/functions/tournaments):
// the limits of the spec, the blind level of a stored table, its clock, and the agent-facing
// game_state additions (spec: "Agent-facing game_state additions"). Pure.
import {
  legacyLevel, parametricLevel, prizeShares, type BlindStructure, type LegacyLevel, type Level,
} from './math.ts';
import { TOURNAMENT_RULES } from './rules.generated.ts';

/** An unpaid reserve self-releases after this long (spec: Limits; SQL's game_private.reserve_ttl_seconds). */
export const RESERVE_TTL_SECONDS = TOURNAMENT_RULES.reserveTtlSeconds;
/** How many levels ahead tournamentSchedule lists on a parametric table (its escalation is open-ended). */
export const SCHEDULE_LEVELS_AHEAD = 10;

/** The tournament fields of a stored (resolved) SnG settings object. */
export interface StoredSng {
  seats: number;
  entryFee: number;
  rakeFee: number;
  startingStack: number;
  blindStructure?: BlindStructure;
  blindLevels?: LegacyLevel[];
  levelDurationSeconds: number;
  prizeStructure: { position: number; percent: number }[];
  actionTimeoutSeconds: number;
  clockFactor?: number;
  deckSeed?: string;
}

export function storedSng(settings: Record<string, unknown>): StoredSng {
  return settings as unknown as StoredSng;
}

/** Level n of the table: the structure's when it has one (preferred), else the legacy list's. */
export function levelOf(s: StoredSng, n: number): Level {
  return s.blindStructure ? parametricLevel(s.blindStructure, n) : legacyLevel(s.blindLevels ?? [{ sb: 1, bb: 2 }], n);
}

export function basisPoints(s: StoredSng): number[] {
  return [...s.prizeStructure].sort((a, b) => a.position - b.position).map((p) => Math.round(p.percent * 100));
}

/** A tournament's lifecycle states, in order (game.tables.tournament_state; SQL's game_private.lifecycle_states). */
export const LIFECYCLE_STATES = TOURNAMENT_RULES.lifecycleStates;
export type LifecycleState = (typeof LIFECYCLE_STATES)[number];

export interface TournamentRow {
  tournament_state: LifecycleState;
  current_level: number | null;
  level_started_at: Date | null;
  starts_at: Date | null;
  play_started_at: Date | null;
  closed_at: Date | null;
  registered_count: number;
  alive_count: number;
  /** The table's clock (SQL's game_private.sng_clock_factor: every duration divided by its factor): a level, a turn. */
  level_ms: number;
  action_ms: number;
  /** Chips per place as settlement pays them (index 0 = 1st; SQL's game_private.sng_place_amounts). */
  place_amounts: string[];
}

// chips as the wire sends them: decimal strings (server/game/live/server-messages.ts)
const levelWire = (l: Level, durationMs: number) => ({
  sb: l.smallBlind.toString(), bb: l.bigBlind.toString(), ...(l.ante > 0n ? { ante: l.ante.toString() } : {}), durationMs,
});

/** `tournament` and `tournamentSchedule` of game_state (the same for every viewer). */
export function tournamentWire(s: StoredSng, t: TournamentRow) {
  const n = t.current_level ?? 0;
  const level = levelOf(s, n);
  const durationMs = t.level_ms;
  const parametric = Boolean(s.blindStructure);
  const from = parametric ? n : 0;
  const count = parametric ? SCHEDULE_LEVELS_AHEAD : (s.blindLevels?.length ?? 1);
  return {
    tournament: {
      state: t.tournament_state, currentLevel: n, smallBlind: level.smallBlind.toString(), bigBlind: level.bigBlind.toString(),
      ...(level.ante > 0n ? { ante: level.ante.toString() } : {}),
      levelEndsAt: t.level_started_at ? t.level_started_at.getTime() + durationMs : null,
      registeredCount: t.registered_count,
    },
    tournamentSchedule: {
      levels: Array.from({ length: count }, (_, i) => levelWire(levelOf(s, from + i), durationMs)),
      ...(parametric ? { firstLevel: from } : {}),
      prizeStructure: prizeShares(basisPoints(s)),
      continues: true as const,
      totalLevels: parametric ? null : count,
    },
  };
}

/**
 * `tournamentMyView` of a seated, living player: rank by stack among the living (1 = biggest),
 * the stack in big blinds, the M ratio (stack / (sb + bb + ante x players dealt)) and the pay jump:
 * what outlasting one more player adds to the prize the player would take busting now.
 */
export function myView(t: Pick<TournamentRow, 'place_amounts'>, level: Level, alive: bigint[], stack: bigint) {
  const rank = 1 + alive.filter((x) => x > stack).length;
  const orbit = level.smallBlind + level.bigBlind + level.ante * BigInt(alive.length);
  const prize = (place: number) => BigInt(t.place_amounts[place - 1] ?? 0);
  const bustPlace = alive.length;
  return {
    rank,
    stackInBigBlinds: level.bigBlind > 0n ? Number(stack) / Number(level.bigBlind) : 0,
    mRatio: orbit > 0n ? Number(stack) / Number(orbit) : 0,
    payJumpToNext: (bustPlace > 1 ? prize(bustPlace - 1) - prize(bustPlace) : 0n).toString(),
  };
}
