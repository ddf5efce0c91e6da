// The journal is append-only by the database's own rules; the projection is checked by the audit
// and repaired by rebuild (the journal wins).
import type pg from 'pg';
import { audit, rebuildProjection } from '../../../server/cage/ledger.ts';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/db.ts';
import { balanceOf, expectBalancedBooks, fund, refId, systemAccount, userAccount } from '../../../test/helpers/cage.ts';
import { createTable, creditSeat, openDeposit, sit } from '../../../test/helpers/game.ts';

/** The balance invariants (this file posts raw movements, which the provenance check names on purpose). */
const balanceAudit = async (pool: pg.Pool) => (await audit(pool)).filter((v) => v.invariant !== 'provenance');

let db: TestDatabase;
let cage: pg.Pool;
beforeAll(async () => {
  db = await createTestDatabase();
  cage = db.ownerPool();
});
afterAll(async () => {
  await expectBalancedBooks(cage);
  await db.drop();
});

async function escrowOf(tableId: string, moneyKind = 'play'): Promise<bigint> {
  const { rows } = await cage.query('select cage.ensure_account($1, null, $2, $3) as id', ['table_escrow', tableId, moneyKind]);
  return rows[0].id;
}

describe('append-only', () => {
  beforeAll(async () => {
    const a = await userAccount(cage);
    await fund(cage, a.id, 10n);
  });

  test.each([
    ['update cage.cage_ledger set amount = amount + 1'],
    ['delete from cage.cage_ledger'],
    ['truncate cage.cage_ledger cascade'],
    ['update cage.cage_entries set memo = \'{"x":1}\''],
    ['delete from cage.cage_entries'],
    ['delete from cage.cage_accounts'],
    ["update cage.cage_accounts set money_kind = 'real'"],
    ['update cage.cage_accounts set bounded = not bounded'],
  ])('even the owner cannot: %s', async (sql) => {
    await expect(db.owner.query(sql)).rejects.toMatchObject({ code: 'CGIMM', message: 'journal_immutable' });
  });

  test.each(['poker_cage', 'poker_game', 'poker_auth', 'poker_worker', 'poker_admin', 'poker_anonymous'] as const)(
    'role %s cannot write cage tables directly',
    async (role) => {
      const pool = db.pool(role, 1);
      for (const sql of [
        "insert into cage.cage_entries (ref_id, kind, money_kind, accounts, amounts) values ('x', 'grant', 'play', '{1,2}', '{-1,1}')",
        'update cage.cage_accounts set balance = balance + 1',
        'delete from cage.cage_ledger',
      ]) {
        await expect(pool.query(sql)).rejects.toMatchObject({ code: '42501' });
      }
    },
  );

  test.each(['poker_game', 'poker_auth', 'poker_worker', 'poker_admin', 'poker_anonymous'] as const)(
    'role %s cannot post to the ledger',
    async (role) => {
      const pool = db.pool(role, 1);
      await expect(
        pool.query("select * from cage.post_movement('x', 'grant', 'play', '{1,2}', '{-1,1}')"),
      ).rejects.toMatchObject({ code: '42501' });
      await expect(pool.query("select * from cage.post_movements('[]')")).rejects.toMatchObject({ code: '42501' });
    },
  );
});

describe('audit and rebuild', () => {
  test('a corrupted projection row is caught by the audit and repaired by rebuild', async () => {
    const a = await userAccount(cage);
    const b = await userAccount(cage);
    await fund(cage, a.id, 100n);
    await cage.query('select * from cage.post_movement($1, $2, $3, $4::bigint[], $5::bigint[])', [
      refId(), 'adjustment', 'play', [a.id, b.id].map(String), ['-30', '30'],
    ]);
    await expectBalancedBooks(cage);

    // Corrupt the projection behind the functions' back (as the owner: no service role can).
    await db.owner.query('update cage.cage_accounts set balance = balance + 5 where id = $1', [a.id]);
    await db.owner.query('update cage.cage_accounts set version = version + 1 where id = $1', [b.id]);
    const violations = await balanceAudit(cage);
    expect(violations).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ invariant: 'account_balance', subject: `account:${a.id}` }),
        expect.objectContaining({ invariant: 'account_balance', subject: `account:${b.id}` }),
      ]),
    );
    expect(violations).toHaveLength(2);
    expect(violations.find((v) => v.subject === `account:${a.id}`)!.detail).toMatchObject({ balance: 75, journal: 70 });

    const repaired = await rebuildProjection(cage);
    expect(repaired.map((r) => r.account_id).sort()).toEqual([a.id, b.id].sort());
    expect(repaired.find((r) => r.account_id === a.id)).toMatchObject({ old_balance: 75n, new_balance: 70n });
    expect(await balanceOf(cage, a.id)).toBe(70n);
    await expectBalancedBooks(cage);
    expect(await rebuildProjection(cage)).toEqual([]);
  });

  test('a table escrow must equal its open stacks, its deposits in flight and its rake (unreconciled and reconciled)', async () => {
    const game = db.pool('poker_game', 2);
    const table = await createTable(cage);
    const a = await userAccount(cage);
    const b = await userAccount(cage);
    await fund(cage, a.id, 500n);
    await fund(cage, b.id, 500n);
    const escrow = await escrowOf(table.table_id);

    // the buy-in is posted, the seat not funded yet: the deposit is in flight
    const depositA = await openDeposit(cage, a.userId, 'sit-a', table.table_id, 0, 200n);
    expect(await balanceOf(cage, escrow)).toBe(200n);
    await expectBalancedBooks(cage);
    // funded: the stack now stands for the escrow, the deposit no longer counts
    const seatA = await creditSeat(game, depositA.ref_id, table.table_id, a.userId, 0, 200n);
    await expectBalancedBooks(cage);
    await cage.query('select * from cage.confirm_deposit($1)', [depositA.ref_id]);
    await expectBalancedBooks(cage);
    const { seat: seatB } = await sit(cage, game, b.userId, table.table_id, 1, 100n);
    await expectBalancedBooks(cage);

    // a hand moves chips between the stacks and takes rake: the escrow does not move
    const epoch = await db.leaseEpoch(table.table_id);
    await db.owner.query('select game.begin_hand($1, $2, $3)', [table.table_id, 'hand-1', epoch]);
    await db.owner.query('select * from game.finish_hand($1, $2, $3, $4, $5)', [
      table.table_id, 'hand-1', { [String(seatA.player_id)]: 285, [String(seatB.player_id)]: 10 }, '5', epoch,
    ]);
    expect(await balanceOf(cage, escrow)).toBe(300n);
    await expectBalancedBooks(cage);

    // money leaving the escrow with no seat behind it is caught...
    await cage.query('select * from cage.post_movement($1, $2, $3, $4::bigint[], $5::bigint[])', [
      refId('skim'), 'adjustment', 'play', [escrow, a.id].map(String), ['-15', '15'],
    ]);
    expect(await balanceAudit(cage)).toEqual([{
      invariant: 'table_escrow',
      subject: `table:${table.table_id}:play`,
      detail: { escrow: 285, live_stacks: 295, in_flight_deposits: 0, unreconciled_rake: 5, reconciled_rake: 0 },
    }]);
    // ...until a balancing movement puts it back
    await cage.query('select * from cage.post_movement($1, $2, $3, $4::bigint[], $5::bigint[])', [
      refId('unskim'), 'adjustment', 'play', [a.id, escrow].map(String), ['-15', '15'],
    ]);
    await expectBalancedBooks(cage);

    // an escrow whose table does not exist must be empty
    const orphan = await escrowOf(`no-such-table-${refId()}`);
    await cage.query('select * from cage.post_movement($1, $2, $3, $4::bigint[], $5::bigint[])', [
      refId('orphan'), 'adjustment', 'play', [a.id, orphan].map(String), ['-7', '7'],
    ]);
    expect(await balanceAudit(cage)).toEqual([
      expect.objectContaining({ invariant: 'table_escrow', detail: expect.objectContaining({ escrow: 7, live_stacks: 0 }) }),
    ]);
    await cage.query('select * from cage.post_movement($1, $2, $3, $4::bigint[], $5::bigint[])', [
      refId('orphan-back'), 'adjustment', 'play', [orphan, a.id].map(String), ['-7', '7'],
    ]);
    await expectBalancedBooks(cage);
  });

  test('the custody account must hold exactly its unclaimed custody entries', async () => {
    const a = await userAccount(cage);
    await fund(cage, a.id, 50n);
    const custody = await systemAccount(cage, 'custody');
    const ref = refId('stray-custody');
    await cage.query('select * from cage.post_movement($1, $2, $3, $4::bigint[], $5::bigint[])', [
      ref, 'adjustment', 'play', [a.id, custody].map(String), ['-7', '7'],
    ]);
    expect(await balanceAudit(cage)).toEqual([
      expect.objectContaining({ invariant: 'custody', subject: 'custody:play', detail: { account: 7, entries: 0 } }),
    ]);
    await cage.query('select * from cage.post_movement($1, $2, $3, $4::bigint[], $5::bigint[])', [
      `${ref}:back`, 'adjustment', 'play', [custody, a.id].map(String), ['-7', '7'],
    ]);
    await expectBalancedBooks(cage);
  });

  test('unbounded system accounts are derived from the journal and conserve per money kind', async () => {
    const source = await systemAccount(cage, 'grant_source', 'real');
    const a = await userAccount(cage, 'real');
    await fund(cage, a.id, 42n, 'real');
    expect(await balanceOf(cage, source)).toBe(-42n);
    const { rows } = await cage.query("select sum(amount)::bigint as total from cage.cage_ledger where money_kind = 'real'");
    expect(rows[0].total).toBe(0n);
  });
});

test('a posting written behind the functions\' back (no entry) is caught by the audit', async () => {
  // its own database: the journal is append-only, so this damage cannot be undone afterwards
  const other = await createTestDatabase();
  try {
    const pool = other.ownerPool(2);
    const a = await userAccount(pool);
    await other.owner.query(
      "insert into cage.cage_ledger (entry_id, account_id, money_kind, kind, ref_id, amount) values (999999, $1, 'play', 'grant', 'forged', 5)",
      [a.id],
    );
    const violations = await audit(pool);
    expect(violations).toEqual(expect.arrayContaining([
      expect.objectContaining({ invariant: 'transaction_balance', detail: expect.objectContaining({ entry: 999999, problem: 'posting without its entry' }) }),
      expect.objectContaining({ invariant: 'account_balance', subject: `account:${a.id}` }),
      expect.objectContaining({ invariant: 'transaction_balance', subject: 'money_kind:play' }),
    ]));
  } finally {
    await other.drop();
  }
});
