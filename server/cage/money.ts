// Money into and out of the cage, and what a player reads of their own:
//   POST /api/grant                 play chips to a linked Solana wallet's owner (x-service-key; the
//                                   claim board also names the claim's sectionKey and period)
//   POST /api/operator/purchase     chips bought outside come in (an operator's access JWT, replay-once)
//   POST /api/operator/redemption   chips leave for the outside (an operator's access JWT, replay-once)
//   POST /api/operator/correction   a manual correction of the books, with its reason (operator JWT)
//   GET  /api/operator/switches     the operators' switches (real_money) as they stand (operator JWT)
//   POST /api/operator/switches     sets one ({ name, enabled }), recorded with the operator (operator JWT)
//   POST /api/custody/claim         a FREE custody entry to its owner's cage balance (JWT), + receipt
//                                   signed in the claim's transaction
//   GET  /api/cage/receipts         the caller's receipts (JWT)
//   GET  /api/cage/balances         the caller's cage balances (JWT)
// The rules are in db/functions/cage/70_money_in_out.sql.
import type { Express } from 'express';
import type pg from 'pg';
import type { Logger } from 'pino';
import { z } from 'zod';
import { requireServiceKey } from '../http/service-key.ts';
import { ApiError, parseInput, refusedWith } from '../http/errors.ts';
import { operatorSession, playerSession, type JwtVerifier } from '../http/jwt.ts';
import { chips } from '../http/schemas.ts';
import { inTransaction } from '../db/transaction.ts';
import { receiptJson } from './cash.ts';
import { issueReceipt, type ReceiptSigner, type StoredReceipt } from './receipts.ts';
import { describeRoute } from '../http/openapi.ts';
import { grantOf, receiptsOf, userBalances } from './queries.ts';

export const grantBody = z.object({
  recipient: z.string().min(1).max(128), amount: z.unknown(), claimId: z.string().min(1).max(200),
  sectionKey: z.string().min(1).max(64).optional(), period: z.string().min(1).max(16).optional(),
}).refine((b) => (b.sectionKey === undefined) === (b.period === undefined), { message: 'sectionKey and period go together', path: ['period'] });
export const correctionBody = z.object({
  ref: z.string().regex(/^[\x21-\x7e]{1,128}$/, '1..128 printable characters'),
  moneyKind: z.enum(['play', 'real']),
  legs: z.array(z.object({
    accountId: z.union([z.string().regex(/^[1-9][0-9]{0,17}$/), z.number().int().positive()]).transform(String),
    amount: z.union([z.string().regex(/^-?[1-9][0-9]{0,15}$/), z.number().int().min(-Number.MAX_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER)]).transform(String),
  }).strict()).min(2).max(16),
  reason: z.string().trim().min(1).max(500),
}).strict();
export const exchangeBody = z.object({
  userId: z.uuid(),
  amount: z.unknown(),
  externalRef: z.string().regex(/^[\x21-\x7e]{1,128}$/, '1..128 printable characters'),
  moneyKind: z.enum(['play', 'real']).default('real'),
});

const parse = parseInput;
function amountOf(value: unknown): bigint {
  const parsed = chips.safeParse(value);
  if (!parsed.success) throw new ApiError(400, 'invalid_amount');
  return parsed.data;
}

type MoneyDeps = { pool: pg.Pool; log: Logger; signer: ReceiptSigner; jwt: JwtVerifier; serviceKey: string | undefined };

export const switchBody = z.object({ name: z.enum(['real_money']), enabled: z.boolean() }).strict();
export const custodyClaimBody = z.object({ entryId: z.union([z.string().regex(/^[1-9][0-9]{0,17}$/), z.number().int().positive()]).transform(String) });

/** The contracts of installMoneyRoutes. */
export const moneyRoutes = [
  describeRoute({
    method: 'post', path: '/api/grant', auth: 'service', summary: 'Credits a claim-board grant (idempotent by claimId)', body: grantBody,
    responses: { 200: '{ ok, claimId, userId, amount, txHash } (a replay: idempotent: true)', 409: 'ref_id_conflict' },
  }),
  ...(['purchase', 'redemption'] as const).map((direction) => describeRoute({
    method: 'post', path: `/api/operator/${direction}`, auth: 'admin', summary: `Records a ${direction} of chips for a user (idempotent by externalRef)`, body: exchangeBody,
    responses: { 200: `the ${direction}, with the balance`, 402: 'insufficient_cage_balance', 403: 'real_money_disabled' },
  })),
  describeRoute({
    method: 'post', path: '/api/operator/correction', auth: 'admin', summary: 'A balanced correcting entry in the journal', body: correctionBody,
    responses: { 200: '{ ok, refId, entryId, idempotent? }' },
  }),
  describeRoute({
    method: 'get', path: '/api/operator/switches', auth: 'admin', summary: 'The economy\'s switches', responses: { 200: '{ switches }' },
  }),
  describeRoute({
    method: 'post', path: '/api/operator/switches', auth: 'admin', summary: 'Sets a switch (real_money)', body: switchBody,
    responses: { 200: '{ name, enabled, ..., changed }' },
  }),
  describeRoute({
    method: 'post', path: '/api/custody/claim', auth: 'jwt', summary: 'Claims a custody entry back to the cage balance', body: custodyClaimBody,
    responses: { 200: 'the claim, with its receipt', 404: 'custody_entry_not_found' },
  }),
  describeRoute({
    method: 'get', path: '/api/cage/receipts', auth: 'jwt', summary: 'The caller\'s signed receipts', responses: { 200: '{ receipts }' },
  }),
  describeRoute({
    method: 'get', path: '/api/cage/balances', auth: 'jwt', summary: 'The caller\'s cage balances (play, real)', responses: { 200: '{ balances }' },
  }),
];

export function installMoneyRoutes(app: Express, deps: MoneyDeps) {
  installGrantRoute(app, deps);
  installOperatorRoutes(app, deps);
  installPlayerRoutes(app, deps);
}

/** POST /api/grant (x-service-key): the claim board's play chips. */
function installGrantRoute(app: Express, deps: MoneyDeps) {
  const { pool, log } = deps;
  const service = requireServiceKey(deps.serviceKey);
  app.post('/api/grant', service, async (req, res) => {
    const b = parse(grantBody, req.body);
    const amount = amountOf(b.amount);
    let rows;
    try {
      ({ rows } = await pool.query('select user_id, amount, ref_id, status from cage.grant_play_chips($1, $2, $3, $4, $5)', [
        b.recipient, amount.toString(), b.claimId, b.sectionKey ?? null, b.period ?? null,
      ]));
    } catch (err) {
      // a claim id already granted with other values: refused, and the original is shown, so a
      // caller retrying after a lost answer (with a since-changed wallet or amount) can recognise
      // its own earlier grant instead of minting again
      if (!refusedWith(err, 'cage', 'ref_id_conflict')) throw err;
      const o = await grantOf(pool, b.claimId);
      throw new ApiError(409, 'ref_id_conflict', undefined, o ? { original: { userId: o.user_id, recipient: o.recipient, amount: Number(o.amount), txHash: b.claimId } } : {});
    }
    const g = rows[0];
    // txHash: on the cage the "mint transaction" is the journal entry, whose ref id is the claim id
    if (g.status === 'replayed') return void res.json({ ok: true, idempotent: true, claimId: b.claimId, amount: Number(g.amount), txHash: g.ref_id });
    log.info({ userId: g.user_id, amount: amount.toString(), claimId: b.claimId }, 'play chips granted');
    res.json({ ok: true, claimId: b.claimId, userId: g.user_id, amount: Number(g.amount), txHash: g.ref_id });
  });
}

/** Purchase, redemption and correction: an operator's own access JWT, each act recorded with them. */
function installOperatorRoutes(app: Express, deps: MoneyDeps) {
  const { pool, log } = deps;
  const operator = deps.jwt.requireAdmin;
  for (const direction of ['purchase', 'redemption'] as const) {
    app.post(`/api/operator/${direction}`, operator, async (req, res) => {
      const b = parse(exchangeBody, req.body);
      const amount = amountOf(b.amount);
      // the operator is the admin of the token's live session, and real chips come in only while
      // the operators' real_money switch is on: both checked in SQL (cage.exchange_chips)
      const adminId: string = res.locals.claims.sub;
      const { rows } = await pool.query('select ref_id, status, balance from cage.exchange_chips($1, $2, $3, $4, $5, $6)', [
        direction, b.userId, amount.toString(), b.externalRef, b.moneyKind, operatorSession(res),
      ]);
      const r = rows[0];
      if (r.status === 'created') log.info({ adminId, userId: b.userId, amount: amount.toString(), moneyKind: b.moneyKind, direction }, `chips ${direction}`);
      res.json({
        ok: true, refId: r.ref_id, userId: b.userId, amount: Number(amount), moneyKind: b.moneyKind, balance: Number(r.balance),
        ...(r.status === 'replayed' ? { idempotent: true } : {}),
      });
    });
  }

  app.post('/api/operator/correction', operator, async (req, res) => {
    const b = parse(correctionBody, req.body);
    const adminId: string = res.locals.claims.sub;
    const { rows } = await pool.query('select ref_id, entry_id, status from cage.correct_books($1, $2, $3, $4, $5, $6)', [
      operatorSession(res), b.ref, b.moneyKind, b.legs.map((l) => l.accountId), b.legs.map((l) => l.amount), b.reason,
    ]);
    const r = rows[0];
    if (r.status === 'created') log.warn({ adminId, refId: r.ref_id, reason: b.reason }, 'books corrected by an operator');
    res.json({ ok: true, refId: r.ref_id, entryId: r.entry_id.toString(), ...(r.status === 'replayed' ? { idempotent: true } : {}) });
  });

  const switchJson = (r: { name: string; enabled: boolean; updated_at: Date | null }) => ({ name: r.name, enabled: r.enabled, updatedAt: r.updated_at });
  app.get('/api/operator/switches', operator, async (_req, res) => {
    const { rows } = await pool.query('select name, enabled, updated_at from cage.switch_states()');
    res.json({ switches: rows.map(switchJson) });
  });
  app.post('/api/operator/switches', operator, async (req, res) => {
    const b = parse(switchBody, req.body);
    const { rows } = await pool.query('select name, enabled, updated_at, changed from cage.set_switch($1, $2, $3)', [
      operatorSession(res), b.name, b.enabled,
    ]);
    const r = rows[0];
    if (r.changed) log.warn({ adminId: res.locals.claims.sub, switch: r.name, enabled: r.enabled }, 'switch set by an operator');
    res.json({ ...switchJson(r), changed: r.changed });
  });
}

/** The player's own: custody claims, receipts, balances (JWT). */
function installPlayerRoutes(app: Express, deps: MoneyDeps) {
  const { pool, log } = deps;
  app.post('/api/custody/claim', deps.jwt.require, async (req, res) => {
    const userId: string = res.locals.claims.sub;
    const b = parse(custodyClaimBody, req.body);
    // the claim and its receipt in one transaction: a claim never exists without its receipt
    const { c, receipt } = await inTransaction(pool, async (client) => {
      const { rows } = await client.query('select entry_id, ref_id, amount, money_kind, table_id, replayed from cage.claim_custody($1, $2)', [
        playerSession(res), b.entryId,
      ]);
      const c = rows[0];
      const receipt: StoredReceipt = await issueReceipt(client, deps.signer, {
        v: 1, kind: 'custody_claim', ledgerRefId: c.ref_id, userId, tableId: c.table_id ?? undefined,
        custodyEntryId: c.entry_id.toString(), chipAmount: c.amount, moneyKind: c.money_kind,
      });
      return { c, receipt };
    });
    if (!c.replayed) log.info({ userId, entryId: b.entryId, amount: c.amount.toString() }, 'custody claimed');
    res.json({
      ok: true, entryId: c.entry_id.toString(), amount: Number(c.amount), moneyKind: c.money_kind, txHash: c.ref_id,
      receipt: receiptJson(receipt), ...(c.replayed ? { replay: true } : {}),
    });
  });

  app.get('/api/cage/receipts', deps.jwt.require, async (_req, res) => {
    const rows = await receiptsOf(pool, res.locals.claims.sub);
    res.json({
      receipts: rows.map((r) => receiptJson({
        id: r.id, ledgerRefId: r.ledger_ref_id, userId: res.locals.claims.sub, tableId: r.table_id, historyHash: r.history_hash,
        payload: r.payload, signature: r.signature, publicKey: r.public_key, createdAt: r.created_at, replayed: false,
      })),
    });
  });

  app.get('/api/cage/balances', deps.jwt.require, async (_req, res) => {
    const rows = await userBalances(pool, res.locals.claims.sub);
    const balances: Record<string, number> = { play: 0, real: 0 };
    for (const r of rows) balances[r.money_kind] = Number(r.balance);
    res.json({ balances });
  });
}
