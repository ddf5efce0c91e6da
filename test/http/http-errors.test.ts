// The HTTP contract every role shares: bad input is a 4xx JSON { error } and never a 500 or a stack.
import type pg from 'pg';
import { startCage } from '../../server/roles/cage.ts';
import { loadConfig } from '../../server/config/index.ts';
import { createRolePool } from '../../server/db/pools.ts';
import { createApp, listen, type Listening } from '../../server/http/app.ts';
import { ApiError, toErrorBody } from '../../server/http/errors.ts';
import { chainError } from '../../server/chain/errors.ts';
import { ChainUnavailable } from '../../server/chain/types.ts';
import type { StartedRole } from '../../server/roles/types.ts';
import { createLogger } from '../../server/telemetry/index.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { freePort } from '../helpers/ports.ts';

let db: TestDatabase;
let role: StartedRole;
beforeAll(async () => {
  db = await createTestDatabase();
  role = await startCage({ config: loadConfig({ NODE_ENV: 'test', CAGE_PORT: '0', HTTP_BODY_LIMIT: '2048' }), databaseUrl: db.url, log: createLogger('silent') });
});
afterAll(async () => {
  await role?.stop();
  await db.drop();
});

async function expectJsonError(res: Response, status: number, error: string) {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/application\/json/);
  const body = await res.json();
  expect(body).toEqual({ error });
  expect(JSON.stringify(body)).not.toMatch(/at .*\.ts|stack/i);
}

test('/health reports the database latency', async () => {
  const res = await fetch(`${role.url}/health`);
  expect(res.status).toBe(200);
  const body = (await res.json()) as { ok: boolean; latency: number };
  expect(body.ok).toBe(true);
  expect(typeof body.latency).toBe('number');
});

test('an unknown route is a JSON 404', async () => {
  await expectJsonError(await fetch(`${role.url}/no/such/route`), 404, 'not_found');
  await expectJsonError(await fetch(`${role.url}/api/cage/receipt-key`, { method: 'DELETE' }), 404, 'not_found');
});

test('malformed JSON is a 400', async () => {
  const res = await fetch(`${role.url}/api/anything`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":' });
  await expectJsonError(res, 400, 'malformed_json');
});

test('an oversize body is a 413', async () => {
  const res = await fetch(`${role.url}/api/anything`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ pad: 'x'.repeat(5000) }),
  });
  await expectJsonError(res, 413, 'body_too_large');
});

test('an unsupported charset is a 4xx, not a 500', async () => {
  const res = await fetch(`${role.url}/api/anything`, { method: 'POST', headers: { 'content-type': 'application/json; charset=klingon' }, body: '{}' });
  expect(res.status).toBeGreaterThanOrEqual(400);
  expect(res.status).toBeLessThan(500);
});

test('/health says so when the database is unreachable', async () => {
  const deadPool: pg.Pool = createRolePool(`postgres://postgres:postgres@127.0.0.1:${await freePort()}/none`, 'poker_cage', { max: 1 });
  const app = await createApp({ log: createLogger('silent'), bodyLimit: 1024, pool: deadPool, routes: () => {} });
  const http: Listening = await listen(app, '127.0.0.1', 0);
  try {
    const res = await fetch(`${http.url}/health`);
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ ok: false, error: 'database_unreachable' });
  } finally {
    await http.close();
    await deadPool.end();
  }
});

test('every response renders a bigint as its decimal string (one JSON rule for the HTTP roles)', async () => {
  const deadPool: pg.Pool = createRolePool(`postgres://postgres:postgres@127.0.0.1:${await freePort()}/none`, 'poker_cage', { max: 1 });
  const app = await createApp({
    log: createLogger('silent'), bodyLimit: 1024, pool: deadPool,
    routes: (a) => {
      a.get('/big', (_req, res) => void res.json({ chips: 9007199254740993n, nested: [{ n: -5n }], plain: 7 }));
    },
  });
  const http: Listening = await listen(app, '127.0.0.1', 0);
  try {
    expect(await (await fetch(`${http.url}/big`)).text()).toBe('{"chips":"9007199254740993","nested":[{"n":"-5"}],"plain":7}');
  } finally {
    await http.close();
    await deadPool.end();
  }
});

describe('one mapping from errors to responses', () => {
  test.each([
    [{ code: 'CGNSF', message: 'insufficient_cage_balance' }, 402, 'insufficient_cage_balance'],
    [{ code: 'CGREF', message: 'ref_id_conflict' }, 409, 'ref_id_conflict'],
    [{ code: 'CGUNB', message: 'unbalanced_movement' }, 400, 'unbalanced_movement'],
    [{ code: 'CGACC', message: 'account_not_found' }, 404, 'account_not_found'],
    [{ code: 'CGIMM', message: 'journal_immutable' }, 409, 'journal_immutable'],
    [{ code: '22003', message: 'bigint out of range' }, 400, 'amount_out_of_range'],
    [{ code: '22P02', message: 'invalid input syntax for type bigint: "1.5"' }, 400, 'bad_request'],
    [{ code: '42501', message: 'permission denied for table cage_ledger' }, 403, 'forbidden'],
    [{ code: '40P01', message: 'deadlock detected' }, 503, 'busy_retry'],
    [new ApiError(401, 'missing_bearer_token'), 401, 'missing_bearer_token'],
    [new Error('boom with a secret inside'), 500, 'internal_error'],
    [{ code: 'XX000', message: 'internal' }, 500, 'internal_error'],
    // an unreachable chain, from any route (issue 32): the registry's bank code, never a 500
    [new ChainUnavailable('chain unavailable: fetch failed'), 503, 'chain_unavailable'],
    [chainError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8545'), { code: 'ECONNREFUSED' })), 503, 'chain_unavailable'],
    [chainError(new TypeError('fetch failed', { cause: Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }) })), 503, 'chain_unavailable'],
  ])('%o -> %i %s', (err, status, error) => {
    expect(toErrorBody(err)).toEqual({ status, body: { error } });
  });

  test('validation errors carry their issues', () => {
    const err = new ApiError(400, 'validation_failed', [{ path: ['amount'], message: 'Expected integer', code: 'invalid_type' }]);
    expect(toErrorBody(err)).toEqual({ status: 400, body: { error: 'validation_failed', issues: [{ path: ['amount'], message: 'Expected integer', code: 'invalid_type' }] } });
  });
});
