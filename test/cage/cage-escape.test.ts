// POST /escape/:tableId over HTTP against the running auth, game and cage roles: an operator empties a
// cash table that cannot go on. Clean books give a FREE custody entry per player with chips (and the
// rake to the house); divergent books give one hold with a per-player ledger. Either way the table is
// frozen for good, its escrow is zero, its positions are closed with a last chain link, and its
// dealer is fenced. Every test ends with the cage audit empty.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { playerGrant, createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { expectCleanAudit, setTableStatus } from '../helpers/cage.ts';
import { call, startMoneyPlatform } from '../helpers/money.ts';
import { verifyChain } from '../helpers/game.ts';
import { escape, escrowOf, playHand, seatedTable, signedOutOperator, tearStack } from '../helpers/custody.ts';

let db: TestDatabase;
let m: Awaited<ReturnType<typeof startMoneyPlatform>>;
let operator: Record<string, string>;

beforeAll(async () => {
  db = await createTestDatabase();
  m = await startMoneyPlatform(db);
  operator = (await m.operator()).auth;
});
afterEach(async () => {
  await expectCleanAudit(db.pool('poker_cage', 1));
});
afterAll(async () => {
  await m?.platform.stop();
  await db?.drop();
});

const tableRow = async (tableId: string) =>
  (await db.owner.query('select status, current_hand_id from game.tables where table_id = $1', [tableId])).rows[0];
const positions = async (tableId: string) =>
  (await db.owner.query('select id::text, user_id, status, chip_balance::int as chips, closing_ref_id from game.table_players where table_id = $1 order by id', [tableId])).rows;

describe('refusals', () => {
  test('no token, a player, the service key, a signed-out operator, bad bodies, unknown and tournament tables: refused, nothing moves', async () => {
    const { tableId, players: [p] } = await seatedTable(m, [100]);
    const url = `${m.cage}/escape/${tableId}`;
    const body = { reason: 'the game process is gone' };
    expect(await call(url, { body })).toEqual({ status: 401, body: { error: 'missing_bearer_token' } });
    expect(await call(url, { headers: { authorization: 'Bearer a.b.c' }, body })).toEqual({ status: 401, body: { error: 'invalid_token' } });
    expect(await call(url, { headers: p!.auth, body })).toEqual({ status: 403, body: { error: 'admin_required' } });
    expect(await call(url, { headers: m.service, body })).toEqual({ status: 401, body: { error: 'missing_bearer_token' } });
    // the token of a session that has ended still verifies; SQL finds no live session behind it
    expect(await call(url, { headers: await signedOutOperator(db, m.platform.url('auth')), body })).toEqual({ status: 403, body: { error: 'admin_session_required' } });
    for (const bad of [{}, { reason: '' }, { reason: '   ' }, { reason: 'x'.repeat(501) }, { reason: 7 }, { reason: 'ok', extra: 1 }, []]) {
      const r = await call(url, { headers: operator, body: bad });
      expect([bad, r.status, r.body.error]).toEqual([bad, 400, 'bad_request']);
    }
    const malformed = await fetch(url, { method: 'POST', headers: { ...operator, 'content-type': 'application/json' }, body: '{"reason":' });
    expect([malformed.status, await malformed.json()]).toEqual([400, { error: 'malformed_json' }]);
    expect((await call(`${m.cage}/escape/${'t'.repeat(65)}`, { headers: operator, body })).body.error).toBe('bad_request');
    expect(await escape(m, operator, `t-${randomUUID()}`)).toEqual({ status: 404, body: { error: 'table_not_found' } });
    const sng = await m.table(p!.auth, {
      mode: 'sng', seats: 2, entryFee: 100, startingStack: 1000,
      blindStructure: { startingSmallBlind: 10, increaseFactor: 2, levelDurationSeconds: 60, anteStartLevel: null, startingAnte: 0, anteIncreaseFactor: 1 },
    });
    expect(await escape(m, operator, sng)).toEqual({ status: 409, body: { error: 'not_a_cash_table' } });
    expect((await call(url, { method: 'GET', headers: operator })).status).toBe(404);

    expect(await tableRow(tableId)).toEqual({ status: 'active', current_hand_id: null });
    expect((await positions(tableId)).map((r) => [r.status, r.chips])).toEqual([['seated', 100]]);
    expect(await escrowOf(db, tableId)).toBe(100n);
    expect((await db.owner.query("select count(*)::int as n from cage.operator_acts where act = 'escape'")).rows[0].n).toBe(0);
  });
});

describe('clean books', () => {
  test('one FREE entry per player with chips, the rake to the house, positions closed with an escape link, the table frozen; again: the first answer', async () => {
    const { tableId, players: [a, b, c] } = await seatedTable(m, [100, 150, 80]);
    await playHand(m, tableId, [[a!, 140], [b!, 107], [c!, 80]], 3);
    // a deposit in flight (its buy-in posted, its seat not funded yet): reversed to its depositor
    const late = await m.player(0);
    await m.buy(late.userId, 60);
    const { rows: [pending] } = await db.pool('poker_cage', 1).query('select ref_id from cage.open_deposit($1, $2, $3, 4, 60)', [
      await playerGrant(db.owner, late.userId), `late-${randomUUID()}`, tableId,
    ]);
    expect(await m.balance(late.auth)).toBe(0);
    expect(await escrowOf(db, tableId)).toBe(390n);

    const r = await escape(m, operator, tableId, 'game process lost its host');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      ok: true, tableId, moneyKind: 'play', outcome: 'clean', status: 'frozen', refId: `escape:${tableId}`, reason: 'game process lost its host',
      escrow: 330, liveStacks: 327, unreconciledRake: 3, reconciledRake: 0, toCustody: 327, toHouse: 3, hold: null,
      settledDeposits: [pending.ref_id], fence: { epoch: expect.any(Number), abandonedHand: null },
    });
    expect(r.body.entries).toEqual([
      { entryId: expect.any(String), userId: a!.userId, positionId: a!.positionId, amount: 140, baseUnits: '140000000' },
      { entryId: expect.any(String), userId: b!.userId, positionId: b!.positionId, amount: 107, baseUnits: '107000000' },
      { entryId: expect.any(String), userId: c!.userId, positionId: c!.positionId, amount: 80, baseUnits: '80000000' },
    ]);
    expect(await m.balance(late.auth)).toBe(60);
    expect((await db.owner.query('select status, error from cage.deposit_intents where ref_id = $1', [pending.ref_id])).rows[0]).toEqual({ status: 'failed', error: 'table_escaped' });

    expect(await escrowOf(db, tableId)).toBe(0n);
    expect(await tableRow(tableId)).toEqual({ status: 'frozen', current_hand_id: null });
    for (const pos of await positions(tableId)) {
      expect(pos).toMatchObject({ status: 'closed', chips: 0, closing_ref_id: `escape:${tableId}` });
      const chain = await verifyChain(db.owner, BigInt(pos.id));
      expect(chain.ok).toBe(true);
      expect(chain.links.at(-1)).toMatchObject({ event: 'escape', stack: 0n, ref_id: `escape:${tableId}` });
    }
    // the act is the operator's, recorded with the reason; the journal entry moved escrow -> custody + house
    const { rows: [act] } = await db.owner.query("select admin_id, reason from cage.operator_acts where act = 'escape' and ref_id = $1", [`escape:${tableId}`]);
    expect(act).toEqual({ admin_id: r.body.adminId, reason: 'game process lost its host' });
    const { rows: [entry] } = await db.owner.query("select kind::text, amounts::text[] from cage.cage_entries where ref_id = $1", [`escape:${tableId}`]);
    expect(entry).toEqual({ kind: 'table_escape', amounts: ['-330', '327', '3'] });

    // deposits and withdrawals: 409 table_frozen; nobody thaws an escaped table
    expect(await m.deposit(a!.auth, { tableId, seatIndex: 0, amount: 50 })).toEqual({ status: 409, body: { error: 'table_frozen' } });
    expect(await m.withdraw(a!.auth, { tableId })).toEqual({ status: 409, body: { error: 'table_frozen' } });
    await expect(setTableStatus(db.owner, tableId, 'active')).rejects.toMatchObject({ code: 'CGESC', message: 'table_escaped' });

    // again (a lost answer, another reason): the first answer, nothing more
    const again = await escape(m, operator, tableId, 'retrying');
    expect(again).toEqual({ status: 200, body: { ...r.body, replay: true } });
    expect((await db.owner.query('select count(*)::int as n from cage.custody_entries where escape_id = $1', [r.body.escapeId])).rows[0].n).toBe(3);

    // the players see and claim their entries, credited once
    const mine = await call(`${m.cage}/api/custody`, { headers: b!.auth });
    expect(mine.body.entries).toEqual([expect.objectContaining({
      entryId: r.body.entries[1].entryId, tableId, amount: 107, status: 'free', claimable: true, source: 'escape', positionId: b!.positionId,
    })]);
    const claim = await call(`${m.cage}/api/custody/claim`, { headers: b!.auth, body: { entryId: r.body.entries[1].entryId } });
    expect(claim.body).toMatchObject({ ok: true, amount: 107 });
    expect(await m.balance(b!.auth)).toBe(100 + 107);
  });

  test('an empty table escapes clean with nothing to move', async () => {
    const p = await m.player(0);
    const tableId = await m.table(p.auth);
    const r = await escape(m, operator, tableId);
    expect(r.body).toMatchObject({ outcome: 'clean', escrow: 0, entries: [], hold: null, fence: { epoch: null, abandonedHand: null } });
    expect(await tableRow(tableId)).toEqual({ status: 'frozen', current_hand_id: null });
  });

  test('a table an operator froze first escapes too', async () => {
    const { tableId } = await seatedTable(m, [90]);
    await setTableStatus(db.owner, tableId, 'frozen');
    expect((await escape(m, operator, tableId)).body).toMatchObject({ outcome: 'clean', toCustody: 90 });
  });
});

describe('the dealer', () => {
  test('a hand dealt by a live game process is refused (hand_in_progress); between hands the lease is fenced and the old holder\'s next boundary refused', async () => {
    const { tableId, players: [a, b] } = await seatedTable(m, [100, 100]);
    const handId = `h-${randomUUID()}`;
    expect((await m.hand({ action: 'begin', tableId, handId })).status).toBe(200);
    expect(await escape(m, operator, tableId)).toEqual({ status: 409, body: { error: 'hand_in_progress' } });
    expect(await tableRow(tableId)).toEqual({ status: 'active', current_hand_id: handId });
    const { rows: [before] } = await db.owner.query('select epoch, holder from game.table_leases where table_id = $1', [tableId]);
    expect(before.holder).not.toBeNull();
    expect((await m.hand({ action: 'finish', tableId, handId, stacks: { [a!.positionId]: 120, [b!.positionId]: 80 } })).status).toBe(200);

    const r = await escape(m, operator, tableId);
    expect(r.body).toMatchObject({ outcome: 'clean', toCustody: 200, fence: { epoch: Number(before.epoch) + 1, abandonedHand: null } });
    const { rows: [after] } = await db.owner.query('select epoch, holder from game.table_leases where table_id = $1', [tableId]);
    expect(after).toEqual({ epoch: before.epoch + 1n, holder: null });
    // whatever the process that ran the table still sends under its old epoch is refused (the
    // harness's boundaries, as the owner: no service login executes them)
    await expect(db.owner.query('select game.begin_hand($1, $2, $3)', [tableId, `h-${randomUUID()}`, String(before.epoch)])).rejects.toMatchObject({ code: 'GMLSE', message: 'lease_lost' });
    await expect(db.owner.query("select * from game.finish_hand($1, $2, '{}', 0, $3)", [tableId, handId, String(before.epoch)])).rejects.toMatchObject({ code: 'GMLSE', message: 'lease_lost' });
  });

  test('a hand left by a game process that is gone is abandoned (the stacks of its start stand), then the table escapes', async () => {
    const { tableId, players: [a, b] } = await seatedTable(m, [100, 60]);
    // a game process of its own: registered (its presence lock on this connection), the table taken, a hand begun, then gone
    const dealer = new pg.Client({ connectionString: db.url });
    await dealer.connect();
    const { rows: [proc] } = await dealer.query('select process_id from game.register_process(null)');
    const { rows: [lease] } = await dealer.query('select granted, epoch from game.take_lease($1, 3600)', [tableId]);
    expect(lease.granted).toBe(true);
    const handId = `h-${randomUUID()}`;
    await dealer.query('select game.begin_hand($1, $2, $3)', [tableId, handId, lease.epoch]);
    await dealer.end();
    // gone once Postgres has dropped its connection (and the presence lock with it)
    for (let i = 0; i < 200; i++) {
      const { rows: [gone] } = await db.owner.query('select not game_private.process_present($1) as gone', [proc.process_id]);
      if (gone.gone) break;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }

    const r = await escape(m, operator, tableId);
    expect(r.body).toMatchObject({ outcome: 'clean', toCustody: 160, fence: { abandonedHand: handId } });
    expect(r.body.entries.map((e: { userId: string; amount: number }) => [e.userId, e.amount])).toEqual([[a!.userId, 100], [b!.userId, 60]]);
    expect((await db.owner.query('select status from game.hand_histories where hand_id = $1', [handId])).rows[0]).toEqual({ status: 'abandoned' });
  });
});

describe('divergent books', () => {
  test('one hold of the whole escrow, with the per-player ledger; no FREE entry; the table frozen and its escrow zero', async () => {
    const { tableId, players: [a, b] } = await seatedTable(m, [100, 50]);
    await m.deposit(a!.auth, { tableId, seatIndex: 0, amount: 20 }); // a top-up
    await playHand(m, tableId, [[a!, 95], [b!, 73]], 2);
    // a torn hand end: b's stack written again without its link or the escrow (see tearStack)
    await tearStack(db, b!.positionId, 40);
    // b watches the table over the websocket (a does not, so no hand is dealt)
    const { connect } = await import('../helpers/ws-client.ts');
    const ws = await connect(`${m.game.replace(/^http/, 'ws')}/ws`, b!.auth);
    await ws.next((x) => x.type === 'hello');
    ws.send({ type: 'join', tableId, ref: 'j' });
    expect(await ws.next((x) => x.ref === 'j')).toMatchObject({ type: 'joined', tableId });

    const r = await escape(m, operator, tableId);
    expect(r.status).toBe(200);
    // issue 32: b is told the hold that holds their chips until an operator splits it
    expect(await ws.next((x) => x.type === 'table_escaped', 20_000)).toEqual({
      type: 'table_escaped', tableId, escapeId: r.body.escapeId, outcome: 'divergent',
      entry: { id: r.body.hold.entryId, amount: '170', status: 'needs_reconciliation' },
    });
    await ws.close();
    expect(r.body).toMatchObject({ outcome: 'divergent', escrow: 170, liveStacks: 208, unreconciledRake: 2, toCustody: 170, toHouse: 0, entries: [] });
    expect(r.body.hold).toEqual({
      entryId: expect.any(String), status: 'needs_reconciliation', amount: 170, baseUnits: '170000000',
      ledger: [
        {
          userId: a!.userId, positionId: a!.positionId, seatIndex: 0, status: 'seated', boughtIn: 100, toppedUp: 20, reverted: 0, handsNet: -25,
          stack: 95, chainHead: expect.stringMatching(/^[0-9a-f]{64}$/), chainLength: 3, chainStack: 95, chainVerified: true, weight: 95,
        },
        {
          userId: b!.userId, positionId: b!.positionId, seatIndex: 1, status: 'seated', boughtIn: 50, toppedUp: 0, reverted: 0, handsNet: 23,
          stack: 113, chainHead: expect.stringMatching(/^[0-9a-f]{64}$/), chainLength: 2, chainStack: 73, chainVerified: true, weight: 73,
        },
      ],
    });
    expect(await escrowOf(db, tableId)).toBe(0n);
    expect(await tableRow(tableId)).toEqual({ status: 'frozen', current_hand_id: null });
    expect((await positions(tableId)).map((p) => [p.status, p.chips])).toEqual([['closed', 0], ['closed', 0]]);

    // a player sees the hold that names them (not theirs to claim until it is split)
    const mine = await call(`${m.cage}/api/custody`, { headers: b!.auth });
    expect(mine.body).toMatchObject({ entries: [], holds: [{ holdId: r.body.hold.entryId, tableId, pool: 170, stack: 113, chainStack: 73, weight: 73 }] });
    expect(await call(`${m.cage}/api/custody/claim`, { headers: b!.auth, body: { entryId: r.body.hold.entryId } })).toEqual({ status: 404, body: { error: 'custody_entry_not_found' } });
    expect((await escape(m, operator, tableId)).body).toMatchObject({ replay: true, outcome: 'divergent', hold: r.body.hold });
  });
});

describe('the books refuse what no path may do', () => {
  test('a custody entry\'s identity and amount never change; its status moves only forward; an escape is never rewritten', async () => {
    const { tableId } = await seatedTable(m, [70]);
    const r = await escape(m, operator, tableId);
    const id = r.body.entries[0].entryId;
    for (const sql of [
      'update cage.custody_entries set amount = amount * 2 where id = $1',
      "update cage.custody_entries set user_id = gen_random_uuid() where id = $1",
      "update cage.custody_entries set status = 'needs_reconciliation' where id = $1",
      'delete from cage.custody_entries where id = $1',
    ]) {
      await expect(db.owner.query(sql, [id])).rejects.toMatchObject({ code: 'CGIMM' });
    }
    await expect(db.owner.query('update cage.table_escapes set escrow = 0 where table_id = $1', [tableId])).rejects.toMatchObject({ code: 'CGIMM' });
  });
});
