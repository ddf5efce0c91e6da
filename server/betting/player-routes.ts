// The player's betting routes, mounted by the cage role (spec: "Cage", `/api/betting/*`; docs/
// architecture.md, "A bet"). Betting has one boundary (issue 32): each money step is ONE SQL
// transaction across the cage and betting schemas, so no route calls another process and nothing
// is left for a compensation or a reconciler:
//   POST /api/betting/stake    the player's JWT: { marketId, runnerUserId, amount, idempotencyKey? }
//                              (or an Idempotency-Key header): cage.open_bet_stake writes the
//                              bet_stake debit and the bet together (the spec's notify is the bet's
//                              insert; a refused one rolls the debit back with it). Replay-once per key.
//   POST /api/betting/unbet    the player's JWT: { stakeRef }: betting.remove_bet takes the bet out
//                              of the pool first, then credits the stake back (bet_refund), together.
//   POST /api/betting/claim    the player's JWT: { marketId }: cage.claim_bet_payout brings the
//                              market up to date (the betting computation, after the audit mark of
//                              the tournament's hands) and credits what it recorded (bet_payout, ref
//                              bet-claim:{marketId}:{userId}), once.
//   POST /api/betting/markets  market create: a no-op that answers success (markets open with their
//                              tournaments).
//   GET  /api/betting/markets?tableId=, /api/betting/markets/:marketId  the market, brought up to date
//   GET  /api/betting/bets     the player's JWT: their stakes, newest first.
import type { Express, Response } from 'express';
import type pg from 'pg';
import type { Logger } from 'pino';
import { z } from 'zod';
import { ApiError } from '../http/errors.ts';
import { chips, idempotencyKey, tableId } from '../http/schemas.ts';
import { playerSession, type JwtVerifier } from '../http/jwt.ts';
import { describeRoute } from '../http/openapi.ts';
import { marketJson } from './markets.ts';
import { claimPayout, marketById, openStake, removeBet, stakesOf, stakeStatus, syncedMarketOfTable, type StakeRow } from './sql.ts';
import { marketId, parse, stakeRef } from './schemas.ts';

export interface BettingPlayerDeps {
  pool: pg.Pool;
  log: Logger;
  jwt: JwtVerifier;
}

export const stakeBody = z.object({
  marketId,
  runnerUserId: z.uuid(),
  amount: chips,
  idempotencyKey: idempotencyKey.optional(),
}).strict();
export const marketsQuery = z.object({ tableId }).strict();
export const unbetBody = z.object({ stakeRef }).strict();
export const betClaimBody = z.object({ marketId }).strict();

/** The player's token grant, or 401 session_required (SQL would refuse it too). */
function sessionOf(res: Response): string {
  const sid = playerSession(res);
  if (!sid) throw new ApiError(401, 'session_required');
  return sid;
}

function stakeJson(s: StakeRow, key: string) {
  return {
    status: s.status, stakeRef: s.ref_id, txHash: s.ref_id, idempotencyKey: key, marketId: s.market_id,
    runnerUserId: s.runner_user_id, amount: s.amount.toString(), moneyKind: s.money_kind, ...(s.replayed ? { replay: true } : {}),
  };
}

/** The contracts of installBettingPlayerRoutes: the player's side of betting, on the cage. */
export const bettingPlayerRoutes = [
  describeRoute({
    method: 'post', path: '/api/betting/markets', auth: 'none', summary: 'A no-op: markets open with their tournaments',
    responses: { 200: '{ ok, status: noop, detail }' },
  }),
  describeRoute({
    method: 'get', path: '/api/betting/markets', auth: 'none', summary: 'A tournament\'s market, brought up to date', query: marketsQuery,
    responses: { 200: '{ tableId, markets }' },
  }),
  describeRoute({
    method: 'get', path: '/api/betting/markets/:marketId', auth: 'none', summary: 'A market, brought up to date', params: z.object({ marketId }),
    responses: { 200: 'the market', 404: 'market_not_found' },
  }),
  describeRoute({
    method: 'get', path: '/api/betting/bets', auth: 'jwt', summary: 'The caller\'s bets', responses: { 200: '{ bets: [...] }' },
  }),
  describeRoute({
    method: 'post', path: '/api/betting/stake', auth: 'jwt', summary: 'Stakes chips on a runner: the debit and the bet in one transaction (the key: Idempotency-Key header or idempotencyKey)',
    body: stakeBody, headers: z.object({ 'idempotency-key': z.string().optional() }),
    responses: { 200: 'the stake, confirmed', 400: 'missing_idempotency_key / bad_request', 402: 'insufficient_cage_balance', 409: 'stake_compensated (a stake before issue 32) / market_closed' },
  }),
  describeRoute({
    method: 'post', path: '/api/betting/unbet', auth: 'jwt', summary: 'Takes a stake back while the market is open (one transaction)', body: unbetBody,
    responses: { 200: '{ status: unbet, stakeRef, txHash, amount, moneyKind, replay? }', 404: 'stake_not_found', 409: 'stake_compensated / market_closed' },
  }),
  describeRoute({
    method: 'post', path: '/api/betting/claim', auth: 'jwt', summary: 'Claims a settled market\'s payout', body: betClaimBody,
    responses: { 200: '{ status: confirmed, txHash, marketId, amount, moneyKind, replay? }' },
  }),
];

export function installBettingPlayerRoutes(app: Express, deps: BettingPlayerDeps) {
  installBettingReads(app, deps);
  installStake(app, deps);
  installUnbetAndClaim(app, deps);
}

/** Market create (a no-op), the market reads, the player's own stakes. */
function installBettingReads(app: Express, deps: BettingPlayerDeps) {
  const { pool } = deps;
  app.post('/api/betting/markets', (_req, res) => {
    res.json({ ok: true, status: 'noop', detail: 'markets open with their tournaments' });
  });

  app.get('/api/betting/markets', async (req, res) => {
    const q = parse(marketsQuery, req.query);
    const market = await syncedMarketOfTable(pool, q.tableId);
    res.json({ tableId: q.tableId, markets: market ? [await marketJson(pool, market)] : [] });
  });

  app.get('/api/betting/markets/:marketId', async (req, res) => {
    const found = await marketById(pool, parse(marketId, req.params.marketId));
    if (!found) throw new ApiError(404, 'market_not_found');
    res.json(await marketJson(pool, (await syncedMarketOfTable(pool, found.table_id)) ?? found));
  });

  app.get('/api/betting/bets', deps.jwt.require, async (_req, res) => {
    const rows = await stakesOf(pool, res.locals.claims.sub);
    res.json({
      bets: rows.map((r) => ({
        stakeRef: r.ref_id, idempotencyKey: r.idempotency_key, marketId: r.market_id, runnerUserId: r.runner_user_id,
        amount: r.amount.toString(), moneyKind: r.money_kind, status: r.status, refundTxHash: r.refund_ref_id,
        createdAt: r.created_at, updatedAt: r.updated_at, ...(r.error ? { error: r.error } : {}),
      })),
    });
  });
}

function installStake(app: Express, deps: BettingPlayerDeps) {
  const { pool, log } = deps;
  app.post('/api/betting/stake', deps.jwt.require, async (req, res) => {
    const b = (req.body ?? {}) as Record<string, unknown>;
    const headerKey = req.get('idempotency-key');
    const d = parse(stakeBody, headerKey === undefined ? b : { ...b, idempotencyKey: headerKey });
    if (!d.idempotencyKey) throw new ApiError(400, 'missing_idempotency_key');
    const stake = await openStake(pool, { sid: sessionOf(res), key: d.idempotencyKey, marketId: d.marketId, runnerUserId: d.runnerUserId, amount: d.amount });
    // a stake compensated before issue 32 (its notify failed then) replays as it ended
    if (stake.status === 'compensated') throw new ApiError(409, 'stake_compensated', undefined, { ...stakeJson(stake, d.idempotencyKey), reason: stake.error });
    if (!stake.replayed) log.info({ stakeRef: stake.ref_id, marketId: stake.market_id, amount: stake.amount.toString() }, 'bet staked');
    res.json(stakeJson(stake, d.idempotencyKey));
  });
}

function installUnbetAndClaim(app: Express, deps: BettingPlayerDeps) {
  const { pool, log } = deps;
  app.post('/api/betting/unbet', deps.jwt.require, async (req, res) => {
    const b = parse(unbetBody, req.body ?? {});
    const sid = sessionOf(res);
    // the caller's own stake, or not found (betting.remove_bet checks the grant again, under the stake's lock)
    const status = await stakeStatus(pool, b.stakeRef, res.locals.claims.sub);
    if (!status) throw new ApiError(404, 'stake_not_found');
    if (status === 'compensated') throw new ApiError(409, 'stake_compensated');
    const r = await removeBet(pool, sid, b.stakeRef);
    if (!r.replayed) log.info({ stakeRef: r.stake_ref, amount: r.amount.toString() }, 'bet taken back');
    res.json({ status: 'unbet', stakeRef: r.stake_ref, txHash: r.refund_ref_id, amount: r.amount.toString(), moneyKind: r.money_kind, ...(r.replayed ? { replay: true } : {}) });
  });

  app.post('/api/betting/claim', deps.jwt.require, async (req, res) => {
    const b = parse(betClaimBody, req.body ?? {});
    // the market brought up to date and the recorded payout credited, in SQL: never an amount from a request
    const r = await claimPayout(pool, sessionOf(res), b.marketId);
    if (!r.replayed) log.info({ marketId: r.market_id, userId: res.locals.claims.sub, amount: r.amount.toString() }, 'bet payout claimed');
    res.json({ status: 'confirmed', txHash: r.ref_id, marketId: r.market_id, amount: r.amount.toString(), moneyKind: r.money_kind, ...(r.replayed ? { replay: true } : {}) });
  });
}
