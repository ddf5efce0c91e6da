// Table settings rules shared by table creation (the cage and chain-bank roles) and the live room
// (the game role): kept here, apart from the room, so a role that only creates tables does not load
// the room and the poker engine for a constant.

/** The longest turn a table may give (one hour): creation refuses more, and stored rows above it are clamped when a room loads. */
export const MAX_TURN_TIME_SEC = 3600;

/** A stored turn time as the timer may use it: past one hour (older rows) it is clamped, so setTimeout never overflows. */
export function turnTimeSec(stored: unknown): number {
  if (typeof stored !== 'number' || !Number.isFinite(stored) || stored <= 0) return 30;
  return Math.min(stored, MAX_TURN_TIME_SEC);
}
