// The chain bank's deposits in SQL (db/functions/bank), called as the bank role calls them (and the
// game role for the seat's side): replay once per permit key, refusals decided before any write that
// write nothing (issue 32), and a tournament entry's status as it stands (bank.deposit_states): the
// read of GET /api/deposits/:key and the replay of the entry answer `refunded` from that one view once
// its refund was opened. No chain here: the transaction and its event are the bank's claims, as the
// functions take them.
import { randomBytes, randomUUID } from 'node:crypto';
import type pg from 'pg';
import { createTestDatabase, playerGrant, type TestDatabase } from '../../../test/helpers/db.ts';
import { authUser, POKER_SETTINGS } from '../../../test/helpers/game.ts';
import { setRealMoney } from '../../../test/helpers/cage.ts';
import { resolveSngSettings } from '../../../server/tournaments/settings.ts';

let db: TestDatabase;
let bank: pg.Pool;
let game: pg.Pool;
const CHAIN_ID = 31337;
const hex = (bytes: number) => `0x${randomBytes(bytes).toString('hex')}`;

beforeAll(async () => {
  db = await createTestDatabase();
  bank = db.pool('poker_bank');
  game = db.pool('poker_game');
  await db.owner.query('select bank_private.activate_deployment_as_owner($1, $2, $3, $4, 0)', [CHAIN_ID, hex(20), hex(20), 'http://127.0.0.1:9']);
  // chain tables are real money: on while the operators' switch is
  await setRealMoney(db.owner, true);
});
afterAll(async () => {
  await db.drop();
});

/** A player with an EVM wallet linked, and their token grant. */
async function player() {
  const userId = await authUser(db.owner);
  const wallet = hex(20);
  await db.owner.query("select * from auth.link_wallet($1, $2, 'evm', $3)", [userId, wallet, CHAIN_ID]);
  return { userId, wallet, sid: await playerGrant(bank, userId) };
}

async function chainTable(creatorSid: string, mode: 'cash' | 'sng') {
  const tableId = `bk-${randomUUID().slice(0, 8)}`;
  const settings = mode === 'sng'
    ? resolveSngSettings({ mode: 'sng', seats: 3, entryFee: 100, rakeFee: 10, startingStack: 1000, blindStructure: { startingSmallBlind: 10, increaseFactor: 2, levelDurationSeconds: 60, anteStartLevel: null, startingAnte: 0, anteIncreaseFactor: 1 } })
    : POKER_SETTINGS;
  await bank.query("select * from bank.create_table($1, 'poker', $2, $3, null, null, $4, 'open')", [tableId, JSON.stringify(settings), creatorSid, mode]);
  return tableId;
}

const open = (p: { sid: string; wallet: string }, key: string, tableId: string, seatIndex: number | null, amount: number) =>
  bank.query('select * from bank.open_deposit($1, $2, $3, $4, $5, $6, $7)', [p.sid, key, tableId, seatIndex, amount, p.wallet, 4102444800]).then((r) => r.rows[0]);

async function written() {
  const { rows } = await db.owner.query(`select
      (select count(*)::int from bank.deposit_intents) as intents,
      (select count(*)::int from game.table_players) as positions,
      (select count(*)::int from bank.tournament_payments) as payments`);
  return rows[0] as Record<string, number>;
}

test('refusals decided before any write write nothing: a wallet not linked, a frozen table, a fee that is not the entry fee, no seat index', async () => {
  const p = await player();
  const cash = await chainTable(p.sid, 'cash');
  const sng = await chainTable(p.sid, 'sng');
  const before = await written();
  for (let i = 0; i < 3; i++) {
    await expect(open({ ...p, wallet: hex(20) }, hex(32), cash, 0, 100)).rejects.toMatchObject({ message: 'wallet_not_linked' });
    await expect(open(p, hex(32), sng, null, 99)).rejects.toMatchObject({ message: 'tournament_entry_fee_mismatch' });
    await expect(open(p, hex(32), cash, null, 100)).rejects.toMatchObject({ message: 'missing_seat_index' });
  }
  await db.owner.query("update game.tables set status = 'frozen' where table_id = $1", [cash]);
  await expect(open(p, hex(32), cash, 0, 100)).rejects.toMatchObject({ message: 'table_frozen' });
  expect(await written()).toEqual(before);
});

test('a permit key replays once: the deposit as it stands; another amount or table is idempotency_key_reused', async () => {
  const p = await player();
  const tableId = await chainTable(p.sid, 'cash');
  const key = hex(32);
  expect(await open(p, key, tableId, 2, 100)).toMatchObject({ idempotency_key: key, status: 'pending', replayed: false });
  const before = await written();
  expect(await open(p, key, tableId, 2, 100)).toMatchObject({ idempotency_key: key, status: 'pending', replayed: true });
  await expect(open(p, key, tableId, 2, 101)).rejects.toMatchObject({ message: 'idempotency_key_reused' });
  expect(await written()).toEqual(before);
});

test('a tournament entry refunded since reads refunded in bank.deposit_states (the read and the replay of the entry)', async () => {
  const p = await player();
  const tableId = await chainTable(p.sid, 'sng');
  const key = hex(32);
  const tx = hex(32);
  const entry = await open(p, key, tableId, null, 100);
  expect(entry).toMatchObject({ status: 'pending', mode: 'sng', seat_index: expect.any(Number) });
  await bank.query('select bank.submit_deposit($1, $2)', [key, tx]);
  await bank.query('select bank.confirm_deposit($1, $2, $3, $4, $5)', [key, tx, 7, p.wallet, '100000000']);
  // the game reads the deposit back (here: as recorded) and accepts the entry from it
  await game.query('select game.record_chain_deposit($1, $2, $3, $4, $5)', [key, tx, 7, p.wallet, '100000000']);
  await game.query('select * from game.credit_seat($1, $2, $3, $4, $5)', [key, tableId, p.userId, entry.seat_index, 100]);
  await bank.query('select bank.mark_credited($1)', [key]);
  const state = async () => (await bank.query('select status, refund_key from bank.deposit_states where idempotency_key = $1 and user_id = $2', [key, p.userId])).rows[0];
  expect(await state()).toEqual({ status: 'confirmed', refund_key: null });

  const { rows: [refund] } = await bank.query('select * from bank.refund_tournament_entry($1, $2)', [p.sid, tableId]);
  expect(refund).toMatchObject({ outcome: 'refunded', payment_key: `tournament-refund:${key}` });
  expect(await state()).toEqual({ status: 'refunded', refund_key: `tournament-refund:${key}` });
  // the intent itself stays confirmed (the chain took the entry); the replay of its key finds it so
  expect(await open(p, key, tableId, null, 100)).toMatchObject({ status: 'confirmed', replayed: true });
});

test('the bank login reads deposits through bank.deposit_states; the cage and game logins do not', async () => {
  await expect(bank.query('select count(*) from bank.deposit_states')).resolves.toBeDefined();
  for (const login of ['poker_cage', 'poker_game'] as const) {
    await expect(db.pool(login, 1).query('select count(*) from bank.deposit_states')).rejects.toMatchObject({ code: '42501' });
  }
});
