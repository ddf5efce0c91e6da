// Live tables end to end: real ws clients sit through the cage, play hands to a fold and to a
// showdown, time out, and stand up; the books end clean and the escrow equals the stacks plus the
// rake.
import type pg from 'pg';
import { expectCleanAudit } from '../helpers/cage.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { call, POKER_SETTINGS, startMoneyPlatform } from '../helpers/money.ts';
import { connect, type WsClient } from '../helpers/ws-client.ts';

let db: TestDatabase;
let cagePool: pg.Pool;
let m: Awaited<ReturnType<typeof startMoneyPlatform>>;
const clients: WsClient[] = [];
beforeAll(async () => {
  db = await createTestDatabase();
  cagePool = db.pool('poker_cage');
  const { createLogger } = await import('../../server/telemetry/index.ts');
  m = await startMoneyPlatform(db, { env: { HAND_DELAY_MS: '30' }, ...(process.env.DEBUG_LOG ? { log: createLogger('debug') } : {}) });
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await m?.platform.stop();
  await expectCleanAudit(cagePool);
  await db.drop();
});

const wsUrl = () => m.game.replace(/^http/, 'ws');
type Player = Awaited<ReturnType<typeof player>>;
async function player(chips: number) {
  const p = await m.player(chips);
  const ws = await connect(`${wsUrl()}/ws`, p.auth);
  clients.push(ws);
  await ws.next((x) => x.type === 'hello');
  return { ...p, ws };
}
async function seat(p: Player, tableId: string, seatIndex: number, amount: number) {
  p.ws.send({ type: 'join', tableId });
  await p.ws.next((x) => x.type === 'joined' && x.tableId === tableId);
  p.ws.send({ type: 'sit', tableId, seatIndex, amount, ref: `sit-${seatIndex}` });
  return p.ws.next((x) => x.ref === `sit-${seatIndex}`);
}
/** The next state in which one of the players must act. */
async function turnOf(players: Player[], timeoutMs = 5000): Promise<{ p: Player; s: Record<string, any> }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    for (const p of players) {
      const s = p.ws.take((x) => x.type === 'game_state' && x.legal);
      if (s) return { p, s };
    }
    if (Date.now() > deadline) throw new Error('nobody was asked to act');
    await new Promise((r) => setTimeout(r, 5));
  }
}
async function escrowMatchesTable(tableId: string) {
  const { rows } = await db.owner.query(
    `select (select balance from cage.account_balances where account_type = 'table_escrow' and scope = $1) as escrow,
            (select coalesce(sum(chip_balance), 0) from game.table_players where table_id = $1 and status <> 'closed') as stacks,
            (select unreconciled_rake + reconciled_rake from game.tables where table_id = $1) as rake`, [tableId]);
  expect(BigInt(rows[0].escrow ?? 0)).toBe(BigInt(rows[0].stacks) + BigInt(rows[0].rake));
}

test('sit through the cage, play to a fold and to a showdown, refusals keep the connection usable, stand up', async () => {
  const a = await player(1000);
  const b = await player(1000);
  const tableId = await m.table(a.auth, { ...POKER_SETTINGS, deckSeed: 'live-1' });
  expect(await seat(a, tableId, 0, 100)).toMatchObject({ type: 'seated', seatIndex: 0 });
  expect(await seat(b, tableId, 1, 100)).toMatchObject({ type: 'seated', seatIndex: 1 });
  expect(await m.balance(a.auth)).toBe(900);

  // hand 1: the player to act sees their own cards and the legal actions, the other does not see them
  let { p, s } = await turnOf([a, b]);
  expect(s.legal).toMatchObject({ actions: expect.arrayContaining(['fold', 'call']), handId: s.handId });
  expect(s.seats.find((x: any) => x.seatIndex === s.yourSeat).cards).toHaveLength(2);
  const other = p === a ? b : a;
  for (let i = 0; i < 100 && !other.ws.messages.some((x) => x.type === 'game_state' && x.handId === s.handId); i++) await new Promise((r) => setTimeout(r, 20));
  const view = other.ws.messages.filter((x) => x.type === 'game_state' && x.handId === s.handId).at(-1)!;
  expect(view.seats.find((x: any) => x.seatIndex === s.yourSeat).cards).toBeNull();

  // refused: out of turn, an illegal amount; the connection stays usable
  other.ws.send({ type: 'action', tableId, handId: s.handId, seq: s.seq, action: 'call', ref: 'oot' });
  expect(await other.ws.next((x) => x.ref === 'oot')).toMatchObject({ type: 'error', code: 'not_your_turn' });
  p.ws.send({ type: 'action', tableId, handId: s.handId, seq: s.seq, action: 'raise', amount: '1', ref: 'small' });
  expect(await p.ws.next((x) => x.ref === 'small')).toMatchObject({ type: 'error', code: 'illegal_amount' });
  p.ws.send({ type: 'nonsense', ref: 'n' });
  expect(await p.ws.next((x) => x.ref === 'n')).toMatchObject({ type: 'error', code: 'unknown_message_type' });

  p.ws.send({ type: 'action', tableId, handId: s.handId, seq: s.seq, action: 'fold', ref: 'f1' });
  expect(await p.ws.next((x) => x.ref === 'f1')).toMatchObject({ type: 'action_ack' });
  // the same action resent with the same seq is not applied twice
  p.ws.send({ type: 'action', tableId, handId: s.handId, seq: s.seq, action: 'fold', ref: 'f1-again' });
  expect(await p.ws.next((x) => x.ref === 'f1-again')).toMatchObject({ type: 'action_ack', duplicate: true });
  const r1 = await a.ws.next((x) => x.type === 'hand_result' && x.handId === s.handId);
  expect(r1.showdown).toBe(false);
  await escrowMatchesTable(tableId);

  // hand 2: both call and check down to a showdown
  for (let i = 0; i < 20; i++) {
    ({ p, s } = await turnOf([a, b]));
    if (s.handId === r1.handId) continue;
    const action = s.legal.actions.includes('check') ? 'check' : 'call';
    p.ws.send({ type: 'action', tableId, handId: s.handId, seq: s.seq, action, ref: `h2-${i}` });
    await p.ws.next((x) => x.ref === `h2-${i}`);
    const done = a.ws.messages.find((x) => x.type === 'hand_result' && x.handId === s.handId);
    if (done) break;
  }
  const r2 = await a.ws.next((x) => x.type === 'hand_result' && x.handId !== r1.handId);
  expect(r2.showdown).toBe(true);
  expect(r2.shown).toHaveLength(2);
  expect(r2.shown[0]).toMatchObject({ best: expect.any(Array), description: expect.any(String) });
  await escrowMatchesTable(tableId);

  // stand up between hands (or after the current one): the chips come back to the cage
  for (const x of [a, b]) x.ws.send({ type: 'stand_up', tableId, ref: 'up' });
  for (const x of [a, b]) {
    const reply = await x.ws.next((y) => y.ref === 'up');
    if (process.env.DEBUG_WS) console.log(JSON.stringify(reply));
    expect(['stood_up', 'stand_up_pending']).toContain(reply.type);
  }
  for (let i = 0; i < 100 && (await m.room(tableId)).body.seats.length > 0; i++) await new Promise((r) => setTimeout(r, 50));
  expect((await m.room(tableId)).body.seats).toEqual([]);
  expect((await m.balance(a.auth)) + (await m.balance(b.auth))).toBe(2000 - Number((await db.owner.query('select unreconciled_rake + reconciled_rake as rake from game.tables where table_id = $1', [tableId])).rows[0].rake));
  await escrowMatchesTable(tableId);
  const { rows } = await db.owner.query("select count(*)::int as n from game.hand_histories where table_id = $1 and status = 'finished'", [tableId]);
  expect(rows[0].n).toBeGreaterThanOrEqual(2);

  // the players read the hands they played: their own hole cards only, others' where they were shown
  const hands = (auth: Record<string, string>, query = '') => call(`${m.game}/api/hands${query}`, { headers: auth });
  const list = await hands(a.auth, `?tableId=${tableId}`);
  expect(list.status).toBe(200);
  const ids = list.body.hands.map((h: { handId: string }) => h.handId);
  expect(ids).toEqual(expect.arrayContaining([r1.handId, r2.handId]));
  const started = list.body.hands.map((h: { startedAt: string }) => Date.parse(h.startedAt));
  expect(started).toEqual([...started].sort((x, y) => y - x));
  const netOf = (id: string) => list.body.hands.find((h: { handId: string }) => h.handId === id).net;
  expect(netOf(r1.handId)).toBe(String(r1.stacks.find((x: any) => x.userId === a.userId).net));
  expect((await hands(a.auth, `?tableId=${tableId}&limit=1`)).body.hands).toHaveLength(1);
  expect((await hands(a.auth, `?tableId=${tableId}&before=${encodeURIComponent(list.body.hands.at(-1).startedAt)}`)).body.hands).toEqual([]);

  const fold = await hands(a.auth, `/${r1.handId}`);
  expect(fold).toMatchObject({ status: 200, body: { handId: r1.handId, tableId, status: 'finished', yourSeats: [0], result: { showdown: false } } });
  const holes = (h: Record<string, any>) => h.history.filter((e: any) => e.type === 'hole_cards');
  expect(holes(fold.body)).toEqual([{ type: 'hole_cards', seat: 0, cards: [expect.any(String), expect.any(String)] }]);
  expect(fold.body.history.filter((e: any) => e.type === 'show')).toEqual([]);
  const showdown = await hands(b.auth, `/${r2.handId}`);
  expect(showdown.body.yourSeats).toEqual([1]);
  expect(holes(showdown.body).map((e: any) => e.seat)).toEqual([1]);
  expect(showdown.body.history.filter((e: any) => e.type === 'show').map((e: any) => e.seat).sort()).toEqual([0, 1]);

  // a hand the caller did not play is not found, whether it exists or not; identity from the JWT only
  const outsider = await m.player(0);
  expect(await hands(outsider.auth, `/${r1.handId}`)).toEqual({ status: 404, body: { error: 'hand_not_found' } });
  expect(await hands(outsider.auth, '/no-such-hand')).toEqual({ status: 404, body: { error: 'hand_not_found' } });
  expect((await hands(outsider.auth, `?tableId=${tableId}&userId=${a.userId}`)).body).toEqual({ hands: [] });
  expect((await call(`${m.game}/api/hands/${r1.handId}`)).status).toBe(401);
  for (const bad of ['?limit=0', '?limit=201', '?limit=x', '?before=yesterday', '?agentId=nope']) {
    const r = await hands(a.auth, bad);
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ error: 'bad_request', issues: expect.any(Array) });
  }
});

test('a hand left by a stopped process is abandoned when the room loads: the stacks of its start stand', async () => {
  const a = await player(500);
  const b = await player(500);
  const tableId = await m.table(a.auth);
  // seats funded over HTTP before any room is loaded, then a hand "in progress" with no process behind it
  expect((await m.deposit(a.auth, { tableId, seatIndex: 0, amount: 100 })).status).toBe(200);
  expect((await m.deposit(b.auth, { tableId, seatIndex: 1, amount: 100 })).status).toBe(200);
  expect((await m.hand({ action: 'begin', tableId, handId: 'crashed-hand' })).status).toBe(200);
  a.ws.send({ type: 'join', tableId });
  await a.ws.next((x) => x.type === 'joined' && x.tableId === tableId);
  const { rows } = await db.owner.query("select status from game.hand_histories where hand_id = 'crashed-hand'");
  expect(rows).toEqual([{ status: 'abandoned' }]);
  // play resumes from the stored stacks once both players watch (a room deals only to connected players)
  b.ws.send({ type: 'join', tableId });
  await b.ws.next((x) => x.type === 'joined' && x.tableId === tableId);
  const s = await a.ws.next((x) => x.type === 'game_state' && x.tableId === tableId && x.handId !== null && x.handId !== 'crashed-hand');
  expect(s.seats.map((x: any) => x.stack).reduce((t: bigint, v: string) => t + BigInt(v), 0n) + BigInt(s.pots.reduce((t: bigint, p: any) => t + BigInt(p.amount), 0n)) + s.seats.reduce((t: bigint, x: any) => t + BigInt(x.bet), 0n)).toBe(200n);
  for (const p of [a, b]) {
    p.ws.send({ type: 'join', tableId });
    p.ws.send({ type: 'stand_up', tableId, ref: `up-${p.userId}` });
    await p.ws.next((x) => x.ref === `up-${p.userId}`);
  }
  for (let i = 0; i < 100 && (await m.room(tableId)).body.seats.length > 0; i++) await new Promise((r) => setTimeout(r, 50));
  expect((await m.room(tableId)).body.seats).toEqual([]);
  expect((await m.balance(a.auth)) + (await m.balance(b.auth))).toBe(1000 - Number((await db.owner.query('select unreconciled_rake + reconciled_rake as rake from game.tables where table_id = $1', [tableId])).rows[0].rake));
});

test('spectators, arena tables and the audience gate', async () => {
  const a = await player(500);
  const tableId = await m.table(a.auth);
  const spectator = await connect(`${wsUrl()}/ws/tables/${tableId}`);
  clients.push(spectator);
  expect(await spectator.next((x) => x.type === 'hello')).toMatchObject({ role: 'spectator', userId: null });
  expect(await spectator.next((x) => x.type === 'joined')).toMatchObject({ tableId, role: 'spectator' });
  spectator.send({ type: 'sit', tableId, seatIndex: 0, amount: 50, ref: 's' });
  expect(await spectator.next((x) => x.ref === 's')).toMatchObject({ type: 'error', code: 'not_authenticated' });

  const arena = `arena-${Date.now()}`;
  const created = await fetch(`${m.cage}/api/tables`, {
    method: 'POST', headers: { ...a.auth, 'content-type': 'application/json' },
    body: JSON.stringify({ tableId: arena, gameType: 'arena', settings: { minBuyIn: 10, maxBuyIn: 100, maxPlayers: 4, rakePercent: 0, rakeCap: 0, turnTimeSec: 10, turnTimerEnabled: true, scoreTarget: 100 } }),
  });
  expect(created.status).toBe(200);
  a.ws.send({ type: 'join', tableId: arena, ref: 'arena' });
  expect(await a.ws.next((x) => x.ref === 'arena')).toMatchObject({ type: 'error', code: 'arena_engine_unavailable' });

  const agentTable = await m.table(a.auth);
  await db.owner.query("update game.tables set kind = 'agent' where table_id = $1", [agentTable]);
  a.ws.send({ type: 'join', tableId: agentTable });
  await a.ws.next((x) => x.type === 'joined' && x.tableId === agentTable);
  a.ws.send({ type: 'sit', tableId: agentTable, seatIndex: 0, amount: 50, ref: 'human-at-agent-table' });
  expect(await a.ws.next((x) => x.ref === 'human-at-agent-table')).toMatchObject({ type: 'error', code: 'humans_not_allowed_at_agent_table' });
  expect(await m.balance(a.auth)).toBe(500);
  spectator.send({ type: 'join', tableId: 'no-such-table', ref: 'missing' });
  expect(await spectator.next((x) => x.ref === 'missing')).toMatchObject({ type: 'error', code: 'table_not_found' });
  spectator.send({ type: 'x' } as never);
  spectator.send({ notJson: true } as never);
});
