// The chain bank's tournament branch (spec: the sng branch of "Deposit (bank)", the payoutIntent
// branch of "Withdraw (bank)", the bank's tournament unregister; the cage's are in
// server/cage/tournaments.ts, and both answer alike). A chain-bank SnG table keeps its entry fees in
// the vault under the table's key; the SQL is db/functions/bank/40_tournaments.sql.
//   POST /api/deposit, sng table   the permit deposit of exactly the entry fee (server/bank/deposit.ts):
//                                  the registrant's seat held while the chain confirms it, then the
//                                  game's credit callback accepts the entry from the confirmed deposit;
//   POST /api/withdraw + payoutIntent  service key only: the game's payout row of a place, paid from
//                                  the vault to the wallet that signed the winner's entry permit;
//                                  confirmedAt marked, then the game's /internal/payout-confirmed;
//   POST /api/tournament/unregister    the caller's JWT: a paid entry refunded on chain to the wallet
//                                  that signed its permit (registering only); a reserve released.
import type { Express, Request } from 'express';
import type pg from 'pg';
import { getAddress, type Address, type Hex } from 'viem';
import { ApiError, parseInput, zodIssues } from '../http/errors.ts';
import { secretMatches } from '../http/service-key.ts';
import { playerSession } from '../http/jwt.ts';
import { BASE_UNITS_PER_CHIP, ChainRevert, ChainUnavailable, type ChainBankChain } from '../chain/types.ts';
import { earlierPayment } from './earlier-payments.ts';
import { asOneSender } from './one-sender.ts';
import { requireChain, type BankDeps } from './deposit.ts';
import { payoutAnswer, payoutWithdrawBody, unregisterBody, unregisterRoute } from '../bank-contract/contract.ts';
import { payoutConfirmed } from '../bank-contract/seat-calls.ts';

export interface PaymentRow {
  payment_key: string; kind: 'payout' | 'refund'; table_id: string; position: number | null; user_id: string; amount: bigint;
  destination: string; status: string; tx_hash: string | null; error: string | null; tournament_state?: string; replayed?: boolean;
}

const ADVANCE = 'select * from bank.advance_tournament_payment($1, $2, $3, $4, $5, $6, $7)';

type Db = Pick<pg.ClientBase, 'query'>;

/**
 * A pending tournament payment sent (a payout by the vault's payout, a refund by its operator
 * withdrawal) on `db`, whose transaction holds its row lock (bank.retry_tournament_payment takes
 * it) until the transaction hash is recorded (one-sender.ts). Unless an earlier transaction of it
 * (sent before a failure) paid it (confirmed from that) or is still in flight.
 */
async function sendPayment(deps: BankDeps, db: Db, chain: ChainBankChain, row: PaymentRow): Promise<PaymentRow> {
  const to = getAddress(row.destination) as Address;
  const p = { tableId: row.table_id, to, chips: BigInt(row.amount) };
  const earlier = await earlierPayment(deps, chain, 'payment', row.payment_key, p);
  if (earlier === 'in_flight') return row;
  if (earlier) {
    return (await db.query<PaymentRow>(ADVANCE, [
      row.payment_key, 'confirmed', earlier.paid.txHash, earlier.paid.blockNumber.toString(), to, (p.chips * BASE_UNITS_PER_CHIP).toString(), null,
    ])).rows[0]!;
  }
  let txHash: Hex;
  try {
    txHash = row.kind === 'payout' ? await chain.submitPayout(p) : await chain.submitWithdraw(p);
  } catch (err) {
    if (err instanceof ChainRevert) return (await db.query<PaymentRow>(ADVANCE, [row.payment_key, 'failed', null, null, null, null, err.reason])).rows[0]!;
    if (err instanceof ChainUnavailable) throw new ApiError(503, 'chain_unavailable', undefined, { status: 'pending', idempotencyKey: row.payment_key });
    throw err;
  }
  return (await db.query<PaymentRow>(ADVANCE, [row.payment_key, 'submitted', txHash, null, null, null, null])).rows[0]!;
}

/**
 * Pays a tournament payment on chain and records each step: a failed one is retried with a fresh
 * transaction and a pending one sent, by one process at a time (a second waits on the row lock,
 * then finds it submitted); a submitted one's receipt awaited up to `waitMs` and confirmed with the
 * vault event the chain logged. Answers the row as it stands after.
 */
export async function payTournamentPayment(deps: BankDeps, row: PaymentRow, waitMs: number): Promise<PaymentRow> {
  const chain = requireChain(deps);
  let current = row;
  if (current.status === 'failed' || current.status === 'pending') {
    current = await asOneSender<PaymentRow, PaymentRow>(deps.pool, 'select * from bank.retry_tournament_payment($1)', [row.payment_key],
      async (db, taken) => ({ ...row, ...(taken.status === 'pending' ? await sendPayment(deps, db, chain, taken) : taken) }));
  }
  if (current.status === 'submitted') {
    const outcome = await chain.waitForOutcome(current.tx_hash as Hex, waitMs);
    if (outcome.status === 'confirmed') {
      // the confirmation is the chain's: the vault's event of this transaction, as logged
      const event = await chain.withdrawalOf(current.tx_hash as Hex);
      if (!event) {
        current = (await deps.pool.query<PaymentRow>(ADVANCE, [current.payment_key, 'failed', null, null, null, null, 'no vault event in the receipt'])).rows[0]!;
      } else {
        current = (await deps.pool.query<PaymentRow>(ADVANCE, [
          current.payment_key, 'confirmed', current.tx_hash, outcome.blockNumber.toString(), event.to, event.amount.toString(), null,
        ])).rows[0]!;
      }
    } else if (outcome.status === 'reverted') {
      current = (await deps.pool.query<PaymentRow>(ADVANCE, [current.payment_key, 'failed', null, null, null, null, outcome.reason])).rows[0]!;
    } else if (!(await chain.isKnown(current.tx_hash as Hex))) {
      // a transaction the node dropped never mines: failed, and sent again by the next attempt
      current = (await deps.pool.query<PaymentRow>(ADVANCE, [current.payment_key, 'failed', null, null, null, null, 'dropped: the chain does not know the transaction'])).rows[0]!;
    }
  }
  return current;
}

/** The game's announcement of a confirmed payout (tournament_payout_settled); a failure is logged, the payout stands. */
async function announcePayout(deps: BankDeps, row: PaymentRow) {
  const settled = await payoutConfirmed(deps.game, {
    tableId: row.table_id, position: row.position, userId: row.user_id, amount: BigInt(row.amount), txHash: row.tx_hash, state: row.tournament_state,
  });
  if (!settled.ok) deps.log.warn({ tableId: row.table_id, position: row.position }, 'payout confirmed on chain but not announced by the game');
}

/** One place paid: the game's payout row opened as a payment, paid on chain, announced once confirmed. */
export async function payPlace(deps: BankDeps, tableId: string, position: number, amount: bigint, waitMs: number) {
  const opened = (await deps.pool.query<PaymentRow>('select * from bank.open_tournament_payout($1, $2, $3)', [tableId, position, amount.toString()])).rows[0]!;
  const paid = opened.status === 'confirmed' ? opened : await payTournamentPayment(deps, opened, waitMs);
  // announced at each confirmed answer (the game announces a place once, from its payout row)
  if (paid.status === 'confirmed') {
    const { rows } = await deps.pool.query<{ tournament_state: string }>('select tournament_state from game.tournaments where table_id = $1', [tableId]);
    await announcePayout(deps, { ...paid, tournament_state: rows[0]?.tournament_state });
  }
  return { row: paid, replayed: !!opened.replayed };
}

export const chainPayoutBody = payoutWithdrawBody;

/**
 * The payoutIntent branch of the withdraw on the chain bank (service key only; answers as the
 * cage's branch, the destination being the winner's entry wallet and the txHash the chain's).
 */
export async function chainPayoutWithdraw(deps: BankDeps, req: Request, b: Record<string, unknown>) {
  if (!deps.serviceKey) throw new ApiError(503, 'service_key_not_configured');
  if (!secretMatches(req.get('x-service-key'), deps.serviceKey)) throw new ApiError(401, 'payout_requires_service_key');
  const parsed = chainPayoutBody.safeParse(b);
  if (!parsed.success) throw new ApiError(400, 'bad_request', zodIssues(parsed.error));
  const { tableId, payoutIntent: { position, amount } } = parsed.data;
  requireChain(deps);
  const { row, replayed } = await payPlace(deps, tableId, position, amount, deps.confirmWindowMs);
  if (row.status === 'failed') {
    throw new ApiError(400, 'failed', undefined, { status: 'failed', reason: row.error, idempotencyKey: row.payment_key });
  }
  if (row.status !== 'confirmed') {
    return {
      status: row.status, txHash: row.tx_hash, destination: row.destination, amount: Number(row.amount), idempotencyKey: row.payment_key, position,
      userId: row.user_id, note: 'not confirmed within the window: the reconciler confirms it',
    };
  }
  if (!replayed) deps.log.info({ tableId, position, userId: row.user_id, amount: amount.toString(), txHash: row.tx_hash }, 'tournament payout paid on chain');
  const { rows } = await deps.pool.query<{ tournament_state: string }>('select tournament_state from game.tournaments where table_id = $1', [tableId]);
  return payoutAnswer({
    txHash: row.tx_hash, destination: row.destination, amount: row.amount, key: row.payment_key, position, userId: row.user_id,
    tournamentState: rows[0]?.tournament_state, replayed,
  });
}

export const chainUnregisterBody = unregisterBody;

export const chainTournamentRoutes = [unregisterRoute];

export function installChainTournamentRoutes(app: Express, deps: BankDeps) {
  // The bank's refund of a registration (its shape is the cage's: docs/decisions.md, "Tournaments").
  app.post('/api/tournament/unregister', deps.jwt.require, async (req, res) => {
    const { tableId } = parseInput(unregisterBody, req.body);
    const userId: string = res.locals.claims.sub;
    const { rows } = await deps.pool.query<{ outcome: string; amount: bigint; payment_key: string | null; registered_count: number }>(
      'select outcome, amount, payment_key, registered_count from bank.refund_tournament_entry($1, $2)', [playerSession(res), tableId],
    );
    const r = rows[0]!;
    let txHash: string | null = null;
    let payment: string | undefined;
    if (r.payment_key) {
      const { rows: [opened] } = await deps.pool.query<PaymentRow>('select * from bank.tournament_payment_records where payment_key = $1', [r.payment_key]);
      // the position is closed and the refund owed: paid now, or by the reconciler if the chain is away
      const paid = await payTournamentPayment(deps, opened!, deps.confirmWindowMs).catch((err: unknown) => {
        deps.log.warn({ tableId, userId, err: (err as Error).message }, 'tournament refund not paid yet; the reconciler pays it');
        return opened!;
      });
      txHash = paid.tx_hash;
      payment = paid.status;
    }
    deps.log.info({ userId, tableId, outcome: r.outcome, amount: r.amount.toString(), payment }, 'tournament registration withdrawn');
    res.json({
      status: r.outcome, tableId, amount: r.amount.toString(), txHash, registeredCount: r.registered_count,
      ...(payment && payment !== 'confirmed' ? { payment, note: 'the refund is not confirmed on chain yet: the reconciler pays it' } : {}),
    });
  });
}
