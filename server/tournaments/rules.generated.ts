// Generated from game.tournament_rules() (db/functions/game/07_tournament_rules.sql): do not edit.
// test/tournaments/tournament-rules.test.ts fails when this differs from the database; RULES_WRITE=1 with that
// test writes it again.
export const TOURNAMENT_RULES = {
  maxClockFactor: 1000,
  lifecycleStates: ['registering', 'starting', 'playing', 'ended', 'settling', 'closed'],
  reserveTtlSeconds: 120,
  startGraceSeconds: 3,
} as const;
