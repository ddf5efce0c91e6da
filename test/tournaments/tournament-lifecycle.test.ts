// Sit-and-Go tournaments against running roles (auth, game, cage, worker) on a real database:
// creation, registration (websocket and HTTP), the entry fee and its gates, refunds, the lifecycle
// driven by the worker's jobs on an accelerated clock (clockFactor), play to the end with absent
// players auto-folded, settlement, payouts through the cage's payoutIntent branch, the closed pool
// holding exactly the house fee, and the cage audit empty.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { expectCleanAudit } from '../helpers/cage.ts';
import type { TestDatabase } from '../helpers/db.ts';
import { until, type LiveClient, type Msg } from '../helpers/live.ts';
import { call, startMoneyPlatform } from '../helpers/money.ts';
import { SNG, tournamentPlatform } from '../helpers/tournament.ts';
import { finishedSpans } from '../../server/telemetry/index.ts';

const t = tournamentPlatform('tournament-test');
let db: TestDatabase;
let cagePool: pg.Pool;
let m: Awaited<ReturnType<typeof startMoneyPlatform>>;
let live: LiveClient;
beforeAll(() => {
  ({ db, cagePool, m, live } = t);
});

const state = async (tableId: string) =>
  (await db.owner.query<{ tournament_state: string }>('select tournament_state from game.tables where table_id = $1', [tableId])).rows[0]!.tournament_state;

const pool = async (tableId: string) =>
  BigInt((await db.owner.query("select coalesce((select balance from cage.cage_accounts where account_type = 'tournament_pool' and scope = $1), 0) as b", [tableId])).rows[0].b);

describe('creation', () => {
  test('an SnG table is created registering, with its kind, its resolved payout and its effective level duration', async () => {
    const host = await m.player();
    const tableId = await m.table(host.auth, SNG({ kind: 'agent', seats: 6 }));
    const { rows } = await db.owner.query('select mode, kind, tournament_state, settings from game.tables where table_id = $1', [tableId]);
    expect(rows[0]).toMatchObject({ mode: 'sng', kind: 'agent', tournament_state: 'registering' });
    expect(rows[0].settings).toMatchObject({ levelDurationSeconds: 30, entryFee: 100, rakeFee: 10, seats: 6 });
    expect(rows[0].settings.prizeStructure.reduce((t: number, p: Msg) => t + p.percent, 0)).toBeCloseTo(100, 9);
    expect(rows[0].settings.prizeStructure).toHaveLength(2); // round(6 x 30%) = 2 places
  });

  test('invalid settings: 400 validation_failed with issues naming the field; the cash fields are not required', async () => {
    const host = await m.player();
    const bad = await call(`${m.cage}/api/tables`, { headers: host.auth, body: { tableId: 'sng-bad-1', gameType: 'poker', settings: SNG({ seats: 11 }) } });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('validation_failed');
    expect(bad.body.issues.map((i: Msg) => i.path.join('.'))).toContain('settings.seats');
    const noBlinds = await call(`${m.cage}/api/tables`, { headers: host.auth, body: { tableId: 'sng-bad-2', gameType: 'poker', settings: SNG({ blindStructure: undefined }) } });
    expect(noBlinds.status).toBe(400);
    const { rows } = await db.owner.query("select count(*)::int as n from game.tables where table_id like 'sng-bad-%'");
    expect(rows[0].n).toBe(0);
  });
});

describe('registration and the entry fee', () => {
  test('the deposit pays the fee: a fee mismatch, an overdraft (the held seat released), a duplicate; the refund while registering', async () => {
    const host = await m.player();
    const tableId = await m.table(host.auth, SNG({ seats: 3 }));
    const a = await m.player(300);
    expect((await m.deposit(a.auth, { tableId, amount: 99 })).body).toEqual({ error: 'tournament_entry_fee_mismatch' });
    const key = `entry-${randomUUID()}`;
    const paid = await m.deposit(a.auth, { tableId, amount: 100 }, { 'idempotency-key': key });
    expect(paid.status).toBe(200);
    expect(paid.body).toMatchObject({ status: 'confirmed', tournamentState: 'registering', registeredCount: 1 });
    expect(await m.balance(a.auth)).toBe(200);
    expect((await m.deposit(a.auth, { tableId, amount: 100 })).body).toEqual({ error: 'tournament_already_registered' });

    const poor = await m.player(50);
    const overdraft = await m.deposit(poor.auth, { tableId, amount: 100 });
    expect(overdraft.status).toBe(402);
    expect(overdraft.body.error).toBe('insufficient_cage_balance');
    const { rows } = await db.owner.query("select count(*)::int as n from game.table_players where table_id = $1 and status <> 'closed'", [tableId]);
    expect(rows[0].n).toBe(1); // the poor player's held seat was released

    const refund = await call(`${m.cage}/api/tournament/unregister`, { headers: a.auth, body: { tableId } });
    expect(refund.status).toBe(200);
    expect(refund.body).toMatchObject({ status: 'refunded', amount: '100', registeredCount: 0 });
    expect(await m.balance(a.auth)).toBe(300);
    expect(await pool(tableId)).toBe(0n);
    expect((await call(`${m.cage}/api/tournament/unregister`, { headers: a.auth, body: { tableId } })).body).toEqual({ error: 'tournament_not_registered' });
    // the entry's key replayed: what is true now (refunded), as a replay; nothing moves
    const replay = await m.deposit(a.auth, { tableId, amount: 100 }, { 'idempotency-key': key });
    expect(replay).toMatchObject({ status: 200, body: { status: 'refunded', replay: true, txHash: paid.body.txHash, refundTxHash: `tournament-refund:${paid.body.txHash}` } });
    expect(await m.balance(a.auth)).toBe(300);
    await expectCleanAudit(cagePool);
  });
});

describe('the lifecycle notices', () => {
  test('a forged NOTIFY (any database role may send one) announces nothing the database does not hold', async () => {
    const host = await m.player();
    const tableId = await m.table(host.auth, SNG({ seats: 3, clockFactor: 1 }));
    const watcher = await live.player(0);
    await live.join(watcher, tableId);
    const forge = (payload: Record<string, unknown>) =>
      db.pool('poker_auth').query("select pg_notify('game_tournament', $1)", [JSON.stringify({ tableId, ...payload })]);
    await forge({ type: 'tournament_state_changed', state: 'closed', closedAt: 1 });
    await forge({ type: 'tournament_ended', finalStandings: [], payouts: [{ position: 1, userId: 'evil', amount: '999999' }] });
    await forge({ type: 'blind_level_changed', currentLevel: 7 });
    // a real move after the forgeries: its announcement arrives, and nothing forged came before it
    const a = await m.player(100);
    expect((await m.deposit(a.auth, { tableId, amount: 100 })).status).toBe(200);
    await until(() => watcher.ws.messages.some((x) => x.type === 'game_state' && x.tournament?.registeredCount === 1), 'the registration shown');
    const relayed = watcher.ws.messages.filter((x) => ['tournament_state_changed', 'tournament_ended', 'blind_level_changed'].includes(x.type));
    expect(relayed).toEqual([]);
  });

  test('a move whose notice was missed is announced when the room next looks (a refresh, or the next deal)', async () => {
    const host = await m.player();
    const tableId = await m.table(host.auth, SNG({ seats: 3, clockFactor: 1 }));
    const watcher = await live.player(0);
    await live.join(watcher, tableId);
    // the move made without its notice (as if the game process was away when it was sent)
    await db.owner.query("update game.tables set tournament_state = 'starting', starts_at = now() + interval '1 hour' where table_id = $1", [tableId]);
    await db.owner.query("select pg_notify('game_seats', $1)", [tableId]);
    const announced = await watcher.ws.next((x) => x.type === 'tournament_state_changed', 5000);
    expect(announced).toMatchObject({ tableId, state: 'starting', startsAt: expect.any(Number) });
    await db.owner.query("update game.tables set tournament_state = 'registering', starts_at = null where table_id = $1", [tableId]);
  });
});

describe('concurrency', () => {
  test('concurrent deposits and websocket registrations for the last seat: exactly one wins; the others are refused and keep their chips', async () => {
    const host = await m.player();
    const tableId = await m.table(host.auth, SNG({ seats: 3, clockFactor: 1 }));
    for (let i = 0; i < 2; i++) {
      const early = await m.player(100);
      expect((await m.deposit(early.auth, { tableId, amount: 100 })).status).toBe(200);
    }
    const racers = await Promise.all(Array.from({ length: 6 }, () => m.player(100)));
    const answers = await Promise.all(racers.map((r) => m.deposit(r.auth, { tableId, amount: 100 })));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    for (const a of answers.filter((x) => x.status !== 200)) {
      expect(a.status).toBe(409);
      expect(a.body.error).toBe('tournament_full');
    }
    const balances = await Promise.all(racers.map((r) => m.balance(r.auth)));
    expect(balances.sort()).toEqual([0, 100, 100, 100, 100, 100]);
    expect(await pool(tableId)).toBe(300n);

    // the same race over the websocket's registration (reserves, no money)
    const other = await m.table(host.auth, SNG({ seats: 3, clockFactor: 1 }));
    const first = await live.player(0);
    const second = await live.player(0);
    for (const p of [first, second]) {
      await live.join(p, other);
      expect((await live.request(p.ws, { type: 'register_for_tournament', tableId: other })).type).toBe('tournament_registered');
    }
    const wsRacers = await Promise.all(Array.from({ length: 5 }, () => live.player(0)));
    await Promise.all(wsRacers.map((p) => live.join(p, other)));
    const registered = await Promise.all(wsRacers.map((p) => live.request(p.ws, { type: 'register_for_tournament', tableId: other })));
    expect(registered.filter((r) => r.type === 'tournament_registered')).toHaveLength(1);
    expect(registered.filter((r) => r.type === 'error').map((r) => r.code)).toEqual(['tournament_full', 'tournament_full', 'tournament_full', 'tournament_full']);
    await expectCleanAudit(cagePool);
  });
});

describe('a whole tournament', () => {
  test('two players pay, the seats fill, the worker starts it, absent players are blinded out, it settles, pays and closes; the pool keeps the house fee', async () => {
    const host = await m.player();
    const tableId = await m.table(host.auth, SNG());
    const a = await live.player(500);
    const b = await live.player(500);
    await live.join(a, tableId);
    const registered = await live.request(a.ws, { type: 'register_for_tournament', tableId });
    expect(registered).toMatchObject({ type: 'tournament_registered', tableId, entryFee: '100', registeredCount: 1 });
    expect((await m.deposit(a.auth, { tableId, amount: 100, seatIndex: registered.seatIndex })).status).toBe(200);
    expect((await m.deposit(b.auth, { tableId, amount: 100 })).body).toMatchObject({ status: 'confirmed', tournamentState: 'starting' });

    await a.ws.next((x) => x.type === 'tournament_state_changed' && x.state === 'starting' && typeof x.startsAt === 'number', 5000);
    await a.ws.next((x) => x.type === 'tournament_state_changed' && x.state === 'playing', 10_000);
    const dealt = await a.ws.next((x) => x.type === 'game_state' && x.handId && x.tournament, 10_000);
    expect(dealt.tournament).toMatchObject({ state: 'playing', currentLevel: 0, smallBlind: '10', bigBlind: '20', registeredCount: 2 });
    expect(dealt.tournamentSchedule).toMatchObject({ continues: true, totalLevels: null, prizeStructure: [{ position: 1, share: 1 }] });

    // nobody acts: every turn times out (an auto-fold) and the blinds climb until one player is out
    const ended = await a.ws.next((x) => x.type === 'tournament_ended', 60_000);
    expect(ended.payouts).toEqual([{ position: 1, userId: expect.any(String), amount: '180' }]);
    expect(ended.finalStandings.map((s: Msg) => s.position)).toEqual([1, 2]);
    await a.ws.next((x) => x.type === 'tournament_payout_settled' && x.position === 1, 20_000);
    const closed = await a.ws.next((x) => x.type === 'tournament_state_changed' && x.state === 'closed', 20_000);
    expect(typeof closed.closedAt).toBe('number');
    expect(await state(tableId)).toBe('closed');
    expect(await pool(tableId)).toBe(20n); // rakeFee 10 x 2 seats: never moved
    const balances = [await m.balance(a.auth), await m.balance(b.auth)].sort();
    expect(balances).toEqual([400, 580]);
    const eliminated = a.ws.messages.filter((x) => x.type === 'player_eliminated' && x.tableId === tableId);
    expect(eliminated).toHaveLength(1);
    expect(eliminated[0]).toMatchObject({ position: 2 });
    await expectCleanAudit(cagePool);
    const { rows } = await db.owner.query('select auto_fold_count from game.tables where table_id = $1', [tableId]);
    expect(rows[0].auto_fold_count).toBeGreaterThan(0);
    await until(async () => (await state(tableId)) === 'closed', 'closed');

    // its tournament.lifecycle span: a root, the configuration, a state_transition per move, the close's figures
    const span = await until(() => finishedSpans().find((s) => s.name === 'tournament.lifecycle' && s.attributes['tournament.table_id'] === tableId), 'the lifecycle span');
    expect(span.parentSpanContext?.spanId).toBeUndefined();
    expect(span.attributes).toMatchObject({
      'tournament.seats': 2, 'tournament.entry_fee': 100, 'tournament.starting_stack': 1000, 'tournament.level_duration_seconds': 30,
      'tournament.action_timeout_seconds': 3, 'tournament.prize_structure_summary': '1:100', 'tournament.actual_payouts': '1:180',
    });
    expect(span.attributes['tournament.duration_ms']).toBeGreaterThan(0);
    expect(span.attributes['tournament.auto_fold_count']).toBe(rows[0].auto_fold_count);
    expect(span.events.map((e) => e.attributes?.['tournament.to'])).toEqual(['starting', 'playing', 'ended', 'settling', 'closed']);
  });
});
