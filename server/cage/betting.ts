// The cage's betting legs (spec: "Cage -> Betting"; docs/architecture.md, "A bet"). The money moves
// in SQL (db/functions/cage/86_betting.sql), one transaction each; the betting service (BETTING_URL,
// by default this process's betting role) is called over HTTP with the service key between them:
//   POST /api/betting/stake    the player's JWT: { marketId, runnerUserId, amount, idempotencyKey? }
//                              (or an Idempotency-Key header): the bet_stake debit, then the notify;
//                              a refused or unanswered notify compensates the debit at once (unless
//                              the bet landed after all: the resolution reads it under the stake's
//                              lock); a stake left pending (the cage stopped) is the reconciler's
//                              (tasks/betting_reconcile_stakes.ts). Replay-once per key.
//   POST /api/betting/unbet    the player's JWT: { stakeRef }: the betting service takes the bet back
//                              first (market open), then the journal credits the stake back.
//   POST /api/betting/claim    the player's JWT: { marketId }: the betting service computes what the
//                              market owes the player; the journal credits what it recorded
//                              (bet_payout, ref bet-claim:{marketId}:{userId}), once.
//   POST /api/betting/markets  market create: a no-op that answers success (markets open with their
//                              tournaments).
//   GET  /api/betting/markets?tableId=, /api/betting/markets/:marketId  the betting service's reads
//   GET  /api/betting/bets     the player's JWT: their stakes, newest first.
import type { Express, Response } from 'express';
import type pg from 'pg';
import type { Logger } from 'pino';
import { z } from 'zod';
import { ApiError, zodIssues } from '../http/errors.ts';
import { chips, idempotencyKey, tableId } from '../http/schemas.ts';
import { playerSession, type JwtVerifier } from '../http/jwt.ts';
import type { ServiceAnswer, ServiceClient } from '../http/service-client.ts';
import { describeRoute } from '../http/openapi.ts';

export interface BettingCageDeps {
  pool: pg.Pool;
  log: Logger;
  jwt: JwtVerifier;
  betting: ServiceClient;
}

const marketId = z.string().min(1).max(80);
const stakeRef = z.string().min(1).max(200);

export const stakeBody = z.object({
  marketId,
  runnerUserId: z.uuid(),
  amount: chips,
  idempotencyKey: idempotencyKey.optional(),
}).strict();

function parse<T>(schema: z.ZodType<T>, value: unknown): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new ApiError(400, 'bad_request', zodIssues(parsed.error));
  return parsed.data;
}

/** The player's token grant, or 401 session_required (SQL would refuse it too; the betting call is not made). */
function sessionOf(res: Response): string {
  const sid = playerSession(res);
  if (!sid) throw new ApiError(401, 'session_required');
  return sid;
}

/** A refusal of the betting service passed on as it was coded; an unreachable one is 503 betting_unavailable. */
function refusal(answer: ServiceAnswer<unknown>, extra?: Record<string, unknown>): ApiError {
  if (answer.ok || 'unreachable' in answer) return new ApiError(503, 'betting_unavailable', undefined, extra);
  const code = typeof answer.body.error === 'string' ? answer.body.error : 'betting_refused';
  // the service key is the platform's own configuration: a refusal of it is ours, not the caller's
  if (code === 'invalid_service_key' || code === 'service_key_not_configured') return new ApiError(503, 'betting_unavailable', undefined, extra);
  return new ApiError(answer.status, code, undefined, extra);
}

type StakeRow = {
  ref_id: string; status: string; error: string | null; market_id: string; runner_user_id: string; amount: bigint;
  money_kind: string; replayed: boolean; created_at: Date;
};

function stakeJson(s: Pick<StakeRow, 'ref_id' | 'status' | 'market_id' | 'runner_user_id' | 'amount' | 'money_kind'>, key: string) {
  return {
    status: s.status, stakeRef: s.ref_id, txHash: s.ref_id, idempotencyKey: key, marketId: s.market_id,
    runnerUserId: s.runner_user_id, amount: s.amount.toString(), moneyKind: s.money_kind,
  };
}

/** Resolves a stake by what the betting service holds (cage.resolve_bet_stake): confirmed or compensated. */
export async function resolveStake(db: pg.Pool, ref: string, error: string) {
  const { rows } = await db.query<{ ref_id: string; status: string; error: string | null; refund_ref_id: string | null }>(
    'select ref_id, status, error, refund_ref_id from cage.resolve_bet_stake($1, $2)', [ref, error],
  );
  return rows[0]!;
}

export const marketsQuery = z.object({ tableId }).strict();
export const unbetBody = z.object({ stakeRef }).strict();
export const betClaimBody = z.object({ marketId }).strict();

/** The contracts of installBettingCageRoutes: the player's side of the betting service. */
export const bettingCageRoutes = [
  describeRoute({
    method: 'post', path: '/api/betting/markets', auth: 'none', summary: 'A no-op: markets open with their tournaments',
    responses: { 200: '{ ok, status: noop, detail }' },
  }),
  describeRoute({
    method: 'get', path: '/api/betting/markets', auth: 'none', summary: 'A tournament\'s market, from the betting service', query: marketsQuery,
    responses: { 200: 'the betting service\'s answer', 503: 'betting_unavailable' },
  }),
  describeRoute({
    method: 'get', path: '/api/betting/markets/:marketId', auth: 'none', summary: 'A market, from the betting service', params: z.object({ marketId }),
    responses: { 200: 'the betting service\'s answer', 404: 'market_not_found', 503: 'betting_unavailable' },
  }),
  describeRoute({
    method: 'get', path: '/api/betting/bets', auth: 'jwt', summary: 'The caller\'s bets', responses: { 200: '{ bets: [...] }' },
  }),
  describeRoute({
    method: 'post', path: '/api/betting/stake', auth: 'jwt', summary: 'Stakes chips on a runner (the key: Idempotency-Key header or idempotencyKey)',
    body: stakeBody, headers: z.object({ 'idempotency-key': z.string().optional() }),
    responses: { 200: 'the stake, confirmed', 202: 'the stake, pending', 400: 'missing_idempotency_key / bad_request', 402: 'insufficient_cage_balance', 409: 'stake_compensated / market_closed' },
  }),
  describeRoute({
    method: 'post', path: '/api/betting/unbet', auth: 'jwt', summary: 'Takes a stake back while the market is open', body: unbetBody,
    responses: { 200: '{ status: unbet, stakeRef, txHash, amount, moneyKind, replay? }', 404: 'stake_not_found', 409: 'stake_compensated / market_closed' },
  }),
  describeRoute({
    method: 'post', path: '/api/betting/claim', auth: 'jwt', summary: 'Claims a settled market\'s payout', body: betClaimBody,
    responses: { 200: '{ status: confirmed, txHash, marketId, amount, moneyKind, replay? }' },
  }),
];

export function installBettingCageRoutes(app: Express, deps: BettingCageDeps) {
  installBettingReads(app, deps);
  installStake(app, deps);
  installUnbetAndClaim(app, deps);
}

/** Market create (a no-op), the betting service's market reads, the player's own stakes. */
function installBettingReads(app: Express, deps: BettingCageDeps) {
  const { pool, betting } = deps;
  app.post('/api/betting/markets', (_req, res) => {
    res.json({ ok: true, status: 'noop', detail: 'markets open with their tournaments' });
  });

  app.get('/api/betting/markets', async (req, res) => {
    const q = parse(marketsQuery, req.query);
    const answer = await betting.get(`/api/markets?tableId=${encodeURIComponent(q.tableId)}`);
    if (!answer.ok) throw refusal(answer);
    res.json(answer.body);
  });

  app.get('/api/betting/markets/:marketId', async (req, res) => {
    const id = parse(marketId, req.params.marketId);
    const answer = await betting.get(`/api/markets/${encodeURIComponent(id)}`);
    if (!answer.ok) throw refusal(answer);
    res.json(answer.body);
  });

  app.get('/api/betting/bets', deps.jwt.require, async (_req, res) => {
    const { rows } = await pool.query(
      `select ref_id, idempotency_key, market_id, runner_user_id, amount, money_kind::text as money_kind, status, error, refund_ref_id, created_at, updated_at
         from cage.bet_stakes where user_id = $1 order by created_at desc, ref_id limit 500`,
      [res.locals.claims.sub],
    );
    res.json({
      bets: rows.map((r) => ({
        stakeRef: r.ref_id, idempotencyKey: r.idempotency_key, marketId: r.market_id, runnerUserId: r.runner_user_id,
        amount: r.amount.toString(), moneyKind: r.money_kind, status: r.status, refundTxHash: r.refund_ref_id,
        createdAt: r.created_at, updatedAt: r.updated_at, ...(r.error ? { error: r.error } : {}),
      })),
    });
  });

}

function installStake(app: Express, deps: BettingCageDeps) {
  const { pool, log, betting } = deps;
  app.post('/api/betting/stake', deps.jwt.require, async (req, res) => {
    const b = (req.body ?? {}) as Record<string, unknown>;
    const headerKey = req.get('idempotency-key');
    const d = parse(stakeBody, headerKey === undefined ? b : { ...b, idempotencyKey: headerKey });
    if (!d.idempotencyKey) throw new ApiError(400, 'missing_idempotency_key');
    const { rows } = await pool.query<StakeRow>(
      `select ref_id, status, error, market_id, runner_user_id, amount, money_kind, replayed, created_at
         from cage.open_bet_stake($1, $2, $3, $4, $5)`,
      [sessionOf(res), d.idempotencyKey, d.marketId, d.runnerUserId, d.amount.toString()],
    );
    const stake = rows[0]!;
    if (stake.replayed) {
      if (stake.status === 'compensated') throw new ApiError(409, 'stake_compensated', undefined, { ...stakeJson(stake, d.idempotencyKey), reason: stake.error, replay: true });
      return void res.status(stake.status === 'pending' ? 202 : 200).json({ ...stakeJson(stake, d.idempotencyKey), replay: true });
    }
    const notified = await betting.post('/internal/bets', { stakeRef: stake.ref_id });
    const outcome = notified.ok ? 'recorded' : 'unreachable' in notified ? 'betting_unavailable' : (notified.body.error ?? 'betting_refused');
    // confirmed when the bet is there (the notify landed, whatever its answer said), else compensated
    const resolved = await resolveStake(pool, stake.ref_id, outcome);
    if (resolved.status === 'confirmed') {
      log.info({ stakeRef: stake.ref_id, marketId: stake.market_id, amount: stake.amount.toString() }, 'bet staked');
      return void res.json(stakeJson({ ...stake, status: 'confirmed' }, d.idempotencyKey));
    }
    log.warn({ stakeRef: stake.ref_id, outcome }, 'stake compensated: the betting service did not record it');
    if (notified.ok) throw new ApiError(409, 'stake_compensated');
    throw refusal(notified, { status: 'compensated', stakeRef: stake.ref_id, refundTxHash: resolved.refund_ref_id });
  });

}

function installUnbetAndClaim(app: Express, deps: BettingCageDeps) {
  const { pool, log, betting } = deps;
  app.post('/api/betting/unbet', deps.jwt.require, async (req, res) => {
    const b = parse(unbetBody, req.body ?? {});
    const sid = sessionOf(res);
    // the caller's own stake, or not found (the betting service checks the grant again in SQL)
    const { rows } = await pool.query<{ status: string }>('select status from cage.bet_stakes where ref_id = $1 and user_id = $2', [b.stakeRef, res.locals.claims.sub]);
    if (!rows[0]) throw new ApiError(404, 'stake_not_found');
    if (rows[0].status === 'compensated') throw new ApiError(409, 'stake_compensated');
    // the betting service's ledger first: the bet leaves the pool; then the journal credits it back
    const removed = await betting.post('/internal/unbets', { stakeRef: b.stakeRef, sid });
    if (!removed.ok) throw refusal(removed);
    const credited = await pool.query<{ ref_id: string; refund_ref_id: string; amount: bigint; money_kind: string; replayed: boolean }>(
      'select ref_id, refund_ref_id, amount, money_kind, replayed from cage.credit_unbet($1)', [b.stakeRef],
    );
    const r = credited.rows[0]!;
    if (!r.replayed) log.info({ stakeRef: r.ref_id, amount: r.amount.toString() }, 'bet taken back');
    res.json({ status: 'unbet', stakeRef: r.ref_id, txHash: r.refund_ref_id, amount: r.amount.toString(), moneyKind: r.money_kind, ...(r.replayed ? { replay: true } : {}) });
  });

  app.post('/api/betting/claim', deps.jwt.require, async (req, res) => {
    const b = parse(betClaimBody, req.body ?? {});
    const sid = sessionOf(res);
    // the betting service's own computation (it settles the market first if its tournament is over)
    const quote = await betting.post<{ amount: string }>('/internal/claims', { marketId: b.marketId, sid });
    if (!quote.ok) throw refusal(quote);
    // the journal credits what the service recorded, read in SQL, never an amount from a request
    const { rows } = await pool.query<{ ref_id: string; market_id: string; amount: bigint; money_kind: string; replayed: boolean }>(
      'select ref_id, market_id, amount, money_kind, replayed from cage.claim_bet_payout($1, $2)', [sid, b.marketId],
    );
    const r = rows[0]!;
    if (r.amount.toString() !== quote.body.amount) log.error({ marketId: r.market_id, quoted: quote.body.amount, recorded: r.amount.toString() }, 'claim: the quote and the recorded payout differ; the recorded one was credited');
    if (!r.replayed) log.info({ marketId: r.market_id, userId: res.locals.claims.sub, amount: r.amount.toString() }, 'bet payout claimed');
    res.json({ status: 'confirmed', txHash: r.ref_id, marketId: r.market_id, amount: r.amount.toString(), moneyKind: r.money_kind, ...(r.replayed ? { replay: true } : {}) });
  });
}
