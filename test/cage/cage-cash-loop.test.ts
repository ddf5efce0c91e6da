// The cash loop over real HTTP against the running auth, game and cage roles: sit, top up, stand
// up, forced withdraw to custody and its claim, bust, receipts. Every money step is checked by the
// cage audit at the end.
import { ed25519 } from '@noble/curves/ed25519.js';
import type pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { expectCleanAudit } from '../helpers/cage.ts';
import { satOutSince } from '../helpers/game.ts';
import { call, startMoneyPlatform } from '../helpers/money.ts';

let db: TestDatabase;
let cagePool: pg.Pool;
let m: Awaited<ReturnType<typeof startMoneyPlatform>>;
beforeAll(async () => {
  db = await createTestDatabase();
  cagePool = db.pool('poker_cage');
  m = await startMoneyPlatform(db);
});
afterAll(async () => {
  await m?.platform.stop();
  await expectCleanAudit(cagePool);
  await db.drop();
});

test('sit, top up between hands, stand up: chips go from the cage balance to the seat and back', async () => {
  const p = await m.player(1000);
  const tableId = await m.table(p.auth);
  const sit = await m.deposit(p.auth, { tableId, seatIndex: 2, amount: 100 });
  expect(sit.status).toBe(200);
  expect(sit.body).toMatchObject({ status: 'confirmed', seatIndex: 2, chipBalance: '100' });
  expect(await m.balance(p.auth)).toBe(900);
  const topUp = await m.deposit(p.auth, { tableId, seatIndex: 2, amount: '50' });
  expect(topUp.status).toBe(200);
  expect((await m.room(tableId)).body.seats).toEqual([{ seatIndex: 2, userId: p.userId, chipBalance: '150', status: 'seated' }]);

  const out = await m.withdraw(p.auth, { tableId });
  expect(out.status).toBe(200);
  expect(out.body).toMatchObject({ status: 'confirmed', destination: 'cage', amount: 150 });
  expect(out.body.idempotencyKey).toMatch(/^0x[0-9a-f]{64}$/);
  expect(await m.balance(p.auth)).toBe(1000);
  expect((await m.room(tableId)).body.seats).toEqual([]);

  // the receipt verifies with the published key
  const key = await call(`${m.cage}/api/cage/receipt-key`);
  const receipt = out.body.receipt;
  expect(ed25519.verify(Buffer.from(receipt.signature, 'hex'), Buffer.from(receipt.payload, 'base64'), Buffer.from(key.body.publicKey, 'hex'))).toBe(true);
  const mine = await call(`${m.cage}/api/cage/receipts`, { headers: p.auth });
  expect(mine.body.receipts.map((r: { ledgerRefId: string }) => r.ledgerRefId)).toEqual([out.body.txHash]);

  // the same withdraw again is a replay of the original
  const again = await m.withdraw(p.auth, { tableId });
  expect(again.status).toBe(200);
  expect(again.body).toMatchObject({ replay: true, idempotencyKey: out.body.idempotencyKey, txHash: out.body.txHash });
  expect(again.body.receipt).toEqual(receipt); // the original receipt, byte for byte
  expect(await m.balance(p.auth)).toBe(1000);
  expect((await call(`${m.cage}/api/cage/receipts`, { headers: p.auth })).body.receipts).toHaveLength(1);

  // the receipt binds the position chain's head at stand-up; the chain ends with the cash-out link
  const payload = JSON.parse(Buffer.from(receipt.payload, 'base64').toString());
  expect(payload).toMatchObject({ kind: 'cash_out', chipAmount: '150', historyHash: out.body.historyHash, ledgerRefId: out.body.txHash });
  const { rows: links } = await db.owner.query(
    `select l.event, l.delta::int, l.stack::int, l.prev_hash, l.hash, l.ref_id from game.position_links l
       join game.table_players p on p.id = l.player_id where p.table_id = $1 order by l.seq`, [tableId]);
  expect(links.map((l) => [l.event, l.delta, l.stack])).toEqual([['buy_in', 100, 100], ['top_up', 50, 150], ['cash_out', -150, 0]]);
  expect(links[2].prev_hash).toBe(out.body.historyHash);
  expect(links[2].ref_id).toBe(out.body.txHash);
});

test('a hand moves chips between seats; a busted seat closes with an explicit zero row and receipt', async () => {
  const a = await m.player(500);
  const b = await m.player(500);
  const tableId = await m.table(a.auth);
  expect((await m.deposit(a.auth, { tableId, seatIndex: 0, amount: 100 })).status).toBe(200);
  expect((await m.deposit(b.auth, { tableId, seatIndex: 1, amount: 100 })).status).toBe(200);
  const { rows } = await db.owner.query('select id, user_id from game.table_players where table_id = $1 order by seat_index', [tableId]);
  expect((await m.hand({ action: 'begin', tableId, handId: 'h1' })).status).toBe(200);
  expect((await m.deposit(a.auth, { tableId, seatIndex: 0, amount: 10 })).body).toEqual({ error: 'hand_in_progress' });
  expect((await m.withdraw(a.auth, { tableId })).body).toEqual({ error: 'hand_in_progress' });
  const end = await m.hand({ action: 'finish', tableId, handId: 'h1', stacks: { [rows[0].id]: 195, [rows[1].id]: 0 }, rake: 5 });
  expect(end.status).toBe(200);
  expect(end.body.busted).toEqual([{ playerId: String(rows[1].id), userId: b.userId }]);
  // closed in the hand's end (issue 32); its receipt is signed by the cage when asked (the worker's job does)
  expect((await m.room(tableId)).body.seats).toHaveLength(1);
  await expectCleanAudit(cagePool);
  expect((await call(`${m.cage}/settlement/sign-bust-receipts`, { headers: m.service, body: {} })).body).toEqual({ signed: 1, failed: 0 });
  const bustReceipts = await call(`${m.cage}/api/cage/receipts`, { headers: b.auth });
  expect(bustReceipts.body.receipts).toHaveLength(1);
  expect(JSON.parse(Buffer.from(bustReceipts.body.receipts[0].payload, 'base64').toString())).toMatchObject({ kind: 'bust', chipAmount: '0' });
  await expectCleanAudit(cagePool);

  const out = await m.withdraw(a.auth, { tableId });
  expect(out.body).toMatchObject({ amount: 195 });
  expect(await m.balance(a.auth)).toBe(595);
  expect(await m.balance(b.auth)).toBe(400);
});

test('a forced withdraw moves the stack to a FREE custody entry, which its owner claims', async () => {
  const p = await m.player(300);
  const tableId = await m.table(p.auth);
  await m.deposit(p.auth, { tableId, seatIndex: 0, amount: 120 });
  // the sit-out timeout's withdraw: only for a player the dealer sat out for the house's idle time
  expect(await m.withdraw(m.service, { tableId, forced: true, userId: p.userId })).toEqual({ status: 409, body: { error: 'player_not_idle' } });
  await satOutSince(db.owner, tableId, p.userId);
  const forced = await m.withdraw(m.service, { tableId, forced: true, userId: p.userId });
  expect(forced.status).toBe(200);
  expect(forced.body.destination).toMatch(/^custody:\d+$/);
  const { rows } = await db.owner.query('select chain, amount, status from cage.custody_entries where user_id = $1', [p.userId]);
  expect(rows).toEqual([{ chain: 'cage', amount: 120_000_000n, status: 'free' }]);
  expect(await m.balance(p.auth)).toBe(180);
  const claim = await call(`${m.cage}/api/custody/claim`, { headers: p.auth, body: { entryId: forced.body.custodyEntryId } });
  expect(claim.status).toBe(200);
  expect(claim.body).toMatchObject({ amount: 120 });
  expect(await m.balance(p.auth)).toBe(300);
  const twice = await call(`${m.cage}/api/custody/claim`, { headers: p.auth, body: { entryId: forced.body.custodyEntryId } });
  expect(twice.body).toMatchObject({ replay: true, amount: 120 });
  expect(await m.balance(p.auth)).toBe(300);
});
