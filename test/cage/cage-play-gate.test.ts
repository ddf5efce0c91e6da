// The play-chip transfer gate as the cage's policy, over real HTTP: ON freezes a player's play
// account after a grant, wraps the cage's own moves on it (thaw, move, refreeze) and a re-grant
// (one atomic thaw, grant, freeze); the lever flipped records PlayGateSet; OFF freezes nothing more
// and thaws a frozen account the next time a move touches it. The cage audit ends empty.
import type pg from 'pg';
import { createTestDatabase, harnessSwitchOn, type TestDatabase } from '../helpers/db.ts';
import { expectCleanAudit } from '../helpers/cage.ts';
import { claimsClient, linkSolana } from '../helpers/claims.ts';
import { call, startMoneyPlatform } from '../helpers/money.ts';

let db: TestDatabase;
let cagePool: pg.Pool;
let m: Awaited<ReturnType<typeof startMoneyPlatform>>;
let claims: ReturnType<typeof claimsClient>;
beforeAll(async () => {
  db = await createTestDatabase();
  // the claims here are judged at the clocks the tests name: the test harness's
  await harnessSwitchOn(db);
  cagePool = db.pool('poker_cage');
  m = await startMoneyPlatform(db);
  claims = claimsClient(m);
  expect((await claims.settings({ claimBoardEnabled: true })).status).toBe(200);
});
afterAll(async () => {
  await m?.platform.stop();
  await expectCleanAudit(cagePool);
  await db.drop();
});

const gateOf = async (userId: string) => (await db.owner.query(
  `select g.frozen, g.wraps::int, g.thawed_at is not null as thawed from cage.play_gate_accounts g
     join cage.cage_accounts a on a.id = g.account_id where a.account_type = 'user' and a.user_id = $1 and a.money_kind = 'play'`, [userId],
)).rows[0];
const events = async () => (await db.owner.query("select payload from cage.gate_events where event = 'PlayGateSet' order by id")).rows.map((r) => r.payload);

test('ON: a grant freezes the account; the cage\'s own moves and a re-grant are wrapped; OFF thaws on touch', async () => {
  const p = await m.player();
  await linkSolana(db, p.userId);
  expect((await claims.claim(p.auth, { sectionKey: 'weekly_baseline' }, '2026-11-02T12:00:00Z')).status).toBe(200);
  expect(await gateOf(p.userId)).toEqual({ frozen: true, wraps: 0, thawed: false });

  // the cage's own move on the frozen account (a buy-in): thawed, moved, refrozen in one step
  const tableId = await m.table(p.auth);
  expect((await m.deposit(p.auth, { tableId, seatIndex: 0, amount: 100 })).status).toBe(200);
  expect(await gateOf(p.userId)).toEqual({ frozen: true, wraps: 1, thawed: false });
  // a re-grant next week: one atomic thaw, grant, freeze
  expect((await claims.claim(p.auth, { sectionKey: 'weekly_baseline' }, '2026-11-09T12:00:00Z')).status).toBe(200);
  expect(await gateOf(p.userId)).toEqual({ frozen: true, wraps: 2, thawed: false });
  expect((await call(`${m.cage}/api/economy`)).body.playTransferGate).toMatchObject({ enabled: true, environment: 'local', frozenAccounts: 1 });

  // the lever off: PlayGateSet recorded; the account stays frozen until a move touches it
  const before = (await events()).length;
  expect((await claims.settings({ playTransferGateEnabled: false })).body.playTransferGateEnabled).toBe(false);
  const flipped = (await events()).slice(before);
  expect(flipped).toEqual([expect.objectContaining({ environment: 'local', enabled: false, previous: true, appliesHere: true, frozenAccounts: 1 })]);
  expect(flipped[0].adminId).toBe((await m.operator()).adminId);
  expect(await gateOf(p.userId)).toEqual({ frozen: true, wraps: 2, thawed: false });
  // setting it to what it is records nothing
  await claims.settings({ playTransferGateEnabled: false });
  expect((await events()).length).toBe(before + 1);

  expect((await m.withdraw(p.auth, { tableId })).status).toBe(200); // touches the account: thawed lazily
  expect(await gateOf(p.userId)).toEqual({ frozen: false, wraps: 2, thawed: true });
  // a grant while OFF freezes nothing
  const q = await m.player();
  await linkSolana(db, q.userId);
  expect((await claims.claim(q.auth, { sectionKey: 'weekly_baseline' }, '2026-11-09T12:00:00Z')).status).toBe(200);
  expect(await gateOf(q.userId)).toBeUndefined();
  expect((await call(`${m.cage}/api/economy`)).body.playTransferGate).toMatchObject({ enabled: false, frozenAccounts: 0 });

  // back ON: the next grant freezes again
  expect((await claims.settings({ playTransferGateEnabled: true })).body.playTransferGateEnabled).toBe(true);
  expect((await events()).at(-1)).toMatchObject({ enabled: true, previous: false });
  expect((await claims.claim(q.auth, { sectionKey: 'weekly_baseline' }, '2026-11-16T12:00:00Z')).status).toBe(200);
  expect(await gateOf(q.userId)).toEqual({ frozen: true, wraps: 0, thawed: false });
});

test('the gate of another environment is recorded but does not apply here; real money is never gated', async () => {
  const before = (await events()).length;
  expect((await claims.settings({ environment: 'staging', playTransferGateEnabled: false })).status).toBe(200);
  expect((await events()).slice(before)).toEqual([expect.objectContaining({ environment: 'staging', enabled: false, appliesHere: false })]);
  expect((await call(`${m.cage}/api/economy`)).body.playTransferGate.enabled).toBe(true);
  const p = await m.player();
  expect((await call(`${m.cage}/api/operator/switches`, { headers: (await m.operator()).auth, body: { name: 'real_money', enabled: true } })).status).toBe(200);
  await m.buy(p.userId, 50, 'real');
  expect(await gateOf(p.userId)).toBeUndefined();
  const real = await db.owner.query(
    "select count(*)::int as n from cage.play_gate_accounts g join cage.cage_accounts a on a.id = g.account_id where a.money_kind = 'real'");
  expect(real.rows[0].n).toBe(0);
});
