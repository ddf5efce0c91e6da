// Where the live benchmark's roles run (bench/dealer.ts, the live case): in the benchmark's own
// main thread, or in child processes started the way `npm start` starts them
//   node --env-file-if-exists=.env [--import ./server/telemetry/register.ts] server/main.ts --role ...
// with or without the telemetry hook, all three roles in one process or the game role apart from
// one process running auth and cage (one game process or several, on the same database, the table
// lease deciding which of them runs a table); or, as the floor the others are measured against, no
// roles at all: a bare websocket server (live-floor.ts) in a child of its own, that the same bots
// play against with nothing durable behind it. Each child also gets `--inspect=127.0.0.1:0`, so the
// benchmark can profile it over a window (cpu-profile.ts); nothing attaches to it otherwise.
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../server/config/index.ts';
import type { Platform } from '../../server/platform.ts';
import { createLogger } from '../../server/telemetry/index.ts';
import { freePort } from '../../test/helpers/ports.ts';
import { remoteProfiler, selfProfiler, type Profiler } from './cpu-profile.ts';
import { Failures } from './platform.ts';
import { processCpuMs } from './proc-cpu.ts';

export const PLACEMENTS = ['in-process', 'start', 'start-no-hook', 'game-x1', 'game-x2', 'floor'] as const;
export type Placement = (typeof PLACEMENTS)[number];

export const PLACEMENT_LABELS: Record<Placement, string> = {
  'in-process': 'roles in the benchmark\'s thread',
  start: 'npm start (telemetry hook)',
  'start-no-hook': 'npm start without the hook',
  'game-x1': 'game apart, 1 process (hook)',
  'game-x2': 'game apart, 2 processes (hook)',
  floor: 'the floor (bare ws server, same bots)',
};

/** The floor is no product: no auth, no cage, no money; its `games` is the bare server, its `auth` and `cage` empty. */
export const isFloor = (p: Placement): p is 'floor' => p === 'floor';

/** What the roles' settings share, whichever way they run. */
export interface RoleSettings {
  databaseUrl: string;
  secret: string;
  issuer: string;
  serviceKey: string;
  handDelayMs: number;
  /** The worker role runs beside the `npm start` placements' roles, its periodic audit every minute. */
  audit?: boolean;
}

export interface RunningProcess {
  /** 'auth+game+cage', 'game 2', ... */
  name: string;
  /** Its pid ('self': the benchmark's process). */
  pid: number | 'self';
  profiler(): Promise<Profiler>;
}

export interface RunningRoles {
  placement: Placement;
  auth: string;
  cage: string;
  /** The game processes' base URLs: a table goes to games[index % games.length]. */
  games: string[];
  processes: RunningProcess[];
  /** The roles' warnings and errors (their log lines at warn and above). */
  log: Failures;
  /** CPU of the roles' processes (ms); for roles in this process, null (the caller subtracts the bots' thread). */
  cpuMs(): number | null;
  stop(): Promise<void>;
}

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** A roles' log line (pino JSON) counted as a warning or an error; DEALER_ROLES_LOG also gets it. */
function countLogLine(log: Failures, line: string) {
  if (process.env.DEALER_ROLES_LOG) appendFileSync(process.env.DEALER_ROLES_LOG, line.endsWith('\n') ? line : `${line}\n`);
  try {
    const o = JSON.parse(line) as Record<string, any>;
    const detail = JSON.stringify({ ...o, time: undefined, pid: undefined, hostname: undefined }).slice(0, 400);
    log.add(`${o.level >= 50 ? 'error' : 'warn'}: ${o.msg}`, detail);
  } catch {
    log.add('unparsed log line', line.slice(0, 400));
  }
}

const roleEnv = (s: RoleSettings) => ({
  NODE_ENV: 'test', LOG_LEVEL: 'warn', SERVICE_KEY: s.serviceKey, AUTH_SECRET: s.secret, AUTH_BASE_URL: s.issuer,
  ENABLE_TEST_AUTH: 'true', CAGE_AUDIT_CRON: s.audit ? '* * * * *' : '0 0 1 1 *', CAGE_RAKE_RECONCILE_CRON: '0 0 1 1 *', HAND_DELAY_MS: String(s.handDelayMs),
});

/** The roles in this process's main thread (as bench/cage.ts starts them), their log lines counted. */
async function inProcess(s: RoleSettings): Promise<RunningRoles> {
  const log = new Failures();
  const destination = { write: (line: string) => countLogLine(log, line) };
  process.env.GRAPHILE_ENV ??= 'development'; // Grafast reads it at import
  const { startPlatform } = await import('../../server/platform.ts');
  const platform: Platform = await startPlatform({
    config: loadConfig({ ...roleEnv(s), PORT: '0', GAME_PORT: '0', CAGE_PORT: '0' }),
    roles: ['auth', 'game', 'cage'],
    log: createLogger('warn', 'poker', destination),
    databaseUrl: s.databaseUrl,
  });
  const urlOf = (role: 'auth' | 'game' | 'cage') => platform.roles.find((r) => r.role === role)!.url!;
  let profiler: Profiler | undefined;
  return {
    placement: 'in-process', auth: urlOf('auth'), cage: urlOf('cage'), games: [urlOf('game')], log,
    processes: [{ name: 'auth+game+cage', pid: 'self', profiler: async () => (profiler ??= selfProfiler()) }],
    cpuMs: () => null,
    stop: async () => {
      await profiler?.close();
      await platform.stop();
    },
  };
}

interface Child {
  proc: ChildProcess;
  inspector: string;
  /** Lines of stderr that were not the inspector's banner, and the log lines (a crash's cause, for the report). */
  stderr: string[];
  exited: boolean;
}

/** What a child runs: `npm start`'s `server/main.ts --role ...` with or without the hook, or the floor's server. */
interface ChildScript {
  /** The script and its arguments. */
  script: string[];
  /** The names it prints with its URL once it listens (main.ts: each role's). */
  ready: string[];
  hook: boolean;
}

// the worker serves no URL (it prints none): the roles that do are the child's readiness
const rolesScript = (roles: string[], hook: boolean): ChildScript => ({ script: ['server/main.ts', ...roles.flatMap((r) => ['--role', r])], ready: roles.filter((r) => r !== 'worker'), hook });

/**
 * One child (an `npm start`-like one, or the floor's), its log lines counted; resolves once it
 * printed the URL of each name in `ready` (main.ts does after the roles listen) and its inspector's address.
 */
function startChild(name: string, run: ChildScript, env: Record<string, string>, log: Failures): Promise<Child> {
  const { ready: roles, hook } = run;
  const args = ['--env-file-if-exists=.env', ...(hook ? ['--import', './server/telemetry/register.ts'] : []), '--inspect=127.0.0.1:0', ...run.script];
  const proc = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const child: Child = { proc, inspector: '', stderr: [], exited: false };
  const listening = new Set<string>();
  return new Promise<Child>((resolve, reject) => {
    const ready = () => {
      if (child.inspector && roles.every((r) => listening.has(r))) resolve(child);
    };
    lines(proc.stdout!, (line) => {
      const role = /^(\w[\w-]*)\s+https?:\/\/\S+$/.exec(line);
      if (role) listening.add(role[1]!);
      else if (line.startsWith('{')) {
        countLogLine(log, line);
        child.stderr.push(line.slice(0, 2000));
      }
      // the start's banner: where the development keys are kept (not a log line)
      else if (line.trim() && !line.startsWith('keys ')) log.add(`${name}: stdout`, line.slice(0, 400));
      ready();
    });
    lines(proc.stderr!, (line) => {
      const inspector = /Debugger listening on (ws:\/\/\S+)/.exec(line);
      if (inspector) child.inspector = inspector[1]!;
      else if (line.trim() && !line.startsWith('For help, see') && !line.startsWith('Debugger attached')) child.stderr.push(line);
      ready();
    });
    proc.once('exit', (code, signal) => {
      child.exited = true;
      reject(new Error(`${name} (node ${args.join(' ')}) exited ${code ?? signal} before it was ready:\n${child.stderr.slice(-20).join('\n')}`));
    });
    setTimeout(() => reject(new Error(`${name} not ready after 120 s:\n${child.stderr.slice(-20).join('\n')}`)), 120_000).unref();
  });
}

function lines(stream: NodeJS.ReadableStream, onLine: (line: string) => void) {
  let rest = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    const parts = (rest + chunk).split('\n');
    rest = parts.pop()!;
    for (const l of parts) onLine(l);
  });
}

async function stopChild(child: Child) {
  if (child.exited) return;
  const exited = new Promise<void>((resolve) => child.proc.once('exit', () => resolve()));
  child.proc.kill('SIGTERM');
  const timer = setTimeout(() => child.proc.kill('SIGKILL'), 20_000);
  await exited;
  clearTimeout(timer);
}

/**
 * Children as `npm start` runs them: `start` and `start-no-hook` run auth, game and cage in one;
 * `game-x1` and `game-x2` run auth and cage in one and the game role in 1 or 2 others (the cage's
 * seat calls go to the first; each room hears its seats' changes through NOTIFY wherever they land).
 */
async function children(placement: Exclude<Placement, 'in-process' | 'floor'>, s: RoleSettings): Promise<RunningRoles> {
  const log = new Failures();
  const hook = placement !== 'start-no-hook';
  const gameCount = placement === 'game-x2' ? 2 : 1;
  const together = placement === 'start' || placement === 'start-no-hook';
  const [authPort = 0, cagePort = 0, ...gamePorts] = await Promise.all(Array.from({ length: 2 + gameCount }, () => freePort()));
  const url = (port: number) => `http://127.0.0.1:${port}`;
  const games = gamePorts.map(url);
  const base = {
    ...roleEnv(s), DATABASE_URL: s.databaseUrl, HOST: '127.0.0.1', PORT: String(authPort), CAGE_PORT: String(cagePort),
    GAME_PORT: String(gamePorts[0]), GAME_URL: games[0]!, GAME_PUBLIC_URL: games[0]!,
  };
  const specs: { name: string; roles: string[]; env: Record<string, string> }[] = together
    ? [s.audit ? { name: 'auth+game+cage+worker', roles: ['auth', 'game', 'cage', 'worker'], env: base } : { name: 'auth+game+cage', roles: ['auth', 'game', 'cage'], env: base }]
    : [
      { name: 'auth+cage', roles: ['auth', 'cage'], env: base },
      ...gamePorts.map((port, i) => ({
        name: `game ${i + 1}`, roles: ['game'],
        env: { ...base, GAME_PORT: String(port), GAME_PUBLIC_URL: url(port), BANK_URL: url(cagePort), AUTH_JWKS_URL: `${url(authPort)}/api/auth/jwks` },
      })),
    ];
  // all at once (each migrates at start, one after another under the migrator's lock): the game
  // processes reach the cage and the auth role's keys only when a player comes
  const settled = await Promise.allSettled(specs.map((spec) => startChild(spec.name, rolesScript(spec.roles, hook), spec.env, log)));
  const started = settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const failed = settled.find((r) => r.status === 'rejected');
  if (failed) {
    await Promise.all(started.map(stopChild));
    throw (failed as PromiseRejectedResult).reason;
  }
  for (const [i, c] of started.entries()) {
    c.proc.on('exit', (code, signal) => log.add(`error: ${specs[i]!.name} exited (${code ?? signal})`, c.stderr.slice(-10).join('\n')));
  }
  const profilers = new Map<number, Profiler>();
  return {
    placement, auth: url(authPort), cage: url(cagePort), games, log,
    processes: started.map((c, i) => ({
      name: specs[i]!.name, pid: c.proc.pid!,
      profiler: async () => profilers.get(i) ?? profilers.set(i, await remoteProfiler(c.inspector)).get(i)!,
    })),
    cpuMs: () => started.reduce((sum, c) => sum + processCpuMs(c.proc.pid!), 0),
    stop: async () => {
      for (const p of profilers.values()) await p.close();
      for (const c of started) c.proc.removeAllListeners('exit');
      await Promise.all(started.map(stopChild));
    },
  };
}

/**
 * The floor's bare server (live-floor.ts) in a child of its own, as the game role runs in `start`:
 * the bots in the benchmark's worker, the server in a process whose CPU /proc reads. It gets the
 * roles' HAND_DELAY_MS and nothing else of their settings (no database, no keys).
 */
async function floor(s: RoleSettings): Promise<RunningRoles> {
  const log = new Failures();
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = await startChild('floor', { script: ['bench/lib/live-floor.ts'], ready: ['floor'], hook: false }, { PORT: String(port), HAND_DELAY_MS: String(s.handDelayMs) }, log);
  child.proc.on('exit', (code, signal) => log.add(`error: floor exited (${code ?? signal})`, child.stderr.slice(-10).join('\n')));
  let profiler: Profiler | undefined;
  return {
    placement: 'floor', auth: '', cage: '', games: [url], log,
    processes: [{ name: 'floor', pid: child.proc.pid!, profiler: async () => (profiler ??= await remoteProfiler(child.inspector)) }],
    cpuMs: () => processCpuMs(child.proc.pid!),
    stop: async () => {
      await profiler?.close();
      child.proc.removeAllListeners('exit');
      await stopChild(child);
    },
  };
}

export function startRoles(placement: Placement, settings: RoleSettings): Promise<RunningRoles> {
  if (placement === 'in-process') return inProcess(settings);
  return isFloor(placement) ? floor(settings) : children(placement, settings);
}
