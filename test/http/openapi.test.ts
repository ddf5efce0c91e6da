// The API documents (issue 21): every HTTP role serves an OpenAPI 3.1 document at GET /openapi.json,
// generated from the zod schemas its handlers validate with (server/http/openapi.ts). Checked here
// against the running roles: a mounted route missing from its role's document fails, and so does a
// documented route the role does not mount; each document is valid OpenAPI 3.1 (the official schema,
// @seriousme/openapi-schema-validator); its JSON Schemas compile (Ajv, draft 2020-12); and a body
// or query a document's schema refuses is refused by the server with a coded 400 (one it accepts is not).
import { randomUUID } from 'node:crypto';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { Ajv } from 'ajv';
import { CLIENT_MESSAGE_TYPES, parseClientMessage } from '../../server/game/live/messages.ts';
import { SERVER_MESSAGE_TYPES, serverMessage } from '../../server/game/live/server-messages.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { call, startMoneyPlatform } from '../helpers/money.ts';

const ROLES = ['auth', 'game', 'cage', 'admin', 'betting', 'chain-bank', 'web'] as const;
type RoleName = (typeof ROLES)[number];
type Doc = { openapi: string; paths: Record<string, Record<string, any>>; components: { schemas: Record<string, unknown> } };

let db: TestDatabase;
let m: Awaited<ReturnType<typeof startMoneyPlatform>>;
const docs = {} as Record<RoleName, Doc>;
const headersOf = {} as Record<RoleName, Headers>;

beforeAll(async () => {
  db = await createTestDatabase();
  m = await startMoneyPlatform(db, { alsoAdmin: true, alsoBetting: true, alsoChainBank: true, alsoWeb: true });
  for (const role of ROLES) {
    const res = await fetch(`${m.platform.url(role)}/openapi.json`);
    expect(res.status).toBe(200);
    headersOf[role] = res.headers;
    docs[role] = await res.json() as Doc;
  }
});
afterAll(async () => {
  await m?.platform.stop();
  await db?.drop();
});

/** A document's operations as Express routes (`ALL` for an app.all route, `{p}` back to `:p`). */
function documented(doc: Doc): string[] {
  const keys = new Set<string>();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      keys.add(`${op['x-express-method'] ?? method.toUpperCase()} ${op['x-express-path'] ?? path.replace(/\{([^}]+)\}/g, ':$1')}`);
    }
  }
  return [...keys].sort();
}

const mounted = (role: RoleName) => [...new Set(m.platform.role(role).routes!().map((r) => `${r.method} ${r.path}`))].sort();

describe.each(ROLES)('the %s role', (role) => {
  it('serves its document publicly, cacheable', () => {
    expect(headersOf[role].get('content-type')).toMatch(/^application\/json/);
    expect(headersOf[role].get('cache-control')).toBe('public, max-age=300');
    expect(docs[role].openapi).toBe('3.1.0');
  });

  it('documents every route it mounts, and mounts every route it documents', () => {
    const doc = documented(docs[role]);
    const mine = mounted(role);
    expect({ undocumented: mine.filter((r) => !doc.includes(r)), notMounted: doc.filter((r) => !mine.includes(r)) })
      .toEqual({ undocumented: [], notMounted: [] });
    expect(mine.length).toBeGreaterThan(1);
  });

  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const result = await validator.validate(docs[role] as never);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('has JSON Schemas that compile (draft 2020-12), a described answer for each operation, unique operation ids', () => {
    const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
    const ids = new Set<string>();
    for (const item of Object.values(docs[role].paths)) {
      for (const op of Object.values(item)) {
        expect(ids.has(op.operationId)).toBe(false);
        ids.add(op.operationId);
        expect(Object.keys(op.responses).length).toBeGreaterThan(0);
        const schemas = [
          op.requestBody?.content['application/json'].schema,
          ...(op.parameters ?? []).map((p: { schema: unknown }) => p.schema),
          ...Object.values(op.responses).map((r: any) => r.content?.['application/json']?.schema),
        ].filter(Boolean);
        for (const schema of schemas) expect(() => ajv.compile({ ...schema, components: docs[role].components })).not.toThrow();
      }
    }
  });
});

/** The request-body (or query) schema of an operation, compiled. */
function validatorFor(role: RoleName, method: string, path: string, where: 'body' | 'query'): (value: any) => boolean {
  const op = docs[role].paths[path]?.[method];
  if (!op) throw new Error(`${role} documents no ${method} ${path}`);
  const ajv = new Ajv2020({ strict: false, validateFormats: false });
  if (where === 'body') {
    const check = ajv.compile(op.requestBody.content['application/json'].schema);
    return (value) => check(value);
  }
  // the query as an object schema of its parameters (each a string in the URL: the numbers coerced here)
  const params = (op.parameters as { in: string; name: string; required: boolean; schema: Record<string, unknown> }[]).filter((p) => p.in === 'query');
  const check = ajv.compile({
    type: 'object', additionalProperties: false, required: params.filter((p) => p.required).map((p) => p.name),
    properties: Object.fromEntries(params.map((p) => [p.name, p.schema])),
  });
  return (q: Record<string, string>) => check(Object.fromEntries(Object.entries(q).map(([k, v]) => [k, /^-?\d+$/.test(v) ? Number(v) : v])));
}

describe('real requests against their documented schemas', () => {
  let player: Awaited<ReturnType<typeof m.player>>;
  let operator: Record<string, string>;
  let tableId: string;
  beforeAll(async () => {
    player = await m.player(100);
    operator = (await m.operator()).auth;
    tableId = await m.table(player.auth);
  });

  const cases: { role: RoleName; method: 'post'; path: string; auth: () => Record<string, string>; refused: () => unknown; accepted?: unknown }[] = [
    { role: 'auth', method: 'post', path: '/api/auth/sign-in/email', auth: () => ({}), refused: () => ({ email: 'not an email', password: 'x' }) },
    { role: 'auth', method: 'post', path: '/admin/invite-codes', auth: () => m.service, refused: () => ({ maxUses: 0 }), accepted: { maxUses: 2 } },
    { role: 'game', method: 'post', path: '/internal/credit-chips', auth: () => m.service, refused: () => ({ creditKey: 'k', tableId, userId: player.userId, seatIndex: 12, amount: 5 }) },
    { role: 'game', method: 'post', path: '/api/agents', auth: () => player.auth, refused: () => ({ name: '' }), accepted: { name: 'documented agent' } },
    { role: 'cage', method: 'post', path: '/api/deposit', auth: () => player.auth, refused: () => ({ tableId, seatIndex: 0, amount: -5 }) },
    { role: 'cage', method: 'post', path: '/api/operator/switches', auth: () => operator, refused: () => ({ name: 'other', enabled: true }), accepted: { name: 'real_money', enabled: false } },
    { role: 'cage', method: 'post', path: '/api/tables', auth: () => player.auth, refused: () => ({ tableId: `t-${randomUUID().slice(0, 8)}`, gameType: 'poker', settings: { smallBlind: 'one' } }) },
    { role: 'betting', method: 'post', path: '/internal/bets', auth: () => m.service, refused: () => ({ stakeRef: 'not-a-ref' }) },
    { role: 'chain-bank', method: 'post', path: '/api/tournament/unregister', auth: () => player.auth, refused: () => ({ tableId, extra: 1 }) },
    { role: 'admin', method: 'post', path: '/graphql', auth: () => operator, refused: () => ({ query: 5 }), accepted: { query: '{ __typename }' } },
  ];

  it.each(cases.map((c) => [`${c.role} ${c.path}`, c] as const))('%s: a body its schema refuses is a coded 400; one it accepts is not', async (_name, c) => {
    const valid = validatorFor(c.role, c.method, c.path, 'body');
    const body = c.refused();
    expect(valid(body)).toBe(false);
    const refused = await call(`${m.platform.url(c.role)}${c.path}`, { headers: c.auth(), body });
    expect(refused.status).toBe(400);
    expect(typeof refused.body.error).toBe('string');
    if (c.accepted !== undefined) {
      expect(valid(c.accepted)).toBe(true);
      const accepted = await call(`${m.platform.url(c.role)}${c.path}`, { headers: c.auth(), body: c.accepted });
      expect(accepted.status).toBeLessThan(300);
    }
  });

  it('a query its schema refuses is a coded 400; one it accepts is answered (GET /api/tables, game and cage)', async () => {
    for (const role of ['game', 'cage'] as const) {
      const valid = validatorFor(role, 'get', '/api/tables', 'query');
      expect(valid({ limit: '0' })).toBe(false);
      expect(valid({ mode: 'tournament' })).toBe(false);
      expect(valid({ limit: '5', mode: 'cash' })).toBe(true);
      expect((await call(`${m.platform.url(role)}/api/tables?limit=0`)).status).toBe(400);
      expect((await call(`${m.platform.url(role)}/api/tables?mode=tournament`)).status).toBe(400);
      expect((await call(`${m.platform.url(role)}/api/tables?limit=5&mode=cash`)).status).toBe(200);
    }
  });
});

describe('the websocket document (GET /asyncapi.json on the game role)', () => {
  let doc: any;
  beforeAll(async () => {
    const res = await fetch(`${m.platform.url('game')}/asyncapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('public, max-age=300');
    doc = await res.json();
  });

  it('is an AsyncAPI 3.0 document whose references all resolve', () => {
    expect(doc.asyncapi).toBe('3.0.0');
    expect(typeof doc.info.title).toBe('string');
    expect(typeof doc.info.version).toBe('string');
    expect(Object.values(doc.channels).map((c: any) => c.address)).toEqual(['/ws', '/ws/tables/{tableId}']);
    const resolve = (ref: string) => ref.slice(2).split('/').reduce((node: any, key) => node?.[key], doc);
    const refs = JSON.stringify(doc).match(/"\$ref":"[^"]+"/g)!.map((r) => r.slice(8, -1));
    expect(refs.length).toBeGreaterThan(0);
    expect(refs.filter((r) => resolve(r) === undefined)).toEqual([]);
    // the document describes the server: it receives the client's messages and sends its own
    const names = (op: any) => op.messages.map((r: any) => resolve(resolve(r.$ref).$ref).title.split(': ')[0]);
    for (const op of Object.values(doc.operations) as any[]) {
      expect(resolve(op.channel.$ref)).toBeDefined();
      expect(new Set(names(op))).toEqual(new Set([op.action === 'receive' ? 'client' : 'server']));
    }
    expect(Object.values(doc.operations).map((op: any) => op.action).sort()).toEqual(['receive', 'receive', 'send', 'send']);
  });

  it('has one message per client message type the server parses and per message type the server sends', () => {
    const named = (side: string) => Object.values(doc.components.messages).filter((m: any) => m.title.startsWith(`${side}: `)).map((m: any) => m.name).sort();
    expect(named('client')).toEqual([...CLIENT_MESSAGE_TYPES].sort());
    expect(named('server')).toEqual([...SERVER_MESSAGE_TYPES].sort());
    expect(SERVER_MESSAGE_TYPES).toEqual(expect.arrayContaining(['game_state', 'hand_result', 'error', 'stood_up', 'tournament_ended']));
  });

  it('describes the server messages as the schemas judge them (strict payloads, draft-07)', () => {
    const ajv = new Ajv({ strict: false, validateFormats: false });
    const uuid = randomUUID();
    const samples: Record<string, unknown>[] = [
      { type: 'pong' }, { type: 'pong', ref: 'r1' }, { type: 'pong', extra: 1 },
      { type: 'hello', userId: null, agentId: null, role: 'spectator' }, { type: 'hello', userId: uuid, agentId: null, role: 'admin' },
      { type: 'action_ack', tableId: 't-1', duplicate: true, ref: 3 }, { type: 'action_ack', tableId: 't-1', duplicate: false },
      { type: 'seated', tableId: 't-1', seatIndex: 0, chipBalance: '100' }, { type: 'seated', tableId: 't-1', seatIndex: 0, chipBalance: 100 },
      { type: 'stood_up', tableId: 't-1', amount: '0', txHash: null, receipt: null, busted: true },
      { type: 'tournament_state_changed', tableId: 't-1', state: 'ended', forced: false }, { type: 'tournament_state_changed', tableId: 't-1', state: 'ended' },
      { type: 'error', code: 'table_elsewhere', tableId: 't-1', url: null }, { type: 'error', code: 'x', detail: 'y' },
    ];
    for (const sample of samples) {
      const message = (Object.values(doc.components.messages) as any[]).find((m) => m.title === `server: ${sample.type}`);
      expect(message.payload.schemaFormat).toBe('application/schema+json;version=draft-07');
      expect({ sample, valid: ajv.validate(message.payload.schema, sample) }).toEqual({ sample, valid: serverMessage.safeParse(sample).success });
    }
  });

  it('judges messages as the server does (the payloads, draft-07, against parseClientMessage)', () => {
    const ajv = new Ajv({ strict: false, validateFormats: false });
    const samples: Record<string, unknown>[] = [
      { type: 'ping' }, { type: 'ping', ref: [1, 'x'] }, { type: 'join', tableId: 't-1' }, { type: 'join' }, { type: 'join', tableId: '' },
      { type: 'action', tableId: 't-1', seq: 3, action: 'fold' }, { type: 'action', tableId: 't-1', action: 'fold' },
      { type: 'sit', tableId: 't-1', seatIndex: 0, amount: '40', idempotencyKey: 'k' }, { type: 'sit', tableId: 't-1', idempotencyKey: '' },
      { type: 'register_for_tournament', tableId: 't-1', advisorAgentId: null }, { type: 'register_for_tournament', tableId: 't-1', advisorAgentId: 'x' },
      { type: 'auth', token: 'x' }, { type: 'stand_up', tableId: 't-1' }, { type: 'sit_out', tableId: 'x'.repeat(65) },
    ];
    for (const sample of samples) {
      const message = doc.components.messages[sample.type as string];
      expect(message.payload.schemaFormat).toBe('application/schema+json;version=draft-07');
      expect({ sample, valid: ajv.validate(message.payload.schema, sample) }).toEqual({ sample, valid: parseClientMessage(sample).ok });
    }
  });
});
