// The common shape of every HTTP role: JSON in with a size limit, /health, the role's routes, then
// 404 and the one error mapping. Roles add their routes through `routes`.
import express, { type Express } from 'express';
import { METHODS, STATUS_CODES, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { AddressInfo } from 'node:net';
import type pg from 'pg';
import type { Logger } from 'pino';
import { refuseDeepJson, refuseHostileTarget, refuseNulInBody } from './edge.ts';
import { errorHandler, notFound } from './errors.ts';
import { bigintAsString } from './json.ts';
import { requestLog } from './request-log.ts';
import { healthRoute, openApiDocument, openApiRoute, type RouteContract } from './openapi.ts';

export interface AppOptions {
  log: Logger;
  bodyLimit: number;
  /** The role's database pool; /health measures its latency. */
  pool: pg.Pool;
  routes: (app: Express) => void | Promise<void>;
  /** Middleware that must run before the body is parsed (e.g. refusing closed paths outright). */
  before?: (app: Express) => void;
  /**
   * The role's contract: the routes `routes` mounts, described (server/http/openapi.ts). With it the
   * app serves its OpenAPI 3.1 document at GET /openapi.json (/health and /openapi.json included).
   */
  api?: { role: string; routes: readonly RouteContract[] };
  /** More of /health (the admin role: the audit's liveness); `ok: false` answers 503. */
  health?: () => Promise<{ ok: boolean } & Record<string, unknown>>;
}

/** The contracts of the routes createApp itself mounts. */
export const APP_ROUTES: readonly RouteContract[] = [healthRoute, openApiRoute];

export async function createApp(options: AppOptions): Promise<Express> {
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  // one rule for bigint on every HTTP role: a decimal string (chips never pass through a float);
  // the spec's `amount: number` fields are converted where they are built
  app.set('json replacer', bigintAsString);
  app.use(requestLog(options.log));
  options.before?.(app);
  app.use(refuseHostileTarget);
  app.use(express.json({ limit: options.bodyLimit, strict: true, type: ['application/json', 'application/*+json'], verify: refuseDeepJson }));
  app.use(refuseNulInBody);
  app.get('/health', async (_req, res) => {
    const started = performance.now();
    try {
      await options.pool.query('select 1');
      const latency = Math.round((performance.now() - started) * 100) / 100;
      const more = options.health ? await options.health() : { ok: true };
      res.status(more.ok ? 200 : 503).json({ ...more, latency });
    } catch (err) {
      options.log.warn({ err: (err as Error).message }, 'health: database unreachable');
      res.status(503).json({ ok: false, error: 'database_unreachable' });
    }
  });
  if (options.api) serveApiDocument(app, options.api.role, [...APP_ROUTES, ...options.api.routes]);
  await options.routes(app);
  app.use(notFound);
  app.use(errorHandler(options.log));
  return app;
}

/** GET /openapi.json: the role's document, generated once on the first request (a role never asked pays nothing). */
export function serveApiDocument(app: Express, role: string, routes: readonly RouteContract[]) {
  let document: string | undefined;
  app.get('/openapi.json', (_req, res) => {
    document ??= JSON.stringify(openApiDocument({ role, routes }));
    res.set('cache-control', 'public, max-age=300').type('application/json').send(document);
  });
}

/** A route the app mounts: its method (`ALL` for app.all) and its path pattern (e.g. /api/tables/:tableId). */
export interface MountedRoute {
  method: string;
  path: string;
}

/** The routes an app mounts, read from Express 5's router (what the fuzz suite drives). */
export function mountedRoutes(app: Express): MountedRoute[] {
  const stack = (app as unknown as { router: { stack: { route?: { path: unknown; methods: Record<string, boolean> } }[] } }).router.stack;
  const routes: MountedRoute[] = [];
  for (const layer of stack) {
    if (!layer.route) continue;
    const paths = Array.isArray(layer.route.path) ? layer.route.path : [layer.route.path];
    const on = Object.keys(layer.route.methods).filter((m) => layer.route!.methods[m]);
    // Express 5's app.all registers every method one by one
    const all = on.includes('_all') || METHODS.every((m) => on.includes(m.toLowerCase()));
    for (const method of all ? ['ALL'] : on.map((m) => m.toUpperCase())) {
      for (const path of paths) routes.push({ method, path: String(path) });
    }
  }
  return routes;
}

export interface Listening {
  server: Server;
  url: string;
  close(): Promise<void>;
}

/**
 * A request Node's parser refuses (a NUL in a header, a request line that is not HTTP, headers over
 * the limit) never reaches Express: it gets the same coded JSON answer as everything else, not
 * Node's bare 400.
 */
function answerUnparsable(err: NodeJS.ErrnoException, socket: Duplex) {
  if (err.code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
  const [status, code] = err.code === 'HPE_HEADER_OVERFLOW' ? [431, 'headers_too_large']
    : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? [408, 'request_timeout'] : [400, 'malformed_request'];
  const body = JSON.stringify({ error: code });
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json; charset=utf-8\r\n`
    + `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
}

/** Listens on host:port (0 = an ephemeral port) and resolves with the URL actually bound. */
export async function listen(app: Express, host: string, port: number): Promise<Listening> {
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(port, host);
    s.once('listening', () => resolve(s));
    s.once('error', reject);
  });
  server.on('clientError', answerUnparsable);
  const address = server.address() as AddressInfo;
  const shownHost = host === '0.0.0.0' || host === '::' ? 'localhost' : host.includes(':') ? `[${host}]` : host;
  return {
    server,
    url: `http://${shownHost}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}

/**
 * The life of an HTTP role around its pool: builds the app, listens, logs `<role> listening` with
 * the URL (and `fields`), and stops the server then the pool. A failed start (port taken, database
 * down) ends the pool, so it leaves nothing open.
 */
export async function serveRole(options: {
  role: string;
  pool: pg.Pool;
  log: Logger;
  host: string;
  port: number;
  build: () => Promise<{
    app: Express;
    fields?: Record<string, unknown>;
    /** Called once the server listens (e.g. to take websocket upgrades on it). */
    onListening?: (server: Server, url: string) => void;
    /** Called first when the role stops (e.g. to close websockets and timers). */
    onStop?: () => Promise<void>;
  }>;
}): Promise<{ role: string; url: string; routes(): MountedRoute[]; stop(): Promise<void> }> {
  try {
    const { app, fields, onListening, onStop } = await options.build();
    const http = await listen(app, options.host, options.port);
    onListening?.(http.server, http.url);
    options.log.info({ url: http.url, ...fields }, `${options.role} listening`);
    return {
      role: options.role,
      url: http.url,
      routes: () => mountedRoutes(app),
      async stop() {
        await onStop?.();
        await http.close();
        await options.pool.end();
      },
    };
  } catch (err) {
    await options.pool.end();
    throw err;
  }
}
