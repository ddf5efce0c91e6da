// The chain-bank role over real HTTP, on a real anvil (the role starts its own local chain, as
// `npm start` does without EVM_RPC_URL) with the contracts deployed; players' wallets are viem
// private-key accounts signing real ERC-2612 permits. Sit, replay, stand up (the stack paid back on
// chain to the signing wallet), a forced withdraw, a bust, and the refusals of the deposit and the
// withdraw. On-chain balances are read back and must equal what the game says.
import { randomUUID } from 'node:crypto';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { Address } from 'viem';
import { mintChips } from '../../server/chain/dev-wallet.ts';
import { createChainBankChain } from '../../server/chain/evm.ts';
import { bridgedUser } from '../helpers/auth.ts';
import { fundedWallet, inAnHour, permitDeposit, type LocalChain } from '../helpers/chain-bank.ts';
import { expectCleanAudit } from '../helpers/cage.ts';
import { satOutSince } from '../helpers/game.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { call, POKER_SETTINGS } from '../helpers/money.ts';
import { startTestPlatform, TEST_SERVICE_KEY, type TestPlatform } from '../helpers/platform.ts';
import { startChaosProxy, type ChaosProxy } from '../helpers/chaos-proxy.ts';

const SECRET = 'chain-bank-test-secret-0123456789abcdef';
const ISSUER = 'https://auth.poker.test';
const C = 1_000_000n;

let db: TestDatabase;
let platform: TestPlatform;
let bank: string;
let game: string;
let local: LocalChain;
let reader: ReturnType<typeof createChainBankChain>;
// the bank reaches the game through this proxy, so a callback can be dropped or its answer lost
let proxy: ChaosProxy;

beforeAll(async () => {
  db = await createTestDatabase();
  await db.owner.query("insert into cage.switches (name, enabled) values ('real_money', true) on conflict (name) do update set enabled = true");
  proxy = await startChaosProxy(() => platform.url('game'), 20261126);
  platform = await startTestPlatform({
    databaseUrl: db.url, roles: ['auth', 'game', 'chain-bank'],
    env: { AUTH_SECRET: SECRET, AUTH_BASE_URL: ISSUER, ENABLE_TEST_AUTH: 'true', CHAIN_CONFIRM_WINDOW_MS: '10000', GAME_URL: proxy.url },
  });
  bank = platform.url('chain-bank');
  game = platform.url('game');
  local = (platform.role('chain-bank') as unknown as { chain: typeof local }).chain;
  // a read-only view of the same chain (its operator key is never used here)
  reader = createChainBankChain({ rpcUrl: local.url, operatorKey: generatePrivateKey(), deployment: local.deployment });
}, 60_000);
afterAll(async () => {
  await platform?.stop();
  await proxy?.close();
  // the chain bank's tables are outside the cage's books, and the cage audit stays empty beside them
  await expectCleanAudit(db.pool('poker_cage', 1));
  await db?.drop();
});

/** A bridged player with a linked EVM wallet holding `chips` on chain. */
async function player(chips = 1000n) {
  const { userId, jwt } = await bridgedUser(db, { issuer: ISSUER });
  return { userId, ...(await fundedWallet(db, local, userId, chips)), auth: { authorization: `Bearer ${jwt}` } };
}
type Player = Awaited<ReturnType<typeof player>>;

async function table(p: Player) {
  const tableId = `cb-${randomUUID().slice(0, 10)}`;
  const r = await call(`${bank}/api/tables`, { headers: p.auth, body: { tableId, gameType: 'poker', settings: POKER_SETTINGS } });
  expect(r).toMatchObject({ status: 200, body: { tableId, status: 'active' } });
  return tableId;
}

const depositBody = (p: Player, tableId: string, chips: bigint, opts: { seatIndex?: number; deadline?: bigint; signer?: Address } = {}) =>
  permitDeposit(local, p, tableId, chips, opts);
const deposit = (p: Player, body: unknown) => call(`${bank}/api/deposit`, { headers: p.auth, body });
const seats = async (tableId: string) => (await call(`${game}/api/tables/${tableId}`)).body.seats;

test('a permit deposit seats the player; the chips are in the vault; a replay answers the same; stand-up pays them back on chain', async () => {
  const p = await player(1000n);
  const tableId = await table(p);
  const body = await depositBody(p, tableId, 150n, { seatIndex: 2 });
  const r = await deposit(p, body);
  expect(r.status).toBe(200);
  expect(r.body).toMatchObject({ status: 'confirmed', txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/), idempotencyKey: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
  expect(await seats(tableId)).toEqual([{ seatIndex: 2, userId: p.userId, chipBalance: '150', status: 'seated' }]);
  expect(await reader.tableBalance(tableId)).toBe(150n * C);
  expect(await reader.balanceOf(p.wallet)).toBe(850n * C);
  const intent = (await db.owner.query('select status, credited_at is not null as credited from bank.deposit_intents where idempotency_key = $1', [r.body.idempotencyKey])).rows[0];
  expect(intent).toEqual({ status: 'confirmed', credited: true });

  const again = await deposit(p, body);
  expect(again.body).toEqual({ status: 'confirmed', txHash: r.body.txHash, idempotencyKey: r.body.idempotencyKey, replay: true });
  expect(await reader.balanceOf(p.wallet)).toBe(850n * C);
  const mine = await call(`${bank}/api/deposits/${r.body.idempotencyKey}`, { headers: p.auth });
  expect(mine.body).toMatchObject({ status: 'confirmed', tableId, seatIndex: 2, amount: '150', txHash: r.body.txHash });

  const out = await call(`${bank}/api/withdraw`, { headers: p.auth, body: { tableId } });
  expect(out.status).toBe(200);
  expect(out.body).toMatchObject({ status: 'confirmed', amount: 150, destination: p.wallet, txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
  expect(await seats(tableId)).toEqual([]);
  expect(await reader.balanceOf(p.wallet)).toBe(1000n * C);
  expect(await reader.tableBalance(tableId)).toBe(0n);
  const settled = (await db.owner.query('select status, settled_at is not null as settled from bank.withdraw_intents where idempotency_key = $1', [out.body.idempotencyKey])).rows[0];
  expect(settled).toEqual({ status: 'confirmed', settled: true });
  // the same withdraw again: a replay of it, nothing paid twice
  const replay = await call(`${bank}/api/withdraw`, { headers: p.auth, body: { tableId } });
  expect(replay.body).toMatchObject({ status: 'confirmed', replay: true, txHash: out.body.txHash });
  expect(await reader.balanceOf(p.wallet)).toBe(1000n * C);
});

test('deposit refusals: a wrong signer, an unlinked wallet, an expired permit (failed with the reason, replayed as 409), a cage table, bad bodies', async () => {
  const p = await player(500n);
  const tableId = await table(p);
  const other = await player(500n);
  // the permit signed by p, claimed as another address
  expect((await deposit(p, await depositBody(p, tableId, 10n, { signer: other.wallet }))).body).toEqual({ error: 'invalid_signer_address' });
  // a permit by a wallet the player has not linked
  const stranger = generatePrivateKey();
  const strangerWallet = privateKeyToAccount(stranger).address;
  await mintChips({ rpcUrl: local.url, deployment: local.deployment, minterKey: local.minterKey, to: strangerWallet, chips: 100n });
  const unlinked = await depositBody({ ...p, key: stranger, wallet: strangerWallet }, tableId, 10n);
  expect(await deposit(p, unlinked)).toEqual({ status: 400, body: { error: 'wallet_not_linked' } });
  // expired: the chain refuses it; the reason comes back, and the same permit again is 409 failed
  const expired = await depositBody(p, tableId, 10n, { deadline: BigInt(Math.floor(Date.now() / 1000) - 60) });
  const first = await deposit(p, expired);
  expect(first.status).toBe(400);
  expect(first.body).toMatchObject({ error: 'failed', status: 'failed', reason: expect.stringMatching(/Expired/) });
  expect((await deposit(p, expired))).toMatchObject({ status: 409, body: { error: 'failed', status: 'failed' } });
  expect(await seats(tableId)).toEqual([]);
  expect(await reader.balanceOf(p.wallet)).toBe(500n * C);
  // bodies
  for (const bad of [{}, { tableId }, { ...(await depositBody(p, tableId, 10n)), signerAddress: 'nope' }, { ...(await depositBody(p, tableId, 10n)), extra: 1 }]) {
    const r = await deposit(p, bad);
    expect(r.status).toBe(400);
    expect(['missing_required_fields', 'invalid_signer_address', 'bad_request']).toContain(r.body.error);
  }
  expect((await call(`${bank}/api/deposit`, { body: await depositBody(p, tableId, 10n) })).status).toBe(401);
  // a table of the cage is not this bank's
  await db.owner.query("insert into game.tables (table_id, game_type, settings, money_kind) values ($1, 'poker', $2, 'real')", [`cage-${tableId}`, JSON.stringify(POKER_SETTINGS)]);
  expect((await deposit(p, await depositBody(p, `cage-${tableId}`, 10n))).body).toEqual({ error: 'not_a_chain_table' });
});

test('a forced withdraw (service key) pays the last permit signer; without the key it is refused', async () => {
  const p = await player(300n);
  const tableId = await table(p);
  expect((await deposit(p, await depositBody(p, tableId, 120n))).status).toBe(200);
  expect(await call(`${bank}/api/withdraw`, { body: { tableId, forced: true, userId: p.userId } })).toEqual({ status: 401, body: { error: 'forced_withdraw_requires_service_key' } });
  await satOutSince(db.owner, tableId, p.userId);
  const out = await call(`${bank}/api/withdraw`, { headers: { 'x-service-key': TEST_SERVICE_KEY }, body: { tableId, forced: true, userId: p.userId } });
  expect(out.body).toMatchObject({ status: 'confirmed', amount: 120, destination: p.wallet });
  expect(await reader.balanceOf(p.wallet)).toBe(300n * C);
  expect(await seats(tableId)).toEqual([]);
  expect((await call(`${bank}/api/withdraw`, { headers: p.auth, body: { tableId: 'no-such-table' } })).body).toEqual({ error: 'table_not_found' });
  expect((await call(`${bank}/api/withdraw`, { headers: p.auth, body: {} })).body).toEqual({ error: 'missing_table_id' });
});

const reconcileNow = () => (platform.role('chain-bank') as unknown as { reconcileNow(): Promise<void> }).reconcileNow();
const creditOf = async (key: string) => (await db.owner.query('select status, credited_at is not null as credited from bank.deposit_intents where idempotency_key = $1', [key])).rows[0];

test.each(['drop', 'lose_answer'] as const)('the credit callback %s: the deposit stands confirmed, and the reconciler credits the seat once', async (fault) => {
  const p = await player(400n);
  const tableId = await table(p);
  proxy.faults('/internal/credit-chips', fault === 'drop' ? { drop: 1, loseAnswer: 0 } : { drop: 0, loseAnswer: 1 });
  const r = await deposit(p, await depositBody(p, tableId, 100n, { seatIndex: 1 }));
  proxy.faults('/internal/credit-chips', { drop: 0, loseAnswer: 0 });
  expect(r.body).toMatchObject({ status: 'confirmed' });
  expect(await creditOf(r.body.idempotencyKey)).toEqual({ status: 'confirmed', credited: false });
  // dropped: the seat is not funded yet; answer lost: the game funded it, the bank does not know
  expect((await seats(tableId)).length).toBe(fault === 'drop' ? 0 : 1);
  await reconcileNow();
  expect(await creditOf(r.body.idempotencyKey)).toEqual({ status: 'confirmed', credited: true });
  await reconcileNow();
  expect(await seats(tableId)).toEqual([{ seatIndex: 1, userId: p.userId, chipBalance: '100', status: 'seated' }]);
  expect(await reader.tableBalance(tableId)).toBe(100n * C);
  // and out again
  expect((await call(`${bank}/api/withdraw`, { headers: p.auth, body: { tableId } })).body).toMatchObject({ status: 'confirmed', amount: 100 });
  expect(await reader.balanceOf(p.wallet)).toBe(400n * C);
});

test('the settle callback lost: the withdrawal stays confirmed until the reconciler redelivers it; paid once', async () => {
  const p = await player(200n);
  const tableId = await table(p);
  expect((await deposit(p, await depositBody(p, tableId, 80n))).status).toBe(200);
  proxy.faults('/internal/settle-withdrawal', { drop: 1, loseAnswer: 0 });
  const out = await call(`${bank}/api/withdraw`, { headers: p.auth, body: { tableId } });
  proxy.faults('/internal/settle-withdrawal', { drop: 0, loseAnswer: 0 });
  expect(out.body).toMatchObject({ status: 'confirmed', amount: 80 });
  expect(await reader.balanceOf(p.wallet)).toBe(200n * C);
  const intent = async () => (await db.owner.query('select status, settled_at is not null as settled from bank.withdraw_intents where idempotency_key = $1', [out.body.idempotencyKey])).rows[0];
  expect(await intent()).toEqual({ status: 'confirmed', settled: false });
  expect(await seats(tableId)).toEqual([{ seatIndex: 0, userId: p.userId, chipBalance: '80', status: 'leaving' }]);
  await reconcileNow();
  expect(await intent()).toEqual({ status: 'confirmed', settled: true });
  expect(await seats(tableId)).toEqual([]);
  expect(await reader.balanceOf(p.wallet)).toBe(200n * C);
  expect(await reader.tableBalance(tableId)).toBe(0n);
});

test('a confirmation the chain does not bear out (a stolen bank login writing one) is never credited', async () => {
  const p = await player(100n);
  const tableId = await table(p);
  const bankLogin = db.pool('poker_bank', 1);
  const { rows: [{ sid }] } = await db.owner.query('select auth.grant_access($1, 600) as sid', [p.userId]);
  const key = `0x${randomUUID().replace(/-/g, '').padEnd(64, '0')}`;
  const fakeTx = `0x${'ab'.repeat(32)}`;
  await bankLogin.query('select * from bank.open_deposit($1, $2, $3, 0, 100, $4, $5)', [sid, key, tableId, p.wallet, inAnHour().toString()]);
  await bankLogin.query('select bank.submit_deposit($1, $2)', [key, fakeTx]);
  await bankLogin.query('select bank.confirm_deposit($1, $2, 1, $3, $4)', [key, fakeTx, p.wallet, (100n * C).toString()]);
  await reconcileNow();
  expect(await creditOf(key)).toEqual({ status: 'confirmed', credited: false });
  expect(await seats(tableId)).toEqual([]);
  expect(await reader.tableBalance(tableId)).toBe(0n);
});

test('a full cash hand played through the chain bank: the game\'s stacks are what the chain pays back', async () => {
  const { connect } = await import('../helpers/ws-client.ts');
  const players = [await player(500n), await player(500n)];
  const tableId = await table(players[0]!);
  for (const [i, p] of players.entries()) expect((await deposit(p, await depositBody(p, tableId, 200n, { seatIndex: i }))).body.status).toBe('confirmed');
  const wsUrl = game.replace(/^http/, 'ws');
  const sockets = await Promise.all(players.map(async (p) => {
    const ws = await connect(`${wsUrl}/ws`, p.auth);
    await ws.next((x) => x.type === 'hello');
    return ws;
  }));
  try {
    let refs = 0;
    const request = (i: number, message: Record<string, unknown>) => {
      const ref = `r${++refs}`;
      sockets[i]!.send({ ...message, ref });
      return sockets[i]!.next((x) => x.ref === ref, 10_000);
    };
    await Promise.all(players.map((_, i) => request(i, { type: 'join', tableId })));
    // check or call down the first hand
    const answered = new Set<string>();
    let result: Record<string, any> | undefined;
    for (const stop = Date.now() + 20_000; !result;) {
      if (Date.now() > stop) throw new Error(`the hand did not end: ${JSON.stringify(sockets[0]!.messages.map((x) => [x.type, x.code ?? x.legal?.actions?.length ?? '']).slice(-15))}`);
      result = sockets[0]!.messages.find((x) => x.type === 'hand_result' && x.tableId === tableId);
      for (const [i] of players.entries()) {
        const s = sockets[i]!.messages.filter((x) => x.type === 'game_state' && x.tableId === tableId).at(-1);
        if (!s?.legal || answered.has(`${s.legal.handId}:${s.legal.seq}`)) continue;
        answered.add(`${s.legal.handId}:${s.legal.seq}`);
        const legal = (s.legal.actions as (string | { action: string })[]).map((a) => (typeof a === 'string' ? a : a.action));
        const action = legal.includes('check') ? 'check' : 'call';
        const ack = await request(i, { type: 'action', tableId, handId: s.legal.handId, seq: s.legal.seq, action });
        if (ack.type !== 'action_ack') throw new Error(`${action} refused: ${JSON.stringify(ack)} (legal ${JSON.stringify(s.legal)})`);
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    // everybody leaves through the bank (the room asks the chain bank to withdraw with the player's token)
    const stacks = Object.fromEntries((await seats(tableId)).map((s: { userId: string; chipBalance: string }) => [s.userId, BigInt(s.chipBalance)]));
    for (const [i] of players.entries()) {
      for (let tries = 0; tries < 500; tries++) {
        const r = await request(i, { type: 'stand_up', tableId });
        if (r.type === 'stood_up' || r.type === 'stand_up_pending') break;
        if (r.code !== 'hand_in_progress') throw new Error(`stand_up refused: ${JSON.stringify(r)}`);
        await new Promise((res) => setTimeout(res, 5));
      }
    }
    const deadline = Date.now() + 20_000;
    while ((await seats(tableId)).length > 0) {
      if (Date.now() > deadline) throw new Error('the table did not empty');
      await new Promise((r) => setTimeout(r, 20));
    }
    const { rows: [t] } = await db.owner.query('select unreconciled_rake + reconciled_rake as rake from game.tables where table_id = $1', [tableId]);
    const rake = BigInt(t.rake);
    // each wallet holds what it kept plus the stack the game gave it at stand-up (or after the hand it stood up in)
    const balances = await Promise.all(players.map((p) => reader.balanceOf(p.wallet)));
    expect(balances.reduce((a, b) => a + b, 0n)).toBe((1000n - rake) * C);
    expect(await reader.tableBalance(tableId)).toBe(rake * C);
    // and exactly: what each kept (300) plus the stack the game settled for them, paid on chain
    for (const [i, p] of players.entries()) {
      const { rows } = await db.owner.query("select coalesce(sum(amount), 0)::bigint as paid from bank.withdraw_intents where table_id = $1 and user_id = $2 and status = 'confirmed'", [tableId, p.userId]);
      expect(balances[i]).toBe((300n + BigInt(rows[0].paid)) * C);
      expect(BigInt(rows[0].paid)).toBe(stacks[p.userId] ?? 0n);
    }
    expect(Object.values(stacks).reduce((a, b) => a + b, 0n)).toBe(400n - rake);
  } finally {
    await Promise.all(sockets.map((s) => s.close()));
  }
});

describe('a chain that stops producing blocks mid-deposit', () => {
  const rpc = (method: string, params: unknown[] = []) =>
    fetch(local.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) }).then((r) => r.json());
  afterEach(async () => {
    await rpc('evm_setAutomine', [true]);
  });
  /** A deposit sent while anvil mines nothing: the bank answers `submitted` once its window passes. */
  async function stalledDeposit(p: Player, tableId: string) {
    await rpc('evm_setAutomine', [false]);
    const r = await deposit(p, await depositBody(p, tableId, 60n));
    expect(r.body).toMatchObject({ status: 'submitted', txHash: expect.stringMatching(/^0x/), note: expect.any(String) });
    // older than the reconciler's grace (the window plus a margin)
    await db.owner.query("update bank.deposit_intents set updated_at = now() - interval '10 minutes' where tx_hash = $1", [r.body.txHash]);
    return r.body as { txHash: string; idempotencyKey: string };
  }

  test('blocks again: the reconciler confirms the deposit from its receipt and credits the seat once', async () => {
    const p = await player(100n);
    const tableId = await table(p);
    const d = await stalledDeposit(p, tableId);
    expect(await seats(tableId)).toEqual([]);
    await rpc('evm_mine');
    await rpc('evm_setAutomine', [true]);
    await reconcileNow();
    expect(await creditOf(d.idempotencyKey)).toEqual({ status: 'confirmed', credited: true });
    expect(await seats(tableId)).toEqual([{ seatIndex: 0, userId: p.userId, chipBalance: '60', status: 'seated' }]);
    expect((await call(`${bank}/api/deposits/${d.idempotencyKey}`, { headers: p.auth })).body).toMatchObject({ status: 'confirmed', txHash: d.txHash });
    expect((await call(`${bank}/api/withdraw`, { headers: p.auth, body: { tableId } })).body).toMatchObject({ status: 'confirmed', amount: 60 });
    expect(await reader.balanceOf(p.wallet)).toBe(100n * C);
  }, 30_000);

  test('the transaction lost with the node\'s pool: the reconciler fails the deposit; nothing moved; a new permit deposits', async () => {
    const p = await player(100n);
    const tableId = await table(p);
    const d = await stalledDeposit(p, tableId);
    await rpc('anvil_dropAllTransactions');
    await rpc('evm_setAutomine', [true]);
    await reconcileNow();
    expect(await creditOf(d.idempotencyKey)).toEqual({ status: 'failed', credited: false });
    expect(await reader.balanceOf(p.wallet)).toBe(100n * C);
    expect(await seats(tableId)).toEqual([]);
    // the permit's nonce was never spent: a new permit (a new key) goes through
    const again = await deposit(p, await depositBody(p, tableId, 60n, { deadline: inAnHour() + 1n }));
    expect(again.body).toMatchObject({ status: 'confirmed' });
    expect((await call(`${bank}/api/withdraw`, { headers: p.auth, body: { tableId } })).body).toMatchObject({ status: 'confirmed', amount: 60 });
  }, 30_000);
});
