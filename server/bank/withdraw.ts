// POST /api/withdraw on the chain bank (spec: "Withdraw (bank)"): the game stands the position up
// (its stack and chain head frozen), the bank pays the stack out of the table's vault balance to
// its destination and waits for the receipt, then the game's settle callback zeroes the seat.
//   voluntary  the JWT's user; destination: a linked EVM wallet named in the body, else the wallet
//              that signed their last confirmed deposit at this table;
//   forced     x-service-key + forced:true + userId (the sit-out timeout, an operator's clearing);
//              funds to the last permit signer, no linkage check;
// A bust is no route: the hand's end closes the position with the bank's zero settlement
// (game.end_hand, bank_private.close_bust; issue 32).
// Idempotency key keccak256(userId:tableId:historyHash:chipAmount); an intent stays confirmed until
// the settle callback lands (the reconciler redelivers it). With payoutIntent (service key only): a
// tournament place paid from the vault (server/bank/tournaments.ts).
import type { Express, Request, Response } from 'express';
import type pg from 'pg';
import { getAddress, type Address, type Hex } from 'viem';
import { z } from 'zod';
import { ApiError, zodIssues } from '../http/errors.ts';
import { secretMatches } from '../http/service-key.ts';
import { playerSession } from '../http/jwt.ts';
import { errorCode, withSpan } from '../telemetry/index.ts';
import { forcedWithdrawBody, tableOfBank, voluntaryWithdrawBody, WITHDRAW_REPLAY_WINDOW_SQL, withdrawKey } from '../bank-contract/contract.ts';
import { settleWithdrawal, standUpOnGame } from '../bank-contract/seat-calls.ts';
import { ChainRevert, ChainUnavailable, BASE_UNITS_PER_CHIP, type ChainBankChain } from '../chain/types.ts';
import { linkedWallets, requireChain, type BankDeps } from './deposit.ts';
import { chainPayoutWithdraw } from './tournaments.ts';
import { describeRoute } from '../http/openapi.ts';
import { chainPayoutBody } from './tournaments.ts';
import { earlierPayment } from './earlier-payments.ts';
import { asOneSender } from './one-sender.ts';

interface WithdrawalRow {
  idempotency_key: string; status: string; tx_hash: string | null; error: string | null; amount: bigint; destination: string | null;
  settlement: string; history_hash: string; player_id: bigint; replayed?: boolean;
}

type Span = Parameters<Parameters<typeof withSpan>[2]>[0];

/** The table a withdrawal names, as the chain bank may serve it (the contract's read), never a tournament's. */
async function readTable(deps: BankDeps, tableId: string) {
  const t = await tableOfBank(deps.pool, tableId, 'chain');
  if (t.mode === 'sng') throw new ApiError(409, 'stand_up_not_allowed_in_tournament');
  return t;
}

/** The settle callback: the game zeroes the seat under this key; then the intent is settled. */
export async function deliverChainSettlement(deps: BankDeps, row: { idempotency_key: string; player_id: bigint; settlement: string }) {
  const answer = await settleWithdrawal(deps.game, {
    playerId: row.player_id.toString(), ledgerRefId: row.idempotency_key, settlement: row.settlement,
  });
  if (!answer.ok) {
    deps.log.warn({ key: row.idempotency_key, status: answer.status, error: answer.body.error }, 'chain withdrawal confirmed but not settled on the game yet; the reconciler redelivers');
    return false;
  }
  await deps.pool.query('select bank.mark_withdrawal_settled($1)', [row.idempotency_key]);
  return true;
}

type Db = Pick<pg.ClientBase, 'query'>;

const ADVANCE = 'select * from bank.advance_withdrawal($1, $2, $3, $4, $5, $6, $7)';

/**
 * A pending withdrawal sent, on `db`, whose transaction holds its row lock (bank.take_withdrawal)
 * until the transaction hash is recorded (one-sender.ts). Unless an earlier transaction of it (sent
 * before a failure) paid it (confirmed from that) or is still in flight.
 */
async function sendWithdrawal(deps: BankDeps, db: Db, chain: ChainBankChain, tableId: string, row: WithdrawalRow): Promise<WithdrawalRow> {
  const units = (BigInt(row.amount) * BASE_UNITS_PER_CHIP).toString();
  const earlier = await earlierPayment(deps, chain, 'withdrawal', row.idempotency_key, { tableId, to: row.destination!, chips: BigInt(row.amount) });
  if (earlier === 'in_flight') return row;
  if (earlier) return (await db.query<WithdrawalRow>(ADVANCE, [row.idempotency_key, 'confirmed', earlier.paid.txHash, earlier.paid.blockNumber.toString(), row.destination, units, null])).rows[0]!;
  let txHash: Hex;
  try {
    txHash = await chain.submitWithdraw({ tableId, to: getAddress(row.destination!) as Address, chips: BigInt(row.amount) });
  } catch (err) {
    if (err instanceof ChainRevert) return (await db.query<WithdrawalRow>(ADVANCE, [row.idempotency_key, 'failed', null, null, null, null, err.reason])).rows[0]!;
    if (err instanceof ChainUnavailable) throw new ApiError(503, 'chain_unavailable', undefined, { status: 'pending', idempotencyKey: row.idempotency_key });
    throw err;
  }
  return (await db.query<WithdrawalRow>(ADVANCE, [row.idempotency_key, 'submitted', txHash, null, null, null, null])).rows[0]!;
}

/**
 * Pays a pending or submitted withdrawal on chain and records each step; answers its state after.
 * A pending one is sent by one process at a time (a second waits, then finds it submitted).
 */
export async function payWithdrawal(deps: BankDeps, tableId: string, row: WithdrawalRow, waitMs: number): Promise<WithdrawalRow> {
  const chain = requireChain(deps);
  let current = row;
  if (current.status === 'pending') {
    current = await asOneSender<WithdrawalRow, WithdrawalRow>(deps.pool, 'select * from bank.take_withdrawal($1)', [row.idempotency_key],
      async (db, taken) => (taken.status === 'pending' ? sendWithdrawal(deps, db, chain, tableId, taken) : taken));
  }
  if (current.status === 'submitted') {
    const outcome = await chain.waitForOutcome(current.tx_hash as Hex, waitMs);
    if (outcome.status === 'confirmed') {
      current = (await deps.pool.query<WithdrawalRow>("select * from bank.advance_withdrawal($1, 'confirmed', $2, $3, $4, $5, null)", [
        current.idempotency_key, current.tx_hash, outcome.blockNumber.toString(), current.destination, (current.amount * BASE_UNITS_PER_CHIP).toString(),
      ])).rows[0]!;
    } else if (outcome.status === 'reverted') {
      current = (await deps.pool.query<WithdrawalRow>("select * from bank.advance_withdrawal($1, 'failed', null, null, null, null, $2)", [current.idempotency_key, outcome.reason])).rows[0]!;
    }
  }
  return current;
}

/** Stands the player up on the game, opens the settlement, pays it, delivers it. */
async function settleOut(deps: BankDeps, span: Span, a: { userId: string; tableId: string; mode: 'voluntary' | 'forced'; destination?: string; sid?: string | null }) {
  const up = await standUpOnGame(deps.game, a.tableId, a.mode === 'voluntary' ? { sid: a.sid ?? null } : { userId: a.userId, reason: 'idle' });
  if (!up.ok) {
    const code = String(up.body.error ?? 'stand_up_refused');
    if (code === 'not_at_table') {
      // a withdraw repeated after its seat was settled: the last settlement of this user here,
      // within the contract's replay window
      const { rows } = await deps.pool.query<WithdrawalRow>(
        `select * from bank.withdrawal_records where user_id = $1 and table_id = $2 and settlement = 'cash_out'
          and created_at > now() - ${WITHDRAW_REPLAY_WINDOW_SQL} order by created_at desc limit 1`, [a.userId, a.tableId],
      );
      if (rows[0]) return { row: { ...rows[0], replayed: true }, settled: rows[0].status === 'confirmed' };
    }
    throw new ApiError(up.status, code);
  }
  const chips = BigInt(up.body.chipAmount);
  const key = withdrawKey(a.userId, a.tableId, up.body.historyHash, chips);
  span.setAttributes({ 'withdraw.player_id': up.body.playerId, 'withdraw.chip_amount': chips.toString(), 'withdraw.history_hash': up.body.historyHash, 'withdraw.idempotency_key': key });
  let row = (await deps.pool.query<WithdrawalRow>('select * from bank.open_withdrawal($1, $2, $3, $4, $5, $6, $7, $8, $9)', [
    a.userId, a.tableId, up.body.playerId, chips.toString(), up.body.historyHash, key, chips === 0n ? 'bust' : 'cash_out',
    a.mode === 'forced', a.destination ?? null,
  ])).rows[0]!;
  if (row.settlement === 'cash_out') row = { ...(await payWithdrawal(deps, a.tableId, row, deps.confirmWindowMs)), replayed: row.replayed };
  const settled = row.status === 'confirmed' ? await deliverChainSettlement(deps, row) : false;
  return { row, settled };
}

function withdrawAnswer(span: Span, row: WithdrawalRow) {
  if (row.settlement === 'bust') {
    span.setAttribute('withdraw.result', 'nothing_to_withdraw');
    throw new ApiError(400, 'nothing_to_withdraw');
  }
  span.setAttributes({ 'withdraw.destination': row.destination ?? '', 'withdraw.tx_hash': row.tx_hash ?? '' });
  if (row.status === 'failed') {
    span.setAttribute('withdraw.result', 'failed');
    throw new ApiError(400, 'failed', undefined, { status: 'failed', reason: row.error, idempotencyKey: row.idempotency_key });
  }
  if (row.status !== 'confirmed') {
    span.setAttribute('withdraw.result', 'failed');
    return { status: row.status, txHash: row.tx_hash, destination: row.destination, amount: Number(row.amount), idempotencyKey: row.idempotency_key,
      note: 'not confirmed within the window: the seat is settled once it confirms' };
  }
  span.setAttribute('withdraw.result', row.replayed ? 'replay_confirmed' : 'confirmed');
  return {
    status: 'confirmed', txHash: row.tx_hash, destination: row.destination, amount: Number(row.amount), idempotencyKey: row.idempotency_key,
    historyHash: row.history_hash, ...(row.replayed ? { replay: true } : {}),
  };
}

/** The spec's withdraw.result values; any other refusal is reported as `failed`. */
const SPEC_RESULTS = new Set(['confirmed', 'replay_confirmed', 'wallet_not_linked', 'nothing_to_withdraw', 'failed', 'room_not_found', 'not_at_table', 'table_frozen']);

export const voluntaryBody = voluntaryWithdrawBody;
export const forcedBody = forcedWithdrawBody;

async function withdraw(deps: BankDeps, req: Request, res: Response, span: Span) {
  const b = (req.body ?? {}) as Record<string, unknown>;
  if (b.payoutIntent !== undefined) {
    span.setAttributes({ 'withdraw.table_id': typeof b.tableId === 'string' ? b.tableId.slice(0, 64) : '', 'auth.linked': 'skipped_forced' });
    const answer = await chainPayoutWithdraw(deps, req, b);
    span.setAttributes({ 'withdraw.result': 'replay' in answer && answer.replay ? 'replay_confirmed' : answer.status === 'confirmed' ? 'confirmed' : 'failed',
      'withdraw.destination': answer.destination, 'withdraw.tx_hash': answer.txHash ?? '', 'withdraw.idempotency_key': answer.idempotencyKey });
    return answer;
  }
  if (b.tableId === undefined || b.tableId === null || b.tableId === '') throw new ApiError(400, 'missing_table_id');
  const forced = b.forced !== undefined && b.forced !== false;
  let userId: string;
  let destination: string | undefined;
  let tableId: string;
  let sid: string | null = null;
  if (forced) {
    if (!secretMatches(req.get('x-service-key'), deps.serviceKey)) throw new ApiError(401, 'forced_withdraw_requires_service_key');
    const parsed = forcedBody.safeParse(b);
    if (!parsed.success) throw new ApiError(400, 'bad_request', zodIssues(parsed.error));
    ({ userId, tableId } = parsed.data);
    span.setAttribute('auth.linked', 'skipped_forced');
  } else {
    await new Promise<void>((resolve, reject) => deps.jwt.require(req, res, (err?: unknown) => (err ? reject(err) : resolve())));
    const parsed = voluntaryBody.safeParse(b);
    if (!parsed.success) throw new ApiError(400, 'bad_request', zodIssues(parsed.error));
    userId = res.locals.claims.sub;
    sid = playerSession(res);
    tableId = parsed.data.tableId;
    destination = parsed.data.destinationWallet;
    span.setAttribute('auth.linked', true);
  }
  span.setAttributes({ 'withdraw.userId': userId, 'withdraw.forced': forced, 'withdraw.table_id': tableId });
  const table = await readTable(deps, tableId);
  if (table.status === 'frozen') throw new ApiError(409, 'table_frozen');
  requireChain(deps);
  // a destination named in the body is one of the player's linked wallets, checked before the seat
  // is stood up (SQL checks it again when the withdrawal opens)
  if (destination && !(await linkedWallets(deps, userId)).includes(destination.toLowerCase())) {
    span.setAttribute('auth.linked', false);
    throw new ApiError(400, 'wallet_not_linked');
  }
  const { row } = await settleOut(deps, span, { userId, tableId, mode: forced ? 'forced' : 'voluntary', destination, sid });
  return withdrawAnswer(span, row);
}

/** The contracts of installBankWithdrawRoutes. */
export const bankWithdrawRoutes = [
  describeRoute({
    method: 'post', path: '/api/withdraw', auth: ['jwt', 'service'], summary: 'Stands up and pays a seat out on chain: voluntary (JWT), forced or a tournament payout (x-service-key)',
    body: z.union([voluntaryBody, forcedBody, chainPayoutBody]),
    responses: {
      200: '{ status: confirmed, txHash, ... }', 400: 'missing_table_id / wallet_not_linked / nothing_to_withdraw / failed',
      401: 'forced_withdraw_requires_service_key / payout_requires_service_key', 404: 'room_not_found / not_at_table', 409: 'table_frozen',
    },
  }),
];

export function installBankWithdrawRoutes(app: Express, deps: BankDeps) {
  app.post('/api/withdraw', async (req, res) => {
    const b = (req.body ?? {}) as Record<string, unknown>;
    await withSpan('admin.withdraw', { 'withdraw.tableId': typeof b.tableId === 'string' ? b.tableId.slice(0, 64) : '' }, async (span) => {
      try {
        res.json(await withdraw(deps, req, res, span));
      } catch (err) {
        const code = err instanceof ApiError ? err.code : errorCode(err) ?? 'failed';
        // the spec's name for a withdrawal from a table that does not exist (404 table_not_found)
        span.setAttribute('withdraw.result', code === 'table_not_found' ? 'room_not_found' : SPEC_RESULTS.has(code) ? code : 'failed');
        throw err;
      }
    });
  });
}
