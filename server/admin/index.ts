// The admin role: PostGraphile 5 over the cage, game and claims schemas, read-only, under row-level security.
// A request that presents the service key (`x-service-key`) runs as poker_admin and sees the books;
// any other request runs as poker_anonymous, for which no policy exists, so it sees no row.
// (Admin JWTs join the service key when the auth role lands: docs/decisions.md.)
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import { postgraphile } from 'postgraphile';
import { isSafeError } from 'postgraphile/grafast';
import { GraphQLError, type ValidationRule } from 'postgraphile/graphql';
import { defaultMaskError } from 'postgraphile/grafserv';
import { PostGraphileAmberPreset } from 'postgraphile/presets/amber';
import { makePgService } from 'postgraphile/adaptors/pg';
import { grafserv } from 'postgraphile/grafserv/express/v4';
import { createApp, listen } from '../http/app.ts';
import { secretMatches } from '../http/auth.ts';
import { createRolePool } from '../db/pools.ts';
import type { RoleContext, StartedRole } from '../roles/types.ts';

export const ADMIN_SCHEMAS = ['cage', 'game', 'claims'];

export function adminRoleFor(req: IncomingMessage | undefined, serviceKey: string | undefined) {
  return secretMatches(req?.headers['x-service-key'], serviceKey) ? 'poker_admin' : 'poker_anonymous';
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

export async function startAdmin({ config, databaseUrl, log }: RoleContext): Promise<StartedRole> {
  const roleLog = log.child({ role: 'admin' });
  // Connections start as poker_anonymous; each request switches (SET LOCAL) to the role it earned.
  const pool = createRolePool(databaseUrl, 'poker_anonymous', { max: 10, applicationName: 'admin' });
  const preset: GraphileConfig.Preset = {
    extends: [PostGraphileAmberPreset],
    plugins: [AdminValidationPlugin],
    disablePlugins: ['PgMutationCreatePlugin', 'PgMutationUpdateDeletePlugin'],
    pgServices: [
      makePgService({
        pool,
        schemas: ADMIN_SCHEMAS,
        // The schema shows what an admin may read (RBAC); what a request gets is decided per request.
        pgSettingsForIntrospection: { role: 'poker_admin' },
        pgSettings: (ctx) => ({ role: adminRoleFor(ctx.expressv4?.req ?? ctx.node?.req, config.SERVICE_KEY) }),
      }),
    ],
    grafserv: {
      graphqlPath: '/graphql',
      graphiqlPath: '/',
      graphiql: config.NODE_ENV !== 'production',
      watch: false,
      maskError: maskErrorWith(roleLog),
    },
    grafast: { explain: false },
  };
  const pgl = postgraphile(preset);
  const release = async () => {
    try {
      await pgl.release();
    } finally {
      await pool.end();
    }
  };
  let http;
  try {
    const serv = pgl.createServ(grafserv);
    const app = await createApp({
      log: roleLog,
      bodyLimit: config.HTTP_BODY_LIMIT,
      pool,
      routes: (app) => serv.addTo(app, null, false),
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
    async stop() {
      try {
        await http.close();
      } finally {
        await release();
      }
    },
  };
}
