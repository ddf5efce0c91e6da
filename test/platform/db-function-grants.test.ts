// Which database role may execute which function: the checked-in allowlist
// (db/policies/function-grants.json) against what the database says (has_function_privilege), for
// every poker_* role and every function outside PostgreSQL's own schemas. A grant added in a policy
// without the allowlist, or an allowlisted grant that went missing, fails here. graphile-worker's
// own functions are one entry, `graphile_worker.*`: the worker runs jobs with all of them.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

const ALLOWLIST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../db/policies/function-grants.json');

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

/** role -> sorted list of the functions it may execute (graphile_worker's folded into one entry). */
async function granted(): Promise<Record<string, string[]>> {
  const { rows } = await db.owner.query<{ role: string; fn: string }>(`
    select r.rolname as role, p.oid::regprocedure::text as fn
      from pg_proc p
      join pg_namespace n on n.oid = p.pronamespace
     cross join pg_roles r
     where r.rolname like 'poker\\_%'
       and n.nspname not in ('pg_catalog', 'information_schema') and n.nspname not like 'pg\\_%'
       and has_function_privilege(r.oid, p.oid, 'execute')`);
  const byRole: Record<string, Set<string>> = {};
  for (const r of rows) (byRole[r.role] ??= new Set()).add(r.fn.startsWith('graphile_worker.') ? 'graphile_worker.*' : r.fn);
  return Object.fromEntries(Object.entries(byRole).map(([role, fns]) => [role, [...fns].sort()]));
}

test('every role executes exactly the functions the allowlist names', async () => {
  const allowlist = JSON.parse(await readFile(ALLOWLIST, 'utf8')) as Record<string, string[]>;
  const actual = await granted();
  const roles = [...new Set([...Object.keys(allowlist), ...Object.keys(actual)])].filter((r) => !r.startsWith('//')).sort();
  for (const role of roles) {
    expect([role, actual[role] ?? []]).toEqual([role, [...(allowlist[role] ?? [])].sort()]);
  }
});

test('no service role may call the generic ledger functions; only the owner runs them', async () => {
  const generic = ['cage.post_movement(text,text,text,bigint[],bigint[],jsonb)', 'cage.post_movements(jsonb)', 'cage.rebuild_projection()', 'cage.ensure_account(text,uuid,text,text)'];
  const { rows } = await db.owner.query<{ role: string; fn: string }>(
    `select r.rolname as role, f as fn from pg_roles r cross join unnest($1::text[]) f
      where r.rolname like 'poker\\_%' and has_function_privilege(r.oid, f::regprocedure, 'execute')`,
    [generic],
  );
  expect(rows).toEqual([]);
});
