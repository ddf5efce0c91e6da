// The play-chip gate under concurrent batches (as the ledger benchmark's batch cases post them): the
// gate rows a batch's entries touch are locked in one order, the accounts', whatever order the
// entries' refs put them in, so batches moving chips between frozen accounts never deadlock.
// (Raw transfers as the owner: no audit here, whose provenance check would name them; the gate's
// own counts are checked.)
import { randomInt, randomUUID } from 'node:crypto';
import type pg from 'pg';
import { postMovements, type Movement } from '../../../server/cage/ledger.ts';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/db.ts';
import { systemAccount, userAccount } from '../../../test/helpers/cage.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

const move = (from: bigint, to: bigint, amount = 1n, kind = 'adjustment'): Movement => ({
  refId: `gate-${randomUUID()}`, kind, moneyKind: 'play', accounts: [from, to], amounts: [-amount, amount],
});

test('8 clients post batches of 200 between 300 frozen accounts at once: no deadlock, every movement posted, each wraps both its accounts', async () => {
  const owner: pg.Pool = db.owner;
  const source = await systemAccount(owner, 'grant_source');
  const accounts: bigint[] = [];
  for (let i = 0; i < 300; i++) accounts.push((await userAccount(owner)).id);
  // granted play chips freeze the accounts (the gate is on by default)
  await postMovements(owner, accounts.map((id) => move(source, id, 100_000n, 'grant')));
  const gate = async () => (await owner.query<{ frozen: number; wraps: number }>(
    'select count(*) filter (where frozen)::int as frozen, coalesce(sum(wraps), 0)::int as wraps from cage.play_gate_accounts where account_id = any($1)',
    [accounts.map(String)])).rows[0]!;
  const before = await gate();
  expect(before.frozen).toBe(300);

  const [clients, rounds, size] = [8, 4, 200];
  const pick = () => accounts[randomInt(accounts.length)]!;
  const run = async () => {
    const client = await owner.connect();
    try {
      for (let i = 0; i < rounds; i++) {
        const batch = Array.from({ length: size }, () => {
          const from = pick();
          let to = pick();
          while (to === from) to = pick();
          return move(from, to);
        });
        const r = await postMovements(client, batch);
        expect(r.every((x) => x.status === 'created')).toBe(true);
      }
    } finally {
      client.release();
    }
  };
  await Promise.all(Array.from({ length: clients }, run));
  expect((await gate()).wraps - before.wraps).toBe(clients * rounds * size * 2);
}, 90_000);
