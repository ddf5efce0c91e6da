// The ledger benchmark's audit cases (issue 22): the periodic audit (cage.audit_since_checkpoint)
// against a journal of growing length, with the full audit (cage.audit) as the contrast. A database of
// their own on the same server (the posting cases leave raw movements the audit names), migrated like
// any other. Its history is written set-based as the owner (generate_series: a grant source paying
// user accounts, kind 'claim', which needs no business record), with the projection kept equal; then
// a minute's worth of postings goes through cage.post_movements and the periodic audit is timed over
// them. Its time must not grow with the journal.
import pg from 'pg';
import { audit, auditSinceCheckpoint, postMovements, type Movement } from '../../server/cage/ledger.ts';
import { migrate } from '../../server/db/migrate.ts';
import { createOwnerPool } from '../../server/db/pools.ts';
import { withDatabase } from '../../test/helpers/url.ts';
import { median, table } from './harness.ts';

export interface HistoryFlags {
  /** journal lengths, in entries */
  sizes: number[];
  /** postings made after each checkpoint (a minute's worth) */
  minute: number;
  /** the full audit is run up to this length, and estimated beyond it */
  fullUpTo: number;
}

const USERS = 1000;
const CHUNK = 1_000_000;
const REPEATS = 5;

interface Books {
  owner: pg.Pool;
  users: bigint[];
  source: bigint;
  ref: (tag: string) => string;
}

interface Row {
  entries: number;
  seed: number;
  periodic: number;
  idle: number;
  read: string;
  full: number | null;
}

const secs = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

async function timedMs<T>(f: () => Promise<T>): Promise<[T, number]> {
  const t = performance.now();
  const r = await f();
  return [r, performance.now() - t];
}

/**
 * Appends `count` entries of one play chip each from the grant source to the users, their postings
 * and their projection, as the owner, set-based; then takes the checkpoint over them as a clean run
 * would leave it (the marks of the accounts they touch, the last entry's id): the periodic audit
 * that follows checks every projection against those marks, and the full audit reads them all.
 */
async function seed(books: Books, count: number) {
  const { owner, source } = books;
  // the play gate's trigger (a per-entry plpgsql call) has nothing to do for these entries (no user
  // account of theirs is frozen); ref ids in increasing order keep their unique index's inserts at
  // its right edge
  await owner.query('alter table cage.cage_entries disable trigger tg_cage_entries__play_gate');
  for (let done = 0; done < count; done += CHUNK) {
    await owner.query(`
      with e as (
        insert into cage.cage_entries (ref_id, kind, money_kind, accounts, amounts)
        select 'history:' || lpad(nextval('bench_history.refs')::text, 12, '0'), 'claim', 'play', array[$1::bigint, u.id], array[-1, 1]::bigint[]
          from generate_series(1, $2::int) g
          join bench_history.users u on u.i = g % $3
        returning id, ref_id, accounts
      ),
      l as (
        insert into cage.cage_ledger (entry_id, account_id, money_kind, kind, ref_id, amount)
        select e.id, x.account, 'play', 'claim', e.ref_id, x.amount
          from e cross join lateral (values (e.accounts[1], -1), (e.accounts[2], 1)) x (account, amount)
      ),
      c as (select e.accounts[2] as id, count(*) as n from e group by 1),
      m as (
        insert into cage_private.audit_account_marks as m (account_id, journal, postings)
        select c.id, c.n, c.n from c union all select $1, -sum(c.n), sum(c.n) from c
        on conflict (account_id) do update set journal = m.journal + excluded.journal, postings = m.postings + excluded.postings
      )
      update cage.cage_accounts a set balance = a.balance + c.n, version = a.version + c.n
        from c where a.id = c.id`, [source, Math.min(CHUNK, count - done), USERS]);
  }
  await owner.query('alter table cage.cage_entries enable trigger tg_cage_entries__play_gate');
  await owner.query('update cage_private.audit_checkpoint set entry_id = (select max(id) from cage.cage_entries)');
  // vacuumed now, as autovacuum would soon after such a load: not while the audit is timed
  await owner.query('vacuum analyze cage.cage_entries, cage.cage_ledger');
}

/** A minute's worth of user-to-user postings through cage.post_movements, in batches of 100. */
async function postMinute(books: Books, count: number) {
  const { users, ref } = books;
  for (let done = 0; done < count; done += 100) {
    const ms: Movement[] = Array.from({ length: Math.min(100, count - done) }, (_, i) => {
      const a = users[(done + i) % users.length]!;
      const b = users[(done + i * 7 + 1) % users.length]!;
      return { refId: ref('minute'), kind: 'claim', moneyKind: 'play', accounts: a === b ? [a, users[(done + i + 1) % users.length]!] : [a, b], amounts: [-1n, 1n] };
    });
    const res = await postMovements(books.owner, ms);
    const bad = res.filter((r) => r.status !== 'created');
    if (bad.length) throw new Error(`a posting came back ${JSON.stringify(bad[0])}`);
  }
}

async function setUp(url: string, log: (m: string) => void): Promise<Books> {
  await migrate(url, { log: () => undefined });
  const owner = createOwnerPool(url, 4);
  await owner.query(`create schema bench_history; create sequence bench_history.refs;
    create table bench_history.users (i int primary key, id bigint not null)`);
  await owner.query(`insert into bench_history.users (i, id)
    select g - 1, cage.ensure_account('user', gen_random_uuid(), null, 'play') from generate_series(1, $1) g`, [USERS]);
  const users = (await owner.query<{ id: bigint }>('select id from bench_history.users order by i')).rows.map((r) => r.id);
  const source = (await owner.query<{ id: bigint }>("select cage.ensure_account('grant_source', null, null, 'play') as id")).rows[0]!.id;
  let n = 0;
  log(`audit cases: a database of their own, ${USERS} user accounts`);
  return { owner, users, source, ref: (tag) => `bench-audit:${tag}:${++n}` };
}

const mustBeClean = (what: string, vs: unknown[]) => {
  if (vs.length) throw new Error(`${what} found ${vs.length} violation(s): ${JSON.stringify(vs.slice(0, 3))}`);
};

/** One journal length: seed up to it, catch the checkpoint up, post a minute, time the audits. */
async function measure(books: Books, entries: number, flags: HistoryFlags, log: (m: string) => void): Promise<Row> {
  const { owner } = books;
  const have = Number((await owner.query<{ n: bigint }>('select count(*) as n from cage.cage_entries')).rows[0]!.n);
  mustBeClean('the periodic audit before seeding', await auditSinceCheckpoint(owner));
  const [, seedMs] = await timedMs(() => seed(books, Math.max(0, entries - have)));
  // a few minutes, each audited as it closes; the median run is quoted (the machine is shared)
  const runs: number[] = [];
  for (let i = 0; i < REPEATS; i++) {
    await postMinute(books, flags.minute);
    const [found, ms] = await timedMs(() => auditSinceCheckpoint(owner));
    mustBeClean('the periodic audit', found);
    runs.push(ms);
  }
  const periodic = median(runs);
  const { rows } = await owner.query<{ entries_read: bigint; postings_read: bigint }>(
    'select entries_read, postings_read from cage_private.audit_checkpoint',
  );
  const [, idle] = await timedMs(() => auditSinceCheckpoint(owner));
  let full: number | null = null;
  if (entries <= flags.fullUpTo) {
    const [vs, ms] = await timedMs(() => audit(owner));
    mustBeClean('the full audit', vs);
    full = ms;
  }
  const total = entries + REPEATS * flags.minute;
  log(`  ${total.toLocaleString('en-US')} entries: seeded in ${secs(seedMs)}, periodic ${secs(periodic)}, full ${full === null ? 'skipped' : secs(full)}`);
  return {
    entries: total, seed: seedMs, periodic, idle, full,
    read: `${rows[0]!.entries_read} entries, ${rows[0]!.postings_read} postings`,
  };
}

function report(rows: Row[], flags: HistoryFlags, log: (m: string) => void) {
  const base = rows[0]!;
  // the full audit reads the whole journal: beyond --full-up-to, estimated in proportion to its length
  const perEntry = rows.filter((r) => r.full !== null).map((r) => r.full! / r.entries).at(-1);
  log(`\nthe audit against the journal's length (at each length, ${REPEATS} times: ${flags.minute.toLocaleString('en-US')} postings through cage.post_movements, then the periodic audit; the median run)`);
  log(table(
    ['journal entries', 'periodic audit', 'x at first length', 'read', 'periodic, nothing new', 'full audit', 'full / periodic'],
    rows.map((r) => {
      const full = r.full ?? (perEntry === undefined ? NaN : perEntry * r.entries);
      return [
        r.entries.toLocaleString('en-US'), secs(r.periodic), `${(r.periodic / base.periodic).toFixed(2)}x`, r.read, secs(r.idle),
        Number.isFinite(full) ? `${secs(full)}${r.full === null ? ' (estimated)' : ''}` : '-', Number.isFinite(full) ? `${(full / r.periodic).toFixed(0)}x` : '-',
      ];
    }),
  ));
  const last = rows.at(-1)!;
  const ratio = last.periodic / base.periodic;
  // flat: a tenfold journal may cost the periodic audit no more than half again (noise of a shared machine)
  const flat = ratio <= 1.5;
  log(`periodic audit at ${last.entries.toLocaleString('en-US')} vs ${base.entries.toLocaleString('en-US')} entries: ${ratio.toFixed(2)}x (goal <= 1.50x: does not grow with the journal) ${flat ? 'PASS' : 'MISS'}`);
  return flat;
}

/** Runs the audit cases in a database of their own on the server of `url`; false when the goal is missed. */
export async function auditHistoryCases(url: string, flags: HistoryFlags, log: (m: string) => void): Promise<boolean> {
  const name = `bench_audit_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`create database ${name}`);
  const books = await setUp(withDatabase(url, name), log);
  try {
    const rows: Row[] = [];
    for (const size of [...flags.sizes].sort((a, b) => a - b)) rows.push(await measure(books, size, flags, log));
    return report(rows, flags, log);
  } finally {
    await books.owner.end();
    await admin.query(`drop database ${name} with (force)`).catch(() => undefined);
    await admin.end();
  }
}
