// The `wallet_linked` condition crosses roles (auth -> game): it is queued as a graphile-worker job in
// the link's own transaction and delivered by the worker, retried while the game role is down, never
// lost; a link that rolls back queues nothing.
import { createServer, type AddressInfo } from 'node:net';
import { base58 } from '@scure/base';
import { randomBytes } from 'node:crypto';
import { fixtureOperator } from '../helpers/cage.ts';
import { eventually } from '../helpers/claims.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { authUser } from '../helpers/game.ts';
import { queuedConditions } from '../helpers/auth.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';

let db: TestDatabase;
let worker: TestPlatform | undefined;
let game: TestPlatform | undefined;
let gamePort = 0;

beforeAll(async () => {
  db = await createTestDatabase();
  await db.owner.query("select claims.set_board_settings($1, 'local', true, null)", [await fixtureOperator(db.owner)]);
  // the game role's port, free now; nothing listens there until the test starts the game role
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  gamePort = (probe.address() as AddressInfo).port;
  await new Promise((r) => probe.close(r));
});
afterAll(async () => {
  await worker?.stop();
  await game?.stop();
  await db?.drop();
});

const link = (userId: string, address: string) => db.owner.query("select * from auth.link_wallet($1, $2, 'solana', 0)", [userId, address]);
const attempts = async (userId: string) => (await db.owner.query<{ attempts: number; last_error: string | null }>(
  `select j.attempts, j.last_error from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
    where t.identifier = 'deliver_condition' and j.payload ->> 'userId' = $1`, [userId])).rows[0];
const sectionState = async (userId: string) =>
  (await db.owner.query("select state from claims.user_claim_sections where user_id = $1 and section_key = 'connect_wallet'", [userId])).rows[0]?.state as string | undefined;

test('a link that rolls back queues nothing', async () => {
  const userId = await authUser(db.owner);
  const client = await db.owner.connect();
  try {
    await client.query('begin');
    await client.query("select * from auth.link_wallet($1, $2, 'solana', 0)", [userId, base58.encode(randomBytes(32))]);
    await client.query('rollback');
  } finally {
    client.release();
  }
  expect(await queuedConditions(db, userId)).toEqual([]);
});

test('with the game role down the link commits and its condition waits; once the game is up the worker delivers it and the section is lit', async () => {
  const userId = await authUser(db.owner);
  const address = base58.encode(randomBytes(32));
  await link(userId, address);
  expect(await queuedConditions(db, userId)).toEqual([{ userId, conditionKey: 'wallet_linked', idempotencyKey: `wallet_linked:${userId}:${address}` }]);

  worker = await startTestPlatform({ databaseUrl: db.url, roles: ['worker'], env: { GAME_URL: `http://127.0.0.1:${gamePort}` } });
  // the worker tries, the game does not answer: the job stays, to be retried
  const failed = await eventually(async () => {
    const a = await attempts(userId);
    return a && a.last_error ? a : undefined;
  }, 10_000);
  expect(failed.last_error).toMatch(/did not answer/);
  expect(await sectionState(userId)).toBeUndefined();

  game = await startTestPlatform({ databaseUrl: db.url, roles: ['game'], env: { GAME_PORT: String(gamePort) } });
  // the next try is due after graphile-worker's backoff; an operator's "retry now" brings it forward
  await db.owner.query('update graphile_worker._private_jobs set run_at = now() where payload ->> \'userId\' = $1', [userId]);
  expect(await eventually(async () => ((await sectionState(userId)) === 'lit' ? 'lit' : undefined), 15_000)).toBe('lit');
  await eventually(async () => ((await queuedConditions(db, userId)).length === 0 ? true : undefined), 5_000);
});
