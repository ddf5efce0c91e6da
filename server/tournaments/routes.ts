// The game role's tournament routes (spec: "Tournaments (game server and related)"); the moves are
// SQL functions (db/functions/tournaments), these routes authenticate, parse and answer:
//   POST /internal/tournament-register    x-service-key  { tableId, agentId } -> a reserved seat for the agent's owner
//   POST /internal/tournament-unregister  x-service-key  { tableId, agentId } -> the unpaid reserve released
//   POST /admin/force-end-tournament      x-service-key  { tableId }          -> playing -> ended
//   POST /internal/force-end-tournament   x-service-key  { tableId }          -> the same (the service path)
//   GET  /admin/tournaments               admin JWT      -> every tournament, newest first
//   GET  /admin/tournaments/:tableId      admin JWT      -> one, with its entrants and payouts
//   POST /internal/payout-confirmed       x-service-key  the cage paid a place -> tournament_payout_settled (NOTIFY)
import type { Express, RequestHandler } from 'express';
import type pg from 'pg';
import type { Logger } from 'pino';
import { z } from 'zod';
import { ApiError, refusedWith, zodIssues } from '../http/errors.ts';
import { requireServiceKey } from '../http/service-key.ts';
import { tableId } from '../http/schemas.ts';
import { reserveSeat } from './registration.ts';
import { describeRoute } from '../http/openapi.ts';
import { agentOwnerOf, liveRegistration, tableMode, tournamentDetail, tournamentList } from './queries.ts';

export interface TournamentRouteDeps {
  pool: pg.Pool;
  log: Logger;
  serviceKey: string | undefined;
  requireAdmin: RequestHandler;
  /** Loads (or finds) the table's room: a registration reaches a live room even with no connection. */
  loadRoom: (tableId: string) => Promise<unknown>;

}

export const agentBody = z.object({ tableId, agentId: z.uuid() });
export const tableBody = z.object({ tableId });
export const payoutBody = z.object({
  tableId,
  position: z.number().int().min(1).max(10),
  userId: z.uuid(),
  amount: z.string().regex(/^[0-9]{1,19}$/),
  txHash: z.string().min(1).max(200),
});

function parse<T extends z.ZodType>(schema: T, body: unknown): z.infer<T> {
  const parsed = schema.safeParse(body ?? {});
  if (!parsed.success) throw new ApiError(400, 'bad_request', zodIssues(parsed.error));
  return parsed.data;
}

/** The table of a tournament route: 404 table_not_found, 400 not_a_tournament. */
async function tournamentTable(pool: pg.Pool, id: string) {
  const t = await tableMode(pool, id);
  if (!t) throw new ApiError(404, 'table_not_found');
  if (t.mode !== 'sng') throw new ApiError(400, 'not_a_tournament');
  return t;
}

async function agentOwner(pool: pg.Pool, agentId: string): Promise<string> {
  const owner = await agentOwnerOf(pool, agentId);
  if (!owner) throw new ApiError(404, 'agent_not_found');
  return owner;
}

/** The contracts of installTournamentRoutes. */
export const tournamentRoutes = [
  describeRoute({
    method: 'post', path: '/internal/tournament-register', auth: 'service', summary: 'Reserves a Sit-and-Go seat for an agent', body: agentBody,
    responses: { 200: '{ ok, status: reserved, ownerUserId, ... }', 404: 'table_not_found / agent_not_found', 400: 'not_a_tournament' },
  }),
  describeRoute({
    method: 'post', path: '/internal/tournament-unregister', auth: 'service', summary: 'Releases an agent\'s reserved seat', body: agentBody,
    responses: { 200: '{ ok, status: released, ownerUserId }', 404: 'tournament_not_registered', 409: 'paid_registration_use_refund_path' },
  }),
  describeRoute({
    method: 'post', path: '/admin/force-end-tournament', auth: 'service', summary: 'Ends a tournament now (its entries refunded)', body: tableBody,
    responses: { 200: '{ ok, tableId, state: ended }', 409: 'cannot_force_end' },
  }),
  describeRoute({
    method: 'post', path: '/internal/force-end-tournament', auth: 'service', summary: 'Ends a tournament now (the same as /admin/force-end-tournament)', body: tableBody,
    responses: { 200: '{ ok, tableId, state: ended }', 409: 'cannot_force_end' },
  }),
  describeRoute({
    method: 'post', path: '/internal/payout-confirmed', auth: 'service', summary: 'A bank confirms a prize\'s payout', body: payoutBody,
    responses: { 200: '{ ok: true }' },
  }),
  describeRoute({
    method: 'get', path: '/admin/tournaments', auth: 'admin', summary: 'Every tournament (operator)',
    responses: { 200: '{ tournaments: [...] }' },
  }),
  describeRoute({
    method: 'get', path: '/admin/tournaments/:tableId', auth: 'admin', summary: 'A tournament with its entrants and payouts (operator)', params: z.object({ tableId }),
    responses: { 200: '{ ...tournament, entrants, payouts }', 404: 'table_not_found', 400: 'not_a_tournament' },
  }),
];

export function installTournamentRoutes(app: Express, deps: TournamentRouteDeps) {
  const { pool, log } = deps;
  const service = requireServiceKey(deps.serviceKey);

  app.post('/internal/tournament-register', service, async (req, res) => {
    const b = parse(agentBody, req.body);
    await tournamentTable(pool, b.tableId);
    const ownerUserId = await agentOwner(pool, b.agentId);
    await deps.loadRoom(b.tableId).catch((err) => log.warn({ err: (err as Error).message, tableId: b.tableId }, 'tournament room not loaded here'));
    const seat = await reserveSeat(pool, { tableId: b.tableId, sid: null, agentId: b.agentId, advisorAgentId: null });
    log.info({ tableId: b.tableId, agentId: b.agentId, ownerUserId, seatIndex: seat.seatIndex }, 'tournament seat reserved for an agent');
    res.json({ ok: true, status: 'reserved', ownerUserId, ...seat });
  });

  app.post('/internal/tournament-unregister', service, async (req, res) => {
    const b = parse(agentBody, req.body);
    await tournamentTable(pool, b.tableId);
    const ownerUserId = await agentOwner(pool, b.agentId);
    // a paid entry is refused before anything moves: its refund is the bank's (POST /api/tournament/unregister)
    const registration = await liveRegistration(pool, b.tableId, ownerUserId);
    if (registration?.entry_state === 'paid') throw new ApiError(409, 'paid_registration_use_refund_path');
    if (registration && registration.agent_id !== b.agentId) throw new ApiError(404, 'tournament_not_registered');
    await pool.query('select game.tournament_release_reserve($1, $2, null)', [b.tableId, ownerUserId]);
    res.json({ ok: true, status: 'released', ownerUserId });
  });

  const forceEnd: RequestHandler = async (req, res) => {
    const b = parse(tableBody, req.body);
    await tournamentTable(pool, b.tableId);
    try {
      await pool.query('select game.tournament_force_end($1)', [b.tableId]);
    } catch (err) {
      const e = err as { code?: string; detail?: string };
      // the spec's sentence as the error, the registry's code and the state beside it
      if (refusedWith(e, 'game', 'cannot_force_end')) throw new ApiError(409, `cannot force-end from state '${e.detail}'`, undefined, { code: 'cannot_force_end', state: e.detail });
      throw err;
    }
    log.warn({ tableId: b.tableId }, 'tournament force-ended');
    res.json({ ok: true, tableId: b.tableId, state: 'ended' });
  };
  app.post('/admin/force-end-tournament', service, forceEnd);
  app.post('/internal/force-end-tournament', service, forceEnd);

  app.post('/internal/payout-confirmed', service, async (req, res) => {
    const b = parse(payoutBody, req.body);
    await tournamentTable(pool, b.tableId);
    // told to every game process (the cage's call lands on any of them); the one running the table
    // announces it from the payout row, once
    await pool.query("select pg_notify('game_tournament', $1)", [JSON.stringify({ tableId: b.tableId, type: 'tournament_payout_settled', position: b.position })]);
    res.json({ ok: true });
  });

  installAdminReads(app, deps);
}

function installAdminReads(app: Express, deps: TournamentRouteDeps) {
  const { pool } = deps;
  app.get('/admin/tournaments', deps.requireAdmin, async (_req, res) => {
    const rows = await tournamentList(pool);
    res.json({ tournaments: rows });
  });

  app.get('/admin/tournaments/:tableId', deps.requireAdmin, async (req, res) => {
    const id = tableId.safeParse(req.params.tableId);
    if (!id.success) throw new ApiError(400, 'bad_request', zodIssues(id.error));
    await tournamentTable(pool, id.data);
    const { t, entrants, payouts } = await tournamentDetail(pool, id.data);
    res.json({ ...t, entrants, payouts });
  });
}
