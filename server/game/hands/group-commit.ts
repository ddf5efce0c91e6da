// Group commit of hand boundaries (issue 33): every deal and hand end the process's rooms ask for
// while another batch is being written waits for it, then all of them are written in ONE
// transaction: one commit (one WAL flush, one transaction id) for every hand any table of the
// process finished meanwhile, instead of one each. Nothing waits on a timer: a boundary asked for
// while nothing is in flight is written at once, alone; under load the batch is whatever came during
// the previous commit, so the busier the process, the more hands share a commit.
//
// Each boundary keeps its own answer. The batch is written by the caller's writer (the dealer's:
// boundary-writer.ts, the whole batch in one call of game.write_boundaries, one round trip), hand
// ends first, then deals, each in table order (a deal alone commits without waiting for its flush:
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

/** A boundary: which table's (the batch takes the tables' locks in table order) and which kind. */
export interface Boundary {
  tableId: string;
  /** A hand end (the batch's commit waits for its flush) or a deal. */
  kind: 'end' | 'deal';
}

/** How a group commit writes its boundaries. */
export interface BoundaryWriter<Q extends Boundary, R> {
  /** One boundary in its own transaction, as it would be written without batching. */
  alone(query: Q): Promise<R>;
  /**
   * The batch in ONE transaction, in the order given (hand ends first, then deals, each in table
   * order): one answer per boundary, in that order. A pg.DatabaseError (the server's refusal) means
   * nothing of it was written; any other failure leaves its commit's fate unknown.
   */
  together(batch: Q[]): Promise<R[]>;
}

/** A statement as the boundary's caller would have sent it alone (statementWriter's boundaries). */
export interface BoundaryQuery extends Boundary {
  text: string;
  values: unknown[];
  /** A prepared statement's name (each connection plans it once). */
  name?: string;
}

/** Any statements, a batch of them run one after another in one transaction (a round trip each). */
export function statementWriter(pool: pg.Pool): BoundaryWriter<BoundaryQuery, pg.QueryResult> {
  const run = (db: pg.Pool | pg.PoolClient, q: BoundaryQuery) => db.query({ name: q.name, text: q.text, values: q.values });
  return {
    alone: (q) => run(pool, q),
    together: (batch) => inTransaction(pool, async (client) => {
      const out: pg.QueryResult[] = [];
      for (const q of batch) out.push(await run(client, q));
      return out;
    }),
  };
}

interface Pending<Q, R> {
  query: Q;
  resolve: (result: R) => void;
  reject: (err: unknown) => void;
}

/** How many boundaries the process wrote and in how many commits. */
export interface GroupCommitStats {
  boundaries: number;
  commits: number;
  /** Batches rolled back by a refusal and written again one boundary at a time. */
  split: number;
}

const order = (a: { query: Boundary }, b: { query: Boundary }) =>
  (a.query.kind === b.query.kind ? 0 : a.query.kind === 'end' ? -1 : 1) || (a.query.tableId < b.query.tableId ? -1 : a.query.tableId > b.query.tableId ? 1 : 0);

export function createGroupCommit<Q extends Boundary, R>(writer: BoundaryWriter<Q, R>) {
  let queue: Pending<Q, R>[] = [];
  let inFlight = false;
  const stats: GroupCommitStats = { boundaries: 0, commits: 0, split: 0 };

  const alone = (p: Pending<Q, R>) => writer.alone(p.query).then(p.resolve, p.reject);

  /** The batch in one transaction; true when it committed, false when the server refused it (rolled back). */
  async function together(batch: Pending<Q, R>[]): Promise<boolean> {
    let results: R[];
    try {
      results = await writer.together(batch.map((p) => p.query));
    } catch (err) {
      // the server's refusal (a statement's, or the commit's) left nothing written; a connection's
      // failure (no answer from the server) leaves the commit's fate unknown, and is the caller's
      if (err instanceof pg.DatabaseError) return false;
      throw err;
    }
    batch.forEach((p, i) => p.resolve(results[i]!));
    return true;
  }

  async function write(batch: Pending<Q, R>[]): Promise<void> {
    stats.boundaries += batch.length;
    if (batch.length === 1) {
      stats.commits += 1;
      await alone(batch[0]!);
      return;
    }
    batch.sort(order);
    try {
      if (await together(batch)) {
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
    write(query: Q): Promise<R> {
      return new Promise<R>((resolve, reject) => {
        queue.push({ query, resolve, reject });
        if (!inFlight) void drain();
      });
    },
  };
}
