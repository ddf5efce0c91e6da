// The admin GraphQL's cost limits, against the real admin role: a query's depth, aliases and
// selections are counted before anything is planned (a 1,500-alias query used to plan for seconds on
// the one event loop every role shares), and in production an anonymous caller is refused outright
// (nothing to plan, no introspection); an operator reads with their own access JWT. The time of the 1,500-alias query is printed, not asserted.
import { getIntrospectionQuery } from 'graphql';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { AUTH_SECRET, ISSUER } from '../helpers/money.ts';
import { signInOperator } from '../helpers/operator.ts';
import { startTestPlatform, TEST_SERVICE_KEY, type TestPlatform } from '../helpers/platform.ts';

let db: TestDatabase;
let dev: TestPlatform | undefined;
let prod: TestPlatform | undefined;
/** An operator's access JWT. */
let OPERATOR: string;

beforeAll(async () => {
  db = await createTestDatabase();
  dev = await startTestPlatform({ databaseUrl: db.url, roles: ['auth', 'admin', 'cage'], env: { AUTH_SECRET, AUTH_BASE_URL: ISSUER } });
  OPERATOR = (await signInOperator(db.owner, dev.url('auth'))).auth.authorization!.slice('Bearer '.length);
  prod = await startTestPlatform({
    databaseUrl: db.url, roles: ['admin'],
    env: {
      NODE_ENV: 'production', AUTH_SECRET: 'x'.repeat(40), AUTH_BASE_URL: ISSUER, AUTH_JWKS_URL: `${dev.url('auth')}/api/auth/jwks`, ENABLE_TEST_AUTH: 'false',
    },
  });
});
afterAll(async () => {
  await dev?.stop();
  await prod?.stop();
  await db?.drop();
});

/** `credential`: an operator's JWT (sent as Bearer), or the service key (sent as x-service-key, which reads nothing any more). */
async function graphql(base: string, body: unknown, credential?: string) {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/graphql-response+json' };
  if (credential === TEST_SERVICE_KEY || credential?.startsWith('not-')) headers['x-service-key'] = credential;
  else if (credential !== undefined) headers.authorization = `Bearer ${credential}`;
  const res = await fetch(`${base}/graphql`, { method: 'POST', headers, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as { error?: string; data?: any; errors?: { message: string }[] } };
}

const aliases = (n: number) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: allCageAccounts { totalCount }`).join(' ')} }`;

test('1,500 aliases are refused before planning, for an operator or anyone', async () => {
  await graphql(dev!.url('admin'), { query: '{ __typename }' }, OPERATOR); // the schema is built
  for (const key of [undefined, OPERATOR]) {
    const started = performance.now();
    const res = await graphql(dev!.url('admin'), { query: aliases(1500) }, key);
    process.stdout.write(`admin GraphQL, 1,500 aliases (${key ? 'operator' : 'anonymous'}): ${res.status} in ${Math.round(performance.now() - started)} ms\n`);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('query_too_complex');
    expect(res.body.errors?.[0]?.message).toMatch(/aliases|tokens/);
  }
  const overAliases = await graphql(dev!.url('admin'), { query: aliases(21) }, OPERATOR);
  expect({ status: overAliases.status, error: overAliases.body.error, message: overAliases.body.errors?.[0]?.message })
    .toEqual({ status: 400, error: 'query_too_complex', message: 'query refused: more than 20 aliases' });
  const started = performance.now();
  expect((await graphql(dev!.url('admin'), { query: aliases(20) }, OPERATOR)).status).toBe(200);
  process.stdout.write(`admin GraphQL, 20 aliases (the most allowed): 200 in ${Math.round(performance.now() - started)} ms\n`);
});

test('depth and selections are bounded, fragments included', async () => {
  const base = dev!.url('admin');
  const deep = `{ __schema { types { fields { type { ${'ofType { '.repeat(14)} name ${'} '.repeat(14)} } } } } }`;
  const wide = `fragment F on CageAccount { ${Array.from({ length: 40 }, () => 'rowId balance version').join(' ')} } { allCageAccounts { nodes { ...F ...F ...F ...F ...F ...F ...F ...F ...F ...F ...F ...F } } }`;
  const cycle = 'fragment A on Query { ...B } fragment B on Query { ...A } { ...A }';
  const expanding = `${Array.from({ length: 30 }, (_, i) => `fragment F${i} on Query { ...F${i + 1} ...F${i + 1} }`).join(' ')} fragment F30 on Query { __typename } { ...F0 }`;
  for (const query of [deep, wide, expanding]) {
    const res = await graphql(base, { query }, OPERATOR);
    expect({ status: res.status, error: res.body.error }).toEqual({ status: 400, error: 'query_too_complex' });
  }
  const cyclic = await graphql(base, { query: cycle }, OPERATOR);
  expect(cyclic.status).toBe(400); // graphql's own NoFragmentCycles names it; the count did not loop
});

test('queries an operator writes, and the full introspection query, still run', async () => {
  const base = dev!.url('admin');
  const books = await graphql(base, { query: '{ allCageAccounts(first: 5) { totalCount nodes { rowId balance version } } allGameTables { nodes { tableId } } }' }, OPERATOR);
  expect(books.status).toBe(200);
  expect(books.body.errors).toBeUndefined();
  const introspection = await graphql(base, { query: getIntrospectionQuery() }, OPERATOR);
  expect(introspection.status).toBe(200);
  expect(introspection.body.data?.__schema?.queryType?.name).toBe('Query');
});

test('a request that is not a GraphQL body is a coded 4xx', async () => {
  const base = dev!.url('admin');
  for (const body of [{ query: 5 }, { query: '{ __typename }', variables: 'x' }, [1, 2], 'text']) {
    const res = await graphql(base, body, OPERATOR);
    expect({ status: res.status, error: typeof res.body.error }).toEqual({ status: 400, error: 'string' });
  }
  const notJson = await fetch(`${base}/graphql`, { method: 'POST', headers: { 'content-type': 'application/graphql' }, body: '{ __typename }' });
  expect({ status: notJson.status, body: await notJson.json() }).toEqual({ status: 415, body: { error: 'unsupported_media_type' } });
  const get = await fetch(`${base}/graphql?query=${encodeURIComponent('{ __typename }')}`);
  expect({ status: get.status, body: await get.json() }).toEqual({ status: 405, body: { error: 'method_not_allowed' } });
});

describe('in production', () => {
  test('an anonymous request is refused before it is parsed, introspection included', async () => {
    for (const key of [undefined, 'not-the-service-key-0123456789abcdef', TEST_SERVICE_KEY]) {
      for (const query of ['{ __schema { types { name } } }', '{ allCageAccounts { totalCount } }', aliases(1500)]) {
        const res = await graphql(prod!.url('admin'), { query }, key);
        expect({ status: res.status, error: res.body.error, data: res.body.data }).toEqual({ status: 401, error: 'admin_token_required', data: undefined });
      }
    }
  });

  test('an operator\'s token reads, and introspects', async () => {
    const res = await graphql(prod!.url('admin'), { query: '{ __schema { queryType { name } } allCageAccounts { totalCount } }' }, OPERATOR);
    expect(res.status).toBe(200);
    expect(res.body.data?.__schema.queryType.name).toBe('Query');
  });
});
