// Gas tanks (spec: Cage -> Gas): chips between a player's cage balance and their gas tank.
//   GET  /api/gas-tank       the caller's tanks and recent withdrawals (JWT)
//   POST /api/gas/deposit    cage balance -> gas tank (JWT, Idempotency-Key)
//   POST /api/gas/withdraw   gas tank -> cage balance: reserved first, then delivered, or refunded
//                            when the delivery fails (JWT, Idempotency-Key)
// Amounts are micro-units: 1 chip = 1,000,000 micro-units (the chip token's base units); the
// journal moves whole chips, so an amount must be a whole number of chips in micro-units. The rules
// are SQL (db/functions/cage/87_gas_and_gate.sql); a withdrawal left reserved by a cage that
// stopped mid-request is refunded by the worker (tasks/cage_reconcile_gas.ts).
import type { Express, Request } from 'express';
import type pg from 'pg';
import type { Logger } from 'pino';
import { z } from 'zod';
import { ApiError, zodIssues } from '../http/errors.ts';
import { playerSession, type JwtVerifier } from '../http/jwt.ts';
import { withSpan } from '../telemetry/index.ts';
import { describeRoute } from '../http/openapi.ts';
import { BASE_UNITS_PER_CHIP } from '../units.generated.ts';
import { gasTanksOf, gasWithdrawalsOf } from './queries.ts';

/** Gas amounts are micro-units of a chip: its base units (server/units.generated.ts). */
export const MICRO_PER_CHIP = BASE_UNITS_PER_CHIP;

type GasDeps = { pool: pg.Pool; log: Logger; jwt: JwtVerifier };

const micro = z.union([z.string().regex(/^[1-9][0-9]{0,24}$/), z.number().int().positive().max(Number.MAX_SAFE_INTEGER)])
  .transform((v) => BigInt(v))
  .refine((v) => v % MICRO_PER_CHIP === 0n, { message: 'a whole number of chips in micro-units (a multiple of 1000000)' });
export const gasBody = z.object({ amountMicro: micro, moneyKind: z.enum(['play', 'real']).default('play') }).strict();
const idempotencyKey = z.string().regex(/^[\x21-\x7e]{1,128}$/, '1..128 printable characters');

function request(req: Request) {
  const parsed = gasBody.safeParse(req.body ?? {});
  if (!parsed.success) throw new ApiError(400, 'bad_request', zodIssues(parsed.error));
  const key = idempotencyKey.safeParse(req.get('idempotency-key'));
  if (!key.success) throw new ApiError(400, 'missing_idempotency_key', [{ path: ['Idempotency-Key'], message: 'the Idempotency-Key header: 1..128 printable characters', code: 'invalid_type' }]);
  const chips = parsed.data.amountMicro / MICRO_PER_CHIP;
  return { chips, moneyKind: parsed.data.moneyKind, key: key.data };
}

const asMicro = (chips: bigint | string | number) => (BigInt(chips) * MICRO_PER_CHIP).toString();

interface WithdrawalRow { ref_id: string; status: string; chips: bigint; money_kind: string; error: string | null; replayed: boolean }
const withdrawalJson = (w: WithdrawalRow) => ({
  refId: w.ref_id, status: w.status, amountMicro: asMicro(w.chips), moneyKind: w.money_kind, ...(w.error ? { error: w.error } : {}),
});

const gasHeaders = z.object({ 'idempotency-key': idempotencyKey });

/** The contracts of installGasRoutes: amounts in micro-chips. */
export const gasRoutes = [
  describeRoute({
    method: 'get', path: '/api/gas-tank', auth: 'jwt', summary: 'The caller\'s gas tanks and withdrawals',
    responses: { 200: '{ unit: micro, microPerChip, tanks: [{ moneyKind, balanceMicro }], withdrawals }' },
  }),
  describeRoute({
    method: 'post', path: '/api/gas/deposit', auth: 'jwt', summary: 'Moves chips from the cage balance into the gas tank', body: gasBody, headers: gasHeaders,
    responses: { 200: '{ status: confirmed, refId, amountMicro, moneyKind, tankMicro, balance, replay? }', 400: 'missing_idempotency_key / bad_request', 402: 'insufficient_cage_balance' },
  }),
  describeRoute({
    method: 'post', path: '/api/gas/withdraw', auth: 'jwt', summary: 'Moves chips from the gas tank back to the cage balance', body: gasBody, headers: gasHeaders,
    responses: { 200: '{ refId, status, amountMicro, moneyKind, ... }', 400: 'missing_idempotency_key / bad_request', 402: 'insufficient_gas' },
  }),
];

export function installGasRoutes(app: Express, deps: GasDeps) {
  const { pool, log, jwt } = deps;

  app.get('/api/gas-tank', jwt.require, async (_req, res) => {
    const userId: string = res.locals.claims.sub;
    const [tanks, withdrawals] = await Promise.all([
      gasTanksOf(pool, userId),
      gasWithdrawalsOf(pool, userId),
    ]);
    const byKind: Record<string, string> = { play: '0', real: '0' };
    for (const t of tanks) byKind[t.money_kind] = asMicro(t.balance);
    res.json({
      unit: 'micro', microPerChip: Number(MICRO_PER_CHIP),
      tanks: Object.entries(byKind).map(([moneyKind, balanceMicro]) => ({ moneyKind, balanceMicro })),
      withdrawals: withdrawals.map((w) => ({ ...withdrawalJson(w), createdAt: w.created_at })),
    });
  });

  app.post('/api/gas/deposit', jwt.require, async (req, res) => {
    const r = request(req);
    await withSpan('cage.gas_deposit', { 'gas.money_kind': r.moneyKind, 'gas.amount_micro': asMicro(r.chips) }, async (span) => {
      const { rows } = await pool.query<{ ref_id: string; status: string; tank: bigint; balance: bigint }>(
        'select ref_id, status, tank, balance from cage.gas_deposit($1, $2, $3, $4)', [playerSession(res), r.key, r.chips.toString(), r.moneyKind],
      );
      const d = rows[0]!;
      span.setAttribute('gas.result', d.status === 'replayed' ? 'replay_confirmed' : 'confirmed');
      if (d.status === 'created') log.info({ userId: res.locals.claims.sub, chips: r.chips.toString(), moneyKind: r.moneyKind }, 'gas deposited');
      res.json({
        status: 'confirmed', refId: d.ref_id, amountMicro: asMicro(r.chips), moneyKind: r.moneyKind,
        tankMicro: asMicro(d.tank), balance: Number(d.balance), ...(d.status === 'replayed' ? { replay: true } : {}),
      });
    });
  });

  app.post('/api/gas/withdraw', jwt.require, async (req, res) => {
    const r = request(req);
    await withSpan('cage.gas_withdraw', { 'gas.money_kind': r.moneyKind, 'gas.amount_micro': asMicro(r.chips) }, async (span) => {
      // 1. reserve (the tank cannot go below zero: insufficient_gas); a replayed key answers as it stands
      const reserved = (await pool.query<WithdrawalRow>(
        'select ref_id, status, chips, money_kind, error, replayed from cage.reserve_gas_withdrawal($1, $2, $3, $4)',
        [playerSession(res), r.key, r.chips.toString(), r.moneyKind],
      )).rows[0]!;
      let w = reserved;
      if (w.status === 'reserved') {
        // 2. deliver; on any failure 3. refund, so a reservation never outlives its request
        try {
          w = (await pool.query<WithdrawalRow>('select ref_id, status, chips, money_kind, error, replayed from cage.deliver_gas_withdrawal($1)', [w.ref_id])).rows[0]!;
        } catch (err) {
          log.warn({ refId: w.ref_id, err: (err as Error).message }, 'gas withdrawal not delivered: refunding');
          w = (await pool.query<WithdrawalRow>('select ref_id, status, chips, money_kind, error, replayed from cage.refund_gas_withdrawal($1, $2)', [
            w.ref_id, (err as { code?: string }).code === '55P03' ? 'delivery_timed_out' : 'delivery_failed',
          ])).rows[0]!;
        }
      }
      span.setAttribute('gas.result', w.status === 'delivered' ? (reserved.replayed ? 'replay_confirmed' : 'confirmed') : w.status);
      if (w.status === 'refunded') {
        throw new ApiError(503, 'gas_withdraw_failed', undefined, { withdrawal: withdrawalJson(w), refunded: true, ...(reserved.replayed ? { replay: true } : {}) });
      }
      if (w.status !== 'delivered') throw new ApiError(409, 'gas_withdraw_in_progress', undefined, { withdrawal: withdrawalJson(w) });
      if (!reserved.replayed) log.info({ userId: res.locals.claims.sub, chips: r.chips.toString(), moneyKind: r.moneyKind }, 'gas withdrawn');
      res.json({ ...withdrawalJson(w), status: 'confirmed', ...(reserved.replayed ? { replay: true } : {}) });
    });
  });
}
