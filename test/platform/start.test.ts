// The real `npm start` path: `node server/main.ts` as a child process, on ephemeral ports, with its
// own embedded PostgreSQL in a fresh data directory (or a test database through DATABASE_URL).
// Clean stop on SIGINT, restart keeping the data, takeover of an orphaned postgres, refusal to boot.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { ed25519 } from '@noble/curves/ed25519.js';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { createOwnerPool, createRolePool } from '../../server/db/pools.ts';
import { balanceOf, fund, userAccount } from '../helpers/cage.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { freePort } from '../helpers/ports.ts';
import { QUIET_CRON } from '../helpers/platform.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const START_TIMEOUT = 30_000;
const STOP_TIMEOUT = 20_000;

interface Started {
  proc: ChildProcess;
  stdout: string;
  stderr: string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const children: Started[] = [];
const tempDirs: string[] = [];
const dataDirs: string[] = [];

/** `npm run admin:create -- --email <email>` with only `env` (and ADMIN_PASSWORD): its exit code and output. */
function createAdmin(env: Record<string, string>, email: string): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['server/cli/create-admin.ts', '--email', email], {
      cwd: ROOT, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ADMIN_PASSWORD: 'a-long-enough-password', ...env }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (err += c));
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

function spawnMain(env: Record<string, string>, args: string[] = []): Started {
  const proc = spawn(process.execPath, ['server/main.ts', ...args], {
    cwd: ROOT,
    // only what we set: nothing of the test runner's own environment (DATABASE_URL, ports) leaks in
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LOG_LEVEL: 'warn', CAGE_AUDIT_CRON: QUIET_CRON, CAGE_RAKE_RECONCILE_CRON: QUIET_CRON, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const started: Started = {
    proc,
    stdout: '',
    stderr: '',
    exit: new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal }))),
  };
  proc.stdout!.on('data', (chunk) => (started.stdout += chunk));
  proc.stderr!.on('data', (chunk) => (started.stderr += chunk));
  children.push(started);
  return started;
}

const running = (s: Started) => s.proc.exitCode === null && s.proc.signalCode === null;

function alive(pid: number) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until<T>(what: string, fn: () => T | undefined | Promise<T | undefined>, timeoutMs: number, child?: Started): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value !== undefined) return value;
    if (child && !running(child)) {
      throw new Error(`${what}: the child exited (${child.proc.exitCode ?? child.proc.signalCode})\nstdout:\n${child.stdout}\nstderr:\n${child.stderr}`);
    }
    if (Date.now() > deadline) {
      throw new Error(`${what}: not within ${timeoutMs} ms${child ? `\nstdout:\n${child.stdout}\nstderr:\n${child.stderr}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The `role  url` lines main prints once every role runs. */
function printedLines(child: Started): Record<string, string> {
  const lines: Record<string, string> = {};
  for (const line of child.stdout.split('\n')) {
    const match = /^(cage|admin|worker|postgres|auth|game|chain-bank|chain|betting|web) +(\S.*)$/.exec(line);
    if (match) lines[match[1]!] = match[2]!;
  }
  return lines;
}

async function waitForLines(child: Started, roles: string[]) {
  return until(`printed lines for ${roles.join(', ')}`, () => {
    const lines = printedLines(child);
    return roles.every((r) => r in lines) ? lines : undefined;
  }, START_TIMEOUT, child);
}

async function waitForExit(child: Started, timeoutMs = STOP_TIMEOUT) {
  const timeout = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), timeoutMs).unref());
  return Promise.race([child.exit, timeout]);
}

async function stopWith(child: Started, signal: NodeJS.Signals) {
  child.proc.kill(signal);
  return waitForExit(child);
}

async function expectHealthy(url: string) {
  expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  expect(Number(new URL(url).port)).toBeGreaterThan(0);
  const res = await fetch(`${url}/health`);
  expect(res.status).toBe(200);
  const body = await res.json() as { audit?: unknown; chain?: unknown };
  // the admin role's also shows the audit's liveness (issue 31), the chain bank's its chain (issue 32)
  expect(body).toEqual({
    ok: true, latency: expect.any(Number),
    ...(body.audit === undefined ? {} : { audit: expect.objectContaining({ stale: false }) }),
    ...(body.chain === undefined ? {} : { chain: expect.objectContaining({ reachable: true }) }),
  });
}

async function postmasterPid(dataDir: string) {
  return until('postmaster.pid', async () => {
    const text = await readFile(path.join(dataDir, 'postmaster.pid'), 'utf8').catch(() => '');
    const pid = Number(text.split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  }, START_TIMEOUT);
}

/** Pino lines at warn or above: a clean start and stop has none. */
const warnings = (child: Started) =>
  child.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { level: number; msg: string }).filter((l) => l.level >= 40);

async function tempDir() {
  const dir = await mkdtemp(path.join(tmpdir(), 'poker-start-test-'));
  // as root the embedded postgres runs as the `postgres` user, who must reach the data directory
  await chmod(dir, 0o755);
  tempDirs.push(dir);
  return dir;
}

// A failed test must not leave its platform to the next one: stop it as a user would, then harder.
afterEach(async () => {
  for (const child of children.filter(running)) {
    if ((await stopWith(child, 'SIGINT')) === 'timeout') child.proc.kill('SIGKILL');
  }
});

afterAll(async () => {
  for (const child of children) if (running(child)) child.proc.kill('SIGKILL');
  await Promise.all(children.map((c) => waitForExit(c, 5000)));
  // a postgres one of our children left behind (only ours: found through our data directories)
  for (const dir of dataDirs) {
    const text = await readFile(path.join(dir, 'postmaster.pid'), 'utf8').catch(() => '');
    const pid = Number(text.split('\n')[0]);
    if (Number.isInteger(pid) && pid > 0 && alive(pid)) {
      process.kill(pid, 'SIGINT');
      await until('orphan stopped', () => (alive(pid) ? undefined : true), 10_000).catch(() => process.kill(pid, 'SIGKILL'));
    }
  }
  await Promise.all(tempDirs.map((d) => rm(d, { recursive: true, force: true })));
});

describe('with its embedded PostgreSQL', () => {
  let dataDir: string;
  let env: Record<string, string>;
  let ownerUrl: string;
  let seeded: { account: bigint; migrations: unknown[]; repeatables: unknown[] };

  const bookState = async (pool: pg.Pool) => ({
    migrations: (await pool.query('select name, checksum, applied_at from poker_migrate.migrations order by name')).rows,
    repeatables: (await pool.query('select hash, applied_at from poker_migrate.repeatables')).rows,
  });

  beforeAll(async () => {
    dataDir = path.join(await tempDir(), 'pg');
    dataDirs.push(dataDir);
    const pgPort = await freePort();
    env = { PG_DATA_DIR: dataDir, PG_PORT: String(pgPort), PORT: '0', GAME_PORT: '0', CAGE_PORT: '0', ADMIN_PORT: '0', BETTING_PORT: '0', CHAIN_BANK_PORT: '0', WEB_PORT: '0' };
    ownerUrl = `postgres://postgres:postgres@127.0.0.1:${pgPort}/postgres`;
  });

  test('a fresh data directory: prints the bound URLs, serves /health, stops cleanly on SIGINT', async () => {
    expect(existsSync(dataDir)).toBe(false);
    const child = spawnMain(env);
    const lines = await waitForLines(child, ['auth', 'game', 'cage', 'chain-bank', 'chain', 'admin', 'worker', 'betting', 'web', 'postgres']);
    expect(Object.keys(lines).sort()).toEqual(['admin', 'auth', 'betting', 'cage', 'chain', 'chain-bank', 'game', 'postgres', 'web', 'worker']);
    await expectHealthy(lines.web!);
    // the web client's page, and its proxy reaching the game role
    expect((await fetch(`${lines.web}/`)).headers.get('content-type')).toMatch(/^text\/html/);
    expect((await fetch(`${lines.web}/api/gw/game/api/tables`)).status).toBe(200);
    await expectHealthy(lines['chain-bank']!);
    // the local chain answers JSON-RPC
    const rpc = await fetch(lines.chain!, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }) });
    expect(((await rpc.json()) as { result: string }).result).toMatch(/^0x/);
    await expectHealthy(lines.betting!);
    await expectHealthy(lines.cage!);
    await expectHealthy(lines.admin!);
    expect(lines.worker).toBe('running (no HTTP)');
    // the password never reaches the terminal
    expect(lines.postgres).toBe(`postgres://postgres:***@127.0.0.1:${env.PG_PORT}/postgres`);
    // the signing keys (no variable set): generated beside the data directory, 0600, said where,
    // and their public halves pinned as the owner (issue 31)
    expect(child.stdout).toContain(`keys     ${dataDir}.keys (receipt.key, jwt.key, dealer.key, mail.pem: 0600, their public halves pinned by the owner)\n`);
    const pinnedNow = createOwnerPool(ownerUrl, 1);
    try {
      for (const name of ['receipt', 'jwt'] as const) {
        const file = path.join(`${dataDir}.keys`, `${name}.key`);
        expect(((await stat(file)).mode & 0o777).toString(8)).toBe('600');
        const publicKey = Buffer.from(ed25519.getPublicKey(Buffer.from((await readFile(file, 'utf8')).trim(), 'hex')));
        const { rows } = await pinnedNow.query('select retired_at from cage.pinned_keys($1) where public_key = $2', [name, publicKey]);
        expect(rows).toEqual([{ retired_at: null }]);
      }
    } finally {
      await pinnedNow.end();
    }

    const pid = await postmasterPid(dataDir);
    expect(alive(pid)).toBe(true);

    // money in the books, to find again after the restart
    const cage = createRolePool(ownerUrl, 'poker_cage', { max: 1 });
    const owner = createOwnerPool(ownerUrl, 1);
    try {
      const account = (await userAccount(owner)).id;
      await fund(owner, account, 123n);
      seeded = { account, ...(await bookState(owner)) };
      expect(seeded.migrations.length).toBeGreaterThan(0);
      expect(seeded.repeatables).toHaveLength(1);
    } finally {
      await cage.end();
      await owner.end();
    }

    expect(await stopWith(child, 'SIGINT')).toEqual({ code: 0, signal: null });
    expect(alive(pid)).toBe(false);
    // a clean shutdown removes its lock file
    expect(existsSync(path.join(dataDir, 'postmaster.pid'))).toBe(false);
    expect(warnings(child)).toEqual([]);
    expect(child.stderr).toBe('');
  });

  test('a restart on the same data directory keeps the data and applies no migration again', async () => {
    const child = spawnMain(env);
    const lines = await waitForLines(child, ['auth', 'game', 'cage', 'chain-bank', 'chain', 'admin', 'worker', 'betting', 'postgres']);
    await expectHealthy(lines.cage!);
    const pid = await postmasterPid(dataDir);

    // an admin is created against the running platform's database (the data directory is in use)
    const admin = await createAdmin({ PG_DATA_DIR: dataDir, PG_PORT: env.PG_PORT! }, 'ops-while-running@example.com');
    expect(admin).toMatchObject({ code: 0, out: expect.stringMatching(/^admin ops-while-running@example\.com created: /) });

    const cage = createRolePool(ownerUrl, 'poker_cage', { max: 1 });
    const owner = createOwnerPool(ownerUrl, 1);
    try {
      expect((await owner.query("select count(*)::int as n from auth_private.credentials where email = 'ops-while-running@example.com'")).rows).toEqual([{ n: 1 }]);
      expect(await balanceOf(cage, seeded.account)).toBe(123n);
      const state = await bookState(owner);
      expect(state.migrations).toEqual(seeded.migrations);
      expect(state.repeatables).toEqual(seeded.repeatables);
    } finally {
      await cage.end();
      await owner.end();
    }

    expect(await stopWith(child, 'SIGTERM')).toEqual({ code: 0, signal: null });
    expect(alive(pid)).toBe(false);
    expect(existsSync(path.join(dataDir, 'postmaster.pid'))).toBe(false);
  });

  test('a SIGKILLed node leaves its postgres running; the next start stops that orphan and takes over', async () => {
    const first = spawnMain(env);
    await waitForLines(first, ['auth', 'game', 'cage', 'admin', 'worker', 'postgres']);
    const orphan = await postmasterPid(dataDir);

    expect(await stopWith(first, 'SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    expect(alive(orphan)).toBe(true);

    const second = spawnMain(env);
    const lines = await waitForLines(second, ['auth', 'game', 'cage', 'admin', 'worker', 'postgres']);
    const pid = await postmasterPid(dataDir);
    expect(pid).not.toBe(orphan);
    expect(alive(orphan)).toBe(false);
    await expectHealthy(lines.cage!);
    await expectHealthy(lines.admin!);
    const cage = createRolePool(ownerUrl, 'poker_cage', { max: 1 });
    try {
      expect(await balanceOf(cage, seeded.account)).toBe(123n);
    } finally {
      await cage.end();
    }

    expect(await stopWith(second, 'SIGINT')).toEqual({ code: 0, signal: null });
    expect(alive(pid)).toBe(false);
    expect(existsSync(path.join(dataDir, 'postmaster.pid'))).toBe(false);
  });

  test('a second start on a data directory in use is refused and leaves the running one alone', async () => {
    const first = spawnMain(env);
    const lines = await waitForLines(first, ['auth', 'game', 'cage', 'admin', 'worker', 'postgres']);
    const pid = await postmasterPid(dataDir);

    const second = spawnMain({ ...env, PG_PORT: String(await freePort()) });
    expect(await waitForExit(second)).toEqual({ code: 1, signal: null });
    expect(second.stdout).toMatch(/is in use: its postgres \(pid \d+\) belongs to a running node/);
    expect(alive(pid)).toBe(true);
    await expectHealthy(lines.cage!);

    expect(await stopWith(first, 'SIGINT')).toEqual({ code: 0, signal: null });
    expect(alive(pid)).toBe(false);
  });

  test('a stale postmaster.pid naming some other live process: that process is never signalled', async () => {
    // after a reboot or a container restart the old postgres pid may belong to anything
    const bystander = spawn('sleep', ['60'], { stdio: 'ignore' });
    const pidFile = path.join(dataDir, 'postmaster.pid');
    try {
      await writeFile(pidFile, `${bystander.pid}\n${dataDir}\n`);
      const child = spawnMain(env);
      // postgres itself judges the lock file: it refuses while the pid is a process it may signal,
      // and takes the file over when it may not (a bystander of another user, e.g. ours under root)
      const started = await until('started or refused', () => {
        if (!running(child)) return 'refused';
        return 'postgres' in printedLines(child) ? 'started' : undefined;
      }, START_TIMEOUT);
      if (started === 'refused') {
        expect(await child.exit).toEqual({ code: 1, signal: null });
        expect(child.stdout).toMatch(/lock file \\"postmaster.pid\\" already exists/);
      } else {
        await expectHealthy(printedLines(child).cage!);
        expect(await stopWith(child, 'SIGINT')).toEqual({ code: 0, signal: null });
      }
      expect(bystander.exitCode).toBeNull();
      expect(bystander.signalCode).toBeNull();
      expect(alive(bystander.pid!)).toBe(true);
    } finally {
      bystander.kill('SIGKILL');
      await rm(pidFile, { force: true });
    }
  });

  test('SIGINT while the platform is still starting stops it, postgres included', async () => {
    expect(existsSync(path.join(dataDir, 'postmaster.pid'))).toBe(false);
    const child = spawnMain(env);
    // the postmaster is up; migrations and roles are still to come
    const pid = await postmasterPid(dataDir);
    child.proc.kill('SIGINT');
    expect(await waitForExit(child)).toEqual({ code: 0, signal: null });
    expect(alive(pid)).toBe(false);
    expect(existsSync(path.join(dataDir, 'postmaster.pid'))).toBe(false);
  });
});

describe('with DATABASE_URL', () => {
  let db: TestDatabase;
  let env: Record<string, string>;
  let unusedDataDir: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    unusedDataDir = path.join(await tempDir(), 'never');
    env = { DATABASE_URL: db.url, PG_DATA_DIR: unusedDataDir, PG_PORT: String(await freePort()), PORT: '0', GAME_PORT: '0', CAGE_PORT: '0', ADMIN_PORT: '0', BETTING_PORT: '0', CHAIN_BANK_PORT: '0', WEB_PORT: '0' };
  });

  afterAll(async () => {
    await db?.drop();
  });

  const connectionsBy = async () =>
    (await db.owner.query<{ name: string }>(
      "select distinct application_name as name from pg_stat_activity where datname = current_database() and application_name in ('auth', 'game', 'cage', 'chain-bank', 'admin', 'worker', 'betting') order by 1",
    )).rows.map((r) => r.name);

  test('starts no embedded postgres and creates no data directory', async () => {
    const child = spawnMain(env);
    const lines = await waitForLines(child, ['auth', 'game', 'cage', 'chain-bank', 'chain', 'admin', 'worker', 'betting', 'web']);
    await expectHealthy(lines.cage!);
    await expectHealthy(lines.admin!);
    // the betting role runs no timer (its sweep is the worker's periodic job): its /health is its first work
    await expectHealthy(lines.betting!);
    expect(Object.keys(printedLines(child)).sort()).toEqual(['admin', 'auth', 'betting', 'cage', 'chain', 'chain-bank', 'game', 'web', 'worker']);
    expect(existsSync(unusedDataDir)).toBe(false);
    // each role's pool connects when it first works: waited for (the web role has no database connection)
    const expected = ['admin', 'auth', 'betting', 'cage', 'chain-bank', 'game', 'worker'];
    await until('a connection of every role', async () => {
      const seen = await connectionsBy();
      return seen.length === expected.length ? seen : undefined;
    }, START_TIMEOUT, child);
    expect(await connectionsBy()).toEqual(expected);

    expect(await stopWith(child, 'SIGINT')).toEqual({ code: 0, signal: null });
    expect(existsSync(unusedDataDir)).toBe(false);
    expect(warnings(child)).toEqual([]);
  });

  test('--role cage runs only the cage', async () => {
    const child = spawnMain(env, ['--role', 'cage']);
    const lines = await waitForLines(child, ['cage']);
    await expectHealthy(lines.cage!);
    expect(Object.keys(printedLines(child))).toEqual(['cage']);
    expect(await connectionsBy()).toEqual(['cage']);
    expect(await stopWith(child, 'SIGINT')).toEqual({ code: 0, signal: null });
  });
});

describe('refusing to boot', () => {
  let unusedDataDir: string;
  beforeAll(async () => {
    unusedDataDir = path.join(await tempDir(), 'never');
  });

  async function refused(env: Record<string, string>, args: string[] = []) {
    const child = spawnMain({ PG_DATA_DIR: unusedDataDir, ...env }, args);
    const exit = await waitForExit(child);
    expect(exit).toEqual({ code: 78, signal: null });
    expect(child.stdout).toBe('');
    expect(existsSync(unusedDataDir)).toBe(false);
    return child.stderr.split('\n').filter(Boolean);
  }

  test('every bad variable at once, each on its own line, exit 78', async () => {
    const lines = await refused({ ENABLE_TEST_AUTH: 'true', NODE_ENV: 'production', CAGE_PORT: 'abc' });
    expect(lines[0]).toBe('refusing to boot: invalid configuration:');
    expect(lines.slice(1).sort()).toEqual([
      '  - CAGE_PORT: Invalid input: expected number, received NaN',
      "  - DB_ROLE_SECRET: required in production (the service logins' passwords are derived from it)",
      '  - ENABLE_TEST_AUTH: true is only allowed when NODE_ENV is development or test (NODE_ENV is production)',
    ]);
  });

  test.each([
    [{ ENABLE_TEST_AUTH: 'true', NODE_ENV: 'production', DB_ROLE_SECRET: 'd'.repeat(16) }, /^ {2}- ENABLE_TEST_AUTH: true is only allowed when NODE_ENV is development or test/],
    [{ NODE_ENV: 'production' }, /^ {2}- DB_ROLE_SECRET: required in production/],
    [{ CAGE_PORT: 'abc' }, /^ {2}- CAGE_PORT: /],
    [{ ADMIN_PORT: '70000' }, /^ {2}- ADMIN_PORT: /],
    [{ SERVICE_KEY: 'short' }, /^ {2}- SERVICE_KEY: must be at least 16 characters$/],
  ])('%j is refused with one line naming it', async (env, line) => {
    const lines = await refused(env);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toBe('refusing to boot: invalid configuration:');
    expect(lines[1]).toMatch(line);
  });

  test('--role nope is refused', async () => {
    const lines = await refused({}, ['--role', 'nope']);
    expect(lines[0]).toBe('refusing to boot: invalid configuration:');
    expect(lines[1]).toMatch(/^ {2}- --role: unknown role 'nope'/);
  });
});
