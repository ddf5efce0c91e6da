// The ledger benchmark: postings/s of cage.post_movement and cage.post_movements against two
// baselines sent through the same driver, pool and database in the same run:
//   tpcb  a pgbench-like TPC-B transaction: BEGIN; 3 UPDATEs (account, teller, branch); 1 INSERT
//         (history); COMMIT, as separate statements;
//   twin  bench.twin_transfer, one function call doing the posting's bare writes (2 UPDATEs + 1
//         INSERT) with none of the ledger's rules.
// A posting is a user-to-user transfer between two random pre-funded accounts; the hot-source case
// posts every movement from the one grant_source account (unbounded: never locked, never updated).
// The machine is shared and noisy, so cases are interleaved: every round runs every case for a
// fixed time, in a rotated order, and ratios are taken within a round, then their median is quoted.
// After the run the cage audit must be empty, or the exit code is 1.
import { cpus } from 'node:os';
import type pg from 'pg';
import { audit, postMovement, postMovements, type Movement } from '../server/cage/ledger.ts';
import { migrate } from '../server/db/migrate.ts';
import { createOwnerPool } from '../server/db/pools.ts';
import {
  benchDatabase, fmtRate, fmtRatio, median, flagsOrUsage, table, timed,
} from './lib/harness.ts';
import { auditHistoryCases, type HistoryFlags } from './lib/audit-history.ts';
import { FUNDING, fundedUserAccounts, postRandomTransfer, randInt, randomPair, randomTransfer } from './lib/postings.ts';

const USAGE = `usage: npm run bench -- ledger [--seconds N] [--rounds N] [--accounts N] [--history N] [--history-large N]
                                     [--minute N] [--full-up-to N] [--audit-only]
  --seconds   measured seconds per case per round (default 3)
  --rounds    interleaved rounds; medians are taken over them (default 5)
  --accounts  pre-funded user accounts (default 4000)
  audit cases (bench/lib/audit-history.ts), in a database of their own on the same server:
  --history        the first journal length, in entries (default 1000000)
  --history-large  the second (default 10000000); the periodic audit must cost about the same at both
  --minute         postings made before each timed periodic audit (default 6000: 100 a second)
  --full-up-to     the full audit runs up to this length, and is estimated beyond it (default 1000000)
  --audit-only     only the audit cases
  DATABASE_URL set: benchmark that database (it is migrated; postings stay in its journal);
  otherwise an embedded, durable PostgreSQL in a temp dir is started and deleted.`;

const CLIENTS = [1, 8, 32] as const;
const GOAL_CLIENTS = 8;
const BATCH_SIZES = [100, 1000] as const;
const BRANCHES = 32; // pgbench's rule of thumb: scale >= clients, so branches are not one hot row
const TELLERS = BRANCHES * 10;

interface Case {
  name: string;
  clients: number;
  /** What a unit is: a posting, a TPC-B transaction, a twin call. */
  unit: string;
  op: (client: pg.PoolClient, worker: number) => Promise<number>;
}

const log = (msg: string) => console.log(msg);

export default async function ledgerBench(args: string[]): Promise<number> {
  const auditOnly = args.includes('--audit-only');
  const flags = flagsOrUsage(args.filter((a) => a !== '--audit-only'), {
    seconds: 3, rounds: 5, accounts: 4000, history: 1_000_000, 'history-large': 10_000_000, minute: 6000, 'full-up-to': 1_000_000,
  }, USAGE);
  if (!flags) return 2;
  const historyFlags: HistoryFlags = {
    sizes: [flags.history, flags['history-large']], minute: Math.round(flags.minute), fullUpTo: flags['full-up-to'],
  };
  const seconds = flags.seconds;
  const rounds = Math.max(1, Math.round(flags.rounds));
  const nAccounts = Math.max(64, Math.round(flags.accounts));
  const began = performance.now();

  const db = await benchDatabase(log);
  if (auditOnly) {
    try {
      await auditHistoryCases(db.url, historyFlags, log);
      return 0;
    } finally {
      await db.stop();
    }
  }
  let owner: pg.Pool | undefined;
  let cage: pg.Pool | undefined;
  try {
    await migrate(db.url);
    owner = createOwnerPool(db.url, 2);
    const maxClients = Math.max(...CLIENTS);
    // raw postings (cage.post_movement, cage.post_movements): only the owner may call them
    cage = createOwnerPool(db.url, maxClients);

    await printSettings(owner, db.source, maxClients);
    await createBenchSchema(owner, nAccounts);

    // user accounts, then their funding from the grant source in batches
    const setupStart = performance.now();
    const run = Date.now().toString(36);
    let seq = 0;
    const ref = (tag: string) => `bench:${run}:${tag}:${++seq}`;
    const { users, grantSource } = await fundedUserAccounts(cage, nAccounts, ref);
    log(`set up ${nAccounts} funded user accounts (+ ${nAccounts} twin, ${nAccounts} TPC-B accounts, ${TELLERS} tellers, ${BRANCHES} branches) in ${((performance.now() - setupStart) / 1000).toFixed(1)} s\n`);

    const counter = { created: users.length }; // the funding movements, then every posting that came back 'created'
    const cases = ledgerCases(users, grantSource, nAccounts, ref, counter);

    // one connection per worker for the whole run, checked out of the one pool
    const clients = await Promise.all(Array.from({ length: maxClients }, () => cage!.connect()));
    log(`cases (units/s): ${cases.map((c) => `${c.name} = ${c.unit}`).join(', ')}`);
    log(`${rounds} rounds x ${cases.length} cases x ${seconds} s, order rotated each round\n`);
    const { results, walPerUnit } = await runRounds(cases, clients, owner, rounds, seconds)
      .finally(() => { for (const c of clients) c.release(); });
    const exitCode = report(results, walPerUnit, rounds);

    const problems = await checkJournal(owner, cage, run, counter.created);
    if (db.source === 'DATABASE_URL') await owner.query('drop schema bench cascade');
    log('');
    await auditHistoryCases(db.url, historyFlags, log);
    log(`total ${((performance.now() - began) / 1000).toFixed(0)} s`);
    return problems ? 1 : exitCode;
  } finally {
    await cage?.end().catch(() => undefined);
    await owner?.end().catch(() => undefined);
    await db.stop();
  }
}

async function printSettings(owner: pg.Pool, source: string, maxClients: number) {
  const names = [
    'server_version', 'fsync', 'synchronous_commit', 'wal_sync_method', 'full_page_writes', 'wal_level',
    'commit_delay', 'shared_buffers', 'max_wal_size', 'checkpoint_timeout', 'max_connections', 'jit',
  ];
  const { rows } = await owner.query<{ name: string; setting: string; unit: string | null }>(
    'select name, setting, unit from pg_settings where name = any ($1)', [names],
  );
  const byName = new Map(rows.map((r) => [r.name, r]));
  const show = (n: string) => {
    const r = byName.get(n);
    if (!r) return `${n}=?`;
    if (r.unit === '8kB') return `${n}=${(Number(r.setting) * 8 / 1024).toFixed(0)}MB`;
    return `${n}=${r.setting}${r.unit ?? ''}`;
  };
  log(`database: ${source}; ${names.map(show).join(', ')}`);
  log(`client: node ${process.version}, node-postgres pool as the owner (max ${maxClients}; the raw postings are the owner's), ${cpus().length} CPUs shared by client and server`);
}

async function createBenchSchema(owner: pg.Pool, nAccounts: number) {
  await owner.query(`
    drop schema if exists bench cascade;
    create schema bench;

    -- pgbench's TPC-B tables (bigint balances; like pgbench: no FKs, no index on history)
    create table bench.branches (bid int primary key, bbalance bigint not null default 0, filler char(88));
    create table bench.tellers (tid int primary key, bid int not null, tbalance bigint not null default 0, filler char(84));
    create table bench.accounts (aid int primary key, bid int not null, abalance bigint not null default 0, filler char(84));
    create table bench.history (tid int, bid int, aid int, delta bigint, mtime timestamptz, filler char(22));

    -- the twin: the posting's bare writes (2 account UPDATEs + 1 INSERT), none of the ledger's rules
    create table bench.twin_accounts (
      id bigint primary key,
      balance bigint not null check (balance >= 0),
      version bigint not null default 0
    );
    create table bench.twin_postings (
      id bigint generated always as identity primary key,
      ref_id text not null,
      from_id bigint not null,
      to_id bigint not null,
      amount bigint not null,
      created_at timestamptz not null default now()
    );
    -- called like the cage's API functions (security definer, pinned search_path); updates in id order
    create function bench.twin_transfer(p_ref_id text, p_from bigint, p_to bigint, p_amount bigint) returns bigint
      language sql volatile security definer
      set search_path = pg_catalog, pg_temp
    as $$
      update bench.twin_accounts
         set balance = balance + case when id = p_from then -p_amount else p_amount end, version = version + 1
       where id = least(p_from, p_to);
      update bench.twin_accounts
         set balance = balance + case when id = p_from then -p_amount else p_amount end, version = version + 1
       where id = greatest(p_from, p_to);
      insert into bench.twin_postings (ref_id, from_id, to_id, amount) values (p_ref_id, p_from, p_to, p_amount)
      returning id;
    $$;

    grant usage on schema bench to poker_cage;
    grant select, insert, update on all tables in schema bench to poker_cage;
    grant execute on function bench.twin_transfer(text, bigint, bigint, bigint) to poker_cage;
  `);
  await owner.query('insert into bench.branches (bid) select g from generate_series(1, $1) g', [BRANCHES]);
  await owner.query('insert into bench.tellers (tid, bid) select g, (g - 1) / 10 + 1 from generate_series(1, $1) g', [TELLERS]);
  await owner.query(
    `insert into bench.accounts (aid, bid) select g, (g - 1) % ${BRANCHES} + 1 from generate_series(1, $1) g`, [nAccounts],
  );
  await owner.query('insert into bench.twin_accounts (id, balance) select g, $2 from generate_series(1, $1) g', [
    nAccounts, FUNDING.toString(),
  ]);
  await owner.query('vacuum analyze bench.branches, bench.tellers, bench.accounts, bench.twin_accounts');
}

interface Goal {
  label: string;
  /** the case measured and its baseline case */
  a: string;
  b: string;
  target: number;
}

function report(results: Map<string, number[]>, walPerUnit: Map<string, number[]>, rounds: number): number {
  const rates = (name: string) => results.get(name) ?? [];
  const med = (name: string) => median(rates(name));
  /** Median over rounds of the within-round ratio. */
  const ratio = (a: string, b: string) => median(rates(a).map((v, i) => v / rates(b)[i]!));

  log('\nmedian rates over rounds (units/s), and median within-round ratios');
  const rows: string[][] = [];
  for (const c of CLIENTS) {
    rows.push([
      `${c} client${c > 1 ? 's' : ''}`, fmtRate(med(`post@${c}`)), fmtRate(med(`tpcb@${c}`)), fmtRate(med(`twin@${c}`)),
      fmtRatio(ratio(`post@${c}`, `tpcb@${c}`)), fmtRatio(ratio(`post@${c}`, `twin@${c}`)), fmtRatio(ratio(`twin@${c}`, `tpcb@${c}`)),
    ]);
  }
  log(table(['clients', 'postings/s', 'TPC-B tps', 'twin/s', 'post/TPC-B', 'post/twin', 'twin/TPC-B'], rows));

  const g = GOAL_CLIENTS;
  const extra: string[][] = [
    ...BATCH_SIZES.map((s) => [
      `batch of ${s} @${g}`, fmtRate(med(`batch${s}@${g}`)), fmtRatio(ratio(`batch${s}@${g}`, `tpcb@${g}`)),
      fmtRatio(ratio(`batch${s}@${g}`, `post@${g}`)),
    ]),
    [`hot source @${g}`, fmtRate(med(`hot@${g}`)), fmtRatio(ratio(`hot@${g}`, `tpcb@${g}`)), fmtRatio(ratio(`hot@${g}`, `post@${g}`))],
  ];
  log('');
  log(table(['case', 'postings/s', 'x TPC-B', 'x single (uniform)'], extra));

  const wal = (name: string) => fmtRate(median(walPerUnit.get(name) ?? []));
  log('\nWAL written per unit (median bytes; every commit of this durable run waits for its WAL flush)');
  log(table(
    ['clients', 'posting', 'TPC-B txn', 'twin call'],
    CLIENTS.map((c) => [`${c}`, wal(`post@${c}`), wal(`tpcb@${c}`), wal(`twin@${c}`)]),
  ));
  log(`batched postings: ${BATCH_SIZES.map((s) => `${wal(`batch${s}@${g}`)} (batch of ${s})`).join(', ')}; hot source: ${wal(`hot@${g}`)}`);

  const goals: Goal[] = [
    { label: `single postings vs TPC-B @${g}`, a: `post@${g}`, b: `tpcb@${g}`, target: 2.0 },
    { label: `single postings vs twin @${g}`, a: `post@${g}`, b: `twin@${g}`, target: 0.7 },
    ...BATCH_SIZES.map((s) => ({ label: `batch-${s} postings vs TPC-B @${g}`, a: `batch${s}@${g}`, b: `tpcb@${g}`, target: 20 })),
    { label: `hot source vs uniform @${g}`, a: `hot@${g}`, b: `post@${g}`, target: 0.8 },
  ];
  log(`\nfinal: medians over ${rounds} rounds (units/s) and the median of the within-round ratios`);
  log(table(
    ['goal', 'median/s', 'baseline/s', 'ratio', 'target', 'result'],
    goals.map((x) => {
      const r = ratio(x.a, x.b);
      return [x.label, fmtRate(med(x.a)), fmtRate(med(x.b)), fmtRatio(r), `>= ${x.target.toFixed(1)}x`, r >= x.target ? 'PASS' : 'MISS'];
    }),
  ));
  return 0;
}

/** One TPC-B transaction (pgbench's): an account, a teller and a branch updated, a history row, one commit. */
async function tpcbTransaction(client: pg.PoolClient, nAccounts: number): Promise<number> {
  const aid = randInt(1, nAccounts);
  const tid = randInt(1, TELLERS);
  const bid = randInt(1, BRANCHES);
  const delta = String(randInt(-5000, 5000));
  await client.query('begin');
  try {
    await client.query('update bench.accounts set abalance = abalance + $1 where aid = $2', [delta, aid]);
    await client.query('update bench.tellers set tbalance = tbalance + $1 where tid = $2', [delta, tid]);
    await client.query('update bench.branches set bbalance = bbalance + $1 where bid = $2', [delta, bid]);
    await client.query(
      'insert into bench.history (tid, bid, aid, delta, mtime) values ($1, $2, $3, $4, current_timestamp)',
      [tid, bid, aid, delta],
    );
    await client.query('commit');
  } catch (err) {
    await client.query('rollback').catch(() => undefined);
    throw err;
  }
  return 1;
}

/** The cases: raw postings, TPC-B and the twin at each client count, batches and a hot account at GOAL_CLIENTS. */
function ledgerCases(users: bigint[], grantSource: bigint, nAccounts: number, ref: (tag: string) => string, counter: { created: number }): Case[] {
  const pair = () => randomPair(users);
  const transfer = (tag: string): Movement => randomTransfer(users, ref(tag));
  // the twin's accounts are numbered 1..n like the positions of the user accounts
  const twinIndex = new Map(users.map((id, i) => [id, i + 1]));
  const twinId = (id: bigint) => twinIndex.get(id)!;
  const posted = (status: string) => {
    if (status !== 'created') throw new Error(`a posting came back ${status}`);
    counter.created++;
    return 1;
  };

  const cases: Case[] = [];
  for (const c of CLIENTS) {
    cases.push({
      name: `post@${c}`, clients: c, unit: 'postings',
      op: async (client) => {
        await postRandomTransfer(client, users, ref('u')); // the case bench/cage.ts takes as its baseline
        counter.created++;
        return 1;
      },
    });
    cases.push({
      name: `tpcb@${c}`, clients: c, unit: 'TPC-B txns',
      op: (client) => tpcbTransaction(client, nAccounts),
    });
    cases.push({
      name: `twin@${c}`, clients: c, unit: 'twin calls',
      op: async (client) => {
        const [from, to] = pair();
        await client.query('select bench.twin_transfer($1, $2, $3, $4)', [
          ref('t'), twinId(from), twinId(to), String(randInt(1, 1000)),
        ]);
        return 1;
      },
    });
  }
  for (const size of BATCH_SIZES) {
    cases.push({
      name: `batch${size}@${GOAL_CLIENTS}`, clients: GOAL_CLIENTS, unit: 'postings',
      op: async (client) => {
        const ms = Array.from({ length: size }, () => transfer(`b${size}`));
        const res = await postMovements(client, ms);
        for (const r of res) posted(r.status);
        return res.length;
      },
    });
  }
  cases.push({
    name: `hot@${GOAL_CLIENTS}`, clients: GOAL_CLIENTS, unit: 'postings',
    op: async (client) => {
      const to = users[randInt(0, users.length - 1)]!;
      const amount = BigInt(randInt(1, 1000));
      return posted((await postMovement(client, {
        refId: ref('h'), kind: 'grant', moneyKind: 'play', accounts: [grantSource, to], amounts: [-amount, amount],
      })).status);
    },
  });

  return cases;
}

/** A warm-up and `rounds` measured rounds of every case (order rotated), each case's rate and WAL bytes per unit. */
async function runRounds(cases: Case[], clients: pg.PoolClient[], owner: pg.Pool, rounds: number, seconds: number) {
  const results = new Map<string, number[]>(cases.map((c) => [c.name, []]));
  const walPerUnit = new Map<string, number[]>(cases.map((c) => [c.name, []]));
  const lsn = async () => (await owner.query<{ l: string }>('select pg_current_wal_lsn()::text as l')).rows[0]!.l;
  const runRound = async (round: number, secs: number, record: boolean) => {
    const order = cases.map((_, i) => cases[(i + round) % cases.length]!);
    const line: string[] = [];
    for (const c of order) {
      const before = await lsn();
      const r = await timed(c.clients, secs, (w) => c.op(clients[w]!, w));
      const wal = (await owner.query<{ b: string }>('select pg_wal_lsn_diff(pg_current_wal_lsn(), $1)::text as b', [before])).rows[0]!.b;
      if (record) {
        results.get(c.name)!.push(r.perSecond);
        walPerUnit.get(c.name)!.push(Number(wal) / r.units);
      }
      line.push(`${c.name} ${fmtRate(r.perSecond)}`);
    }
    log(`${record ? `round ${round + 1}/${rounds}` : 'warm-up'}: ${line.join(', ')}`);
  };
  await runRound(0, Math.min(1, seconds), false);
  for (let r = 0; r < rounds; r++) await runRound(r, seconds, true);
  return { results, walPerUnit };
}

/** The journal holds exactly the postings that came back 'created', and the audit is empty; true when not. */
async function checkJournal(owner: pg.Pool, cage: pg.Pool, run: string, created: number): Promise<boolean> {
  const entries = (await owner.query<{ n: bigint }>(
    'select count(*) as n from cage.cage_entries where ref_id like $1', [`bench:${run}:%`],
  )).rows[0]!.n;
  const journalOk = entries === BigInt(created);
  log(`\njournal: ${entries.toLocaleString('en-US')} entries carry this run's ref_ids; ${created.toLocaleString('en-US')} movements came back 'created'${journalOk ? '' : '  <- MISMATCH'}`);
  const auditStart = performance.now();
  // every posting here is a raw one by design (the ledger's own cost): the balance invariants
  // apply, the provenance check (which business step justified it) does not
  const violations = (await audit(cage)).filter((v) => v.invariant !== 'provenance');
  if (violations.length) {
    log(`audit: ${violations.length} violation(s):`);
    for (const v of violations.slice(0, 20)) log(`  ${v.invariant} ${v.subject} ${JSON.stringify(v.detail)}`);
  } else {
    log(`audit: empty (0 violations, ${((performance.now() - auditStart) / 1000).toFixed(1)} s)`);
  }
  return violations.length > 0 || !journalOk;
}
