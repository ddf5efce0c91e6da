// A Sit-and-Go through the chain bank: the game role's bank is the chain bank (no cage runs, so the
// game falls back to its chain-bank peer), on a real anvil with permits signed by viem private-key
// wallets, and the worker drives the lifecycle and posts the payout to the chain bank. Two players
// register over the websocket, pay the entry fee with a permit, and play to the end; the winner's
// wallet holds what it kept plus the prize, the house fee stays in the table's vault balance, and the
// cage's audit stays empty. A registrant standing up while it registers is refunded on chain.
import { randomUUID } from 'node:crypto';
import { generatePrivateKey } from 'viem/accounts';
import { createChainBankChain } from '../server/chain/evm.ts';
import { bridgedUser } from './helpers/auth.ts';
import { fundedWallet, permitDeposit, type LocalChain } from './helpers/chain-bank.ts';
import { expectCleanAudit } from './helpers/cage.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { liveClient, prng, type LiveClient, type LivePlayer, type Msg } from './helpers/live.ts';
import { call } from './helpers/money.ts';
import { startTestPlatform, type TestPlatform } from './helpers/platform.ts';
import { playBot, SNG, tableMessages } from './helpers/tournament.ts';

const SECRET = 'chain-sng-test-secret-0123456789abcdef';
const ISSUER = 'https://auth.poker.test';
const C = 1_000_000n;

let db: TestDatabase;
let platform: TestPlatform;
let bank: string;
let local: LocalChain;
let reader: ReturnType<typeof createChainBankChain>;
let live: LiveClient;

beforeAll(async () => {
  db = await createTestDatabase();
  await db.owner.query("insert into cage.switches (name, enabled) values ('real_money', true) on conflict (name) do update set enabled = true");
  platform = await startTestPlatform({
    databaseUrl: db.url, roles: ['auth', 'game', 'chain-bank', 'worker'],
    env: { AUTH_SECRET: SECRET, AUTH_BASE_URL: ISSUER, ENABLE_TEST_AUTH: 'true', CHAIN_CONFIRM_WINDOW_MS: '10000', HAND_DELAY_MS: '5' },
  });
  bank = platform.url('chain-bank');
  local = (platform.role('chain-bank') as unknown as { chain: typeof local }).chain;
  reader = createChainBankChain({ rpcUrl: local.url, operatorKey: generatePrivateKey(), deployment: local.deployment });
  // the websocket clients only (this platform has no cage to buy chips from)
  live = liveClient({ game: platform.url('game') } as Parameters<typeof liveClient>[0], db);
}, 60_000);
afterAll(async () => {
  await live?.closeAll();
  await platform?.stop();
  // a chain-bank tournament's money is in the vault: the cage's books stay empty beside it
  if (db) await expectCleanAudit(db.pool('poker_cage', 1));
  await db?.drop();
});

type ChainPlayer = LivePlayer & { key: `0x${string}`; wallet: `0x${string}` };

/** A bridged player with a linked wallet holding `chips` on chain, connected to the game's websocket. */
async function player(chips: bigint): Promise<ChainPlayer> {
  const { userId, jwt } = await bridgedUser(db, { secret: SECRET, issuer: ISSUER });
  const auth = { authorization: `Bearer ${jwt}` };
  const w = await fundedWallet(db, local, userId, chips);
  return { userId, jwt, auth, agentId: null, ws: await live.open('/ws', auth), ...w };
}

async function sngTable(host: ChainPlayer, over: Record<string, unknown> = {}) {
  const tableId = `cs-${randomUUID().slice(0, 10)}`;
  const r = await call(`${bank}/api/tables`, { headers: host.auth, body: { tableId, gameType: 'poker', settings: SNG(over) } });
  expect(r).toEqual({ status: 200, body: { tableId, gameType: 'poker', status: 'active' } });
  return tableId;
}

/** Registered over the websocket (a server-assigned seat held), then the entry fee paid with a permit naming it. */
async function enter(p: ChainPlayer, tableId: string) {
  await live.join(p, tableId);
  const r = await live.request(p.ws, { type: 'register_for_tournament', tableId });
  expect(r).toMatchObject({ type: 'tournament_registered', seatIndex: expect.any(Number), entryFee: '100' });
  const paid = await call(`${bank}/api/deposit`, { headers: p.auth, body: await permitDeposit(local, p, tableId, 100n, { seatIndex: r.seatIndex }) });
  expect(paid).toMatchObject({ status: 200, body: { status: 'confirmed', txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) } });
  return paid.body;
}

const balance = async (p: ChainPlayer) => (await reader.balanceOf(p.wallet)) / C;

test('two players play a Sit-and-Go through the chain bank: the winner is paid the prize on chain, the house fee stays in the vault, the books clean', async () => {
  const host = await player(0n);
  const tableId = await sngTable(host, { deckSeed: 'chain-sng' });
  const spectator = await player(0n);
  await live.join(spectator, tableId);
  const players = [await player(500n), await player(500n)];
  for (const p of players) await enter(p, tableId);
  expect(await Promise.all(players.map(balance))).toEqual([400n, 400n]);
  expect(await reader.tableBalance(tableId)).toBe(200n * C);

  await Promise.all(players.map((p, i) => playBot(live, p, tableId, prng(2026 + i), 'random', 60_000)));
  const closed = await spectator.ws.next((x) => x.tableId === tableId && x.type === 'tournament_state_changed' && x.state === 'closed', 60_000);
  expect(typeof closed.closedAt).toBe('number');

  // the game's places and payouts: one paid place, (100 - 10) x 2 = 180, confirmed with the chain's transaction
  const { rows: places } = await db.owner.query('select user_id, elimination_order from game.table_players where table_id = $1 order by elimination_order', [tableId]);
  expect(places.map((r) => r.elimination_order)).toEqual([1, 2]);
  const winner = players.find((p) => p.userId === places[0].user_id)!;
  const loser = players.find((p) => p.userId === places[1].user_id)!;
  const { rows: payouts } = await db.owner.query('select position, user_id, amount, confirmed_at, tx_hash from cage.payout_intents where table_id = $1', [tableId]);
  expect(payouts).toEqual([{ position: 1, user_id: winner.userId, amount: 180n, confirmed_at: expect.any(Date), tx_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/) }]);
  const paidOut = await reader.withdrawalOf(payouts[0].tx_hash);
  expect(paidOut).toMatchObject({ event: 'PaidOut', amount: 180n * C });
  expect(paidOut!.to.toLowerCase()).toBe(winner.wallet.toLowerCase());

  // on chain: what the game says
  expect(await balance(winner)).toBe(400n + 180n);
  expect(await balance(loser)).toBe(400n);
  expect(await reader.tableBalance(tableId)).toBe(20n * C); // rakeFee x seats, never moved

  const seen = tableMessages(spectator, tableId);
  expect(seen.filter((x) => x.type === 'tournament_state_changed').map((x) => x.state)).toEqual(['starting', 'playing', 'ended', 'settling', 'closed']);
  expect(seen.find((x) => x.type === 'tournament_ended')?.payouts).toEqual([{ position: 1, userId: winner.userId, amount: '180' }]);
  const settled = seen.find((x) => x.type === 'tournament_payout_settled') as Msg;
  expect(settled).toMatchObject({ position: 1, userId: winner.userId, txHash: payouts[0].tx_hash });
  await expectCleanAudit(db.pool('poker_cage', 1));
}, 120_000);

test('stand_up while registering: the game asks the chain bank, which pays the entry back on chain; once it starts, refused', async () => {
  const host = await player(0n);
  const tableId = await sngTable(host, { clockFactor: 1 });
  const a = await player(300n);
  const entry = await enter(a, tableId);
  expect(entry).toMatchObject({ tournamentState: 'registering', registeredCount: 1 });
  expect(await balance(a)).toBe(200n);
  const left = await live.request(a.ws, { type: 'stand_up', tableId }, 15_000);
  expect(left).toMatchObject({ type: 'tournament_unregistered', status: 'refunded', amount: '100', txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
  expect(await balance(a)).toBe(300n);
  expect(await reader.tableBalance(tableId)).toBe(0n);
  // the refund is its own transaction to the wallet that signed the entry
  const refund = await reader.withdrawalOf(left.txHash);
  expect(refund).toMatchObject({ event: 'Withdrawn', amount: 100n * C });

  // a full field starts: the stand_up is refused, the bank's unregister too
  const [b, c] = [await player(300n), await player(300n)];
  await enter(b, tableId);
  await enter(c, tableId);
  await b.ws.next((x) => x.type === 'tournament_state_changed' && x.state === 'starting', 5000);
  expect(await live.request(b.ws, { type: 'stand_up', tableId })).toMatchObject({ type: 'error', code: 'stand_up_not_allowed_in_tournament' });
  expect(await call(`${bank}/api/tournament/unregister`, { headers: b.auth, body: { tableId } })).toEqual({ status: 409, body: { error: 'tournament_not_in_registration' } });
  expect(await balance(b)).toBe(200n);
}, 60_000);

test('a payout that never reached the chain bank: its reconciler pays it once it is 30 s old, confirms it and closes the tournament', async () => {
  const host = await player(0n);
  const tableId = await sngTable(host, { clockFactor: 1 });
  const [a, b] = [await player(300n), await player(300n)];
  await enter(a, tableId);
  await enter(b, tableId);
  // play starts (as the worker's start job would) and ends with a the winner; settlement begins with its payout job lost
  await db.owner.query("update game.tables set starts_at = now() - interval '1 s' where table_id = $1", [tableId]);
  await db.owner.query('select game.tournament_begin_play($1)', [tableId]);
  await db.owner.query(
    `update game.table_players set tournament_stack = case when user_id = $2 then 2000 else 0 end,
            elimination_order = case when user_id = $2 then 1 else 2 end, tie_place = case when user_id = $2 then 1 else 2 end
      where table_id = $1 and status <> 'closed'`, [tableId, a.userId]);
  const client = await db.owner.connect();
  try {
    await client.query('begin');
    await client.query("update game.tables set tournament_state = 'ended', ended_at = now(), current_hand_id = null where table_id = $1", [tableId]);
    await client.query('select cage.settle_tournament($1)', [tableId]);
    await client.query('select graphile_worker.remove_job($1)', [`payout:${tableId}:1`]);
    await client.query('commit');
  } finally {
    client.release();
  }
  const reconcileNow = () => (platform.role('chain-bank') as unknown as { reconcileNow(): Promise<void> }).reconcileNow();
  // younger than 30 s: left alone
  await reconcileNow();
  expect((await db.owner.query('select confirmed_at from cage.payout_intents where table_id = $1', [tableId])).rows[0].confirmed_at).toBeNull();
  await db.owner.query("update cage.payout_intents set created_at = now() - interval '31 s', failed_at = now() where table_id = $1", [tableId]);
  await reconcileNow();
  const { rows: [i] } = await db.owner.query('select confirmed_at, failed_at, tx_hash from cage.payout_intents where table_id = $1', [tableId]);
  expect(i).toMatchObject({ confirmed_at: expect.any(Date), failed_at: null, tx_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
  expect((await db.owner.query('select tournament_state from game.tables where table_id = $1', [tableId])).rows[0].tournament_state).toBe('closed');
  expect(await balance(a)).toBe(200n + 180n);
  // once: a second run pays nothing more
  await reconcileNow();
  expect(await balance(a)).toBe(380n);
  expect(await reader.tableBalance(tableId)).toBe(20n * C);
}, 60_000);
