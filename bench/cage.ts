// The cage benchmark: sit+stand round trips per second over HTTP against the running auth, game
// and cage roles (in this process, on ephemeral ports), against the ledger benchmark's raw posting
// rate (cage.post_movement, bench/ledger.ts's post@N) in the same run and database:
//   sit+stand@N      N players, each at a table of its own, looping POST /api/deposit {tableId,
//                    seatIndex, amount} then POST /api/withdraw {tableId}; a unit is a completed
//                    round trip (both answers 200 and confirmed, the withdraw no replay);
//   ledger post@N    N node-postgres connections posting random user-to-user transfers.
// Their ratio is the price of the HTTP and the seams: one round trip carries two journal
// transactions (the buy-in and the cash-out) and, besides them, the roles' other SQL, the calls
// from the cage to the game, JWT verification and the JSON in and out. The composition of one round
// trip is measured (not assumed) on a probe before the rounds. Client and roles share this one
// process and event loop. Rounds are interleaved and medians quoted, as everywhere in bench/. A
// round trip that fails is a bug, not noise: failures are counted and printed and make the exit
// code 1, as does a cage audit that is not empty or a player whose balance moved.
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes, randomUUID } from 'node:crypto';
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { createKeyStore } from '../server/auth/keys.ts';
import { audit } from '../server/cage/ledger.ts';
import { loadConfig } from '../server/config/index.ts';
import { migrate } from '../server/db/migrate.ts';
import { createOwnerPool, createRolePool } from '../server/db/pools.ts';
import type { Platform } from '../server/platform.ts';
import { createLogger } from '../server/telemetry/index.ts';
import {
  benchDatabase, fmtRate, fmtRatio, median, numericFlags, table, timed, UsageError,
} from './lib/harness.ts';
import { fundedUserAccounts, postRandomTransfer } from './lib/postings.ts';

const USAGE = `usage: npm run bench -- cage [--seconds N] [--rounds N] [--clients N]
  --seconds  measured seconds per case per round (default 3)
  --rounds   interleaved rounds; medians are taken over them (default 3)
  --clients  concurrent players over HTTP, and concurrent connections posting for the baseline (default 8)
  DATABASE_URL set: benchmark that database (it is migrated; the players, tables and postings stay);
  otherwise an embedded, durable PostgreSQL in a temp dir is started and deleted.`;

const ACCOUNTS = 4000; // the ledger benchmark's default: its post@N case, unchanged
const SECRET = 'bench-cage-auth-secret-0123456789abcdef';
const ISSUER = 'https://auth.bench.local';
const SERVICE_KEY = 'bench-service-key-0123456789abcdef';
const CHIPS = 10_000; // bought per player; a round trip gives back what it took
const BUY_IN = 100;
/** As test/helpers/money.ts's POKER_SETTINGS, with nine seats. */
const POKER_SETTINGS = {
  smallBlind: 1, bigBlind: 2, minBuyIn: 40, maxBuyIn: 200, maxPlayers: 9, rakePercent: 5, rakeCap: 10,
  rakeMinPot: 0, rakeRequiresFlop: true, turnTimeSec: 30, turnTimerEnabled: true,
};

const log = (msg: string) => console.log(msg);

interface Answer {
  status: number;
  body: any;
}

async function call(url: string, init: { headers?: Record<string, string>; body?: unknown } = {}): Promise<Answer> {
  const res = await fetch(url, {
    method: init.body === undefined ? 'GET' : 'POST',
    headers: { ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON: kept as text for the failure report
  }
  return { status: res.status, body };
}

interface Player {
  userId: string;
  auth: Record<string, string>;
  tableId: string;
}

interface Failure {
  count: number;
  first: string;
}

export default async function cageBench(args: string[]): Promise<number> {
  let flags;
  try {
    flags = numericFlags(args, { seconds: 3, rounds: 3, clients: 8 }, USAGE);
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(err.message);
      return 2;
    }
    throw err;
  }
  const seconds = flags.seconds;
  const rounds = Math.max(1, Math.round(flags.rounds));
  const nClients = Math.max(1, Math.round(flags.clients));
  const began = performance.now();

  const db = await benchDatabase(log);
  let owner: pg.Pool | undefined;
  let ledgerPool: pg.Pool | undefined;
  let authPool: pg.Pool | undefined;
  let platform: Platform | undefined;
  try {
    await migrate(db.url);
    owner = createOwnerPool(db.url, 2);
    ledgerPool = createRolePool(db.url, 'poker_cage', { max: nClients, applicationName: 'bench-cage-ledger' });
    authPool = createRolePool(db.url, 'poker_auth', { max: 1, applicationName: 'bench-cage-auth' });
    await printSettings(owner, db.source, nClients);

    // the baseline's accounts, exactly as bench/ledger.ts sets them up
    const setupStart = performance.now();
    const run = Date.now().toString(36);
    let seq = 0;
    const ref = (tag: string) => `bench:${run}:${tag}:${++seq}`;
    const { users } = await fundedUserAccounts(ledgerPool, ACCOUNTS, ref);

    // the roles, as test/helpers/platform.ts starts them (Grafast reads GRAPHILE_ENV at import)
    process.env.GRAPHILE_ENV ??= 'development';
    const { startPlatform } = await import('../server/platform.ts');
    platform = await startPlatform({
      config: loadConfig({
        NODE_ENV: 'test', LOG_LEVEL: 'silent', PORT: '0', GAME_PORT: '0', CAGE_PORT: '0', SERVICE_KEY,
        AUTH_SECRET: SECRET, AUTH_BASE_URL: ISSUER, ENABLE_TEST_AUTH: 'true', CAGE_AUDIT_CRON: '0 0 1 1 *',
      }),
      roles: ['auth', 'game', 'cage'],
      log: createLogger('silent'),
      databaseUrl: db.url,
    });
    const urlOf = (role: string) => platform!.roles.find((r) => r.role === role)!.url!;
    const cage = urlOf('cage');
    const game = urlOf('game');
    const service = { 'x-service-key': SERVICE_KEY };

    // players as test/helpers/auth.ts bridgedUser makes them, each with chips and a table of its own
    const keys = createKeyStore(authPool, { secret: SECRET, issuer: ISSUER });
    const players: Player[] = [];
    for (let i = 0; i < nClients; i++) {
      const invite = `inv_${randomBytes(12).toString('hex')}`;
      await owner.query('select auth.mint_invite($1)', [invite]);
      const { rows } = await owner.query<{ user_id: string }>(
        "select user_id from auth.bridge_sign_in('oidc', $1, null, $2)", [randomUUID(), invite],
      );
      const userId = rows[0]!.user_id;
      // a day, not the default 15 minutes: long runs must not see their tokens expire
      const jwt = await keys.sign({ sub: userId, walletAddress: null }, { ttlSeconds: 86_400 });
      const auth = { authorization: `Bearer ${jwt}` };
      const bought = await call(`${cage}/api/operator/purchase`, {
        headers: service, body: { userId, amount: CHIPS, externalRef: `pay-${randomUUID()}`, moneyKind: 'play' },
      });
      if (bought.status !== 200) throw new Error(`purchase failed: ${bought.status} ${JSON.stringify(bought.body)}`);
      const tableId = `bench-${run}-${i}`;
      const created = await call(`${cage}/api/tables`, {
        headers: auth, body: { tableId, gameType: 'poker', settings: POKER_SETTINGS },
      });
      if (created.status !== 200) throw new Error(`table failed: ${created.status} ${JSON.stringify(created.body)}`);
      players.push({ userId, auth, tableId });
    }
    log(`set up ${ACCOUNTS} funded user accounts (baseline) and ${nClients} players with ${CHIPS} play chips and a 9-seat table each in ${((performance.now() - setupStart) / 1000).toFixed(1)} s`);

    // ---- the round trip ---------------------------------------------------------------------
    const failures = new Map<string, Failure>();
    let failed = 0;
    const fail = (what: string, detail: string) => {
      failed++;
      const f = failures.get(what);
      if (f) f.count++;
      else failures.set(what, { count: 1, first: detail });
    };
    const describe = (a: Answer) => `${a.status} ${JSON.stringify(a.body)}`.slice(0, 600);
    const code = (a: Answer) => (a.body && typeof a.body === 'object' && typeof a.body.error === 'string' ? a.body.error : '-');
    /** After a failure: stand the player up, so the next round trip starts from an empty seat. */
    const recover = async (p: Player) => {
      try {
        const w = await call(`${cage}/api/withdraw`, { headers: p.auth, body: { tableId: p.tableId } });
        return `; a withdraw to recover answered ${describe(w)}`;
      } catch (err) {
        return `; a withdraw to recover threw ${(err as Error).message}`;
      }
    };
    const roundTrip = async (p: Player): Promise<number> => {
      let step = 'deposit';
      try {
        const dep = await call(`${cage}/api/deposit`, { headers: p.auth, body: { tableId: p.tableId, seatIndex: 0, amount: BUY_IN } });
        if (dep.status !== 200 || dep.body?.status !== 'confirmed' || dep.body?.chipBalance !== String(BUY_IN)) {
          fail(`deposit ${dep.status} ${code(dep)}`, `${p.tableId}: ${describe(dep)}${await recover(p)}`);
          return 0;
        }
        step = 'withdraw';
        const out = await call(`${cage}/api/withdraw`, { headers: p.auth, body: { tableId: p.tableId } });
        if (out.status !== 200 || out.body?.status !== 'confirmed' || out.body?.amount !== BUY_IN || out.body?.replay) {
          fail(`withdraw ${out.status} ${code(out)}${out.body?.replay ? ' (replay)' : ''}`, `${p.tableId}: ${describe(out)}${await recover(p)}`);
          return 0;
        }
        return 1;
      } catch (err) {
        fail(`${step} threw ${(err as Error).name}`, `${p.tableId}: ${(err as Error).message}${await recover(p)}`);
        return 0;
      }
    };

    // ---- what one round trip is made of: one probe, measured ----------------------------------
    const composition = await probe(owner, players[0]!, roundTrip, { cage, game, auth: urlOf('auth') });
    const probeFailed = failed > 0;
    if (probeFailed) log(`the probe round trip failed: ${[...failures.keys()].join(', ')}`);

    // ---- the cases -------------------------------------------------------------------------
    const ledgerClients = await Promise.all(Array.from({ length: nClients }, () => ledgerPool!.connect()));
    const HTTP = `sit+stand@${nClients}`;
    const LEDGER = `ledger post@${nClients}`;
    const cases: { name: string; unit: string; run: (secs: number) => Promise<number> }[] = [
      {
        name: HTTP, unit: 'round trips',
        run: async (secs) => (await timed(nClients, secs, (w) => roundTrip(players[w]!))).perSecond,
      },
      {
        name: LEDGER, unit: 'postings',
        run: async (secs) => (await timed(nClients, secs, async (w) => {
          await postRandomTransfer(ledgerClients[w]!, users, ref('u'));
          return 1;
        })).perSecond,
      },
    ];
    const results = new Map<string, number[]>(cases.map((c) => [c.name, []]));
    const busy = new Map<string, number[]>(cases.map((c) => [c.name, []])); // this process's event loop
    const failedByRound: number[] = [];
    try {
      log(`cases (units/s): ${cases.map((c) => `${c.name} = ${c.unit}`).join(', ')}`);
      log(`${rounds} rounds x ${cases.length} cases x ${seconds} s, order rotated each round\n`);
      for (let round = -1; round < rounds; round++) {
        const warmUp = round < 0;
        const order = cases.map((_, i) => cases[(i + Math.max(0, round)) % cases.length]!);
        const failedBefore = failed;
        const line: string[] = [];
        for (const c of order) {
          const elu = performance.eventLoopUtilization();
          const rate = await c.run(warmUp ? Math.min(1, seconds) : seconds);
          if (!warmUp) {
            results.get(c.name)!.push(rate);
            busy.get(c.name)!.push(performance.eventLoopUtilization(elu).utilization);
          }
          line.push(`${c.name} ${fmtRate(rate)}`);
        }
        const roundFailures = failed - failedBefore;
        if (!warmUp) failedByRound.push(roundFailures);
        log(`${warmUp ? 'warm-up' : `round ${round + 1}/${rounds}`}: ${line.join(', ')}${roundFailures ? `  <- ${roundFailures} failed round trip(s)` : ''}`);
      }
    } finally {
      for (const c of ledgerClients) c.release();
    }

    // ---- the report ------------------------------------------------------------------------
    const rates = (name: string) => results.get(name)!;
    const ratios = rates(HTTP).map((v, i) => v / rates(LEDGER)[i]!);
    const ratio = median(ratios);
    log('\nmedian rates over rounds (node busy: the median share of the time this process\'s event loop, which runs the\nclient and all three roles, was not idle)');
    log(table(
      ['case', 'per second (median)', 'unit', 'rounds', 'node busy'],
      cases.map((c) => [
        c.name, fmtRate(median(rates(c.name))), c.unit, rates(c.name).map(fmtRate).join(' / '),
        `${(100 * median(busy.get(c.name)!)).toFixed(0)}%`,
      ]),
    ));
    log('');
    log(`sit+stand round trips over HTTP vs raw ledger postings at ${nClients} client${nClients > 1 ? 's' : ''} = ${fmtRatio(ratio)} (median of within-round ratios: ${ratios.map(fmtRatio).join(', ')})`);
    log(`${probeFailed ? '(the probe failed: what follows is a failed round trip) ' : ''}one round trip = ${composition.entries} journal transactions + ${composition.interRole} HTTP calls between roles${composition.interRoleDetail} + ${composition.client} client calls${composition.clientDetail}; the roles sent ${composition.sql} SQL statements, ${composition.writes} of them transactions that wrote (each commit waits for its WAL flush; a raw posting is 1)`);
    log(`per journal transaction, the HTTP path runs at ${fmtRatio(ratio * composition.entries)} the raw posting rate; at ${nClients} client${nClients > 1 ? 's' : ''} a round trip takes ~${median(rates(HTTP)) > 0 ? (1000 * nClients / median(rates(HTTP))).toFixed(1) : '-'} ms (clients / rate)`);

    log('');
    if (failed) {
      log(`FAILED round trips: ${failed} (${failedByRound.join(' / ')} in the measured rounds; the rest in the probe or the warm-up), by first failing step:`);
      for (const [what, f] of failures) log(`  ${f.count} x ${what}\n      first: ${f.first}`);
    } else {
      log('round trips: every deposit and withdraw answered 200 confirmed');
    }

    // every player is back where it started: its chips in the cage, its seat empty
    const moved: string[] = [];
    for (const p of players) {
      const bal = await call(`${cage}/api/cage/balances`, { headers: p.auth });
      const room = await call(`${game}/api/tables/${p.tableId}`);
      const seats = Array.isArray(room.body?.seats) ? room.body.seats.length : NaN;
      if (bal.body?.balances?.play !== CHIPS || seats !== 0) moved.push(`${p.tableId}: balance ${describe(bal)}, seats ${describe(room)}`);
    }
    log(moved.length
      ? `players: ${moved.length} of ${nClients} not back at ${CHIPS} chips with an empty seat:\n  ${moved.join('\n  ')}`
      : `players: all ${nClients} back at ${CHIPS} chips in the cage, every seat empty`);

    await platform.stop();
    platform = undefined;
    const auditStart = performance.now();
    const violations = await audit(ledgerPool);
    if (violations.length) {
      log(`audit: ${violations.length} violation(s):`);
      for (const v of violations.slice(0, 20)) log(`  ${v.invariant} ${v.subject} ${JSON.stringify(v.detail)}`);
    } else {
      log(`audit: clean (0 violations, ${((performance.now() - auditStart) / 1000).toFixed(1)} s)`);
    }
    log(`total ${((performance.now() - began) / 1000).toFixed(0)} s`);
    return failed || moved.length || violations.length ? 1 : 0;
  } finally {
    await platform?.stop().catch(() => undefined);
    await authPool?.end().catch(() => undefined);
    await ledgerPool?.end().catch(() => undefined);
    await owner?.end().catch(() => undefined);
    await db.stop();
  }
}

/**
 * One round trip with every fetch and every SQL statement of this process counted: the journal
 * transactions it wrote, the client's calls (made inside the round trip's async context) and the
 * calls between roles (made by the roles' request handlers), the statements sent by any pg client.
 */
async function probe(
  owner: pg.Pool, player: Player, roundTrip: (p: Player) => Promise<number>, urls: Record<'cage' | 'game' | 'auth', string>,
) {
  const roleOf = new Map(Object.entries(urls).map(([role, url]) => [new URL(url).origin, role]));
  const calls: { to: string; path: string; fromClient: boolean }[] = [];
  const client = new AsyncLocalStorage<true>();
  let sql = 0;
  const last = async () => (await owner.query<{ id: bigint | null }>('select max(id) as id from cage.cage_entries')).rows[0]!.id ?? 0n;
  // the next transaction id to be assigned: only transactions that write get one
  const nextXid = async () => BigInt((await owner.query<{ x: string }>('select pg_snapshot_xmax(pg_current_snapshot())::text as x')).rows[0]!.x);
  const before = await last();
  const xidBefore = await nextXid();
  const realFetch = globalThis.fetch;
  const realQuery = pg.Client.prototype.query;
  globalThis.fetch = ((input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(input instanceof Request ? input.url : input);
    calls.push({ to: roleOf.get(url.origin) ?? url.origin, path: url.pathname, fromClient: client.getStore() === true });
    return realFetch(input, init);
  }) as typeof fetch;
  pg.Client.prototype.query = function (this: pg.Client, ...a: unknown[]) {
    sql++;
    return (realQuery as (...x: unknown[]) => unknown).apply(this, a);
  } as typeof realQuery;
  try {
    await client.run(true, () => roundTrip(player));
  } finally {
    globalThis.fetch = realFetch;
    pg.Client.prototype.query = realQuery;
  }
  const writes = Number((await nextXid()) - xidBefore);
  const entries = Number((await owner.query<{ n: bigint }>('select count(*) as n from cage.cage_entries where id > $1', [before])).rows[0]!.n);
  const interRole = calls.filter((c) => !c.fromClient);
  const fromClient = calls.filter((c) => c.fromClient);
  const list = (cs: typeof calls) => (cs.length ? ` (${cs.map((c) => `${c.to} ${c.path}`).join(', ')})` : '');
  return {
    entries, sql, writes, interRole: interRole.length, client: fromClient.length,
    interRoleDetail: list(interRole), clientDetail: list(fromClient),
  };
}

async function printSettings(owner: pg.Pool, source: string, nClients: number) {
  const names = ['server_version', 'fsync', 'synchronous_commit', 'max_connections'];
  const { rows } = await owner.query<{ name: string; setting: string }>(
    'select name, setting from pg_settings where name = any ($1)', [names],
  );
  const byName = new Map(rows.map((r) => [r.name, r.setting]));
  log(`database: ${source}; ${names.map((n) => `${n}=${byName.get(n) ?? '?'}`).join(', ')}`);
  log(`client: node ${process.version}; ${nClients} HTTP players and ${nClients} poker_cage connections for the baseline; the auth, game and cage roles run in this process; ${cpus().length} CPUs shared by client, roles and server`);
}
