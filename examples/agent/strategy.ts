// The example agent's poker: a small, readable rule set, not a good player. Replace `decide` with
// your own; everything else in the agent (connecting, sitting, resends, standing up) stays.
//
//   - raise strong starting hands (big pairs, AK, AQ) to three times the bet, within the bounds;
//   - check whenever checking is free;
//   - call small bets (up to a tenth of what we hold, or a few big blinds with a playable hand,
//     anything with a made pair or better after the flop up to a third of our chips);
//   - fold the rest.
//
// The state and its `legal` are typed by the server's own schemas (server/game/live/server-messages.ts).
import type { GameStateMessage, WireLegal } from '../../server/game/live/server-messages.ts';

export type Decision = { action: 'fold' | 'check' | 'call' } | { action: 'bet' | 'raise'; amount: string };

const RANKS = '23456789TJQKA';
const rank = (card: string) => RANKS.indexOf(card[0] ?? '');

/** How good two hole cards are before the flop: 2 strong, 1 playable, 0 weak. */
export function startingHand(hole: readonly string[]): 0 | 1 | 2 {
  if (hole.length !== 2) return 0;
  const [a, b] = [rank(hole[0]!), rank(hole[1]!)].sort((x, y) => y - x) as [number, number];
  const suited = hole[0]![1] === hole[1]![1];
  if (a === b) return a >= rank('9') ? 2 : 1; // 99+ strong, any pair playable
  if (a === rank('A') && b >= rank('Q')) return 2; // AK, AQ
  if (a === rank('A') || (a >= rank('T') && b >= rank('T')) || (suited && a - b === 1 && b >= rank('5'))) return 1;
  return 0;
}

/** After the flop: do our hole cards make a pair or better with the board (or are they a pair)? */
export function madeHand(hole: readonly string[], board: readonly string[]): boolean {
  const mine = hole.map(rank);
  if (mine.length === 2 && mine[0] === mine[1]) return true;
  const onBoard = new Set(board.map(rank));
  return mine.some((r) => onBoard.has(r));
}

const clamp = (v: bigint, lo: bigint, hi: bigint) => (v < lo ? lo : v > hi ? hi : v);

/** The action for a state that asks us to act (`legal` is the state's). Always one of `legal.actions`. */
export function decide(state: GameStateMessage, legal: WireLegal): Decision {
  const me = state.seats.find((s) => s.seatIndex === state.yourSeat);
  const hole = me?.cards ?? [];
  const stack = BigInt(me?.stack ?? '0');
  const bigBlind = BigInt(state.blinds.big);
  const toCall = BigInt(legal.toCall);
  const can = (a: WireLegal['actions'][number]) => legal.actions.includes(a);
  const preflop = state.street === 'preflop';
  const strength = preflop ? startingHand(hole) : madeHand(hole, state.board) ? 1 : 0;

  // raise strong starting hands: to three times the current bet (at least the minimum, at most all-in)
  const aggressive = can('raise') ? 'raise' : can('bet') ? 'bet' : null;
  if (preflop && strength === 2 && aggressive && legal.minRaiseTo !== null && legal.maxRaiseTo !== null) {
    const target = 3n * (BigInt(state.currentBet) > bigBlind ? BigInt(state.currentBet) : bigBlind);
    return { action: aggressive, amount: clamp(target, BigInt(legal.minRaiseTo), BigInt(legal.maxRaiseTo)).toString() };
  }
  if (can('check')) return { action: 'check' };
  if (can('call')) {
    const small = toCall * 10n <= stack;
    const fewBlinds = toCall <= 4n * bigBlind;
    if (small || (strength >= 1 && (preflop ? fewBlinds : toCall * 3n <= stack)) || (preflop && strength === 2)) return { action: 'call' };
  }
  return can('fold') ? { action: 'fold' } : { action: 'call' };
}
