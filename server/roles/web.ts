// The web role (`--role web`, WEB_PORT 3679): the web client (web/: sign in, lobby, table,
// tournament, claim board, wallets, hand histories) and the same-origin proxy it calls the other
// roles through (server/web/proxy.ts), the game role's websocket included (server/web/ws.ts). It has
// no database and no secret: every call it forwards carries the player's own access JWT.
// Upstreams: AUTH_URL and GAME_URL, else the roles of this process, else the default ports on HOST;
// the banks as every caller reaches them (server/bank-contract/routing.ts: the cage BANK_URL or
// CAGE_URL, the chain bank CHAIN_BANK_URL), each table's calls to its own bank (server/web/proxy.ts).
import { stat } from 'node:fs/promises';
import express, { type RequestHandler } from 'express';
import { z } from 'zod';
import { listen, mountedRoutes, serveApiDocument } from '../http/app.ts';
import { describeRoute, openApiRoute, type RouteContract } from '../http/openapi.ts';
import { refuseDeepJson, refuseHostileTarget, refuseNulInBody } from '../http/edge.ts';
import { errorHandler, notFound } from '../http/errors.ts';
import { bigintAsString } from '../http/json.ts';
import { requestLog } from '../http/request-log.ts';
import { deploymentEnvironment, webIdentityProvider, type Config } from '../config/index.ts';
import type { Peers, RoleContext, StartedRole } from './types.ts';
import { ALLOWLIST, installProxyRoutes, type Upstream } from '../web/proxy.ts';
import { bankUrls } from '../bank-contract/routing.ts';
import { installStaticRoutes, WEB_DIR } from '../web/static.ts';
import { relayWebsockets } from '../web/ws.ts';

/**
 * The page may run only its own scripts and styles and talk only to its own origin (the proxy and
 * the websocket relay): no inline script, no eval, no frame, no plugin.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:", "connect-src 'self'",
  "base-uri 'none'", "form-action 'self'", "frame-ancestors 'none'",
].join('; ');

const securityHeaders: RequestHandler = (req, res, next) => {
  res.set({
    'content-security-policy': CONTENT_SECURITY_POLICY,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'x-frame-options': 'DENY',
    'cross-origin-opener-policy': 'same-origin',
    'cross-origin-resource-policy': 'same-origin',
    'permissions-policy': 'camera=(), microphone=(), geolocation=()',
  });
  if (req.path.startsWith('/api/')) res.set('cache-control', 'no-store');
  next();
};

/** The web role's routes, described (served at GET /openapi.json); the proxy's allowlist is read from the proxy itself. */
export const webRoutes: readonly RouteContract[] = [
  describeRoute({
    method: 'get', path: '/health', auth: 'none', summary: 'Liveness: the client\'s files can be read',
    responses: {
      200: { description: 'healthy', body: z.object({ ok: z.literal(true), latency: z.number().describe('milliseconds') }) },
      503: 'client_files_missing',
    },
  }),
  openApiRoute,
  describeRoute({
    method: 'get', path: '/api/web/config', auth: 'none', summary: 'What the page needs before it signs anyone in',
    responses: {
      200: {
        description: 'the deployment',
        body: z.object({
          testAuth: z.boolean(),
          environment: z.string(),
          idp: z.object({
            name: z.string().describe('the provider, for the "Sign in with <name>" button (WEB_IDP_NAME)'),
            authorizeUrl: z.string().describe('the provider\'s OIDC authorization endpoint (WEB_IDP_AUTHORIZE_URL)'),
            clientId: z.string().describe('our OAuth client id there (WEB_IDP_CLIENT_ID, the bridge\'s IDP_AUDIENCE)'),
          }).nullable().describe('the provider\'s browser sign-in; null when not configured'),
        }),
      },
    },
  }),
  describeRoute({
    method: 'all', path: '/api/gw/:role/{*rest}', auth: ['none', 'jwt'], serves: ['get', 'post', 'delete'],
    summary: 'The same-origin proxy: a fixed list of routes of the auth, game and bank roles, the Authorization header forwarded unchanged',
    description: `Forwarded (anything else 404 not_proxied): ${Object.entries(ALLOWLIST)
      .map(([role, routes]) => routes.map(([m, path]) => `${m} /api/gw/${role}${path}`).join(', ')).join('; ')}. `
      + 'The claim submit (POST /api/gw/game/claim-board/claim) records the span ui.claim.submit. The websocket is relayed at /api/gw/game/ws.',
    params: z.object({ role: z.enum(Object.keys(ALLOWLIST) as [Upstream, ...Upstream[]]), rest: z.string() }),
    responses: { 200: 'the upstream\'s answer, status and body as they came', 404: 'not_proxied', 502: 'upstream_unavailable, upstream_error', 504: 'upstream_timeout' },
  }),
  describeRoute({ method: 'get', path: '/', auth: 'none', summary: 'The web client\'s page', responses: { 200: 'text/html' } }),
  describeRoute({
    method: 'get', path: '/app/:name', auth: 'none', summary: 'A module or style of the client (TypeScript served type-stripped as JavaScript)',
    params: z.object({ name: z.string() }), responses: { 200: 'text/javascript or text/css', 404: 'not_found' },
  }),
];

export function webUpstreams(config: Config, peers: Peers | undefined): (role: Exclude<Upstream, 'bank'>) => string | undefined {
  const local = (port: number) => `http://${config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST}:${port}`;
  return (role) => (role === 'auth' ? config.AUTH_URL ?? peers?.get('auth') ?? local(config.PORT) : config.GAME_URL ?? peers?.get('game') ?? local(config.GAME_PORT));
}

export async function startWeb({ config, log, peers }: RoleContext): Promise<StartedRole> {
  const roleLog = log.child({ role: 'web' });
  const upstream = webUpstreams(config, peers);
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  app.set('json replacer', bigintAsString);
  app.use(requestLog(roleLog));
  app.use(securityHeaders);
  app.use(refuseHostileTarget);
  app.use(express.json({ limit: config.HTTP_BODY_LIMIT, strict: true, type: ['application/json', 'application/*+json'], verify: refuseDeepJson }));
  app.use(refuseNulInBody);
  // no database: healthy while the client's files can be read (latency: that read)
  app.get('/health', async (_req, res) => {
    const started = performance.now();
    try {
      await stat(WEB_DIR);
      res.json({ ok: true, latency: Math.round((performance.now() - started) * 100) / 100 });
    } catch {
      res.status(503).json({ ok: false, error: 'client_files_missing' });
    }
  });
  // what the page needs to know about this deployment before it signs anyone in
  app.get('/api/web/config', (_req, res) => {
    res.json({ testAuth: config.testAuthPermitted, environment: deploymentEnvironment(config), idp: webIdentityProvider(config) });
  });
  serveApiDocument(app, 'web', webRoutes);
  const banks = bankUrls(config, peers);
  // the calls that name no table go to the cage; a deployment with the chain bank and no cage (no
  // cage URL, no cage role in this process) sends them to the chain bank
  const cageKnown = () => Boolean(config.BANK_URL ?? config.CAGE_URL ?? peers?.get('cage')) || !(config.CHAIN_BANK_URL ?? peers?.get('chain-bank'));
  installProxyRoutes(app, {
    upstream, bank: (bank) => banks[bank](), defaultBank: () => (cageKnown() ? 'cage' : 'chain'), timeoutMs: Math.max(config.GAME_CALL_TIMEOUT_MS * 2, 10_000),
  });
  installStaticRoutes(app);
  app.use(notFound);
  app.use(errorHandler(roleLog));

  const http = await listen(app, config.HOST, config.WEB_PORT);
  const closeRelays = relayWebsockets(http.server, { game: () => upstream('game'), log: roleLog });
  roleLog.info({ url: http.url }, 'web listening');
  return {
    role: 'web',
    url: http.url,
    routes: () => mountedRoutes(app),
    async stop() {
      closeRelays();
      await http.close();
    },
  };
}
