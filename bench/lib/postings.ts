// The ledger benchmark's posting workload, shared with the benchmarks that use it as their baseline
// (bench/ledger.ts, bench/cage.ts): funded user accounts and random user-to-user transfers through
// cage.post_movement.
import type pg from 'pg';
import { postMovement, postMovements, type Movement } from '../../server/cage/ledger.ts';

export const FUNDING = 1_000_000_000_000n; // per account: no transfer of a run can overdraw it

export const randInt = (lo: number, hi: number) => lo + Math.floor(Math.random() * (hi - lo + 1));

/** `n` user accounts, each funded with FUNDING from the grant source in batches of 1,000. */
export async function fundedUserAccounts(cage: pg.Pool, n: number, ref: (tag: string) => string) {
  const { rows: accRows } = await cage.query<{ id: bigint }>(
    "select cage.ensure_account('user', gen_random_uuid(), null, 'play') as id from generate_series(1, $1)",
    [n],
  );
  const users = accRows.map((r) => r.id);
  const { rows: srcRows } = await cage.query<{ id: bigint }>(
    "select cage.ensure_account('grant_source', null, null, 'play') as id",
  );
  const grantSource = srcRows[0]!.id;
  for (let i = 0; i < users.length; i += 1000) {
    const fund: Movement[] = users.slice(i, i + 1000).map((id) => ({
      refId: ref('fund'), kind: 'grant', moneyKind: 'play', accounts: [grantSource, id], amounts: [-FUNDING, FUNDING],
    }));
    const res = await postMovements(cage, fund);
    const bad = res.filter((r) => r.status !== 'created');
    if (bad.length) throw new Error(`funding refused: ${JSON.stringify(bad.slice(0, 3))}`);
  }
  return { users, grantSource };
}

/** Two distinct random accounts of `users`. */
export function randomPair(users: readonly bigint[]): [bigint, bigint] {
  const a = randInt(0, users.length - 1);
  let b = randInt(0, users.length - 2);
  if (b >= a) b++;
  return [users[a]!, users[b]!];
}

/** A transfer of 1..1000 between two random accounts of `users`. */
export function randomTransfer(users: readonly bigint[], refId: string): Movement {
  const [from, to] = randomPair(users);
  const amount = BigInt(randInt(1, 1000));
  return { refId, kind: 'adjustment', moneyKind: 'play', accounts: [from, to], amounts: [-amount, amount] };
}

/** The single-posting case (ledger's post@N): one random transfer per call; throws unless 'created'. */
export async function postRandomTransfer(client: pg.PoolClient, users: readonly bigint[], refId: string) {
  const { status } = await postMovement(client, randomTransfer(users, refId));
  if (status !== 'created') throw new Error(`a posting came back ${status}`);
}
