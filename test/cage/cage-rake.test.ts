// Rake reconciliation over real HTTP against the running roles (spec, Cage: "Reconciliation claims
// the house rows and extends the hash chain without moving money"): hands take rake (the game's
// hand boundary, driven by the test harness), POST /settlement/reconcile-rake claims the house
// rows and links the table's rake chain, no chip moves, and the audit holds before and after.
import { createHash } from 'node:crypto';
import pino from 'pino';
import type pg from 'pg';
import { createCageReconcileRakeTask } from '../../tasks/cage_reconcile_rake.ts';
import { expectCleanAudit } from '../helpers/cage.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { call, startMoneyPlatform } from '../helpers/money.ts';

let db: TestDatabase;
let cagePool: pg.Pool;
let m: Awaited<ReturnType<typeof startMoneyPlatform>>;
beforeAll(async () => {
  db = await createTestDatabase();
  cagePool = db.pool('poker_cage');
  m = await startMoneyPlatform(db, { alsoAdmin: true });
});
afterAll(async () => {
  await m?.platform.stop();
  await expectCleanAudit(cagePool);
  await db.drop();
});

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const reconcile = (body: Record<string, unknown> = {}, headers: Record<string, string> = m.service) =>
  call(`${m.cage}/settlement/reconcile-rake`, { headers, body });
const rakeOf = (tableId: string) => call(`${m.cage}/settlement/rake/${tableId}`, { headers: m.service });

async function escrow(tableId: string): Promise<bigint> {
  const { rows } = await db.owner.query("select balance from cage.account_balances where account_type = 'table_escrow' and scope = $1", [tableId]);
  return BigInt(rows[0]?.balance ?? 0);
}
const journalEntries = async () => Number((await db.owner.query('select count(*) from cage.cage_entries')).rows[0].count);

/** A table with two players of 100 chips each; `hand` plays one hand to the given stacks and rake. */
async function tableOfTwo() {
  const a = await m.player(1000);
  const b = await m.player(1000);
  const tableId = await m.table(a.auth);
  expect((await m.deposit(a.auth, { tableId, seatIndex: 0, amount: 100 })).status).toBe(200);
  expect((await m.deposit(b.auth, { tableId, seatIndex: 1, amount: 100 })).status).toBe(200);
  const { rows } = await db.owner.query('select id::text from game.table_players where table_id = $1 order by seat_index', [tableId]);
  const [pa, pb] = rows.map((r) => r.id as string);
  const hand = async (handId: string, stackA: number, stackB: number, rake: number) => {
    expect((await m.hand({ action: 'begin', tableId, handId })).status).toBe(200);
    const end = await m.hand({ action: 'finish', tableId, handId, stacks: { [pa!]: stackA, [pb!]: stackB }, rake });
    expect(end.status).toBe(200);
  };
  const standUp = async () => {
    for (const p of [a, b]) expect((await m.withdraw(p.auth, { tableId })).status).toBe(200);
  };
  return { a, b, tableId, hand, standUp };
}

test('a reconciliation claims the house rows and links the rake chain; no chip moves; nothing left is nothing done', async () => {
  const t = await tableOfTwo();
  await t.hand('h1', 105, 90, 5);
  await t.hand('h2', 100, 93, 2);
  await t.hand('h3', 110, 83, 0); // no rake, no house row
  const rows = await db.owner.query('select hand_id, amount::int, reconciliation_id from game.rake_rows where table_id = $1 order by hand_id', [t.tableId]);
  expect(rows.rows).toEqual([{ hand_id: 'h1', amount: 5, reconciliation_id: null }, { hand_id: 'h2', amount: 2, reconciliation_id: null }]);
  expect((await rakeOf(t.tableId)).body).toMatchObject({ tableId: t.tableId, unreconciledRake: 7, reconciledRake: 0, chain: [] });

  const entriesBefore = await journalEntries();
  expect(await escrow(t.tableId)).toBe(200n);
  const r = await reconcile({ tableId: t.tableId });
  expect(r.status).toBe(200);
  expect(r.body).toMatchObject({ ok: true, amount: 7, refused: [] });
  expect(r.body.reconciled).toHaveLength(1);
  const first = r.body.reconciled[0];
  const digest = sha256('h1=5,h2=2');
  const genesis = sha256(`rake:${t.tableId}`);
  expect(first).toMatchObject({
    tableId: t.tableId, moneyKind: 'play', amount: 7, hands: 2, rowsDigest: digest, prevHash: genesis, reconciledRake: 7,
    hash: sha256(`${genesis}|${t.tableId}|play|7|2|${digest}`),
  });
  // no chip moved: the escrow still holds the rake, no journal entry was written
  expect(await escrow(t.tableId)).toBe(200n);
  expect(await journalEntries()).toBe(entriesBefore);
  expect((await rakeOf(t.tableId)).body).toMatchObject({ unreconciledRake: 0, reconciledRake: 7, chain: [first] });
  expect((await db.owner.query('select count(*)::int as n from game.rake_rows where table_id = $1 and reconciliation_id = $2', [t.tableId, first.reconciliationId])).rows[0].n).toBe(2);
  await expectCleanAudit(cagePool);

  // again: nothing to claim, nothing done
  expect((await reconcile({ tableId: t.tableId })).body).toMatchObject({ reconciled: [], amount: 0 });

  // more rake, reconciled by the all-tables run: the chain goes on from the first record
  await t.hand('h4', 105, 85, 3);
  const all = await reconcile();
  expect(all.status).toBe(200);
  const second = all.body.reconciled.find((x: { tableId: string }) => x.tableId === t.tableId);
  expect(second).toMatchObject({ amount: 3, hands: 1, prevHash: first.hash, reconciledRake: 10, rowsDigest: sha256('h4=3') });
  expect(second.hash).toBe(sha256(`${first.hash}|${t.tableId}|play|3|1|${sha256('h4=3')}`));
  expect((await rakeOf(t.tableId)).body.chain.map((x: { hash: string }) => x.hash)).toEqual([first.hash, second.hash]);

  // the admin GraphQL reads the house rows and the chain for an operator, nothing without one
  const gql = async (headers: Record<string, string>) => call(`${m.platform.url('admin')}/graphql`, {
    headers: { ...headers, accept: 'application/graphql-response+json' },
    body: { query: '{ allGameRakeRows { nodes { handId tableId amount reconciliationId } } allRakeReconciliations { nodes { tableId amount hands hash } } }' },
  });
  const admin = await gql((await m.operator()).auth);
  expect(admin.body.errors).toBeUndefined();
  const ofTable = <T extends { tableId: string }>(nodes: T[]) => nodes.filter((n) => n.tableId === t.tableId);
  expect(ofTable(admin.body.data.allGameRakeRows.nodes).sort((x: any, y: any) => x.handId.localeCompare(y.handId))).toEqual([
    { handId: 'h1', tableId: t.tableId, amount: '5', reconciliationId: first.reconciliationId },
    { handId: 'h2', tableId: t.tableId, amount: '2', reconciliationId: first.reconciliationId },
    { handId: 'h4', tableId: t.tableId, amount: '3', reconciliationId: second.reconciliationId },
  ]);
  expect(ofTable(admin.body.data.allRakeReconciliations.nodes).sort((x: any, y: any) => y.amount - x.amount)).toEqual([
    { tableId: t.tableId, amount: '7', hands: 2, hash: first.hash }, { tableId: t.tableId, amount: '3', hands: 1, hash: second.hash },
  ]);
  expect((await gql({})).body.data).toEqual({ allGameRakeRows: { nodes: [] }, allRakeReconciliations: { nodes: [] } });

  // everybody leaves: the escrow keeps exactly the rake (the house's cut is a calculation)
  await t.standUp();
  expect(await escrow(t.tableId)).toBe(10n);
  expect((await m.balance(t.a.auth)) + (await m.balance(t.b.auth))).toBe(2000 - 10);
  await expectCleanAudit(cagePool);
});

test('refusals: the service key, the body, an unknown table; nothing changes', async () => {
  const t = await tableOfTwo();
  await t.hand('r1', 104, 94, 2);
  expect(await reconcile({ tableId: t.tableId }, {})).toMatchObject({ status: 401 });
  expect(await reconcile({ tableId: t.tableId }, { 'x-service-key': 'wrong-key-of-some-length-0000000000' })).toMatchObject({ status: 401 });
  const bad = await reconcile({ tableId: 5 });
  expect(bad.status).toBe(400);
  expect(bad.body.error).toBe('bad_request');
  expect(bad.body.issues[0].path).toEqual(['tableId']);
  expect((await reconcile({ tableId: t.tableId, amount: 1 })).body.error).toBe('bad_request');
  expect(await reconcile({ tableId: 'no-such-table' })).toMatchObject({ status: 404, body: { error: 'table_not_found' } });
  expect(await rakeOf('no-such-table')).toMatchObject({ status: 404, body: { error: 'table_not_found' } });
  expect((await call(`${m.cage}/settlement/rake/${t.tableId}`)).status).toBe(401);
  expect((await rakeOf(t.tableId)).body).toMatchObject({ unreconciledRake: 2, reconciledRake: 0, chain: [] });
  await t.standUp();
  await expectCleanAudit(cagePool);
});

test('books that diverge are refused and reported, nothing of that table is claimed, other tables go on', async () => {
  const bad = await tableOfTwo();
  const good = await tableOfTwo();
  await bad.hand('d1', 104, 94, 2);
  await good.hand('g1', 104, 94, 2);
  // a chip of rake with no house row (what a bug or a hand edit would leave)
  await db.owner.query('update game.tables set unreconciled_rake = unreconciled_rake + 1 where table_id = $1', [bad.tableId]);
  try {
    const one = await reconcile({ tableId: bad.tableId });
    expect(one).toMatchObject({ status: 409, body: { error: 'rake_books_diverge' } });
    const audit = (await cagePool.query('select invariant, subject from cage.audit()')).rows;
    expect(audit).toEqual(expect.arrayContaining([
      { invariant: 'rake_books', subject: `table:${bad.tableId}` },
      { invariant: 'table_escrow', subject: `table:${bad.tableId}:play` },
    ]));
    const all = await reconcile();
    expect(all.status).toBe(200);
    expect(all.body.refused).toEqual([{ tableId: bad.tableId, error: 'rake_books_diverge' }]);
    expect(all.body.reconciled.map((x: { tableId: string }) => x.tableId)).toContain(good.tableId);
    expect((await rakeOf(bad.tableId)).body).toMatchObject({ unreconciledRake: 3, reconciledRake: 0, chain: [] });
  } finally {
    await db.owner.query('update game.tables set unreconciled_rake = unreconciled_rake - 1 where table_id = $1', [bad.tableId]);
  }
  expect((await reconcile({ tableId: bad.tableId })).body.reconciled[0]).toMatchObject({ amount: 2 });
  await bad.standUp();
  await good.standUp();
  await expectCleanAudit(cagePool);
});

test('house rows and reconciliations are append-only, for the owner too', async () => {
  const t = await tableOfTwo();
  await t.hand('i1', 104, 94, 2);
  await t.hand('i2', 104, 92, 2);
  await expect(db.owner.query('update game.rake_rows set amount = 1 where hand_id = $1', ['i1'])).rejects.toMatchObject({ code: 'CGIMM' });
  await expect(db.owner.query('delete from game.rake_rows where hand_id = $1', ['i1'])).rejects.toMatchObject({ code: 'CGIMM' });
  expect((await reconcile({ tableId: t.tableId })).status).toBe(200);
  // a claimed row is never claimed again, the record never edited
  await expect(db.owner.query('update game.rake_rows set reconciliation_id = null where hand_id = $1', ['i2'])).rejects.toMatchObject({ code: 'CGIMM' });
  await expect(db.owner.query('update cage.rake_reconciliations set amount = 1 where table_id = $1', [t.tableId])).rejects.toMatchObject({ code: 'CGIMM' });
  await expect(db.owner.query('delete from cage.rake_reconciliations where table_id = $1', [t.tableId])).rejects.toMatchObject({ code: 'CGIMM' });
  // the service roles write only through the functions
  await expect(cagePool.query("insert into game.rake_rows (hand_id, table_id, amount) values ('x', $1, 1)", [t.tableId])).rejects.toMatchObject({ code: '42501' });
  await expect(cagePool.query('update cage.rake_reconciliations set hands = 9')).rejects.toMatchObject({ code: '42501' });
  await t.standUp();
  await expectCleanAudit(cagePool);
});

test('20 concurrent reconciliations of one table claim its rows once: one record, one amount', async () => {
  const t = await tableOfTwo();
  await t.hand('c1', 104, 94, 2);
  await t.hand('c2', 110, 86, 2);
  const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => reconcile(i % 2 ? { tableId: t.tableId } : {})));
  expect(answers.every((a) => a.status === 200)).toBe(true);
  const records = answers.flatMap((a) => a.body.reconciled.filter((x: { tableId: string }) => x.tableId === t.tableId));
  expect(records).toHaveLength(1);
  expect(records[0]).toMatchObject({ amount: 4, hands: 2 });
  expect((await rakeOf(t.tableId)).body).toMatchObject({ unreconciledRake: 0, reconciledRake: 4 });
  expect((await rakeOf(t.tableId)).body.chain).toHaveLength(1);
  await t.standUp();
  await expectCleanAudit(cagePool);
});

test('the worker job reconciles every table on its own role (poker_worker)', async () => {
  const t = await tableOfTwo();
  await t.hand('w1', 104, 94, 2);
  const worker = db.pool('poker_worker');
  const task = createCageReconcileRakeTask({ pool: worker, log: pino({ level: 'silent' }) });
  await task({}, {} as never);
  expect((await rakeOf(t.tableId)).body).toMatchObject({ unreconciledRake: 0, reconciledRake: 2, chain: [{ amount: 2, hands: 1 }] });
  await task({}, {} as never); // nothing left: nothing done
  expect((await rakeOf(t.tableId)).body.chain).toHaveLength(1);
  await t.standUp();
  await expectCleanAudit(cagePool);
});
