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
// trip is measured (not assumed) on a probe before the rounds, and its write commits (transactions
// that took a transaction id: each waits for its WAL flush, as a raw posting's one does) are printed
// with the rate ratio on one line, the figures issue 22 holds (at most 4; 0.1x). Client and roles share this one
// process and event loop. Rounds are interleaved and medians quoted, as everywhere in bench/. A
// round trip that fails is a bug, not noise: failures are counted and printed and make the exit
// code 1, as does a cage audit that is not empty or a player whose balance moved.
import { randomBytes, randomUUID } from 'node:crypto';
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import type pg from 'pg';
import { createKeyStore } from '../server/auth/keys.ts';
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
  call, databaseLine, describeAnswer as describe, errorCode as code, Failures, interleavedRounds, probe, startRoles, type Case, type Composition,
} from './lib/platform.ts';
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

interface Player {
  userId: string;
  auth: Record<string, string>;
  tableId: string;
}

export default async function cageBench(args: string[]): Promise<number> {
  const flags = flagsOrUsage(args, { seconds: 3, rounds: 3, clients: 8 }, USAGE);
  if (!flags) return 2;
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
    // the baseline posts raw movements (cage.post_movement), which only the owner may call
    ledgerPool = createOwnerPool(db.url, nClients);
    authPool = createRolePool(db.url, 'poker_auth', { max: 1, applicationName: 'bench-cage-auth' });
    await printSettings(owner, db.source, nClients);

    // the baseline's accounts, exactly as bench/ledger.ts sets them up
    const setupStart = performance.now();
    const run = Date.now().toString(36);
    let seq = 0;
    const ref = (tag: string) => `bench:${run}:${tag}:${++seq}`;
    const { users } = await fundedUserAccounts(ledgerPool, ACCOUNTS, ref);

    // the roles, as test/helpers/platform.ts starts them
    const started = await startRoles({ databaseUrl: db.url, secret: SECRET, issuer: ISSUER, serviceKey: SERVICE_KEY });
    platform = started.platform;
    const { cage, game } = started.urls;
    const operator = await signInOperator(owner, started.urls.auth);

    const players = await makePlayers(owner, authPool, cage, operator.auth, run, nClients);
    log(`set up ${ACCOUNTS} funded user accounts (baseline) and ${nClients} players with ${CHIPS} play chips and a 9-seat table each in ${((performance.now() - setupStart) / 1000).toFixed(1)} s`);

    const failures = new Failures();
    const roundTrip = roundTripper(cage, failures);

    // what one round trip is made of: one probe, measured
    const composition = await probe(owner, () => roundTrip(players[0]!), started.urls);
    const probeFailed = failures.count > 0;
    if (probeFailed) log(`the probe round trip failed: ${[...failures.byKind.keys()].join(', ')}`);

    const ledgerClients = await Promise.all(Array.from({ length: nClients }, () => ledgerPool!.connect()));
    const HTTP = `sit+stand@${nClients}`;
    const LEDGER = `ledger post@${nClients}`;
    const cases: Case[] = [
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
    log(`cases (units/s): ${cases.map((c) => `${c.name} = ${c.unit}`).join(', ')}`);
    log(`${rounds} rounds x ${cases.length} cases x ${seconds} s, order rotated each round\n`);
    const measured = await interleavedRounds({ cases, rounds, seconds, failures, noun: 'failed round trip', log })
      .finally(() => { for (const c of ledgerClients) c.release(); });
    report({ ...measured, cases, composition, probeFailed, nClients, failures, HTTP, LEDGER });

    const moved = await playersBack(players, cage, game, nClients);

    await platform.stop();
    platform = undefined;
    // every violation but the baseline's raw postings fails the run
    const violations = await auditBut(ledgerPool, `bench:${run}:`, performance.now());
    log(`total ${((performance.now() - began) / 1000).toFixed(0)} s`);
    return failures.count || moved.length || violations.length ? 1 : 0;
  } finally {
    await platform?.stop().catch(() => undefined);
    await authPool?.end().catch(() => undefined);
    await ledgerPool?.end().catch(() => undefined);
    await owner?.end().catch(() => undefined);
    await db.stop();
  }
}

async function printSettings(owner: pg.Pool, source: string, nClients: number) {
  log(await databaseLine(owner, source));
  log(`client: node ${process.version}; ${nClients} HTTP players and ${nClients} poker_cage connections for the baseline; the auth, game and cage roles run in this process; ${cpus().length} CPUs shared by client, roles and server`);
}

/** Players as test/helpers/auth.ts bridgedUser makes them, each with chips and a table of its own. */
async function makePlayers(owner: pg.Pool, authPool: pg.Pool, cage: string, operatorAuth: Record<string, string>, run: string, count: number): Promise<Player[]> {
  const keys = createKeyStore(authPool, { privateKey: await benchJwtKey(), issuer: ISSUER });
  const players: Player[] = [];
  for (let i = 0; i < count; i++) {
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
      headers: operatorAuth, body: { userId, amount: CHIPS, externalRef: `pay-${randomUUID()}`, moneyKind: 'play' },
    });
    if (bought.status !== 200) throw new Error(`purchase failed: ${bought.status} ${JSON.stringify(bought.body)}`);
    const tableId = `bench-${run}-${i}`;
    const created = await call(`${cage}/api/tables`, {
      headers: auth, body: { tableId, gameType: 'poker', settings: POKER_SETTINGS },
    });
    if (created.status !== 200) throw new Error(`table failed: ${created.status} ${JSON.stringify(created.body)}`);
    players.push({ userId, auth, tableId });
  }
  return players;
}

/** One sit+stand round trip of a player over HTTP: 1 when both answers are 200 and confirmed, else 0 and a failure. */
function roundTripper(cage: string, failures: Failures) {
  const fail = (what: string, detail: string) => failures.add(what, detail);
  /** After a failure: stand the player up, so the next round trip starts from an empty seat. */
  const recover = async (p: Player) => {
    try {
      const w = await call(`${cage}/api/withdraw`, { headers: p.auth, body: { tableId: p.tableId } });
      return `; a withdraw to recover answered ${describe(w)}`;
    } catch (err) {
      return `; a withdraw to recover threw ${(err as Error).message}`;
    }
  };
  return async (p: Player): Promise<number> => {
    let step = 'deposit';
    try {
      const dep = await call(`${cage}/api/deposit`, { headers: { ...p.auth, 'idempotency-key': randomUUID() }, body: { tableId: p.tableId, seatIndex: 0, amount: BUY_IN } });
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
}

/** The rates, the ratio to raw postings, what one round trip is made of, and the failures. */
function report(r: {
  cases: Case[]; results: Map<string, number[]>; busy: Map<string, number[]>; failedByRound: number[];
  composition: Composition; probeFailed: boolean; nClients: number; failures: Failures; HTTP: string; LEDGER: string;
}) {
  const { cases, busy, composition, nClients, HTTP, LEDGER } = r;
  const rates = (name: string) => r.results.get(name)!;
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
  log(`${r.probeFailed ? '(the probe failed: what follows is a failed round trip) ' : ''}one round trip = ${composition.entries} journal transactions + ${composition.interRole} HTTP calls between roles${composition.interRoleDetail} + ${composition.client} client calls${composition.clientDetail}; the roles sent ${composition.sql} SQL statements, ${composition.writes} of them transactions that wrote (each commit waits for its WAL flush; a raw posting is 1)`);
  log(`sit+stand: ${composition.writes} write commits per round trip (a raw posting: 1; the goal: at most 4), ${composition.sql} SQL statements, ${composition.interRole} calls between roles; round trips vs raw postings = ${fmtRatio(ratio)} (the goal: 0.1x)`);
  log(`per journal transaction, the HTTP path runs at ${fmtRatio(ratio * composition.entries)} the raw posting rate; at ${nClients} client${nClients > 1 ? 's' : ''} a round trip takes ~${median(rates(HTTP)) > 0 ? (1000 * nClients / median(rates(HTTP))).toFixed(1) : '-'} ms (clients / rate)`);
  log('');
  if (r.failures.count) {
    log(`FAILED round trips: ${r.failures.count} (${r.failedByRound.join(' / ')} in the measured rounds; the rest in the probe or the warm-up), by first failing step:`);
    for (const line of r.failures.lines()) log(line);
  } else {
    log('round trips: every deposit and withdraw answered 200 confirmed');
  }
}

/** Every player is back where it started: its chips in the cage, its seat empty. Answers those that are not. */
async function playersBack(players: Player[], cage: string, game: string, nClients: number): Promise<string[]> {
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
  return moved;
}

/**
 * The cage audit. The baseline's raw postings (grants and adjustments straight through
 * cage.post_movement, the ledger's own cost) have no business record behind them by design: the
 * provenance check names them, and they are counted here, not failed. Answers every other violation.
 */
async function auditBut(ledgerPool: pg.Pool, baselineRef: string, auditStart: number) {
  const all = await audit(ledgerPool);
  const raw = all.filter((v) => v.invariant === 'provenance' && String((v.detail as { ref_id?: string }).ref_id ?? '').startsWith(baselineRef));
  const violations = all.filter((v) => !raw.includes(v));
  log(`audit: ${raw.length} raw baseline posting(s) without a business record (expected: the baseline bypasses the business functions)`);
  if (violations.length) {
    log(`audit: ${violations.length} violation(s):`);
    for (const v of violations.slice(0, 20)) log(`  ${v.invariant} ${v.subject} ${JSON.stringify(v.detail)}`);
  } else {
    log(`audit: clean (0 violations, ${((performance.now() - auditStart) / 1000).toFixed(1)} s)`);
  }
  return violations;
}
