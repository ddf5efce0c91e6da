// The operators' acts on the game side that the cage serves (an operator's access JWT; the SQL
// checks its live session, game.* functions granted to the cage login):
//   GET    /api/operator/process-urls            the list of public URLs game processes may announce
//   POST   /api/operator/process-urls            adds one ({ url })
//   DELETE /api/operator/process-urls            removes one ({ url }): clients are no longer sent there
//   POST   /api/operator/tables/:tableId/status  freezes or thaws a table ({ status: frozen | active })
// A frozen table refuses deposits and withdrawals. npm run ops -- process-url / freeze / thaw.
import type { Express } from 'express';
import type pg from 'pg';
import type { Logger } from 'pino';
import { z } from 'zod';
import { ApiError, parseInput } from '../http/errors.ts';
import { operatorSession, type JwtVerifier } from '../http/jwt.ts';
import { describeRoute } from '../http/openapi.ts';

const urlBody = z.object({ url: z.string().min(1).max(500).regex(/^https?:\/\/\S+$/) });
const statusBody = z.object({ status: z.enum(['frozen', 'active']) });

export const operatorGameRoutes = [
  describeRoute({ method: 'get', path: '/api/operator/process-urls', auth: 'admin', summary: 'The public URLs game processes may announce', responses: { 200: '{ urls }' } }),
  describeRoute({
    method: 'post', path: '/api/operator/process-urls', auth: 'admin', summary: 'Adds a game process URL to the list', body: urlBody,
    responses: { 200: '{ url, added }' },
  }),
  describeRoute({
    method: 'delete', path: '/api/operator/process-urls', auth: 'admin', summary: 'Removes a game process URL from the list', body: urlBody,
    responses: { 200: '{ url, removed }' },
  }),
  describeRoute({
    method: 'post', path: '/api/operator/tables/:tableId/status', auth: 'admin', summary: 'Freezes or thaws a table', body: statusBody,
    responses: { 200: '{ tableId, status }', 404: 'table_not_found' },
  }),
];

const parse = parseInput;

export function installOperatorGameRoutes(app: Express, deps: { pool: pg.Pool; log: Logger; jwt: JwtVerifier }) {
  const { pool, log } = deps;
  const operator = deps.jwt.requireAdmin;
  app.get('/api/operator/process-urls', operator, async (_req, res) => {
    const { rows } = await pool.query<{ url: string; added_by: string | null; added_at: Date; processes: number }>(
      'select url, added_by, added_at, processes from game.process_url_list($1)', [operatorSession(res)]);
    res.json({ urls: rows.map((r) => ({ url: r.url, addedBy: r.added_by, addedAt: r.added_at, processes: r.processes })) });
  });
  app.post('/api/operator/process-urls', operator, async (req, res) => {
    const b = parse(urlBody, req.body);
    const { rows } = await pool.query<{ added: boolean }>('select game.allow_process_url($1, $2) as added', [operatorSession(res), b.url]);
    log.warn({ adminId: res.locals.claims.sub, url: b.url, added: rows[0]!.added }, 'game process url listed by an operator');
    res.json({ url: b.url, added: rows[0]!.added });
  });
  app.delete('/api/operator/process-urls', operator, async (req, res) => {
    const b = parse(urlBody, req.body);
    const { rows } = await pool.query<{ removed: boolean }>('select game.forbid_process_url($1, $2) as removed', [operatorSession(res), b.url]);
    log.warn({ adminId: res.locals.claims.sub, url: b.url, removed: rows[0]!.removed }, 'game process url removed by an operator');
    res.json({ url: b.url, removed: rows[0]!.removed });
  });
  app.post('/api/operator/tables/:tableId/status', operator, async (req, res) => {
    const b = parse(statusBody, req.body);
    const tableId = String(req.params.tableId);
    if (tableId.length > 64) throw new ApiError(404, 'table_not_found');
    const { rows } = await pool.query<{ status: string }>('select status from game.set_table_status($1, $2, $3)', [operatorSession(res), tableId, b.status]);
    log.warn({ adminId: res.locals.claims.sub, tableId, status: rows[0]!.status }, 'table status set by an operator');
    res.json({ tableId, status: rows[0]!.status });
  });
}
