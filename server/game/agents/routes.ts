// The minimal agent registry (JWT, the caller's own agents): create an agent, publish versions,
// flag a decision. Each event that is a claim-board condition is reported in-process
// (markConditionMet), best effort: the registry works whether the board is on or off.
//   first version published        -> agent_version_published
//   a version after a flagged one  -> agent_version_republished
//   a decision flagged             -> hand_flagged
import type { Express } from 'express';
import type pg from 'pg';
import type { Logger } from 'pino';
import { z } from 'zod';
import { inTransaction } from '../../db/transaction.ts';
import { ApiError, zodIssues } from '../../http/errors.ts';
import { playerSession, type JwtVerifier } from '../../http/jwt.ts';
import type { ClaimBoard } from '../../claims/board.ts';
import { describeRoute } from '../../http/openapi.ts';
import { agentsOf } from '../queries.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function parse<T extends z.ZodType>(schema: T, body: unknown): z.infer<T> {
  const parsed = schema.safeParse(body ?? {});
  if (!parsed.success) throw new ApiError(400, 'bad_request', zodIssues(parsed.error));
  return parsed.data;
}
function agentIdOf(value: unknown): string {
  if (typeof value !== 'string' || !UUID.test(value)) throw new ApiError(404, 'agent_not_found');
  return value;
}

export const agentBody = z.object({ name: z.string().trim().min(1).max(64) });
export const agentVersionBody = z.object({ manifest: z.record(z.string(), z.unknown()).optional() });
export const agentFlagBody = z.object({ handId: z.string().min(1).max(128).optional(), note: z.string().max(1000).optional() });
const agentParams = z.object({ agentId: z.uuid().describe('an agent of the caller (anything else: agent_not_found)') });

export const agentRoutes = [
  describeRoute({
    method: 'get', path: '/api/agents', auth: 'jwt', summary: 'The caller\'s agents',
    responses: { 200: '{ agents: [{ agentId, name, version, createdAt }] }' },
  }),
  describeRoute({
    method: 'post', path: '/api/agents', auth: 'jwt', summary: 'Registers an agent', body: agentBody,
    responses: { 201: '{ agentId, name, createdAt }' },
  }),
  describeRoute({
    method: 'post', path: '/api/agents/:agentId/versions', auth: 'jwt', summary: 'Publishes a version of an agent', params: agentParams, body: agentVersionBody,
    responses: { 201: '{ agentId, version, publishedAt, event }', 404: 'agent_not_found' },
  }),
  describeRoute({
    method: 'post', path: '/api/agents/:agentId/flags', auth: 'jwt', summary: 'Flags an agent (a hand of it, a note)', params: agentParams, body: agentFlagBody,
    responses: { 201: '{ flagId, agentId, version, createdAt }', 404: 'agent_not_found' },
  }),
];

export function installAgentRoutes(app: Express, deps: { pool: pg.Pool; log: Logger; jwt: JwtVerifier; board: ClaimBoard }) {
  const { pool, log, jwt, board } = deps;

  /**
   * The claim-board condition an agent event meets, in the event's own transaction (the spec's
   * in-process call): a publish or flag that rolls back lights nothing. A refusal of the condition
   * itself (the board switched off since it was read) is rolled back to its savepoint and logged; the
   * event stands.
   */
  const condition = async (client: pg.PoolClient, userId: string, conditionKey: string, idempotencyKey: string) => {
    await client.query('savepoint condition');
    try {
      await board.markConditionMet(userId, conditionKey, idempotencyKey, client);
      await client.query('release savepoint condition');
    } catch (err) {
      await client.query('rollback to savepoint condition');
      log.warn({ userId, conditionKey, err: (err as Error).message }, 'claim condition not recorded');
    }
  };

  app.get('/api/agents', jwt.require, async (_req, res) => {
    const rows = await agentsOf(pool, res.locals.claims.sub);
    res.json({ agents: rows.map((a) => ({ agentId: a.id, name: a.name, version: a.version, createdAt: a.created_at })) });
  });

  app.post('/api/agents', jwt.require, async (req, res) => {
    const { name } = parse(agentBody, req.body);
    const { rows } = await pool.query('select id, name, created_at from game.create_agent($1, $2)', [playerSession(res), name]);
    res.status(201).json({ agentId: rows[0].id, name: rows[0].name, createdAt: rows[0].created_at });
  });

  app.post('/api/agents/:agentId/versions', jwt.require, async (req, res) => {
    const userId: string = res.locals.claims.sub;
    const agentId = agentIdOf(req.params.agentId);
    const { manifest } = parse(agentVersionBody, req.body);
    const v = await inTransaction(pool, async (client) => {
      const { rows } = await client.query<{ version: number; published_at: Date; event: string | null }>(
        'select version, published_at, event from game.publish_agent_version($1, $2, $3)',
        [playerSession(res), agentId, manifest ? JSON.stringify(manifest) : null],
      );
      const published = rows[0]!;
      if (published.event) await condition(client, userId, published.event, `${published.event}:${agentId}:${published.version}`);
      return published;
    });
    res.status(201).json({ agentId, version: v.version, publishedAt: v.published_at, event: v.event });
  });

  app.post('/api/agents/:agentId/flags', jwt.require, async (req, res) => {
    const userId: string = res.locals.claims.sub;
    const agentId = agentIdOf(req.params.agentId);
    const b = parse(agentFlagBody, req.body);
    const flag = await inTransaction(pool, async (client) => {
      const { rows } = await client.query('select id, version, created_at from game.flag_agent_decision($1, $2, $3, $4)', [
        playerSession(res), agentId, b.handId ?? null, b.note ?? null,
      ]);
      await condition(client, userId, 'hand_flagged', `hand_flagged:${agentId}:${rows[0].id}`);
      return rows[0];
    });
    res.status(201).json({ flagId: flag.id.toString(), agentId, version: flag.version, createdAt: flag.created_at });
  });
}
