// A Sit-and-Go through the chain bank: the game role's bank is the chain bank (no cage runs, so the
// game falls back to its chain-bank peer), on a real anvil with permits signed by viem private-key
// wallets, and the worker drives the lifecycle and posts the payout to the chain bank. Two players
// register over the websocket, pay the entry fee with a permit, and play to the end; the winner's
// wallet holds what it kept plus the prize, the house fee stays in the table's vault balance, and the
// cage's audit stays empty. A registrant standing up while it registers is refunded on chain.
// The chain's failures, with anvil stalled (evm_setAutomine false) or its pool emptied: an entry on
// its way holds its seat (entry_in_flight to a second entry and to any release) and is paid once; an
// entry whose receipt misses the confirm window is confirmed and credited by the reconciler; a refund
// the chain dropped is sent again by the reconciler and paid once. A cage (a second platform on the
// same database) refuses the chain's tournament tables: not_a_cage_table, and nothing moves.
import { randomUUID } from 'node:crypto';
import { generatePrivateKey } from 'viem/accounts';
import pg from 'pg';
import { createChainBankChain } from '../../server/chain/evm.ts';
import { loginUrl } from '../../server/db/roles.ts';
import { chainIntentViolations } from '../../server/bank/chain-audit.ts';
import { bridgedUser } from '../helpers/auth.ts';
import { anvilRpc } from '../helpers/chain.ts';
import { fundedWallet, inAnHour, permitDeposit, type LocalChain } from '../helpers/chain-bank.ts';
import { expectCleanAudit } from '../helpers/cage.ts';
import { markHandsAudited } from '../helpers/tournament.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { liveClient, prng, until, type LiveClient, type LivePlayer, type Msg } from '../helpers/live.ts';
import { call } from '../helpers/money.ts';
import { createServiceClient } from '../../server/http/service-client.ts';
import { runReconcilers } from '../../server/intents/framework.ts';
import { payoutReconciler } from '../../tasks/tournament_timers.ts';
import { startTestPlatform, TEST_SERVICE_KEY, type TestPlatform } from '../helpers/platform.ts';
import { playBot, SNG, tableMessages } from '../helpers/tournament.ts';

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
afterEach(async () => {
  // a test that stalled the chain leaves it mining again, whatever happened
  await rpc('evm_setAutomine', [true]);
});
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
  const { userId, jwt } = await bridgedUser(db, { issuer: ISSUER });
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
  const body = await permitDeposit(local, p, tableId, 100n, { seatIndex: r.seatIndex });
  const paid = await call(`${bank}/api/deposit`, { headers: p.auth, body });
  expect(paid).toMatchObject({ status: 200, body: { status: 'confirmed', txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) } });
  return { ...paid.body, deposit: body };
}

const balance = async (p: ChainPlayer) => (await reader.balanceOf(p.wallet)) / C;

const reconcileNow = () => (platform.role('chain-bank') as unknown as { reconcileNow(): Promise<void> }).reconcileNow();

/** An anvil JSON-RPC call on this file's chain (evm_setAutomine, evm_mine, anvil_dropAllTransactions). */
const rpc = (method: string, params: unknown[] = []) => anvilRpc(local.url, method, params);

/**
 * A full field's tournament played (as the worker's start job would begin it) and ended with
 * `winner` first; settlement begun with its payout job lost, so the payout waits for a bank to be asked.
 */
async function endedWithPayoutJobLost(tableId: string, winner: ChainPlayer) {
  await db.owner.query("update game.tables set starts_at = now() - interval '1 s' where table_id = $1", [tableId]);
  await db.owner.query('select game.tournament_begin_play($1)', [tableId]);
  await db.owner.query(
    `update game.table_players set tournament_stack = case when user_id = $2 then 2000 else 0 end,
            elimination_order = case when user_id = $2 then 1 else 2 end, tie_place = case when user_id = $2 then 1 else 2 end
      where table_id = $1 and status <> 'closed'`, [tableId, winner.userId]);
  const client = await db.owner.connect();
  try {
    await client.query('begin');
    await client.query("update game.tables set tournament_state = 'ended', ended_at = now(), current_hand_id = null where table_id = $1", [tableId]);
    await markHandsAudited(client, tableId);
    await client.query('select cage.settle_tournament($1)', [tableId]);
    await client.query('select graphile_worker.remove_job($1)', [`payout:${tableId}:1`]);
    await client.query('commit');
  } finally {
    client.release();
  }
}

/** The player's live registrations at the table (entry state and the credits the game holds for them). */
async function registrations(tableId: string, p: ChainPlayer) {
  const { rows } = await db.owner.query(
    `select p.entry_state, (select count(*)::int from game.seat_credits c where c.table_id = p.table_id and c.user_id = p.user_id) as credits
       from game.table_players p where p.table_id = $1 and p.user_id = $2 and p.status <> 'closed'`, [tableId, p.userId]);
  return rows as { entry_state: string; credits: number }[];
}

/** A player's sng deposit intents at the table, oldest first. */
async function entryDeposits(tableId: string, p: ChainPlayer) {
  const { rows } = await db.owner.query(
    `select idempotency_key, status, tx_hash, credited_at is not null as credited from bank.deposit_intents
      where table_id = $1 and user_id = $2 and mode = 'sng' order by created_at`, [tableId, p.userId]);
  return rows as { idempotency_key: string; status: string; tx_hash: string | null; credited: boolean }[];
}

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

/** One run of the worker's payout reconciler (both banks' payouts: issue 32), as its periodic job runs it. */
async function repostPayouts() {
  const client = createServiceClient({ baseUrl: () => bank, serviceKey: TEST_SERVICE_KEY, timeoutMs: 30_000 });
  const worker = db.pool('poker_worker', 1);
  try {
    await runReconcilers(worker, [payoutReconciler({ pool: worker, cage: client, chainBank: client })]);
  } finally {
    await worker.end();
  }
}

test('a payout that never reached the chain bank: the payout reconciler pays it once it is 30 s old, confirms it and closes the tournament', async () => {
  const host = await player(0n);
  const tableId = await sngTable(host, { clockFactor: 1 });
  const [a, b] = [await player(300n), await player(300n)];
  await enter(a, tableId);
  await enter(b, tableId);
  await endedWithPayoutJobLost(tableId, a);
  // younger than 30 s: left alone
  await repostPayouts();
  expect((await db.owner.query('select confirmed_at from cage.payout_intents where table_id = $1', [tableId])).rows[0].confirmed_at).toBeNull();
  await db.owner.query("update cage.payout_intents set created_at = now() - interval '31 s', failed_at = now() where table_id = $1", [tableId]);
  await repostPayouts();
  const { rows: [i] } = await db.owner.query('select confirmed_at, failed_at, tx_hash from cage.payout_intents where table_id = $1', [tableId]);
  expect(i).toMatchObject({ confirmed_at: expect.any(Date), failed_at: null, tx_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
  expect((await db.owner.query('select tournament_state from game.tables where table_id = $1', [tableId])).rows[0].tournament_state).toBe('closed');
  expect(await balance(a)).toBe(200n + 180n);
  // once: a second run pays nothing more
  await repostPayouts();
  expect(await balance(a)).toBe(380n);
  expect(await reader.tableBalance(tableId)).toBe(20n * C);
}, 60_000);

/** A payout intent as operators read it (cage.intents' parts: its row's next step, and the reconcilers' attempts). */
async function payoutIntent(tableId: string) {
  const { rows: [r] } = await db.owner.query(
    `select r.next_step, a.attempts, a.stuck_since, a.last_error from cage_private.intent_rows r
       left join cage.intent_attempts a on a.kind = r.kind and a.intent_key = r.intent_key
      where r.kind = 'cage_payout' and r.intent_key = $1`, [`${tableId}:1`]);
  return r as { next_step: string | null; attempts: number | null; stuck_since: Date | null; last_error: string | null };
}

test('a payout the chain does not mine is stuck, since when and why recorded (issue 32); mined, it is paid once and no longer stuck', async () => {
  const host = await player(0n);
  const tableId = await sngTable(host, { clockFactor: 1 });
  const [a, b] = [await player(300n), await player(300n)];
  await enter(a, tableId);
  await enter(b, tableId);
  await endedWithPayoutJobLost(tableId, a);
  await db.owner.query("update cage.payout_intents set created_at = now() - interval '31 s' where table_id = $1", [tableId]);
  await rpc('evm_setAutomine', [false]);
  await repostPayouts(); // the chain bank sends it, and waits its confirm window for a block that never comes
  const stuck = await payoutIntent(tableId);
  expect(stuck).toMatchObject({
    next_step: 'pay place 1 through its bank (chain)', attempts: 1, stuck_since: expect.any(Date), last_error: 'the chain bank: submitted, not confirmed yet',
  });
  await rpc('evm_setAutomine', [true]);
  await rpc('evm_mine');
  // the next reposts (after the back-off) find the payment mined: confirmed, the failure cleared
  await until(async () => { await repostPayouts(); return (await payoutIntent(tableId)).next_step === null; }, 'the payout confirmed', 30_000, 200);
  expect(await payoutIntent(tableId)).toMatchObject({ next_step: null, stuck_since: null, last_error: null });
  expect(await balance(a)).toBe(200n + 180n);
  expect((await db.owner.query('select tournament_state from game.tables where table_id = $1', [tableId])).rows[0].tournament_state).toBe('closed');
}, 90_000);

/** Registered over the websocket: the reserved seat, no entry paid yet. */
async function reserve(p: ChainPlayer, tableId: string): Promise<number> {
  await live.join(p, tableId);
  const r = await live.request(p.ws, { type: 'register_for_tournament', tableId });
  expect(r).toMatchObject({ type: 'tournament_registered', seatIndex: expect.any(Number) });
  return r.seatIndex;
}

/** Runs the chain bank's reconciler until `probe` holds (a run of its own interval may be under way). */
const reconciledUntil = <T>(probe: () => Promise<T | undefined | null | false>, what: string) =>
  until(async () => { await reconcileNow(); return probe(); }, what, 10_000, 50);

const HASH = /^0x[0-9a-f]{64}$/;

test('an entry on its way to the chain (no blocks): a second entry, the unregister, the stand_up and the reserve\'s expiry are refused entry_in_flight; mined, it is paid once', async () => {
  const host = await player(0n);
  const tableId = await sngTable(host, { clockFactor: 1 });
  const a = await player(300n);
  const seatIndex = await reserve(a, tableId);
  const body = await permitDeposit(local, a, tableId, 100n, { seatIndex });
  await rpc('evm_setAutomine', [false]);
  const first = call(`${bank}/api/deposit`, { headers: a.auth, body });
  const [d] = await until(async () => { const rows = await entryDeposits(tableId, a); return rows[0]?.status === 'submitted' && rows; }, 'the entry deposit submitted to the node');

  // a second entry (a new permit: another key) is refused before anything is sent, with or without the seat
  for (const opts of [{ seatIndex, deadline: inAnHour() + 7n }, { deadline: inAnHour() + 8n }]) {
    const second = await permitDeposit(local, a, tableId, 100n, opts);
    if (opts.seatIndex === undefined) delete (second as { seatIndex?: number }).seatIndex;
    expect(await call(`${bank}/api/deposit`, { headers: a.auth, body: second })).toEqual({ status: 409, body: { error: 'entry_in_flight' } });
  }
  // the same permit again: its deposit as it stands
  expect(await call(`${bank}/api/deposit`, { headers: a.auth, body })).toMatchObject({ status: 200, body: { status: 'submitted', txHash: d!.tx_hash, replay: true } });
  // the seat is not released: not by the bank's unregister, not by a stand_up, not by its expiry job
  expect(await call(`${bank}/api/tournament/unregister`, { headers: a.auth, body: { tableId } })).toEqual({ status: 409, body: { error: 'entry_in_flight' } });
  expect(await live.request(a.ws, { type: 'stand_up', tableId })).toMatchObject({ type: 'error', code: 'entry_in_flight' });
  const { rows: [reserved] } = await db.owner.query(
    "update game.table_players set reserved_until = now() - interval '1 s' where table_id = $1 and user_id = $2 and status <> 'closed' returning id", [tableId, a.userId]);
  expect((await db.owner.query('select game.tournament_release_reserve($1, null, $2) as released', [tableId, reserved.id])).rows[0].released).toBe(false);
  expect(await registrations(tableId, a)).toEqual([{ entry_state: 'reserved', credits: 0 }]);
  expect(await entryDeposits(tableId, a)).toHaveLength(1);
  expect(await balance(a)).toBe(300n);

  // blocks again: the deposit's own request reads its receipt within its window and the game accepts the entry
  await rpc('evm_mine');
  await rpc('evm_setAutomine', [true]);
  expect(await first).toMatchObject({ status: 200, body: { status: 'confirmed', txHash: d!.tx_hash, seatIndex, tournamentState: 'registering', registeredCount: 1 } });
  // past the reconciler's grace, its runs change nothing: paid once
  await db.owner.query("update bank.deposit_intents set updated_at = now() - interval '10 minutes' where table_id = $1", [tableId]);
  await reconcileNow();
  await reconcileNow();
  expect(await entryDeposits(tableId, a)).toEqual([{ idempotency_key: d!.idempotency_key, status: 'confirmed', tx_hash: d!.tx_hash, credited: true }]);
  expect(await registrations(tableId, a)).toEqual([{ entry_state: 'paid', credits: 1 }]);
  expect(await balance(a)).toBe(200n);
  expect(await reader.tableBalance(tableId)).toBe(100n * C);
  // paid, another entry is already registered; the unregister refunds the one
  const again = await permitDeposit(local, a, tableId, 100n, { seatIndex, deadline: inAnHour() + 9n });
  expect(await call(`${bank}/api/deposit`, { headers: a.auth, body: again })).toEqual({ status: 409, body: { error: 'tournament_already_registered' } });
  expect(await call(`${bank}/api/tournament/unregister`, { headers: a.auth, body: { tableId } })).toMatchObject({ status: 200, body: { status: 'refunded', amount: '100', txHash: expect.stringMatching(HASH) } });
  expect(await balance(a)).toBe(300n);
  expect(await reader.tableBalance(tableId)).toBe(0n);
}, 60_000);

test('an entry deposit whose receipt misses the confirm window answers submitted; mined later, the reconciler confirms and credits it: registered once, debited once', async () => {
  const host = await player(0n);
  const tableId = await sngTable(host, { clockFactor: 1 });
  const a = await player(300n);
  const seatIndex = await reserve(a, tableId);
  const body = await permitDeposit(local, a, tableId, 100n, { seatIndex });
  await rpc('evm_setAutomine', [false]);
  const r = await call(`${bank}/api/deposit`, { headers: a.auth, body });
  expect(r).toMatchObject({ status: 200, body: { status: 'submitted', txHash: expect.stringMatching(HASH), idempotencyKey: expect.stringMatching(HASH), note: expect.any(String) } });
  expect(await registrations(tableId, a)).toEqual([{ entry_state: 'reserved', credits: 0 }]);
  expect(await balance(a)).toBe(300n);
  // mined after the answer: the chain has the entry, the game not yet
  await rpc('evm_mine');
  await rpc('evm_setAutomine', [true]);
  expect(await balance(a)).toBe(200n);
  expect(await registrations(tableId, a)).toEqual([{ entry_state: 'reserved', credits: 0 }]);
  // the reconciler, once the intent is past its grace: confirmed from the receipt, then credited
  await db.owner.query("update bank.deposit_intents set updated_at = now() - interval '10 minutes' where idempotency_key = $1", [r.body.idempotencyKey]);
  const [done] = await reconciledUntil(async () => { const rows = await entryDeposits(tableId, a); return rows[0]?.credited && rows; }, 'the entry credited by the reconciler');
  expect(done).toEqual({ idempotency_key: r.body.idempotencyKey, status: 'confirmed', tx_hash: r.body.txHash, credited: true });
  expect(await registrations(tableId, a)).toEqual([{ entry_state: 'paid', credits: 1 }]);
  // once: more runs and the permit replayed change nothing
  await db.owner.query("update bank.deposit_intents set updated_at = now() - interval '10 minutes' where idempotency_key = $1", [r.body.idempotencyKey]);
  await reconcileNow();
  expect(await call(`${bank}/api/deposit`, { headers: a.auth, body })).toMatchObject({
    status: 200, body: { status: 'confirmed', replay: true, txHash: r.body.txHash, seatIndex, tournamentState: 'registering', registeredCount: 1 },
  });
  expect(await registrations(tableId, a)).toEqual([{ entry_state: 'paid', credits: 1 }]);
  expect(await entryDeposits(tableId, a)).toHaveLength(1);
  expect(await reader.depositOf(r.body.txHash)).toMatchObject({ amount: 100n * C });
  expect(await balance(a)).toBe(200n);
  expect(await reader.tableBalance(tableId)).toBe(100n * C);
}, 60_000);

test('a refund whose transaction the chain drops: the unregister answers it unpaid, the reconciler sends it again and pays it once; the wallet has its entry fee back', async () => {
  const host = await player(0n);
  const tableId = await sngTable(host, { clockFactor: 1 });
  const a = await player(300n);
  const entry = await enter(a, tableId);
  expect(await balance(a)).toBe(200n);
  const key = `tournament-refund:${entry.idempotencyKey}`;
  const payment = async () => (await db.owner.query('select status, tx_hash, error from bank.tournament_payments where payment_key = $1', [key])).rows[0] as
    { status: string; tx_hash: string | null; error: string | null } | undefined;
  // no blocks: the refund goes to the node's pool, and the pool is emptied while the unregister waits for it
  await rpc('evm_setAutomine', [false]);
  const asked = call(`${bank}/api/tournament/unregister`, { headers: a.auth, body: { tableId } });
  const sent = await until(async () => { const p = await payment(); return p?.status === 'submitted' && p; }, 'the refund sent to the node');
  await rpc('anvil_dropAllTransactions');
  const left = await asked;
  expect(left).toMatchObject({ status: 200, body: { status: 'refunded', amount: '100', registeredCount: 0, payment: 'failed', note: expect.any(String) } });
  await rpc('evm_setAutomine', [true]);
  // the position is closed and the refund owed; nothing moved on chain
  expect(await registrations(tableId, a)).toEqual([]);
  expect(await payment()).toMatchObject({ status: 'failed', error: expect.stringMatching(/dropped/) });
  expect(await balance(a)).toBe(200n);
  expect(await reader.tableBalance(tableId)).toBe(100n * C);
  // younger than 30 s: left alone
  await reconcileNow();
  expect(await payment()).toMatchObject({ status: 'failed' });
  // then sent again with a fresh transaction, confirmed with the vault's event
  await db.owner.query("update bank.tournament_payments set updated_at = now() - interval '31 s' where payment_key = $1", [key]);
  const paid = await reconciledUntil(async () => { const p = await payment(); return p?.status === 'confirmed' && p; }, 'the refund paid by the reconciler');
  // (the same call with the operator's nonce, freed by the drop, and the same fees: it may hash as the dropped one did)
  expect(paid.tx_hash).toMatch(HASH);
  expect(sent.tx_hash).toMatch(HASH);
  expect(await reader.withdrawalOf(paid.tx_hash as `0x${string}`)).toMatchObject({ event: 'Withdrawn', amount: 100n * C, to: a.wallet });
  expect(await balance(a)).toBe(300n);
  expect(await reader.tableBalance(tableId)).toBe(0n);
  // once: aged again, the reconciler pays nothing more; the entry's permit replayed answers the refund
  await db.owner.query("update bank.tournament_payments set updated_at = now() - interval '31 s' where payment_key = $1", [key]);
  await reconcileNow();
  expect(await payment()).toEqual({ status: 'confirmed', tx_hash: paid.tx_hash, error: null });
  expect(await balance(a)).toBe(300n);
  const replayed = await call(`${bank}/api/deposit`, { headers: a.auth, body: entry.deposit });
  expect(replayed).toMatchObject({ status: 200, body: { status: 'refunded', replay: true, refundTxHash: paid.tx_hash } });
  // issue 32: the read agrees with the replay (bank.deposit_states, one definition of both)
  expect(await call(`${bank}/api/deposits/${replayed.body.idempotencyKey}`, { headers: a.auth })).toMatchObject({ status: 200, body: { status: 'refunded', tableId } });
}, 60_000);

test('issue 31: an entry the bank login failed in flight (its seat released) confirms on chain and funds nothing: named ten minutes on, refunded to its signing wallet once, named no more', async () => {
  const host = await player(0n);
  const tableId = await sngTable(host, { clockFactor: 1 });
  const a = await player(300n);
  const seatIndex = await reserve(a, tableId);
  const body = await permitDeposit(local, a, tableId, 100n, { seatIndex });
  const thief = new pg.Client({ connectionString: loginUrl(db.url, 'poker_bank', undefined) });
  await thief.connect();
  try {
    await rpc('evm_setAutomine', [false]);
    const answer = call(`${bank}/api/deposit`, { headers: a.auth, body });
    const [d] = await until(async () => { const rows = await entryDeposits(tableId, a); return rows[0]?.status === 'submitted' && rows; }, 'the entry deposit submitted to the node');
    // the thief claims it failed: the seat it held is released
    await thief.query('select bank.fail_deposit($1, $2)', [d!.idempotency_key, 'made up']);
    await rpc('evm_mine');
    await rpc('evm_setAutomine', [true]);
    await answer;
  } finally {
    await thief.end();
  }
  // the receipt confirmed it, the tokens are in the vault, and no entry was funded from it
  const [dep] = await entryDeposits(tableId, a);
  expect(dep).toMatchObject({ status: 'confirmed', credited: false });
  expect(await registrations(tableId, a)).toEqual([]);
  expect(await balance(a)).toBe(200n);
  const violations = async () => {
    const client = await db.pool('poker_worker', 1).connect();
    try {
      return (await chainIntentViolations(client, { rpcUrl: local.url })).violations.filter((v) => v.subject === dep!.idempotency_key).map((v) => v.invariant);
    } finally {
      client.release();
    }
  };
  await db.owner.query("update bank.deposit_intents set updated_at = now() - interval '11 minutes' where idempotency_key = $1", [dep!.idempotency_key]);
  expect(await violations()).toEqual(['chain_deposit_uncredited']);
  await reconcileNow();
  expect(await balance(a)).toBe(300n);
  expect(await reader.tableBalance(tableId)).toBe(0n);
  expect(await violations()).toEqual([]);
  await reconcileNow();
  expect(await balance(a)).toBe(300n);
  expect((await db.owner.query('select count(*)::int as n from bank.vault_refunds where deposit_key = $1', [dep!.idempotency_key])).rows[0].n).toBe(1);
}, 60_000);

describe('a cage pointed at the chain bank\'s tournament tables', () => {
  let cagePlatform: TestPlatform;
  beforeAll(async () => {
    // a second platform on the same database with the cage role alone (in the first, a cage would be the game's bank)
    cagePlatform = await startTestPlatform({
      databaseUrl: db.url, roles: ['cage'],
      env: { AUTH_SECRET: SECRET, AUTH_BASE_URL: ISSUER, AUTH_JWKS_URL: `${platform.url('auth')}/api/auth/jwks`, GAME_URL: platform.url('game') },
    });
  }, 60_000);
  afterAll(async () => {
    await cagePlatform?.stop();
  });

  test('the entry deposit, the unregister and the payoutIntent are refused not_a_cage_table; nothing moves, and the chain bank carries on', async () => {
    const cage = cagePlatform.url('cage');
    const service = { 'x-service-key': TEST_SERVICE_KEY };
    const refused = { status: 409, body: { error: 'not_a_cage_table' } };
    const host = await player(0n);
    const tableId = await sngTable(host, { clockFactor: 1 });
    const [a, b] = [await player(300n), await player(300n)];
    await enter(a, tableId);
    const seatIndex = await reserve(b, tableId);
    const bEntry = await permitDeposit(local, b, tableId, 100n, { seatIndex });
    const state = async () => ({
      a: await registrations(tableId, a), b: await registrations(tableId, b), wallets: [await balance(a), await balance(b)],
      vault: await reader.tableBalance(tableId),
      cage: await Promise.all([a, b].map(async (p) => (await call(`${cage}/api/cage/balances`, { headers: p.auth })).body.balances)),
      tournament: (await db.owner.query('select tournament_state from game.tables where table_id = $1', [tableId])).rows[0].tournament_state,
    });
    const before = await state();
    expect(before).toMatchObject({ a: [{ entry_state: 'paid', credits: 1 }], b: [{ entry_state: 'reserved', credits: 0 }], wallets: [200n, 300n], vault: 100n * C, tournament: 'registering' });

    // the entry: b's permit deposit sent to the cage, and a cage entry under the cage's own key
    expect(await call(`${cage}/api/deposit`, { headers: b.auth, body: bEntry })).toEqual(refused);
    expect(await call(`${cage}/api/deposit`, { headers: { ...b.auth, 'idempotency-key': randomUUID() }, body: { tableId, amount: 100 } })).toEqual(refused);
    // the unregister: a's paid entry, b's reserve
    for (const p of [a, b]) expect(await call(`${cage}/api/tournament/unregister`, { headers: p.auth, body: { tableId } })).toEqual(refused);
    expect(await state()).toEqual(before);

    // b's permit was never spent: the chain bank takes the very same body, and the field is full
    expect(await call(`${bank}/api/deposit`, { headers: b.auth, body: bEntry })).toMatchObject({ status: 200, body: { status: 'confirmed', tournamentState: 'starting', registeredCount: 2 } });
    await endedWithPayoutJobLost(tableId, a);
    const payout = { tableId, payoutIntent: { position: 1, amount: 180 } };
    const intent = async () => (await db.owner.query('select submitted_at, confirmed_at, failed_at, error, tx_hash from cage.payout_intents where table_id = $1', [tableId])).rows;
    const payments = async () => Number((await db.owner.query('select count(*) from bank.tournament_payments where table_id = $1', [tableId])).rows[0].count);
    expect(await call(`${cage}/api/withdraw`, { headers: service, body: payout })).toEqual(refused);
    expect(await intent()).toEqual([{ submitted_at: null, confirmed_at: null, failed_at: null, error: null, tx_hash: null }]);
    expect(await payments()).toBe(0);
    expect([await balance(a), await balance(b)]).toEqual([200n, 200n]);
    expect(await reader.tableBalance(tableId)).toBe(200n * C);
    expect((await call(`${cage}/api/cage/balances`, { headers: a.auth })).body.balances).toEqual(before.cage[0]);

    // the chain bank pays the place, and closes the tournament
    expect(await call(`${bank}/api/withdraw`, { headers: service, body: payout })).toMatchObject({
      status: 200, body: { status: 'confirmed', destination: a.wallet, amount: 180, tournamentState: 'closed' },
    });
    expect(await balance(a)).toBe(380n);
    expect(await reader.tableBalance(tableId)).toBe(20n * C);
  }, 60_000);
});
