// The periodic audit (cage.audit_since_checkpoint, db/functions/cage/45_audit_checkpoint.sql): it reads
// only what was written since its checkpoint, finds there what the full audit finds (in the same
// rows), moves its checkpoint only when clean, and skips or counts twice no posting written while it
// runs. Violations are forged as the database owner, bypassing the posting functions, as a broken
// or hostile writer would; each case has a database of its own, since a forged journal row can never
// be taken back.
import type pg from 'pg';
import { audit, auditSinceCheckpoint, postMovement, postMovements, type Movement } from '../../../server/cage/ledger.ts';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/db.ts';
import { fund, refId, systemAccount, userAccount } from '../../../test/helpers/cage.ts';

const dbs: TestDatabase[] = [];
afterAll(async () => {
  await Promise.all(dbs.map((d) => d.drop()));
});

async function freshBooks(users = 4) {
  const db = await createTestDatabase();
  dbs.push(db);
  const owner = db.ownerPool(12);
  const accounts: bigint[] = [];
  for (let i = 0; i < users; i++) {
    const a = (await userAccount(owner)).id;
    await fund(owner, a, 1_000_000n);
    accounts.push(a);
  }
  return { db, owner, accounts };
}

/** A transfer between two user accounts: kind 'claim' needs no business record behind it. */
const transfer = (from: bigint, to: bigint, amount: bigint): Movement => ({
  refId: refId('xfer'), kind: 'claim', moneyKind: 'play', accounts: [from, to], amounts: [-amount, amount],
});

async function checkpoint(owner: pg.Pool) {
  const { rows } = await owner.query<{ entry_id: bigint; entries_read: bigint; postings_read: bigint }>(
    'select entry_id, entries_read, postings_read from cage_private.audit_checkpoint',
  );
  return rows[0]!;
}

const lastEntry = async (owner: pg.Pool) =>
  (await owner.query<{ id: bigint }>('select max(id) as id from cage.cage_entries')).rows[0]!.id;

const bySubject = (vs: { invariant: string; subject: string }[]) =>
  [...vs].sort((a, b) => `${a.invariant} ${a.subject}`.localeCompare(`${b.invariant} ${b.subject}`));

/** The marks must be the journal: per account, sum and count of every posting up to the checkpoint. */
async function expectMarksAreTheJournal(owner: pg.Pool) {
  const { rows } = await owner.query(`
    select coalesce(j.account_id, m.account_id) as account_id, j.total, j.n, m.journal, m.postings
      from (select l.account_id, sum(l.amount)::bigint as total, count(*) as n from cage.cage_ledger l
             where l.entry_id <= (select entry_id from cage_private.audit_checkpoint) group by l.account_id) j
      full join cage_private.audit_account_marks m on m.account_id = j.account_id
     where j.total is distinct from m.journal or j.n is distinct from m.postings`);
  expect(rows).toEqual([]);
  const kinds = await owner.query('select money_kind, journal from cage_private.audit_kind_marks where journal <> 0');
  expect(kinds.rows).toEqual([]);
}

test('clean books: nothing found, the checkpoint moves to the last entry; a run with nothing new reads nothing', async () => {
  const { owner, accounts } = await freshBooks();
  expect(await auditSinceCheckpoint(owner)).toEqual([]);
  const first = await checkpoint(owner);
  expect(first.entry_id).toBe(await lastEntry(owner));
  expect(first.entries_read).toBe(4n); // the four fundings

  await postMovements(owner, [transfer(accounts[0]!, accounts[1]!, 5n), transfer(accounts[2]!, accounts[3]!, 7n)]);
  expect(await auditSinceCheckpoint(owner)).toEqual([]);
  expect(await checkpoint(owner)).toEqual({ entry_id: await lastEntry(owner), entries_read: 2n, postings_read: 4n });

  expect(await auditSinceCheckpoint(owner)).toEqual([]);
  expect(await checkpoint(owner)).toMatchObject({ entries_read: 0n, postings_read: 0n });
  await expectMarksAreTheJournal(owner);
  expect(await audit(owner)).toEqual([]);
});

test('a balance changed without a posting: the row the full audit gives, and the checkpoint stays until it is repaired', async () => {
  const { owner, accounts } = await freshBooks();
  expect(await auditSinceCheckpoint(owner)).toEqual([]);
  const before = await checkpoint(owner);
  // an account no posting touches after the checkpoint
  await owner.query('update cage.cage_accounts set balance = balance + 1 where id = $1', [accounts[2]]);
  await postMovement(owner, transfer(accounts[0]!, accounts[1]!, 3n));

  const found = await auditSinceCheckpoint(owner);
  expect(found).toEqual([{
    invariant: 'account_balance', subject: `account:${accounts[2]}`,
    detail: { balance: 1_000_001, journal: 1_000_000, version: 1, postings: 1 },
  }]);
  expect(bySubject(found)).toEqual(bySubject(await audit(owner)));
  expect(await checkpoint(owner)).toEqual(before);
  expect(await auditSinceCheckpoint(owner)).toEqual(found); // reported again, not forgotten

  await owner.query('select * from cage.rebuild_projection()');
  expect(await auditSinceCheckpoint(owner)).toEqual([]);
  expect((await checkpoint(owner)).entry_id).toBe(await lastEntry(owner));
  await expectMarksAreTheJournal(owner);
});

test('an unbalanced entry written past the posting functions: the same rows as the full audit', async () => {
  const { owner, accounts } = await freshBooks();
  expect(await auditSinceCheckpoint(owner)).toEqual([]);
  const before = await checkpoint(owner);
  const [a, b] = accounts as [bigint, bigint];
  // an entry of two legs with one posting: chips leave `a` and arrive nowhere
  const { rows } = await owner.query<{ id: bigint }>(
    `insert into cage.cage_entries (ref_id, kind, money_kind, accounts, amounts)
     values ($1, 'claim', 'play', array[$2, $3]::bigint[], array[-5, 5]::bigint[]) returning id`, [refId('forged'), a, b],
  );
  const forged = rows[0]!.id;
  await owner.query(
    `insert into cage.cage_ledger (entry_id, account_id, money_kind, kind, ref_id, amount)
     select e.id, $2, 'play', 'claim', e.ref_id, -5 from cage.cage_entries e where e.id = $1`, [forged, a],
  );
  const found = await auditSinceCheckpoint(owner);
  expect(bySubject(found).map((v) => `${v.invariant} ${v.subject}`)).toEqual([
    `account_balance account:${a}`, `transaction_balance entry:${forged}`, 'transaction_balance money_kind:play',
  ]);
  expect(bySubject(found)).toEqual(bySubject(await audit(owner)));
  expect(await checkpoint(owner)).toEqual(before);
});

test('history is not re-read: a posting forged under an entry the checkpoint covers is the full audit\'s to find', async () => {
  const { owner, accounts } = await freshBooks();
  for (let i = 0; i < 50; i++) await postMovement(owner, transfer(accounts[i % 4]!, accounts[(i + 1) % 4]!, 1n));
  expect(await auditSinceCheckpoint(owner)).toEqual([]);
  const covered = await checkpoint(owner);
  expect(covered.entries_read).toBe(54n);

  // an extra posting to the (unbounded) house under the first entry, long covered
  const source = await systemAccount(owner, 'house');
  const { rows } = await owner.query<{ id: bigint }>('select min(id) as id from cage.cage_entries');
  await owner.query(
    `insert into cage.cage_ledger (entry_id, account_id, money_kind, kind, ref_id, amount)
     select e.id, $2, e.money_kind, e.kind, e.ref_id, 7 from cage.cage_entries e where e.id = $1`, [rows[0]!.id, source],
  );
  await postMovements(owner, [transfer(accounts[0]!, accounts[1]!, 2n), transfer(accounts[1]!, accounts[2]!, 2n)]);

  expect(await auditSinceCheckpoint(owner)).toEqual([]);
  // it read the two new entries and their four postings, nothing older
  expect(await checkpoint(owner)).toEqual({ entry_id: await lastEntry(owner), entries_read: 2n, postings_read: 4n });
  expect(bySubject(await audit(owner)).map((v) => `${v.invariant} ${v.subject}`)).toEqual([
    `transaction_balance entry:${rows[0]!.id}`, 'transaction_balance money_kind:play',
  ]);
});

test('an entry still being written below a visible one is waited for, not skipped', async () => {
  const { db, owner, accounts } = await freshBooks();
  expect(await auditSinceCheckpoint(owner)).toEqual([]);
  const slow = await owner.connect();
  try {
    await slow.query('begin');
    const { rows } = await slow.query<{ entry_id: bigint }>(
      "select entry_id from cage.post_movement($1, 'claim', 'play', $2::bigint[], array[-9, 9]::bigint[])",
      [refId('slow'), [accounts[0], accounts[1]]],
    );
    const held = rows[0]!.entry_id;
    const later = (await postMovement(owner, transfer(accounts[2]!, accounts[3]!, 4n))).entryId;
    expect(later).toBeGreaterThan(held); // the later id is visible, the earlier one not yet

    let settled = false;
    const run = auditSinceCheckpoint(db.ownerPool(1)).finally(() => { settled = true; });
    await new Promise((r) => setTimeout(r, 300));
    expect(settled).toBe(false);
    await slow.query('commit');
    expect(await run).toEqual([]);
    expect((await checkpoint(owner)).entry_id).toBeGreaterThanOrEqual(later);
    await expectMarksAreTheJournal(owner);
    expect(await auditSinceCheckpoint(owner)).toEqual([]);
    expect(await audit(owner)).toEqual([]);
  } finally {
    await slow.query('rollback').catch(() => undefined);
    slow.release();
  }
});

test('inside a REPEATABLE READ transaction it refuses (its snapshot must follow its wait)', async () => {
  const { owner } = await freshBooks(1);
  const c = await owner.connect();
  try {
    await c.query('begin isolation level repeatable read');
    await expect(c.query('select * from cage.audit_since_checkpoint()')).rejects.toMatchObject({ message: 'audit_needs_read_committed' });
  } finally {
    await c.query('rollback');
    c.release();
  }
});

test('postings written while it runs again and again are neither skipped nor counted twice', async () => {
  const { db, owner, accounts } = await freshBooks(12);
  const pick = () => accounts[Math.floor(Math.random() * accounts.length)]!;
  const pair = (): [bigint, bigint] => {
    const a = pick();
    let b = pick();
    while (b === a) b = pick();
    return [a, b];
  };
  const deadline = Date.now() + 4000;
  let written = 0;
  const poster = async (kind: number) => {
    const c = await owner.connect();
    try {
      while (Date.now() < deadline) {
        const [a, b] = pair();
        if (kind === 0) {
          await postMovement(c, transfer(a, b, 1n));
          written++;
        } else if (kind === 1) {
          await postMovements(c, Array.from({ length: 20 }, () => transfer(...pair(), 1n)));
          written += 20;
        } else {
          // an id drawn, held a while, then committed or rolled back
          await c.query('begin');
          await c.query("select * from cage.post_movement($1, 'claim', 'play', $2::bigint[], array[-1, 1]::bigint[])", [refId('held'), [a, b]]);
          await new Promise((r) => setTimeout(r, Math.random() * 30));
          const keep = Math.random() < 0.7;
          await c.query(keep ? 'commit' : 'rollback');
          if (keep) written++;
        }
      }
    } finally {
      c.release();
    }
  };
  const auditor = db.ownerPool(1);
  const runs: unknown[][] = [];
  const auditLoop = async () => {
    while (Date.now() < deadline) runs.push(await auditSinceCheckpoint(auditor));
  };
  await Promise.all([poster(0), poster(0), poster(1), poster(2), poster(2), poster(2), auditLoop()]);

  expect(runs.length).toBeGreaterThan(5);
  expect(runs.filter((r) => r.length > 0)).toEqual([]);
  expect(written).toBeGreaterThan(100);
  expect(await auditSinceCheckpoint(owner)).toEqual([]);
  // every id drawn is covered: the last committed entry's, and past it the ids of rolled-back ones
  const { rows } = await owner.query<{ drawn: bigint }>(
    "select pg_sequence_last_value(pg_get_serial_sequence('cage.cage_entries', 'id')::regclass) as drawn",
  );
  expect((await checkpoint(owner)).entry_id).toBe(rows[0]!.drawn);
  expect(rows[0]!.drawn).toBeGreaterThanOrEqual(await lastEntry(owner));
  await expectMarksAreTheJournal(owner);
  expect(await audit(owner)).toEqual([]);
});
