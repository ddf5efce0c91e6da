// cage.post_movement: one balanced movement, all postings or none, refusals that change nothing.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { postMovement } from '../../../server/cage/ledger.ts';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/db.ts';
import { balanceOf, expectBalancedBooks, fund, refId, systemAccount, userAccount } from '../../../test/helpers/cage.ts';
import { rollbackEachTest } from '../../../test/helpers/rollback.ts';

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

async function journalSize() {
  const { rows } = await db.owner.query<{ entries: bigint; postings: bigint }>(
    'select (select count(*) from cage.cage_entries) as entries, (select count(*) from cage.cage_ledger) as postings',
  );
  return rows[0]!;
}

/** Raw call, so a refusal surfaces with its SQLSTATE and message. */
function post(ref: string, kind: string, moneyKind: string, accounts: unknown[], amounts: unknown[], memo: unknown = {}) {
  return cage.query('select * from cage.post_movement($1, $2, $3, $4::bigint[], $5::bigint[], $6)', [
    ref, kind, moneyKind, accounts, amounts, memo,
  ]);
}

describe('one test, one transaction, rolled back after it (exact balances)', () => {
  const tx = rollbackEachTest(() => cage);

  test('a transfer moves chips between two users and writes one entry with two postings', async () => {
    const a = await userAccount(tx.client);
    const b = await userAccount(tx.client);
    await fund(tx.client, a.id, 1000n);
    const ref = refId('transfer');
    const result = await postMovement(tx.client, { refId: ref, kind: 'adjustment', moneyKind: 'play', accounts: [a.id, b.id], amounts: [-300n, 300n], memo: { why: 'test' } });
    expect(result.status).toBe('created');
    expect(await balanceOf(tx.client, a.id)).toBe(700n);
    expect(await balanceOf(tx.client, b.id)).toBe(300n);
    const { rows } = await tx.client.query(
      'select account_id, amount, balance_after, account_version, kind, ref_id from cage.cage_ledger where entry_id = $1 order by id',
      [result.entryId],
    );
    expect(rows).toEqual([
      { account_id: a.id, amount: -300n, balance_after: 700n, account_version: 2n, kind: 'adjustment', ref_id: ref },
      { account_id: b.id, amount: 300n, balance_after: 300n, account_version: 1n, kind: 'adjustment', ref_id: ref },
    ]);
  });

  test('a movement with an unbounded system account never touches that account row', async () => {
    const source = await systemAccount(tx.client, 'grant_source');
    const a = await userAccount(tx.client);
    await fund(tx.client, a.id, 50n);
    await fund(tx.client, a.id, 25n);
    const { rows } = await tx.client.query('select balance, version from cage.cage_accounts where id = $1', [source]);
    expect(rows[0]).toEqual({ balance: 0n, version: 0n });
    // its balance is derived from the journal
    expect(await balanceOf(tx.client, source)).toBe(-75n);
  });

  test('a zero movement (an explicit zero bust_close) is recorded', async () => {
    const a = await userAccount(tx.client);
    const house = await systemAccount(tx.client, 'house');
    const result = await postMovement(tx.client, { refId: refId('bust'), kind: 'bust_close', moneyKind: 'play', accounts: [a.id, house], amounts: [0n, 0n] });
    expect(result.status).toBe('created');
    const { rows } = await tx.client.query('select count(*)::int as n from cage.cage_ledger where entry_id = $1', [result.entryId]);
    expect(rows[0].n).toBe(2);
  });
});

describe('refusals change nothing', () => {
  let a: { id: bigint };
  let b: { id: bigint };
  beforeAll(async () => {
    a = await userAccount(cage);
    b = await userAccount(cage);
    await fund(cage, a.id, 100n);
  });

  const cases: [string, () => [string, string, string, unknown[], unknown[], unknown?], string, string][] = [
    ['overdraft of a user account', () => [refId(), 'adjustment', 'play', [a.id, b.id], [-101, 101]], 'CGNSF', 'insufficient_cage_balance'],
    ['unbalanced postings', () => [refId(), 'adjustment', 'play', [a.id, b.id], [-10, 9]], 'CGUNB', 'unbalanced_movement'],
    ['one leg only', () => [refId(), 'adjustment', 'play', [a.id], [0]], 'CGLEG', 'invalid_postings'],
    ['legs of different lengths', () => [refId(), 'adjustment', 'play', [a.id, b.id], [1, -1, 0]], 'CGLEG', 'invalid_postings'],
    ['the same account twice', () => [refId(), 'adjustment', 'play', [a.id, a.id], [-1, 1]], 'CGLEG', 'invalid_postings'],
    ['a null amount', () => [refId(), 'adjustment', 'play', [a.id, b.id], [null, 1]], 'CGLEG', 'invalid_postings'],
    ['an amount over 2^53-1', () => [refId(), 'adjustment', 'play', [a.id, b.id], ['-9007199254740992', '9007199254740992']], 'CGAMT', 'amount_out_of_range'],
    ['an unknown movement kind', () => [refId(), 'gift', 'play', [a.id, b.id], [-1, 1]], 'CGKND', 'unknown_movement_kind'],
    ['an unknown money kind', () => [refId(), 'adjustment', 'gold', [a.id, b.id], [-1, 1]], 'CGMKD', 'unknown_money_kind'],
    ['an empty ref_id', () => ['', 'adjustment', 'play', [a.id, b.id], [-1, 1]], 'CGRID', 'invalid_ref_id'],
    ['a ref_id over 200 characters', () => ['x'.repeat(201), 'adjustment', 'play', [a.id, b.id], [-1, 1]], 'CGRID', 'invalid_ref_id'],
    ['a non-existent account', () => [refId(), 'adjustment', 'play', [a.id, 987654321], [-1, 1]], 'CGACC', 'account_not_found'],
    ['a memo that is not an object', () => [refId(), 'adjustment', 'play', [a.id, b.id], [-1, 1], '[1, 2]'], 'CGMEM', 'invalid_memo'],
  ];

  test.each(cases)('%s', async (_name, args, sqlstate, message) => {
    const before = await journalSize();
    const balances = [await balanceOf(cage, a.id), await balanceOf(cage, b.id)];
    await expect(post(...args())).rejects.toMatchObject({ code: sqlstate, message });
    expect(await journalSize()).toEqual(before);
    expect([await balanceOf(cage, a.id), await balanceOf(cage, b.id)]).toEqual(balances);
  });

  test('accounts of another money kind', async () => {
    const real = await userAccount(cage, 'real');
    const before = await journalSize();
    await expect(post(refId(), 'adjustment', 'play', [a.id, real.id], [-1, 1])).rejects.toMatchObject({
      code: 'CGMKM', message: 'money_kind_mismatch',
    });
    expect(await journalSize()).toEqual(before);
  });

  test('fractional and over-bigint amounts are refused by the types themselves', async () => {
    const before = await journalSize();
    await expect(post(refId(), 'adjustment', 'play', [a.id, b.id], [-1.5, 1.5])).rejects.toMatchObject({ code: '22P02' });
    await expect(post(refId(), 'adjustment', 'play', [a.id, b.id], ['-99999999999999999999', '99999999999999999999'])).rejects.toMatchObject({ code: '22003' });
    expect(await journalSize()).toEqual(before);
  });

  test('a shortfall on a bounded system account (table escrow) has its own code', async () => {
    const escrow = (await cage.query('select cage.ensure_account($1, null, $2, $3) as id', ['table_escrow', `t-${randomUUID()}`, 'play'])).rows[0].id;
    await expect(post(refId(), 'table_cash_out', 'play', [escrow, a.id], [-5, 5])).rejects.toMatchObject({
      code: 'CGSHF', message: 'account_shortfall',
    });
  });
});

describe('ensure_account', () => {
  test('is idempotent and race-safe', async () => {
    const userId = randomUUID();
    const ids = await Promise.all(
      Array.from({ length: 20 }, () => cage.query('select cage.ensure_account($1, $2, null, $3) as id', ['user', userId, 'real'])),
    );
    expect(new Set(ids.map((r) => r.rows[0].id)).size).toBe(1);
  });

  test.each([
    ['unknown type', ['wallet', null, null, 'play'], 'CGATY'],
    ['user without a user id', ['user', null, null, 'play'], 'CGACS'],
    ['user with a scope', ['user', randomUUID(), 'x', 'play'], 'CGACS'],
    ['escrow without a table id', ['table_escrow', null, null, 'play'], 'CGACS'],
    ['unknown money kind', ['house', null, null, 'gold'], 'CGMKD'],
  ])('refuses %s', async (_name, args, code) => {
    await expect(cage.query('select cage.ensure_account($1, $2, $3, $4)', args)).rejects.toMatchObject({ code });
  });
});
