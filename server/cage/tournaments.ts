// Tournament money on the cage (spec: "Tournaments on the cage", the payoutIntent branch of withdraw,
// the bank's tournament unregister). The money moves in SQL (db/functions/tournaments/20_money.sql),
// one transaction each; the game learns of registrations by NOTIFY (game_tournament), and of a
// confirmed payout by POST /internal/payout-confirmed (it broadcasts tournament_payout_settled).
//   POST /api/deposit, sng table   the entry fee: amount = entryFee; pays the caller's reserve (or
//                                  reserves a seat now); 402 insufficient_cage_balance releases it;
//   POST /api/withdraw + payoutIntent  service key only: pays one place to the payout row's user;
//   POST /api/tournament/unregister    the caller's JWT: a paid entry refunded (registering only).
import type { Express, Request } from 'express';
import type pg from 'pg';
import type { Logger } from 'pino';
import { z } from 'zod';
import { ApiError, parseInput, zodIssues } from '../http/errors.ts';
import { secretMatches } from '../http/service-key.ts';
import { idempotencyKey } from '../http/schemas.ts';
import type { ServiceClient } from '../http/service-client.ts';
import { playerSession, type JwtVerifier } from '../http/jwt.ts';
import { RESERVE_TTL_SECONDS } from '../tournaments/lifecycle.ts';
import { payoutAnswer, payoutWithdrawBody, unregisterBody, unregisterRoute } from '../bank-contract/contract.ts';
import { payoutConfirmed } from '../bank-contract/seat-calls.ts';

interface TournamentCageDeps {
  pool: pg.Pool;
  log: Logger;
  game: ServiceClient;
  jwt: JwtVerifier;
  serviceKey: string | undefined;
}

const entryBody = z.object({
  seatIndex: z.number().int().min(0).max(9).nullish(),
  idempotencyKey: idempotencyKey.optional(),
});

/**
 * The sng branch of the deposit, after the common fields were read (amount and key). Answers the
 * spec's success body (`status: 'confirmed'`, txHash = the entry's ledger ref) with the seat and the
 * tournament's state; a replay answers `replay: true`, and `status: 'refunded'` (with the refund's
 * ledger ref) when the entry was refunded since.
 */
export async function tournamentDeposit(
  deps: Pick<TournamentCageDeps, 'pool' | 'log'>,
  d: { userId: string; sid: string | null; tableId: string; amount: bigint; key: string; body: Record<string, unknown> },
) {
  const parsed = entryBody.safeParse(d.body);
  if (!parsed.success) throw new ApiError(400, 'bad_request', zodIssues(parsed.error));
  const { rows } = await deps.pool.query<{
    ref_id: string | null; outcome: string; seat_index: number; tournament_state: string; registered_count: number; refund_ref: string | null;
  }>(
    `select ref_id, outcome, seat_index, tournament_state, registered_count,
            case when outcome = 'replayed_refunded' then cage.tournament_refund_ref(ref_id) end as refund_ref
       from cage.open_tournament_entry($1, $2, $3, $4, $5, $6)`,
    [d.sid, d.key, d.tableId, parsed.data.seatIndex ?? null, d.amount.toString(), RESERVE_TTL_SECONDS],
  );
  const r = rows[0]!;
  // a seat held from before is released; without one nothing was reserved (seat_index null)
  if (r.outcome === 'insufficient') throw new ApiError(402, 'insufficient_cage_balance', undefined, { seatReleased: r.seat_index !== null });
  if (r.outcome === 'paid') deps.log.info({ userId: d.userId, tableId: d.tableId, seatIndex: r.seat_index, state: r.tournament_state }, 'tournament entry paid');
  // a replay of an entry refunded since answers that (what is true now), as a replay
  const refunded = r.outcome === 'replayed_refunded';
  return {
    status: refunded ? 'refunded' : 'confirmed', txHash: r.ref_id, idempotencyKey: d.key, seatIndex: refunded ? null : r.seat_index,
    tournamentState: r.tournament_state, registeredCount: r.registered_count,
    ...(r.outcome === 'replayed' || refunded ? { replay: true } : {}),
    ...(refunded ? { refundTxHash: r.refund_ref } : {}),
  };
}

const payoutBody = payoutWithdrawBody;

/**
 * The payoutIntent branch of the withdraw (service key only): pays the place to the payout row's
 * own user (never a user named by the caller), then tells the game, which broadcasts
 * tournament_payout_settled. A failed payment marks the intent failed for the reconciler.
 */
export async function payoutWithdraw(deps: TournamentCageDeps, req: Request, b: Record<string, unknown>) {
  if (!deps.serviceKey) throw new ApiError(503, 'service_key_not_configured');
  if (!secretMatches(req.get('x-service-key'), deps.serviceKey)) throw new ApiError(401, 'payout_requires_service_key');
  const parsed = payoutBody.safeParse(b);
  if (!parsed.success) throw new ApiError(400, 'bad_request', zodIssues(parsed.error));
  const { tableId: tid, payoutIntent: { position, amount } } = parsed.data;
  type Paid = { ref_id: string; user_id: string; amount: bigint; replayed: boolean; tournament_state: string };
  let row: Paid;
  try {
    const { rows } = await deps.pool.query<Paid>('select ref_id, user_id, amount, replayed, tournament_state from cage.pay_tournament_payout($1, $2, $3)', [tid, position, amount.toString()]);
    row = rows[0]!;
  } catch (err) {
    const code = (err as { code?: string }).code;
    // a refusal (no such payout, another amount) leaves the intent as it is; anything else is a failed attempt
    if (!code?.startsWith('GM') && !code?.startsWith('CG')) {
      await deps.pool.query('select cage.mark_payout_failed($1, $2, $3)', [tid, position, (err as Error).message]).catch(() => undefined);
    }
    throw err;
  }
  const settled = await payoutConfirmed(deps.game, {
    tableId: tid, position, userId: row.user_id, amount: BigInt(row.amount), txHash: row.ref_id, state: row.tournament_state,
  });
  if (!settled.ok) deps.log.warn({ tableId: tid, position }, 'payout confirmed but not announced by the game');
  if (!row.replayed) deps.log.info({ tableId: tid, position, userId: row.user_id, amount: row.amount.toString() }, 'tournament payout paid');
  return payoutAnswer({
    txHash: row.ref_id, destination: 'cage', amount: row.amount, key: row.ref_id, position, userId: row.user_id, tournamentState: row.tournament_state, replayed: row.replayed,
  });
}

export { unregisterBody };

export const tournamentCageRoutes = [unregisterRoute];

export function installTournamentCageRoutes(app: Express, deps: TournamentCageDeps) {
  // The bank's refund of a paid registration (the spec leaves its shape open: docs/tournaments.md).
  app.post('/api/tournament/unregister', deps.jwt.require, async (req, res) => {
    const { tableId: tid } = parseInput(unregisterBody, req.body);
    const userId: string = res.locals.claims.sub;
    const { rows } = await deps.pool.query<{ outcome: string; amount: bigint; ref_id: string | null; registered_count: number }>(
      'select outcome, amount, ref_id, registered_count from cage.refund_tournament_entry($1, $2)', [playerSession(res), tid],
    );
    const r = rows[0]!;
    deps.log.info({ userId, tableId: tid, outcome: r.outcome, amount: r.amount.toString() }, 'tournament registration withdrawn');
    res.json({ status: r.outcome, tableId: tid, amount: r.amount.toString(), txHash: r.ref_id, registeredCount: r.registered_count });
  });
}
