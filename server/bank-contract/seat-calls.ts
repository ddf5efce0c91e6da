// The game's seat calls (and its payout announcement), as either bank makes them (server/game/seats/routes.ts serves them, with the
// service key): the seat moves on the game, the money in the bank, and these four calls join them.
//   credit-chips         fund a seat (a buy-in, a top-up, a tournament entry) under the deposit's key;
//                        the game's transaction that funds it confirms the deposit;
//   credit-chips/cancel  a funding whose fate is unknown: a tombstone, or the credit that arrived;
//   stand-up             the position stood up (leaving), its stack and chain head frozen;
//   settle-withdrawal    a settled position's seat closed under the settlement's ref;
//   payout-confirmed     a tournament place paid: the game announces it (tournament_payout_settled).
// Each answers the game's answer as it came (a coded refusal with its status, or `unreachable`).
import { ApiError } from '../http/errors.ts';
import type { ServiceClient } from '../http/service-client.ts';

/** A seat funded (or found funded: `replayed`), with its stack and chain head after. */
export interface Credited { status: 'credited' | 'replayed'; seatIndex: number; chipBalance: string; historyHash: string }

/** Funds a seat under the deposit's key (idempotent per key on the game). */
export function creditChips(game: ServiceClient, c: {
  creditKey: string; tableId: string; userId: string; seatIndex: number | null; amount: bigint; moneyKind?: 'real';
}) {
  return game.post<Credited>('/internal/credit-chips', { ...c, amount: c.amount.toString() });
}

/** Cancels a funding whose fate is unknown: `cancelled`/`reverted` (no chips on the seat) or `credited` (it stands). */
export function cancelCredit(game: ServiceClient, c: { creditKey: string; tableId: string; userId: string; amount: bigint }) {
  return game.post<{ status: 'cancelled' | 'reverted' | 'credited' }>('/internal/credit-chips/cancel', { ...c, amount: c.amount.toString() });
}

/**
 * A position stood up on the game (POST /internal/stand-up), as either bank asks it. The request
 * carries its authority: the player's own grant (`sid`, 401 session_required without one), or a
 * bust or the sit-out timeout of a named user, which the game's SQL accepts only for a zero stack or
 * a player sat out for the house's idle time. The game unreachable: 503 game_unavailable.
 */
export async function standUpOnGame(
  game: ServiceClient, tableId: string, who: { sid: string | null } | { userId: string; reason: 'bust' | 'idle' },
) {
  if ('sid' in who && !who.sid) throw new ApiError(401, 'session_required');
  const up = await game.post<{ playerId: string; chipAmount: string; historyHash: string }>('/internal/stand-up', { tableId, ...who });
  if ('unreachable' in up) throw new ApiError(503, 'game_unavailable');
  return up;
}

/** Closes a settled position's seat under its settlement's ref (idempotent on the game). */
export function settleWithdrawal(game: ServiceClient, s: { playerId: string; ledgerRefId: string; settlement: string }) {
  return game.post('/internal/settle-withdrawal', s);
}

/** A tournament place paid: the game announces it once, from its payout row (a failure leaves the payout standing). */
export function payoutConfirmed(game: ServiceClient, p: {
  tableId: string; position: number | null; userId: string; amount: bigint; txHash: string | null; state: string | undefined;
}) {
  return game.post('/internal/payout-confirmed', { ...p, amount: p.amount.toString() });
}
