// CPU time of processes, read from /proc (Linux): a process's utime + stime, and the sum over a
// PostgreSQL cluster (its postmaster and every backend it forked). The benchmarks read it before and
// after a measured window, so the platform's processes, Postgres and the bots show what they spent.
import { readdirSync, readFileSync } from 'node:fs';
import type pg from 'pg';

/** Clock ticks per second of /proc's utime and stime (USER_HZ: 100 on every Linux this runs on). */
const TICKS_PER_SECOND = 100;

interface Stat {
  ppid: number;
  /** utime + stime, ms. */
  cpuMs: number;
}

/** `/proc/<pid>/stat` (or a thread's `/proc/<pid>/task/<tid>/stat`), or null when gone. */
function readStat(path: string): Stat | null {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return null;
  }
  // `pid (comm) state ppid ...`: comm may hold spaces and parentheses, so the fields start after the last ')'
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // after comm: state(0) ppid(1) ... utime(11) stime(12)
  return { ppid: Number(fields[1]), cpuMs: ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND };
}

/** A process's CPU (every thread), ms; 0 when it is gone or /proc is not there. */
export function processCpuMs(pid: number): number {
  return readStat(`/proc/${pid}/stat`)?.cpuMs ?? 0;
}

export const available = (): boolean => readStat(`/proc/${process.pid}/stat`) !== null;

/**
 * The CPU of a PostgreSQL cluster on this machine: its postmaster and all its children (backends,
 * the WAL writer, the checkpointer...), summed. A backend that exits between two readings takes its
 * time with it; the platform's pools keep theirs open, so that is seldom.
 */
export class PostgresCpu {
  readonly postmaster: number;

  private constructor(postmaster: number) {
    this.postmaster = postmaster;
  }

  /** Found through one of its backends: the backend's parent is the postmaster. Null when not local. */
  static async find(pool: pg.Pool): Promise<PostgresCpu | null> {
    const { rows } = await pool.query<{ pid: number }>('select pg_backend_pid() as pid');
    const backend = readStat(`/proc/${rows[0]!.pid}/stat`);
    if (!backend) return null;
    let comm = '';
    try {
      comm = readFileSync(`/proc/${backend.ppid}/comm`, 'utf8').trim();
    } catch {
      return null;
    }
    return comm === 'postgres' ? new PostgresCpu(backend.ppid) : null;
  }

  /** The CPU of the postmaster and each process it forked, ms by pid. */
  snapshot(): Map<number, number> {
    const out = new Map<number, number>([[this.postmaster, processCpuMs(this.postmaster)]]);
    for (const entry of readdirSync('/proc')) {
      if (entry.charCodeAt(0) < 48 || entry.charCodeAt(0) > 57) continue;
      const s = readStat(`/proc/${entry}/stat`);
      if (s && s.ppid === this.postmaster) out.set(Number(entry), s.cpuMs);
    }
    return out;
  }

  /**
   * The CPU spent since `before` (a snapshot): each process's growth, a process forked since then
   * counted whole. A backend that exited since (a pool closing an idle connection) takes its share
   * of the window with it: at most the little it did before it went idle.
   */
  static since(before: Map<number, number>, now: Map<number, number>): number {
    let sum = 0;
    for (const [pid, ms] of now) sum += Math.max(0, ms - (before.get(pid) ?? 0));
    return sum;
  }
}
