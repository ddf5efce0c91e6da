// A request is one trace across the roles. The platform runs as a child process with its tracing
// hook (`--import ./server/telemetry/register.ts`, as `npm start` runs it: auto-instrumentation does
// not load inside jest's module system) and exports to a stand-in OTLP collector here. A deposit's
// trace holds the cage's route, its one SQL call (the buy-in and the seat in one transaction, issue
// 33: no call to the game) and the spec's `admin.deposit` span; a withdrawal's holds the cage's
// route, its call to the game role, the game's route and SQL, and the cage's settlement SQL.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomUUID } from 'node:crypto';
import { bridgedUser } from '../helpers/auth.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { call, POKER_SETTINGS } from '../helpers/money.ts';
import { signInOperator } from '../helpers/operator.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SECRET = 'trace-test-secret-0123456789abcdefghij';
const ISSUER = 'https://auth.trace.test';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: Record<string, unknown> }[];
}

let db: TestDatabase;
let collector: Server;
let child: ChildProcess | undefined;
const spans: OtlpSpan[] = [];

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => resolve(data));
  });
}

beforeAll(async () => {
  db = await createTestDatabase();
  collector = createServer(async (req, res) => {
    const body = await readBody(req);
    if (req.url === '/v1/traces') {
      const parsed = JSON.parse(body) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] };
      for (const rs of parsed.resourceSpans ?? []) for (const ss of rs.scopeSpans ?? []) spans.push(...(ss.spans ?? []));
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  await new Promise<void>((r) => collector.listen(0, '127.0.0.1', r));
});
afterAll(async () => {
  if (child && child.exitCode === null) {
    child.kill('SIGTERM');
    await new Promise((r) => child!.once('exit', r));
  }
  await new Promise((r) => collector.close(r));
  await db?.drop();
});

/** Starts the platform (auth, game, cage) with its tracing hook; resolves with the roles' URLs. */
function startPlatformProcess(): Promise<Record<string, string>> {
  const collectorUrl = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
  child = spawn(process.execPath, ['--import', './server/telemetry/register.ts', 'server/main.ts', '--role', 'auth,game,cage'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin', NODE_ENV: 'test', LOG_LEVEL: 'warn', DATABASE_URL: db.url,
      PORT: '0', GAME_PORT: '0', CAGE_PORT: '0', SERVICE_KEY: 'trace-service-key-0123456789', AUTH_SECRET: SECRET,
      AUTH_BASE_URL: ISSUER, OTEL_EXPORTER_OTLP_ENDPOINT: collectorUrl, OTEL_SERVICE_NAME: 'poker-trace-test',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child!.stderr!.on('data', (d) => (err += d));
    child!.stdout!.on('data', (d) => {
      out += d;
      const urls = Object.fromEntries([...out.matchAll(/^(auth|game|cage)\s+(http:\/\/\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
      if (urls.auth && urls.game && urls.cage) resolve(urls);
    });
    child!.once('exit', (code) => reject(new Error(`the platform exited (${code}): ${err}`)));
  });
}

const attr = (s: OtlpSpan) => Object.fromEntries((s.attributes ?? []).map((a) => [a.key, Object.values(a.value)[0]]));
const mentions = (s: OtlpSpan, text: string) => s.name.includes(text) || Object.values(attr(s)).some((v) => typeof v === 'string' && v.includes(text));

test("a deposit is one trace (the cage's route and SQL, admin.deposit); a withdrawal one across the roles (the cage's call to the game, the game's route and SQL)", async () => {
  const urls = await startPlatformProcess();
  const operator = await signInOperator(db.owner, urls.auth!);
  const player = await bridgedUser(db, { issuer: ISSUER });
  const auth = { authorization: `Bearer ${player.jwt}` };
  expect((await call(`${urls.cage}/api/operator/purchase`, { headers: operator.auth, body: { userId: player.userId, amount: 500, externalRef: `pay-${randomUUID()}`, moneyKind: 'play' } })).status).toBe(200);
  const tableId = `trace-${randomUUID().slice(0, 8)}`;
  expect((await call(`${urls.cage}/api/tables`, { headers: auth, body: { tableId, gameType: 'poker', settings: POKER_SETTINGS } })).status).toBe(200);
  const deposit = await call(`${urls.cage}/api/deposit`, { headers: { ...auth, 'idempotency-key': 'trace-1' }, body: { tableId, seatIndex: 0, amount: 100 } });
  expect(deposit.body).toMatchObject({ status: 'confirmed' });
  const withdraw = await call(`${urls.cage}/api/withdraw`, { headers: auth, body: { tableId } });
  expect(withdraw.status).toBe(200);

  // the batch exporter flushes every 100 ms here; a request's own server span ends last, so each
  // trace is read until every part of it has arrived
  const sqlOf = (trace: OtlpSpan[]) => trace.filter((s) => attr(s)['db.system'] === 'postgresql' || attr(s)['db.system.name'] === 'postgresql');
  const traceOf = (route: string) => {
    const root = spans.find((s) => s.kind === 2 && mentions(s, route));
    return root ? spans.filter((s) => s.traceId === root.traceId) : [];
  };
  const depositParts = (trace: OtlpSpan[]) => ({
    cageRoute: trace.some((s) => s.kind === 2 && mentions(s, '/api/deposit')),
    cageSql: sqlOf(trace).some((s) => mentions(s, 'deposit_to_seat')),
    specSpan: trace.some((s) => s.name === 'admin.deposit'),
  });
  const withdrawParts = (trace: OtlpSpan[]) => ({
    cageRoute: trace.some((s) => s.kind === 2 && mentions(s, '/api/withdraw')),
    cageCallsGame: trace.some((s) => s.kind === 3 && mentions(s, '/internal/stand-up')),
    gameRoute: trace.some((s) => s.kind === 2 && mentions(s, '/internal/stand-up')),
    gameSql: sqlOf(trace).some((s) => mentions(s, 'stand_up')),
    cageSql: sqlOf(trace).some((s) => mentions(s, 'settle_position')),
  });
  let trace: OtlpSpan[] = [];
  for (let i = 0; i < 100; i++) {
    trace = [...traceOf('/api/deposit'), ...traceOf('/api/withdraw')];
    if (Object.values(depositParts(trace)).every(Boolean) && Object.values(withdrawParts(trace)).every(Boolean)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  expect(depositParts(traceOf('/api/deposit'))).toEqual({ cageRoute: true, cageSql: true, specSpan: true });
  expect(withdrawParts(traceOf('/api/withdraw'))).toEqual({ cageRoute: true, cageCallsGame: true, gameRoute: true, gameSql: true, cageSql: true });
  // the sit called no other role: its only client spans are its SQL
  const deposited = traceOf('/api/deposit');
  expect(deposited.filter((s) => s.kind === 3)).toEqual(sqlOf(deposited));
  const sql = sqlOf(trace);
  // and no statement's values: parameters are not recorded
  expect(sql.every((s) => !Object.keys(attr(s)).some((k) => k.includes('values') || k.includes('parameters')))).toBe(true);
  // a statement outside any trace (the start's, the lease's, a live table's hand boundaries) makes no
  // span: a trace of one statement would tell nothing, and its instrumentation costs the game role
  const rootSql = sqlOf(spans).filter((s) => !s.parentSpanId).map((s) => s.name);
  expect(rootSql).toEqual([]);
}, 60_000);
