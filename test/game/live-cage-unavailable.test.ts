// The game role's refusal when the bank (the cage) is down is the spec's `cage_unavailable` (spec,
// failure modes: "sit refused within seconds when the cage is down"): a refused connection answers
// at once, a silent bank after GAME_CALL_TIMEOUT_MS. A chain table's bank is the chain bank: down,
// its sit is refused `chain_bank_unavailable`.
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { liveClient } from '../helpers/live.ts';
import { startMoneyPlatform } from '../helpers/money.ts';

let db: TestDatabase;
let m: Awaited<ReturnType<typeof startMoneyPlatform>>;
let live: ReturnType<typeof liveClient>;
/** Where the game role looks for the bank: a closed port until the test points it at the cage. */
let bankPort = 0;

beforeAll(async () => {
  db = await createTestDatabase();
  // a port that was free a moment ago, closed again: connections to it are refused
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  bankPort = (probe.address() as AddressInfo).port;
  await new Promise((r) => probe.close(r));
  m = await startMoneyPlatform(db, { env: { BANK_URL: `http://127.0.0.1:${bankPort}`, CHAIN_BANK_URL: `http://127.0.0.1:${bankPort}`, GAME_CALL_TIMEOUT_MS: '2000' } });
  live = liveClient(m, db);
});
afterAll(async () => {
  await live?.closeAll();
  await m?.platform.stop();
  await db?.drop();
});

test('a websocket sit while the cage is unreachable is refused cage_unavailable; nothing moved', async () => {
  const p = await live.player(500);
  const tableId = await m.table(p.auth);
  const answer = await live.sit(p, tableId, 0, 100);
  expect(answer).toMatchObject({ type: 'error', code: 'cage_unavailable' });
  expect(await m.balance(p.auth)).toBe(500);
  const seats = await db.owner.query("select count(*)::int as n from game.table_players where table_id = $1 and status <> 'closed'", [tableId]);
  expect(seats.rows[0].n).toBe(0);
});

test('a websocket sit at a chain table while the chain bank is unreachable is refused chain_bank_unavailable; nothing moved', async () => {
  const p = await live.player(0);
  const tableId = await m.table(p.auth);
  // the table's money on chain (as the chain bank's table creation makes it)
  await db.owner.query("update game.tables set bank = 'chain', money_kind = 'real' where table_id = $1", [tableId]);
  await live.join(p, tableId);
  const permit = { v: 27, r: `0x${'1'.repeat(64)}`, s: `0x${'2'.repeat(64)}`, deadline: '9999999999' };
  const answer = await live.request(p.ws, { type: 'sit', tableId, seatIndex: 0, amount: 100, permit, signerAddress: `0x${'3'.repeat(40)}` });
  expect(answer).toMatchObject({ type: 'error', code: 'chain_bank_unavailable' });
  const seats = await db.owner.query("select count(*)::int as n from game.table_players where table_id = $1 and status <> 'closed'", [tableId]);
  expect(seats.rows[0].n).toBe(0);
});
