// Rake reconciliation on the cage (spec, Cage: "Reconciliation claims the house rows and extends
// the hash chain without moving money"):
//   POST /settlement/reconcile-rake   x-service-key; `{ tableId? }`: one table, or every table with
//                                     unreconciled rake
//   GET  /settlement/rake/:tableId    x-service-key; the table's rake terms and its chain
// The rules are in db/functions/cage/80_rake.sql; the worker runs the same reconciler on a timer
// (tasks/cage_reconcile_rake.ts).
import type { Express } from 'express';
import type pg from 'pg';
import type { Logger } from 'pino';
import { z } from 'zod';
import { requireServiceKey } from '../http/service-key.ts';
import { ApiError, zodIssues } from '../http/errors.ts';
import { errorCode, withSpan } from '../telemetry/index.ts';
import { describeRoute } from '../http/openapi.ts';
import { rakeChainOf } from './queries.ts';

export interface RakeReconciliation {
  reconciliationId: string;
  tableId: string;
  moneyKind: string;
  amount: number;
  hands: number;
  rowsDigest: string;
  prevHash: string;
  hash: string;
  reconciledRake: number;
  createdAt: string;
}

export interface RakeRun {
  reconciled: RakeReconciliation[];
  /** Tables refused (rake_books_diverge): nothing of theirs was claimed; an operator looks. */
  refused: { tableId: string; error: string }[];
}

const RECORD = `reconciliation_id, table_id, money_kind, amount, hands, rows_digest, prev_hash, hash, reconciled_rake, created_at`;

function toJson(r: Record<string, any>): RakeReconciliation {
  return {
    reconciliationId: String(r.reconciliation_id ?? r.id), tableId: r.table_id, moneyKind: r.money_kind, amount: Number(r.amount),
    hands: Number(r.hands), rowsDigest: r.rows_digest, prevHash: r.prev_hash, hash: r.hash,
    reconciledRake: Number(r.reconciled_rake), createdAt: new Date(r.created_at).toISOString(),
  };
}

/**
 * Reconciles one table (refusals thrown), or every table with unreconciled rake, each in its own
 * transaction (a table whose books diverge is reported and the others go on).
 */
export async function reconcileRake(pool: pg.Pool, tableId?: string): Promise<RakeRun> {
  if (tableId !== undefined) {
    const { rows } = await pool.query(`select ${RECORD} from cage.reconcile_rake($1)`, [tableId]);
    return { reconciled: rows.map(toJson), refused: [] };
  }
  const run: RakeRun = { reconciled: [], refused: [] };
  const { rows: tables } = await pool.query<{ t: string }>('select t from cage.tables_with_unreconciled_rake() t');
  for (const { t } of tables) {
    try {
      const { rows } = await pool.query(`select ${RECORD} from cage.reconcile_rake($1)`, [t]);
      run.reconciled.push(...rows.map(toJson));
    } catch (err) {
      const code = errorCode(err);
      if (code !== 'rake_books_diverge' && code !== 'table_not_found') throw err;
      run.refused.push({ tableId: t, error: code });
    }
  }
  return run;
}

export const reconcileRakeBody = z.object({ tableId: z.string().min(1).max(128).optional() }).strict();

/** The contracts of installRakeRoutes. */
export const rakeRoutes = [
  describeRoute({
    method: 'post', path: '/settlement/reconcile-rake', auth: 'service', summary: 'Claims the house rows of the rake (one table or all)', body: reconcileRakeBody,
    responses: { 200: '{ ok, ..., amount }' },
  }),
  describeRoute({
    method: 'get', path: '/settlement/rake/:tableId', auth: 'service', summary: 'A table\'s rake',
    responses: { 200: 'the table\'s rake totals', 404: 'table_not_found' },
  }),
];

export function installRakeRoutes(app: Express, deps: { pool: pg.Pool; log: Logger; serviceKey: string | undefined }) {
  const service = requireServiceKey(deps.serviceKey);

  app.post('/settlement/reconcile-rake', service, async (req, res) => {
    const parsed = reconcileRakeBody.safeParse(req.body ?? {});
    if (!parsed.success) throw new ApiError(400, 'bad_request', zodIssues(parsed.error));
    const { tableId } = parsed.data;
    await withSpan('cage.rake.reconcile', { 'rake.table_id': tableId ?? '*' }, async (span) => {
      const run = await reconcileRake(deps.pool, tableId);
      const total = run.reconciled.reduce((t, r) => t + r.amount, 0);
      span.setAttributes({ 'rake.tables': run.reconciled.length, 'rake.amount': total, 'rake.refused': run.refused.length });
      if (run.reconciled.length) deps.log.info({ tables: run.reconciled.length, amount: total }, 'rake reconciled');
      for (const r of run.refused) deps.log.warn({ tableId: r.tableId, error: r.error }, 'rake not reconciled');
      res.json({ ok: true, ...run, amount: total });
    });
  });

  app.get('/settlement/rake/:tableId', service, async (req, res) => {
    const tableId = String(req.params.tableId);
    const { rows: tables } = await deps.pool.query(
      'select table_id, money_kind, unreconciled_rake, reconciled_rake from game.table_records where table_id = $1',
      [tableId],
    );
    const t = tables[0];
    if (!t) throw new ApiError(404, 'table_not_found');
    const rows = await rakeChainOf(deps.pool, tableId);
    res.json({
      tableId, moneyKind: t.money_kind, unreconciledRake: Number(t.unreconciled_rake), reconciledRake: Number(t.reconciled_rake),
      chain: rows.map(toJson),
    });
  });
}
