// The claims benchmark: credited claims per second over HTTP against the running auth, game and
// cage roles (in this process, on ephemeral ports), against a bare authenticated route of the same
// game server in the same run:
//   claim@N  N clients, each looping POST {game}/claim-board/claim { sectionKey: 'weekly_baseline' }
//            for a fresh user every time (a user with a linked Solana wallet who has not claimed
//            this week's baseline); a unit is a credited claim (200);
//   bare@N   N clients looping GET {game}/api/agents with a user's JWT: the same middleware stack,
//            JWT verification and one trivial indexed query.
// Their ratio is the price of the claim itself: since issue 33 one SQL transaction
// (claims.credit_claim: the claim judged, the recipient wallet read, the cage's grant movement, the
// ledger row, the claim intent written closed), no call between roles. The
// composition of one claim and one bare request is measured (not assumed) on a probe before the
// rounds. Client and roles share this one process and event loop. Rounds are interleaved and
// medians quoted, as everywhere in bench/. Any answer other than 200 is a bug, not noise: failures
// are counted and printed and make the exit code 1, as does a claim ledger whose rows are not the
// credited claims, a user whose play balance is not 500 x their credited claims, or a cage audit
// that is not empty.
import { randomBytes, randomUUID } from 'node:crypto';
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { base58 } from '@scure/base';
import type pg from 'pg';
import { createKeyStore, type KeyStore } from '../server/auth/keys.ts';
import { benchJwtKey } from './lib/keys.ts';
import { audit } from '../server/cage/ledger.ts';
import { signInOperator } from '../test/helpers/operator.ts';
import { migrate } from '../server/db/migrate.ts';
import { createOwnerPool, createRolePool } from '../server/db/pools.ts';
import type { Platform } from '../server/platform.ts';
import {
  benchDatabase, fmtRate, fmtRatio, median, flagsOrUsage, table, timed,
} from './lib/harness.ts';
import {
  call, databaseLine, describeAnswer as describe, errorCode as code, Failures, interleavedRounds, probe, startRoles,
  type Case, type Composition,
} from './lib/platform.ts';

const USAGE = `usage: npm run bench -- claims [--seconds N] [--rounds N] [--clients N]
  --seconds  measured seconds per case per round (default 3)
  --rounds   interleaved rounds; medians are taken over them (default 3)
  --clients  concurrent HTTP clients in both cases (default 8)
  DATABASE_URL set: benchmark that database (it is migrated; the users, wallets, claims and grants
  stay; the board setting is put back); otherwise an embedded, durable PostgreSQL in a temp dir is
  started and deleted.`;

const SECRET = 'bench-claims-auth-secret-0123456789abcdef';
const ISSUER = 'https://auth.bench.local';
const SERVICE_KEY = 'bench-service-key-0123456789abcdef';
const SECTION = 'weekly_baseline';
const BASELINE = 500; // the seeded weekly baseline's amount (db/migrations/000004_claim_board.sql)
const BARE_USERS = 256; // the bare case cycles through these; they never claim
const WARM_UP_USERS = 1000; // fresh users for the 1 s warm-up
/** Fresh users before a measured round: the fastest claim rate seen x seconds x this, plus clients. */
const HEADROOM = 3;
const BATCH = 1000; // users created per transaction

const log = (msg: string) => console.log(msg);

interface User {
  userId: string;
  auth: Record<string, string>;
}

class OutOfUsers extends Error {}

/**
 * `n` users as test/helpers/auth.ts bridgedUser makes them (an invite, a bridge sign-in), each with
 * a random Solana wallet linked through auth.link_wallet and an access JWT good for a day (long runs
 * must not see their tokens expire). One transaction per batch, as the database owner.
 */
async function createUsers(owner: pg.Pool, keys: KeyStore, n: number): Promise<User[]> {
  const users: User[] = [];
  for (let done = 0; done < n; done += BATCH) {
    const size = Math.min(BATCH, n - done);
    const ids: string[] = [];
    const client = await owner.connect();
    try {
      await client.query('begin');
      const invite = `inv_${randomBytes(12).toString('hex')}`;
      await client.query('select auth.mint_invite($1, $2)', [invite, size]);
      for (let i = 0; i < size; i++) {
        const { rows } = await client.query<{ user_id: string }>(
          "select user_id from auth.bridge_sign_in('oidc', $1, null, $2)", [randomUUID(), invite],
        );
        const userId = rows[0]!.user_id;
        await client.query("select * from auth.link_wallet($1, $2, 'solana', 0)", [userId, base58.encode(randomBytes(32))]);
        ids.push(userId);
      }
      await client.query('commit');
    } catch (err) {
      await client.query('rollback').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
    for (const userId of ids) {
      const jwt = await keys.sign({ sub: userId, walletAddress: null }, { ttlSeconds: 86_400 });
      users.push({ userId, auth: { authorization: `Bearer ${jwt}` } });
    }
  }
  return users;
}

/** Turns the claim board on (the settings are an operator's); answers whether it was on before. */
async function boardOn(game: string, operatorAuth: Record<string, string>): Promise<boolean> {
  const before = await call(`${game}/admin/claim-settings`, { headers: operatorAuth });
  if (before.status !== 200 || typeof before.body?.claimBoardEnabled !== 'boolean') {
    throw new Error(`reading the claim settings failed: ${describe(before)}`);
  }
  const on = await call(`${game}/admin/claim-settings`, { method: 'PATCH', headers: operatorAuth, body: { claimBoardEnabled: true } });
  if (on.status !== 200 || on.body?.claimBoardEnabled !== true) throw new Error(`enabling the claim board failed: ${describe(on)}`);
  return before.body.claimBoardEnabled as boolean;
}

/** Users: a fixed set for the bare case, fresh ones for the claims (topped up before each round). */
async function userSupply(owner: pg.Pool, keys: KeyStore) {
  const supply = { all: [] as User[], bare: await createUsers(owner, keys, BARE_USERS), fresh: [] as User[], created: 0, creating: 0 };
  supply.all.push(...supply.bare);
  const topUp = async (atLeast: number) => {
    if (supply.fresh.length >= atLeast) return;
    const t = performance.now();
    const more = await createUsers(owner, keys, atLeast - supply.fresh.length);
    supply.creating += (performance.now() - t) / 1000; // seconds spent creating users, setup and top-ups
    supply.created += more.length;
    supply.all.push(...more);
    supply.fresh.push(...more);
  };
  return { supply, topUp };
}

type Supply = Awaited<ReturnType<typeof userSupply>>['supply'];

/** The two requests: a credited claim of a fresh user, a bare authenticated read; each answers 1 when right. */
function requests(game: string, supply: Supply, failures: Failures) {
  const credited = new Map<string, number>(); // user id -> credited claims (200s)
  const claim = async (): Promise<number> => {
    const u = supply.fresh.pop();
    if (!u) throw new OutOfUsers(`ran out of fresh users (a bench bug: the top-up before the round was too small; ${supply.created} created)`);
    let a;
    try {
      a = await call(`${game}/claim-board/claim`, { headers: u.auth, body: { sectionKey: SECTION } });
    } catch (err) {
      failures.add(`claim threw ${(err as Error).name}`, `${u.userId}: ${(err as Error).message}`);
      return 0;
    }
    if (a.status !== 200) {
      failures.add(`claim ${a.status} ${code(a)}`, `${u.userId}: ${describe(a)}`);
      return 0;
    }
    credited.set(u.userId, (credited.get(u.userId) ?? 0) + 1);
    if (a.body?.outcome !== 'credited' || a.body?.amount !== BASELINE || a.body?.sectionKey !== SECTION) {
      // a 200 is a credit (counted, and expected in the balances), but the answer is wrong
      failures.add('claim 200 with an unexpected body', `${u.userId}: ${describe(a)}`);
    }
    return 1;
  };
  let bareNext = 0;
  const bare = async (): Promise<number> => {
    const u = supply.bare[bareNext++ % supply.bare.length]!;
    try {
      const a = await call(`${game}/api/agents`, { headers: u.auth });
      if (a.status !== 200 || !Array.isArray(a.body?.agents) || a.body.agents.length !== 0) {
        failures.add(`bare ${a.status} ${code(a)}`, `${u.userId}: ${describe(a)}`);
        return 0;
      }
      return 1;
    } catch (err) {
      failures.add(`bare threw ${(err as Error).name}`, `${u.userId}: ${(err as Error).message}`);
      return 0;
    }
  };
  return { claim, bare, credited };
}

interface Measured {
  cases: Case[];
  results: Map<string, number[]>;
  busy: Map<string, number[]>;
  failedByRound: number[];
  claimMade: Composition;
  bareMade: Composition;
  probeFailed: boolean;
}

function report(m: Measured, nClients: number, supply: Supply, failures: Failures) {
  const [CLAIM, BARE] = [m.cases[0]!.name, m.cases[1]!.name];
  const rates = (name: string) => m.results.get(name)!;
  const ratios = rates(CLAIM).map((v, i) => v / rates(BARE)[i]!);
  const s = nClients > 1 ? 's' : '';
  log('\nmedian rates over rounds (node busy: the median share of the time this process\'s event loop, which runs the\nclient and all three roles, was not idle)');
  log(table(
    ['case', 'per second (median)', 'unit', 'rounds', 'node busy'],
    m.cases.map((c) => [
      c.name, fmtRate(median(rates(c.name))), c.unit, rates(c.name).map(fmtRate).join(' / '),
      `${(100 * median(m.busy.get(c.name)!)).toFixed(0)}%`,
    ]),
  ));
  log('');
  log(`credited claims vs bare authenticated requests at ${nClients} client${s} = ${fmtRatio(median(ratios))} (median of within-round ratios: ${ratios.map(fmtRatio).join(', ')})`);
  const n = (count: number, noun: string) => `${count} ${noun}${count === 1 ? '' : 's'}`;
  const made = (what: string, c: Composition) =>
    `one ${what} = ${n(c.entries, 'journal transaction')} + ${n(c.interRole, 'HTTP call')} between roles${c.interRoleDetail} + ${n(c.client, 'client call')}${c.clientDetail}; the roles sent ${n(c.sql, 'SQL statement')}, ${c.writes} of them transactions that wrote`;
  log(`${m.probeFailed ? '(a probe failed: what follows may be a failed request) ' : ''}${made('credited claim', m.claimMade)} (each commit waits for its WAL flush)`);
  log(made('bare request', m.bareMade));
  const latency = (name: string) => (median(rates(name)) > 0 ? (1000 * nClients / median(rates(name))).toFixed(1) : '-');
  log(`at ${nClients} client${s} a claim takes ~${latency(CLAIM)} ms and a bare request ~${latency(BARE)} ms (clients / rate)`);
  log(`users: ${BARE_USERS} for the bare case, ${supply.created} fresh for the claims (${supply.fresh.length} left unused), created in ${supply.creating.toFixed(1)} s outside the timed runs`);
  log('');
  if (failures.count) {
    log(`FAILED requests: ${failures.count} (${m.failedByRound.join(' / ')} in the measured rounds; the rest in the probes or the warm-up), by kind:`);
    for (const line of failures.lines()) log(line);
  } else {
    log('requests: every claim answered 200 credited and every bare request 200');
  }
}

/** Each user's claim ledger rows and play balance are BASELINE x its credited claims; the ledger holds nothing else. */
async function checkUsers(owner: pg.Pool, source: string, users: User[], credited: Map<string, number>) {
  const totalCredited = [...credited.values()].reduce((a, b) => a + b, 0);
  const { rows } = await owner.query<{ user_id: string; play: string; ledger_rows: number; ledger_amount: string }>(
    `select u.id::text as user_id,
            coalesce((select sum(a.balance) from cage.cage_accounts a
                       where a.account_type = 'user' and a.user_id = u.id and a.money_kind = 'play'), 0)::text as play,
            (select count(*) from claims.claim_ledger l where l.user_id = u.id)::int as ledger_rows,
            coalesce((select sum(l.amount) from claims.claim_ledger l where l.user_id = u.id), 0)::text as ledger_amount
       from unnest($1::uuid[]) as u(id)`,
    [users.map((u) => u.userId)],
  );
  const ledgerRows = rows.reduce((n, r) => n + r.ledger_rows, 0);
  const wrong: string[] = [];
  for (const r of rows) {
    const n = credited.get(r.user_id) ?? 0;
    if (r.ledger_rows !== n || BigInt(r.ledger_amount) !== BigInt(BASELINE * n) || BigInt(r.play) !== BigInt(BASELINE * n)) {
      wrong.push(`${r.user_id}: ${n} credited, ${r.ledger_rows} ledger row(s) of ${r.ledger_amount}, play balance ${r.play}`);
    }
  }
  let ledgerOk = ledgerRows === totalCredited;
  let ledgerNote = `${ledgerRows} rows for the bench's ${users.length} users`;
  if (source === 'embedded') {
    const all = (await owner.query<{ n: number }>('select count(*)::int as n from claims.claim_ledger')).rows[0]!.n;
    ledgerOk &&= all === totalCredited;
    ledgerNote = `${all} rows in all`;
  }
  log(`claim ledger: ${ledgerNote}, credited claims (200s): ${totalCredited}${ledgerOk ? '' : '  <- MISMATCH'}`);
  log(wrong.length
    ? `users: ${wrong.length} of ${users.length} whose ledger rows or play balance are not ${BASELINE} x their credited claims:\n  ${wrong.slice(0, 20).join('\n  ')}`
    : `users: all ${users.length} with ledger rows and a play balance of ${BASELINE} x their credited claims (${credited.size} credited once, the rest none)`);
  return ledgerOk && !wrong.length;
}

async function auditClean(cagePool: pg.Pool): Promise<boolean> {
  const auditStart = performance.now();
  const violations = await audit(cagePool);
  if (violations.length) {
    log(`audit: ${violations.length} violation(s):`);
    for (const v of violations.slice(0, 20)) log(`  ${v.invariant} ${v.subject} ${JSON.stringify(v.detail)}`);
  } else {
    log(`audit: clean (0 violations, ${((performance.now() - auditStart) / 1000).toFixed(1)} s)`);
  }
  return violations.length === 0;
}

/** The probes (what one claim and one bare request are made of), then the interleaved rounds. */
async function measure(opts: {
  owner: pg.Pool; urls: Record<string, string>; nClients: number; rounds: number; seconds: number; failures: Failures;
  claim: () => Promise<number>; bare: () => Promise<number>; topUp: (n: number) => Promise<void>;
}): Promise<Measured> {
  const { owner, urls, nClients, rounds, seconds, failures, claim, bare } = opts;
  await bare(); // the game's first JWT verification fetches the auth role's JWKS: not in a probe
  const claimMade = await probe(owner, claim, urls);
  const bareMade = await probe(owner, bare, urls);
  const probeFailed = failures.count > 0;
  if (probeFailed) log(`a probe failed: ${[...failures.byKind.keys()].join(', ')}`);
  let fastestClaims = 0;
  const cases: Case[] = [
    {
      name: `claim@${nClients}`, unit: 'credited claims',
      run: async (secs) => {
        const rate = (await timed(nClients, secs, claim)).perSecond;
        fastestClaims = Math.max(fastestClaims, rate);
        return rate;
      },
    },
    { name: `bare@${nClients}`, unit: 'requests', run: async (secs) => (await timed(nClients, secs, bare)).perSecond },
  ];
  log(`cases (units/s): ${cases.map((c) => `${c.name} = ${c.unit}`).join(', ')}`);
  log(`${rounds} rounds x ${cases.length} cases x ${seconds} s, order rotated each round; fresh users topped up before each round (untimed)\n`);
  const measured = await interleavedRounds({
    cases, rounds, seconds, failures, noun: 'failed request', log,
    beforeRound: async (round) => {
      if (round >= 0) await opts.topUp(Math.ceil(fastestClaims * seconds * HEADROOM) + nClients);
    },
  });
  return { ...measured, cases, claimMade, bareMade, probeFailed };
}

export default async function claimsBench(args: string[]): Promise<number> {
  const flags = flagsOrUsage(args, { seconds: 3, rounds: 3, clients: 8 }, USAGE);
  if (!flags) return 2;
  const seconds = flags.seconds;
  const rounds = Math.max(1, Math.round(flags.rounds));
  const nClients = Math.max(1, Math.round(flags.clients));
  const began = performance.now();

  const db = await benchDatabase(log);
  let owner: pg.Pool | undefined;
  let cagePool: pg.Pool | undefined;
  let authPool: pg.Pool | undefined;
  let platform: Platform | undefined;
  try {
    await migrate(db.url);
    owner = createOwnerPool(db.url, 2);
    cagePool = createRolePool(db.url, 'poker_cage', { max: 1, applicationName: 'bench-claims-audit' });
    authPool = createRolePool(db.url, 'poker_auth', { max: 1, applicationName: 'bench-claims-auth' });
    log(await databaseLine(owner, db.source));
    log(`client: node ${process.version}; ${nClients} HTTP clients in both cases; the auth, game and cage roles run in this process; ${cpus().length} CPUs shared by client, roles and server`);

    // the roles, as test/helpers/platform.ts starts them, with the claim board on
    const setupStart = performance.now();
    const started = await startRoles({ databaseUrl: db.url, secret: SECRET, issuer: ISSUER, serviceKey: SERVICE_KEY });
    platform = started.platform;
    const { game } = started.urls;
    const operatorAuth = (await signInOperator(owner, started.urls.auth)).auth;
    const wasEnabled = await boardOn(game, operatorAuth);
    const { supply, topUp } = await userSupply(owner, createKeyStore(authPool, { privateKey: await benchJwtKey(), issuer: ISSUER }));
    await topUp(WARM_UP_USERS);
    log(`set up ${BARE_USERS} users for the bare case and ${WARM_UP_USERS} fresh users for the claims, each with a linked Solana wallet and a JWT, in ${((performance.now() - setupStart) / 1000).toFixed(1)} s (the roles included)`);

    const failures = new Failures();
    const { claim, bare, credited } = requests(game, supply, failures);
    const measured = await measure({ owner, urls: started.urls, nClients, rounds, seconds, failures, claim, bare, topUp });
    report(measured, nClients, supply, failures);

    // the board as it was (it matters only in a database that stays)
    if (!wasEnabled) {
      const off = await call(`${game}/admin/claim-settings`, { method: 'PATCH', headers: operatorAuth, body: { claimBoardEnabled: false } });
      if (off.status !== 200) log(`putting the claim board back off failed: ${describe(off)}`);
    }
    await platform.stop();
    platform = undefined;
    const usersOk = await checkUsers(owner, db.source, supply.all, credited);
    const clean = await auditClean(cagePool);
    log(`total ${((performance.now() - began) / 1000).toFixed(0)} s`);
    return failures.count || !usersOk || !clean ? 1 : 0;
  } finally {
    await platform?.stop().catch(() => undefined);
    await authPool?.end().catch(() => undefined);
    await cagePool?.end().catch(() => undefined);
    await owner?.end().catch(() => undefined);
    await db.stop();
  }
}
