// One intent model (issue 32), seen from outside: a tournament payout whose bank does not answer
// (the cage stopped) is stuck, and an operator sees it, with since when and why, in the admin
// GraphQL (allIntents over cage.intents) and in `npm run ops -- intents` run as a real child process;
// before issue 32 nothing but a log line every 30 s said so. The view covers every intent table, each
// table's status words in the one vocabulary, and shows no row without a live admin session.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { hashPassword } from '../../server/auth/passwords.ts';
import { expectCleanAudit, fund, userAccount } from '../helpers/cage.ts';
import { createTestDatabase, playerGrant, type TestDatabase } from '../helpers/db.ts';
import { AUTH_SECRET, ISSUER } from '../helpers/money.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { freePort } from '../helpers/ports.ts';
import { markHandsAudited } from '../helpers/tournament.ts';
import { resolveSngSettings } from '../../server/tournaments/settings.ts';

let db: TestDatabase;
let platform: TestPlatform | undefined;
let cage: pg.Pool;
let deadCage: string;
const email = `intents-${randomUUID().slice(0, 8)}@example.com`;
const password = `intents-password-${randomUUID()}`;
let operator: string;

beforeAll(async () => {
  db = await createTestDatabase();
  cage = db.pool('poker_cage');
  // the cage the worker pays payouts through is stopped: nothing listens on its port
  deadCage = `http://127.0.0.1:${await freePort()}`;
  platform = await startTestPlatform({
    databaseUrl: db.url, roles: ['auth', 'admin', 'worker'],
    env: { AUTH_SECRET, AUTH_BASE_URL: ISSUER, ENABLE_TEST_AUTH: 'true', CAGE_URL: deadCage, GAME_CALL_TIMEOUT_MS: '300' },
  });
  await db.owner.query('select auth.create_admin($1, $2)', [email, await hashPassword(password)]);
  operator = await signIn();
});
afterAll(async () => {
  await platform?.stop();
  await db?.drop();
});

async function signIn(): Promise<string> {
  const auth = platform!.url('auth');
  const session = await (await fetch(`${auth}/api/auth/sign-in/email`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }) })).json() as { token: string };
  const token = await (await fetch(`${auth}/api/auth/token`, { headers: { authorization: `Bearer ${session.token}` } })).json() as { token: string };
  return token.token;
}

async function graphql(query: string, variables: Record<string, unknown>, token: string | null = operator) {
  const res = await fetch(`${platform!.url('admin')}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ query, variables }),
  });
  return (await res.json()) as { data?: Record<string, any>; errors?: { message: string }[] };
}

function ops(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  const env: Record<string, string> = {
    PATH: process.env.PATH!, NODE_ENV: 'test', LOG_LEVEL: 'silent', HOST: '127.0.0.1',
    AUTH_URL: platform!.url('auth'), ADMIN_PORT: new URL(platform!.url('admin')).port, CAGE_URL: deadCage,
    OPS_EMAIL: email, OPS_PASSWORD: password,
  };
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--no-warnings=ExperimentalWarning', 'server/cli/ops.ts', ...args], { env, cwd: process.cwd() });
    let out = '';
    let err = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (err += c));
    child.on('close', (code) => resolve({ code, out, err }));
    child.stdin.end('');
  });
}

async function until<T>(read: () => Promise<T>, done: (v: T) => boolean, what: string, seconds = 30): Promise<T> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const BLINDS = { startingSmallBlind: 10, increaseFactor: 2, levelDurationSeconds: 60, anteStartLevel: null, startingAnte: 0, anteIncreaseFactor: 1 };

/** A two-seat Sit-and-Go played to its end and settled: its payouts queued for the worker (to the cage). */
async function settledTournament(): Promise<string> {
  const tableId = `intents-${randomUUID().slice(0, 8)}`;
  const settings = resolveSngSettings({ mode: 'sng', seats: 2, entryFee: 100, rakeFee: 10, startingStack: 1000, blindStructure: BLINDS });
  await db.owner.query("select game.create_table($1, 'poker', $2, 'play', null, null, null, 'sng', 'open')", [tableId, JSON.stringify(settings)]);
  for (let i = 0; i < 2; i++) {
    const u = await userAccount(db.owner);
    await fund(db.owner, u.id, 1000n);
    await cage.query('select * from cage.open_tournament_entry($1, $2, $3, null, $4, 120)', [await playerGrant(cage, u.userId), `k-${randomUUID()}`, tableId, 100]);
  }
  await db.owner.query("update game.tables set starts_at = now() - interval '1 s' where table_id = $1", [tableId]);
  await db.owner.query('select game.tournament_begin_play($1)', [tableId]);
  await db.owner.query('select game.tournament_force_end($1)', [tableId]);
  await markHandsAudited(db.owner, tableId);
  await db.owner.query('select cage.settle_tournament($1)', [tableId]);
  return tableId;
}

const INTENTS = `query ($condition: IntentCondition) { allIntents(condition: $condition) { nodes {
  kind intentKey status rawStatus amount tableId nextStep open deadline attempts lastAttemptAt nextAttemptAt stuckSince stuckReason } } }`;

test('a payout its bank does not take is stuck: the admin GraphQL and `ops intents` show since when and why; paid, it is no longer open', async () => {
  const tableId = await settledTournament();
  const { rows: payouts } = await db.owner.query('select position, amount from cage.payout_intents where table_id = $1 order by position', [tableId]);
  expect(payouts.length).toBeGreaterThan(0);
  // the worker's first attempt (the payout job) reaches no cage: recorded on the intent
  const stuck = await until(
    async () => {
      const r = await graphql(INTENTS, { condition: { kind: 'cage_payout', tableId } });
      expect(r.errors).toBeUndefined();
      return r.data!.allIntents.nodes as Record<string, any>[];
    },
    (nodes) => !!nodes && nodes.length === payouts.length && nodes.every((n) => n.stuckSince !== null),
    'the payouts to show stuck',
  );
  for (const n of stuck) {
    expect(n).toMatchObject({
      kind: 'cage_payout', intentKey: expect.stringMatching(new RegExp(`^${tableId}:\\d+$`)), tableId, open: true,
      status: expect.stringMatching(/^(pending|submitted|failed)$/), nextStep: expect.stringContaining('through its bank (cage)'),
      attempts: expect.any(Number), lastAttemptAt: expect.any(String), stuckSince: expect.any(String),
      // why, as the socket said it (never the address: server/http/service-client.ts failureOf)
      stuckReason: expect.stringMatching(/^the cage did not answer \((ECONNREFUSED|ECONNRESET|TimeoutError)\)/),
    });
    expect(n.attempts).toBeGreaterThanOrEqual(1);
    expect(Date.parse(n.stuckSince)).toBeLessThanOrEqual(Date.parse(n.lastAttemptAt));
  }

  const listed = await ops(['intents', '--kind', 'cage_payout', '--stuck']);
  expect(listed).toMatchObject({ code: 0, err: '' });
  for (const n of stuck) {
    expect(listed.out).toContain(`cage_payout  ${n.intentKey}  `);
  }
  expect(listed.out).toMatch(/STUCK since \S+: the cage did not answer/);
  const json = await ops(['intents', '--kind', 'cage_payout', '--json']);
  expect(JSON.parse(json.out).filter((n: { tableId: string }) => n.tableId === tableId).map((n: { stuckReason: string }) => n.stuckReason))
    .toEqual(stuck.map(() => expect.stringMatching(/^the cage did not answer/)));

  // the same view, no operator session: no row is read (the anonymous role is refused the view)
  const anonymous = await graphql(INTENTS, { condition: { kind: 'cage_payout' } }, null);
  expect(anonymous.data?.allIntents?.nodes ?? []).toEqual([]);
  expect(JSON.stringify(anonymous)).not.toContain(tableId);

  // paid (as the cage pays it): the intent is done, nothing stuck about it any more
  for (const p of payouts) await cage.query('select * from cage.pay_tournament_payout($1, $2, $3)', [tableId, p.position, p.amount]);
  const done = (await graphql(INTENTS, { condition: { kind: 'cage_payout', tableId } })).data!.allIntents.nodes as Record<string, any>[];
  expect(done.map((n) => [n.status, n.open, n.nextStep, n.stuckSince, n.stuckReason])).toEqual(payouts.map(() => ['confirmed', false, null, null, null]));
  expect((await ops(['intents', '--kind', 'cage_payout', '--stuck'])).out).not.toContain(tableId);
  await expectCleanAudit(cage);
}, 90_000);

/** The tables that hold intents, and the view's reading of each. */
const INTENT_TABLES: Record<string, string> = {
  'cage.deposit_intents': 'cage_deposit', 'cage.withdraw_intents': 'cage_withdrawal', 'cage.payout_intents': 'cage_payout',
  'cage.gas_withdrawals': 'gas_withdrawal', 'cage.bet_stakes': 'bet_stake', 'bank.deposit_intents': 'chain_deposit',
  'bank.withdraw_intents': 'chain_withdrawal', 'bank.tournament_payments': 'chain_tournament_payment', 'bank.vault_refunds': 'vault_refund',
  'claims.claim_intents': 'claim',
};

test('every intent table is read by the view, and each of its status words is one of the vocabulary', async () => {
  const { rows: used } = await db.owner.query<{ t: string }>(
    "select table_schema || '.' || table_name as t from information_schema.view_table_usage where view_schema = 'cage_private' and view_name = 'intent_rows'",
  );
  expect(used.map((r) => r.t).filter((t) => t !== 'game.tables').sort()).toEqual(Object.keys(INTENT_TABLES).sort());
  // every table of the money schemas named like an intent table is one of them
  const { rows: named } = await db.owner.query<{ t: string }>(`
    select n.nspname || '.' || c.relname as t from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where c.relkind = 'r' and n.nspname in ('cage', 'bank', 'claims', 'betting') and c.relname ~ '(intent|payout_intents|withdrawals|stakes|payments|refunds)'`);
  expect(named.map((r) => r.t).filter((t) => !(t in INTENT_TABLES) && t !== 'cage.intent_attempts')).toEqual([]);
  // the status words each table's checks allow, and the derived ones of the tables that keep none
  const { rows: checks } = await db.owner.query<{ t: string; def: string }>(`
    select n.nspname || '.' || c.relname as t, pg_get_constraintdef(k.oid) as def
      from pg_constraint k join pg_class c on c.oid = k.conrelid join pg_namespace n on n.oid = c.relnamespace
     where k.contype = 'c' and pg_get_constraintdef(k.oid) ~ '^CHECK \\(\\(status = ANY'`);
  const words = new Map<string, string[]>([['cage_withdrawal', ['unsettled', 'settled']], ['cage_payout', ['pending', 'submitted', 'confirmed', 'failed']]]);
  for (const c of checks) {
    if (!(c.t in INTENT_TABLES)) continue;
    words.set(INTENT_TABLES[c.t]!, [...c.def.matchAll(/'([a-z_]+)'::text/g)].map((m) => m[1]!));
  }
  expect([...words.keys()].sort()).toEqual(Object.values(INTENT_TABLES).sort());
  const { rows: [{ vocabulary }] } = await db.owner.query('select cage.intent_statuses() as vocabulary');
  expect(vocabulary).toEqual(['pending', 'submitted', 'confirmed', 'failed', 'compensated']);
  for (const [kind, raws] of words) {
    for (const raw of raws) {
      const { rows: [{ status }] } = await db.owner.query('select cage.intent_status($1, $2) as status', [kind, raw]);
      expect({ kind, raw, status }).toEqual({ kind, raw, status: expect.any(String) });
      expect(vocabulary).toContain(status);
    }
  }
  // the spec's words for deposit intents are kept as they are
  for (const kind of ['cage_deposit', 'chain_deposit']) {
    for (const raw of ['pending', 'submitted', 'confirmed', 'failed']) {
      expect((await db.owner.query('select cage.intent_status($1, $2) as s', [kind, raw])).rows[0].s).toBe(raw);
    }
  }
});

test('a step\'s outcome is recorded only for an existing intent, and its back-off is bounded', async () => {
  const worker = db.pool('poker_worker', 1);
  await expect(worker.query("select * from cage.record_intent_attempt('cage_payout', 'no-such-table:1', 'forged')")).rejects.toMatchObject({ message: 'intent_not_found' });
  const tableId = await settledTournament();
  const key = `${tableId}:1`;
  let last: Record<string, any> = {};
  for (let i = 0; i < 25; i++) last = (await worker.query("select * from cage.record_intent_attempt('cage_payout', $1, 'still failing')", [key])).rows[0];
  expect(last.next_attempt_at.getTime() - Date.now()).toBeLessThanOrEqual(300_000);
  const stuckSince = last.stuck_since;
  const ok = (await worker.query("select * from cage.record_intent_attempt('cage_payout', $1, null)", [key])).rows[0];
  expect(ok).toMatchObject({ stuck_since: null, next_attempt_at: null });
  expect(stuckSince).toBeInstanceOf(Date);
  const { rows: [p] } = await db.owner.query('select position, amount from cage.payout_intents where table_id = $1 and position = 1', [tableId]);
  await cage.query('select * from cage.pay_tournament_payout($1, $2, $3)', [tableId, p.position, p.amount]);
  await worker.end();
});
