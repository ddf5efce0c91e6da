// Issue 32, "A bust settles in the hand's end": a cash hand that leaves a player with no chips
// closes that position in the hand end's own transaction (game.end_hand / finish_hand), on a cage
// table and on a chain-bank table alike, with NO request from the game to any bank. The game
// reaches its bank through a counting proxy here, so a round trip would show. Afterwards the seat is
// free, the zero settlement is written (the cage's bust_close row, or the chain bank's bust intent),
// the cage bust's receipt appears once the worker's job had the cage sign it, and the audit is clean.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bridgedUser } from '../helpers/auth.ts';
import { fundedWallet, permitDeposit, type LocalChain } from '../helpers/chain-bank.ts';
import { expectCleanAudit } from '../helpers/cage.ts';
import { startChaosProxy, type ChaosProxy } from '../helpers/chaos-proxy.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { until } from '../helpers/live.ts';
import { AUTH_SECRET, ISSUER, call, moneyClient, POKER_SETTINGS } from '../helpers/money.ts';
import { startTestPlatform } from '../helpers/platform.ts';

let db: TestDatabase;
let cagePool: pg.Pool;
let proxy: ChaosProxy;
let m: ReturnType<typeof moneyClient>;
let chainBank: string;
let local: LocalChain;

beforeAll(async () => {
  db = await createTestDatabase();
  cagePool = db.pool('poker_cage', 1);
  await db.owner.query("insert into cage.switches (name, enabled) values ('real_money', true) on conflict (name) do update set enabled = true");
  // the game's bank (BANK_URL) is this proxy in front of the cage: every request the game makes to a bank is counted
  let cageUrl = '';
  proxy = await startChaosProxy(() => cageUrl, 20261205);
  const platform = await startTestPlatform({
    databaseUrl: db.url, roles: ['auth', 'game', 'cage', 'chain-bank', 'worker'],
    env: { AUTH_SECRET, AUTH_BASE_URL: ISSUER, ENABLE_TEST_AUTH: 'true', CHAIN_CONFIRM_WINDOW_MS: '20000', BANK_URL: proxy.url },
  });
  cageUrl = platform.url('cage');
  m = moneyClient(db, platform);
  chainBank = platform.url('chain-bank');
  local = (platform.role('chain-bank') as unknown as { chain: LocalChain }).chain;
}, 90_000);
afterAll(async () => {
  await m?.platform.stop();
  await proxy?.close();
  await expectCleanAudit(cagePool);
  await db?.drop();
});

const requestsToTheBank = () => Object.values(proxy.counts).reduce((n, c) => n + c.pass + c.drop + c.lose_answer, 0);
const position = async (tableId: string, userId: string) => (await db.owner.query(
  'select id, status, chip_balance, closing_ref_id, history_hash from game.table_players where table_id = $1 and user_id = $2', [tableId, userId])).rows[0];
const links = async (playerId: bigint) => (await db.owner.query(
  'select event, delta::int, stack::int, ref_id, hash from game_private.position_chain($1, 0, null) order by seq', [playerId])).rows;

test('a cage table: the hand that busts a player closes the seat with the explicit-zero bust_close row, no bank request; the receipt follows', async () => {
  const a = await m.player(500);
  const b = await m.player(500);
  const tableId = await m.table(a.auth);
  expect((await m.deposit(a.auth, { tableId, seatIndex: 0, amount: 100 })).status).toBe(200);
  expect((await m.deposit(b.auth, { tableId, seatIndex: 1, amount: 100 })).status).toBe(200);
  const pa = await position(tableId, a.userId);
  const pb = await position(tableId, b.userId);
  const before = requestsToTheBank();
  const handId = `h-${randomUUID()}`;
  expect((await m.hand({ action: 'begin', tableId, handId })).status).toBe(200);
  const finished = await m.hand({ action: 'finish', tableId, handId, stacks: { [pa.id]: 195, [pb.id]: 0 }, rake: 5 });
  expect(finished.status).toBe(200);
  expect(finished.body.busted).toEqual([{ playerId: String(pb.id), userId: b.userId }]);
  // written with the hand: no request to the bank, the seat free, the position closed on its zero settlement
  expect(requestsToTheBank()).toBe(before);
  expect((await m.room(tableId)).body.seats).toEqual([{ seatIndex: 0, userId: a.userId, chipBalance: '195', status: 'seated' }]);
  const closed = await position(tableId, b.userId);
  expect(closed).toMatchObject({ status: 'closed', chip_balance: 0n });
  expect(closed.closing_ref_id).toMatch(/^bust:0x[0-9a-f]{64}$/);
  const entry = (await db.owner.query('select kind::text, amounts::text[] as amounts, memo from cage.cage_entries where ref_id = $1', [closed.closing_ref_id])).rows[0];
  expect(entry).toMatchObject({ kind: 'bust_close', amounts: ['0', '0'], memo: { table_id: tableId, position: Number(pb.id), settlement: 'bust' } });
  const { rows: [intent] } = await db.owner.query('select settlement, amount, history_hash, settled_at from cage.withdraw_intents where player_id = $1', [pb.id]);
  // the settlement binds the chain's head after the hand, which the bust link extends
  const chain = await links(pb.id);
  expect(intent).toMatchObject({ settlement: 'bust', amount: 0n, history_hash: chain[1].hash });
  expect(intent.settled_at).not.toBeNull();
  expect((await links(pb.id)).map((l) => [l.event, l.delta, l.stack])).toEqual([['buy_in', 100, 100], ['hand', -100, 0], ['bust', 0, 0]]);
  // the receipt: signed by the cage once the job the hand's end queued has run
  const key = (await call(`${m.cage}/api/cage/receipt-key`)).body.publicKey as string;
  const receipt = await until(async () => (await call(`${m.cage}/api/cage/receipts`, { headers: b.auth })).body.receipts?.[0], 'the bust receipt', 30_000, 50);
  expect(receipt.ledgerRefId).toBe(closed.closing_ref_id);
  expect(JSON.parse(Buffer.from(receipt.payload, 'base64').toString())).toMatchObject({ kind: 'bust', chipAmount: '0', tableId, userId: b.userId, position: String(pb.id) });
  expect(ed25519.verify(Buffer.from(receipt.signature, 'hex'), Buffer.from(receipt.payload, 'base64'), Buffer.from(key, 'hex'))).toBe(true);
  await expectCleanAudit(cagePool);
  // the busted player's withdraw finds no seat; the winner stands up with the pot
  expect(await m.withdraw(b.auth, { tableId })).toEqual({ status: 404, body: { error: 'not_at_table' } });
  expect((await m.withdraw(a.auth, { tableId })).body).toMatchObject({ amount: 195 });
  expect([await m.balance(a.auth), await m.balance(b.auth)]).toEqual([595, 400]);
  expect(requestsToTheBank()).toBe(before);
  await expectCleanAudit(cagePool);
}, 60_000);

test('a chain-bank table: the bust closes the seat in the hand\'s end (the chain bank\'s zero settlement), never left leaving', async () => {
  const players = await Promise.all([0, 1].map(async () => {
    const { userId, jwt } = await bridgedUser(db, { issuer: ISSUER });
    return { userId, auth: { authorization: `Bearer ${jwt}` }, ...(await fundedWallet(db, local, userId, 500n)) };
  }));
  const [a, b] = players as [typeof players[0], typeof players[0]];
  const tableId = `cb-${randomUUID().slice(0, 10)}`;
  expect((await call(`${chainBank}/api/tables`, { headers: a.auth, body: { tableId, gameType: 'poker', settings: POKER_SETTINGS } })).status).toBe(200);
  for (const [i, p] of players.entries()) {
    const r = await call(`${chainBank}/api/deposit`, { headers: p.auth, body: await permitDeposit(local, p, tableId, 200n, { seatIndex: i }) });
    expect(r.body.status).toBe('confirmed');
  }
  const pa = await position(tableId, a.userId);
  const pb = await position(tableId, b.userId);
  const before = requestsToTheBank();
  const handId = `h-${randomUUID()}`;
  expect((await m.hand({ action: 'begin', tableId, handId })).status).toBe(200);
  const finished = await m.hand({ action: 'finish', tableId, handId, stacks: { [pa.id]: 390, [pb.id]: 0 }, rake: 10 });
  expect(finished.status).toBe(200);
  expect(finished.body.busted).toEqual([{ playerId: String(pb.id), userId: b.userId }]);
  // the seat is free at once, with no request to a bank (before issue 32 it was left `leaving`, 0 chips)
  expect(requestsToTheBank()).toBe(before);
  expect((await m.room(tableId)).body.seats).toEqual([{ seatIndex: 0, userId: a.userId, chipBalance: '390', status: 'seated' }]);
  const closed = await position(tableId, b.userId);
  expect(closed).toMatchObject({ status: 'closed', chip_balance: 0n });
  const { rows: [intent] } = await db.owner.query(
    'select idempotency_key, settlement, status, amount, tx_hash, settled_at from bank.withdraw_intents where player_id = $1', [pb.id]);
  expect(intent).toMatchObject({ settlement: 'bust', status: 'confirmed', amount: 0n, tx_hash: null, idempotency_key: closed.closing_ref_id });
  expect(intent.settled_at).not.toBeNull();
  expect((await links(pb.id)).map((l) => [l.event, l.delta, l.stack])).toEqual([['buy_in', 200, 200], ['hand', -200, 0], ['bust', 0, 0]]);
  // a chain bust is no cage settlement: nothing for the cage to sign, nothing in its books
  expect((await db.owner.query('select count(*)::int as n from cage.withdraw_intents where player_id = $1', [pb.id])).rows[0].n).toBe(0);
  // the winner withdraws on chain as ever; the loser has no seat to withdraw from
  expect((await call(`${chainBank}/api/withdraw`, { headers: b.auth, body: { tableId } })).body).toEqual({ error: 'not_at_table' });
  expect((await call(`${chainBank}/api/withdraw`, { headers: a.auth, body: { tableId } })).body).toMatchObject({ status: 'confirmed', amount: 390 });
  expect(requestsToTheBank()).toBe(before);
  await expectCleanAudit(cagePool);
}, 90_000);
