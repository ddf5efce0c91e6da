// The cage's escape and custody paths (issue 19; the rules: db/functions/cage/85_custody.sql):
//   POST /escape/:tableId           an operator's access JWT; `{ reason }`: empties a cash table that
//                                   cannot go on into custody (a FREE entry per player with chips,
//                                   or one hold when its books diverge), fences its dealer, freezes it
//                                   for good; again: the first answer, `replay: true`
//   GET  /admin/custody/holds       operator JWT; `?status=a,b&tableId=&userId=&limit=&before=`: the
//                                   custody entries and holds, newest first
//   POST /admin/custody/reconcile   operator JWT; `{ holdId, mode: 'pro_rata' | 'custom', split?, reason }`:
//                                   a hold split into FREE entries
//   POST /admin/custody/dispute     operator JWT; `{ entryId, reason }`: a FREE entry DISPUTED
//   POST /admin/custody/release     x-service-key AND the arbiter's detached ed25519 signature over the
//                                   dispute's release message; `{ entryId, disputeId, signature }`:
//                                   recorded pending; the worker verifies it (verifyPendingReleases)
//                                   against the pinned arbiter key and only then is the entry FREE
//   GET  /api/custody               the player's JWT: their custody entries and the holds naming them
// Claims of FREE entries are POST /api/custody/claim (money.ts).
import { ed25519 } from '@noble/curves/ed25519.js';
import type { Express } from 'express';
import type pg from 'pg';
import type { Logger } from 'pino';
import { z } from 'zod';
import { withRetry } from '../db/pools.ts';
import { ApiError, parseInput } from '../http/errors.ts';
import { operatorSession, type JwtVerifier } from '../http/jwt.ts';
import { chips, tableId } from '../http/schemas.ts';
import { requireServiceKey } from '../http/service-key.ts';
import { describeRoute } from '../http/openapi.ts';
import { pinnedKeys } from '../crypto/pins.ts';
import { baseUnitsToChips } from '../units.generated.ts';
import { custodyEntriesOf, disputesReleasedUnverified, holdsNaming, releasesWithVerdicts, unverifiedReleases, type OwnEntry, type ReleaseRow } from './queries.ts';

export interface CustodyDeps {
  pool: pg.Pool;
  log: Logger;
  jwt: JwtVerifier;
  serviceKey: string | undefined;
}

/** An id of the cage's rows (an entry, a hold, a dispute): a positive integer, as a decimal string. */
const rowId = z.union([z.string().regex(/^[1-9][0-9]{0,17}$/), z.number().int().positive().max(Number.MAX_SAFE_INTEGER)]).transform(String);
const reason = z.string().trim().min(1).max(500);
const STATUSES = ['free', 'claimed', 'disputed', 'needs_reconciliation', 'reconciled'] as const;

const escapeBody = z.object({ reason }).strict();
const reconcileBody = z.discriminatedUnion('mode', [
  z.object({ holdId: rowId, mode: z.literal('pro_rata'), reason }).strict(),
  z.object({
    holdId: rowId, mode: z.literal('custom'), reason,
    split: z.array(z.object({ userId: z.uuid(), amount: chips }).strict()).min(1).max(100),
  }).strict(),
]);
const disputeBody = z.object({ entryId: rowId, reason }).strict();
const releaseBody = z.object({
  entryId: rowId, disputeId: rowId, signature: z.string().regex(/^[0-9a-fA-F]{128}$/, 'the detached ed25519 signature: 64 bytes as hex'),
}).strict();
const page = {
  limit: z.coerce.number().int().min(1).max(200).default(50),
  before: z.string().regex(/^[1-9][0-9]{0,17}$/).optional(),
};
const holdsQuery = z.object({
  ...page,
  status: z.string().transform((s) => s.split(',')).pipe(z.array(z.enum(STATUSES)).min(1).max(STATUSES.length)).optional(),
  tableId: tableId.optional(),
  userId: z.uuid().optional(),
}).strict();
const playerQuery = z.object(page).strict();

const parse = parseInput;

/** The cursor of the next page: the last id when the page is full. */
const nextBefore = (ids: bigint[], limit: number) => (ids.length === limit ? ids[ids.length - 1]!.toString() : null);

const tableParams = z.object({ tableId });

/** The contracts of installCustodyRoutes. */
export const custodyRoutes = [
  describeRoute({
    method: 'post', path: '/escape/:tableId', auth: 'admin', summary: 'Escapes a table: every seat to custody, the table fenced', params: tableParams, body: escapeBody,
    responses: { 200: '{ ok, outcome, escrow, fence, ..., replay? }', 404: 'table_not_found' },
  }),
  describeRoute({
    method: 'get', path: '/admin/custody/holds', auth: 'admin', summary: 'Custody holds, filtered and paged', query: holdsQuery,
    responses: { 200: '{ holds, next }' },
  }),
  describeRoute({
    method: 'post', path: '/admin/custody/reconcile', auth: 'admin', summary: 'Reconciles a hold: pro rata or a custom split', body: reconcileBody,
    responses: { 200: '{ ok, ..., replay? }' },
  }),
  describeRoute({
    method: 'post', path: '/admin/custody/dispute', auth: 'admin', summary: 'Disputes a custody entry', body: disputeBody,
    responses: { 200: '{ ok, disputeId, ..., replay? }' },
  }),
  describeRoute({
    method: 'post', path: '/admin/custody/release', auth: 'service', summary: 'Releases a disputed entry under the arbiter\'s signature', body: releaseBody,
    responses: { 200: '{ ok, releaseId, verification: pending, ... }', 401: 'invalid_arbiter_signature', 409: 'custody_release_pending', 503: 'custody_arbiter_not_configured' },
  }),
  describeRoute({
    method: 'get', path: '/api/custody', auth: 'jwt', summary: 'The caller\'s custody entries, paged', query: playerQuery,
    responses: { 200: '{ entries, next }' },
  }),
];

export function installCustodyRoutes(app: Express, deps: CustodyDeps) {
  installEscapeRoute(app, deps);
  installOperatorCustodyRoutes(app, deps);
  installReleaseRoute(app, deps);
  installPlayerCustodyRoute(app, deps);
}

/** POST /escape/:tableId: one SQL call (cage.escape_table) does it all in one transaction. */
function installEscapeRoute(app: Express, deps: CustodyDeps) {
  app.post('/escape/:tableId', deps.jwt.requireAdmin, async (req, res) => {
    const table = parse(tableId, req.params.tableId);
    const b = parse(escapeBody, req.body);
    // retried only on a deadlock or serialization failure: the whole escape rolled back, or replays
    const { rows } = await withRetry(() => deps.pool.query<{ answer: Record<string, unknown>; replayed: boolean }>(
      'select answer, replayed from cage.escape_table($1, $2, $3)', [operatorSession(res), table, b.reason],
    ));
    const { answer, replayed } = rows[0]!;
    if (!replayed) {
      deps.log.warn({
        adminId: res.locals.claims.sub, tableId: table, outcome: answer.outcome, escrow: answer.escrow, fence: answer.fence,
      }, 'table escaped by an operator');
    }
    res.json({ ok: true, ...answer, ...(replayed ? { replay: true } : {}) });
  });
}

/** The operators' list, reconciliation and dispute: an operator's access JWT, a live session (SQL). */
function installOperatorCustodyRoutes(app: Express, deps: CustodyDeps) {
  const { pool, log } = deps;
  const operator = deps.jwt.requireAdmin;

  app.get('/admin/custody/holds', operator, async (req, res) => {
    const q = parse(holdsQuery, req.query);
    const { rows } = await pool.query<{ entry_id: bigint; item: Record<string, unknown> }>(
      'select entry_id, item from cage.custody_holdings($1, $2, $3, $4, $5, $6) order by entry_id desc',
      [operatorSession(res), q.status ?? null, q.tableId ?? null, q.userId ?? null, q.before ?? null, q.limit],
    );
    res.json({ holds: rows.map((r) => r.item), next: nextBefore(rows.map((r) => r.entry_id), q.limit) });
  });

  app.post('/admin/custody/reconcile', operator, async (req, res) => {
    const b = parse(reconcileBody, req.body);
    // the split's amounts go to SQL as JSON numbers, written from the bigints (never through a float)
    const split = b.mode === 'custom'
      ? `[${b.split.map((s) => `{"userId":${JSON.stringify(s.userId)},"amount":${s.amount.toString()}}`).join(',')}]`
      : null;
    const { rows } = await withRetry(() => pool.query<{ answer: Record<string, unknown>; replayed: boolean }>(
      'select answer, replayed from cage.reconcile_custody_hold($1, $2, $3, $4::jsonb, $5)',
      [operatorSession(res), b.holdId, b.mode, split, b.reason],
    ));
    const { answer, replayed } = rows[0]!;
    if (!replayed) log.warn({ adminId: res.locals.claims.sub, holdId: b.holdId, mode: b.mode }, 'custody hold reconciled by an operator');
    res.json({ ok: true, ...answer, ...(replayed ? { replay: true } : {}) });
  });

  app.post('/admin/custody/dispute', operator, async (req, res) => {
    const b = parse(disputeBody, req.body);
    const { rows } = await pool.query<{ answer: Record<string, unknown>; replayed: boolean }>(
      'select answer, replayed from cage.dispute_custody($1, $2, $3)', [operatorSession(res), b.entryId, b.reason],
    );
    const { answer, replayed } = rows[0]!;
    if (!replayed) log.warn({ adminId: res.locals.claims.sub, entryId: b.entryId, disputeId: answer.disputeId }, 'custody entry disputed by an operator');
    res.json({ ok: true, ...answer, ...(replayed ? { replay: true } : {}) });
  });
}

/** Verifies a detached ed25519 signature (RFC 8032, strict encoding); false for anything malformed. */
export function signedBy(publicKey: Uint8Array, message: string, signature: Uint8Array): boolean {
  try {
    return ed25519.verify(signature, new TextEncoder().encode(message), publicKey, { zip215: false });
  } catch {
    return false;
  }
}

/** True when the release's signature verifies under its own key and that key is a pinned arbiter key. */
function releaseHolds(r: ReleaseRow, arbiterKeys: Set<string>): boolean {
  return arbiterKeys.has(r.public_key.toString('hex')) && signedBy(new Uint8Array(r.public_key), r.message, new Uint8Array(r.signature));
}

/**
 * The worker's step (tasks/cage_audit.ts): every release the cage recorded that has no verdict yet
 * is checked against the pinned arbiter keys read from the database, and its verdict written
 * (cage.verify_custody_release): only a valid one frees the entry. A stolen cage login records a
 * release with any bytes; it frees nothing, and its forged verdict is named by releaseViolations.
 */
export async function verifyPendingReleases(db: Pick<pg.Pool, 'query'>, log?: Logger) {
  const arbiterKeys = new Set((await pinnedKeys(db, 'arbiter')).map((k) => k.publicKey));
  const verdicts: { releaseId: string; entryId: string; valid: boolean }[] = [];
  for (const r of await unverifiedReleases(db)) {
    const valid = releaseHolds(r, arbiterKeys);
    await db.query('select * from cage.verify_custody_release($1, $2)', [r.id, valid]);
    verdicts.push({ releaseId: r.id.toString(), entryId: r.entry_id.toString(), valid });
    if (valid) log?.warn({ releaseId: r.id.toString(), entryId: r.entry_id.toString() }, 'custody release verified: the entry is free');
    else log?.error({ releaseId: r.id.toString(), entryId: r.entry_id.toString() }, 'custody release FORGED: its signature is not the pinned arbiter key\'s; the entry stays disputed');
  }
  return verdicts;
}

/**
 * The custody releases that break the rule "an entry is freed only by a release whose signature
 * verifies against a pinned arbiter key": a release whose signature or key does not hold (forged,
 * whatever its verdict), a valid verdict on one, and a released dispute without a valid verdict.
 * The pinned keys come from the database (cage.pinned_keys), never from this process's environment,
 * so every process that runs it reaches the same verdict. Pending releases are not violations.
 */
export async function releaseViolations(db: Pick<pg.Pool, 'query'>) {
  const arbiterKeys = new Set((await pinnedKeys(db, 'arbiter')).map((k) => k.publicKey));
  const rows = await releasesWithVerdicts(db);
  const violations: { invariant: string; subject: string; detail: Record<string, unknown> }[] = [];
  for (const r of rows) {
    if (r.valid === null || releaseHolds(r, arbiterKeys)) continue;
    violations.push({
      invariant: 'custody_release', subject: `release:${r.id}`,
      detail: { entryId: r.entry_id.toString(), disputeId: r.dispute_id.toString(), verdict: r.valid ? 'valid' : 'forged',
        problem: arbiterKeys.has(r.public_key.toString('hex')) ? 'signature not by the arbiter\'s key' : 'its key is not a pinned arbiter key' },
    });
  }
  for (const d of await disputesReleasedUnverified(db)) {
    violations.push({ invariant: 'custody_release', subject: `dispute:${d.id}`, detail: { entryId: d.entry_id.toString(), problem: 'released without a verified release' } });
  }
  return violations;
}

/**
 * POST /admin/custody/release: the service key (constant time), then an arbiter key pinned, then the
 * signature over the canonical message SQL derives from the open dispute, by one of the pinned
 * arbiter keys (read from the database on each call); SQL binds the release to that dispute and key
 * and records it pending: the worker's verification frees the entry.
 */
function installReleaseRoute(app: Express, deps: CustodyDeps) {
  app.post('/admin/custody/release', requireServiceKey(deps.serviceKey), async (req, res) => {
    const arbiters = (await pinnedKeys(deps.pool, 'arbiter')).filter((k) => k.retiredAt === null);
    if (!arbiters.length) throw new ApiError(503, 'custody_arbiter_not_configured');
    const b = parse(releaseBody, req.body);
    const { rows: [m] } = await deps.pool.query<{ message: string }>(
      'select cage.custody_release_message($1, $2) as message', [b.entryId, b.disputeId],
    );
    const signature = Buffer.from(b.signature, 'hex');
    const arbiter = arbiters.map((k) => Buffer.from(k.publicKey, 'hex')).find((key) => signedBy(key, m!.message, signature));
    if (!arbiter) throw new ApiError(401, 'invalid_arbiter_signature');
    const { rows } = await deps.pool.query<{ answer: Record<string, unknown> }>(
      'select answer from cage.release_custody($1, $2, $3, $4, $5)', [b.entryId, b.disputeId, m!.message, signature, arbiter],
    );
    const answer = rows[0]!.answer;
    deps.log.warn({ entryId: b.entryId, disputeId: b.disputeId, userId: answer.userId, releaseId: answer.releaseId }, 'custody release recorded (pending the worker\'s verification)');
    res.json({ ok: true, ...answer });
  });
}

const entryJson = (r: OwnEntry) => ({
  entryId: r.id.toString(), tableId: r.table_id, moneyKind: r.money_kind, amount: Number(baseUnitsToChips(r.amount)), baseUnits: r.amount.toString(),
  status: r.status, claimable: r.status === 'free',
  source: r.hold_id !== null ? 'reconciliation' : r.escape_id !== null ? 'escape' : 'forced_withdrawal',
  positionId: r.player_id?.toString() ?? null, createdAt: r.created_at, claimedAt: r.claimed_at, txHash: r.claim_ref_id,
});

/** GET /api/custody: what custody holds for the caller (the JWT's user), and the holds that name them. */
function installPlayerCustodyRoute(app: Express, deps: CustodyDeps) {
  app.get('/api/custody', deps.jwt.require, async (req, res) => {
    const q = parse(playerQuery, req.query);
    const userId: string = res.locals.claims.sub;
    const [entries, holds] = await Promise.all([
      custodyEntriesOf(deps.pool, userId, q.before ?? null, q.limit),
      // a hold is no one's until it is split: shown with what the caller's line of its ledger says
      holdsNaming(deps.pool, userId),
    ]);
    res.json({
      entries: entries.map(entryJson),
      next: nextBefore(entries.map((r) => r.id), q.limit),
      holds: holds.map((h) => ({
        holdId: h.id.toString(), tableId: h.table_id, moneyKind: h.money_kind, status: 'needs_reconciliation',
        pool: Number(baseUnitsToChips(h.amount)), positionId: h.line.positionId, stack: h.line.stack, chainStack: h.line.chainStack,
        weight: h.line.weight, createdAt: h.created_at,
      })),
    });
  });
}
