// The HTTP fuzz: every route the running roles (auth, game, cage, admin, betting, chain-bank, web) actually mount, driven with
// malformed and hostile values (path parameters, query, bodies of every shape and encoding, auth
// headers: none, garbage, a real JWT, the service key). No answer may be a 500, an uncoded 5xx, an
// error without a JSON `error` code or a stack; every role stays up; the cage audit stays empty.
// A mounted route the fuzz knows nothing about fails the suite (add it to ROUTES).
// Seeded: FUZZ_SEED (printed), FUZZ_RUNS requests per route.
import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { expectCleanAudit } from '../helpers/cage.ts';
import { ISSUER, startMoneyPlatform } from '../helpers/money.ts';
import {
  closeFuzzAgent, contractBreach, encodeLoose, FUZZ_RUNS, FUZZ_SEED, fieldValue, hostileJson, hostileString, inPool, pathSegment, rawRequest,
} from '../helpers/fuzz.ts';

type RoleName = 'auth' | 'game' | 'cage' | 'admin' | 'betting' | 'chain-bank' | 'web';
type Auth = 'none' | 'jwt' | 'service' | 'operator';

/** Every route the fuzz knows: how it authenticates, and the body/query fields it reads. */
const ROUTES: Record<string, { auth: Auth; fields?: string[]; query?: string[] }> = {
  // auth
  'auth GET /health': { auth: 'none' },
  'auth GET /openapi.json': { auth: 'none' },
  'auth POST /api/auth/bridge': { auth: 'none', fields: ['idToken', 'inviteCode'] },
  'auth POST /api/dev/mint-jwt': { auth: 'service', fields: ['userId'] },
  'auth GET /api/auth/jwks': { auth: 'none' },
  'auth POST /admin/invite-codes': { auth: 'service', fields: ['maxUses', 'expiresInSeconds', 'createdBy'] },
  'auth POST /api/auth/solana/nonce': { auth: 'jwt', fields: ['address'] },
  'auth POST /api/link-wallet/solana': { auth: 'jwt', fields: ['address', 'message', 'signature'] },
  'auth POST /api/auth/siwe/nonce': { auth: 'jwt', fields: ['walletAddress', 'chainId'] },
  'auth POST /api/link-wallet': { auth: 'jwt', fields: ['message', 'signature', 'walletAddress', 'chainId'] },
  'auth POST /api/auth/request-password-reset': { auth: 'none', fields: ['email', 'redirectTo'] },
  'auth POST /api/auth/reset-password': { auth: 'none', fields: ['newPassword', 'token'] },
  'auth GET /api/auth/get-session': { auth: 'jwt' },
  'auth GET /api/auth/token': { auth: 'jwt' },
  'auth POST /api/auth/sign-in/email': { auth: 'none', fields: ['email', 'password'] },
  'auth POST /api/auth/sign-out': { auth: 'jwt' },
  'auth DELETE /api/wallets/:address': { auth: 'jwt' },
  'auth GET /api/internal/user-wallets-solana/:publicUserId': { auth: 'service' },
  'auth GET /api/internal/user-wallets/:publicUserId': { auth: 'service' },
  'auth GET /api/wallets': { auth: 'jwt' },
  'auth POST /api/wallets/set-primary': { auth: 'jwt', fields: ['walletAddress'] },
  // game
  'game GET /health': { auth: 'none' },
  'game GET /openapi.json': { auth: 'none' },
  'game GET /asyncapi.json': { auth: 'none' },
  'game GET /api/dealer/key': { auth: 'none' },
  'game GET /api/tables/:tableId': { auth: 'none' },
  'game GET /api/tables': { auth: 'none', query: ['mode', 'status', 'moneyKind', 'after', 'limit'] },
  'game POST /internal/credit-chips': { auth: 'service', fields: ['creditKey', 'tableId', 'userId', 'seatIndex', 'amount', 'moneyKind'] },
  'game POST /internal/credit-chips/cancel': { auth: 'service', fields: ['creditKey', 'tableId', 'userId'] },
  'game POST /internal/settle-withdrawal': { auth: 'service', fields: ['playerId', 'ledgerRefId', 'settlement', 'tableId', 'userId'] },
  'game POST /internal/stand-up': { auth: 'service', fields: ['tableId', 'sid', 'userId', 'reason'] },
  'game GET /claim-board/state': { auth: 'jwt', query: ['now'] },
  'game POST /claim-board/claim': { auth: 'jwt', fields: ['sectionKey', 'idempotencyKey', 'now'] },
  'game POST /internal/claim-board/condition-met': { auth: 'service', fields: ['userId', 'conditionKey', 'idempotencyKey'] },
  'game GET /admin/claim-sections': { auth: 'operator' },
  'game POST /admin/claim-sections': { auth: 'operator', fields: ['environment', 'key', 'kind', 'cadence', 'amount', 'order', 'conditionKey', 'enabled'] },
  'game PATCH /admin/claim-sections': { auth: 'operator', fields: ['environment', 'key', 'kind', 'cadence', 'amount', 'order', 'enabled'] },
  'game DELETE /admin/claim-sections/:key': { auth: 'operator', query: ['environment'] },
  'game GET /admin/claim-settings': { auth: 'operator', query: ['environment'] },
  'game PATCH /admin/claim-settings': { auth: 'operator', fields: ['environment', 'claimBoardEnabled', 'playTransferGateEnabled'] },
  'game GET /api/agents': { auth: 'jwt' },
  'game POST /api/agents': { auth: 'jwt', fields: ['name'] },
  'game POST /api/agents/:agentId/versions': { auth: 'jwt', fields: ['manifest'] },
  'game POST /api/agents/:agentId/flags': { auth: 'jwt', fields: ['handId', 'note'] },
  'game GET /api/hands': { auth: 'jwt', query: ['limit', 'before', 'tableId', 'agentId'] },
  'game GET /api/hands/:handId': { auth: 'jwt' },
  'game POST /internal/test/hand': { auth: 'service', fields: ['action', 'tableId', 'handId', 'stacks', 'rake'] },
  'game POST /internal/tournament-register': { auth: 'service', fields: ['tableId', 'agentId'] },
  'game POST /internal/tournament-unregister': { auth: 'service', fields: ['tableId', 'agentId'] },
  'game POST /admin/force-end-tournament': { auth: 'service', fields: ['tableId'] },
  'game POST /internal/force-end-tournament': { auth: 'service', fields: ['tableId'] },
  'game POST /internal/payout-confirmed': { auth: 'service', fields: ['tableId', 'position', 'userId', 'amount', 'txHash'] },
  'game GET /admin/tournaments': { auth: 'operator' },
  'game GET /admin/tournaments/:tableId': { auth: 'operator' },
  // cage
  'cage GET /health': { auth: 'none' },
  'cage GET /openapi.json': { auth: 'none' },
  'cage GET /api/cage/receipt-key': { auth: 'none' },
  'cage POST /api/tables': { auth: 'jwt', fields: ['tableId', 'gameType', 'settings', 'moneyKind'] },
  'cage POST /api/deposit': { auth: 'jwt', fields: ['tableId', 'seatIndex', 'amount', 'idempotencyKey'] },
  'cage POST /api/withdraw': { auth: 'jwt', fields: ['tableId', 'userId', 'forced', 'payoutIntent'] },
  'cage POST /api/grant': { auth: 'service', fields: ['recipient', 'amount', 'claimId'] },
  'cage POST /api/operator/purchase': { auth: 'operator', fields: ['userId', 'amount', 'externalRef', 'moneyKind'] },
  'cage POST /api/operator/redemption': { auth: 'operator', fields: ['userId', 'amount', 'externalRef', 'moneyKind'] },
  'cage POST /api/operator/correction': { auth: 'operator', fields: ['ref', 'moneyKind', 'legs', 'reason'] },
  'cage GET /api/operator/switches': { auth: 'operator' },
  'cage POST /api/operator/switches': { auth: 'operator', fields: ['name', 'enabled'] },
  'cage GET /api/operator/keys': { auth: 'operator', query: ['purpose'] },
  'cage POST /api/operator/keys': { auth: 'operator', fields: ['action', 'purpose', 'publicKey'] },
  'cage GET /api/operator/process-urls': { auth: 'operator' },
  'cage POST /api/operator/process-urls': { auth: 'operator', fields: ['url'] },
  'cage DELETE /api/operator/process-urls': { auth: 'operator', fields: ['url'] },
  'cage POST /api/operator/tables/:tableId/status': { auth: 'operator', fields: ['status'] },
  'cage GET /api/deposits/:idempotencyKey': { auth: 'jwt' },
  'cage POST /api/custody/claim': { auth: 'jwt', fields: ['entryId'] },
  'cage GET /api/cage/receipts': { auth: 'jwt' },
  'cage GET /api/cage/balances': { auth: 'jwt' },
  'cage GET /settlement/rake/:tableId': { auth: 'service' },
  'cage POST /settlement/reconcile-rake': { auth: 'service', fields: ['tableId'] },
  'cage POST /settlement/reconcile-stand-ups': { auth: 'service', fields: ['graceSeconds'] },
  'cage POST /settlement/sign-bust-receipts': { auth: 'service', fields: [] },
  'cage POST /settlement/settle': { auth: 'service' },
  'cage POST /api/operator/seat': { auth: 'service' },
  'cage POST /api/house/seat': { auth: 'service' },
  'cage GET /api/gas-tank': { auth: 'jwt' },
  'cage POST /api/gas/deposit': { auth: 'jwt', fields: ['amountMicro', 'moneyKind'] },
  'cage POST /api/gas/withdraw': { auth: 'jwt', fields: ['amountMicro', 'moneyKind'] },
  'cage GET /api/tables': { auth: 'none', query: ['mode', 'status', 'moneyKind', 'after', 'limit'] },
  'cage GET /api/tables/:tableId': { auth: 'none' },
  'cage GET /api/economy': { auth: 'none' },
  'cage GET /api/demo': { auth: 'none' },
  'cage GET /api/house': { auth: 'none' },
  'cage GET /settlement/tables/:tableId': { auth: 'service' },
  'cage POST /internal/test/seed-chips': { auth: 'jwt', fields: ['amount', 'idempotencyKey'] },
  'cage POST /api/betting/markets': { auth: 'none', fields: ['tableId'] },
  'cage GET /api/betting/markets': { auth: 'none', query: ['tableId'] },
  'cage GET /api/betting/markets/:marketId': { auth: 'none' },
  'cage GET /api/betting/bets': { auth: 'jwt' },
  'cage POST /api/betting/stake': { auth: 'jwt', fields: ['marketId', 'runnerUserId', 'amount', 'idempotencyKey'] },
  'cage POST /api/betting/unbet': { auth: 'jwt', fields: ['stakeRef'] },
  'cage POST /api/betting/claim': { auth: 'jwt', fields: ['marketId'] },
  'cage POST /escape/:tableId': { auth: 'operator', fields: ['reason'] },
  'cage GET /admin/custody/holds': { auth: 'operator', query: ['status', 'tableId', 'userId', 'limit', 'before'] },
  'cage POST /admin/custody/reconcile': { auth: 'operator', fields: ['holdId', 'mode', 'split', 'reason'] },
  'cage POST /admin/custody/dispute': { auth: 'operator', fields: ['entryId', 'reason'] },
  'cage POST /admin/custody/release': { auth: 'service', fields: ['entryId', 'disputeId', 'signature'] },
  'cage GET /api/custody': { auth: 'jwt', query: ['limit', 'before'] },
  'cage POST /api/tournament/unregister': { auth: 'jwt', fields: ['tableId'] },
  // betting
  'betting GET /health': { auth: 'none' },
  'betting GET /openapi.json': { auth: 'none' },
  'betting GET /api/markets': { auth: 'none', query: ['tableId'] },
  'betting GET /api/markets/:marketId': { auth: 'none' },
  'betting POST /internal/bets': { auth: 'service', fields: ['stakeRef'] },
  'betting GET /internal/bets/:stakeRef': { auth: 'service' },
  'betting POST /internal/unbets': { auth: 'service', fields: ['stakeRef', 'sid'] },
  'betting POST /internal/claims': { auth: 'service', fields: ['marketId', 'sid'] },
  // chain-bank
  'chain-bank GET /health': { auth: 'none' },
  'chain-bank GET /openapi.json': { auth: 'none' },
  'chain-bank POST /api/tables': { auth: 'jwt', fields: ['tableId', 'gameType', 'settings'] },
  'chain-bank POST /api/deposit': { auth: 'jwt', fields: ['tableId', 'seatIndex', 'amount', 'permit', 'signerAddress'] },
  'chain-bank GET /api/deposits/:idempotencyKey': { auth: 'jwt' },
  'chain-bank POST /api/withdraw': { auth: 'jwt', fields: ['tableId', 'destinationWallet', 'forced', 'userId', 'payoutIntent'] },
  'chain-bank POST /api/tournament/unregister': { auth: 'jwt', fields: ['tableId'] },
  'chain-bank GET /api/economy': { auth: 'none' },
  'chain-bank GET /api/chain': { auth: 'none' },
  'chain-bank GET /api/chain/nonces/:address': { auth: 'none' },
  'chain-bank POST /internal/reconcile': { auth: 'service' },
  'chain-bank POST /api/operator/chain/deployment': { auth: 'operator', fields: ['chainId', 'token', 'vault', 'fromBlock'] },
  // admin
  'admin GET /health': { auth: 'none' },
  'admin GET /openapi.json': { auth: 'none' },
  'admin ALL /graphql': { auth: 'service', fields: ['query', 'variables', 'operationName', 'extensions'] },
  'admin GET /api/audit': { auth: 'operator', query: ['full'] },
  'admin GET /api/dealer-keys': { auth: 'operator' },
  'admin POST /api/dealer-keys': { auth: 'operator', fields: ['action', 'publicKey'] },
  // web (the client's files and the same-origin proxy)
  'web GET /health': { auth: 'none' },
  'web GET /api/web/config': { auth: 'none' },
  'web GET /openapi.json': { auth: 'none' },
  'web ALL /api/gw/:role/{*rest}': { auth: 'jwt', fields: ['sectionKey', 'tableId', 'seatIndex', 'amount', 'walletAddress', 'chainId', 'permit', 'signerAddress', 'address', 'message', 'signature'], query: ['mode', 'limit'] },
  'web GET /': { auth: 'none' },
  'web GET /app/:name': { auth: 'none' },
};

/** Paths the web role's proxy forwards (server/web/proxy.ts), for the fuzz to reach the roles behind it. */
const WEB_PROXIED = ['claim-board/claim', 'claim-board/state', 'api/tables', 'api/deposit', 'api/withdraw', 'api/wallets', 'api/cage/balances', 'api/auth/bridge', 'api/hands'];

let db: TestDatabase;
let m: Awaited<ReturnType<typeof startMoneyPlatform>>;
let player: Awaited<ReturnType<typeof m.player>>;
let tableId: string;
let operator: Record<string, string>;
const base = {} as Record<RoleName, string>;
const counts = { requests: 0, byStatus: new Map<number, number>() };

beforeAll(async () => {
  process.stdout.write(`fuzz-http: FUZZ_SEED=${FUZZ_SEED} FUZZ_RUNS=${FUZZ_RUNS}\n`);
  db = await createTestDatabase();
  m = await startMoneyPlatform(db, { alsoAdmin: true, alsoBetting: true, alsoChainBank: true, alsoWeb: true });
  for (const role of ['auth', 'game', 'cage', 'admin', 'betting', 'chain-bank', 'web'] as const) base[role] = m.platform.url(role);
  player = await m.player(1000);
  tableId = await m.table(player.auth);
  operator = (await m.operator()).auth;
});
afterAll(async () => {
  closeFuzzAgent();
  await m?.platform.stop();
  await db?.drop();
});

interface Mounted {
  role: RoleName;
  method: string;
  path: string;
  key: string;
}

function mounted(): Mounted[] {
  return (['auth', 'game', 'cage', 'admin', 'betting', 'chain-bank', 'web'] as const).flatMap((role) =>
    m.platform.role(role).routes!().map((r) => ({ role, ...r, key: `${role} ${r.method} ${r.path}` })),
  );
}

/** Plausible values per field name, so some requests get past the first check to the SQL behind. */
function plausible(field: string): unknown[] {
  const values: Record<string, unknown[]> = {
    tableId: [tableId, `t-${randomUUID().slice(0, 8)}`], userId: [player.userId, randomUUID()], recipient: [player.userId],
    amount: [40, '40', 1], seatIndex: [0, 1, 5], gameType: ['poker', 'arena'], moneyKind: ['play', 'real'],
    settings: [{ smallBlind: 1, bigBlind: 2, minBuyIn: 40, maxBuyIn: 200, maxPlayers: 6, rakePercent: 5, rakeCap: 10, rakeMinPot: 0, rakeRequiresFlop: true, turnTimeSec: 30, turnTimerEnabled: true }],
    idempotencyKey: [`k-${randomUUID()}`], externalRef: [`pay-${randomUUID()}`], claimId: [`c-${randomUUID()}`],
    environment: ['local', 'all', 'production'], key: ['daily_fuzz'], kind: ['daily', 'weekly', 'one_time'],
    email: ['nobody@example.com'], redirectTo: ['https://example.com/reset'], name: ['fuzz agent'],
    action: ['begin', 'finish'], handId: [`h-${randomUUID().slice(0, 8)}`], stacks: [{ 1: 40 }], query: ['{ __typename }', '{ allCageAccounts { totalCount } }'],
    walletAddress: ['0x0000000000000000000000000000000000000001'], chainId: [1, 8453], settlement: ['cash_out', 'custody', 'bust'],
    creditKey: [`ck-${randomUUID()}`], marketId: [`sng:${tableId}`, 'sng:x'], runnerUserId: [player.userId], stakeRef: [`bet-stake:${player.userId}:k`], sid: [randomUUID()], playerId: [1, '1'], ledgerRefId: [`r-${randomUUID()}`], conditionKey: ['agent_seated'],
    reason: ['fuzz'], mode: ['pro_rata', 'custom'], holdId: [1, '1'], entryId: [1, '1'], disputeId: [1, '1'], signature: ['00'.repeat(64)],
    split: [[{ userId: player.userId, amount: 1 }]], status: ['free', 'needs_reconciliation,disputed'], before: ['10'],
    permit: [{ v: 27, r: `0x${'11'.repeat(32)}`, s: `0x${'22'.repeat(32)}`, deadline: '9999999999' }], signerAddress: ['0x0000000000000000000000000000000000000001'],
    destinationWallet: ['0x0000000000000000000000000000000000000001'], forced: [true], payoutIntent: [{ position: 1, amount: 1 }],
  };
  return values[field] ?? [];
}

const ENCODINGS = ['json', 'json', 'json', 'json', 'malformed', 'deep', 'gzip_lie', 'gzip', 'text', 'empty', 'huge', 'scalar'] as const;
const AUTHS = ['none', 'jwt', 'jwt', 'service', 'service', 'operator', 'both', 'garbage_jwt', 'wrong_service', 'huge_header'] as const;

function requestsFor(route: Mounted, seed: number) {
  const hint = ROUTES[route.key]!;
  const params = route.path.match(/:[A-Za-z]+|\{\*[A-Za-z]+\}/g) ?? [];
  const methods = route.method === 'ALL' ? ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] : [route.method];
  const fields = [...(hint.fields ?? []), ...(hint.query ?? [])];
  const body = fc.oneof(
    fc.record(Object.fromEntries(fields.map((f) => [f, fieldValue(plausible(f), 3)])), { requiredKeys: [] }),
    hostileJson,
  );
  const query = fc.dictionary(fc.constantFrom(...(hint.query ?? []), 'x', 'limit', 'environment'), fc.oneof(hostileString, fc.constantFrom(...(hint.query ?? []).flatMap(plausible).map(String), '1')), { maxKeys: 3 });
  const arb = fc.record({
    method: fc.constantFrom(...methods),
    segments: fc.tuple(...params.map((p) => (p === ':role' ? fc.oneof(fc.constantFrom('auth', 'game', 'bank'), pathSegment([]))
      // the web proxy's paths, as written (slashes and all), so some calls pass the allowlist
      : p === '{*rest}' && route.role === 'web' ? fc.oneof(pathSegment(['a', 'a/b']), fc.constantFrom(...WEB_PROXIED))
        : pathSegment(p.startsWith('{') ? ['a', 'a/b'] : [tableId, player.userId, randomUUID(), 'daily_fuzz'])))),
    query: fc.oneof(fc.constant({}), query),
    repeatQuery: fc.boolean(),
    body,
    encoding: fc.constantFrom(...ENCODINGS),
    auth: fc.constantFrom(...AUTHS, hint.auth === 'jwt' ? 'jwt' : hint.auth === 'service' ? 'service' : hint.auth === 'operator' ? 'operator' : 'none'),
    contentType: fc.constantFrom('application/json', 'application/json; charset=utf-8', 'application/merge-patch+json', 'application/json; charset=latin1'),
    forwardedFor: fc.option(fc.constantFrom('1.2.3.4', 'garbage', '::1, 10.0.0.1'), { nil: undefined }),
    origin: fc.oneof(fc.constant(ISSUER), fc.constant(undefined), fc.constantFrom('https://evil.example', 'null', '%')),
  });
  return fc.sample(arb, { seed, numRuns: FUZZ_RUNS });
}

type Sample = ReturnType<typeof requestsFor>[number];

function toHttp(route: Mounted, s: Sample) {
  let i = 0;
  let path = route.path.replace(/:[A-Za-z]+|\{\*[A-Za-z]+\}/g, () => s.segments[i++]!);
  const pairs = Object.entries(s.query).map(([k, v]) => `${encodeLoose(k)}=${encodeLoose(String(v))}`);
  if (s.repeatQuery && pairs.length) pairs.push(pairs[0]!);
  if (pairs.length) path += `?${pairs.join('&')}`;
  const headers: Record<string, string> = {};
  if (s.auth === 'jwt' || s.auth === 'both') headers.authorization = `Bearer ${player.jwt}`;
  if (s.auth === 'operator') Object.assign(headers, operator);
  if (s.auth === 'service' || s.auth === 'both') headers['x-service-key'] = m.service['x-service-key'];
  if (s.auth === 'garbage_jwt') headers.authorization = 'Bearer a.b.c';
  if (s.auth === 'wrong_service') headers['x-service-key'] = 'x'.repeat(33);
  if (s.auth === 'huge_header') headers.authorization = `Bearer ${'x'.repeat(20_000)}`;
  if (s.forwardedFor) headers['x-forwarded-for'] = s.forwardedFor;
  if (s.origin) headers.origin = s.origin;
  if (s.method === 'GET' || s.method === 'DELETE') return { method: s.method, path, headers };
  const json = JSON.stringify(s.body) ?? 'null';
  const bodies: Record<(typeof ENCODINGS)[number], () => Buffer> = {
    json: () => Buffer.from(json),
    malformed: () => Buffer.from(json.slice(0, -1) || '{'),
    deep: () => Buffer.from(`${'['.repeat(5000)}${']'.repeat(5000)}`),
    gzip_lie: () => Buffer.from(json),
    gzip: () => gzipSync(json),
    text: () => Buffer.from(json),
    empty: () => Buffer.alloc(0),
    huge: () => Buffer.from(JSON.stringify({ pad: 'x'.repeat(70 * 1024) })),
    scalar: () => Buffer.from(typeof s.body === 'string' ? JSON.stringify(s.body) : '5'),
  };
  headers['content-type'] = s.encoding === 'text' ? 'text/plain' : s.contentType;
  if (s.encoding === 'gzip' || s.encoding === 'gzip_lie') headers['content-encoding'] = 'gzip';
  return { method: s.method, path, headers, body: bodies[s.encoding]() };
}

test('the fuzz knows every route the roles mount', () => {
  const routes = mounted();
  process.stdout.write(`fuzz-http: ${routes.length} mounted routes\n`);
  expect(routes.length).toBeGreaterThan(50);
  expect(routes.filter((r) => !(r.key in ROUTES)).map((r) => r.key)).toEqual([]);
});

test('hostile requests on every mounted route: no 500, no uncoded 5xx, every error coded, no stack', async () => {
  const started = performance.now();
  const routes = mounted().filter((r) => r.key in ROUTES);
  const jobs = routes.flatMap((route, index) => requestsFor(route, FUZZ_SEED + index).map((sample) => ({ route, sample })));
  const breaches: string[] = [];
  await inPool(jobs, 4, async ({ route, sample }) => {
    const request = toHttp(route, sample);
    const answer = await rawRequest(base[route.role], request);
    counts.requests++;
    counts.byStatus.set(answer.status, (counts.byStatus.get(answer.status) ?? 0) + 1);
    const breach = contractBreach(answer, { graphql: route.path === '/graphql' });
    if (breach) {
      breaches.push(`${route.key}: ${breach} <- ${request.method} ${request.path.slice(0, 160)} ${JSON.stringify(request.headers)} ${request.body?.toString('utf8').slice(0, 300) ?? ''} -> ${answer.text.slice(0, 200)}`);
    }
  });
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  process.stdout.write(`fuzz-http: ${counts.requests} requests on ${routes.length} routes in ${seconds} s; statuses ${JSON.stringify(Object.fromEntries([...counts.byStatus].sort((a, b) => a[0] - b[0])))}\n`);
  expect(breaches.slice(0, 25)).toEqual([]);
});

test('SIWE links after a real nonce, with hostile message fields: coded refusals', async () => {
  const wallet = '0x00000000000000000000000000000000000000aa';
  const headers = { ...player.auth, origin: ISSUER, 'content-type': 'application/json' };
  const field = (plausibleValue: string) => fc.oneof({ weight: 2, arbitrary: fc.constant(plausibleValue) }, { weight: 1, arbitrary: fc.constantFrom(
    '', 'not a url', 'http://[', 'javascript:alert(1)', 'x'.repeat(3000), '0000-01-01T00:00:00Z', 'not a date', '99999999999999999999', '-1', '\u202e') });
  const samples = fc.sample(fc.record({
    domain: field('auth.poker.test'), uri: field('https://auth.poker.test/login'), version: field('1'), chainId: field('1'),
    issuedAt: field(new Date().toISOString()), expiration: fc.option(field(new Date(Date.now() + 60_000).toISOString()), { nil: undefined }),
    keepNonce: fc.boolean(), signature: fc.constantFrom(`0x${'ab'.repeat(65)}`, '0x00', `0x${'00'.repeat(65)}`),
  }), { seed: FUZZ_SEED, numRuns: FUZZ_RUNS });
  const breaches: string[] = [];
  let issued = 0;
  for (const s of samples) {
    const nonceAnswer = await rawRequest(base.auth, { method: 'POST', path: '/api/auth/siwe/nonce', headers, body: Buffer.from(JSON.stringify({ walletAddress: wallet, chainId: 1 })) });
    counts.requests++;
    const nonce = nonceAnswer.status === 200 ? (JSON.parse(nonceAnswer.text) as { nonce: string }).nonce : 'none';
    if (nonceAnswer.status === 200) issued++;
    const message = [
      `${s.domain} wants you to sign in with your Ethereum account:`, wallet, '', 'Link this wallet.', '',
      `URI: ${s.uri}`, `Version: ${s.version}`, `Chain ID: ${s.chainId}`, `Nonce: ${s.keepNonce ? nonce : 'abcdef0123456789'}`, `Issued At: ${s.issuedAt}`,
      ...(s.expiration ? [`Expiration Time: ${s.expiration}`] : []),
    ].join('\n');
    const answer = await rawRequest(base.auth, {
      method: 'POST', path: '/api/link-wallet', headers, body: Buffer.from(JSON.stringify({ message, signature: s.signature, walletAddress: wallet, chainId: 1 })),
    });
    counts.requests++;
    const breach = contractBreach(nonceAnswer) ?? contractBreach(answer);
    if (breach) breaches.push(`${breach} <- ${message.replace(/\n/g, ' | ').slice(0, 300)} -> ${answer.text.slice(0, 200)}`);
    if (answer.status === 200) breaches.push(`linked with a forged signature: ${message.slice(0, 200)}`);
  }
  expect(issued).toBe(samples.length); // every link attempt had a real nonce to consume
  expect(breaches.slice(0, 25)).toEqual([]);
});

test('paths no role mounts, in every spelling, are coded answers too', async () => {
  const paths = fc.sample(fc.array(pathSegment(['api', 'internal', 'admin', 'ws', 'graphql']), { minLength: 1, maxLength: 4 }), { seed: FUZZ_SEED, numRuns: FUZZ_RUNS * 2 });
  const breaches: string[] = [];
  for (const role of Object.keys(base) as RoleName[]) {
    await inPool(paths, 4, async (segments) => {
      const path = `/${segments.join('/')}`;
      const answer = await rawRequest(base[role], { method: 'POST', path, headers: { 'content-type': 'application/json' }, body: Buffer.from('{}') });
      counts.requests++;
      const breach = contractBreach(answer, { graphql: role === 'admin' });
      if (breach) breaches.push(`${role} ${path.slice(0, 120)}: ${breach}`);
    });
  }
  expect(breaches.slice(0, 25)).toEqual([]);
});

test('every role is alive and the books are clean after all of it', async () => {
  for (const role of Object.keys(base) as RoleName[]) {
    const health = await rawRequest(base[role], { method: 'GET', path: '/health', headers: {} });
    expect({ role, status: health.status }).toEqual({ role, status: 200 });
  }
  process.stdout.write(`fuzz-http: ${counts.requests} requests in all\n`);
  await expectCleanAudit(db.owner);
});
