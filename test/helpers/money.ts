// The cash loop from a client's side: a platform with the auth, game and cage roles on a test
// database, players holding real access JWTs (signed by the running auth role's keys), chips bought
// through the operator route, tables created over HTTP, and JSON calls with their status.
import { randomUUID } from 'node:crypto';
import { bridgedUser } from './auth.ts';
import type { TestDatabase } from './db.ts';
import { signInOperator } from './operator.ts';
import { startTestPlatform, TEST_SERVICE_KEY, type TestPlatform } from './platform.ts';
import type { Logger } from 'pino';

export const AUTH_SECRET = 'cash-loop-test-secret-0123456789abcdef';
export const ISSUER = 'https://auth.poker.test';

export const POKER_SETTINGS = {
  smallBlind: 1, bigBlind: 2, minBuyIn: 40, maxBuyIn: 200, maxPlayers: 6, rakePercent: 5, rakeCap: 10,
  rakeMinPot: 0, rakeRequiresFlop: true, turnTimeSec: 30, turnTimerEnabled: true,
};

export interface Answer<T = Record<string, unknown>> {
  status: number;
  body: T;
}

export async function call<T = any>(url: string, init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}): Promise<Answer<T>> {
  const res = await fetch(url, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: { ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

export async function startMoneyPlatform(
  db: TestDatabase,
  options: { env?: Record<string, string | undefined>; log?: Logger; alsoAdmin?: boolean; alsoWorker?: boolean; alsoBetting?: boolean; alsoChainBank?: boolean; alsoWeb?: boolean } = {},
) {
  const platform = await startTestPlatform({
    databaseUrl: db.url,
    roles: ['auth', 'game', 'cage', ...(options.alsoAdmin ? (['admin'] as const) : []), ...(options.alsoWorker ? (['worker'] as const) : []), ...(options.alsoBetting ? (['betting'] as const) : []), ...(options.alsoChainBank ? (['chain-bank'] as const) : []), ...(options.alsoWeb ? (['web'] as const) : [])],
    env: { AUTH_SECRET, AUTH_BASE_URL: ISSUER, ENABLE_TEST_AUTH: 'true', ...options.env },
    log: options.log,
  });
  return moneyClient(db, platform);
}

/** An operator (admin) signed in on this platform's auth role (helpers/operator.ts). */
export const operatorAuth = (db: TestDatabase, authUrl: string) => signInOperator(db.owner, authUrl);

const withKey = (body: Record<string, unknown>, headers: Record<string, string>) =>
  body.idempotencyKey !== undefined || body.permit !== undefined || Object.keys(headers).some((h) => h.toLowerCase() === 'idempotency-key');

export function moneyClient(db: TestDatabase, platform: TestPlatform) {
  const cage = platform.url('cage');
  const service = { 'x-service-key': TEST_SERVICE_KEY };
  let operator: Promise<{ adminId: string; auth: Record<string, string> }> | undefined;
  const client = {
    platform,
    db,
    cage,
    game: platform.url('game'),
    service,
    /** The operator's credential (made once per client). */
    operator: () => (operator ??= operatorAuth(db, platform.url('auth'))),
    async player(chips = 0) {
      const { userId, jwt } = await bridgedUser(db, { issuer: ISSUER });
      const auth = { authorization: `Bearer ${jwt}` };
      if (chips > 0) await client.buy(userId, chips);
      return { userId, jwt, auth };
    },
    async buy(userId: string, amount: number, moneyKind: 'play' | 'real' = 'play') {
      const { auth } = await client.operator();
      const r = await call(`${cage}/api/operator/purchase`, { headers: auth, body: { userId, amount, externalRef: `pay-${randomUUID()}`, moneyKind } });
      if (r.status !== 200) throw new Error(`purchase failed: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body;
    },
    async table(auth: Record<string, string>, settings: Record<string, unknown> = POKER_SETTINGS, extra: Record<string, unknown> = {}) {
      const tableId = `t-${randomUUID().slice(0, 12)}`;
      const r = await call(`${cage}/api/tables`, { headers: auth, body: { tableId, gameType: 'poker', settings, ...extra } });
      if (r.status !== 200) throw new Error(`table failed: ${r.status} ${JSON.stringify(r.body)}`);
      return tableId;
    },
    /** A deposit; a fresh idempotency key is sent unless the body or the headers carry one (a new buy-in each call). */
    deposit: (auth: Record<string, string>, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
      call(`${cage}/api/deposit`, {
        headers: { ...auth, ...(withKey(body, headers) ? {} : { 'idempotency-key': randomUUID() }), ...headers }, body,
      }),
    withdraw: (auth: Record<string, string>, body: Record<string, unknown>) => call(`${cage}/api/withdraw`, { headers: auth, body }),
    async balance(auth: Record<string, string>, kind: 'play' | 'real' = 'play') {
      const r = await call<{ balances: Record<string, number> }>(`${cage}/api/cage/balances`, { headers: auth });
      return r.body.balances[kind]!;
    },
    room: (tableId: string) => call(`${platform.url('game')}/api/tables/${tableId}`),
    hand: (body: Record<string, unknown>) => call(`${platform.url('game')}/internal/test/hand`, { headers: service, body }),
  };
  return client;
}
