// The claim board (spec: "Claim board"): the caller's board, the claim, conditions met, and the
// operator's catalog and settings. The rules are SQL (db/functions/claims); a claim is one call,
// one transaction (claims.credit_claim: the grant is the cage's journal movement, posted in it).
//
// The operator's routes (/admin/claim-sections, /admin/claim-settings) take an operator's access
// JWT (the spec's "operator" auth), never the service key.
//
// Outcomes and their HTTP statuses (the spec shows only the outcome values):
//   credited 200 · already_claimed 409 · locked 409 · forged 403 (a body naming another user, or a
//   section that is not live here) · board off 503 claim_board_disabled · no linked Solana wallet
//   409 wallet_not_linked.
import type { Express, Request } from 'express';
import type pg from 'pg';
import type { Logger } from 'pino';
import { keccak256, toHex } from 'viem';
import { z } from 'zod';
import { requireServiceKey } from '../http/service-key.ts';
import { ApiError, zodIssues } from '../http/errors.ts';
import { operatorSession, playerSession, type JwtVerifier } from '../http/jwt.ts';
import { withSpan } from '../telemetry/index.ts';
import { describeRoute } from '../http/openapi.ts';
import { sectionRecords } from './queries.ts';

export type Outcome = 'credited' | 'locked' | 'already_claimed' | 'forged';
export type Environment = 'local' | 'staging' | 'production';

export interface ClaimBoardDeps {
  pool: pg.Pool;
  log: Logger;
  environment: Environment;
  /** The process clock; tests inject another (the harness also takes `x-test-clock`). */
  clock: () => Date;
}

/** keccak256 over the text `userId:sectionKey:period` (spec: claim_id). */
export function claimId(userId: string, sectionKey: string, period: string): `0x${string}` {
  return keccak256(toHex(`${userId}:${sectionKey}:${period}`));
}

/** The ISO-8601 week `YYYY-Www` (UTC) of an instant: the period of a weekly section (claims.iso_week in SQL). */
export function isoWeekOf(at: Date): string {
  const d = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()));
  d.setUTCDate(d.getUTCDate() + 4 - (d.getUTCDay() || 7)); // the Thursday of this ISO week decides its year
  const week = Math.ceil(((d.getTime() - Date.UTC(d.getUTCFullYear(), 0, 1)) / 86400_000 + 1) / 7);
  return `${d.getUTCFullYear()}-W${String(week).padStart(2, '0')}`;
}

/** The claim ids of the periods a claim at `now` can fall in (SQL picks the one of the section's cadence). */
export function claimIdsAt(userId: string, sectionKey: string, now: Date): Record<string, string> {
  const week = isoWeekOf(now);
  return { once: claimId(userId, sectionKey, 'once'), [week]: claimId(userId, sectionKey, week) };
}

export function createClaimBoard(deps: ClaimBoardDeps) {
  const { pool, log, environment } = deps;

  async function enabled(): Promise<boolean> {
    const { rows } = await pool.query<{ claim_board_enabled: boolean }>('select claim_board_enabled from claims.board_settings($1)', [environment]);
    return rows[0]!.claim_board_enabled;
  }

  /**
   * A condition met for a user (in-process sources call this directly). Lights every live section
   * bound to the key; with the board off it is inactive (returns active: false, lights nothing).
   * Given `db` (a client in a transaction), it is met in that transaction: an in-process source
   * passes the transaction of the change that made it true, so the two commit or roll back together.
   */
  async function markConditionMet(userId: string, conditionKey: string, idempotencyKey?: string, db: pg.Pool | pg.PoolClient = pool) {
    return withSpan('claim.condition_met', { 'claim.condition_key': conditionKey, 'auth.user_id': userId }, async (span) => {
      if (!(await enabled())) {
        span.setAttribute('claim.active', false);
        return { active: false, lit: [] as string[], replayed: false };
      }
      const { rows } = await db.query<{ section_key: string; newly_lit: boolean; replayed: boolean }>(
        'select section_key, newly_lit, replayed from claims.mark_condition_met($1, $2, $3, $4)',
        [environment, userId, conditionKey, idempotencyKey ?? null],
      );
      const lit = rows.filter((r) => r.newly_lit).map((r) => r.section_key);
      span.setAttributes({ 'claim.active': true, 'claim.lit_count': lit.length });
      if (lit.length) log.info({ userId, conditionKey, lit }, 'claim sections lit');
      return { active: true, lit, sections: rows.map((r) => r.section_key), replayed: rows[0]?.replayed ?? false };
    });
  }

  async function board(userId: string, now: Date) {
    if (!(await enabled())) return { enabled: false, environment, sections: [] };
    const { rows } = await pool.query('select * from claims.board($1, $2, $3)', [environment, userId, now]);
    return {
      enabled: true,
      environment,
      sections: rows.map((r) => ({
        key: r.key, kind: r.kind, cadence: r.cadence, amount: Number(r.amount), order: r.order, conditionKey: r.condition_key,
        state: r.state, claimable: r.claimable, litAt: r.lit_at, claimedAt: r.claimed_at, period: r.period,
      })),
    };
  }

  /**
   * The six-step claim in ONE SQL transaction (claims.credit_claim, db/functions/claims/20_claims.sql):
   * the section judged claimable for the user of the access JWT's grant, the recipient wallet read,
   * the cage's grant movement posted, the ledger row written and the claim intent closed, together or
   * not at all. No call to the cage: a failure rolls the whole claim back and a retry claims afresh.
   */
  async function claim(userId: string, sid: string | null, sectionKey: string, now: Date) {
    const { rows } = await pool.query<{ outcome: string; amount: bigint | null; period: string | null; claim_id: string | null; grant_tx: string | null }>(
      'select outcome, amount, period, claim_id, grant_tx from claims.credit_claim($1, $2, $3, $4, $5)',
      [environment, sid, sectionKey, now, JSON.stringify(claimIdsAt(userId, sectionKey, now))],
    );
    const step = rows[0]!;
    if (step.outcome === 'disabled') throw new ApiError(503, 'claim_board_disabled');
    if (step.outcome === 'no_wallet') throw new ApiError(409, 'wallet_not_linked');
    if (step.outcome !== 'credited') return { outcome: step.outcome as Outcome, sectionKey, ...(step.period ? { period: step.period } : {}) };
    const amount = step.amount!;
    log.info({ userId, sectionKey, amount: amount.toString(), period: step.period }, 'claim credited');
    return { outcome: 'credited' as Outcome, sectionKey, amount: Number(amount), period: step.period!, claimId: step.claim_id!, grantTx: step.grant_tx };
  }

  return { enabled, markConditionMet, board, claim };
}

export type ClaimBoard = ReturnType<typeof createClaimBoard>;

const OUTCOME_STATUS: Record<Outcome, number> = { credited: 200, already_claimed: 409, locked: 409, forged: 403 };
const IDENTITY_FIELDS = ['userId', 'user_id', 'user', 'ownerId', 'owner_user_id', 'sub'];

type ClaimRouteDeps = {
  board: ClaimBoard; jwt: JwtVerifier; serviceKey: string | undefined; clock: () => Date; testClock: boolean; pool: pg.Pool; environment: Environment;
};

/** A claim's body: the section key (identity comes from the JWT only: see IDENTITY_FIELDS). */
export const claimBody = z.object({ sectionKey: z.string().min(1).max(64) }).loose();
export const conditionMetBody = z.object({
  userId: z.uuid(), conditionKey: z.string().regex(/^[a-z0-9][a-z0-9_.:-]{0,63}$/), idempotencyKey: z.string().min(1).max(200),
});
/** The board settings an operator sets (the environment defaults to this deployment's). */
export const boardSettingsBody = (environment: Environment) => z.object({
  environment: z.enum(['local', 'staging', 'production']).default(environment),
  claimBoardEnabled: z.boolean().optional(),
  playTransferGateEnabled: z.boolean().optional(),
}).strict();
const environmentQuery = z.object({ environment: z.string().optional().describe('local, staging, production or all (invalid_environment)') });

/** The contracts of installClaimRoutes. */
export const claimRoutes = (environment: Environment) => [
  describeRoute({
    method: 'get', path: '/claim-board/state', auth: 'jwt', summary: 'The caller\'s claim board: each section, claimable or when',
    responses: { 200: 'the board' },
  }),
  describeRoute({
    method: 'post', path: '/claim-board/claim', auth: 'jwt', summary: 'Claims a section\'s chips', body: claimBody,
    responses: { 200: '{ outcome: credited, ... }', 403: 'forged (the body names another user)', 409: 'already_claimed / locked' },
  }),
  describeRoute({
    method: 'post', path: '/internal/claim-board/condition-met', auth: 'service', summary: 'A condition met on another role (e.g. wallet_linked)', body: conditionMetBody,
    responses: { 200: '{ ok, ... }' },
  }),
  describeRoute({
    method: 'get', path: '/admin/claim-sections', auth: 'admin', summary: 'The claim catalog: every section, and those this deployment resolves',
    responses: { 200: '{ environment, sections, resolved }' },
  }),
  describeRoute({
    method: 'post', path: '/admin/claim-sections', auth: 'admin', summary: 'Creates a section',
    body: 'claims.create_section: environment (default all), key, kind, cadence, amount, order, conditionKey, enabled',
    responses: { 201: 'the section', 409: 'section_exists' },
  }),
  describeRoute({
    method: 'patch', path: '/admin/claim-sections', auth: 'admin', summary: 'Edits a section (by key and environment)',
    body: 'claims.patch_section: key (required), environment (default all), and the fields to change',
    responses: { 200: 'the section', 404: 'section_not_found' },
  }),
  describeRoute({
    method: 'delete', path: '/admin/claim-sections/:key', auth: 'admin', summary: 'Deletes a section', query: environmentQuery,
    responses: { 200: '{ ok, deleted }', 404: 'section_not_found' },
  }),
  describeRoute({
    method: 'get', path: '/admin/claim-settings', auth: 'admin', summary: 'The board settings of an environment', query: environmentQuery,
    responses: { 200: '{ environment, claimBoardEnabled, playTransferGateEnabled }' },
  }),
  describeRoute({
    method: 'patch', path: '/admin/claim-settings', auth: 'admin', summary: 'Switches the claim board and the play-transfer gate', body: boardSettingsBody(environment),
    responses: { 200: '{ environment, claimBoardEnabled, playTransferGateEnabled }' },
  }),
];

export function installClaimRoutes(app: Express, deps: ClaimRouteDeps) {
  installPlayerRoutes(app, deps);
  installConditionRoute(app, deps);
  installOperatorRoutes(app, deps);
}

/** The clock of this request: the process clock, or the harness's `x-test-clock` while permitted. */
function clockOf(deps: ClaimRouteDeps) {
  return (req: Request) => {
    const header = deps.testClock ? req.get('x-test-clock') : undefined;
    if (!header) return deps.clock();
    const at = new Date(header);
    if (Number.isNaN(at.getTime())) throw new ApiError(400, 'bad_request');
    return at;
  };
}

/** The player's board and claim (JWT; identity from the token only). */
function installPlayerRoutes(app: Express, deps: ClaimRouteDeps) {
  const { board, jwt } = deps;
  const nowOf = clockOf(deps);
  app.get('/claim-board/state', jwt.require, async (req, res) => {
    res.json(await board.board(res.locals.claims.sub, nowOf(req)));
  });

  app.post('/claim-board/claim', jwt.require, async (req, res) => {
    const userId: string = res.locals.claims.sub;
    const body = (req.body ?? {}) as Record<string, unknown>;
    await withSpan('claim.attempt', { 'auth.user_id': userId, 'section.key': typeof body.sectionKey === 'string' ? body.sectionKey.slice(0, 64) : '' }, async (span) => {
      const claim = claimBody.safeParse(body);
      if (!claim.success) {
        throw new ApiError(400, 'bad_request', [{ path: ['sectionKey'], message: 'the section key to claim', code: 'invalid_type' }]);
      }
      // identity comes from the JWT only: a body naming another user is a forgery
      const named = IDENTITY_FIELDS.filter((f) => body[f] !== undefined && body[f] !== null
        && (typeof body[f] !== 'string' || (body[f] as string).toLowerCase() !== userId.toLowerCase()));
      let result;
      if (named.length) {
        result = { outcome: 'forged' as Outcome, sectionKey: claim.data.sectionKey };
      } else {
        result = await board.claim(userId, playerSession(res), claim.data.sectionKey, nowOf(req));
      }
      span.setAttribute('claim.outcome', result.outcome);
      const status = OUTCOME_STATUS[result.outcome];
      res.status(status).json({ ...result, ...(status === 200 ? {} : { error: result.outcome }) });
    });
  });
}

/** A condition met on another role, delivered here (x-service-key). */
function installConditionRoute(app: Express, deps: ClaimRouteDeps) {
  const { board } = deps;
  const service = requireServiceKey(deps.serviceKey);
  app.post('/internal/claim-board/condition-met', service, async (req, res) => {
    const parsed = conditionMetBody.safeParse(req.body ?? {});
    if (!parsed.success) throw new ApiError(400, 'bad_request', zodIssues(parsed.error));
    const r = await board.markConditionMet(parsed.data.userId, parsed.data.conditionKey, parsed.data.idempotencyKey);
    res.json({ ok: true, ...r });
  });
}

function installOperatorRoutes(app: Express, deps: ClaimRouteDeps) {
  const { jwt } = deps;
  // ---- the operator's catalog and settings (an operator's access JWT; each edit recorded with
  // the operator in claims.catalog_edits) -------------------------------------------------------
  const operator = jwt.requireAdmin;
  const settingsBody = boardSettingsBody(deps.environment);
  /** The environment an operator's call names, or its default; SQL refuses one that is not (invalid_environment). */
  const environmentOf = (value: unknown, fallback: string) => {
    if (value === undefined) return fallback;
    if (typeof value !== 'string') throw new ApiError(400, 'invalid_environment');
    return value;
  };
  const sectionJson = (r: Record<string, unknown>) => ({
    environment: r.environment, key: r.key, kind: r.kind, cadence: r.cadence, amount: Number(r.amount), order: r.order,
    conditionKey: r.condition_key, enabled: r.enabled, updatedAt: r.updated_at,
  });
  app.get('/admin/claim-sections', operator, async (_req, res) => {
    const [all, live] = await Promise.all([
      sectionRecords(deps.pool),
      deps.pool.query('select * from claims.resolved_sections($1)', [deps.environment]),
    ]);
    res.json({ environment: deps.environment, sections: all.map((r) => sectionJson({ ...r })), resolved: live.rows.map(sectionJson) });
  });

  app.post('/admin/claim-sections', operator, async (req, res) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const { rows } = await deps.pool.query('select * from claims.create_section($1, $2, $3)', [
      operatorSession(res), environmentOf(body.environment, 'all'), JSON.stringify(body),
    ]);
    res.status(201).json(sectionJson(rows[0]));
  });

  app.patch('/admin/claim-sections', operator, async (req, res) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    if (typeof body.key !== 'string') throw new ApiError(400, 'bad_request', [{ path: ['key'], message: 'the section key', code: 'invalid_type' }]);
    const { key, environment, ...patch } = body;
    const { rows } = await deps.pool.query('select * from claims.patch_section($1, $2, $3, $4)', [
      operatorSession(res), environmentOf(environment, 'all'), key, JSON.stringify(patch),
    ]);
    res.json(sectionJson(rows[0]));
  });

  app.delete('/admin/claim-sections/:key', operator, async (req, res) => {
    const { rows } = await deps.pool.query('select * from claims.delete_section($1, $2, $3)', [
      operatorSession(res), environmentOf(req.query.environment, 'all'), req.params.key,
    ]);
    res.json({ ok: true, deleted: sectionJson(rows[0]) });
  });

  app.get('/admin/claim-settings', operator, async (req, res) => {
    const env = environmentOf(req.query.environment, deps.environment);
    const { rows } = await deps.pool.query('select * from claims.board_settings($1)', [env]);
    res.json({ environment: env, claimBoardEnabled: rows[0].claim_board_enabled, playTransferGateEnabled: rows[0].play_transfer_gate_enabled });
  });

  app.patch('/admin/claim-settings', operator, async (req, res) => {
    const parsed = settingsBody.safeParse(req.body ?? {});
    if (!parsed.success) throw new ApiError(400, 'bad_request', zodIssues(parsed.error));
    const b = parsed.data;
    const gateBefore = b.playTransferGateEnabled === undefined ? undefined
      : (await deps.pool.query<{ play_transfer_gate_enabled: boolean }>('select play_transfer_gate_enabled from claims.board_settings($1)', [b.environment])).rows[0]!.play_transfer_gate_enabled;
    const { rows } = await deps.pool.query('select * from claims.set_board_settings($1, $2, $3, $4)', [
      operatorSession(res), b.environment, b.claimBoardEnabled ?? null, b.playTransferGateEnabled ?? null,
    ]);
    // the lever flipped: PlayGateSet (its event row is written by the SQL, in the same transaction)
    if (gateBefore !== undefined && rows[0].play_transfer_gate_enabled !== gateBefore) {
      await withSpan('cage.play_gate_set', {
        'gate.environment': b.environment, 'gate.enabled': rows[0].play_transfer_gate_enabled, 'gate.previous': gateBefore, 'auth.user_id': res.locals.claims.sub,
      }, async () => undefined);
    }
    res.json({ environment: b.environment, claimBoardEnabled: rows[0].claim_board_enabled, playTransferGateEnabled: rows[0].play_transfer_gate_enabled });
  });
}
