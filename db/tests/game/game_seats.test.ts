// The game side of a table: records, seat funding by key (sit, top-up, replay, cancellation),
// stand-up and settlement, hand boundaries with chip conservation, and the position hash chains.
// Called as the game role (the cage role creates tables). No cage money moves in this file: the
// seats are funded with keys the cage would have opened, so the escrow audit is not asserted here.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { fixtureOperator, setRealMoney, setTableStatus } from '../../../test/helpers/cage.ts';
import { createTestDatabase, playerGrant, type TestDatabase } from '../../../test/helpers/db.ts';
import {
  POKER_SETTINGS, asUnkeptCredit, createTable, creditSeat, handEnding, openDepositsAs, newKey, newTableId, standUp, verifyChain, type TableRow,
} from '../../../test/helpers/game.ts';
import { readCompact } from '../../../server/game/hands/compact.ts';

let db: TestDatabase;
let cage: pg.Pool;
let game: pg.Pool;
beforeAll(async () => {
  db = await createTestDatabase();
  cage = db.pool('poker_cage');
  game = db.pool('poker_game');
  openDepositsAs(db.owner);
  await setRealMoney(db.owner, true);
});
afterAll(async () => {
  await db.drop();
});

const user = () => randomUUID();

async function seatOf(playerId: bigint) {
  const { rows } = await db.owner.query(
    'select id, table_id, user_id, seat_index, chip_balance, status, history_hash, chain_length, closing_ref_id from game.table_players where id = $1',
    [String(playerId)]);
  return rows[0];
}

async function linkCount(playerId: bigint) {
  const { rows } = await db.owner.query('select count(*)::int as n from game_private.position_chain($1, 0, null)', [String(playerId)]);
  return rows[0].n as number;
}

async function tableRow(tableId: string): Promise<TableRow> {
  const { rows } = await db.owner.query('select * from game.tables where table_id = $1', [tableId]);
  return rows[0];
}

/**
 * The cage's settlement of a stood-up position, as cage.settle_position records it (without its
 * money leg: this file does not assert the escrow): game.settle_seat closes a seat only on it.
 */
async function cageSettled(playerId: bigint, ref: string, settlement: 'cash_out' | 'custody' | 'bust') {
  await db.owner.query(
    `insert into cage.withdraw_intents (idempotency_key, ledger_ref_id, user_id, table_id, player_id, amount, history_hash, settlement)
     select '0x' || encode(sha256(convert_to($2, 'UTF8')), 'hex'), $2, p.user_id, p.table_id, p.id, p.chip_balance, p.history_hash, $3
       from game.table_players p where p.id = $1`,
    [String(playerId), ref, settlement],
  );
}

const cancel = async (key: string, tableId: string, userId: string, amount: bigint) =>
  (await game.query('select game.cancel_credit($1, $2, $3, $4) as answer', [key, tableId, userId, String(amount)])).rows[0].answer as string;

/** Hand boundaries under the table's lease, as the test harness sends them (as the owner: no service login executes them). */
const beginHand = async (tableId: string, handId: string | null) =>
  db.owner.query('select * from game.begin_hand($1, $2, $3)', [tableId, handId, await db.leaseEpoch(tableId)]);
const finishHand = async (tableId: string, handId: string | null, stacks: unknown, rake: bigint | number | null) =>
  (await db.owner.query<{ player_id: bigint; user_id: string }>('select * from game.finish_hand($1, $2, $3, $4, $5)', [
    tableId, handId, JSON.stringify(stacks), rake === null ? null : String(rake), await db.leaseEpoch(tableId),
  ])).rows;

describe('create_table', () => {
  test('creates an active cash table with the parsed settings', async () => {
    const id = newTableId();
    const creator = user();
    // the creator is the player of the access JWT's grant the route passes
    const { rows } = await cage.query('select * from game.create_table($1, $2, $3, $4, $5)', [id, 'poker', POKER_SETTINGS, 'real', await playerGrant(db.owner, creator)]);
    expect(rows).toEqual([expect.objectContaining({
      table_id: id, game_type: 'poker', settings: POKER_SETTINGS, money_kind: 'real', status: 'active', mode: 'cash',
      kind: 'open', current_hand_id: null, unreconciled_rake: 0n, created_by: creator,
    })]);
  });

  test('a creator named by a user id or a made-up handle is refused (session_required); nothing stored', async () => {
    const id = newTableId();
    for (const forged of [user(), randomUUID()]) {
      await expect(cage.query('select * from game.create_table($1, $2, $3, $4, $5)', [id, 'poker', POKER_SETTINGS, 'play', forged]))
        .rejects.toMatchObject({ code: 'AUSES' });
    }
    expect(await tableRow(id)).toBeUndefined();
  });

  test('a duplicate table id returns no row and leaves the first record as it was', async () => {
    const first = await createTable(cage);
    const { rows } = await cage.query('select * from game.create_table($1, $2, $3, $4, $5)', [
      first.table_id, 'arena', { minBuyIn: 1, maxBuyIn: 2 }, 'real', null,
    ]);
    expect(rows).toEqual([]);
    expect(await tableRow(first.table_id)).toMatchObject({ game_type: 'poker', settings: POKER_SETTINGS, money_kind: 'play' });
  });

  test.each([
    ['an empty table id', '', 'poker', {}, 'play'],
    ['a table id starting with a dash', '-abc', 'poker', {}, 'play'],
    ['a table id with a space', 'a b', 'poker', {}, 'play'],
    ['a table id of 65 characters', 'a'.repeat(65), 'poker', {}, 'play'],
    ['a null table id', null, 'poker', {}, 'play'],
    ['an unknown game type', 'ok-id', 'chess', {}, 'play'],
    ['settings that are an array', 'ok-id', 'poker', [], 'play'],
    ['no settings', 'ok-id', 'poker', null, 'play'],
    ['an unknown money kind', 'ok-id', 'poker', {}, 'gold'],
  ])('refuses %s with invalid_table', async (_what, id, gameType, settings, moneyKind) => {
    await expect(cage.query('select * from game.create_table($1, $2, $3::jsonb, $4, $5)', [
      id, gameType, settings === null ? null : JSON.stringify(settings), moneyKind, null,
    ])).rejects.toMatchObject({ code: 'GMTBL', message: 'invalid_table' });
    const { rows } = await db.owner.query("select count(*)::int as n from game.tables where table_id = 'ok-id'");
    expect(rows[0].n).toBe(0);
  });

  test('set_table_status freezes and thaws with a live admin session (recorded); anything else is refused', async () => {
    const t = await createTable(cage);
    const sid = await fixtureOperator(db.owner);
    expect((await cage.query('select status from game.set_table_status($1, $2, $3)', [sid, t.table_id, 'frozen'])).rows[0].status).toBe('frozen');
    expect((await cage.query('select status from game.set_table_status($1, $2, $3)', [sid, t.table_id, 'active'])).rows[0].status).toBe('active');
    expect((await db.owner.query('select status from game.table_status_acts where table_id = $1 order by id', [t.table_id])).rows.map((r) => r.status)).toEqual(['frozen', 'active']);
    await expect(cage.query('select game.set_table_status($1, $2, $3)', [sid, t.table_id, 'pending'])).rejects.toMatchObject({ code: 'GMTBL' });
    await expect(cage.query('select game.set_table_status($1, $2, $3)', [sid, 'no-such-table', 'frozen'])).rejects.toMatchObject({ code: 'GMTNF', message: 'table_not_found' });
    // not the game login's; and a made-up session is no operator
    await expect(game.query('select game.set_table_status($1, $2, $3)', [sid, t.table_id, 'frozen'])).rejects.toMatchObject({ code: '42501' });
    await expect(cage.query('select game.set_table_status($1, $2, $3)', [randomUUID(), t.table_id, 'frozen'])).rejects.toMatchObject({ message: 'admin_session_required' });
  });
});

describe('credit_seat', () => {
  let t: TableRow;
  beforeAll(async () => {
    t = await createTable(cage);
  });

  test('a new seat is a new position: chain genesis, one buy_in link, head = history_hash', async () => {
    const u = user();
    const key = newKey();
    const seat = await creditSeat(game, key, t.table_id, u, 0, 100n);
    expect(seat).toMatchObject({ seat_index: 0, chip_balance: 100n, status: 'credited' });
    const chain = await verifyChain(db.owner, seat.player_id);
    expect(chain.ok).toBe(true);
    expect(chain.links).toEqual([
      expect.objectContaining({ seq: 1, event: 'buy_in', delta: 100n, stack: 100n, ref_id: key, prev_hash: chain.genesis }),
    ]);
    expect(seat.history_hash).toBe(chain.links[0]!.hash);
    expect(await seatOf(seat.player_id)).toMatchObject({ user_id: u, status: 'seated', chip_balance: 100n, chain_length: 1 });
    const { rows } = await db.owner.query('select * from game.seat_credits where credit_key = $1', [key]);
    expect(rows).toEqual([expect.objectContaining({ table_id: t.table_id, user_id: u, player_id: seat.player_id, amount: 100n, status: 'credited' })]);
  });

  test('a tampered link no longer verifies', async () => {
    const seat = await creditSeat(game, newKey(), t.table_id, user(), 1, 50n);
    await creditSeat(game, newKey(), t.table_id, (await seatOf(seat.player_id)).user_id, 1, 10n);
    expect((await verifyChain(db.owner, seat.player_id)).ok).toBe(true);
    // the chain is append-only, even for the owner
    await expect(db.owner.query('update game.position_links set delta = delta + 1 where player_id = $1', [String(seat.player_id)]))
      .rejects.toMatchObject({ code: 'CGIMM' });
    await expect(db.owner.query('delete from game.position_links where player_id = $1', [String(seat.player_id)]))
      .rejects.toMatchObject({ code: 'CGIMM' });
  });

  test('a top-up adds to the stack with a top_up link; a replay by key returns the seat unchanged', async () => {
    const u = user();
    const sitKey = newKey();
    const topKey = newKey();
    const seat = await creditSeat(game, sitKey, t.table_id, u, 2, 60n);
    const topped = await creditSeat(game, topKey, t.table_id, u, 2, 40n);
    expect(topped).toMatchObject({ player_id: seat.player_id, chip_balance: 100n, status: 'credited' });
    const chain = await verifyChain(db.owner, seat.player_id);
    expect(chain.ok).toBe(true);
    expect(chain.links.map((l) => [l.event, l.delta, l.stack, l.ref_id])).toEqual([
      ['buy_in', 60n, 60n, sitKey], ['top_up', 40n, 100n, topKey],
    ]);
    expect(topped.history_hash).toBe(chain.head);

    for (const [key, amount] of [[sitKey, 60n], [topKey, 40n]] as const) {
      const replay = await creditSeat(game, key, t.table_id, u, 2, amount);
      expect(replay).toEqual({ ...topped, status: 'replayed' });
    }
    expect(await linkCount(seat.player_id)).toBe(2);
    expect((await seatOf(seat.player_id)).chip_balance).toBe(100n);
    const { rows } = await db.owner.query('select count(*)::int as n from game.seat_credits where player_id = $1', [String(seat.player_id)]);
    expect(rows[0].n).toBe(2);
    // the same key for other values is not a replay
    await expect(creditSeat(game, topKey, t.table_id, u, 2, 41n)).rejects.toMatchObject({ code: 'GMCRD', message: 'invalid_credit' });
    await expect(creditSeat(game, topKey, t.table_id, user(), 2, 40n)).rejects.toMatchObject({ code: 'GMCRD' });
  });

  describe('refusals change nothing', () => {
    let r: TableRow;
    beforeAll(async () => {
      r = await createTable(cage, { settings: { ...POKER_SETTINGS, maxPlayers: 4, minBuyIn: 40, maxBuyIn: 200 } });
    });

    test('table_not_found', async () => {
      await expect(creditSeat(game, newKey(), 'no-such-table', user(), 0, 50n)).rejects.toMatchObject({ code: 'GMTNF', message: 'table_not_found' });
    });

    test('table_frozen, and the same key credits once the table is thawed', async () => {
      const u = user();
      const key = newKey();
      await setTableStatus(db.owner, r.table_id, 'frozen');
      try {
        await expect(creditSeat(game, key, r.table_id, u, 0, 50n)).rejects.toMatchObject({ code: 'GMFRZ', message: 'table_frozen' });
      } finally {
        await setTableStatus(db.owner, r.table_id, 'active');
      }
      const { rows } = await db.owner.query('select count(*)::int as n from game.seat_credits where credit_key = $1', [key]);
      expect(rows[0].n).toBe(0);
      expect(await creditSeat(game, key, r.table_id, u, 0, 50n)).toMatchObject({ status: 'credited', chip_balance: 50n });
    });

    test('hand_in_progress', async () => {
      const h = await createTable(cage);
      await beginHand(h.table_id, 'h-1');
      await expect(creditSeat(game, newKey(), h.table_id, user(), 0, 50n)).rejects.toMatchObject({ code: 'GMHIP', message: 'hand_in_progress' });
      await finishHand(h.table_id, 'h-1', {}, 0);
      expect(await creditSeat(game, newKey(), h.table_id, user(), 0, 50n)).toMatchObject({ status: 'credited' });
    });

    test('seat_taken, already_seated, invalid_seat_index', async () => {
      const u = user();
      await creditSeat(game, newKey(), r.table_id, u, 1, 50n);
      await expect(creditSeat(game, newKey(), r.table_id, user(), 1, 50n)).rejects.toMatchObject({ code: 'GMSTK', message: 'seat_taken' });
      await expect(creditSeat(game, newKey(), r.table_id, u, 2, 50n)).rejects.toMatchObject({ code: 'GMASE', message: 'already_seated' });
      // maxPlayers is 4: seats 0..3
      await expect(creditSeat(game, newKey(), r.table_id, user(), 4, 50n)).rejects.toMatchObject({ code: 'GMSEA', message: 'invalid_seat_index' });
      await expect(creditSeat(game, newKey(), r.table_id, user(), -1, 50n)).rejects.toMatchObject({ code: 'GMSEA' });
      expect(await creditSeat(game, newKey(), r.table_id, user(), 3, 50n)).toMatchObject({ status: 'credited', seat_index: 3 });
    });

    test('maxPlayers defaults to 9 seats when the settings do not say', async () => {
      const d = await createTable(cage, { settings: { minBuyIn: 1, maxBuyIn: 100 } });
      expect(await creditSeat(game, newKey(), d.table_id, user(), 8, 50n)).toMatchObject({ seat_index: 8 });
      await expect(creditSeat(game, newKey(), d.table_id, user(), 9, 50n)).rejects.toMatchObject({ code: 'GMSEA' });
    });

    test('buy_in_out_of_range: a sit below minBuyIn or above maxBuyIn, a top-up past maxBuyIn', async () => {
      const b = await createTable(cage, { settings: { ...POKER_SETTINGS, minBuyIn: 40, maxBuyIn: 200 } });
      const u = user();
      await expect(creditSeat(game, newKey(), b.table_id, u, 0, 39n)).rejects.toMatchObject({ code: 'GMBUY', message: 'buy_in_out_of_range' });
      await expect(creditSeat(game, newKey(), b.table_id, u, 0, 201n)).rejects.toMatchObject({ code: 'GMBUY' });
      const seat = await creditSeat(game, newKey(), b.table_id, u, 0, 40n);
      // a top-up may be below minBuyIn, but may not take the stack above maxBuyIn
      expect(await creditSeat(game, newKey(), b.table_id, u, 0, 10n)).toMatchObject({ chip_balance: 50n });
      await expect(creditSeat(game, newKey(), b.table_id, u, 0, 151n)).rejects.toMatchObject({ code: 'GMBUY' });
      expect(await creditSeat(game, newKey(), b.table_id, u, 0, 150n)).toMatchObject({ chip_balance: 200n });
      expect(await linkCount(seat.player_id)).toBe(3);
    });

    test.each([
      ['an empty key', '', 50n],
      ['a key of 201 characters', 'k'.repeat(201), 50n],
      ['a zero amount', 'zero-amount', 0n],
      ['a negative amount', 'neg-amount', -5n],
    ])('invalid_credit: %s', async (_what, key, amount) => {
      await expect(creditSeat(game, key, r.table_id, user(), 0, amount)).rejects.toMatchObject({ code: 'GMCRD', message: 'invalid_credit' });
    });

    test('credit_cancelled: a key cancelled before it arrived is refused when it arrives', async () => {
      const u = user();
      const key = newKey();
      expect(await cancel(key, r.table_id, u, 50n)).toBe('cancelled');
      await expect(creditSeat(game, key, r.table_id, u, 0, 50n)).rejects.toMatchObject({ code: 'GMCCN', message: 'credit_cancelled' });
      const { rows } = await db.owner.query('select count(*)::int as n from game.table_players where user_id = $1', [u]);
      expect(rows[0].n).toBe(0);
    });

    test('seat_leaving: a seat standing up is not funded', async () => {
      const l = await createTable(cage);
      const u = user();
      await creditSeat(game, newKey(), l.table_id, u, 0, 50n);
      await standUp(game, l.table_id, u);
      await expect(creditSeat(game, newKey(), l.table_id, u, 0, 50n)).rejects.toMatchObject({ code: 'GMLEV', message: 'seat_leaving' });
    });
  });
});

describe('cancel_credit', () => {
  let t: TableRow;
  beforeAll(async () => {
    t = await createTable(cage);
  });

  test("'cancelled' when the key never arrived: a tombstone, answered the same again", async () => {
    const u = user();
    const key = newKey();
    expect(await cancel(key, t.table_id, u, 70n)).toBe('cancelled');
    expect(await cancel(key, t.table_id, u, 70n)).toBe('cancelled');
    const { rows } = await db.owner.query('select status, player_id from game.seat_credits where credit_key = $1', [key]);
    expect(rows).toEqual([{ status: 'cancelled', player_id: null }]);
    await expect(creditSeat(game, key, t.table_id, u, 0, 70n)).rejects.toMatchObject({ code: 'GMCCN' });
    // the tombstone is for those values only
    await expect(cancel(key, t.table_id, u, 71n)).rejects.toMatchObject({ code: 'GMCRD' });
  });

  test("'reverted' when nothing happened since: the seat it opened is closed and free again", async () => {
    const u = user();
    const key = newKey();
    const seat = await creditSeat(game, key, t.table_id, u, 3, 80n);
    // a credit is kept with its deposit's confirmation at once: only an older release's can go back
    expect(await cancel(key, t.table_id, u, 80n)).toBe('credited');
    await asUnkeptCredit(db.owner, key);
    expect(await cancel(key, t.table_id, u, 80n)).toBe('reverted');
    expect(await seatOf(seat.player_id)).toMatchObject({ status: 'closed', chip_balance: 0n, closing_ref_id: key });
    const chain = await verifyChain(db.owner, seat.player_id);
    expect(chain.ok).toBe(true);
    expect(chain.links.map((l) => [l.event, l.delta, l.stack])).toEqual([['buy_in', 80n, 80n], ['reverted', -80n, 0n]]);
    // asking again answers the same and changes nothing; the key cannot come back
    expect(await cancel(key, t.table_id, u, 80n)).toBe('reverted');
    expect(await linkCount(seat.player_id)).toBe(2);
    await expect(creditSeat(game, key, t.table_id, u, 3, 80n)).rejects.toMatchObject({ code: 'GMCCN' });
    // the seat is free: anyone (the same user included) may sit there with a new key
    const again = await creditSeat(game, newKey(), t.table_id, u, 3, 60n);
    expect(again.player_id).not.toBe(seat.player_id);
  });

  test("'reverted' for a top-up takes it back off a seat that stays seated", async () => {
    const u = user();
    const seat = await creditSeat(game, newKey(), t.table_id, u, 4, 100n);
    const top = newKey();
    await creditSeat(game, top, t.table_id, u, 4, 50n);
    await asUnkeptCredit(db.owner, top);
    expect(await cancel(top, t.table_id, u, 50n)).toBe('reverted');
    expect(await seatOf(seat.player_id)).toMatchObject({ status: 'seated', chip_balance: 100n });
    const chain = await verifyChain(db.owner, seat.player_id);
    expect(chain.ok).toBe(true);
    expect(chain.links.map((l) => [l.event, l.delta, l.stack])).toEqual([['buy_in', 100n, 100n], ['top_up', 50n, 150n], ['reverted', -50n, 100n]]);
    expect(await cancel(top, t.table_id, u, 50n)).toBe('reverted');
    expect((await seatOf(seat.player_id)).chip_balance).toBe(100n);
  });

  test("'credited' when a hand changed the stack since; asked again, the same", async () => {
    const h = await createTable(cage);
    const a = user();
    const b = user();
    const keyA = newKey();
    const seatA = await creditSeat(game, keyA, h.table_id, a, 0, 100n);
    const seatB = await creditSeat(game, newKey(), h.table_id, b, 1, 100n);
    await beginHand(h.table_id, 'hand-x');
    await finishHand(h.table_id, 'hand-x', { [String(seatA.player_id)]: 120, [String(seatB.player_id)]: 80 }, 0);
    expect(await cancel(keyA, h.table_id, a, 100n)).toBe('credited');
    expect(await cancel(keyA, h.table_id, a, 100n)).toBe('credited');
    expect((await seatOf(seatA.player_id)).chip_balance).toBe(120n);
  });

  test("'credited' when a later top-up or a stand-up happened since", async () => {
    const u = user();
    const first = newKey();
    const seat = await creditSeat(game, first, t.table_id, u, 5, 100n);
    const second = newKey();
    await creditSeat(game, second, t.table_id, u, 5, 20n);
    await asUnkeptCredit(db.owner, first);
    await asUnkeptCredit(db.owner, second);
    expect(await cancel(first, t.table_id, u, 100n)).toBe('credited');
    // the later top-up can still be taken back; the first credit still stands afterwards
    expect(await cancel(second, t.table_id, u, 20n)).toBe('reverted');
    expect(await cancel(first, t.table_id, u, 100n)).toBe('credited');
    expect(await seatOf(seat.player_id)).toMatchObject({ status: 'seated', chip_balance: 100n });

    const v = user();
    const key = newKey();
    await creditSeat(game, key, t.table_id, v, 0, 100n);
    await asUnkeptCredit(db.owner, key);
    await standUp(game, t.table_id, v);
    expect(await cancel(key, t.table_id, v, 100n)).toBe('credited');
  });

  test("a credit answered 'credited' during a hand stays credited after it, even if the hand left the stack alone", async () => {
    const h = await createTable(cage);
    const a = user();
    const b = user();
    const c = user();
    const keyA = newKey();
    const seatA = await creditSeat(game, keyA, h.table_id, a, 0, 100n);
    const seatB = await creditSeat(game, newKey(), h.table_id, b, 1, 100n);
    const seatC = await creditSeat(game, newKey(), h.table_id, c, 2, 100n);
    await beginHand(h.table_id, 'hand-y');
    // mid-hand the credit cannot be taken back: the cage is told it stands and confirms the deposit
    expect(await cancel(keyA, h.table_id, a, 100n)).toBe('credited');
    // A folded without putting a chip in: the hand writes no link for A
    await finishHand(h.table_id, 'hand-y', { [String(seatA.player_id)]: 100, [String(seatB.player_id)]: 110, [String(seatC.player_id)]: 90 }, 0);
    expect(await linkCount(seatA.player_id)).toBe(1);
    // asking again must answer the same: the cage already confirmed, a revert now would strand the chips
    expect(await cancel(keyA, h.table_id, a, 100n)).toBe('credited');
    expect(await seatOf(seatA.player_id)).toMatchObject({ status: 'seated', chip_balance: 100n });
  });
});

describe('stand_up and settle_seat', () => {
  let t: TableRow;
  beforeAll(async () => {
    t = await createTable(cage);
  });

  test('stand-up freezes the position for settlement; standing up again returns the same', async () => {
    const u = user();
    const seat = await creditSeat(game, newKey(), t.table_id, u, 0, 90n);
    const up = await standUp(game, t.table_id, u);
    expect(up).toEqual({ player_id: seat.player_id, seat_index: 0, chip_balance: 90n, history_hash: seat.history_hash, money_kind: 'play' });
    expect((await seatOf(seat.player_id)).status).toBe('leaving');
    expect(await standUp(game, t.table_id, u)).toEqual(up);
    expect(await linkCount(seat.player_id)).toBe(1);
  });

  test('not_at_table, table_not_found, hand_in_progress', async () => {
    await expect(standUp(game, t.table_id, user())).rejects.toMatchObject({ code: 'GMNAT', message: 'not_at_table' });
    await expect(standUp(game, 'no-such-table', user())).rejects.toMatchObject({ code: 'GMTNF' });
    const h = await createTable(cage);
    const u = user();
    await creditSeat(game, newKey(), h.table_id, u, 0, 90n);
    await beginHand(h.table_id, 'h');
    await expect(standUp(game, h.table_id, u)).rejects.toMatchObject({ code: 'GMHIP', message: 'hand_in_progress' });
    await finishHand(h.table_id, 'h', {}, 0);
    expect(await standUp(game, h.table_id, u)).toMatchObject({ chip_balance: 90n });
  });

  test('settle_seat zeroes and closes the position with its last link; again with the same ref is a no-op', async () => {
    const u = user();
    const seat = await creditSeat(game, newKey(), t.table_id, u, 1, 75n);
    // not stood up yet
    await expect(game.query('select * from game.settle_seat($1, $2, $3)', [String(seat.player_id), 'withdraw:x', 'cash_out']))
      .rejects.toMatchObject({ code: 'GMSNL', message: 'seat_not_leaving' });
    await standUp(game, t.table_id, u);
    const ref = `withdraw:${newKey()}`;
    await expect(game.query('select * from game.settle_seat($1, $2, $3)', [String(seat.player_id), ref, 'cash_out']))
      .rejects.toMatchObject({ code: 'GMSTN', message: 'settlement_not_found' });
    await cageSettled(seat.player_id, ref, 'cash_out');
    const { rows: [settled] } = await game.query('select * from game.settle_seat($1, $2, $3)', [String(seat.player_id), ref, 'cash_out']);
    const chain = await verifyChain(db.owner, seat.player_id);
    expect(chain.ok).toBe(true);
    expect(chain.links.at(-1)).toMatchObject({ event: 'cash_out', delta: -75n, stack: 0n, ref_id: ref });
    expect(settled).toEqual({ player_id: seat.player_id, history_hash: chain.head, status: 'closed' });
    expect(await seatOf(seat.player_id)).toMatchObject({ status: 'closed', chip_balance: 0n, closing_ref_id: ref });

    const { rows: [again] } = await game.query('select * from game.settle_seat($1, $2, $3)', [String(seat.player_id), ref, 'cash_out']);
    expect(again).toEqual({ player_id: seat.player_id, history_hash: chain.head, status: 'settled' });
    expect(await linkCount(seat.player_id)).toBe(2);
    await expect(game.query('select * from game.settle_seat($1, $2, $3)', [String(seat.player_id), 'withdraw:other', 'cash_out']))
      .rejects.toMatchObject({ code: 'GMNAT' });

    // the seat is free again: a new sitting is a new position with a new chain
    const next = await creditSeat(game, newKey(), t.table_id, u, 1, 60n);
    expect(next.player_id).not.toBe(seat.player_id);
    const nextChain = await verifyChain(db.owner, next.player_id);
    expect(nextChain.ok).toBe(true);
    expect(nextChain.genesis).not.toBe(chain.genesis);
  });

  test('a custody settlement writes a custody last link; a stack cannot be closed as a bust', async () => {
    const u = user();
    const seat = await creditSeat(game, newKey(), t.table_id, u, 3, 50n);
    await standUp(game, t.table_id, u);
    // the cage never records a bust of a stack (a bust settles zero): no such settlement to close on
    const bust = `bust:${newKey()}`;
    await expect(game.query('select * from game.settle_seat($1, $2, $3)', [String(seat.player_id), bust, 'bust']))
      .rejects.toMatchObject({ code: 'GMSTN', message: 'settlement_not_found' });
    const ref = `custody:${newKey()}`;
    await cageSettled(seat.player_id, ref, 'custody');
    await game.query('select * from game.settle_seat($1, $2, $3)', [String(seat.player_id), ref, 'custody']);
    const chain = await verifyChain(db.owner, seat.player_id);
    expect(chain.ok).toBe(true);
    expect(chain.links.at(-1)).toMatchObject({ event: 'custody', delta: -50n, stack: 0n, ref_id: ref });
  });

  test('settle_seat refuses an unknown position and a bad settlement', async () => {
    await expect(game.query('select * from game.settle_seat($1, $2, $3)', ['999999999', 'withdraw:x', 'cash_out']))
      .rejects.toMatchObject({ code: 'GMNAT' });
    await expect(game.query('select * from game.settle_seat($1, $2, $3)', ['1', 'withdraw:x', 'refund']))
      .rejects.toMatchObject({ code: 'GMCRD' });
    await expect(game.query('select * from game.settle_seat($1, $2, $3)', ['1', null, 'cash_out']))
      .rejects.toMatchObject({ code: 'GMCRD' });
  });
});

describe('hands', () => {
  let t: TableRow;
  let a: bigint;
  let b: bigint;
  let c: bigint;
  let userA: string;
  beforeAll(async () => {
    t = await createTable(cage);
    userA = user();
    a = (await creditSeat(game, newKey(), t.table_id, userA, 0, 100n)).player_id;
    b = (await creditSeat(game, newKey(), t.table_id, user(), 1, 100n)).player_id;
    c = (await creditSeat(game, newKey(), t.table_id, user(), 2, 100n)).player_id;
  });

  test('begin_hand marks the table; a second begin and a wrong or missing hand id are refused', async () => {
    const { rows } = await beginHand(t.table_id, 'hand-1');
    expect(rows[0]).toMatchObject({ current_hand_id: 'hand-1' });
    await expect(beginHand(t.table_id, 'hand-2')).rejects.toMatchObject({ code: 'GMHIP' });
    await expect(finishHand(t.table_id, 'hand-2', {}, 0)).rejects.toMatchObject({ code: 'GMNHP', message: 'no_hand_in_progress' });
    await expect(finishHand(t.table_id, null, {}, 0)).rejects.toMatchObject({ code: 'GMNHP' });
    expect((await tableRow(t.table_id)).current_hand_id).toBe('hand-1');
  });

  test.each([
    ['chips not conserved', (ids: bigint[]) => ({ [String(ids[0])]: 110, [String(ids[1])]: 100 }), 0],
    ['rake not taken from the stacks', (ids: bigint[]) => ({ [String(ids[0])]: 100, [String(ids[1])]: 100 }), 5],
    ['a negative stack', (ids: bigint[]) => ({ [String(ids[0])]: -1, [String(ids[1])]: 201 }), 0],
    ['a fractional stack', (ids: bigint[]) => ({ [String(ids[0])]: 99.5, [String(ids[1])]: 100.5 }), 0],
    ['a stack that is a string', (ids: bigint[]) => ({ [String(ids[0])]: '100', [String(ids[1])]: 100 }), 0],
    ['a stack too large for a chip count', (ids: bigint[]) => ({ [String(ids[0])]: 1e30, [String(ids[1])]: 100 }), 0],
    ['a negative rake', (ids: bigint[]) => ({ [String(ids[0])]: 105, [String(ids[1])]: 100 }), -5],
    ['an unknown position', () => ({ '999999999': 0 }), 0],
    ['a position key that is not a number', () => ({ abc: 0 }), 0],
    ['stacks that are not an object', () => [100, 100], 0],
  ])('finish_hand refuses %s with invalid_hand and changes nothing', async (_what, stacks, rake) => {
    await expect(finishHand(t.table_id, 'hand-1', stacks([a, b]), rake)).rejects.toMatchObject({ code: 'GMHND', message: 'invalid_hand' });
    expect((await tableRow(t.table_id)).current_hand_id).toBe('hand-1');
    expect(await linkCount(a)).toBe(1);
  });

  test('finish_hand refuses a position of another table, and one that stood up', async () => {
    const other = await createTable(cage);
    const stranger = (await creditSeat(game, newKey(), other.table_id, user(), 0, 100n)).player_id;
    await expect(finishHand(t.table_id, 'hand-1', { [String(stranger)]: 100 }, 0)).rejects.toMatchObject({ code: 'GMHND' });
    const u = user();
    const leaver = (await creditSeat(game, newKey(), other.table_id, u, 1, 100n)).player_id;
    await standUp(game, other.table_id, u);
    await beginHand(other.table_id, 'o-1');
    await expect(finishHand(other.table_id, 'o-1', { [String(leaver)]: 100 }, 0)).rejects.toMatchObject({ code: 'GMHND' });
    await finishHand(other.table_id, 'o-1', {}, 0);
  });

  test('finish_hand writes every changed stack with one hand link, keeps the rake, closes and returns the busted', async () => {
    const busted = await finishHand(t.table_id, 'hand-1', { [String(a)]: 0, [String(b)]: 194, [String(c)]: 100 }, 6);
    expect(busted).toEqual([{ player_id: a, user_id: userA }]);
    const row = await tableRow(t.table_id);
    expect(row).toMatchObject({ current_hand_id: null, unreconciled_rake: 6n });
    // the busted position closed in the hand's end (issue 32): its chain's last link is the bust
    expect(await seatOf(a)).toMatchObject({ chip_balance: 0n, status: 'closed' });
    expect((await seatOf(b)).chip_balance).toBe(194n);
    expect((await verifyChain(db.owner, a)).links.map((l) => [l.event, l.delta])).toEqual([['buy_in', 100n], ['hand', -100n], ['bust', 0n]]);
    for (const [id, links, last] of [[a, 3, 0n], [b, 2, 94n], [c, 1, 100n]] as const) {
      const chain = await verifyChain(db.owner, id);
      expect(chain.ok).toBe(true);
      expect(chain.links).toHaveLength(links);
      expect(chain.links.at(-1)!.delta).toBe(last);
    }
    expect((await verifyChain(db.owner, b)).links.at(-1)).toMatchObject({ event: 'hand', ref_id: 'hand-1', stack: 194n });

    // the next hand adds to the rake; the busted seat, closed, is not busted again
    await beginHand(t.table_id, 'hand-2');
    const again = await finishHand(t.table_id, 'hand-2', { [String(b)]: 190, [String(c)]: 100 }, 4);
    expect(again).toEqual([]);
    expect((await tableRow(t.table_id)).unreconciled_rake).toBe(10n);
    // a finished hand cannot be finished again
    await expect(finishHand(t.table_id, 'hand-2', {}, 0)).rejects.toMatchObject({ code: 'GMNHP' });
  });

  test('begin_hand refuses an unknown table and a bad hand id', async () => {
    await expect(beginHand('no-such-table', 'h')).rejects.toMatchObject({ code: 'GMTNF' });
    await expect(beginHand(t.table_id, '')).rejects.toMatchObject({ code: 'GMHND' });
    await expect(beginHand(t.table_id, 'h'.repeat(129))).rejects.toMatchObject({ code: 'GMHND' });
  });
});

describe('grants', () => {
  test('the cage role cannot call the game functions (it only creates tables)', async () => {
    for (const [sql, params] of [
      ['select * from game.credit_seat($1, $2, $3, $4, $5)', ['k', 't', randomUUID(), 0, 1]],
      ['select game.cancel_credit($1, $2, $3, $4)', ['k', 't', randomUUID(), 1]],
      ['select * from game.stand_up($1, $2)', ['t', randomUUID()]],
      ['select * from game.settle_seat($1, $2, $3)', [1, 'r', 'bust']],
      ['select * from game.begin_hand($1, $2)', ['t', 'h']],
      ['select * from game.finish_hand($1, $2, $3, $4)', ['t', 'h', {}, 0]],
    ] as const) {
      await expect(cage.query(sql, [...params])).rejects.toMatchObject({ code: '42501' });
    }
  });

  test('the game role cannot call the cage functions nor create tables', async () => {
    for (const [sql, params] of [
      ['select * from cage.open_deposit($1, $2, $3, $4, $5)', [randomUUID(), 'k', 't', 0, 1]],
      ['select * from cage.confirm_deposit($1)', ['r']],
      ['select * from cage.fail_deposit($1, $2)', ['r', 'e']],
      ['select * from cage.settle_position($1, $2, $3, $4, $5, $6, $7, $8)', [randomUUID(), 't', 1, 0, 'a'.repeat(64), '0x' + 'a'.repeat(64), 'bust', false]],
      ['select * from cage.mark_withdrawal_settled($1)', ['k']],
      ['select * from cage.grant_play_chips($1, $2, $3)', ['r', 1, 'c']],
      ['select * from cage.exchange_chips($1, $2, $3, $4, $5)', ['purchase', randomUUID(), 1, 'x', 'play']],
      ['select * from cage.claim_custody($1, $2)', [randomUUID(), 1]],
      ['select * from cage.post_movement($1, $2, $3, $4, $5)', ['x', 'grant', 'play', [1, 2], [-1, 1]]],
      ['select * from game.create_table($1, $2, $3, $4, $5)', ['t', 'poker', {}, 'play', null]],
    ] as const) {
      await expect(game.query(sql, [...params])).rejects.toMatchObject({ code: '42501' });
    }
  });

  test.each(['poker_cage', 'poker_game', 'poker_auth', 'poker_worker', 'poker_admin', 'poker_anonymous'] as const)(
    'role %s cannot write the game tables directly',
    async (role) => {
      const pool = db.pool(role, 1);
      for (const sql of [
        "insert into game.tables (table_id, game_type, settings) values ('direct', 'poker', '{}')",
        "update game.tables set status = 'frozen'",
        'update game.tables set unreconciled_rake = 0',
        `insert into game.table_players (table_id, user_id, seat_index, chip_balance, history_hash) values ('direct', '${randomUUID()}', 0, 1, 'x')`,
        'update game.table_players set chip_balance = chip_balance + 1',
        'delete from game.table_players',
        "insert into game.position_links (player_id, seq, event, delta, stack, prev_hash, hash) values (1, 99, 'hand', 0, 0, 'x', 'y')",
        "insert into game.seat_credits (credit_key, table_id, user_id, amount, status) values ('k', 't', gen_random_uuid(), 1, 'credited')",
        "update game.seat_credits set status = 'cancelled'",
        'delete from game.seat_credits',
      ]) {
        await expect(pool.query(sql)).rejects.toMatchObject({ code: '42501' });
      }
    },
  );

  test('no service role reaches the private half of the game schema', async () => {
    for (const role of ['poker_cage', 'poker_game'] as const) {
      await expect(db.pool(role, 1).query("select game_private.chain_genesis('t', gen_random_uuid(), 1)"))
        .rejects.toMatchObject({ code: '42501' });
    }
  });
});

describe('end_hand (the one hand end the dealer calls)', () => {
  // a history and result as the game process compresses them (issue 33), and the started event beside them
  const ENDING = handEnding(JSON.stringify([{ type: 'hand_started' }]), JSON.stringify({ type: 'hand_result' }));
  let t: TableRow;
  let a: bigint;
  let b: bigint;
  let userA: string;
  let userB: string;
  beforeAll(async () => {
    t = await createTable(cage);
    [userA, userB] = [user(), user()];
    a = (await creditSeat(game, newKey(), t.table_id, userA, 0, 100n)).player_id;
    b = (await creditSeat(game, newKey(), t.table_id, userB, 1, 100n)).player_id;
  });
  const endHand = async (handId: string, stacks: Record<string, number>, rake: number) => (await game.query(
    'select game.end_hand($1, $2, $3, $4::jsonb, $5, 0, $6, $7::jsonb, $8::uuid[], now(), $9, null, null, null, null) as answer',
    [t.table_id, handId, 1, JSON.stringify(stacks), rake, ENDING.compact, ENDING.started, [], await db.leaseEpoch(t.table_id)],
  )).rows[0].answer;
  const written = async (handId: string) => (await db.owner.query(
    // a hand end's links: carried by its row (issue 33), with any row of game.position_links naming it
    `select (select count(*)::int from game.position_links where ref_id = $1)
            + coalesce((select cardinality(h.link_players) from game.hand_histories h where h.hand_id = $1), 0) as links,
            (select count(*)::int from game.rake_rows where hand_id = $1) as rakes,
            (select count(*)::int from game.hand_histories where hand_id = $1) as histories`, [handId])).rows[0];

  test('writes the stacks, the rake and the history in one call, and answers the busts', async () => {
    await beginHand(t.table_id, 'end-1');
    const answer = await endHand('end-1', { [String(a)]: 0, [String(b)]: 195 }, 5);
    expect(answer).toEqual({ replayed: false, state: null, busted: [{ playerId: String(a), userId: userA, seat: 0, place: null, tiePlace: null }] });
    expect(await written('end-1')).toEqual({ links: 2, rakes: 1, histories: 1 });
    const { rows: [h] } = await db.owner.query('select status, players, busted, history, result, compact from game.hand_histories where hand_id = $1', ['end-1']);
    expect({ ...h, compact: readCompact(h.compact) }).toEqual({
      status: 'finished', players: [userA, userB].sort(), busted: [String(a)], history: null, result: null,
      compact: { history: [{ type: 'hand_started' }], result: { type: 'hand_result' } },
    });
    for (const id of [a, b]) expect((await verifyChain(db.owner, id)).ok).toBe(true);
    expect((await tableRow(t.table_id)).current_hand_id).toBeNull();
  });

  test('the same end sent again (its first answer lost) answers what was committed, and writes nothing twice', async () => {
    const again = await endHand('end-1', { [String(a)]: 50, [String(b)]: 145 }, 5);
    expect(again).toEqual({ replayed: true, state: null, busted: [{ playerId: String(a), userId: userA, seat: 0, place: null, tiePlace: null }] });
    expect(await written('end-1')).toEqual({ links: 2, rakes: 1, histories: 1 });
    expect((await seatOf(b)).chip_balance).toBe(195n);
  });

  test('a cash hand that busts nobody answers no bust (first and replayed) and records who played it', async () => {
    const other = await createTable(cage);
    const [userC, userD] = [user(), user()];
    const c = (await creditSeat(game, newKey(), other.table_id, userC, 0, 100n)).player_id;
    const d = (await creditSeat(game, newKey(), other.table_id, userD, 1, 100n)).player_id;
    const epoch = await db.leaseEpoch(other.table_id);
    await beginHand(other.table_id, 'end-quiet');
    const end = async () => (await game.query(
      'select game.end_hand($1, $2, 1, $3::jsonb, 2, 0, $4, $7::jsonb, $5::uuid[], now(), $6, null, null, null, null) as answer',
      [other.table_id, 'end-quiet', JSON.stringify({ [String(c)]: 90, [String(d)]: 108 }), ENDING.compact, [], epoch, ENDING.started],
    )).rows[0].answer;
    expect(await end()).toEqual({ replayed: false, state: null, busted: [] });
    expect(await end()).toEqual({ replayed: true, state: null, busted: [] });
    const { rows: [h] } = await db.owner.query('select players, busted from game.hand_histories where hand_id = $1', ['end-quiet']);
    expect(h).toEqual({ players: [userC, userD].sort(), busted: [] });
    expect([(await seatOf(c)).chip_balance, (await seatOf(d)).chip_balance]).toEqual([90n, 108n]);
    for (const id of [c, d]) expect((await verifyChain(db.owner, id)).ok).toBe(true);
  });

  test('a deal alone commits without waiting for the WAL flush; a deal after other writes, and a hand end, wait', async () => {
    const other = await createTable(cage);
    await creditSeat(game, newKey(), other.table_id, user(), 0, 100n);
    const epoch = await db.leaseEpoch(other.table_id);
    const client = await game.connect();
    // the test cluster runs with synchronous_commit off (test/global-setup.ts); production's is on
    await client.query('set synchronous_commit = on');
    const commitMode = async (first: string | null, sql: string, params: unknown[]) => {
      await client.query('begin');
      try {
        if (first) await client.query(first);
        await client.query(sql, params);
        return (await client.query<{ mode: string }>("select current_setting('synchronous_commit') as mode")).rows[0]!.mode;
      } finally {
        await client.query('rollback');
      }
    };
    // the deal carries its committed deal (the one the table holds) and the next hand's, sealed
    const sealed = (handNumber: number, handId: string, c: string) => ({ algorithm: 'sha256-fisher-yates-v2', handNumber, handId, commitment: c.repeat(64), sealed: 'ab'.repeat(60) });
    await game.query('select game.commit_deal($1, $2, $3::jsonb)', [other.table_id, epoch, JSON.stringify(sealed(1, 'deal-async', 'c'))]);
    const deals = [JSON.stringify({ ...sealed(1, 'deal-async', 'c'), contributions: [] }), JSON.stringify(sealed(2, 'deal-next', 'd'))];
    try {
      expect(await commitMode(null, 'select * from game.deal_hand($1, $2, $3, $4, $5)', [other.table_id, 'deal-async', epoch, ...deals])).toBe('off');
      // a transaction given its id has written (or is about to): as good as a write before the deal
      expect(await commitMode('select pg_current_xact_id()', 'select * from game.deal_hand($1, $2, $3, $4, $5)', [other.table_id, 'deal-async', epoch, ...deals])).toBe('on');
      await beginHand(other.table_id, 'end-sync');
      expect(await commitMode(null, 'select game.end_hand($1, $2, 1, $3::jsonb, 0, 0, $4, $7::jsonb, $5::uuid[], now(), $6, null, null, null, null)',
        [other.table_id, 'end-sync', '{}', ENDING.compact, [], epoch, ENDING.started])).toBe('on');
    } finally {
      await client.query('reset synchronous_commit');
      client.release();
    }
  });

  test('a hand abandoned meanwhile is refused hand_abandoned; one never dealt no_hand_in_progress; nothing changes', async () => {
    await beginHand(t.table_id, 'end-2');
    await game.query('select game.abandon_hand($1, $2)', [t.table_id, await db.leaseEpoch(t.table_id)]);
    await expect(endHand('end-2', { [String(b)]: 195 }, 0)).rejects.toMatchObject({ code: 'GMHAB', message: 'hand_abandoned' });
    await expect(endHand('never-dealt', { [String(b)]: 195 }, 0)).rejects.toMatchObject({ code: 'GMNHP' });
    expect(await written('end-2')).toEqual({ links: 0, rakes: 0, histories: 1 });
    expect((await seatOf(b)).chip_balance).toBe(195n);
  });

  test('a replay of another table\'s hand is not answered: the hand id is read back only on its own table', async () => {
    const other = await createTable(cage);
    await creditSeat(game, newKey(), other.table_id, user(), 0, 100n);
    await expect(game.query(
      'select game.end_hand($1, $2, 1, $3::jsonb, 0, 0, $4, $7::jsonb, $5::uuid[], now(), $6, null, null, null, null)',
      [other.table_id, 'end-1', '{}', ENDING.compact, [], await db.leaseEpoch(other.table_id), ENDING.started],
    )).rejects.toMatchObject({ code: 'GMNHP' });
  });
});
