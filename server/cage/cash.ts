// The bank's money routes, journal-native (spec: "Deposit (bank)", "Withdraw (bank)", "Cage"):
//   POST /api/deposit   the player's own JWT: debit the cage balance, fund the seat, confirmed now;
//                       replay-once on the caller's idempotency key (header, body, or the chain
//                       bank's permit hash); none of them: 400 missing_idempotency_key;
//   GET  /api/deposits/:idempotencyKey  the caller's own deposit under that key, as it stands;
//   POST /api/withdraw  voluntary (JWT) or forced (x-service-key, forced:true, userId): stand up,
//                       write the terminal row and its receipt, zero the seat.
// A bust is no route: the hand's end closes the position (game.end_hand; issue 32).
import type { Express, Request, Response } from 'express';
import type pg from 'pg';
import type { Logger } from 'pino';
import { z } from 'zod';
import { secretMatches } from '../http/service-key.ts';
import { ApiError, zodIssues } from '../http/errors.ts';
import { playerSession, type JwtVerifier } from '../http/jwt.ts';
import { idempotencyKey, tableId } from '../http/schemas.ts';
import type { ServiceClient } from '../http/service-client.ts';
import { errorCode, withSpan } from '../telemetry/index.ts';
import type { ReceiptSigner, StoredReceipt } from './receipts.ts';
import { payoutWithdraw, tournamentDeposit } from './tournaments.ts';
import { settlePosition, type SettlementRow, zeroSettled } from './seams.ts';
import {
  type BankTable, cageDepositBody, depositKeyOf, depositKeyParams, findTable, tableOfBank, WITHDRAW_REPLAY_WINDOW_SQL, withdrawKey,
} from '../bank-contract/contract.ts';
import { standUpOnGame } from '../bank-contract/seat-calls.ts';
import { realMoneyOn } from '../bank-contract/switches.ts';
import { describeRoute } from '../http/openapi.ts';

export const depositBody = cageDepositBody;

/** The contracts of installCashRoutes. */
export const cashRoutes = [
  describeRoute({
    method: 'post', path: '/api/deposit', auth: 'jwt', summary: 'Buys into a seat (a cash table) or pays a Sit-and-Go entry, from the cage balance',
    description: 'The idempotency key: the Idempotency-Key header or the body\'s idempotencyKey. A tournament entry also reads seatIndex (nullable).',
    body: depositBody, headers: z.object({ 'idempotency-key': idempotencyKey.optional() }),
    responses: {
      200: '{ status: confirmed, txHash, idempotencyKey, seatIndex, chipBalance, receipt, replay? }', 402: 'insufficient_cage_balance',
      404: 'table_not_found', 409: 'seat_taken / hand_in_progress / table_frozen / ...', 503: 'game_unavailable',
    },
  }),
  describeRoute({
    method: 'get', path: '/api/deposits/:idempotencyKey', auth: 'jwt', summary: 'The caller\'s deposit under its idempotency key', params: depositKeyParams,
    responses: { 200: '{ idempotencyKey, status, txHash, tableId, seatIndex, amount, moneyKind, createdAt, updatedAt, error? }', 404: 'deposit_not_found' },
  }),
  describeRoute({
    method: 'post', path: '/api/withdraw', auth: ['jwt', 'service'], summary: 'Stands up and settles a seat: voluntary (JWT), forced or a tournament payout (x-service-key)',
    body: 'server/cage/cash.ts: { tableId } (JWT); { tableId, forced: true, userId } (x-service-key); { tableId, payoutIntent: { position, amount } } (x-service-key)',
    responses: {
      200: '{ status: confirmed, txHash, destination, amount, idempotencyKey, historyHash, receipt, custodyEntryId?, replay? }',
      400: 'missing_table_id / nothing_to_withdraw / bad_request', 409: 'hand_in_progress / table_frozen / stand_up_not_allowed_in_tournament',
    },
  }),
];

/** The caller's own deposit under its idempotency key (GET /api/deposits/:idempotencyKey). */
function depositJson(r: { ref_id: string; idempotency_key: string; status: string; error: string | null; table_id: string; seat_index: number; amount: bigint; money_kind: string; created_at: Date; updated_at: Date }) {
  return {
    idempotencyKey: r.idempotency_key, status: r.status, txHash: r.ref_id, tableId: r.table_id, seatIndex: r.seat_index,
    amount: r.amount.toString(), moneyKind: r.money_kind, createdAt: r.created_at, updatedAt: r.updated_at,
    ...(r.error ? { error: r.error } : {}),
  };
}

type TableRow = BankTable;

export interface CashDeps {
  pool: pg.Pool;
  log: Logger;
  game: ServiceClient;
  signer: ReceiptSigner;
  jwt: JwtVerifier;
  serviceKey: string | undefined;
}

export function receiptJson(r: StoredReceipt) {
  return {
    id: r.id.toString(), ledgerRefId: r.ledgerRefId, tableId: r.tableId, historyHash: r.historyHash,
    payload: r.payload.toString('base64'), signature: r.signature.toString('hex'), publicKey: r.publicKey.toString('hex'),
    createdAt: r.createdAt,
  };
}

export function installCashRoutes(app: Express, deps: CashDeps) {
  installDepositRoutes(app, deps);
  installWithdrawRoutes(app, deps);
}

// ---- deposit --------------------------------------------------------------------------------

/** The deposit's fields and its key (header, body, or the chain bank's permit hash), or a coded 400. */
function parseDeposit(b: Record<string, unknown>, headerKey: string | undefined, tournament: boolean) {
  if (b.tableId === undefined || b.amount === undefined) throw new ApiError(400, 'missing_required_fields');
  // a tournament's seat is server-assigned: its deposit names the reserved seat or none
  if ((b.seatIndex === undefined || b.seatIndex === null) && !tournament) throw new ApiError(400, 'missing_seat_index');
  const parsed = (tournament ? depositBody.extend({ seatIndex: z.number().int().min(0).max(9).nullish() }) : depositBody)
    .safeParse({ ...b, idempotencyKey: headerKey ?? b.idempotencyKey });
  if (!parsed.success) throw new ApiError(400, 'bad_request', zodIssues(parsed.error));
  const { seatIndex, amount } = parsed.data as { seatIndex: number; amount: bigint };
  // a retried request must find its first attempt: the key is the caller's, never made up here
  const key = parsed.data.idempotencyKey ?? depositKeyOf(b.permit, b.signerAddress, amount);
  if (!key) throw new ApiError(400, 'missing_idempotency_key');
  return { tableId: parsed.data.tableId, seatIndex, amount, key };
}

type Span = Parameters<Parameters<typeof withSpan>[2]>[0];
type DepositIntent = { ref_id: string; status: string; error: string | null; replayed: boolean };

/** A deposit under a key already used: its intent as it stands. */
function replayAnswer(intent: DepositIntent, key: string, span: Span) {
  if (intent.status === 'confirmed') {
    span.setAttribute('deposit.result', 'replay_confirmed');
    return { status: 200, body: { status: 'confirmed', txHash: intent.ref_id, idempotencyKey: key, replay: true } };
  }
  if (intent.status === 'failed') {
    span.setAttribute('deposit.result', 'replay_failed');
    throw new ApiError(409, 'failed', undefined, { status: 'failed', reason: intent.error });
  }
  span.setAttribute('deposit.result', 'replay_pending');
  return { status: 202, body: { status: 'pending', idempotencyKey: key, replay: true } };
}

function installDepositRoutes(app: Express, deps: CashDeps) {
  const { pool } = deps;
  app.post('/api/deposit', deps.jwt.require, async (req, res) => {
    const userId: string = res.locals.claims.sub;
    const b = (req.body ?? {}) as Record<string, unknown>;
    await withSpan('admin.deposit', {
      'deposit.userId': userId, 'deposit.tableId': typeof b.tableId === 'string' ? b.tableId.slice(0, 64) : '',
      confirm_mode: 'cage_immediate', 'auth.linked': 'not_required',
    }, async (span) => {
      try {
        // read once: whether it is a tournament (its deposit needs no seat index) and what it is
        const table = await findTable(pool, b.tableId);
        const d = parseDeposit(b, req.get('idempotency-key'), table?.mode === 'sng');
        span.setAttributes({ 'deposit.amount': d.amount.toString(), 'deposit.idempotency_key': d.key });
        if (!table) throw new ApiError(404, 'table_not_found');
        if (table.bank !== 'cage') throw new ApiError(409, 'not_a_cage_table');
        if (table.money_kind === 'real' && !(await realMoneyOn(pool))) throw new ApiError(403, 'real_money_disabled');
        if (table.mode === 'sng') {
          const answer = await tournamentDeposit(deps, { userId, sid: playerSession(res), tableId: table.table_id, amount: d.amount, key: d.key, body: b });
          span.setAttribute('deposit.result', answer.replay ? 'replay_confirmed' : 'confirmed');
          return void res.json(answer);
        }
        // the buy-in and the seat's funding in one transaction (cage.deposit_to_seat)
        const { rows } = await pool.query<DepositIntent & { seat_index: number | null; chip_balance: string | null }>({
          name: 'cage.deposit_to_seat', text: 'select ref_id, status, error, replayed, seat_index, chip_balance::text from cage.deposit_to_seat($1, $2, $3, $4, $5)',
          values: [playerSession(res), d.key, table.table_id, d.seatIndex, d.amount.toString()],
        });
        const intent = rows[0]!;
        if (intent.replayed) {
          const replay = replayAnswer(intent, d.key, span);
          return void res.status(replay.status).json(replay.body);
        }
        span.setAttribute('deposit.result', 'confirmed');
        deps.log.info({ userId, tableId: table.table_id, seatIndex: d.seatIndex, amount: d.amount.toString() }, 'deposit confirmed');
        res.json({ status: 'confirmed', txHash: intent.ref_id, idempotencyKey: d.key, seatIndex: intent.seat_index, chipBalance: intent.chip_balance });
      } catch (err) {
        if (!span.isRecording() || !(err instanceof Error)) throw err;
        span.setAttribute('deposit.result', errorCode(err) ?? 'failed');
        throw err;
      }
    });
  });

  app.get('/api/deposits/:idempotencyKey', deps.jwt.require, async (req, res) => {
    const key = idempotencyKey.safeParse(req.params.idempotencyKey);
    if (!key.success) throw new ApiError(400, 'bad_request', zodIssues(key.error));
    // the key is the caller's own namespace: another user's deposit under the same key is not found
    const { rows } = await pool.query(
      `select ref_id, idempotency_key, status, error, table_id, seat_index, amount, money_kind::text as money_kind, created_at, updated_at
         from cage.deposit_states where ref_id = cage.deposit_ref($1, $2)`,
      [res.locals.claims.sub, key.data],
    );
    if (!rows[0]) throw new ApiError(404, 'deposit_not_found');
    res.json(depositJson(rows[0]));
  });
}

// ---- withdraw, forced withdraw --------------------------------------------------------

/**
 * Stands the player up on the game, writes the terminal row and its receipt, zeroes the seat. The
 * stand-up carries its authority: the player's grant (`sid`) for a cash-out, else the sit-out
 * timeout, which the game's SQL accepts only for an idle player. A stack found empty settles as a bust.
 */
async function settleSeatOut(deps: CashDeps, userId: string, tid: string, mode: 'cash_out' | 'custody', sid: string | null = null) {
  const up = await standUpOnGame(deps.game, tid, mode === 'cash_out' ? { sid } : { userId, reason: 'idle' });
  if (!up.ok) {
    const code = up.body.error ?? 'stand_up_refused';
    if (code === 'not_at_table') {
      const replay = await recentSettlement(deps, userId, tid);
      if (replay) return replay;
    }
    throw new ApiError(up.status, code);
  }
  const chipAmount = BigInt(up.body.chipAmount);
  const settlement = chipAmount === 0n ? 'bust' : mode;
  const row = await settlePosition(deps.pool, deps.signer, {
    userId, tableId: tid, playerId: up.body.playerId, chipAmount, historyHash: up.body.historyHash,
    idempotencyKey: withdrawKey(userId, tid, up.body.historyHash, chipAmount), settlement, forced: mode === 'custody',
  });
  return finishSettlement(deps, userId, tid, row);
}

async function finishSettlement(deps: CashDeps, userId: string, tid: string, row: SettlementRow) {
  const settled = await zeroSettled(deps.pool, deps.game, row);
  if (!settled) deps.log.warn({ userId, tableId: tid, key: row.idempotency_key }, 'settlement not delivered to the game yet; the reconciler will redeliver');
  if (!row.replayed) deps.log.info({ userId, tableId: tid, settlement: row.settlement, amount: row.amount.toString() }, 'position settled');
  return { row, receipt: row.receipt, settled };
}

/** A repeated withdraw after the seat was settled: the last settlement, within the contract's replay window. */
async function recentSettlement(deps: CashDeps, userId: string, tid: string) {
  const { rows } = await deps.pool.query(
    `select w.idempotency_key, w.ledger_ref_id, w.amount, w.settlement, w.custody_entry_id, w.history_hash,
            t.money_kind, w.player_id, true as replayed, w.settled_at is not null as zeroed,
            r.id as receipt_id, r.payload, r.signature, r.public_key, r.created_at as receipt_created_at
       from cage.withdrawal_records w join game.table_records t on t.table_id = w.table_id
       left join cage.receipt_records r on r.ledger_ref_id = w.ledger_ref_id
      where w.user_id = $1 and w.table_id = $2 and w.created_at > now() - ${WITHDRAW_REPLAY_WINDOW_SQL}
      order by w.created_at desc, w.player_id desc limit 1`,
    [userId, tid],
  );
  const r = rows[0];
  // the last sitting ended in a bust (its receipt may still be pending: the cage signs it after the
  // hand's end wrote it): there is no withdrawal to replay
  if (!r || r.settlement === 'bust' || r.receipt_id === null) return undefined;
  const receipt: StoredReceipt = {
    id: r.receipt_id, ledgerRefId: r.ledger_ref_id, userId, tableId: tid, historyHash: r.history_hash, payload: r.payload,
    signature: r.signature, publicKey: r.public_key, createdAt: r.receipt_created_at, replayed: true,
  };
  return finishSettlement(deps, userId, tid, { ...r, receipt });
}

/** Who withdraws: the JWT's user (and its grant), or (forced: the service key and `forced: true`) the body's userId. */
async function withdrawer(deps: CashDeps, req: Request, res: Response, b: Record<string, unknown>): Promise<{ userId: string; forced: boolean; sid: string | null }> {
  // `forced` present (and not false) selects the forced branch, where it must be exactly true
  const forced = b.forced !== undefined && b.forced !== false;
  if (!forced) {
    await new Promise<void>((resolve, reject) => deps.jwt.require(req, res, (err?: unknown) => (err ? reject(err) : resolve())));
    return { userId: res.locals.claims.sub, forced, sid: playerSession(res) };
  }
  if (!secretMatches(req.get('x-service-key'), deps.serviceKey)) throw new ApiError(401, 'forced_withdraw_requires_service_key');
  if (b.forced !== true) throw new ApiError(400, 'bad_request', [{ path: ['forced'], message: 'must be exactly true', code: 'invalid_value' }]);
  const parsed = z.uuid().safeParse(b.userId);
  if (!parsed.success) throw new ApiError(400, 'bad_request', [{ path: ['userId'], message: 'the user id (uuid) whose seat to clear', code: 'invalid_format' }]);
  return { userId: parsed.data, forced, sid: null };
}

/** The table a withdrawal names, refused when it cannot be withdrawn from here. */
async function withdrawTable(deps: CashDeps, b: Record<string, unknown>): Promise<TableRow> {
  if (b.tableId === undefined || b.tableId === null || b.tableId === '') throw new ApiError(400, 'missing_table_id');
  const tid = tableId.safeParse(b.tableId);
  if (!tid.success) throw new ApiError(400, 'bad_request', zodIssues(tid.error));
  // the chain bank's table is refused before the seat is stood up (tableOfBank)
  const table = await tableOfBank(deps.pool, tid.data, 'cage');
  // a tournament's money leaves by its payouts (payoutIntent) or, while it registers, the refund
  if (table.mode === 'sng') throw new ApiError(409, 'stand_up_not_allowed_in_tournament');
  if (table.status === 'frozen') throw new ApiError(409, 'table_frozen');
  return table;
}

function installWithdrawRoutes(app: Express, deps: CashDeps) {
  app.post('/api/withdraw', async (req, res) => {
    const b = (req.body ?? {}) as Record<string, unknown>;
    if (b.payoutIntent !== undefined) {
      await withSpan('admin.withdraw', { 'withdraw.tableId': typeof b.tableId === 'string' ? b.tableId.slice(0, 64) : '', 'withdraw.payout_intent': true }, async (span) => {
        const answer = await payoutWithdraw(deps, req, b).catch((err: unknown) => {
          span.setAttribute('withdraw.result', errorCode(err as Error) ?? 'failed');
          throw err;
        });
        span.setAttributes({ 'withdraw.result': answer.replay ? 'replay_confirmed' : 'confirmed', 'withdraw.tx_hash': answer.txHash, 'withdraw.userId': answer.userId });
        res.json(answer);
      });
      return;
    }
    const { userId, forced, sid } = await withdrawer(deps, req, res, b);
    await withSpan('admin.withdraw', {
      'withdraw.userId': userId, 'withdraw.tableId': typeof b.tableId === 'string' ? b.tableId.slice(0, 64) : '',
      'withdraw.forced': forced, 'auth.linked': forced ? 'skipped_forced' : 'not_required',
    }, async (span) => {
      try {
        const table = await withdrawTable(deps, b);
        const { row, receipt } = await settleSeatOut(deps, userId, table.table_id, forced ? 'custody' : 'cash_out', sid);
        span.setAttributes({
          'withdraw.table_id': table.table_id, 'withdraw.player_id': row.player_id.toString(), 'withdraw.chip_amount': row.amount.toString(),
          'withdraw.history_hash': row.history_hash, 'withdraw.idempotency_key': row.idempotency_key, 'withdraw.tx_hash': row.ledger_ref_id,
        });
        if (row.settlement === 'bust') {
          span.setAttribute('withdraw.result', 'nothing_to_withdraw');
          throw new ApiError(400, 'nothing_to_withdraw', undefined, { receipt: receiptJson(receipt) });
        }
        const destination = row.settlement === 'custody' ? `custody:${row.custody_entry_id}` : 'cage';
        span.setAttributes({ 'withdraw.destination': destination, 'withdraw.result': row.replayed ? 'replay_confirmed' : 'confirmed' });
        res.json({
          status: 'confirmed', txHash: row.ledger_ref_id, destination, amount: Number(row.amount), idempotencyKey: row.idempotency_key,
          historyHash: row.history_hash, receipt: receiptJson(receipt),
          ...(row.custody_entry_id ? { custodyEntryId: row.custody_entry_id.toString() } : {}),
          ...(row.replayed ? { replay: true } : {}),
        });
      } catch (err) {
        if (err instanceof Error && !(err instanceof ApiError && err.code === 'nothing_to_withdraw')) {
          span.setAttribute('withdraw.result', errorCode(err) ?? 'failed');
        }
        throw err;
      }
    });
  });
}
