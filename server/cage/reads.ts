// The cage's class 2 routes (spec: "Cage (behind the bank's base address)": ported reads, with the
// test seeds), so a client switched between the chain bank and the cage finds them at the same place:
//   GET  /api/tables                  the lobby (proxied to the game role, filters and paging as there)
//   GET  /api/tables/:tableId         a table's room (proxied to the game role)
//   GET  /api/economy                 the economy's flags: money kinds, the real-money switch, the
//                                     play-chip transfer gate, units
//   GET  /api/demo                    the demo flags: whether this is a test-harness platform and its seeds
//   GET  /api/house                   the house flags: what the house does (rake) and does not yet (seating)
//   GET  /settlement/tables/:tableId  a table's settlement records: withdrawals (stand-ups, custody,
//                                     busts) and deposits, newest first (x-service-key)
//   POST /internal/test/seed-chips    play chips to the caller (JWT), mounted only under the test harness
import type { Express } from 'express';
import type pg from 'pg';
import { z } from 'zod';
import { ApiError, zodIssues } from '../http/errors.ts';
import { playerSession, type JwtVerifier } from '../http/jwt.ts';
import type { ServiceClient } from '../http/service-client.ts';
import { requireServiceKey } from '../http/service-key.ts';
import { tableId as tableIdParam } from '../http/schemas.ts';
import { MICRO_PER_CHIP } from './gas.ts';
import { PENDING_ROUTES } from './not-yet.ts';
import { describeRoute } from '../http/openapi.ts';
import { tableIntents } from './queries.ts';
import { tableListQuery } from '../bank-contract/contract.ts';

type ReadDeps = {
  pool: pg.Pool; jwt: JwtVerifier; game: ServiceClient; serviceKey: string | undefined; testAuthPermitted: boolean; environment: string;
};


export const seedBody = z.object({ amount: z.number().int().min(1).max(1_000_000), idempotencyKey: z.string().regex(/^[\x21-\x7e]{1,128}$/) }).strict();
const tableParams = z.object({ tableId: tableIdParam });

/** The contracts of installCageReads (the seed route only while the test harness is permitted). */
export const cageReadRoutes = (testAuthPermitted: boolean) => [
  describeRoute({
    method: 'get', path: '/api/tables', auth: 'none', summary: 'The lobby, from the game role (its query is judged there)', query: tableListQuery,
    responses: { 200: 'the game role\'s answer', 503: 'game_unavailable' },
  }),
  describeRoute({
    method: 'get', path: '/api/tables/:tableId', auth: 'none', summary: 'A table, from the game role', params: tableParams,
    responses: { 200: 'the game role\'s answer', 404: 'table_not_found', 503: 'game_unavailable' },
  }),
  describeRoute({
    method: 'get', path: '/api/economy', auth: 'none', summary: 'The economy\'s switches and the play-transfer gate',
    responses: { 200: 'the switches and the gate' },
  }),
  describeRoute({ method: 'get', path: '/api/demo', auth: 'none', summary: 'The demo\'s settings', responses: { 200: 'the demo settings' } }),
  describeRoute({ method: 'get', path: '/api/house', auth: 'none', summary: 'The house\'s seating (not served yet: see the pending routes)', responses: { 200: 'the house settings' } }),
  describeRoute({
    method: 'get', path: '/settlement/tables/:tableId', auth: 'service', summary: 'A table\'s withdrawals and deposits', params: tableParams,
    responses: { 200: '{ tableId, withdrawals, deposits }' },
  }),
  ...(testAuthPermitted ? [describeRoute({
    method: 'post', path: '/internal/test/seed-chips', auth: 'jwt', summary: 'Test harness: play chips for the caller', body: seedBody,
    responses: { 200: '{ ok, refId, amount, moneyKind: play, balance, replay? }' },
  })] : []),
];

export function installCageReads(app: Express, deps: ReadDeps) {
  installTablesProxy(app, deps);
  installFlags(app, deps);
  installSettlementReads(app, deps);
  if (deps.testAuthPermitted) installTestSeeds(app, deps);
}

function installTablesProxy(app: Express, deps: ReadDeps) {
  const { game } = deps;

  // the tables proxy: the game role's answer as it is, or 503 when it cannot be reached
  const proxy = async (path: string, res: import('express').Response) => {
    const answer = await game.get(path);
    if ('unreachable' in answer) throw new ApiError(503, 'game_unavailable');
    res.status(answer.status).json(answer.body);
  };
  app.get('/api/tables', async (req, res) => {
    const query = new URLSearchParams();
    for (const [k, v] of Object.entries(req.query)) if (typeof v === 'string') query.set(k, v);
    await proxy(`/api/tables${query.size ? `?${query}` : ''}`, res);
  });
  app.get('/api/tables/:tableId', async (req, res) => {
    const id = tableIdParam.safeParse(req.params.tableId);
    if (!id.success) throw new ApiError(404, 'table_not_found');
    await proxy(`/api/tables/${encodeURIComponent(id.data)}`, res);
  });
}

function installFlags(app: Express, deps: ReadDeps) {
  const { pool } = deps;

  app.get('/api/economy', async (_req, res) => {
    const [switches, gate] = await Promise.all([
      pool.query<{ name: string; enabled: boolean }>('select name, enabled from cage.switch_states()'),
      pool.query<{ environment: string; enabled: boolean; frozen_accounts: bigint; last_event: unknown }>('select * from cage.play_gate_state()'),
    ]);
    const g = gate.rows[0]!;
    res.json({
      bank: 'cage',
      moneyKinds: ['play', 'real'],
      realMoneyEnabled: switches.rows.some((s) => s.name === 'real_money' && s.enabled),
      playTransferGate: { enabled: g.enabled, environment: g.environment, frozenAccounts: Number(g.frozen_accounts), lastChange: g.last_event ?? null },
      units: { chip: 1, custodyBaseUnitsPerChip: Number(MICRO_PER_CHIP), gasMicroPerChip: Number(MICRO_PER_CHIP) },
    });
  });

  app.get('/api/demo', (_req, res) => {
    res.json({
      demo: deps.testAuthPermitted,
      environment: deps.environment,
      seeds: deps.testAuthPermitted ? [{ method: 'POST', path: '/internal/test/seed-chips', auth: 'jwt', moneyKind: 'play', maxAmount: 1_000_000 }] : [],
    });
  });

  app.get('/api/house', (_req, res) => {
    res.json({
      rake: { recorded: true, moved: false, reconciliation: 'POST /settlement/reconcile-rake' },
      tournamentHouseCut: { moved: false, note: 'a ledger calculation: rakeFee x seats stays in the pool' },
      seating: PENDING_ROUTES.filter((r) => r.path.startsWith('/api/operator/seat') || r.path.startsWith('/api/house/seat'))
        .map((r) => ({ path: r.path, enabled: false, error: 'not_yet_cage', phase: r.phase })),
    });
  });

}

function installSettlementReads(app: Express, deps: ReadDeps) {
  const { pool } = deps;
  const service = requireServiceKey(deps.serviceKey);
  app.get('/settlement/tables/:tableId', service, async (req, res) => {
    const id = tableIdParam.safeParse(req.params.tableId);
    if (!id.success) throw new ApiError(400, 'bad_request', zodIssues(id.error));
    const { withdrawals, deposits } = await tableIntents(pool, id.data);
    res.json({
      tableId: id.data,
      withdrawals: withdrawals.map((w) => ({
        idempotencyKey: w.idempotency_key, ledgerRefId: w.ledger_ref_id, userId: w.user_id, playerId: w.player_id.toString(),
        amount: Number(w.amount), historyHash: w.history_hash, settlement: w.settlement, forced: w.forced,
        custodyEntryId: w.custody_entry_id?.toString() ?? null, settledAt: w.settled_at, createdAt: w.created_at,
      })),
      deposits: deposits.map((d) => ({
        refId: d.ref_id, userId: d.user_id, seatIndex: d.seat_index, amount: Number(d.amount), moneyKind: d.money_kind,
        status: d.status, error: d.error, createdAt: d.created_at, updatedAt: d.updated_at,
      })),
    });
  });

}

function installTestSeeds(app: Express, deps: ReadDeps) {
  const { pool } = deps;
  {
    app.post('/internal/test/seed-chips', deps.jwt.require, async (req, res) => {
      const parsed = seedBody.safeParse(req.body ?? {});
      if (!parsed.success) throw new ApiError(400, 'bad_request', zodIssues(parsed.error));
      const { rows } = await pool.query<{ ref_id: string; status: string; balance: bigint }>(
        'select ref_id, status, balance from cage.seed_test_chips($1, $2, $3)', [playerSession(res), parsed.data.idempotencyKey, parsed.data.amount],
      );
      const r = rows[0]!;
      res.json({ ok: true, refId: r.ref_id, amount: parsed.data.amount, moneyKind: 'play', balance: Number(r.balance), ...(r.status === 'replayed' ? { replay: true } : {}) });
    });
  }
}
