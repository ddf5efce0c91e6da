// The refusal registry (db/refusals.json) is the one declaration of every business refusal: the SQL
// refuse() of each domain reads it (poker_refusals.codes, loaded by the migrator), and the HTTP
// mapping reads the same file. This fails when any refusal raised anywhere in db/ is not in it.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readRefusals } from '../../server/db/migrate.ts';
import { codeOfSentence, REFUSALS, toErrorBody } from '../../server/http/errors.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

const DB = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../db');
const DOMAIN_OF: Record<string, string> = { cage_private: 'cage', game_private: 'game', claims_private: 'claims', auth_private: 'auth', betting_private: 'betting', bank_private: 'bank' };
const CLASS_OF: Record<string, string> = { cage: 'CG', game: 'GM', claims: 'CL', auth: 'AU', betting: 'BT', bank: 'BK' };

async function sqlFiles(dir: string): Promise<{ file: string; text: string }[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  const files = entries.filter((e) => e.isFile() && e.name.endsWith('.sql')).map((e) => path.join(e.parentPath, e.name));
  return Promise.all(files.map(async (file) => ({ file: path.relative(DB, file), text: await readFile(file, 'utf8') })));
}

/** The literal codes a `case ... then 'a' else 'b' end` (or a plain literal) can evaluate to. */
function outcomes(expression: string): string[] {
  const literal = /^\s*'([^']+)'/.exec(expression);
  if (literal) return [literal[1]!];
  return [...expression.matchAll(/\b(?:then|else)\s+'([^']+)'/g)].map((m) => m[1]!);
}

/** The codes a `*_problem` function returns (its `then 'code'` branches), for refuse(v_problem). */
function problemCodes(text: string, fn: string): string[] {
  const start = text.indexOf(`function ${fn}(`);
  if (start < 0) return [];
  const body = text.slice(start, text.indexOf('$$;', text.indexOf('$$', start) + 2));
  return [...body.matchAll(/\bthen\s+'([a-z_ ]+)'/g)].map((m) => m[1]!);
}

/** Every (domain, code) the SQL in db/ can refuse with, and every custom SQLSTATE raised directly. */
async function raisedInDb() {
  const files = [...(await sqlFiles(path.join(DB, 'functions'))), ...(await sqlFiles(path.join(DB, 'migrations')))];
  const all = files.map((f) => f.text).join('\n');
  // refuse(v_problem): the cage's problems are a movement's or a buy-in's, the game's a buy-in's or a
  // seat credit's (game_private.seat_credit_problem, which the cage's deposit judges too)
  const dynamic: Record<string, Record<string, string[]>> = {
    cage: { v_problem: [...problemCodes(all, 'cage_private.movement_problem'), ...problemCodes(all, 'game_private.buy_in_problem'), ...problemCodes(all, 'game_private.seat_credit_problem')] },
    game: { v_problem: [...problemCodes(all, 'game_private.buy_in_problem'), ...problemCodes(all, 'game_private.seat_credit_problem')] },
  };
  const refusals: { domain: string; code: string; where: string }[] = [];
  const states: { state: string; where: string }[] = [];
  for (const { file, text } of files) {
    for (const m of text.matchAll(/\b(cage_private|game_private|claims_private|auth_private|betting_private|bank_private)\.refuse\(\s*((?:case[\s\S]*?end)|'[^']*'|v_\w+)/g)) {
      const domain = DOMAIN_OF[m[1]!]!;
      const arg = m[2]!;
      const codes = arg.startsWith('v_') ? dynamic[domain]?.[arg] ?? [`<unknown variable ${arg}>`] : outcomes(arg);
      for (const code of codes) refusals.push({ domain, code, where: file });
    }
    for (const m of text.matchAll(/errcode\s*=\s*'((?:CG|GM|CL|AU|BT|BK)[A-Z0-9]{3})'/g)) states.push({ state: m[1]!, where: file });
  }
  return { refusals, states };
}

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

test('every refusal the SQL raises, by code or by SQLSTATE, is declared in the registry', async () => {
  const registry = await readRefusals();
  const { refusals, states } = await raisedInDb();
  expect(refusals.length).toBeGreaterThan(150);
  const missing = refusals.filter((r) => !registry[r.domain]?.[r.code]).map((r) => `${r.domain}:${r.code} (${r.where})`);
  expect([...new Set(missing)]).toEqual([]);
  const declared = new Set(Object.values(registry).flatMap((codes) => Object.values(codes).map(([state]) => state)));
  expect(states.filter((s) => !declared.has(s.state)).map((s) => `${s.state} (${s.where})`)).toEqual([]);
});

test('the registry is well formed: one SQLSTATE per code, of its domain\'s class, a 4xx or 5xx status; HTTP maps each', async () => {
  const registry = await readRefusals();
  const seen = new Map<string, string>();
  for (const [domain, codes] of Object.entries(registry)) {
    for (const [code, [state, status]] of Object.entries(codes)) {
      expect([code, state]).toEqual([code, expect.stringMatching(new RegExp(`^${CLASS_OF[domain]}[A-Z0-9]{3}$`))]);
      expect([code, status >= 400 && status <= 599]).toEqual([code, true]);
      expect([state, seen.get(state)]).toEqual([state, undefined]);
      seen.set(state, code);
      // a code the spec gives as a sentence keeps it as the error, with a code beside it
      expect(toErrorBody({ code: state, message: code })).toEqual({ status, body: { error: code, ...(/\s/.test(code) ? { code: codeOfSentence(code) } : {}) } });
      if (/\s/.test(code)) expect(codeOfSentence(code)).toMatch(/^[a-z][a-z0-9_]*$/);
      expect(REFUSALS.get(state)).toEqual({ domain, code, status });
    }
  }
});

test('the database holds the registry, and each domain refuses with exactly its SQLSTATE; an unregistered code is a loud bug', async () => {
  const registry = await readRefusals();
  const { rows } = await db.owner.query<{ domain: string; code: string; sqlstate: string; http_status: number }>(
    'select domain, code, sqlstate, http_status from poker_refusals.codes order by domain, code',
  );
  const expected = Object.entries(registry).flatMap(([domain, codes]) =>
    Object.entries(codes).map(([code, [sqlstate, http_status]]) => ({ domain, code, sqlstate, http_status })))
    .sort((a, b) => (a.domain + a.code < b.domain + b.code ? -1 : 1));
  expect(rows).toEqual(expected);
  for (const r of rows) {
    const schema = Object.entries(DOMAIN_OF).find(([, d]) => d === r.domain)![0];
    await expect(db.owner.query(`select ${schema}.refuse($1, 'detail')`, [r.code])).rejects.toMatchObject({ code: r.sqlstate, message: r.code });
  }
  await expect(db.owner.query("select cage_private.refuse('no_such_refusal')")).rejects.toMatchObject({ code: 'XX000', message: 'unregistered cage refusal no_such_refusal' });
  // and over HTTP that is a 500, not a 4xx a client could be blamed for
  expect(toErrorBody({ code: 'XX000', message: 'unregistered cage refusal no_such_refusal' }).status).toBe(500);
});
