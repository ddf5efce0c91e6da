// The betting service's HTTP routes (its own role, BETTING_PORT). Public reads for a wallet app; the
// internal ones take the service key (the bettor's token grant, sid, rides in the body where SQL acts
// for the bettor). The cage calls none of them since issue 32 (betting has one boundary: a stake, an
// unbet and a claim are each one SQL transaction across the two schemas, server/betting/player-routes.ts);
// they stay for the service's own callers:
//   GET  /api/markets?tableId=       the tournament's market (brought up to date first), pools, odds
//   GET  /api/markets/:marketId      one market
//   POST /internal/bets              { stakeRef }: the bet of a cage stake (written with its debit)
//   GET  /internal/bets/:stakeRef    the bet of a stake, or 404 bet_not_found
//   POST /internal/unbets            { stakeRef, sid }: takes the bettor's bet back (market open) and
//                                    credits the stake back, in one transaction (betting.remove_bet)
//   POST /internal/claims            { marketId, sid }: what the bettor may claim (market settled/void)
import type { Express } from 'express';
import type pg from 'pg';
import type { Logger } from 'pino';
import { z } from 'zod';
import { ApiError } from '../http/errors.ts';
import { requireServiceKey } from '../http/service-key.ts';
import { tableId } from '../http/schemas.ts';
import { marketJson } from './markets.ts';
import { betRecord, claimQuote, marketById, recordedBet, removeBet, syncedMarketOfTable } from './sql.ts';
import { marketId, parse, sid, stakeRef } from './schemas.ts';
import { describeRoute } from '../http/openapi.ts';

export const bettingMarketsQuery = z.object({ tableId }).strict();
export const betBody = z.object({ stakeRef }).strict();
export const unbetServiceBody = z.object({ stakeRef, sid }).strict();
export const claimQuoteBody = z.object({ marketId, sid }).strict();

/** The contracts of installBettingRoutes: public reads, and the cage's calls (x-service-key). */
export const bettingRoutes = [
  describeRoute({
    method: 'get', path: '/api/markets', auth: 'none', summary: 'A tournament\'s market, brought up to date', query: bettingMarketsQuery,
    responses: { 200: '{ tableId, markets }' },
  }),
  describeRoute({
    method: 'get', path: '/api/markets/:marketId', auth: 'none', summary: 'A market, brought up to date', params: z.object({ marketId }),
    responses: { 200: 'the market', 404: 'market_not_found' },
  }),
  describeRoute({
    method: 'post', path: '/internal/bets', auth: 'service', summary: 'The bet of a stake the cage took (written with its debit)', body: betBody,
    responses: { 200: '{ status: recorded, stakeRef, marketId, userId, runnerUserId, amount, replay? }' },
  }),
  describeRoute({
    method: 'get', path: '/internal/bets/:stakeRef', auth: 'service', summary: 'A recorded bet', params: z.object({ stakeRef }),
    responses: { 200: '{ stakeRef, marketId, amount, status }', 404: 'bet_not_found' },
  }),
  describeRoute({
    method: 'post', path: '/internal/unbets', auth: 'service', summary: 'Takes a bet back and credits its stake (the bettor\'s grant), one transaction', body: unbetServiceBody,
    responses: { 200: '{ status: unbet, stakeRef, marketId, amount, replay? }' },
  }),
  describeRoute({
    method: 'post', path: '/internal/claims', auth: 'service', summary: 'What a bettor may claim of a settled market', body: claimQuoteBody,
    responses: { 200: '{ marketId, userId, amount, marketStatus }' },
  }),
];

export function installBettingRoutes(app: Express, deps: { pool: pg.Pool; log: Logger; serviceKey: string | undefined }) {
  const { pool, log } = deps;
  const service = requireServiceKey(deps.serviceKey);

  app.get('/api/markets', async (req, res) => {
    const q = parse(bettingMarketsQuery, req.query);
    const market = await syncedMarketOfTable(pool, q.tableId);
    res.json({ tableId: q.tableId, markets: market ? [await marketJson(pool, market)] : [] });
  });

  app.get('/api/markets/:marketId', async (req, res) => {
    const id = parse(marketId, req.params.marketId);
    const found = await marketById(pool, id);
    if (!found) throw new ApiError(404, 'market_not_found');
    const market = (await syncedMarketOfTable(pool, found.table_id)) ?? found;
    res.json(await marketJson(pool, market));
  });

  app.post('/internal/bets', service, async (req, res) => {
    const b = parse(betBody, req.body ?? {});
    const r = await recordedBet(pool, b.stakeRef);
    res.json({
      status: 'recorded', stakeRef: r.stake_ref, marketId: r.market_id, userId: r.user_id, runnerUserId: r.runner_user_id,
      amount: r.amount.toString(), ...(r.replayed ? { replay: true } : {}),
    });
  });

  app.get('/internal/bets/:stakeRef', service, async (req, res) => {
    const ref = parse(stakeRef, req.params.stakeRef);
    const bet = await betRecord(pool, ref);
    if (!bet) throw new ApiError(404, 'bet_not_found');
    res.json({ stakeRef: bet.stake_ref, marketId: bet.market_id, amount: bet.amount.toString(), status: bet.status });
  });

  app.post('/internal/unbets', service, async (req, res) => {
    const b = parse(unbetServiceBody, req.body ?? {});
    const r = await removeBet(pool, b.sid, b.stakeRef);
    if (!r.replayed) log.info({ stakeRef: r.stake_ref, marketId: r.market_id, amount: r.amount.toString() }, 'bet taken back and its stake credited');
    res.json({ status: 'unbet', stakeRef: r.stake_ref, marketId: r.market_id, amount: r.amount.toString(), ...(r.replayed ? { replay: true } : {}) });
  });

  app.post('/internal/claims', service, async (req, res) => {
    const b = parse(claimQuoteBody, req.body ?? {});
    const r = await claimQuote(pool, b.sid, b.marketId);
    res.json({ marketId: r.market_id, userId: r.user_id, amount: r.amount.toString(), marketStatus: r.market_status });
  });
}
