// One contract, two banks: the bank interface's cash path run as one suite against the cage and the
// chain bank (on a real anvil, with permits signed by viem private-key wallets). Table creation,
// sit, top-up, replays, stand-up, a forced withdraw and the refusals answer the same on both; where
// they differ it is one of the spec's journal-native differences, said where it is asserted:
//   - the cage's money is a cage balance (play chips bought by an operator here); the chain bank's
//     is tokens in the player's wallet, moved by a permit;
//   - a forced withdraw: the cage puts the stack in a FREE custody entry; the chain bank pays the
//     wallet that signed the last permit.
import { randomUUID } from 'node:crypto';
import { generatePrivateKey } from 'viem/accounts';
import type { Hex } from 'viem';
import { createChainBankChain } from '../server/chain/evm.ts';
import { expectCleanAudit } from './helpers/cage.ts';
import { satOutSince } from './helpers/game.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { call, POKER_SETTINGS, startMoneyPlatform } from './helpers/money.ts';
import { TEST_SERVICE_KEY } from './helpers/platform.ts';
import { fundedWallet, permitDeposit, type LocalChain } from './helpers/chain-bank.ts';

let db: TestDatabase;
let m: Awaited<ReturnType<typeof startMoneyPlatform>>;
let local: LocalChain;
let reader: ReturnType<typeof createChainBankChain>;

beforeAll(async () => {
  db = await createTestDatabase();
  await db.owner.query("insert into cage.switches (name, enabled) values ('real_money', true) on conflict (name) do update set enabled = true");
  m = await startMoneyPlatform(db, { alsoChainBank: true, env: { CHAIN_CONFIRM_WINDOW_MS: '10000' } });
  local = (m.platform.role('chain-bank') as unknown as { chain: typeof local }).chain;
  reader = createChainBankChain({ rpcUrl: local.url, operatorKey: generatePrivateKey(), deployment: local.deployment });
}, 60_000);
afterAll(async () => {
  await m?.platform.stop();
  await expectCleanAudit(db.pool('poker_cage', 1));
  await db?.drop();
});

interface Player { userId: string; auth: Record<string, string>; key?: Hex; wallet?: `0x${string}` }

/** What differs between the banks: how a player holds money and how a deposit is paid for. */
interface Bank {
  url: () => string;
  player(chips: number): Promise<Player>;
  balance(p: Player): Promise<number>;
  depositBody(p: Player, tableId: string, seatIndex: number, amount: number): Promise<{ body: Record<string, unknown>; headers: Record<string, string> }>;
  forcedDestination(p: Player): RegExp | string;
}

const cage: Bank = {
  url: () => m.cage,
  player: (chips) => m.player(chips),
  balance: (p) => m.balance(p.auth),
  depositBody: async (_p, tableId, seatIndex, amount) => ({ body: { tableId, seatIndex, amount }, headers: { 'idempotency-key': randomUUID() } }),
  forcedDestination: () => /^custody:\d+$/,
};

const chain: Bank = {
  url: () => m.platform.url('chain-bank'),
  async player(chips) {
    const p = await m.player(0);
    return { ...p, ...(await fundedWallet(db, local, p.userId, BigInt(chips))) };
  },
  balance: async (p) => Number((await reader.balanceOf(p.wallet!)) / 1_000_000n),
  depositBody: async (p, tableId, seatIndex, amount) => ({
    body: await permitDeposit(local, { key: p.key!, wallet: p.wallet! }, tableId, BigInt(amount), { seatIndex }), headers: {},
  }),
  forcedDestination: (p) => p.wallet!,
};

describe.each([['cage', cage], ['chain-bank', chain]] as const)('the bank interface on the %s', (_name, bank) => {
  const table = async (p: Player) => {
    const tableId = `bc-${randomUUID().slice(0, 10)}`;
    const r = await call(`${bank.url()}/api/tables`, { headers: p.auth, body: { tableId, gameType: 'poker', settings: POKER_SETTINGS } });
    expect(r).toEqual({ status: 200, body: { tableId, gameType: 'poker', status: 'active' } });
    return tableId;
  };
  const deposit = async (p: Player, tableId: string, seatIndex: number, amount: number, prepared?: Awaited<ReturnType<Bank['depositBody']>>) => {
    const d = prepared ?? (await bank.depositBody(p, tableId, seatIndex, amount));
    return { d, r: await call(`${bank.url()}/api/deposit`, { headers: { ...p.auth, ...d.headers }, body: d.body }) };
  };
  const seats = async (tableId: string) => (await m.room(tableId)).body.seats;

  test('table creation: created active; a duplicate is 409 table_exists; missing fields are coded 400s', async () => {
    const p = await bank.player(0);
    const tableId = await table(p);
    expect(await call(`${bank.url()}/api/tables`, { headers: p.auth, body: { tableId, gameType: 'poker', settings: POKER_SETTINGS } })).toEqual({ status: 409, body: { error: 'table_exists' } });
    expect((await call(`${bank.url()}/api/tables`, { headers: p.auth, body: { gameType: 'poker', settings: POKER_SETTINGS } })).body).toEqual({ error: 'missing_table_id' });
    expect((await call(`${bank.url()}/api/tables`, { headers: p.auth, body: { tableId: `x${tableId}`, settings: POKER_SETTINGS } })).body).toEqual({ error: 'missing_game_type' });
    expect((await call(`${bank.url()}/api/tables`, { body: { tableId: `y${tableId}`, gameType: 'poker', settings: POKER_SETTINGS } })).status).toBe(401);
  });

  test('sit, top up, replay, stand up, replay: the money goes to the seat and back, once', async () => {
    const p = await bank.player(500);
    const tableId = await table(p);
    const first = await deposit(p, tableId, 3, 100);
    expect(first.r.status).toBe(200);
    expect(first.r.body).toMatchObject({ status: 'confirmed', txHash: expect.any(String), idempotencyKey: expect.any(String) });
    expect(await bank.balance(p)).toBe(400);
    // the same deposit again: a replay, nothing moves
    const again = await deposit(p, tableId, 3, 100, first.d);
    expect(again.r.body).toMatchObject({ status: 'confirmed', replay: true, txHash: first.r.body.txHash });
    expect(await bank.balance(p)).toBe(400);
    // a top-up between hands
    expect((await deposit(p, tableId, 3, 50)).r.body).toMatchObject({ status: 'confirmed' });
    expect(await seats(tableId)).toEqual([{ seatIndex: 3, userId: p.userId, chipBalance: '150', status: 'seated' }]);
    expect(await bank.balance(p)).toBe(350);

    const out = await call(`${bank.url()}/api/withdraw`, { headers: p.auth, body: { tableId } });
    expect(out.status).toBe(200);
    expect(out.body).toMatchObject({ status: 'confirmed', amount: 150, txHash: expect.any(String), idempotencyKey: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    expect(await seats(tableId)).toEqual([]);
    expect(await bank.balance(p)).toBe(500);
    const replay = await call(`${bank.url()}/api/withdraw`, { headers: p.auth, body: { tableId } });
    expect(replay.body).toMatchObject({ status: 'confirmed', replay: true, idempotencyKey: out.body.idempotencyKey });
    expect(await bank.balance(p)).toBe(500);
  });

  test('a forced withdraw: the service key and forced:true only; the stack leaves the table (custody on the cage, the signing wallet on chain)', async () => {
    const p = await bank.player(200);
    const tableId = await table(p);
    expect((await deposit(p, tableId, 0, 80)).r.status).toBe(200);
    expect(await call(`${bank.url()}/api/withdraw`, { body: { tableId, forced: true, userId: p.userId } })).toEqual({ status: 401, body: { error: 'forced_withdraw_requires_service_key' } });
    expect((await call(`${bank.url()}/api/withdraw`, { headers: { 'x-service-key': TEST_SERVICE_KEY }, body: { tableId, forced: 'yes', userId: p.userId } })).status).toBe(400);
    // the sit-out timeout's withdraw: only for a player the dealer sat out for the house's idle time
    expect(await call(`${bank.url()}/api/withdraw`, { headers: { 'x-service-key': TEST_SERVICE_KEY }, body: { tableId, forced: true, userId: p.userId } }))
      .toEqual({ status: 409, body: { error: 'player_not_idle' } });
    await satOutSince(db.owner, tableId, p.userId);
    const out = await call(`${bank.url()}/api/withdraw`, { headers: { 'x-service-key': TEST_SERVICE_KEY }, body: { tableId, forced: true, userId: p.userId } });
    expect(out.body).toMatchObject({ status: 'confirmed', amount: 80 });
    const destination = bank.forcedDestination(p);
    if (typeof destination === 'string') expect(out.body.destination).toBe(destination);
    else expect(out.body.destination).toMatch(destination);
    expect(await seats(tableId)).toEqual([]);
  });

  test('refusals: no table id, a table that does not exist, not at the table, a frozen table; nothing moves', async () => {
    const p = await bank.player(100);
    const tableId = await table(p);
    expect(await call(`${bank.url()}/api/withdraw`, { headers: p.auth, body: {} })).toEqual({ status: 400, body: { error: 'missing_table_id' } });
    expect((await call(`${bank.url()}/api/withdraw`, { headers: p.auth, body: { tableId: 'no-such-table' } })).body).toEqual({ error: 'table_not_found' });
    expect((await call(`${bank.url()}/api/withdraw`, { headers: p.auth, body: { tableId } })).body).toEqual({ error: 'not_at_table' });
    await db.owner.query("update game.tables set status = 'frozen' where table_id = $1", [tableId]);
    const frozen = await deposit(p, tableId, 0, 40);
    expect(frozen.r).toEqual({ status: 409, body: { error: 'table_frozen' } });
    expect(await bank.balance(p)).toBe(100);
  });
});
