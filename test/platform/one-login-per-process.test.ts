// One credential per login (issue 31, "the rule": a credential is one login's password or ONE secret
// from the environment). A split deployment: `npm run migrate` runs apart as the owner and prints each
// login's password; a role process is given its own login's password alone (DB_LOGIN_ONLY=true,
// DB_PASSWORD_POKER_CAGE, a DATABASE_URL of host, port and database), never migrates, never connects
// as the owner. The attack: everything in that process's environment, tried as any other login's
// password, as the secret the passwords are derived from, and as the owner's password, logs in
// nowhere but as its own login.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ed25519 } from '@noble/curves/ed25519.js';
import pg from 'pg';
import { pinAsOwner } from '../../server/crypto/pins.ts';
import { DEV_DB_ROLE_SECRET, passwordVariable, rolePassword, SERVICE_LOGINS, type ServiceLogin } from '../../server/db/roles.ts';
import { serverUrl } from '../helpers/db.ts';
import { withDatabase } from '../helpers/url.ts';
import { QUIET_CRON } from '../helpers/platform.ts';
import { freePort } from '../helpers/ports.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const START_TIMEOUT = 30_000;
const BASE_ENV = { PATH: process.env.PATH ?? '/usr/bin:/bin' };

interface Child { proc: ChildProcess; stdout: string; stderr: string; exit: Promise<number | null> }
const children: Child[] = [];

function spawnNode(args: string[], env: Record<string, string>): Child {
  // only what we set: nothing of the test runner's environment reaches the child
  const proc = spawn(process.execPath, args, { cwd: ROOT, env: { ...BASE_ENV, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const child: Child = { proc, stdout: '', stderr: '', exit: new Promise((resolve) => proc.once('exit', (code) => resolve(code))) };
  proc.stdout!.on('data', (c) => (child.stdout += c));
  proc.stderr!.on('data', (c) => (child.stderr += c));
  children.push(child);
  return child;
}

async function until<T>(what: string, fn: () => T | undefined, child: Child): Promise<T> {
  const deadline = Date.now() + START_TIMEOUT;
  for (;;) {
    const value = fn();
    if (value !== undefined) return value;
    if (child.proc.exitCode !== null || Date.now() > deadline) {
      throw new Error(`${what}: not reached (exit ${child.proc.exitCode})\nstdout:\n${child.stdout}\nstderr:\n${child.stderr}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A fresh, empty database of this file's own: `npm run migrate` migrates it. */
let db: { name: string; url: string; owner: pg.Pool };
let bareUrl: string;
let ownerUser: string;
let ownerPassword: string;
const unusedDataDir = path.join(tmpdir(), `one-login-${randomBytes(6).toString('hex')}`, 'never');
const receiptSeed = randomBytes(32);
let passwords: Record<ServiceLogin, string>;

async function asServer(sql: string) {
  const admin = new pg.Client({ connectionString: serverUrl() });
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end();
  }
}

beforeAll(async () => {
  const name = `t_${randomBytes(6).toString('hex')}`;
  await asServer(`create database ${name}`);
  db = { name, url: withDatabase(serverUrl(), name), owner: new pg.Pool({ connectionString: withDatabase(serverUrl(), name), max: 2, application_name: 'test-owner' }) };
  const url = new URL(db.url);
  ownerUser = decodeURIComponent(url.username);
  ownerPassword = decodeURIComponent(url.password);
  url.username = '';
  url.password = '';
  bareUrl = url.toString();
});

afterAll(async () => {
  for (const c of children) if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGKILL');
  await db?.owner.end();
  if (db) await asServer(`drop database if exists ${db.name} with (force)`);
  // the development key files a role outside production keeps beside the (never created) data directory
  await rm(path.dirname(unusedDataDir), { recursive: true, force: true });
});

/** Logs in as `user` with `password` on the test database: 'ok' or the SQLSTATE of the refusal. */
async function logIn(user: string, password: string): Promise<string> {
  const url = new URL(bareUrl);
  url.username = user;
  url.password = password;
  const client = new pg.Client({ connectionString: url.toString() });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return 'ok';
  } catch (err) {
    return (err as { code?: string }).code ?? String(err);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * The thief's attack with one process's environment: every value (and the credentials of a URL in
 * it) tried as the password of every login and of the owner, and as the secret every login's
 * password is derived from. The logins it reaches.
 */
async function reachable(environ: string[]): Promise<string[]> {
  const values = [...new Set(environ.map((e) => e.slice(e.indexOf('=') + 1)))];
  const tries: [string, string][] = [];
  for (const value of values) {
    for (const user of [...SERVICE_LOGINS, ownerUser]) tries.push([user, value]);
    for (const login of SERVICE_LOGINS) tries.push([login, rolePassword(login, value)]);
    if (/^postgres(ql)?:/.test(value) && URL.canParse(value)) {
      const url = new URL(value);
      if (url.username) tries.push([decodeURIComponent(url.username), decodeURIComponent(url.password)]);
    }
  }
  const reached = new Set<string>();
  for (const [user, password] of tries) {
    if (reached.has(user)) continue;
    const result = await logIn(user, password);
    if (result === 'ok') reached.add(user);
    else expect([user, result]).toEqual([user, '28P01']);
  }
  return [...reached].sort();
}

/** The cage process's environment of a split deployment (production), its one login's password `password`. */
function cageEnv(password: string | undefined, extra: Record<string, string> = {}): Record<string, string> {
  return {
    NODE_ENV: 'production', LOG_LEVEL: 'info', DB_LOGIN_ONLY: 'true', DATABASE_URL: bareUrl,
    ...(password === undefined ? {} : { DB_PASSWORD_POKER_CAGE: password }),
    CAGE_RECEIPT_KEY: receiptSeed.toString('hex'), SERVICE_KEY: randomBytes(24).toString('hex'),
    AUTH_JWKS_URL: 'http://127.0.0.1:9/.well-known/jwks.json', AUTH_BASE_URL: 'http://127.0.0.1:9',
    CAGE_PORT: '0', PG_DATA_DIR: unusedDataDir, CAGE_AUDIT_CRON: QUIET_CRON, CAGE_RAKE_RECONCILE_CRON: QUIET_CRON,
    ...extra,
  };
}

test('npm run migrate, as the owner, migrates a fresh database and prints each login\'s password to stdout only', async () => {
  const child = spawnNode(['--no-warnings=ExperimentalWarning', 'server/cli/migrate.ts', '--print-passwords'], { DATABASE_URL: db.url });
  expect(await child.exit).toBe(0);
  expect((await db.owner.query<{ n: number }>("select count(*)::int as n from pg_namespace where nspname in ('cage', 'game', 'auth')")).rows[0]!.n).toBe(3);
  // an operator's act in production (npm run ops -- keys pin receipt ...): the cage's receipt key
  await pinAsOwner(db.owner, 'receipt', ed25519.getPublicKey(receiptSeed));
  const lines = child.stdout.trim().split('\n');
  expect(lines.map((l) => l.split('=')[0])).toEqual(SERVICE_LOGINS.map(passwordVariable));
  passwords = Object.fromEntries(lines.map((l, i) => [SERVICE_LOGINS[i]!, l.slice(l.indexOf('=') + 1)])) as Record<ServiceLogin, string>;
  // the development secret's passwords (this cluster's logins were set with it), each one logging in
  for (const login of SERVICE_LOGINS) {
    expect(passwords[login]).toBe(rolePassword(login, DEV_DB_ROLE_SECRET));
    expect([login, await logIn(login, passwords[login])]).toEqual([login, 'ok']);
    expect(child.stderr).not.toContain(passwords[login]);
  }
  expect(child.stderr).toContain('migrated:');
});

test.each([
  ['an unknown argument', ['--print-password'], {}, 2, /^usage: npm run migrate/],
  ['DB_LOGIN_ONLY', [], { DB_LOGIN_ONLY: 'true' }, 78, /^refusing to migrate: /],
  ['production without DB_ROLE_SECRET', [], { NODE_ENV: 'production' }, 78, /^refusing to migrate: invalid configuration/],
])('npm run migrate with %s refuses, printing no password', async (_what, args, env, code, message) => {
  const child = spawnNode(['--no-warnings=ExperimentalWarning', 'server/cli/migrate.ts', ...args], { DATABASE_URL: db.url, ...env });
  expect(await child.exit).toBe(code);
  expect(child.stdout).toBe('');
  expect(child.stderr).toMatch(message);
});

test('a cage process with only its login\'s password serves; its environment logs in as no other login nor the owner', async () => {
  expect(passwords).toBeDefined();
  const child = spawnNode(['server/main.ts', '--role', 'cage'], cageEnv(passwords.poker_cage));
  const cageUrl = await until('the cage line', () => /^cage +(\S+)$/m.exec(child.stdout)?.[1], child);
  const health = await fetch(`${cageUrl}/health`);
  expect(health.status).toBe(200);
  expect(await health.json()).toEqual({ ok: true, latency: expect.any(Number) });

  // it did not migrate and never acted as the owner: every connection of this database it made is poker_cage's
  const logs = child.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { msg: string });
  expect(logs.map((l) => l.msg)).toContain('login-only: no migration, no owner connection');
  expect(logs.map((l) => l.msg)).not.toContain('database migrated');
  const { rows } = await db.owner.query<{ user: string }>(
    "select distinct usename::text as user from pg_stat_activity where datname = current_database() and application_name in ('cage', 'login-check')",
  );
  expect(rows.map((r) => r.user)).toEqual(['poker_cage']);
  expect(existsSync(unusedDataDir)).toBe(false);

  // the thief's view: the process's real environment, as /proc shows it
  const environ = (await readFile(`/proc/${child.proc.pid}/environ`, 'utf8')).split('\0').filter(Boolean);
  const names = environ.map((e) => e.slice(0, e.indexOf('=')));
  const values = [...new Set(environ.map((e) => e.slice(e.indexOf('=') + 1)))];
  expect(names).not.toContain('DB_ROLE_SECRET');
  expect(names.filter((n) => n.startsWith('DB_PASSWORD_'))).toEqual(['DB_PASSWORD_POKER_CAGE']);
  for (const value of values) {
    expect(value).not.toBe(ownerPassword);
    // a URL in it carries no credentials (the test cluster's owner password is the word `postgres`)
    if (/^postgres(ql)?:/.test(value)) expect([new URL(value).username, new URL(value).password]).toEqual(['', '']);
    for (const login of SERVICE_LOGINS.filter((l) => l !== 'poker_cage')) expect(value).not.toContain(passwords[login]);
  }
  // the attack: every value as any login's password, as the secret of the derivation, as the owner's
  expect(await reachable(environ)).toEqual(['poker_cage']);

  child.proc.kill('SIGINT');
  expect(await child.exit).toBe(0);
});

test.each([
  ['production', {}],
  // outside production too: no own-URL listing, no harness pool as the owner (there is none)
  ['test', { ENABLE_TEST_AUTH: 'true' }],
])('a game process (NODE_ENV=%s) with only poker_game\'s password serves: its presence and pool log in as poker_game, never as the owner', async (nodeEnv, extra) => {
  expect(passwords).toBeDefined();
  // the operators' acts in production: the dealer key pinned, the process's URL listed
  const dealerSeed = randomBytes(32), port = await freePort(), publicUrl = `http://127.0.0.1:${port}`;
  await db.owner.query("select game_private.pin_dealer_key($1, 'owner')", [Buffer.from(ed25519.getPublicKey(dealerSeed)).toString('hex')]);
  await db.owner.query('insert into game.process_urls (url) values ($1)', [publicUrl]);
  const child = spawnNode(['server/main.ts', '--role', 'game'], {
    ...cageEnv(undefined), DB_PASSWORD_POKER_GAME: passwords.poker_game, GAME_DEALER_KEY: dealerSeed.toString('hex'),
    GAME_PORT: String(port), GAME_PUBLIC_URL: publicUrl, BANK_URL: 'http://127.0.0.1:9', NODE_ENV: nodeEnv, ...extra,
  });
  const gameUrl = await until('the game line', () => /^game +(\S+)$/m.exec(child.stdout)?.[1], child);
  expect((await fetch(`${gameUrl}/health`)).status).toBe(200);
  const { rows } = await db.owner.query<{ user: string }>(
    "select distinct usename::text as user from pg_stat_activity where datname = current_database() and application_name in ('game', 'game-presence', 'login-check')",
  );
  expect(rows.map((r) => r.user)).toEqual(['poker_game']);
  const { rows: registered } = await db.owner.query<{ n: number }>('select count(*)::int as n from game.game_processes where url = $1', [publicUrl]);
  expect(registered[0]!.n).toBe(1);
  const environ = (await readFile(`/proc/${child.proc.pid}/environ`, 'utf8')).split('\0').filter(Boolean);
  expect(await reachable(environ)).toEqual(['poker_game']);
  child.proc.kill('SIGINT');
  expect(await child.exit).toBe(0);
});

test('every role starts login-only, each on its own login, with no owner connection (one process holding all seven lines)', async () => {
  expect(passwords).toBeDefined();
  // the operators' acts: the auth role's JWT key and the cage's receipt key (pinned above), the dealer key
  const jwtSeed = randomBytes(32), dealerSeed = randomBytes(32);
  await pinAsOwner(db.owner, 'jwt', ed25519.getPublicKey(jwtSeed));
  await db.owner.query("select game_private.pin_dealer_key($1, 'owner')", [Buffer.from(ed25519.getPublicKey(dealerSeed)).toString('hex')]);
  const lines = Object.fromEntries(SERVICE_LOGINS.map((l) => [passwordVariable(l), passwords[l]]));
  const child = spawnNode(['server/main.ts'], {
    ...cageEnv(undefined), ...lines, NODE_ENV: 'test', AUTH_JWT_KEY: jwtSeed.toString('hex'), GAME_DEALER_KEY: dealerSeed.toString('hex'),
    PORT: '0', GAME_PORT: '0', ADMIN_PORT: '0', BETTING_PORT: '0', CHAIN_BANK_PORT: '0', WEB_PORT: '0',
    AUTH_JWKS_URL: '', AUTH_BASE_URL: '',
  });
  const roles = ['auth', 'game', 'cage', 'chain-bank', 'admin', 'worker', 'betting', 'web'];
  const printed = await until('every role line', () => {
    const found = Object.fromEntries([...child.stdout.matchAll(/^(\S+) +(\S.*)$/gm)].filter((m) => roles.includes(m[1]!)).map((m) => [m[1]!, m[2]!]));
    return roles.every((r) => r in found) ? found : undefined;
  }, child);
  for (const role of ['auth', 'cage', 'admin', 'betting']) expect([role, (await fetch(`${printed[role]}/health`)).status]).toEqual([role, 200]);
  // every connection to this database but the test's own is a service login's: none is the owner's
  // (its URL carries no credentials: an owner connection could not even log in)
  const { rows } = await db.owner.query<{ user: string }>(
    "select distinct usename::text as user from pg_stat_activity where datname = current_database() and application_name <> 'test-owner' order by 1",
  );
  expect(rows.length).toBeGreaterThan(0);
  expect(rows.map((r) => r.user).filter((u) => !(SERVICE_LOGINS as readonly string[]).includes(u))).toEqual([]);
  child.proc.kill('SIGINT');
  expect(await child.exit).toBe(0);
});

test('the same attack on a process started as today (the owner\'s DATABASE_URL) reaches the owner: the all-in-one start holds the root', async () => {
  const child = spawnNode(['server/main.ts', '--role', 'cage'], {
    LOG_LEVEL: 'warn', DATABASE_URL: db.url, CAGE_RECEIPT_KEY: receiptSeed.toString('hex'), CAGE_PORT: '0', PG_DATA_DIR: unusedDataDir,
    CAGE_AUDIT_CRON: QUIET_CRON, CAGE_RAKE_RECONCILE_CRON: QUIET_CRON,
  });
  await until('the cage line', () => /^cage +(\S+)$/m.exec(child.stdout)?.[1], child);
  const environ = (await readFile(`/proc/${child.proc.pid}/environ`, 'utf8')).split('\0').filter(Boolean);
  expect(await reachable(environ)).toContain(ownerUser);
  child.proc.kill('SIGINT');
  expect(await child.exit).toBe(0);
});

test('without its login\'s password it refuses to boot, naming the variable', async () => {
  const child = spawnNode(['server/main.ts', '--role', 'cage'], cageEnv(undefined));
  expect(await child.exit).toBe(78);
  expect(child.stderr.split('\n').filter(Boolean)).toEqual([
    'refusing to boot: invalid configuration:',
    '  - DB_PASSWORD_POKER_CAGE: required with DB_LOGIN_ONLY=true (the cage role connects as poker_cage)',
  ]);
});

test.each([
  ['a wrong password', () => randomBytes(32).toString('base64url')],
  ['another login\'s password', () => passwords.poker_game],
])('with %s it refuses to start, naming the variable', async (_what, password) => {
  const child = spawnNode(['server/main.ts', '--role', 'cage'], cageEnv(password()));
  expect(await child.exit).toBe(1);
  expect(child.stdout).toContain('DB_PASSWORD_POKER_CAGE does not log in as poker_cage');
  expect(child.stdout).not.toMatch(/^cage +/m);
});

test.each([
  ['the owner\'s URL', () => ({ DATABASE_URL: db.url }), '  - DATABASE_URL: must carry no user nor password with DB_LOGIN_ONLY=true'],
  ['DB_ROLE_SECRET', () => ({ DB_ROLE_SECRET: DEV_DB_ROLE_SECRET }), '  - DB_ROLE_SECRET: must be unset with DB_LOGIN_ONLY=true'],
  ['no DATABASE_URL', () => ({ DATABASE_URL: '' }), '  - DATABASE_URL: required with DB_LOGIN_ONLY=true'],
])('a login-only process given %s refuses to boot', async (_what, extra, line) => {
  const child = spawnNode(['server/main.ts', '--role', 'cage'], cageEnv(passwords.poker_cage, extra()));
  expect(await child.exit).toBe(78);
  const lines = child.stderr.split('\n').filter(Boolean);
  expect(lines[0]).toBe('refusing to boot: invalid configuration:');
  expect(lines.slice(1).some((l) => l.startsWith(line))).toBe(true);
});
