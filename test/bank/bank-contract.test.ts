// One contract, two banks: the bank interface run as one suite against the cage and the chain bank
// (on a real anvil, with permits signed by viem private-key wallets). The cash path (table creation,
// sit, top-up, replays, stand-up, a forced withdraw, the refusals) and the tournament half (the
// entry fee, its refund, the payouts) answer the same on both; where they differ it is one of the
// spec's journal-native differences, said where it is asserted:
//   - the cage's money is a cage balance (play chips bought by an operator here); the chain bank's
//     is tokens in the player's wallet, moved by a permit;
//   - a forced withdraw: the cage puts the stack in a FREE custody entry; the chain bank pays the
//     wallet that signed the last permit;
//   - a tournament's transaction hashes: the cage's are its ledger refs, the chain bank's the chain's;
//     a payout's destination: the cage balance, or the wallet that signed the winner's entry permit.
import { randomUUID } from 'node:crypto';
import { generatePrivateKey } from 'viem/accounts';
import type { Hex } from 'viem';
import { createChainBankChain } from '../../server/chain/evm.ts';
import { expectCleanAudit } from '../helpers/cage.ts';
import { satOutSince } from '../helpers/game.ts';
import { markHandsAudited } from '../helpers/tournament.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { call, POKER_SETTINGS, startMoneyPlatform } from '../helpers/money.ts';
import { TEST_SERVICE_KEY } from '../helpers/platform.ts';
import { fundedWallet, permitDeposit, type LocalChain } from '../helpers/chain-bank.ts';
import { SNG } from '../helpers/tournament.ts';
import { connect } from '../helpers/ws-client.ts';
import { BANK_ROUTES } from '../../server/bank-contract/contract.ts';
import { openApiPath } from '../../server/http/openapi.ts';
import { calmAction, latestState, liveClient, prng, resultsOf, until } from '../helpers/live.ts';

let db: TestDatabase;
let m: Awaited<ReturnType<typeof startMoneyPlatform>>;
let local: LocalChain;
let reader: ReturnType<typeof createChainBankChain>;

beforeAll(async () => {
  db = await createTestDatabase();
  await db.owner.query("insert into cage.switches (name, enabled) values ('real_money', true) on conflict (name) do update set enabled = true");
  m = await startMoneyPlatform(db, { alsoChainBank: true, alsoWeb: true, env: { CHAIN_CONFIRM_WINDOW_MS: '10000' } });
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
  depositBody(p: Player, tableId: string, seatIndex: number | null, amount: number): Promise<{ body: Record<string, unknown>; headers: Record<string, string> }>;
  forcedDestination(p: Player): RegExp | string;
  payoutDestination(p: Player): string;
}

const cage: Bank = {
  url: () => m.cage,
  player: (chips) => m.player(chips),
  balance: (p) => m.balance(p.auth),
  depositBody: async (_p, tableId, seatIndex, amount) => ({ body: { tableId, ...(seatIndex === null ? {} : { seatIndex }), amount }, headers: { 'idempotency-key': randomUUID() } }),
  forcedDestination: () => /^custody:\d+$/,
  payoutDestination: () => 'cage',
};

const chain: Bank = {
  url: () => m.platform.url('chain-bank'),
  async player(chips) {
    const p = await m.player(0);
    return { ...p, ...(await fundedWallet(db, local, p.userId, BigInt(chips))) };
  },
  balance: async (p) => Number((await reader.balanceOf(p.wallet!)) / 1_000_000n),
  depositBody: async (p, tableId, seatIndex, amount) => {
    const body: Record<string, unknown> = await permitDeposit(local, { key: p.key!, wallet: p.wallet! }, tableId, BigInt(amount), { seatIndex: seatIndex ?? 0 });
    if (seatIndex === null) delete body.seatIndex;
    return { body, headers: {} };
  },
  forcedDestination: (p) => p.wallet!,
  payoutDestination: (p) => p.wallet!,
};

describe.each([['cage', cage], ['chain-bank', chain]] as const)('the bank interface on the %s', (_name, bank) => {
  const table = async (p: Player) => {
    const tableId = `bc-${randomUUID().slice(0, 10)}`;
    const r = await call(`${bank.url()}/api/tables`, { headers: p.auth, body: { tableId, gameType: 'poker', settings: POKER_SETTINGS } });
    expect(r).toEqual({ status: 200, body: { tableId, gameType: 'poker', status: 'active' } });
    return tableId;
  };
  const deposit = async (p: Player, tableId: string, seatIndex: number | null, amount: number, prepared?: Awaited<ReturnType<Bank['depositBody']>>) => {
    const d = prepared ?? (await bank.depositBody(p, tableId, seatIndex, amount));
    return { d, r: await call(`${bank.url()}/api/deposit`, { headers: { ...p.auth, ...d.headers }, body: d.body }) };
  };
  const seats = async (tableId: string) => (await m.room(tableId)).body.seats;

  test('the contract\'s every route is served (and described) by this bank', async () => {
    const doc = await call(`${bank.url()}/openapi.json`);
    expect(doc.status).toBe(200);
    for (const [method, path] of BANK_ROUTES) {
      expect(doc.body.paths[openApiPath(path)]?.[method.toLowerCase()]).toBeDefined();
    }
  });

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

  test('table creation refusals: invalid settings are 400 validation_failed with the issues; real money off is 403 real_money_disabled', async () => {
    const p = await bank.player(0);
    const bad = await call(`${bank.url()}/api/tables`, { headers: p.auth, body: { tableId: `bv-${randomUUID().slice(0, 8)}`, gameType: 'poker', settings: { ...POKER_SETTINGS, bigBlind: 1 } } });
    expect(bad).toMatchObject({ status: 400, body: { error: 'validation_failed', issues: expect.any(Array) } });
    await db.owner.query("update cage.switches set enabled = false where name = 'real_money'");
    try {
      const real = await call(`${bank.url()}/api/tables`, { headers: p.auth, body: { tableId: `br-${randomUUID().slice(0, 8)}`, gameType: 'poker', settings: POKER_SETTINGS, moneyKind: 'real' } });
      expect(real).toEqual({ status: 403, body: { error: 'real_money_disabled' } });
    } finally {
      await db.owner.query("update cage.switches set enabled = true where name = 'real_money'");
    }
  });

  test('GET /api/deposits/:key: the caller\'s own deposit as it stands; another player\'s, an unknown key: 404 deposit_not_found; a malformed key: 400', async () => {
    const p = await bank.player(200);
    const other = await bank.player(0);
    const tableId = await table(p);
    const { r } = await deposit(p, tableId, 4, 70);
    expect(r.status).toBe(200);
    const key = r.body.idempotencyKey as string;
    const read = await call(`${bank.url()}/api/deposits/${encodeURIComponent(key)}`, { headers: p.auth });
    expect(read).toMatchObject({ status: 200, body: { idempotencyKey: key, status: 'confirmed', txHash: r.body.txHash, tableId, seatIndex: 4, amount: '70', moneyKind: expect.any(String) } });
    expect(await call(`${bank.url()}/api/deposits/${encodeURIComponent(key)}`, { headers: other.auth })).toEqual({ status: 404, body: { error: 'deposit_not_found' } });
    expect(await call(`${bank.url()}/api/deposits/0x${'ab'.repeat(32)}`, { headers: p.auth })).toEqual({ status: 404, body: { error: 'deposit_not_found' } });
    expect(await call(`${bank.url()}/api/deposits/${'k'.repeat(129)}`, { headers: p.auth })).toMatchObject({ status: 400, body: { error: 'bad_request' } });
    expect((await call(`${bank.url()}/api/deposits/${encodeURIComponent(key)}`)).status).toBe(401);
  });

  test('a withdraw repeated after its seat was settled replays within the contract\'s window (one, in SQL), and is not_at_table after it', async () => {
    const p = await bank.player(200);
    const tableId = await table(p);
    expect((await deposit(p, tableId, 1, 60)).r.status).toBe(200);
    const out = await call(`${bank.url()}/api/withdraw`, { headers: p.auth, body: { tableId } });
    expect(out.body).toMatchObject({ status: 'confirmed', amount: 60 });
    const { rows: [{ secs }] } = await db.owner.query('select extract(epoch from cage.withdraw_replay_window())::int as secs');
    expect(secs).toBeGreaterThan(60);
    const intents = bank === chain ? 'bank.withdraw_intents' : 'cage.withdraw_intents';
    const age = (seconds: number) => db.owner.query(`update ${intents} set created_at = now() - make_interval(secs => $2) where idempotency_key = $1`, [out.body.idempotencyKey, seconds]);
    await age(secs - 60);
    expect((await call(`${bank.url()}/api/withdraw`, { headers: p.auth, body: { tableId } })).body).toMatchObject({ status: 'confirmed', replay: true, idempotencyKey: out.body.idempotencyKey });
    await age(secs + 60);
    expect(await call(`${bank.url()}/api/withdraw`, { headers: p.auth, body: { tableId } })).toEqual({ status: 404, body: { error: 'not_at_table' } });
    expect(await bank.balance(p)).toBe(200);
  });

  test('the websocket: sit and stand_up at a table of this bank go to this bank (one platform serves both)', async () => {
    const p = await bank.player(300);
    const tableId = await table(p);
    const ws = await connect(`${m.game.replace(/^http/, 'ws')}/ws`, p.auth);
    try {
      await ws.next((x) => x.type === 'hello');
      ws.send({ type: 'join', tableId, ref: 'j' });
      expect(await ws.next((x) => x.ref === 'j')).toMatchObject({ type: 'joined' });
      const d = await bank.depositBody(p, tableId, 2, 100);
      const key = d.headers['idempotency-key'];
      ws.send({ type: 'sit', ...d.body, ...(key ? { idempotencyKey: key } : {}), ref: 's' });
      expect(await ws.next((x) => x.ref === 's', 30_000)).toMatchObject({ type: 'seated', tableId, seatIndex: 2, chipBalance: '100' });
      expect(await seats(tableId)).toEqual([{ seatIndex: 2, userId: p.userId, chipBalance: '100', status: 'seated' }]);
      expect(await bank.balance(p)).toBe(200);
      ws.send({ type: 'stand_up', tableId, ref: 'u' });
      expect(await ws.next((x) => x.ref === 'u', 30_000)).toMatchObject({ type: 'stood_up', tableId, amount: '100', txHash: expect.any(String) });
      expect(await seats(tableId)).toEqual([]);
      expect(await bank.balance(p)).toBe(300);
    } finally {
      await ws.close();
    }
  });

  test('a table of the other bank: a withdraw (voluntary or forced) refused with the contract\'s code before the seat is stood up', async () => {
    const other = bank === cage ? chain : cage;
    const own = bank === cage ? 'not_a_cage_table' : 'not_a_chain_table';
    const q = await other.player(200);
    const tableId = `bo-${randomUUID().slice(0, 8)}`;
    expect((await call(`${other.url()}/api/tables`, { headers: q.auth, body: { tableId, gameType: 'poker', settings: POKER_SETTINGS } })).status).toBe(200);
    const d = await other.depositBody(q, tableId, 1, 50);
    expect((await call(`${other.url()}/api/deposit`, { headers: { ...q.auth, ...d.headers }, body: d.body })).status).toBe(200);
    const before = await seats(tableId);
    expect(before).toEqual([{ seatIndex: 1, userId: q.userId, chipBalance: '50', status: 'seated' }]);
    expect(await call(`${bank.url()}/api/withdraw`, { headers: q.auth, body: { tableId } })).toEqual({ status: 409, body: { error: own } });
    expect(await call(`${bank.url()}/api/withdraw`, { headers: { 'x-service-key': TEST_SERVICE_KEY }, body: { tableId, forced: true, userId: q.userId } })).toEqual({ status: 409, body: { error: own } });
    expect(await seats(tableId)).toEqual(before);
    expect(await other.balance(q)).toBe(150);
    expect((await call(`${other.url()}/api/withdraw`, { headers: q.auth, body: { tableId } })).body).toMatchObject({ status: 'confirmed', amount: 50 });
    expect(await other.balance(q)).toBe(200);
  });

  test('through the web role\'s proxy: the deposit, its read and the withdraw reach the table\'s own bank', async () => {
    const gw = `${m.platform.url('web')}/api/gw/bank`;
    const p = await bank.player(200);
    const tableId = await table(p);
    const d = await bank.depositBody(p, tableId, 5, 40);
    const r = await call(`${gw}/api/deposit`, { headers: { ...p.auth, ...d.headers }, body: d.body });
    expect(r).toMatchObject({ status: 200, body: { status: 'confirmed', seatIndex: 5, chipBalance: '40' } });
    expect(await bank.balance(p)).toBe(160);
    const read = await call(`${gw}/api/deposits/${encodeURIComponent(r.body.idempotencyKey)}`, { headers: p.auth });
    expect(read).toMatchObject({ status: 200, body: { idempotencyKey: r.body.idempotencyKey, status: 'confirmed', tableId, amount: '40' } });
    expect(await call(`${gw}/api/deposits/never-used`, { headers: p.auth })).toEqual({ status: 404, body: { error: 'deposit_not_found' } });
    const out = await call(`${gw}/api/withdraw`, { headers: p.auth, body: { tableId } });
    expect(out).toMatchObject({ status: 200, body: { status: 'confirmed', amount: 40 } });
    expect(await bank.balance(p)).toBe(200);
    expect(await call(`${gw}/api/tournament/unregister`, { headers: p.auth, body: { tableId } })).toEqual({ status: 400, body: { error: 'not_a_tournament' } });
    expect(await call(`${gw}/api/withdraw`, { headers: p.auth, body: { tableId: 'no-such-table' } })).toEqual({ status: 404, body: { error: 'table_not_found' } });
  });

  describe('tournaments (sng)', () => {
    const sngTable = async (p: Player, over: Record<string, unknown> = {}) => {
      const tableId = `bs-${randomUUID().slice(0, 10)}`;
      const r = await call(`${bank.url()}/api/tables`, { headers: p.auth, body: { tableId, gameType: 'poker', settings: SNG({ clockFactor: 1, ...over }) } });
      expect(r).toEqual({ status: 200, body: { tableId, gameType: 'poker', status: 'active' } });
      return tableId;
    };
    const unregister = (p: Player, tableId: string) => call(`${bank.url()}/api/tournament/unregister`, { headers: p.auth, body: { tableId } });

    test('the entry fee: another amount refused; the entry paid once (its replay answers it, a second entry is refused); the refund while registering pays it back once', async () => {
      const host = await bank.player(0);
      const tableId = await sngTable(host, { seats: 3 });
      const a = await bank.player(300);
      expect((await deposit(a, tableId, null, 99)).r).toEqual({ status: 400, body: { error: 'tournament_entry_fee_mismatch' } });
      const paid = await deposit(a, tableId, null, 100);
      expect(paid.r.status).toBe(200);
      expect(paid.r.body).toMatchObject({ status: 'confirmed', txHash: expect.any(String), tournamentState: 'registering', registeredCount: 1, seatIndex: expect.any(Number) });
      expect(await bank.balance(a)).toBe(200);
      expect((await deposit(a, tableId, null, 100, paid.d)).r.body).toMatchObject({ status: 'confirmed', replay: true, txHash: paid.r.body.txHash });
      expect((await deposit(a, tableId, null, 100)).r).toEqual({ status: 409, body: { error: 'tournament_already_registered' } });
      expect(await bank.balance(a)).toBe(200);
      // a withdraw is not how tournament money leaves
      expect((await call(`${bank.url()}/api/withdraw`, { headers: a.auth, body: { tableId } })).body).toEqual({ error: 'stand_up_not_allowed_in_tournament' });

      const refund = await unregister(a, tableId);
      expect(refund.status).toBe(200);
      expect(refund.body).toMatchObject({ status: 'refunded', tableId, amount: '100', txHash: expect.any(String), registeredCount: 0 });
      expect(await bank.balance(a)).toBe(300);
      expect(await unregister(a, tableId)).toEqual({ status: 404, body: { error: 'tournament_not_registered' } });
      expect(await bank.balance(a)).toBe(300);
      // the entry's key replayed: what is true now (refunded), as a replay; nothing moves
      const replay = await deposit(a, tableId, null, 100, paid.d);
      expect(replay.r).toMatchObject({ status: 200, body: { status: 'refunded', replay: true, txHash: paid.r.body.txHash, refundTxHash: expect.any(String) } });
      expect(await bank.balance(a)).toBe(300);
    });

    test('unregister refusals: no table id 400, not authenticated 401, a table that does not exist 404, a cash table 400 not_a_tournament; nothing moves', async () => {
      const p = await bank.player(100);
      const cashTable = await table(p);
      expect((await call(`${bank.url()}/api/tournament/unregister`, { headers: p.auth, body: {} })).status).toBe(400);
      expect((await call(`${bank.url()}/api/tournament/unregister`, { body: { tableId: cashTable } })).status).toBe(401);
      expect(await unregister(p, 'no-such-table')).toEqual({ status: 404, body: { error: 'table_not_found' } });
      expect(await unregister(p, cashTable)).toEqual({ status: 400, body: { error: 'not_a_tournament' } });
      expect(await bank.balance(p)).toBe(100);
    });

    test('the websocket: stand_up while the tournament registers refunds the entry through this bank', async () => {
      const host = await bank.player(0);
      const tableId = await sngTable(host, { seats: 3 });
      const a = await bank.player(300);
      expect((await deposit(a, tableId, null, 100)).r.body).toMatchObject({ status: 'confirmed' });
      expect(await bank.balance(a)).toBe(200);
      const ws = await connect(`${m.game.replace(/^http/, 'ws')}/ws`, a.auth);
      try {
        await ws.next((x) => x.type === 'hello');
        ws.send({ type: 'join', tableId, ref: 'j' });
        expect(await ws.next((x) => x.ref === 'j')).toMatchObject({ type: 'joined' });
        ws.send({ type: 'stand_up', tableId, ref: 'u' });
        expect(await ws.next((x) => x.ref === 'u', 30_000)).toMatchObject({ type: 'tournament_unregistered', tableId, status: 'refunded', amount: '100' });
        expect(await bank.balance(a)).toBe(300);
      } finally {
        await ws.close();
      }
    });

    test('payouts: the service key only, the payout row\'s amount and place; paid once to the winner; the last one closes the tournament', async () => {
      const host = await bank.player(0);
      const tableId = await sngTable(host);
      const cashTable = await table(host);
      const [a, b] = [await bank.player(300), await bank.player(300)];
      for (const p of [a, b]) expect((await deposit(p, tableId, null, 100)).r.body).toMatchObject({ status: 'confirmed' });
      // the field is full: play starts (as the worker's start job would), and a played-out end leaves a the winner
      await db.owner.query("update game.tables set starts_at = now() - interval '1 s' where table_id = $1", [tableId]);
      await db.owner.query('select game.tournament_begin_play($1)', [tableId]);
      await db.owner.query(
        `update game.table_players set tournament_stack = case when user_id = $2 then 2000 else 0 end,
                elimination_order = case when user_id = $2 then 1 else 2 end, tie_place = case when user_id = $2 then 1 else 2 end
          where table_id = $1 and status <> 'closed'`, [tableId, a.userId]);
      await db.owner.query("update game.tables set tournament_state = 'ended', ended_at = now(), current_hand_id = null where table_id = $1", [tableId]);
      await markHandsAudited(db.owner, tableId);
      await db.owner.query('select cage.settle_tournament($1)', [tableId]);
      // (100 - 10) x 2 = 180 to the one paid place (round(2 x 30%) = 1)
      const payout = (body: Record<string, unknown>, headers: Record<string, string> = { 'x-service-key': TEST_SERVICE_KEY }) =>
        call(`${bank.url()}/api/withdraw`, { headers, body });
      expect(await payout({ tableId, payoutIntent: { position: 1, amount: 180 } }, a.auth)).toEqual({ status: 401, body: { error: 'payout_requires_service_key' } });
      expect(await payout({ tableId: cashTable, payoutIntent: { position: 1, amount: 180 } })).toEqual({ status: 400, body: { error: 'not_a_tournament' } });
      expect(await payout({ tableId, payoutIntent: { position: 1, amount: 181 } })).toEqual({ status: 400, body: { error: 'payout_amount_mismatch' } });
      expect(await payout({ tableId, payoutIntent: { position: 2, amount: 0 } })).toEqual({ status: 404, body: { error: 'payout_not_found' } });
      expect((await payout({ tableId, payoutIntent: { position: 'first', amount: 180 } })).status).toBe(400);
      expect((await payout({ tableId: 'no-such-table', payoutIntent: { position: 1, amount: 180 } })).status).toBe(404);
      const paid = await payout({ tableId, payoutIntent: { position: 1, amount: 180 } });
      expect(paid).toMatchObject({ status: 200, body: { status: 'confirmed', amount: 180, position: 1, userId: a.userId, tournamentState: 'closed', destination: bank.payoutDestination(a) } });
      expect(await bank.balance(a)).toBe(380);
      expect(await bank.balance(b)).toBe(200);
      const again = await payout({ tableId, payoutIntent: { position: 1, amount: 180 } });
      expect(again.body).toMatchObject({ status: 'confirmed', replay: true, txHash: paid.body.txHash });
      expect(await bank.balance(a)).toBe(380);
      // the house fee (10 x 2) stays where the entries went: the tournament's pool on the cage, the table's vault balance on chain
      if (bank === chain) expect(await reader.tableBalance(tableId)).toBe(20n * 1_000_000n);
      else expect((await db.owner.query("select balance from cage.cage_accounts where account_type = 'tournament_pool' and scope = $1", [tableId])).rows[0].balance).toBe(20n);
      const { rows: [t] } = await db.owner.query('select tournament_state from game.tables where table_id = $1', [tableId]);
      expect(t.tournament_state).toBe('closed');
      const { rows: [i] } = await db.owner.query('select confirmed_at, tx_hash from cage.payout_intents where table_id = $1 and position = 1', [tableId]);
      expect(i).toMatchObject({ confirmed_at: expect.any(Date), tx_hash: paid.body.txHash });
      await expectCleanAudit(db.pool('poker_cage', 1));
    });
  });
});

describe('both banks under one platform', () => {
  test('a cage table and a chain table play side by side: websocket sits, hands dealt on both, stand-ups; each bank\'s money back where it came from', async () => {
    const live = liveClient(m, db);
    const settings = { ...POKER_SETTINGS, rakePercent: 0, rakeCap: 0 };
    try {
      const players = [await live.player(300), await live.player(300)];
      const wallets = await Promise.all(players.map((p) => fundedWallet(db, local, p.userId, 300n)));
      const tables = { cage: `sc-${randomUUID().slice(0, 8)}`, chain: `sb-${randomUUID().slice(0, 8)}` };
      expect((await call(`${m.cage}/api/tables`, { headers: players[0]!.auth, body: { tableId: tables.cage, gameType: 'poker', settings } })).status).toBe(200);
      expect((await call(`${m.platform.url('chain-bank')}/api/tables`, { headers: players[0]!.auth, body: { tableId: tables.chain, gameType: 'poker', settings } })).status).toBe(200);
      for (const [i, p] of players.entries()) {
        await live.join(p, tables.cage);
        await live.join(p, tables.chain);
        expect(await live.request(p.ws, { type: 'sit', tableId: tables.cage, seatIndex: i, amount: 100, idempotencyKey: randomUUID() }, 30_000)).toMatchObject({ type: 'seated', chipBalance: '100' });
        const permit = await permitDeposit(local, wallets[i]!, tables.chain, 100n, { seatIndex: i });
        expect(await live.request(p.ws, { type: 'sit', ...permit }, 30_000)).toMatchObject({ type: 'seated', chipBalance: '100' });
      }
      // both tables deal; the players check or call their way through a hand on each
      const rng = prng(32);
      const answered = new Set<string>();
      await until(async () => {
        for (const p of players) {
          for (const tableId of Object.values(tables)) {
            const s = latestState(p.ws, tableId);
            const turn = s?.legal ? `${tableId}:${s.legal.handId}:${s.legal.seq}` : undefined;
            if (turn && !answered.has(turn)) {
              answered.add(turn);
              await live.request(p.ws, { type: 'action', tableId, handId: s!.legal.handId, seq: s!.legal.seq, ...calmAction(rng, s!.legal) });
            }
          }
        }
        return Object.values(tables).every((tableId) => resultsOf(players[0]!.ws, tableId).length > 0);
      }, 'a hand played on each table', 60_000, 20);
      for (const tableId of Object.values(tables)) await live.standUpAll(players, tableId);
      // no rake: every chip is back where it came from, on each bank
      expect((await Promise.all(players.map((p) => m.balance(p.auth)))).reduce((a, b) => a + b)).toBe(600);
      expect((await Promise.all(wallets.map(async (w) => (await reader.balanceOf(w.wallet)) / 1_000_000n))).reduce((a, b) => a + b)).toBe(600n);
      expect(await reader.tableBalance(tables.chain)).toBe(0n);
      await expectCleanAudit(db.pool('poker_cage', 1));
    } finally {
      await live.closeAll();
    }
  }, 120_000);
});
