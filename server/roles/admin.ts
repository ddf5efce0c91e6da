// The admin role: PostGraphile 5 over the cage, game and claims schemas, read-only, under row-level security.
// An operator reads as themselves: a request with an operator's access JWT (Bearer, `role: admin`,
// its admin session's `sid`) runs as poker_admin with `poker.admin_sid` set to that sid, and every
// policy of poker_admin shows rows only while that session is live (auth.current_admin(), checked
// in SQL: a signed-out or expired session reads nothing, whatever the token's exp). Each request is
// logged with the admin's id. Any other request (no credential, a player's token, the service key)
// runs as poker_anonymous, for which no policy exists, so it sees no row.
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import type pg from 'pg';
import { z } from 'zod';
import type { Logger } from 'pino';
import { postgraphile } from 'postgraphile';
import { isSafeError } from 'postgraphile/grafast';
import { GraphQLError, type ValidationRule } from 'postgraphile/graphql';
import { defaultMaskError } from 'postgraphile/grafserv';
import { PostGraphileAmberPreset } from 'postgraphile/presets/amber';
import { makePgService } from 'postgraphile/adaptors/pg';
import { grafserv } from 'postgraphile/grafserv/express/v4';
import { createApp, listen, mountedRoutes } from '../http/app.ts';
import { bearerToken, lazyJwtVerifier, type AccessClaims, type JwtVerifier } from '../http/jwt.ts';
import { authIssuer, loginCredentials } from '../config/index.ts';
import { createRolePool } from '../db/pools.ts';
import type { Config } from '../config/index.ts';
import type { RoleContext, StartedRole } from './types.ts';
import { judge, type QueryLimits } from '../admin/limits.ts';
import { HandHistoryStoredPlugin } from '../admin/hand-history.ts';
import { describeRoute } from '../http/openapi.ts';
import { auditLiveness, auditRoutes, cronPeriodSeconds, installAuditRoutes } from '../audit/routes.ts';

export const ADMIN_SCHEMAS = ['cage', 'game', 'claims'];

/** What the gate found on a request: the verified operator token's claims, if any. */
const operators = new WeakMap<IncomingMessage, AccessClaims>();

/** The database settings of a request: poker_admin with the operator's session handle, else poker_anonymous. */
export function adminSettingsFor(req: IncomingMessage | undefined): Record<string, string> {
  const claims = req ? operators.get(req) : undefined;
  return claims?.sid ? { role: 'poker_admin', 'poker.admin_sid': claims.sid } : { role: 'poker_anonymous' };
}

/**
 * graphql-js 17's KnownOperationTypes rule: a mutation sent to this schema (which has none) is a
 * validation error like any other, not a query-planning crash that grafast prints with its stack.
 */
export const knownOperationTypes: ValidationRule = (context) => ({
  OperationDefinition(node) {
    if (!context.getSchema().getRootType(node.operation)) {
      context.reportError(new GraphQLError(`This schema does not support ${node.operation} operations.`, { nodes: node }));
    }
  },
});

const AdminValidationPlugin: GraphileConfig.Plugin = {
  name: 'PokerAdminValidationPlugin',
  version: '0.1.0',
  grafserv: {
    middleware: {
      setPreset(next, event) {
        event.validationRules.push(knownOperationTypes);
        return next();
      },
    },
  },
};

export const graphqlBody = z.object({
  query: z.string(),
  operationName: z.string().nullish(),
  variables: z.record(z.string(), z.unknown()).nullish(),
  extensions: z.record(z.string(), z.unknown()).nullish(),
});

/** The admin role's one route (grafserv answers it behind the gate); GraphiQL is not an API route. */
export const adminRoutes = [
  describeRoute({
    method: 'all', path: '/graphql', serves: ['post'], auth: ['admin', 'none'],
    summary: 'The read-only admin GraphQL (PostGraphile): an operator reads under row-level security; anyone else reads nothing',
    description: 'Only POST with a JSON body; any other method is 405 method_not_allowed. In production an anonymous caller is refused 401 admin_token_required.',
    body: graphqlBody,
    responses: {
      200: 'the GraphQL result ({ data, errors })', 400: 'bad_request or a cost refusal (query_too_deep, too_many_aliases, ...), with GraphQL\'s errors',
      401: 'invalid_token / admin_token_required', 403: 'admin_required', 405: 'method_not_allowed', 415: 'unsupported_media_type',
    },
  }),
];

export function queryLimits(config: Config): QueryLimits {
  return {
    maxDepth: config.ADMIN_GRAPHQL_MAX_DEPTH,
    maxAliases: config.ADMIN_GRAPHQL_MAX_ALIASES,
    maxSelections: config.ADMIN_GRAPHQL_MAX_SELECTIONS,
    maxTokens: config.ADMIN_GRAPHQL_MAX_TOKENS,
  };
}

/**
 * In front of grafserv on /graphql. Refusals carry our `error` code and GraphQL's `errors` list.
 * 1. In production an anonymous caller gets nothing to plan (and so no introspection): 401.
 * 2. One transport: POST with a JSON body of GraphQL's shape (no GET, no application/graphql).
 * 3. The query's cost (limits.ts), before grafserv parses, validates and grafast plans it.
 */
function graphqlGate(config: Config, jwt: JwtVerifier, log: Logger): RequestHandler {
  const limits = queryLimits(config);
  const refuse = (res: Parameters<RequestHandler>[1], status: number, error: string, message: string) =>
    void res.status(status).json({ error, errors: [{ message }] });
  return async (req, res, next) => {
    // a Bearer token must be an operator's, with its session handle; anything else that presents
    // one is refused (a token is never silently downgraded to anonymous)
    const token = bearerToken(req);
    if (token !== undefined || req.get('authorization') !== undefined) {
      let claims: AccessClaims;
      try {
        if (!token) throw new Error('not a JWT');
        claims = await jwt.verify(token);
      } catch {
        return refuse(res, 401, 'invalid_token', 'the access JWT is not valid');
      }
      if (claims.role !== 'admin' || typeof claims.sid !== 'string') return refuse(res, 403, 'admin_required', 'an operator\'s access JWT');
      operators.set(req, claims);
      log.info({ adminId: claims.sub, operationName: typeof req.body?.operationName === 'string' ? req.body.operationName.slice(0, 100) : undefined }, 'admin GraphQL request');
    } else if (config.NODE_ENV === 'production') {
      return refuse(res, 401, 'admin_token_required', 'the admin GraphQL needs an operator\'s access JWT');
    }
    if (req.method !== 'POST') return void res.set('allow', 'POST').status(405).json({ error: 'method_not_allowed' });
    if (!req.is('application/json')) return void res.status(415).json({ error: 'unsupported_media_type' });
    const body = graphqlBody.safeParse(req.body);
    if (!body.success) return refuse(res, 400, 'bad_request', 'a JSON object with a string `query`');
    const verdict = judge(body.data.query, limits);
    if (!verdict.ok) return refuse(res, 400, verdict.code, `query refused: ${verdict.reason}`);
    next();
  };
}

/**
 * Grafserv's masking, logged through pino (one JSON line) instead of console.error: the client sees
 * only an id to quote, the log has the error under the same id.
 */
function maskErrorWith(log: Logger) {
  return (error: GraphQLError): GraphQLError => {
    const original = error.originalError;
    if (!original || original instanceof GraphQLError || isSafeError(original)) return defaultMaskError(error);
    const errorId = randomBytes(6).toString('hex');
    log.error({ err: original, errorId, path: error.path }, 'GraphQL request failed');
    return new GraphQLError(`An error occurred (error id ${errorId})`, {
      nodes: error.nodes,
      source: error.source,
      positions: error.positions,
      path: error.path,
      originalError: original,
      extensions: { errorId },
    });
  };
}

/** PostGraphile's preset for the admin GraphQL: read-only, each request as the role it earned. */
function adminPreset(config: Config, pool: pg.Pool, roleLog: Logger): GraphileConfig.Preset {
  return {
    extends: [PostGraphileAmberPreset],
    plugins: [AdminValidationPlugin, HandHistoryStoredPlugin],
    disablePlugins: ['PgMutationCreatePlugin', 'PgMutationUpdateDeletePlugin'],
    pgServices: [
      makePgService({
        pool,
        schemas: ADMIN_SCHEMAS,
        // The schema shows what an admin may read (RBAC); what a request gets is decided per request.
        pgSettingsForIntrospection: { role: 'poker_admin' },
        pgSettings: (ctx) => adminSettingsFor(ctx.expressv4?.req ?? ctx.node?.req),
      }),
    ],
    grafserv: {
      graphqlPath: '/graphql',
      graphiqlPath: '/',
      graphiql: config.NODE_ENV !== 'production',
      watch: false,
      maskError: maskErrorWith(roleLog),
      allowedRequestContentTypes: ['application/json'],
      graphqlOverGET: false,
    },
    grafast: {
      explain: false,
      timeouts: { planning: config.ADMIN_GRAPHQL_PLANNING_TIMEOUT_MS, execution: config.ADMIN_GRAPHQL_EXECUTION_TIMEOUT_MS },
      // grafast's advice: about six planning layers per selection depth
      maxPlanningDepth: config.ADMIN_GRAPHQL_MAX_DEPTH * 6,
    },
  };
}

/** /health of the admin role: the audit's liveness (issue 31): not ok when its last clean periodic run is older than three periods. */
async function auditHealth(pool: pg.Pool, cron: string, startedAt: Date) {
  const client = await pool.connect();
  try {
    await client.query('begin read only');
    await client.query('set local role poker_admin');
    const audit = await auditLiveness(client, cronPeriodSeconds(cron), startedAt);
    await client.query('commit');
    return { ok: !audit.stale, audit };
  } catch (err) {
    await client.query('rollback').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

export async function startAdmin({ config, databaseUrl, log, peers }: RoleContext): Promise<StartedRole> {
  const roleLog = log.child({ role: 'admin' });
  // Connections start as poker_anonymous; each request switches (SET LOCAL) to the role it earned.
  const pool = createRolePool(databaseUrl, 'poker_anonymous', { max: 10, applicationName: 'admin', ...loginCredentials(config, 'poker_graphql') });
  const pgl = postgraphile(adminPreset(config, pool, roleLog));
  const release = async () => {
    try {
      await pgl.release();
    } finally {
      await pool.end();
    }
  };
  let http, app;
  const startedAt = new Date();
  const jwt = lazyJwtVerifier({ jwksUrl: config.AUTH_JWKS_URL, issuer: authIssuer(config), peerAuthUrl: () => peers?.get('auth') });
  try {
    const serv = pgl.createServ(grafserv);
    app = await createApp({
      log: roleLog,
      bodyLimit: config.HTTP_BODY_LIMIT,
      pool,
      api: { role: 'admin', routes: [...adminRoutes, ...auditRoutes] },
      health: () => auditHealth(pool, config.CAGE_AUDIT_CRON, startedAt),
      routes: (app) => {
        installAuditRoutes(app, { pool, jwt, auditCron: config.CAGE_AUDIT_CRON, startedAt });
        app.all('/graphql', graphqlGate(config, jwt, roleLog));
        return serv.addTo(app, null, false);
      },
    });
    http = await listen(app, config.HOST, config.ADMIN_PORT);
  } catch (err) {
    // e.g. the port is taken: nothing of this role may stay open
    await release().catch(() => undefined);
    throw err;
  }
  roleLog.info({ url: `${http.url}/graphql` }, 'admin GraphQL listening');
  return {
    role: 'admin',
    url: http.url,
    routes: () => mountedRoutes(app),
    async stop() {
      try {
        await http.close();
      } finally {
        await release();
      }
    },
  };
}
