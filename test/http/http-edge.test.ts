// The HTTP edge every role shares, against the real running roles: a caller's mistake (a NUL byte, a
// malformed %-escape, a body that is not what its Content-Encoding says, JSON nested thousands deep,
// a date Postgres cannot hold, a value of the wrong type) is a coded 4xx JSON answer, never a 500.
import { STATUS_CODES } from 'node:http';
import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { call, startMoneyPlatform } from '../helpers/money.ts';
import { expectCleanAudit } from '../helpers/cage.ts';
import { toErrorBody } from '../../server/http/errors.ts';

let db: TestDatabase;
let m: Awaited<ReturnType<typeof startMoneyPlatform>>;
let player: Awaited<ReturnType<typeof m.player>>;
let url: Record<'auth' | 'game' | 'cage' | 'admin', string>;

beforeAll(async () => {
  db = await createTestDatabase();
  m = await startMoneyPlatform(db, { alsoAdmin: true });
  player = await m.player(100);
  url = { auth: m.platform.url('auth'), game: m.game, cage: m.cage, admin: m.platform.url('admin') };
});
afterAll(async () => {
  await m?.platform.stop();
  await db?.drop();
});

async function raw(target: string, init: RequestInit & { headers?: Record<string, string> } = {}) {
  const res = await fetch(target, init);
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: res.status, body: body as { error?: unknown } };
}

function expectCoded4xx(answer: { status: number; body: { error?: unknown } }, status: number, error?: string) {
  expect({ status: answer.status, error: typeof answer.body?.error }).toEqual({ status, error: 'string' });
  if (error) expect(answer.body.error).toBe(error);
}

describe('a NUL byte in any string is refused at the edge (400 nul_character)', () => {
  const NUL = 'a\u0000b';
  test.each([
    ['bridge invite code', 'auth', '/api/auth/bridge', { inviteCode: NUL }],
    ['reset email', 'auth', '/api/auth/request-password-reset', { email: `x${NUL}@example.com`, redirectTo: 'https://example.com/r' }],
    ['agent name', 'game', '/api/agents', { name: NUL }],
    ['a key of an object', 'cage', '/api/tables', { tableId: 't-nul', gameType: 'poker', settings: { [NUL]: 1 } }],
    ['a nested string', 'game', '/admin/claim-sections', { key: 'k', nested: [{ deep: NUL }] }],
  ] as const)('in a body: %s', async (_what, role, path, body) => {
    const r = await call(`${url[role]}${path}`, { headers: { ...player.auth, ...m.service }, body });
    expectCoded4xx(r, 400, 'nul_character');
  });

  test.each([
    ['table id', 'game', '/api/tables/a%00b'],
    ['section key', 'game', '/admin/claim-sections/a%00b'],
    ['hand id', 'game', '/api/hands/a%00b'],
    ['rake table id', 'cage', '/settlement/rake/a%00b'],
    ['wallet address', 'auth', '/api/internal/user-wallets/a%00b'],
  ] as const)('in a path parameter: %s', async (_what, role, path) => {
    const method = path.startsWith('/admin/claim-sections/') ? 'DELETE' : 'GET';
    expectCoded4xx(await raw(`${url[role]}${path}`, { method, headers: { ...player.auth, ...m.service } }), 400, 'nul_character');
  });

  test.each([
    ['hands table id', 'game', '/api/hands?tableId=a%00b'],
    ['hands agent id', 'game', '/api/hands?agentId=a%00b'],
    ['claim settings environment', 'game', '/admin/claim-settings?environment=a%00b'],
    ['an array value', 'cage', '/api/cage/receipts?x=1&x=a%00b'],
  ] as const)('in a query parameter: %s', async (_what, role, path) => {
    expectCoded4xx(await raw(`${url[role]}${path}`, { headers: { ...player.auth, ...m.service } }), 400, 'nul_character');
  });
});

describe('a malformed %-escape in a path parameter is 400 malformed_path on every role', () => {
  test.each([
    ['auth', 'DELETE', '/api/wallets/%'],
    ['auth', 'GET', '/api/internal/user-wallets/%E0%A4%A'],
    ['game', 'GET', '/api/tables/%'],
    ['game', 'GET', '/api/hands/%zz'],
    ['game', 'POST', '/api/agents/%/flags'],
    ['cage', 'GET', '/settlement/rake/%'],
    ['admin', 'GET', '/graphql/%'],
  ] as const)('%s %s %s', async (role, method, path) => {
    expectCoded4xx(await raw(`${url[role]}${path}`, { method, headers: { ...player.auth, ...m.service } }), 400, 'malformed_path');
  });
});

describe('a body that says gzip and is not gzip is 400 malformed_body, unauthenticated', () => {
  test.each([
    ['auth', '/api/auth/bridge'],
    ['auth', '/api/auth/sign-in/email'],
    ['game', '/claim-board/claim'],
    ['game', '/api/agents'],
    ['cage', '/api/deposit'],
    ['cage', '/api/tables'],
    ['admin', '/graphql'],
  ] as const)('%s %s', async (role, path) => {
    const r = await raw(`${url[role]}${path}`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, body: '{"not":"gzip"}',
    });
    expectCoded4xx(r, 400, 'malformed_body');
  });

  test('real gzip still works', async () => {
    const r = await raw(`${url.game}/api/agents`, {
      method: 'POST', headers: { ...player.auth, 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: gzipSync(JSON.stringify({ name: 'zipped' })),
    });
    expect(r.status).toBe(201);
  });
});

describe('JSON nested deeper than the bound is 400 json_too_deep', () => {
  const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
  const deepObject = (n: number) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;
  test.each([
    ['auth', '/api/auth/bridge'],
    ['game', '/api/agents'],
    ['game', '/admin/claim-sections'],
    ['cage', '/api/tables'],
    ['cage', '/api/deposit'],
    ['admin', '/graphql'],
  ] as const)('%s %s', async (role, path) => {
    for (const body of [deep(5000), deepObject(5000), `{"x":"[[[[","y":${deep(100)}}`]) {
      const r = await raw(`${url[role]}${path}`, {
        method: 'POST', headers: { ...player.auth, ...m.service, 'content-type': 'application/json' }, body,
      });
      expectCoded4xx(r, 400, 'json_too_deep');
    }
  });

  test('brackets inside strings do not count, and 64 levels pass the edge', async () => {
    const r = await raw(`${url.game}/api/agents`, {
      method: 'POST', headers: { ...player.auth, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `[[[[{{{{\\"${'['.repeat(500)}`.slice(0, 60) }),
    });
    expect(r.status).toBe(201);
    const nested = await raw(`${url.game}/api/agents`, {
      method: 'POST', headers: { ...player.auth, 'content-type': 'application/json' }, body: `{"name":"n","x":${deep(63)}}`,
    });
    expect(nested.status).toBe(201);
  });
});

describe('values Postgres cannot hold, and values of the wrong type', () => {
  test.each(['0000-01-01T00:00:00Z', '-000001-01-01T00:00:00Z', '+275760-09-13T00:00:00Z', '9999-12-31T23:59:60Z'])(
    'GET /api/hands?before=%s is 400',
    async (before) => {
      const r = await raw(`${url.game}/api/hands?before=${encodeURIComponent(before)}`, { headers: player.auth });
      expectCoded4xx(r, 400);
    },
  );

  test('a plausible before still answers', async () => {
    const r = await raw(`${url.game}/api/hands?before=2020-01-01T00:00:00Z`, { headers: player.auth });
    expect(r.status).toBe(200);
  });

  test.each([[{ a: 1 }], [['local']], [5], [true], [null]])('a non-string environment (%j) on /admin/claim-sections is 400', async (environment) => {
    for (const method of ['POST', 'PATCH']) {
      const r = await call(`${url.game}/admin/claim-sections`, {
        method, headers: (await m.operator()).auth, body: { environment, key: 'edge_key', kind: 'daily', amount: 1, conditionKey: 'x' },
      });
      expectCoded4xx(r, 400);
    }
  });
});

describe('a request Node cannot parse is answered in JSON too', () => {
  const rawExchange = (base: string, bytes: string) => new Promise<string>((resolve, reject) => {
    const { hostname, port } = new URL(base);
    const socket = connect(Number(port), hostname, () => socket.end(bytes));
    let text = '';
    socket.on('data', (d) => (text += d));
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
  });
  test.each([
    ['a NUL in a header value', 'GET /health HTTP/1.1\r\nHost: x\r\nX-Service-Key: a\u0000b\r\n\r\n', 400, 'malformed_request'],
    ['a request line that is not HTTP', 'HELLO\r\n\r\n', 400, 'malformed_request'],
    ['headers over the limit', `GET /health HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${'x'.repeat(20_000)}\r\n\r\n`, 431, 'headers_too_large'],
  ])('%s', async (_what, bytes, status, error) => {
    for (const role of ['auth', 'game', 'cage', 'admin'] as const) {
      const text = await rawExchange(url[role], bytes);
      const [head, body] = text.split('\r\n\r\n');
      expect({ role, line: head!.split('\r\n')[0], body: JSON.parse(body!) }).toEqual({ role, line: `HTTP/1.1 ${status} ${STATUS_CODES[status]}`, body: { error } });
    }
  });
});

describe('the one mapping: client-caused states and library 4xx errors stay coded 4xx', () => {
  const uriError = Object.assign(new URIError("Failed to decode param '%'"), { status: 400, statusCode: 400 });
  const zlibError = Object.assign(new Error('incorrect header check'), { code: 'Z_DATA_ERROR', status: 400, statusCode: 400 });
  const deep = Object.assign(new Error('JSON nested too deep'), { type: 'json.too_deep', status: 403 });
  const unsupported = Object.assign(new Error('unsupported content encoding "zip"'), { type: 'encoding.unsupported', status: 415 });
  test.each([
    [{ code: '22021', message: 'invalid byte sequence for encoding "UTF8": 0x00' }, 400, 'invalid_characters'],
    [{ code: '22P05', message: 'unsupported Unicode escape sequence' }, 400, 'invalid_characters'],
    [{ code: '22007', message: 'invalid input syntax for type timestamp' }, 400, 'invalid_datetime'],
    [{ code: '22008', message: 'date/time field value out of range' }, 400, 'invalid_datetime'],
    [{ code: '22032', message: 'invalid input syntax for type json' }, 400, 'malformed_json'],
    [{ code: 'GMTLR', message: 'table_limit_reached' }, 429, 'table_limit_reached'],
    [uriError, 400, 'malformed_path'],
    [zlibError, 400, 'malformed_body'],
    [deep, 400, 'json_too_deep'],
    [unsupported, 415, 'unsupported_content_encoding'],
    [Object.assign(new Error('teapot'), { status: 418 }), 418, 'bad_request'],
    [Object.assign(new Error('a library fault'), { status: 500 }), 500, 'internal_error'],
  ])('%o -> %i %s', (err, status, error) => {
    expect(toErrorBody(err)).toEqual({ status, body: { error } });
  });
});

test('the platform is alive and the books are clean after all of it', async () => {
  for (const role of Object.keys(url) as (keyof typeof url)[]) {
    expect((await raw(`${url[role]}/health`)).status).toBe(200);
  }
  await expectCleanAudit(db.owner);
});
