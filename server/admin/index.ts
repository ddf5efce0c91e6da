// The admin role: PostGraphile 5 over the cage schema, read-only, under row-level security.
// A request that presents the service key (`x-service-key`) runs as poker_admin and sees the books;
// any other request runs as poker_anonymous, for which no policy exists, so it sees no row.
// (Admin JWTs join the service key when the auth role lands: docs/decisions.md.)
import type { IncomingMessage } from 'node:http';
import { postgraphile } from 'postgraphile';
import { PostGraphileAmberPreset } from 'postgraphile/presets/amber';
import { makePgService } from 'postgraphile/adaptors/pg';
import { grafserv } from 'postgraphile/grafserv/express/v4';
import { createApp, listen } from '../http/app.ts';
import { secretMatches } from '../http/auth.ts';
import { createRolePool } from '../db/pools.ts';
import type { RoleContext, StartedRole } from '../roles/types.ts';

export const ADMIN_SCHEMAS = ['cage'];

export function adminRoleFor(req: IncomingMessage | undefined, serviceKey: string | undefined) {
  return secretMatches(req?.headers['x-service-key'], serviceKey) ? 'poker_admin' : 'poker_anonymous';
}

export async function startAdmin({ config, databaseUrl, log }: RoleContext): Promise<StartedRole> {
  const roleLog = log.child({ role: 'admin' });
  // Connections start as poker_anonymous; each request switches (SET LOCAL) to the role it earned.
  const pool = createRolePool(databaseUrl, 'poker_anonymous', { max: 10, applicationName: 'admin' });
  const preset: GraphileConfig.Preset = {
    extends: [PostGraphileAmberPreset],
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
    grafserv: { graphqlPath: '/graphql', graphiqlPath: '/', graphiql: config.NODE_ENV !== 'production', watch: false },
    grafast: { explain: false },
  };
  const pgl = postgraphile(preset);
  const serv = pgl.createServ(grafserv);
  const app = await createApp({
    log: roleLog,
    bodyLimit: config.HTTP_BODY_LIMIT,
    pool,
    routes: (app) => serv.addTo(app, null, false),
  });
  const http = await listen(app, config.HOST, config.ADMIN_PORT);
  roleLog.info({ url: `${http.url}/graphql` }, 'admin GraphQL listening');
  return {
    role: 'admin',
    url: http.url,
    async stop() {
      await http.close();
      await pgl.release();
      await pool.end();
    },
  };
}
