// The admin role's audit routes (issue 31): GET /api/audit runs the audit's one list of checks
// (checks.ts) for an operator, as the periodic job runs it, from the marks (or from the start with
// ?full=1), moving nothing: `npm run ops -- audit` reads it, so the job and the operator get one
// verdict. It also answers the audit's liveness: the age of the last clean periodic run, stale when
// older than three periods. The dealer's pinned keys are listed, pinned and retired here too
// (operator acts: game.pin_dealer_key / game.retire_dealer_key with the operator's live session).
// Every query runs as poker_admin with the operator's session handle (auth.current_admin()).
import type { Express, Request, Response } from 'express';
import type pg from 'pg';
import { z } from 'zod';
import { ApiError } from '../http/errors.ts';
import type { JwtVerifier } from '../http/jwt.ts';
import { describeRoute } from '../http/openapi.ts';
import { auditOnce } from './run.ts';

export const auditRoutes = [
  describeRoute({
    method: 'get', path: '/api/audit', auth: 'admin', summary: 'The audit: every check the periodic job runs, and the liveness of that job',
    query: z.object({ full: z.enum(['0', '1']).optional() }),
    responses: { 200: '{ violations, count, covered, liveness: { lastCleanAt, ageSeconds, periodSeconds, stale } }' },
  }),
  describeRoute({
    method: 'get', path: '/api/dealer-keys', auth: 'admin', summary: 'The dealer\'s pinned public keys',
    responses: { 200: '{ keys: [{ publicKey, pinnedAt, pinnedBy, retiredAt }] }' },
  }),
  describeRoute({
    method: 'post', path: '/api/dealer-keys', auth: 'admin', summary: 'Pin or retire a dealer public key (an operator act)',
    body: z.object({ action: z.enum(['pin', 'retire']), publicKey: z.string().regex(/^[0-9a-fA-F]{64}$/) }),
    responses: { 200: '{ key: { publicKey, pinnedAt, pinnedBy, retiredAt } }', 404: 'dealer_key_not_pinned' },
  }),
];

const dealerKeyBody = z.object({ action: z.enum(['pin', 'retire']), publicKey: z.string().regex(/^[0-9a-fA-F]{64}$/) });

/** The period of a five-field cron schedule, in seconds (what "three periods" is measured in). */
export function cronPeriodSeconds(cron: string): number {
  const [minute = '*', hour = '*', day = '*'] = cron.trim().split(/\s+/);
  const step = /^\*\/(\d+)$/.exec(minute);
  if (minute === '*') return 60;
  if (step) return Number(step[1]) * 60;
  if (hour === '*') return 3600;
  if (/^\*\/(\d+)$/.test(hour)) return Number(hour.slice(2)) * 3600;
  return day === '*' ? 86_400 : 31 * 86_400;
}

export interface Liveness {
  lastCleanAt: string | null;
  lastRunAt: string | null;
  ageSeconds: number | null;
  periodSeconds: number;
  stale: boolean;
}

/**
 * The audit's liveness: stale when the last clean periodic run is older than three periods. With no
 * clean run yet, the three periods count from `since` (when the asking process started: the worker
 * runs the audit at its start, so a deployment whose audit never runs goes stale three periods in).
 */
export async function auditLiveness(db: Pick<pg.ClientBase, 'query'>, periodSeconds: number, since = new Date()): Promise<Liveness> {
  const { rows: [r] } = await db.query<{ last_clean_at: Date | null; last_run_at: Date | null; age: number | null; grace: number }>(
    `select last_clean_at, last_run_at, extract(epoch from now() - last_clean_at)::float8 as age,
            extract(epoch from now() - $1::timestamptz)::float8 as grace from cage.audit_liveness()`, [since.toISOString()],
  );
  const age = r?.age ?? null;
  return {
    lastCleanAt: r?.last_clean_at?.toISOString() ?? null, lastRunAt: r?.last_run_at?.toISOString() ?? null,
    ageSeconds: age === null ? null : Math.round(age), periodSeconds, stale: (age ?? r?.grace ?? 0) > 3 * periodSeconds,
  };
}

/** A connection as poker_admin under the operator's session; refused unless that session is live. */
async function asOperator<T>(pool: pg.Pool, sid: string, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query("select set_config('role', 'poker_admin', false), set_config('poker.admin_sid', $1, false)", [sid]);
    const { rows } = await client.query<{ admin: string | null }>('select auth.current_admin() as admin');
    if (!rows[0]?.admin) throw new ApiError(403, 'admin_session_required');
    return await work(client);
  } catch (err) {
    if (!(err instanceof ApiError)) broken = err as Error;
    throw err;
  } finally {
    // never back to the pool as poker_admin: reset, or dropped
    await client.query("reset role; select set_config('poker.admin_sid', '', false)").catch((err: Error) => { broken ??= err; });
    client.release(broken ?? false);
  }
}

const keyJson = (k: { public_key: string; pinned_at: Date; pinned_by: string; retired_at: Date | null }) =>
  ({ publicKey: k.public_key, pinnedAt: k.pinned_at, pinnedBy: k.pinned_by, retiredAt: k.retired_at });

export function installAuditRoutes(app: Express, deps: { pool: pg.Pool; jwt: JwtVerifier; auditCron: string; startedAt: Date }) {
  const sid = (res: Response) => res.locals.claims.sid as string;
  const periodSeconds = cronPeriodSeconds(deps.auditCron);
  app.get('/api/audit', deps.jwt.requireAdmin, async (req: Request, res: Response) => {
    const full = req.query.full === '1';
    const answer = await asOperator(deps.pool, sid(res), async (client) => {
      const run = await auditOnce(client, { mode: full ? 'full' : 'read' });
      return { violations: run.violations, count: run.violations.length, covered: { hands: run.covered.hands, links: run.covered.links }, liveness: await auditLiveness(client, periodSeconds, deps.startedAt) };
    });
    res.json(answer);
  });
  app.get('/api/dealer-keys', deps.jwt.requireAdmin, async (_req: Request, res: Response) => {
    const keys = await asOperator(deps.pool, sid(res), (client) => client.query('select * from game.dealer_public_keys()').then((r) => r.rows));
    res.json({ keys: keys.map(keyJson) });
  });
  app.post('/api/dealer-keys', deps.jwt.requireAdmin, async (req: Request, res: Response) => {
    const body = dealerKeyBody.safeParse(req.body ?? {});
    if (!body.success) throw new ApiError(400, 'bad_request');
    const fn = body.data.action === 'pin' ? 'game.pin_dealer_key' : 'game.retire_dealer_key';
    const rows = await asOperator(deps.pool, sid(res), (client) => client.query(`select * from ${fn}($1, $2)`, [sid(res), body.data.publicKey.toLowerCase()]).then((r) => r.rows));
    res.json({ key: keyJson(rows[0]) });
  });
}
