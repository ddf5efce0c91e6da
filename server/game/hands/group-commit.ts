// Group commit of hand boundaries (issue 33): every deal and hand end the process's rooms ask for
// while another batch is being written waits for it, then all of them are written in ONE
// transaction: one commit (one WAL flush, one transaction id) for every hand any table of the
// process finished meanwhile, instead of one each. Nothing waits on a timer: a boundary asked for
// while nothing is in flight is written at once, alone; under load the batch is whatever came during
// the previous commit, so the busier the process, the more hands share a commit.
//
// Each boundary keeps its own answer. The batch's statements run one after another in its
// transaction, hand ends first, then deals (a deal alone commits without waiting for its flush:
// game.deal_hand turns synchronous_commit off only in a transaction that has not written yet, so
// after an end has written, the batch's commit waits for its flush as the end's answer needs:
// a hand_result goes out only after its end is durable). A boundary a statement refuses (a lost
// lease, an abandoned hand, a chain record that lost a race) rolls the batch back, and every
// boundary of it is then written alone, in its own transaction, as it would have been without
// batching: each gets its own answer or refusal, and nothing of the batch is half-written. A batch
// whose connection failed answers that failure to all of its boundaries (whether it committed is
// unknown, as for a single statement; a hand end's retry answers what it committed).
import pg from 'pg';
import { inTransaction } from '../../db/transaction.ts';

/** A statement as the boundary's caller would have sent it alone. */
export interface BoundaryQuery {
  /** Which table's boundary it is: the batch takes the tables' locks in this order. */
  tableId: string;
  /** A hand end (the batch's commit waits for its flush) or a deal. */
  kind: 'end' | 'deal';
  text: string;
  values: unknown[];
  /** A prepared statement's name (each connection plans it once). */
  name?: string;
}

interface Pending {
  query: BoundaryQuery;
  resolve: (result: pg.QueryResult) => void;
  reject: (err: unknown) => void;
}

/** How many boundaries the process wrote and in how many commits. */
export interface GroupCommitStats {
  boundaries: number;
  commits: number;
  /** Batches rolled back by a refusal and written again one boundary at a time. */
  split: number;
}

const order = (a: Pending, b: Pending) =>
  (a.query.kind === b.query.kind ? 0 : a.query.kind === 'end' ? -1 : 1) || (a.query.tableId < b.query.tableId ? -1 : a.query.tableId > b.query.tableId ? 1 : 0);

/** The batch in one transaction; true when it committed, false when the server refused it (rolled back). */
async function together(pool: pg.Pool, batch: Pending[]): Promise<boolean> {
  let results: pg.QueryResult[];
  try {
    results = await inTransaction(pool, async (client) => {
      const out: pg.QueryResult[] = [];
      for (const p of batch) out.push(await client.query({ name: p.query.name, text: p.query.text, values: p.query.values }));
      return out;
    });
  } catch (err) {
    // the server's refusal (a statement's, or the commit's) left nothing written; a connection's
    // failure (no answer from the server) leaves the commit's fate unknown, and is the caller's
    if (err instanceof pg.DatabaseError) return false;
    throw err;
  }
  batch.forEach((p, i) => p.resolve(results[i]!));
  return true;
}

export function createGroupCommit(pool: pg.Pool) {
  let queue: Pending[] = [];
  let inFlight = false;
  const stats: GroupCommitStats = { boundaries: 0, commits: 0, split: 0 };

  const alone = (p: Pending) => pool.query({ name: p.query.name, text: p.query.text, values: p.query.values }).then(p.resolve, p.reject);

  async function write(batch: Pending[]): Promise<void> {
    stats.boundaries += batch.length;
    if (batch.length === 1) {
      stats.commits += 1;
      await alone(batch[0]!);
      return;
    }
    batch.sort(order);
    try {
      if (await together(pool, batch)) {
        stats.commits += 1;
        return;
      }
    } catch (err) {
      for (const p of batch) p.reject(err);
      return;
    }
    stats.split += 1;
    stats.commits += batch.length;
    await Promise.all(batch.map(alone));
  }

  async function drain(): Promise<void> {
    inFlight = true;
    try {
      while (queue.length > 0) {
        const batch = queue;
        queue = [];
        await write(batch);
      }
    } finally {
      inFlight = false;
    }
  }

  return {
    stats,
    /** Writes the boundary with whatever else is waiting; answers its own result, once its commit is durable. */
    query<R extends pg.QueryResultRow>(query: BoundaryQuery): Promise<pg.QueryResult<R>> {
      return new Promise<pg.QueryResult<R>>((resolve, reject) => {
        queue.push({ query, resolve: resolve as (r: pg.QueryResult) => void, reject });
        if (!inFlight) void drain();
      });
    },
  };
}
