// The machine-readable contract (issue 21): each route is described once, beside its handler, by a
// `describeRoute` contract that names the zod schemas the handler itself validates with (params,
// query, body) and, where one exists, the zod schema of its answer. A role's OpenAPI 3.1 document is
// generated from the contracts of the routes it mounts (z.toJSONSchema, JSON Schema 2020-12, which
// OpenAPI 3.1 embeds as is) and served at GET /openapi.json; test/http/openapi.test.ts fails for a mounted
// route with no contract and for a contract whose route is not mounted.
import { z } from 'zod';

/**
 * How a route authenticates: `none` (public), `jwt` (a player's access JWT, Bearer), `admin` (an
 * operator's access JWT: `role: admin` with its admin session's `sid`), `service` (the `x-service-key`
 * header), `session` (the auth role's admin session: the `poker_session` cookie or its token as the
 * Bearer). A list: any one of them.
 */
export type RouteAuth = 'none' | 'jwt' | 'admin' | 'service' | 'session';

export type RouteMethod = 'get' | 'post' | 'put' | 'patch' | 'delete' | 'all';

export interface RouteResponse {
  description: string;
  /** The zod schema of the body, where the code has one; otherwise the answer is described only. */
  body?: z.ZodType;
  /** A text answer the route gives instead of JSON when asked (e.g. `?format=phh`): its media type and what picks it. */
  text?: { mediaType: string; description: string };
}

export interface RouteContract {
  method: RouteMethod;
  /** Express syntax (`/api/tables/:tableId`); the document spells it `/api/tables/{tableId}`. */
  path: string;
  auth: RouteAuth | readonly RouteAuth[];
  summary: string;
  description?: string;
  /** An object schema of the path parameters; a parameter it does not name is a plain string. */
  params?: z.ZodType;
  /** An object schema of the request headers the handler reads (lower-case names). */
  headers?: z.ZodType;
  /** An object schema of the query string (the apps parse it with the `simple` parser: strings). */
  query?: z.ZodType;
  /**
   * The JSON body's schema; or, for a body the handler hands to SQL whole (its rules are there), a
   * sentence naming what checks it (the document then says only `a JSON object`, with that sentence).
   */
  body?: z.ZodType | string;
  /** Answers by status; the refusals a validation or an auth check gives are added (see below). */
  responses: Record<number, string | RouteResponse>;
  /** `app.all` routes: the methods the handler serves (the others are refused 405); default post. */
  serves?: readonly Exclude<RouteMethod, 'all'>[];
}

/** Declares a route's contract (an identity: it exists so the declaration reads as one). */
export const describeRoute = (contract: RouteContract): RouteContract => contract;

/** Every refusal's body (server/http/errors.ts): a code, the validation issues, and fields beside them. */
export const errorBody = z.object({
  error: z.string().describe('a stable machine-readable code, e.g. validation_failed, session_required'),
  code: z.string().optional().describe('for the refusals the spec gives as sentences: their code'),
  issues: z.array(z.unknown()).optional().describe('the validation issues: path, message, code'),
}).loose();

/** The two routes every HTTP role mounts (server/http/app.ts). */
export const healthRoute = describeRoute({
  method: 'get', path: '/health', auth: 'none', summary: 'Liveness and the database latency',
  responses: {
    200: { description: 'the database answers', body: z.object({ ok: z.literal(true), latency: z.number().describe('milliseconds') }) },
    503: 'database_unreachable; on the chain bank also chain_unreachable (its node does not answer a short probe: `chain: { reachable: false, lastError }`)',
  },
});
export const openApiRoute = describeRoute({
  method: 'get', path: '/openapi.json', auth: 'none', summary: 'This role\'s OpenAPI 3.1 document',
  responses: { 200: 'the document (cacheable: public, max-age=300)' },
});

/** Express's `:param` (and `{/:optional}`-free paths) to OpenAPI's `{param}`. */
export const openApiPath = (path: string) => path.replace(/\{\*([A-Za-z_][A-Za-z0-9_]*)\}/g, '{$1}').replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}');

type JsonSchema = Record<string, unknown> & { properties?: Record<string, JsonSchema>; required?: string[] };

/** A zod schema as JSON Schema 2020-12: what a client sends (`input`) or receives (`output`). */
export function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any', reused: 'inline' }) as JsonSchema;
  return rest;
}

const SECURITY: Record<Exclude<RouteAuth, 'none'>, string[]> = {
  jwt: ['playerJwt'], admin: ['operatorJwt'], service: ['serviceKey'], session: ['sessionCookie', 'sessionToken'],
};
const ERROR_REF = { $ref: '#/components/schemas/Error' };

function parameters(where: 'path' | 'query' | 'header', schema: z.ZodType | undefined, names: string[]) {
  const json = schema ? jsonSchema(schema, 'input') : { properties: {} as Record<string, JsonSchema>, required: [] as string[] };
  const properties = json.properties ?? {};
  const required = new Set(json.required ?? []);
  const out = Object.entries(properties).map(([name, s]) => ({
    name, in: where, required: where === 'path' || required.has(name), schema: s,
    ...(typeof s.description === 'string' ? { description: s.description } : {}),
  }));
  // a path parameter the schema does not name (the handler reads it as a string)
  for (const name of names) if (!(name in properties)) out.push({ name, in: where, required: true, schema: { type: 'string' } });
  return out;
}

const bodySchema = (body: z.ZodType | string) =>
  (typeof body === 'string' ? { type: 'object', description: body, 'x-checked-by': 'the handler or SQL, field by field' } : jsonSchema(body, 'input'));

function operation(role: string, c: RouteContract) {
  const auths = (Array.isArray(c.auth) ? c.auth : [c.auth]) as RouteAuth[];
  const pathNames = [...c.path.matchAll(/:([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]!);
  const responses: Record<string, unknown> = {};
  const add = (status: number, r: string | RouteResponse) => {
    const { description, body, text } = typeof r === 'string' ? { description: r, body: undefined, text: undefined } : r;
    const schema = body ? jsonSchema(body, 'output') : status >= 400 ? ERROR_REF : undefined;
    const content = {
      ...(schema ? { 'application/json': { schema } } : text ? { 'application/json': {} } : {}),
      ...(text ? { [text.mediaType]: { schema: { type: 'string', description: text.description } } } : {}),
    };
    responses[String(status)] = { description, ...(Object.keys(content).length > 0 ? { content } : {}) };
  };
  for (const [status, r] of Object.entries(c.responses)) add(Number(status), r);
  // the refusals every route of its kind can give, unless the contract says more
  const implied: [number, string][] = [];
  if (c.params || c.query || c.body || c.headers) implied.push([400, 'the request does not match its schema (validation_failed / bad_request, with `issues`)']);
  if (!auths.includes('none')) implied.push([401, 'no valid credential (session_required, invalid_token, invalid_service_key ...)']);
  if (auths.includes('admin')) implied.push([403, 'not an operator\'s live session (admin_required, admin_session_required)']);
  if (auths.includes('service')) implied.push([503, 'service_key_not_configured']);
  for (const [status, description] of implied) if (!(String(status) in responses)) add(status, description);
  return {
    operationId: `${role}:${c.method === 'all' ? 'ALL' : c.method.toUpperCase()} ${c.path}`,
    summary: c.summary,
    ...(c.description ? { description: c.description } : {}),
    tags: [role],
    security: auths.includes('none') ? [] : auths.flatMap((a) => SECURITY[a as Exclude<RouteAuth, 'none'>].map((scheme) => ({ [scheme]: [] }))),
    parameters: [...parameters('path', c.params, pathNames), ...parameters('query', c.query, []), ...parameters('header', c.headers, [])],
    ...(c.body ? { requestBody: { required: true, content: { 'application/json': { schema: bodySchema(c.body) } } } } : {}),
    responses,
    ...(c.method === 'all' ? { 'x-express-method': 'ALL' } : {}),
  };
}

/** A role's OpenAPI 3.1 document, from the contracts of the routes it mounts. */
export function openApiDocument(options: { role: string; version?: string; routes: readonly RouteContract[]; serverUrl?: string }) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const c of options.routes) {
    const methods = c.method === 'all' ? (c.serves ?? ['post']) : [c.method];
    const item = (paths[openApiPath(c.path)] ??= {});
    for (const method of methods) {
      if (item[method]) throw new Error(`openapi: ${method.toUpperCase()} ${c.path} is described twice for ${options.role}`);
      // a wildcard (`{*rest}`: the rest of the path) has no OpenAPI spelling: the Express path is kept beside it
      const op = operation(options.role, c);
      item[method] = {
        ...op,
        // an app.all route serving several methods: one operation each, each its own id
        ...(methods.length > 1 ? { operationId: `${op.operationId} (${method.toUpperCase()})` } : {}),
        ...(c.path.includes('{*') ? { 'x-express-path': c.path } : {}),
      };
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: `Poker platform: the ${options.role} role`,
      version: options.version ?? '0.1.0',
      description: 'Generated from the zod schemas the server validates with (server/http/openapi.ts). Every refusal is a JSON `{ error: code }`.',
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    ...(options.serverUrl ? { servers: [{ url: options.serverUrl }] } : {}),
    tags: [{ name: options.role }],
    paths,
    components: {
      schemas: { Error: jsonSchema(errorBody, 'output') },
      securitySchemes: {
        playerJwt: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'a player\'s access JWT from the auth role (GET /api/auth/token)' },
        operatorJwt: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'an operator\'s access JWT: `role: admin` and its live admin session\'s `sid`' },
        sessionCookie: { type: 'apiKey', in: 'cookie', name: 'poker_session', description: 'an admin session (POST /api/auth/sign-in/email sets it)' },
        sessionToken: { type: 'http', scheme: 'bearer', description: 'an admin session\'s token (the sign-in\'s `token`) as the Bearer' },
        serviceKey: { type: 'apiKey', in: 'header', name: 'x-service-key', description: 'the roles\' shared SERVICE_KEY (service-to-service)' },
      },
    },
  };
}

export type OpenApiDocument = ReturnType<typeof openApiDocument>;
