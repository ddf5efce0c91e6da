// The game role's side of the cage's seams: funding a seat (and cancelling a funding the cage
// could not confirm), standing a player up, and zeroing a settled seat. Every route is
// `x-service-key` only; the rules live in db/functions/game/20_seats.sql. A room hears of a seat
// these routes change from the functions' NOTIFY (`game_seats`, sent at commit), not from here.
import type { Express } from 'express';
import type pg from 'pg';
import type { Logger } from 'pino';
import { z } from 'zod';
import { requireServiceKey } from '../../http/service-key.ts';
import { chips, positionId, tableId } from '../../http/schemas.ts';
import { describeRoute } from '../../http/openapi.ts';
import { verifyChainDeposit } from './chain-deposit.ts';

export const creditBody = z.object({
  creditKey: z.string().min(1).max(200),
  tableId,
  userId: z.uuid(),
  seatIndex: z.number().int().min(0).max(9),
  amount: chips,
});
export const cancelBody = creditBody.omit({ seatIndex: true });
// A stand-up names its authority: the player's own grant (`sid`, voluntary), or a bust or the
// sit-out timeout of a named user, which SQL accepts only for a zero stack or a player sat out
// for the house's idle time.
export const standUpBody = z.union([
  z.strictObject({ tableId, sid: z.uuid() }),
  z.strictObject({ tableId, userId: z.uuid(), reason: z.enum(['bust', 'idle']) }),
]);
const STAND_UP_SQL = {
  voluntary: 'select player_id, seat_index, chip_balance, history_hash, money_kind from game.stand_up($1, $2)',
  bust: 'select player_id, seat_index, chip_balance, history_hash, money_kind from game.stand_up_busted($1, $2)',
  idle: 'select player_id, seat_index, chip_balance, history_hash, money_kind from game.stand_up_idle($1, $2)',
} as const;
export const settleBody = z.object({
  playerId: positionId,
  ledgerRefId: z.string().min(1).max(200),
  settlement: z.enum(['cash_out', 'custody', 'bust']),
});

/** The contracts of installSeatRoutes: the cage's seams, service key only. */
export const seatRoutes = [
  describeRoute({
    method: 'post', path: '/internal/credit-chips', auth: 'service', summary: 'Funds a seat (idempotent by creditKey)', body: creditBody,
    responses: { 200: '{ ok, status, playerId, seatIndex, chipBalance, historyHash }', 409: 'seat_taken / hand_in_progress / ...' },
  }),
  describeRoute({
    method: 'post', path: '/internal/credit-chips/cancel', auth: 'service', summary: 'Cancels a funding the cage could not confirm', body: cancelBody,
    responses: { 200: '{ ok, status }' },
  }),
  describeRoute({
    method: 'post', path: '/internal/stand-up', auth: 'service', summary: 'Stands a player up: voluntary (their sid), or a bust or the sit-out timeout', body: standUpBody,
    responses: { 200: '{ ok, playerId, seatIndex, chipAmount, historyHash, moneyKind }', 404: 'not_seated', 409: 'hand_in_progress' },
  }),
  describeRoute({
    method: 'post', path: '/internal/settle-withdrawal', auth: 'service', summary: 'Zeroes a settled seat', body: settleBody,
    responses: { 200: '{ ok, status, historyHash }' },
  }),
];

export function installSeatRoutes(
  app: Express,
  deps: { pool: pg.Pool; log: Logger; serviceKey: string | undefined; chainRpcUrl?: string },
) {
  const { pool, log } = deps;
  const service = requireServiceKey(deps.serviceKey);

  app.post('/internal/credit-chips', service, async (req, res) => {
    const b = creditBody.parse(req.body ?? {});
    // a chain-bank deposit is read back from the chain by this role before it funds anything
    await verifyChainDeposit(pool, deps.chainRpcUrl, b.creditKey);
    const { rows } = await pool.query(
      'select player_id, seat_index, chip_balance, history_hash, status from game.credit_seat($1, $2, $3, $4, $5)',
      [b.creditKey, b.tableId, b.userId, b.seatIndex, b.amount.toString()],
    );
    const seat = rows[0];
    if (seat.status === 'credited') {
      log.info({ tableId: b.tableId, userId: b.userId, seatIndex: seat.seat_index, amount: b.amount.toString() }, 'seat funded');
    }
    res.json({
      ok: true, status: seat.status, playerId: seat.player_id.toString(), seatIndex: seat.seat_index,
      chipBalance: seat.chip_balance.toString(), historyHash: seat.history_hash,
    });
  });

  app.post('/internal/credit-chips/cancel', service, async (req, res) => {
    const b = cancelBody.parse(req.body ?? {});
    const { rows } = await pool.query<{ status: string }>('select game.cancel_credit($1, $2, $3, $4) as status', [
      b.creditKey, b.tableId, b.userId, b.amount.toString(),
    ]);
    log.warn({ tableId: b.tableId, userId: b.userId, creditKey: b.creditKey, status: rows[0]!.status }, 'seat funding cancelled by the cage');
    res.json({ ok: true, status: rows[0]!.status });
  });

  app.post('/internal/stand-up', service, async (req, res) => {
    const b = standUpBody.parse(req.body ?? {});
    const { rows } = 'sid' in b
      ? await pool.query(STAND_UP_SQL.voluntary, [b.tableId, b.sid])
      : await pool.query(STAND_UP_SQL[b.reason], [b.tableId, b.userId]);
    const p = rows[0];
    res.json({
      ok: true, playerId: p.player_id.toString(), seatIndex: p.seat_index, chipAmount: p.chip_balance.toString(),
      historyHash: p.history_hash, moneyKind: p.money_kind,
    });
  });

  app.post('/internal/settle-withdrawal', service, async (req, res) => {
    const b = settleBody.parse(req.body ?? {});
    const { rows } = await pool.query('select player_id, history_hash, status from game.settle_seat($1, $2, $3)', [
      b.playerId, b.ledgerRefId, b.settlement,
    ]);
    if (rows[0].status === 'closed') {
      log.info({ playerId: b.playerId, settlement: b.settlement }, 'seat settled and zeroed');
    }
    res.json({ ok: true, status: rows[0].status, historyHash: rows[0].history_hash });
  });
}
