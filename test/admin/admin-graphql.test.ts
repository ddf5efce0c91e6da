// The admin role over real HTTP: PostGraphile 5 reads the cage books under row-level security.
// An operator's access JWT makes a request poker_admin for that operator's live session (every row,
// while the session lives); no credential, the service key, or a signed-out operator's token reads
// no row, and a player's token is refused. No mutation can write the cage.
import { jest } from '@jest/globals';
import { createServer } from 'node:net';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { fund, refId, systemAccount, userAccount } from '../helpers/cage.ts';
import { startTestPlatform, TEST_SERVICE_KEY, type TestPlatform } from '../helpers/platform.ts';
import { bridgedUser } from '../helpers/auth.ts';
import { AUTH_SECRET, ISSUER } from '../helpers/money.ts';
import { signInOperator } from '../helpers/operator.ts';
import { captureLogger, LEVEL } from '../helpers/logs.ts';
import { compactHand } from '../../server/game/hands/compact.ts';

let db: TestDatabase;
let platform: TestPlatform | undefined;
let admin: string;
let user: { userId: string; id: bigint };
let other: { userId: string; id: bigint };
let grantSource: bigint;
/** An operator's access JWT (its admin session live). */
let operator: string;
const fundings: string[] = [];
const logs = captureLogger('info');

interface GraphQLResponse<T = Record<string, any>> {
  status: number;
  contentType: string | null;
  body: { data?: T; errors?: { message: string }[] };
}

async function graphql<T = Record<string, any>>(
  query: string,
  options: { token?: string; key?: string; variables?: Record<string, unknown> } = {},
): Promise<GraphQLResponse<T>> {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/graphql-response+json' };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  if (options.key !== undefined) headers['x-service-key'] = options.key;
  const res = await fetch(`${admin}/graphql`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ query, variables: options.variables }),
  });
  return { status: res.status, contentType: res.headers.get('content-type'), body: (await res.json()) as GraphQLResponse<T>['body'] };
}

const BOOKS = `{
  allCageLedgers(orderBy: ROW_ID_ASC) { totalCount nodes { rowId entryId accountId amount refId kind moneyKind balanceAfter accountVersion } }
  allCageEntries { totalCount nodes { refId kind accounts amounts } }
  allCageAccounts(orderBy: ROW_ID_ASC) { totalCount nodes { rowId accountType userId moneyKind balance version } }
  allAccountBalances { totalCount nodes { rowId balance } }
}`;

beforeAll(async () => {
  db = await createTestDatabase();
  const cage = db.owner;
  user = await userAccount(cage);
  other = await userAccount(cage);
  grantSource = await systemAccount(cage, 'grant_source');
  for (const [account, amount] of [[user.id, 250n], [other.id, 40n], [user.id, 10n]] as const) {
    const { entryId } = await fund(cage, account, amount);
    const { rows } = await cage.query<{ ref_id: string }>('select ref_id from cage.cage_entries where id = $1', [entryId]);
    fundings.push(rows[0]!.ref_id);
  }
  platform = await startTestPlatform({
    databaseUrl: db.url, roles: ['auth', 'admin'], log: logs.log, env: { AUTH_SECRET, AUTH_BASE_URL: ISSUER, ENABLE_TEST_AUTH: 'true' },
  });
  admin = platform.url('admin');
  operator = (await signInOperator(db.owner, platform.url('auth'))).auth.authorization!.slice('Bearer '.length);
});

afterAll(async () => {
  await platform?.stop();
  await db?.drop();
});

describe('reads with an operator\'s access JWT', () => {
  test('returns the postings that were made, in the journal', async () => {
    const res = await graphql(BOOKS, { token: operator });
    expect(res.status).toBe(200);
    expect(res.body.errors).toBeUndefined();
    const ledger = res.body.data!.allCageLedgers;
    expect(ledger.totalCount).toBe(6);
    // each funding is two postings: the grant source pays, the user receives (bigints travel as strings)
    expect(ledger.nodes.map((n: any) => [n.refId, n.accountId, n.amount, n.kind, n.moneyKind])).toEqual([
      [fundings[0], String(grantSource), '-250', 'adjustment', 'play'],
      [fundings[0], String(user.id), '250', 'adjustment', 'play'],
      [fundings[1], String(grantSource), '-40', 'adjustment', 'play'],
      [fundings[1], String(other.id), '40', 'adjustment', 'play'],
      [fundings[2], String(grantSource), '-10', 'adjustment', 'play'],
      [fundings[2], String(user.id), '10', 'adjustment', 'play'],
    ]);
    const userPostings = ledger.nodes.filter((n: any) => n.accountId === String(user.id));
    expect(userPostings.map((n: any) => [n.balanceAfter, n.accountVersion])).toEqual([['250', '1'], ['260', '2']]);
    expect(res.body.data!.allCageEntries.totalCount).toBe(3);
    expect(res.body.data!.allCageEntries.nodes.map((n: any) => n.refId).sort()).toEqual([...fundings].sort());
  });

  test('returns the balances: the projection and the account_balances view', async () => {
    const res = await graphql(BOOKS, { token: operator });
    const accounts = res.body.data!.allCageAccounts.nodes;
    const byId = new Map(accounts.map((a: any) => [a.rowId, a]));
    expect(byId.get(String(user.id))).toEqual({
      rowId: String(user.id), accountType: 'user', userId: user.userId, moneyKind: 'play', balance: '260', version: '2',
    });
    expect(byId.get(String(other.id))).toMatchObject({ userId: other.userId, balance: '40', version: '1' });
    // the grant source is unbounded: no projection on its row, its balance comes from the journal
    expect(byId.get(String(grantSource))).toMatchObject({ accountType: 'grant_source', balance: '0' });
    const balances = Object.fromEntries(res.body.data!.allAccountBalances.nodes.map((b: any) => [b.rowId, b.balance]));
    expect(balances).toEqual({ [String(user.id)]: '260', [String(other.id)]: '40', [String(grantSource)]: '-300' });
  });

  test('a single account by id', async () => {
    const res = await graphql<{ cageAccountByRowId: { balance: string; userId: string } | null }>(
      'query ($id: BigInt!) { cageAccountByRowId(rowId: $id) { balance userId } }',
      { token: operator, variables: { id: String(user.id) } },
    );
    expect(res.body.data!.cageAccountByRowId).toEqual({ balance: '260', userId: user.userId });
  });
});

test('the game schema: tables and seats are readable by an operator, hidden without one', async () => {
  await db.owner.query("select game.create_table('admin-t1', 'poker', '{\"maxPlayers\": 6}', 'play', null)");
  const query = '{ allGameTables { totalCount nodes { tableId gameType status mode kind moneyKind } } allGameTablePlayers { totalCount } }';
  const admin = await graphql(query, { token: operator });
  expect(admin.body.errors).toBeUndefined();
  expect(admin.body.data!.allGameTables.nodes).toEqual([
    { tableId: 'admin-t1', gameType: 'poker', status: 'active', mode: 'cash', kind: 'open', moneyKind: 'play' },
  ]);
  const anonymous = await graphql(query, {});
  expect(anonymous.body.data!.allGameTables.totalCount).toBe(0);
  // the game functions that write are not in the admin schema
  const mutation = await graphql('mutation { createTable(input: {}) { clientMutationId } }', { token: operator });
  expect(mutation.body.errors).toBeDefined();
});

test('a hand\'s events: `stored` inflates a compact hand and reads an older jsonb one alike; the raw compact value is not in the schema', async () => {
  await db.owner.query("select game.create_table('admin-hands', 'poker', '{\"maxPlayers\": 6}', 'play', null)");
  const history = [{ type: 'hand_started', seats: [{ seat: 0, playerId: '1', stack: '100' }] }, { type: 'hand_ended', rake: '0' }];
  const result = { type: 'hand_result', rake: '0' };
  await db.owner.query(`insert into game.hand_histories (hand_id, table_id, hand_number, status, compact, started, ended_at)
                        values ('admin-compact', 'admin-hands', 1, 'finished', $1, $2, now())`, [compactHand(JSON.stringify(history), JSON.stringify(result)), JSON.stringify(history[0])]);
  await db.owner.query(`insert into game.hand_histories (hand_id, table_id, hand_number, status, history, result, ended_at)
                        values ('admin-jsonb', 'admin-hands', 2, 'finished', $1, $2, now())`, [JSON.stringify(history), JSON.stringify(result)]);
  const query = '{ allGameHandHistories(condition: { tableId: "admin-hands" }, orderBy: HAND_NUMBER_ASC) { nodes { handId history result stored } } }';
  const admin = await graphql(query, { token: operator });
  expect(admin.body.errors).toBeUndefined();
  expect(admin.body.data!.allGameHandHistories.nodes).toEqual([
    { handId: 'admin-compact', history: null, result: null, stored: { history, result, readable: true } },
    { handId: 'admin-jsonb', history, result, stored: { history, result, readable: true } },
  ]);
  expect((await graphql(query, {})).body.data!.allGameHandHistories.nodes).toEqual([]);
  const raw = await graphql('{ allGameHandHistories { nodes { compact } } }', { token: operator });
  expect(raw.body.errors?.[0]?.message).toMatch(/Cannot query field "compact"/);
});

describe('reads without a live operator session', () => {
  const expectNoRow = async (options: { token?: string; key?: string }) => {
    const res = await graphql(BOOKS, options);
    expect(res.status).toBe(200);
    expect(res.body.errors).toBeUndefined();
    const data = res.body.data!;
    for (const field of ['allCageLedgers', 'allCageEntries', 'allCageAccounts', 'allAccountBalances']) {
      expect({ field, totalCount: data[field].totalCount, nodes: data[field].nodes }).toEqual({ field, totalCount: 0, nodes: [] });
    }
    const single = await graphql('query ($id: BigInt!) { cageAccountByRowId(rowId: $id) { balance } }', {
      ...options, variables: { id: String(user.id) },
    });
    expect(single.body.data).toEqual({ cageAccountByRowId: null });
  };
  test.each([
    ['no credential', {}],
    ['the service key (no longer a credential here)', { key: TEST_SERVICE_KEY }],
    ['a wrong key', { key: 'not-the-service-key-0123456789abcdef' }],
  ])('%s: the same query returns no row', async (_label, options) => {
    await expectNoRow(options);
  });

  test('a player\'s token is refused (403 admin_required), a token that is not one 401; nothing is read', async () => {
    const player = await bridgedUser(db, { issuer: ISSUER });
    const res = await graphql(BOOKS, { token: player.jwt });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ error: 'admin_required' });
    const forged = await graphql(BOOKS, { token: 'a.b.c' });
    expect(forged.status).toBe(401);
    expect(forged.body).toMatchObject({ error: 'invalid_token' });
  });

  test('an operator who signed out reads nothing with the token they still hold (the session is checked in SQL), and each request is logged with the admin', async () => {
    const ops = await signInOperator(db.owner, platform!.url('auth'));
    const token = ops.auth.authorization!.slice('Bearer '.length);
    expect((await graphql('{ allCageAccounts { totalCount } }', { token })).body.data!.allCageAccounts.totalCount).toBeGreaterThan(0);
    expect(logs.lines.some((l) => l.msg === 'admin GraphQL request' && l.adminId === ops.adminId)).toBe(true);
    await db.owner.query('update auth_private.sessions set revoked_at = now() where user_id = $1', [ops.adminId]);
    await expectNoRow({ token });
  });

  test('the GraphQL login, stolen, reads nothing as poker_admin without a live session handle', async () => {
    const graphqlLogin = db.pool('poker_graphql' as never, 1);
    const client = await graphqlLogin.connect();
    try {
      await client.query('begin');
      await client.query('set local role poker_admin');
      for (const sid of [null, 'not-a-uuid', '00000000-0000-4000-8000-000000000000']) {
        if (sid !== null) await client.query("select set_config('poker.admin_sid', $1, true)", [sid]);
        const { rows } = await client.query('select (select count(*) from cage.cage_accounts)::int as accounts, (select count(*) from cage.cage_ledger)::int as postings');
        expect(rows[0]).toEqual({ accounts: 0, postings: 0 });
      }
      await client.query('rollback');
    } finally {
      client.release();
    }
  });

  test('it is row-level security that hides the rows: the anonymous role holds SELECT', async () => {
    const { rows } = await db.owner.query<{ table: string; can: boolean; rls: boolean }>(`
      select t as table, has_table_privilege('poker_anonymous', t, 'select') as can,
             (select relrowsecurity from pg_class where oid = t::regclass) as rls
        from unnest(array['cage.cage_ledger', 'cage.cage_entries', 'cage.cage_accounts']) t`);
    expect(rows).toEqual([
      { table: 'cage.cage_ledger', can: true, rls: true },
      { table: 'cage.cage_entries', can: true, rls: true },
      { table: 'cage.cage_accounts', can: true, rls: true },
    ]);
  });
});

describe('no mutation writes the cage', () => {
  const INTROSPECT = '{ __schema { mutationType { name fields { name } } } }';

  test.each([
    ['for an operator', 'operator'],
    ['without a credential', undefined],
  ])('the schema %s offers no cage mutation', async (_label, who) => {
    const res = await graphql<{ __schema: { mutationType: { name: string; fields: { name: string }[] } | null } }>(INTROSPECT, who ? { token: operator } : {});
    expect(res.status).toBe(200);
    const names = res.body.data!.__schema.mutationType?.fields.map((f) => f.name) ?? [];
    const forbidden = names.filter((n) =>
      /^(create|update|delete|upsert)/i.test(n) || /movement|account|ledger|entr|receipt|tablebook|projection/i.test(n),
    );
    expect(forbidden).toEqual([]);
    // today the admin schema has no mutation at all
    expect(res.body.data!.__schema.mutationType).toBeNull();
  });

  test('a mutation sent anyway is refused and writes nothing', async () => {
    const count = async () =>
      (await db.owner.query<{ n: string }>('select (select count(*) from cage.cage_ledger) + (select count(*) from cage.cage_entries) as n')).rows[0]!.n;
    const before = await count();
    const attempts = [
      `mutation { createCageLedger(input: { cageLedger: { entryId: 1, accountId: ${user.id}, moneyKind: PLAY, kind: GRANT, refId: "x", amount: 5 } }) { clientMutationId } }`,
      `mutation { updateCageAccountByRowId(input: { rowId: ${user.id}, cageAccountPatch: { balance: 1000000 } }) { clientMutationId } }`,
      `mutation { deleteCageAccountByRowId(input: { rowId: ${user.id} }) { clientMutationId } }`,
      `mutation { postMovement(input: { pRefId: "${refId('gql')}", pKind: "grant", pMoneyKind: "play", pAccounts: [${grantSource}, ${user.id}], pAmounts: [-5, 5] }) { clientMutationId } }`,
    ];
    const consoleError = jest.spyOn(console, 'error').mockImplementation(() => {});
    try {
      for (const query of attempts) {
        for (const token of [operator, undefined]) {
          const res = await graphql(query, { token });
          expect(res.status).toBe(400);
          expect(res.body.data ?? null).toBeNull();
          expect(res.body.errors?.map((e) => e.message)).toContain('This schema does not support mutation operations.');
        }
      }
      // refused in validation, so nothing reaches the planner (which would print a stack to the console)
      expect(consoleError).not.toHaveBeenCalled();
    } finally {
      consoleError.mockRestore();
    }
    expect(await count()).toBe(before);
  });

  test('the database refuses the admin roles any direct write too', async () => {
    for (const role of ['poker_admin', 'poker_anonymous'] as const) {
      const pool = db.pool(role, 1);
      await expect(pool.query('update cage.cage_accounts set balance = balance + 1')).rejects.toMatchObject({ code: '42501' });
      await expect(
        pool.query("select cage.post_movement('x', 'grant', 'play', array[1, 2]::bigint[], array[-1, 1]::bigint[], '{}')"),
      ).rejects.toMatchObject({ code: '42501' });
    }
  });
});

describe('the HTTP surface', () => {
  test('/health answers ok with the database latency', async () => {
    const res = await fetch(`${admin}/health`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { ok: boolean; latency: number };
    // and the audit's liveness (issue 31): the last clean periodic run, not older than three periods
    expect(body).toEqual({ ok: true, latency: expect.any(Number), audit: expect.objectContaining({ stale: false, periodSeconds: expect.any(Number) }) });
    expect(body.latency).toBeGreaterThanOrEqual(0);
  });

  test('the GraphiQL (Ruru) page and its assets load outside production', async () => {
    const page = await fetch(`${admin}/`, { headers: { accept: 'text/html' } });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    const html = await page.text();
    expect(html).toMatch(/ruru/i);
    const script = /src="([^"]*ruru[^"]*\.js)"|href="([^"]*ruru[^"]*\.js)"/.exec(html);
    expect(script).not.toBeNull();
    const asset = await fetch(new URL(script![1] ?? script![2]!, `${admin}/`));
    expect(asset.status).toBe(200);
    expect(asset.headers.get('content-type')).toMatch(/javascript/);
  });

  test.each([
    ['truncated JSON', '{"query": "{ allCageLedgers { totalCount } }"'],
    ['not JSON at all', 'query { allCageLedgers { totalCount } }'],
    ['a JSON string instead of an object', '"{ allCageLedgers { totalCount } }"'],
  ])('%s to /graphql is a 4xx JSON error, not a 500 or a stack', async (_label, body) => {
    const res = await fetch(`${admin}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${operator}` },
      body,
    });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(res.headers.get('content-type')).toMatch(/json/);
    const text = await res.text();
    expect(JSON.parse(text)).toEqual({ error: 'malformed_json' });
    expect(text).not.toMatch(/\bat .*\(|node_modules|SyntaxError/);
  });

  test('a GraphQL syntax error is a 4xx GraphQL error', async () => {
    const res = await graphql('{ allCageLedgers { totalCount ', { token: operator });
    expect(res.status).toBe(400);
    expect(res.body.errors?.[0]?.message).toMatch(/Syntax Error/);
  });

  test('a database error reaches the client masked and the log as one JSON line, not the console', async () => {
    // the anonymous role may not run cage.audit(): the database refuses, the client sees only an id
    const consoleError = jest.spyOn(console, 'error').mockImplementation(() => {});
    try {
      const res = await graphql('{ audit { nodes { invariant } } }');
      const error = res.body.errors?.[0] as { message: string; extensions?: { errorId?: string } } | undefined;
      expect(error?.message).toMatch(/^An error occurred \(error id [0-9a-f]{12}\)$/);
      expect(JSON.stringify(res.body)).not.toMatch(/permission denied|cage\.audit|\bat /);
      const line = logs.lines.find((l) => l.errorId === error?.extensions?.errorId);
      expect(line).toMatchObject({ level: LEVEL.error, role: 'admin', msg: 'GraphQL request failed' });
      expect(JSON.stringify(line)).toMatch(/permission denied for function audit/);
      expect(consoleError).not.toHaveBeenCalled();
    } finally {
      consoleError.mockRestore();
    }
    // an operator's same query runs: the books are clean
    const ok = await graphql('{ audit { nodes { invariant } } }', { token: operator });
    expect(ok.body).toEqual({ data: { audit: { nodes: [] } } });
  });

  test('an unknown path is a JSON 404', async () => {
    const res = await fetch(`${admin}/nope`);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: 'not_found' });
  });
});

test('in production the GraphiQL page is not served, and the API still is', async () => {
  const production = await startTestPlatform({
    databaseUrl: db.url, roles: ['admin'],
    env: { NODE_ENV: 'production', AUTH_BASE_URL: ISSUER, AUTH_JWKS_URL: `${platform!.url('auth')}/api/auth/jwks` },
  });
  try {
    const url = production.url('admin');
    const page = await fetch(`${url}/`, { headers: { accept: 'text/html' } });
    expect(page.status).toBe(404);
    await page.arrayBuffer();
    const res = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${operator}` },
      body: JSON.stringify({ query: '{ allCageLedgers { totalCount } }' }),
    });
    expect(await res.json()).toEqual({ data: { allCageLedgers: { totalCount: 6 } } });
    // without an operator's token: 401, nothing planned
    const anonymous = await fetch(`${url}/graphql`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-service-key': TEST_SERVICE_KEY },
      body: JSON.stringify({ query: '{ allCageLedgers { totalCount } }' }),
    });
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toMatchObject({ error: 'admin_token_required' });
  } finally {
    await production.stop();
  }
});

test('a port already taken: the start fails and leaves no connection of the role open', async () => {
  const blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  const port = (blocker.address() as { port: number }).port;
  const own = await createTestDatabase();
  const adminConnections = async () =>
    Number((await own.owner.query<{ n: string }>(
      "select count(*) as n from pg_stat_activity where datname = current_database() and application_name = 'admin'",
    )).rows[0]!.n);
  try {
    await expect(
      startTestPlatform({ databaseUrl: own.url, roles: ['admin'], env: { ADMIN_PORT: String(port) } }),
    ).rejects.toMatchObject({ code: 'EADDRINUSE' });
    const deadline = Date.now() + 5000;
    while ((await adminConnections()) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    expect(await adminConnections()).toBe(0);
  } finally {
    await new Promise((resolve) => blocker.close(resolve));
    await own.drop();
  }
});
