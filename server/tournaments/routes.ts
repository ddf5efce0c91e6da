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
import { agentOwnerOf } from './queries.ts';

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
  const { rows } = await pool.query<{ mode: string; tournament_state: string | null }>('select mode, tournament_state from game.table_records where table_id = $1', [id]);
  if (!rows[0]) throw new ApiError(404, 'table_not_found');
  if (rows[0].mode !== 'sng') throw new ApiError(400, 'not_a_tournament');
  return rows[0];
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
    const { rows } = await pool.query<{ entry_state: string | null; agent_id: string | null }>(
      "select entry_state, agent_id from game.seats where table_id = $1 and user_id = $2 and status <> 'closed'", [b.tableId, ownerUserId],
    );
    if (rows[0]?.entry_state === 'paid') throw new ApiError(409, 'paid_registration_use_refund_path');
    if (rows[0] && rows[0].agent_id !== b.agentId) throw new ApiError(404, 'tournament_not_registered');
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

/** The admin UI offers force-end for a tournament playing whose level is over 5 minutes old (spec: Limits). */
const FORCE_END_AVAILABLE = "(t.tournament_state = 'playing' and t.level_started_at < now() - interval '5 minutes')";
/**
 * The field's count: the live registrations while registering; from the start on, the entrants who
 * played (paid and not refunded), whatever their rows became after settlement.
 */
const REGISTERED_COUNT = "(case when t.tournament_state = 'registering' then t.registered_count else t.played_count end)";

function installAdminReads(app: Express, deps: TournamentRouteDeps) {
  const { pool } = deps;
  app.get('/admin/tournaments', deps.requireAdmin, async (_req, res) => {
    const { rows } = await pool.query(
      `select t.table_id as "tableId", t.kind, t.tournament_state as state, t.current_level as "currentLevel",
              (t.settings ->> 'seats')::int as seats, t.settings ->> 'entryFee' as "entryFee",
              ${REGISTERED_COUNT} as "registeredCount",
              t.created_at as "createdAt", t.play_started_at as "playStartedAt", t.ended_at as "endedAt", t.closed_at as "closedAt",
              ${FORCE_END_AVAILABLE} as "forceEndAvailable"
         from game.tournaments t order by t.created_at desc limit 500`,
    );
    res.json({ tournaments: rows });
  });

  app.get('/admin/tournaments/:tableId', deps.requireAdmin, async (req, res) => {
    const id = tableId.safeParse(req.params.tableId);
    if (!id.success) throw new ApiError(400, 'bad_request', zodIssues(id.error));
    await tournamentTable(pool, id.data);
    const [{ rows: [t] }, { rows: entrants }, { rows: payouts }] = await Promise.all([
      pool.query(
        `select table_id as "tableId", kind, money_kind as "moneyKind", tournament_state as state, current_level as "currentLevel",
                level_started_at as "levelStartedAt", starts_at as "startsAt", play_started_at as "playStartedAt",
                ended_at as "endedAt", closed_at as "closedAt", auto_fold_count as "autoFoldCount", settings,
                ${REGISTERED_COUNT} as "registeredCount", ${FORCE_END_AVAILABLE} as "forceEndAvailable"
           from game.tournaments t where table_id = $1`, [id.data]),
      pool.query(
        `select p.user_id as "userId", p.agent_id as "agentId", p.seat_index as "seatIndex", p.entry_state as "entryState",
                p.registration, p.status,
                p.chip_balance::text as "entryClaim", p.tournament_stack::text as stack, p.elimination_order as position, p.tie_place as "tiedFrom",
                p.reserved_until as "reservedUntil", p.closed_at as "closedAt"
           from game.seats p where p.table_id = $1 and p.entry_state is not null
          order by (p.registration in ('refunded', 'released', 'expired')), p.elimination_order nulls first, p.seat_index`, [id.data]),
      pool.query(
        `select position, user_id as "userId", amount::text, submitted_at as "submittedAt", confirmed_at as "confirmedAt",
                failed_at as "failedAt", tx_hash as "txHash" from game.tournament_payouts($1)`, [id.data]),
    ]);
    res.json({ ...t, entrants, payouts });
  });
}
