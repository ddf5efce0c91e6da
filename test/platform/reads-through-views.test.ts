// Reads through views (issue 32): TypeScript under server/, tasks/ and scripts/ reads views (or
// stable SQL functions), never a base table. The test migrates a database, asks it which relations
// of our schemas are base tables (pg_class relkind 'r' or 'p'), parses every TypeScript file, and
// scans its string literals (the SQL it sends) for `from` or `join` of a schema-qualified relation.
// A read of a base table fails, naming the file and the table, unless ALLOWED lists that pair; an
// ALLOWED pair no longer read fails too, so the list only shrinks. This is the rule that keeps a new
// base-table read out: there is no other list to update.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SCANNED = ['server', 'tasks', 'scripts'];

/**
 * Schemas that are not a domain's: the migrator's own bookkeeping (poker_migrate, poker_refusals,
 * read by server/db/migrate.ts as the owner) and graphile-worker's queue (its own tables, read by
 * the migrator and the worker's notify guard).
 */
const NOT_OURS = new Set(['poker_migrate', 'poker_refusals', 'graphile_worker']);

/**
 * The base-table reads still allowed, `file -> tables`. Each is in a file another part of issue 32
 * owns (the bank contract, betting's one boundary, the intent model), which moves it onto a view or
 * a function as it lands; the coordinator removes an entry with its read. Nothing is ever added here.
 */
const ALLOWED: Record<string, string[]> = {
  // empty since issue 32 landed whole: every read goes through a view
};

/** Views every scan must find read (the test is not vacuous: it sees the reads it is about). */
const KNOWN_VIEWS = [
  'game.seats', 'game.table_records', 'game.tournaments',
  // issue 32's (db/migrations/000051_reads_through_views.sql): each is read, or it goes
  'auth.user_records', 'auth.wallet_records',
  'bank.deployment_records', 'bank.deposit_records', 'bank.withdrawal_records', 'bank.tournament_payment_records', 'bank.vault_refund_records',
  'cage.deposit_records', 'cage.withdrawal_records', 'cage.custody_entry_records', 'cage.custody_dispute_records', 'cage.custody_release_records',
  'cage.receipt_records', 'cage.grant_records', 'cage.gas_withdrawal_records', 'cage.rake_reconciliation_records', 'cage.account_balances',
  'claims.section_records', 'game.agent_records', 'game.hand_records',
];

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

async function tsFiles(dir: string): Promise<string[]> {
  const entries = await readdir(path.join(ROOT, dir), { withFileTypes: true }).catch(() => []);
  const nested = await Promise.all(entries.map(async (e) => {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : tsFiles(rel);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [rel] : [];
  }));
  return nested.flat();
}

/** The text of every string literal and template piece of a TypeScript file (not its comments). */
function stringsOf(file: string, text: string): string[] {
  const out: string[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) out.push(node.text);
    else if (ts.isTemplateExpression(node)) {
      out.push(node.head.text);
      for (const span of node.templateSpans) {
        visit(span.expression);
        out.push(span.literal.text);
      }
      return;
    }
    ts.forEachChild(node, visit);
  };
  visit(ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true));
  return out;
}

/** `from` or `join` of a schema-qualified relation (quoted or not), not followed by a call's parenthesis. */
const READ = /\b(?:from|join)\s+"?([a-z_][a-z0-9_]*)"?\s*\.\s*"?([a-z_][a-z0-9_]*)(?![a-z0-9_])"?(?!\s*\()/gi;

/** file -> the schema-qualified relations its SQL reads (`from` or `join`, not a function call). */
async function readsOfSources(): Promise<Map<string, Set<string>>> {
  const reads = new Map<string, Set<string>>();
  const files = (await Promise.all(SCANNED.map(tsFiles))).flat().sort();
  for (const file of files) {
    for (const s of stringsOf(file, await readFile(path.join(ROOT, file), 'utf8'))) {
      for (const m of s.matchAll(READ)) {
        const rel = `${m[1]}.${m[2]}`.toLowerCase();
        (reads.get(file) ?? reads.set(file, new Set()).get(file)!).add(rel);
      }
    }
  }
  return reads;
}

test('TypeScript reads no base table of ours but the allowed pairs, and every allowed pair is still read', async () => {
  const { rows } = await db.owner.query<{ rel: string; kind: string }>(`
    select n.nspname || '.' || c.relname as rel, c.relkind::text as kind
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where c.relkind in ('r', 'p', 'v', 'm')
       and n.nspname not in ('pg_catalog', 'information_schema') and n.nspname not like 'pg\\_%'
       and n.nspname <> all($1)`, [[...NOT_OURS]]);
  const base = new Set(rows.filter((r) => r.kind === 'r' || r.kind === 'p').map((r) => r.rel));
  const views = new Set(rows.filter((r) => r.kind === 'v' || r.kind === 'm').map((r) => r.rel));
  expect(base.has('cage.cage_accounts')).toBe(true);
  for (const v of KNOWN_VIEWS) expect([v, views.has(v)]).toEqual([v, true]);

  const reads = await readsOfSources();
  const viewsRead = new Set([...reads.values()].flatMap((s) => [...s]).filter((r) => views.has(r)));
  for (const v of KNOWN_VIEWS) expect([v, viewsRead.has(v)]).toEqual([v, true]);

  const offending: string[] = [];
  const stale: string[] = [];
  for (const [file, rels] of reads) {
    for (const rel of rels) if (base.has(rel) && !(ALLOWED[file] ?? []).includes(rel)) offending.push(`${file} reads the base table ${rel}`);
  }
  for (const [file, rels] of Object.entries(ALLOWED)) {
    for (const rel of rels) if (!reads.get(file)?.has(rel)) stale.push(`${file} no longer reads ${rel}: remove it from ALLOWED`);
  }
  expect(offending).toEqual([]);
  expect(stale).toEqual([]);
});

test('the scan sees a base-table read in SQL and not in a comment or a function call', () => {
  const src = [
    "// select * from cage.cage_accounts (a comment)",
    "const a = 'select id from cage.cage_accounts where id = $1';",
    "const b = `select x from game.seats s join auth.users u on u.id = s.user_id where t = ${1}`;",
    "const c = 'select * from cage.audit()';",
  ].join('\n');
  const found = stringsOf('x.ts', src).flatMap((s) => [...s.matchAll(READ)].map((m) => `${m[1]}.${m[2]}`));
  expect(found).toEqual(['cage.cage_accounts', 'game.seats', 'auth.users']);
});

/**
 * The views the services read run with their owner's rights only where they narrow what a login
 * reads (db/functions/game/60_read_views.sql, reviewed in test/game/game-read-views.test.ts); every
 * other view a login is granted is security_invoker, and is granted only to logins that hold the
 * tables under it: no view widens what a login reads.
 */
const OWNER_VIEWS = [
  'game.seats', 'game.table_records', 'game.tournaments',
  // the one intent model (issue 32): every intent table, shown only under a live admin session
  // (its where clause), to operators who hold none of the tables
  'cage.intents',
  // a deposit as it stands: the bank's own intents, with whether a refund row exists (a yes or no
  // read of the journal or the payments, never their amounts or other users' rows beyond the intent's own)
  'cage.deposit_states', 'bank.deposit_states',
  // betting's one boundary (issue 32): the betting and cage logins lost the base tables; these views
  // are the columns they read (no login writes through them)
  'betting.market_records', 'betting.runner_pools', 'betting.bet_records', 'betting.stakes',
];

test('every view a login reads is security_invoker over tables that login holds, but the reviewed owner views', async () => {
  const { rows } = await db.owner.query<{ view: string; invoker: boolean; login: string; under: string[]; missing: string[] }>(`
    with views as (
      select c.oid, n.nspname || '.' || c.relname as view, coalesce(c.reloptions @> array['security_invoker=true'], false) as invoker
        from pg_class c join pg_namespace n on n.oid = c.relnamespace
       where c.relkind = 'v' and n.nspname not in ('pg_catalog', 'information_schema') and n.nspname not like 'pg\\_%'),
    under as (
      select distinct v.oid, d.refobjid
        from views v join pg_rewrite r on r.ev_class = v.oid
        join pg_depend d on d.classid = 'pg_rewrite'::regclass and d.objid = r.oid and d.refclassid = 'pg_class'::regclass
       where d.refobjid <> v.oid)
    select v.view, v.invoker, l.rolname as login,
           array(select u.refobjid::regclass::text from under u where u.oid = v.oid order by 1) as under,
           array(select u.refobjid::regclass::text from under u
                  where u.oid = v.oid and not has_table_privilege(l.oid, u.refobjid, 'select') order by 1) as missing
      from views v cross join pg_roles l
     where l.rolname like 'poker\\_%' and has_table_privilege(l.oid, v.oid, 'select')`);
  expect(rows.length).toBeGreaterThan(20);
  const unreviewed = rows.filter((r) => !r.invoker && !OWNER_VIEWS.includes(r.view)).map((r) => `${r.login} reads the owner's view ${r.view}`);
  const widening = rows.filter((r) => r.invoker && r.missing.length > 0).map((r) => `${r.login} is granted ${r.view} without ${r.missing.join(', ')}`);
  expect(unreviewed).toEqual([]);
  expect(widening).toEqual([]);
  // the checked views read real tables (the dependency query is not empty)
  expect(rows.find((r) => r.view === 'cage.custody_release_records')?.under).toEqual(['cage.custody_release_verdicts', 'cage.custody_releases']);
});
