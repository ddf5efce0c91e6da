// One sender per payment (issue 31, class 7): a chain-bank payment (a withdrawal, a tournament
// payment, a vault refund) is sent by one process at a time. The sender takes the payment's row
// lock (a bank function that selects it `for update`: bank.take_withdrawal,
// bank.retry_tournament_payment, bank.open_vault_refund) in a transaction it holds until the sent
// transaction's hash is recorded (submitted) on the same connection; a second process (another
// role, a request racing the reconciler) waits on the lock, then reads the row as submitted and
// sends nothing. A sender that dies before the record rolls back: its row is pending again, and the
// next sender reads its earlier transactions on chain first (earlier-payments.ts).
import type pg from 'pg';

/**
 * Runs `work` in one transaction on one client of `pool`, after `take` (a query answering the
 * payment's row, locked) ran in it: committed when `work` answers, rolled back when it throws.
 */
export async function asOneSender<R extends pg.QueryResultRow, T>(
  pool: pg.Pool, take: string, params: unknown[], work: (db: pg.PoolClient, row: R) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('begin');
    const row = (await client.query<R>(take, params)).rows[0]!;
    const answer = await work(client, row);
    await client.query('commit');
    return answer;
  } catch (err) {
    await client.query('rollback').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
