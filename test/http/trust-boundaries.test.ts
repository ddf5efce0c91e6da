// Trust boundaries in SQL (issue 11): what each service's database role may do on its own, tried
// with that role's pool as a compromised service would. Chips move only along the pairs the cage
// and the game agreed on: a seat credit names a live deposit, a seat settlement names the cage's
// terminal entry, the cage posts only through its business functions, claim-once holds in
// credit_claim whatever the game role sends, and a settlement is written with its receipt.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { signerFromPrivateKey, type ReceiptSigner } from '../../server/cage/receipts.ts';
import { TEST_RECEIPT_SEED } from '../helpers/keys.ts';
import { settlePosition } from '../../server/cage/seams.ts';
import { expectCleanAudit, fixtureOperatorSession } from '../helpers/cage.ts';
import { specClaimId, solanaAddress } from '../helpers/claims.ts';
import { createTestDatabase, playerGrant, type TestDatabase } from '../helpers/db.ts';
import { authUser, newKey, newTableId, openDeposit, POKER_SETTINGS, standUp, withdrawKey } from '../helpers/game.ts';

let db: TestDatabase;
let cage: pg.Pool;
let game: pg.Pool;
let admin: string;
let adminId: string;

beforeAll(async () => {
  db = await createTestDatabase();
  cage = db.pool('poker_cage', 4);
  game = db.pool('poker_game', 4);
  ({ adminId, sid: admin } = await fixtureOperatorSession(db.owner));
  await db.owner.query("select claims.set_board_settings($1, 'local', true, null)", [admin]);
});
afterAll(async () => {
  await db?.drop();
});

const code = (promise: Promise<unknown>) => promise.then(() => 'no error', (err: { code?: string; message?: string }) => `${err.code} ${err.message}`);

async function table() {
  const tableId = newTableId('trust');
  await cage.query('select * from game.create_table($1, $2, $3, $4, $5)', [tableId, 'poker', POKER_SETTINGS, 'play', null]);
  return tableId;
}

/** A user with `chips` play chips bought through an operator's recorded purchase. */
async function player(chips: number) {
  const userId = await authUser(db.owner);
  if (chips > 0) {
    await cage.query("select * from cage.exchange_chips('purchase', $1, $2, $3, 'play', $4)", [userId, chips, `pay-${randomUUID()}`, admin]);
  }
  return userId;
}

async function escrow(tableId: string) {
  const { rows } = await db.owner.query<{ balance: bigint }>(
    "select balance from cage.cage_accounts where account_type = 'table_escrow' and scope = $1", [tableId],
  );
  return rows[0]?.balance ?? 0n;
}

/** The cage's deposit seam, as the cage role drives it: buy-in, the game's credit, the confirmation. */
async function sit(userId: string, tableId: string, seat: number, amount: bigint) {
  const deposit = await openDeposit(cage, userId, newKey('sit'), tableId, seat, amount);
  await game.query('select * from game.credit_seat($1, $2, $3, $4, $5)', [deposit.ref_id, tableId, userId, seat, String(amount)]);
  await cage.query('select cage.confirm_deposit($1)', [deposit.ref_id]);
  return deposit;
}

describe('the game role', () => {
  test('cannot credit a seat without a live cage deposit for the same user, table, seat and amount', async () => {
    const tableId = await table();
    const victim = await player(500);
    const thief = await player(0);
    await sit(victim, tableId, 0, 150n);
    expect(await escrow(tableId)).toBe(150n);

    // no deposit at all
    expect(await code(game.query('select * from game.credit_seat($1, $2, $3, 1, 200)', [`made-up-${randomUUID()}`, tableId, thief])))
      .toBe('GMCNB credit_not_backed');
    // another user's pending deposit, and a deposit of this user for other values
    const pending = await openDeposit(cage, victim, newKey('pending'), tableId, 0, 50n);
    expect(await code(game.query('select * from game.credit_seat($1, $2, $3, 1, 50)', [pending.ref_id, tableId, thief]))).toBe('GMCNB credit_not_backed');
    expect(await code(game.query('select * from game.credit_seat($1, $2, $3, 0, 60)', [pending.ref_id, tableId, victim]))).toBe('GMCNB credit_not_backed');
    expect(await code(game.query('select * from game.credit_seat($1, $2, $3, 3, 50)', [pending.ref_id, tableId, victim]))).toBe('GMCNB credit_not_backed');
    // a confirmed deposit's key cannot fund a second seat
    const { rows } = await db.owner.query("select ref_id from cage.deposit_intents where table_id = $1 and status = 'confirmed'", [tableId]);
    expect(await code(game.query('select * from game.credit_seat($1, $2, $3, 1, 150)', [rows[0].ref_id, tableId, thief])))
      .toBe('GMCRD invalid_credit');

    const seats = await db.owner.query("select user_id from game.table_players where table_id = $1 and status <> 'closed'", [tableId]);
    expect(seats.rows.map((r) => r.user_id)).toEqual([victim]);
    // the pending deposit is the victim's own, still payable to their seat
    await game.query('select * from game.credit_seat($1, $2, $3, 0, 50)', [pending.ref_id, tableId, victim]);
    await cage.query('select cage.confirm_deposit($1)', [pending.ref_id]);
    await expectCleanAudit(cage);
  });

  test("cannot close a stood-up seat with any ref but the cage's terminal entry for that position", async () => {
    const tableId = await table();
    const userId = await player(300);
    await sit(userId, tableId, 2, 150n);
    const position = await standUp(game, tableId, userId);
    for (const [ref, settlement] of [['withdraw:0xmadeup', 'cash_out'], ['bust:whatever', 'bust'], ['custody:x', 'custody']]) {
      expect(await code(game.query('select * from game.settle_seat($1, $2, $3)', [String(position.player_id), ref, settlement])))
        .toBe('GMSTN settlement_not_found');
    }
    const { rows: still } = await db.owner.query('select status, chip_balance from game.table_players where id = $1', [position.player_id]);
    expect(still[0]).toEqual({ status: 'leaving', chip_balance: 150n });
    // the cage's settlement closes it, in the transaction that writes the terminal row
    const signer = testSigner();
    const settled = await settlePosition(cage, signer, {
      userId, tableId, playerId: String(position.player_id), chipAmount: 150n, historyHash: position.history_hash,
      idempotencyKey: withdrawKey(userId, tableId, position.history_hash, 150n), settlement: 'cash_out', forced: false,
    });
    const { rows: closed } = await db.owner.query('select status, chip_balance, closing_ref_id from game.table_players where id = $1', [position.player_id]);
    expect(closed[0]).toEqual({ status: 'closed', chip_balance: 0n, closing_ref_id: settled.ledger_ref_id });
    // and no other ref closes it again
    expect(await code(game.query('select * from game.settle_seat($1, $2, $3)', [String(position.player_id), 'withdraw:0xmadeup', 'cash_out'])))
      .toBe('GMNAT not_at_table');
    await expectCleanAudit(cage);
  });
});

describe('the cage role', () => {
  test('may not post, batch, make accounts or rebuild the projection: only the business functions', async () => {
    const userId = await player(0);
    const statements = [
      ["select cage.post_movement('mint', 'adjustment', 'real', array[1, 2]::bigint[], array[-1000000, 1000000]::bigint[], '{}')", []],
      ["select cage.post_movements('[]'::jsonb)", []],
      ['select * from cage.rebuild_projection()', []],
      ["select cage.ensure_account('user', $1, null, 'real')", [userId]],
    ] as const;
    for (const [sql, params] of statements) {
      expect(await code(cage.query(sql, [...params]))).toMatch(/^42501 permission denied for function/);
    }
  });

  test('a manual correction names an operator and a reason, and is listed with them', async () => {
    const userId = await player(0);
    const account = (await db.owner.query("select cage.ensure_account('user', $1, null, 'play') as id", [userId])).rows[0].id;
    const source = (await db.owner.query("select cage.ensure_account('grant_source', null, null, 'play') as id")).rows[0].id;
    const legs = [[String(source), String(account)], ['-70', '70']];
    expect(await code(cage.query('select * from cage.correct_books($1, $2, $3, $4, $5, $6)', [userId, 'fix-1', 'play', ...legs, 'a reason'])))
      .toBe('AUASR admin_session_required');
    expect(await code(cage.query('select * from cage.correct_books($1, $2, $3, $4, $5, $6)', [admin, 'fix-1', 'play', ...legs, ' '])))
      .toBe('CGBRQ bad_request');
    const { rows } = await cage.query('select * from cage.correct_books($1, $2, $3, $4, $5, $6)', [admin, 'fix-1', 'play', ...legs, 'lost purchase #12']);
    expect(rows[0]).toMatchObject({ ref_id: 'correction:fix-1', status: 'created' });
    const listed = await cage.query('select admin_id, reason, ref_id, amounts::text[] from cage.manual_corrections where ref_id = $1', ['correction:fix-1']);
    expect(listed.rows).toEqual([{ admin_id: adminId, reason: 'lost purchase #12', ref_id: 'correction:fix-1', amounts: ['-70', '70'] }]);
    await expectCleanAudit(cage);
  });
});

describe('claim-once in claims.credit_claim', () => {
  async function claimant(lit: boolean) {
    const userId = await player(0);
    const wallet = solanaAddress();
    await db.owner.query("select * from auth.link_wallet($1, $2, 'solana', 0)", [userId, wallet]);
    if (lit) await game.query("select * from claims.mark_condition_met('local', $1, 'wallet_linked', null)", [userId]);
    return { userId, wallet };
  }
  const now = new Date('2026-11-23T12:00:00Z');
  const idsOf = (userId: string, section: string) => ({ once: specClaimId(userId, section, 'once'), '2026-W48': specClaimId(userId, section, '2026-W48') });
  /** The claim as the game login makes it: the player's token grant, the claim ids it names. */
  const credit = async (userId: string, section: string, ids: unknown = idsOf(userId, section)) =>
    game.query('select * from claims.credit_claim($1, $2, $3, $4, $5)', ['local', await playerGrant(db.owner, userId), section, now, JSON.stringify(ids)]);
  const grants = async (userId: string) =>
    (await db.owner.query("select count(*)::int as n from cage.cage_entries where kind = 'grant' and memo ->> 'user_id' = $1", [userId])).rows[0].n;
  const ledger = async (userId: string) => (await db.owner.query('select count(*)::int as n from claims.claim_ledger where user_id = $1', [userId])).rows[0].n;

  test('pays once: a locked unlock nothing, a second claim already_claimed, another claim\'s id refused; the catalog\'s amount', async () => {
    const { userId } = await claimant(false);
    expect((await credit(userId, 'connect_wallet')).rows[0]).toMatchObject({ outcome: 'locked', claim_id: null });
    expect(await grants(userId)).toBe(0);
    await game.query("select * from claims.mark_condition_met('local', $1, 'wallet_linked', null)", [userId]);
    expect((await credit(userId, 'connect_wallet')).rows[0]).toMatchObject({ outcome: 'credited', amount: 500n, claim_id: specClaimId(userId, 'connect_wallet', 'once') });
    expect((await credit(userId, 'connect_wallet')).rows[0]).toMatchObject({ outcome: 'already_claimed' });
    // another user's claim: its claim id is theirs (refused), and paid under their own it is theirs, not this user's
    const other = await claimant(true);
    expect(await code(credit(other.userId, 'connect_wallet', { once: specClaimId(userId, 'connect_wallet', 'once') }))).toBe('CLCLM invalid_claim');
    expect([await ledger(userId), await grants(userId), await ledger(other.userId), await grants(other.userId)]).toEqual([1, 1, 0, 0]);
    await expectCleanAudit(cage);
  });

  test("a claim whose grant an earlier version minted pays what it minted, once (the open intent's amount)", async () => {
    const { userId, wallet } = await claimant(true);
    // an earlier version opened the claim when the catalog said 450, was granted, and lost its answer
    const id = specClaimId(userId, 'connect_wallet', 'once');
    await db.owner.query("insert into claims.claim_intents (claim_id, user_id, section_key, period, amount, kind, recipient) values ($1, $2, 'connect_wallet', 'once', 450, 'unlock', $3)", [id, userId, wallet]);
    await cage.query('select * from cage.grant_play_chips($1, 450, $2, $3, $4)', [wallet, id, 'connect_wallet', 'once']);
    expect((await credit(userId, 'connect_wallet')).rows[0]).toMatchObject({ outcome: 'credited', amount: 450n, claim_id: id });
    const { rows } = await db.owner.query("select amount, claim_id from claims.claim_ledger where user_id = $1 and section_key = 'connect_wallet'", [userId]);
    expect(rows).toEqual([{ amount: 450n, claim_id: id }]);
    expect(await grants(userId)).toBe(1);
    await expectCleanAudit(cage);
  });

  test('the service key alone mints nothing: a grant with no open claim, another amount or another recipient is refused (grant_not_backed)', async () => {
    const { userId, wallet } = await claimant(true);
    for (const id of [`0x${randomUUID().replace(/-/g, '').padEnd(64, '0')}`, specClaimId(userId, 'connect_wallet', 'once')]) {
      expect(await code(cage.query('select * from cage.grant_play_chips($1, 500, $2, null, null)', [wallet, id]))).toBe('CGGNB grant_not_backed');
    }
    // an open intent (what an earlier version's claim left; the owner writes it here): only its amount and recipient
    const id = specClaimId(userId, 'connect_wallet', 'once');
    await db.owner.query("insert into claims.claim_intents (claim_id, user_id, section_key, period, amount, kind, recipient) values ($1, $2, 'connect_wallet', 'once', 500, 'unlock', $3)", [id, userId, wallet]);
    expect(await code(cage.query('select * from cage.grant_play_chips($1, 499, $2, null, null)', [wallet, id]))).toBe('CGGNB grant_not_backed');
    const other = await claimant(true);
    expect(await code(cage.query('select * from cage.grant_play_chips($1, 500, $2, null, null)', [other.wallet, id]))).toBe('CGGNB grant_not_backed');
    expect(await grants(userId)).toBe(0);
    // the claim takes the intent up and pays it
    expect((await credit(userId, 'connect_wallet')).rows[0]).toMatchObject({ outcome: 'credited', amount: 500n, claim_id: id });
    await expectCleanAudit(cage);
  });
});

/** A signer with the pinned test receipt key (helpers/keys.ts): store_receipt takes only a pinned key. */
function testSigner(): ReceiptSigner {
  return signerFromPrivateKey(TEST_RECEIPT_SEED);
}

describe('receipts', () => {
  test('are written in the settlement\'s transaction: a failed signing leaves no settlement at all', async () => {
    const tableId = await table();
    const userId = await player(300);
    await sit(userId, tableId, 1, 120n);
    const position = await standUp(game, tableId, userId);
    const p = {
      userId, tableId, playerId: String(position.player_id), chipAmount: 120n, historyHash: position.history_hash,
      idempotencyKey: withdrawKey(userId, tableId, position.history_hash, 120n), settlement: 'cash_out', forced: false,
    };
    const broken: ReceiptSigner = { ...testSigner(), sign: () => { throw new Error('the signing key is unavailable'); } };
    await expect(settlePosition(cage, broken, p)).rejects.toThrow('the signing key is unavailable');
    const none = await db.owner.query('select count(*)::int as n from cage.withdraw_intents where player_id = $1', [position.player_id]);
    expect(none.rows[0].n).toBe(0);
    expect(await escrow(tableId)).toBe(120n);
    const settled = await settlePosition(cage, testSigner(), p);
    expect(settled.receipt.ledgerRefId).toBe(settled.ledger_ref_id);
    await game.query('select * from game.settle_seat($1, $2, $3)', [p.playerId, settled.ledger_ref_id, 'cash_out']);
    await expectCleanAudit(cage);
  });
});
