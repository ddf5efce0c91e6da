// Issue 31, class 7 (a payment is the chain's, paid once): two chain-bank processes (two roles, a
// request and the reconciler) paying the same pending withdrawal at once. Each holds the operator
// key and reads the same pending row; without one sender per payment both send a vault withdraw
// and the player is paid twice, out of the other players' tokens under the same table key. The same
// for a tournament payment (a registrant's entry refund, sent by the vault's operator withdrawal). The
// chain is a real anvil, the game and the chain bank the real roles, the two processes each their
// own pool (the bank login) and their own client of the operator key, on one database.
import { randomUUID } from 'node:crypto';
import { createChainBankChain } from '../../server/chain/evm.ts';
import { ANVIL_DEV_KEYS } from '../../server/chain/anvil.ts';
import { payWithdrawal } from '../../server/bank/withdraw.ts';
import { payTournamentPayment, type PaymentRow } from '../../server/bank/tournaments.ts';
import type { BankDeps } from '../../server/bank/deposit.ts';
import { bridgedUser } from '../helpers/auth.ts';
import { CHAIN_ISSUER, fundedWallet, permitDeposit, type LocalChain, startChainBank } from '../helpers/chain-bank.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { standUp, withdrawKey } from '../helpers/game.ts';
import { call, POKER_SETTINGS } from '../helpers/money.ts';
import { liveClient, type LiveClient } from '../helpers/live.ts';
import { SNG } from '../helpers/tournament.ts';
import { type TestPlatform } from '../helpers/platform.ts';

const ISSUER = CHAIN_ISSUER;
const C = 1_000_000n;

let db: TestDatabase;
let platform: TestPlatform;
let bank: string;
let local: LocalChain;
let reader: ReturnType<typeof createChainBankChain>;
let live: LiveClient;

beforeAll(async () => {
  db = await createTestDatabase();
  ({ platform, bank, local, reader } = await startChainBank(db));
  live = liveClient({ game: platform.url('game') } as Parameters<typeof liveClient>[0], db);
}, 60_000);
afterAll(async () => {
  await live?.closeAll();
  await platform?.stop();
  await db?.drop();
});

async function player(chips: bigint) {
  const { userId, jwt } = await bridgedUser(db, { issuer: ISSUER });
  return { userId, ...(await fundedWallet(db, local, userId, chips)), auth: { authorization: `Bearer ${jwt}` } };
}

/** A chain-bank process of its own: its own pool of the bank login, its own client of the operator key. */
function bankProcess(): BankDeps {
  const chain = createChainBankChain({ rpcUrl: local.url, operatorKey: ANVIL_DEV_KEYS[1]!, deployment: local.deployment });
  const log = { error: () => undefined, warn: () => undefined, info: () => undefined };
  return { pool: db.pool('poker_bank', 2), chain: () => chain, log, confirmWindowMs: 10_000 } as unknown as BankDeps;
}

test('class 7: two processes pay the same pending withdrawal at once: paid once, the other players\' tokens stay in the vault', async () => {
  const p = await player(100n);
  const other = await player(100n);
  const tableId = `race-${randomUUID().slice(0, 10)}`;
  expect(await call(`${bank}/api/tables`, { headers: p.auth, body: { tableId, gameType: 'poker', settings: POKER_SETTINGS } })).toMatchObject({ status: 200 });
  for (const [who, seat] of [[p, 0], [other, 1]] as const) {
    const r = await call(`${bank}/api/deposit`, { headers: who.auth, body: await permitDeposit(local, who, tableId, 100n, { seatIndex: seat }) });
    expect(r.body).toMatchObject({ status: 'confirmed' });
  }
  expect(await reader.tableBalance(tableId)).toBe(200n * C);
  // p stood up by the game, the withdrawal opened pending (what a request does before it pays)
  const up = await standUp(db.pool('poker_game', 1), tableId, p.userId);
  const { rows: [row] } = await db.pool('poker_bank', 1).query('select * from bank.open_withdrawal($1, $2, $3, $4, $5, $6, $7, $8, $9)', [
    p.userId, tableId, up.player_id, up.chip_balance, up.history_hash, withdrawKey(p.userId, tableId, up.history_hash, BigInt(up.chip_balance)), 'cash_out', false, null,
  ]);
  expect(row).toMatchObject({ status: 'pending', destination: p.wallet });
  // two processes, each handed the same pending row (a request and the reconciler, two roles)
  const outcomes = await Promise.allSettled([bankProcess(), bankProcess()].map((deps) => payWithdrawal(deps, tableId, row, 10_000)));
  expect(outcomes.some((o) => o.status === 'fulfilled' && o.value.status === 'confirmed')).toBe(true);
  expect(await reader.balanceOf(p.wallet)).toBe(100n * C);
  expect(await reader.tableBalance(tableId)).toBe(100n * C);
  expect((await db.owner.query('select status, prior_tx_hashes from bank.withdraw_intents where idempotency_key = $1', [row.idempotency_key])).rows[0])
    .toEqual({ status: 'confirmed', prior_tx_hashes: [] });
  // the reconciler after: nothing more is paid
  await (platform.role('chain-bank') as unknown as { reconcileNow(): Promise<void> }).reconcileNow();
  expect(await reader.balanceOf(p.wallet)).toBe(100n * C);
  expect(await reader.tableBalance(tableId)).toBe(100n * C);
}, 60_000);

test('class 7: two processes pay the same pending tournament refund at once: paid once, the other registrant\'s entry stays in the vault', async () => {
  const host = await player(0n);
  const tableId = `race-${randomUUID().slice(0, 10)}`;
  expect(await call(`${bank}/api/tables`, { headers: host.auth, body: { tableId, gameType: 'poker', settings: SNG({ seats: 3 }) } })).toMatchObject({ status: 200 });
  const [a, b] = [await player(100n), await player(100n)];
  for (const p of [a, b]) {
    const ws = await live.open('/ws', p.auth);
    const me = { ...p, jwt: p.auth.authorization.slice(7), agentId: null, ws };
    await live.join(me, tableId);
    const r = await live.request(ws, { type: 'register_for_tournament', tableId });
    expect(r).toMatchObject({ type: 'tournament_registered', entryFee: '100' });
    const paid = await call(`${bank}/api/deposit`, { headers: p.auth, body: await permitDeposit(local, p, tableId, 100n, { seatIndex: r.seatIndex }) });
    expect(paid.body).toMatchObject({ status: 'confirmed' });
  }
  expect(await reader.tableBalance(tableId)).toBe(200n * C);
  // a's registration withdrawn (the bank's unregister: its refund opened pending), not paid yet
  const sid = JSON.parse(Buffer.from(a.auth.authorization.split('.')[1]!, 'base64url').toString()).sid as string;
  const { rows: [opened] } = await db.pool('poker_bank', 1).query('select payment_key from bank.refund_tournament_entry($1, $2)', [sid, tableId]);
  const { rows: [row] } = await db.owner.query<PaymentRow>('select * from bank.tournament_payments where payment_key = $1', [opened.payment_key]);
  expect(row).toMatchObject({ kind: 'refund', status: 'pending' });
  const outcomes = await Promise.allSettled([bankProcess(), bankProcess()].map((deps) => payTournamentPayment(deps, row!, 10_000)));
  expect(outcomes.some((o) => o.status === 'fulfilled' && o.value.status === 'confirmed')).toBe(true);
  expect(await reader.balanceOf(a.wallet)).toBe(100n * C);
  expect(await reader.tableBalance(tableId)).toBe(100n * C);
  expect((await db.owner.query('select status, prior_tx_hashes from bank.tournament_payments where payment_key = $1', [row!.payment_key])).rows[0])
    .toEqual({ status: 'confirmed', prior_tx_hashes: [] });
  await (platform.role('chain-bank') as unknown as { reconcileNow(): Promise<void> }).reconcileNow();
  expect(await reader.balanceOf(a.wallet)).toBe(100n * C);
  expect(await reader.tableBalance(tableId)).toBe(100n * C);
}, 60_000);
