// The custody paths over HTTP against the running auth, game and cage roles: the operators' list of
// holds, a hold's reconciliation (pro rata and custom), disputes and the arbiter's signed release,
// and the owners' list and claims. Every test ends with the cage audit empty.
import { randomUUID } from 'node:crypto';
import { ConfigError, loadConfig } from '../../server/config/index.ts';
import { audit } from '../../server/cage/ledger.ts';
import { releaseViolations, verifyPendingReleases } from '../../server/cage/custody.ts';
import { quickAddJob, runOnce } from 'graphile-worker';
import { createCageAuditTask } from '../../tasks/cage_audit.ts';
import { workerLogger } from '../../server/worker/logger.ts';
import { captureLogger } from '../helpers/logs.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { expectCleanAudit } from '../helpers/cage.ts';
import { call, startMoneyPlatform } from '../helpers/money.ts';
import { custodyEntry, escape, playHand, seatedTable, signedOutOperator, signer, tearStack, type Seated } from '../helpers/custody.ts';

let db: TestDatabase;
let m: Awaited<ReturnType<typeof startMoneyPlatform>>;
let operator: Record<string, string>;
const arbiter = signer();

beforeAll(async () => {
  db = await createTestDatabase();
  m = await startMoneyPlatform(db, { env: { CAGE_CUSTODY_ARBITER_PUBKEY: arbiter.publicKey } });
  operator = (await m.operator()).auth;
});
afterEach(async () => {
  await expectCleanAudit(db.pool('poker_cage', 1));
});
afterAll(async () => {
  await m?.platform.stop();
  await db?.drop();
});

const post = (path: string, headers: Record<string, string>, body: unknown) => call(`${m.cage}${path}`, { headers, body });
const holds = (headers: Record<string, string>, query = '') => call(`${m.cage}/admin/custody/holds${query}`, { headers });
const reconcile = (body: Record<string, unknown>, headers = operator) => post('/admin/custody/reconcile', headers, body);
const dispute = (body: Record<string, unknown>, headers = operator) => post('/admin/custody/dispute', headers, body);
const release = (body: Record<string, unknown>, headers: Record<string, string> = m.service) => post('/admin/custody/release', headers, body);
const claim = (p: { auth: Record<string, string> }, entryId: string) => post('/api/custody/claim', p.auth, { entryId });

/**
 * A divergent escape: three players buy in 110, 90 and 50 (an escrow of 250); two hands leave their
 * chains at 100, 98 and 50 with a rake of 2; then b's stack tears (+2, see tearStack). One hold of
 * the whole escrow, 250 chips, whose ledger weighs 100, 98, 50 (the chains' stacks).
 */
async function divergentHold() {
  const { tableId, players } = await seatedTable(m, [110, 90, 50]);
  const [a, b, c] = players as [Seated, Seated, Seated];
  await playHand(m, tableId, [[a, 100], [b, 100], [c, 50]], 0);
  await playHand(m, tableId, [[a, 100], [b, 98], [c, 50]], 2);
  // b's stack written again by a torn hand end (no link, no escrow): the books now owe 102 + 100 + 50 + 2
  await tearStack(db, b.positionId, 2);
  const r = await escape(m, operator, tableId);
  expect(r.body).toMatchObject({ outcome: 'divergent', escrow: 250 });
  return { tableId, players: [a, b, c] as const, holdId: r.body.hold.entryId as string, pool: 250 };
}

/** A clean escape of one player: their FREE entry. */
async function freeEntry(chips = 80) {
  const { tableId, players: [p] } = await seatedTable(m, [chips]);
  const r = await escape(m, operator, tableId);
  return { tableId, player: p!, entryId: r.body.entries[0].entryId as string };
}

describe('the operators\' list (GET /admin/custody/holds)', () => {
  test('refused without a live operator session or with a bad query; filtered by status, table and user, paged newest first', async () => {
    const hold = await divergentHold();
    const free = await freeEntry(60);
    expect(await holds({})).toEqual({ status: 401, body: { error: 'missing_bearer_token' } });
    expect(await holds(free.player.auth)).toEqual({ status: 403, body: { error: 'admin_required' } });
    expect(await holds(m.service)).toEqual({ status: 401, body: { error: 'missing_bearer_token' } });
    expect(await holds(await signedOutOperator(db, m.platform.url('auth')))).toEqual({ status: 403, body: { error: 'admin_session_required' } });
    for (const q of ['?limit=0', '?limit=201', '?limit=x', '?status=gone', '?status=free,', '?userId=nope', '?before=0', '?tableId=', '?other=1', '?limit=1&limit=2']) {
      const r = await holds(operator, q);
      expect([q, r.status, r.body.error]).toEqual([q, 400, 'bad_request']);
    }

    const needing = await holds(operator, '?status=needs_reconciliation');
    expect(needing.body.holds.map((h: { entryId: string }) => h.entryId)).toContain(hold.holdId);
    const byTable = await holds(operator, `?tableId=${hold.tableId}`);
    expect(byTable.body).toEqual({ next: null, holds: [expect.objectContaining({
      entryId: hold.holdId, kind: 'hold', userId: null, tableId: hold.tableId, moneyKind: 'play', amount: 250, baseUnits: '250000000',
      status: 'needs_reconciliation', source: 'escape', ledger: expect.any(Array), split: [],
    })] });
    // a user's: their entries, and the holds whose ledger names them
    const forB = await holds(operator, `?userId=${hold.players[1].userId}`);
    expect(forB.body.holds.map((h: { entryId: string }) => h.entryId)).toEqual([hold.holdId]);
    const forFree = await holds(operator, `?userId=${free.player.userId}&status=free,disputed`);
    expect(forFree.body.holds).toEqual([expect.objectContaining({ entryId: free.entryId, kind: 'entry', userId: free.player.userId, amount: 60, status: 'free' })]);
    // paging: one at a time, newest first, until the cursor runs out
    const first = await holds(operator, '?limit=1');
    expect(first.body).toMatchObject({ holds: [{ entryId: free.entryId }], next: free.entryId });
    const second = await holds(operator, `?limit=1&before=${first.body.next}`);
    expect(second.body.holds[0].entryId).toBe(hold.holdId);
  });
});

describe('reconciling a hold (POST /admin/custody/reconcile)', () => {
  test('refusals: no token, a player, a signed-out operator, bad bodies, unknown holds; nothing is split', async () => {
    const hold = await divergentHold();
    const { entryId } = await freeEntry();
    const body = { holdId: hold.holdId, mode: 'pro_rata', reason: 'ticket 19' };
    expect(await reconcile(body, {})).toEqual({ status: 401, body: { error: 'missing_bearer_token' } });
    expect(await reconcile(body, hold.players[0].auth)).toEqual({ status: 403, body: { error: 'admin_required' } });
    expect(await reconcile(body, await signedOutOperator(db, m.platform.url('auth')))).toEqual({ status: 403, body: { error: 'admin_session_required' } });
    const split = [{ userId: hold.players[0].userId, amount: 250 }];
    for (const bad of [
      {}, { ...body, mode: 'evenly' }, { ...body, reason: ' ' }, { ...body, holdId: 0 }, { ...body, holdId: 'x' }, { ...body, split },
      { ...body, mode: 'custom' }, { ...body, mode: 'custom', split: [] }, { ...body, mode: 'custom', split: [{ userId: 'nope', amount: 1 }] },
      { ...body, mode: 'custom', split: [{ userId: hold.players[0].userId, amount: 0 }] },
      { ...body, mode: 'custom', split: [{ userId: hold.players[0].userId, amount: 1.5 }] },
      { ...body, mode: 'custom', split: [{ userId: hold.players[0].userId, amount: 250, extra: true }] }, { ...body, extra: 1 },
    ]) {
      const r = await reconcile(bad);
      expect([bad, r.status, r.body.error]).toEqual([bad, 400, 'bad_request']);
    }
    // the same user twice: SQL's own check
    const twice = await reconcile({ ...body, mode: 'custom', split: [{ userId: hold.players[0].userId, amount: 125 }, { userId: hold.players[0].userId, amount: 125 }] });
    expect(twice).toEqual({ status: 400, body: { error: 'invalid_split' } });
    expect(await reconcile({ ...body, mode: 'custom', split: [{ userId: randomUUID(), amount: 250 }] })).toEqual({ status: 404, body: { error: 'user_not_found' } });
    expect(await reconcile({ ...body, holdId: '987654321' })).toEqual({ status: 404, body: { error: 'custody_hold_not_found' } });
    expect(await reconcile({ ...body, holdId: entryId })).toEqual({ status: 404, body: { error: 'custody_hold_not_found' } });
    expect(await custodyEntry(db, hold.holdId)).toMatchObject({ status: 'needs_reconciliation' });
  });

  test('pro rata to the ledger\'s chain stacks, whole chips, largest remainder; again: the same answer', async () => {
    const hold = await divergentHold();
    const [a, b, c] = hold.players;
    // 250 over weights 100, 98, 50 (the chains' stacks: b's torn +2 is in no chain): 100.81, 98.79, 50.40;
    // the floors make 248, and the two chips left go to the largest remainders, a's and b's
    const r = await reconcile({ holdId: hold.holdId, mode: 'pro_rata', reason: 'split by the chain heads' });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ ok: true, holdId: hold.holdId, status: 'reconciled', pool: 250, mode: 'pro_rata', reason: 'split by the chain heads' });
    const shares = Object.fromEntries(r.body.entries.map((e: { userId: string; amount: number }) => [e.userId, e.amount]));
    expect(shares).toEqual({ [a.userId]: 101, [b.userId]: 99, [c.userId]: 50 });
    expect(r.body.entries.reduce((t: number, e: { amount: number }) => t + e.amount, 0)).toBe(250);

    expect(await reconcile({ holdId: hold.holdId, mode: 'pro_rata', reason: 'again' })).toEqual({ status: 200, body: { ...r.body, replay: true } });
    expect(await reconcile({ holdId: hold.holdId, mode: 'custom', reason: 'x', split: [{ userId: a.userId, amount: 250 }] }))
      .toEqual({ status: 409, body: { error: 'hold_already_reconciled' } });
    expect(await custodyEntry(db, hold.holdId)).toMatchObject({ status: 'reconciled', user_id: null });

    // the owners claim their FREE entries
    for (const [p, amount] of [[a, 101], [b, 99], [c, 50]] as const) {
      const mine = await call(`${m.cage}/api/custody`, { headers: p.auth });
      expect(mine.body.holds).toEqual([]);
      expect(mine.body.entries).toEqual([expect.objectContaining({ amount, status: 'free', claimable: true, source: 'reconciliation', tableId: hold.tableId })]);
      expect((await claim(p, mine.body.entries[0].entryId)).body).toMatchObject({ ok: true, amount });
    }
  });

  test('the remainder: pool 252 over weights 100, 100, 50 gives 101, 101, 50 (the two largest remainders tie; so do their weights)', async () => {
    // the pool is the hold's, the weights the ledger's: computed by SQL from the stored hold
    const { rows } = await db.owner.query<{ user_id: string; amount: bigint }>(
      `select user_id::text, amount from cage_private.pro_rata_split(252, $1::jsonb) order by user_id`,
      [JSON.stringify([
        { userId: '00000000-0000-4000-8000-000000000003', weight: 50 },
        { userId: '00000000-0000-4000-8000-000000000002', weight: 100 },
        { userId: '00000000-0000-4000-8000-000000000001', weight: 100 },
      ])],
    );
    expect(rows.map((r) => [r.user_id.slice(-1), Number(r.amount)])).toEqual([['1', 101], ['2', 101], ['3', 50]]);
    // one chip over three equal weights: the first by user id; a zero weight gets nothing
    const { rows: one } = await db.owner.query<{ user_id: string; amount: bigint }>(
      'select user_id::text, amount from cage_private.pro_rata_split(7, $1::jsonb)',
      [JSON.stringify(['b', 'a', 'c', 'd'].map((x, i) => ({ userId: `00000000-0000-4000-8000-00000000000${x}`, weight: i === 3 ? 0 : 2 })))],
    );
    expect(one.map((r) => [r.user_id.slice(-1), Number(r.amount)])).toEqual([['a', 3], ['b', 2], ['c', 2]]);
  });

  test('a custom split must sum to the pool exactly; then it is the entries; again: the same answer', async () => {
    const hold = await divergentHold();
    const [a, b, c] = hold.players;
    const body = { holdId: hold.holdId, mode: 'custom', reason: 'b showed the hand history', split: [{ userId: a.userId, amount: 100 }, { userId: b.userId, amount: 100 }, { userId: c.userId, amount: 49 }] };
    expect(await reconcile(body)).toEqual({ status: 400, body: { error: 'split_sum_mismatch' } });
    expect(await reconcile({ ...body, split: [...body.split.slice(0, 2), { userId: c.userId, amount: 51 }] })).toEqual({ status: 400, body: { error: 'split_sum_mismatch' } });
    expect(await custodyEntry(db, hold.holdId)).toMatchObject({ status: 'needs_reconciliation' });
    const good = { ...body, split: [{ userId: c.userId, amount: '50' }, { userId: a.userId, amount: 98 }, { userId: b.userId, amount: 102 }] };
    const r = await reconcile(good);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'reconciled', mode: 'custom', pool: 250 });
    expect(Object.fromEntries(r.body.entries.map((e: { userId: string; amount: number }) => [e.userId, e.amount])))
      .toEqual({ [a.userId]: 98, [b.userId]: 102, [c.userId]: 50 });
    // the same split in another order is the same request; another split is refused
    expect((await reconcile({ ...good, split: [...good.split].reverse(), reason: 'retry' })).body).toMatchObject({ replay: true, entries: r.body.entries });
    expect(await reconcile({ ...good, split: [{ userId: a.userId, amount: 250 }] })).toEqual({ status: 409, body: { error: 'hold_already_reconciled' } });
    expect(await reconcile({ holdId: hold.holdId, mode: 'pro_rata', reason: 'x' })).toEqual({ status: 409, body: { error: 'hold_already_reconciled' } });
    for (const [p, e] of [[a, 98], [b, 102], [c, 50]] as const) {
      const entry = r.body.entries.find((x: { userId: string }) => x.userId === p.userId);
      expect((await claim(p, entry.entryId)).body).toMatchObject({ ok: true, amount: e });
    }
  });

  test('a ledger with no verified chain stack has no pro-rata basis: the hold is split by hand', async () => {
    const { tableId, players: [p] } = await seatedTable(m, [50]);
    await tearStack(db, p!.positionId, 5);
    // ... and its chain made unverifiable (a link rewritten as the owner, past the journal's guard)
    await db.owner.query('alter table game.position_links disable trigger tg_position_links__append_only');
    await db.owner.query("update game.position_links set stack = stack + 1 where player_id = $1", [p!.positionId]);
    await db.owner.query('alter table game.position_links enable trigger tg_position_links__append_only');
    const r = await escape(m, operator, tableId);
    expect(r.body.hold.ledger).toEqual([expect.objectContaining({ chainVerified: false, weight: 0 })]);
    expect(await reconcile({ holdId: r.body.hold.entryId, mode: 'pro_rata', reason: 'x' })).toEqual({ status: 409, body: { error: 'no_pro_rata_basis' } });
    const split = await reconcile({ holdId: r.body.hold.entryId, mode: 'custom', reason: 'by the deposits', split: [{ userId: p!.userId, amount: 50 }] });
    expect(split.body).toMatchObject({ ok: true, entries: [{ userId: p!.userId, amount: 50 }] });
    expect((await claim(p!, split.body.entries[0].entryId)).body).toMatchObject({ amount: 50 });
  });
});

describe('disputes (POST /admin/custody/dispute)', () => {
  test('refusals; a disputed entry is unclaimable by its owner; disputing again replays; claimed entries and holds are not disputable', async () => {
    const { player, entryId } = await freeEntry(70);
    const body = { entryId, reason: 'chargeback on the purchase' };
    expect(await dispute(body, {})).toEqual({ status: 401, body: { error: 'missing_bearer_token' } });
    expect(await dispute(body, player.auth)).toEqual({ status: 403, body: { error: 'admin_required' } });
    expect(await dispute(body, await signedOutOperator(db, m.platform.url('auth')))).toEqual({ status: 403, body: { error: 'admin_session_required' } });
    for (const bad of [{}, { entryId }, { ...body, reason: '' }, { ...body, entryId: -1 }, { ...body, extra: 1 }]) {
      const r = await dispute(bad);
      expect([bad, r.status, r.body.error]).toEqual([bad, 400, 'bad_request']);
    }
    expect(await dispute({ ...body, entryId: '987654321' })).toEqual({ status: 404, body: { error: 'custody_entry_not_found' } });

    const d = await dispute(body);
    expect(d.status).toBe(200);
    expect(d.body).toMatchObject({ ok: true, entryId, userId: player.userId, amount: 70, status: 'disputed', reason: 'chargeback on the purchase', releasedAt: null });
    expect(d.body.releaseMessage.split('\n')).toEqual([
      'poker-platform custody release v1',
      'action: release the disputed custody entry to FREE, claimable by its owner',
      `entry: ${entryId}`, `owner: ${player.userId}`, 'amount: 70000000 base units (70 chips)', 'money-kind: play',
      `dispute: ${d.body.disputeId}`, expect.stringMatching(/^nonce: [0-9a-f]{32}$/),
    ]);
    expect(await claim(player, entryId)).toEqual({ status: 409, body: { error: 'custody_not_claimable' } });
    expect(await m.balance(player.auth)).toBe(100);
    expect((await call(`${m.cage}/api/custody`, { headers: player.auth })).body.entries).toEqual([expect.objectContaining({ entryId, status: 'disputed', claimable: false })]);
    expect(await dispute({ ...body, reason: 'again' })).toEqual({ status: 200, body: { ...d.body, replay: true } });
    const listed = await holds(operator, `?userId=${player.userId}`);
    expect(listed.body.holds[0]).toMatchObject({ entryId, status: 'disputed', dispute: { disputeId: d.body.disputeId, releaseMessage: d.body.releaseMessage } });

    const claimed = await freeEntry(40);
    expect((await claim(claimed.player, claimed.entryId)).status).toBe(200);
    expect(await dispute({ entryId: claimed.entryId, reason: 'late' })).toEqual({ status: 409, body: { error: 'custody_not_disputable' } });
    const hold = await divergentHold();
    expect(await dispute({ entryId: hold.holdId, reason: 'x' })).toEqual({ status: 409, body: { error: 'custody_not_disputable' } });
    // tidy: the arbiter releases, the hold is split
    expect((await release({ entryId, disputeId: d.body.disputeId, signature: arbiter.sign(d.body.releaseMessage) })).status).toBe(200);
    await verifyPendingReleases(db.pool('poker_worker', 1));
    expect((await reconcile({ holdId: hold.holdId, mode: 'pro_rata', reason: 'tidy' })).status).toBe(200);
  });
});

describe('the arbiter\'s release (POST /admin/custody/release)', () => {
  test('the service key and the arbiter\'s signature over this dispute\'s message; a wrong key, another message or a replay are refused; then the owner claims', async () => {
    const { player, entryId } = await freeEntry(90);
    const d = (await dispute({ entryId, reason: 'suspected collusion' })).body;
    const good = { entryId, disputeId: d.disputeId, signature: arbiter.sign(d.releaseMessage) };

    expect(await release(good, {})).toEqual({ status: 401, body: { error: 'invalid_service_key' } });
    expect(await release(good, { 'x-service-key': `${m.service['x-service-key']}x` })).toEqual({ status: 401, body: { error: 'invalid_service_key' } });
    expect(await release(good, operator)).toEqual({ status: 401, body: { error: 'invalid_service_key' } });
    for (const bad of [{}, { ...good, signature: 'ab' }, { ...good, signature: 'zz'.repeat(64) }, { ...good, disputeId: 0 }, { ...good, extra: 1 }]) {
      const r = await release(bad);
      expect([bad, r.status, r.body.error]).toEqual([bad, 400, 'bad_request']);
    }
    // a signature by another key, over another message (another amount, another nonce, the message of a
    // later dispute), or no signature at all: 401 invalid_arbiter_signature
    const other = signer();
    const lines = d.releaseMessage.split('\n');
    for (const signature of [
      other.sign(d.releaseMessage),
      arbiter.sign(lines.map((l: string) => (l.startsWith('amount:') ? 'amount: 900000000 base units (900 chips)' : l)).join('\n')),
      arbiter.sign(lines.map((l: string) => (l.startsWith('nonce:') ? `nonce: ${'0'.repeat(32)}` : l)).join('\n')),
      arbiter.sign(`${d.releaseMessage}\n`),
      '00'.repeat(64),
    ]) {
      expect(await release({ ...good, signature })).toEqual({ status: 401, body: { error: 'invalid_arbiter_signature' } });
    }
    // a dispute of another entry, or none
    expect(await release({ ...good, disputeId: '987654321' })).toEqual({ status: 404, body: { error: 'dispute_not_found' } });
    expect(await release({ ...good, entryId: '987654321' })).toEqual({ status: 404, body: { error: 'custody_entry_not_found' } });
    expect(await claim(player, entryId)).toEqual({ status: 409, body: { error: 'custody_not_claimable' } });

    const r = await release(good);
    // recorded, pending: the entry stays DISPUTED until the worker has verified the signature
    expect(r).toEqual({ status: 200, body: expect.objectContaining({ ok: true, entryId, disputeId: d.disputeId, status: 'disputed', releasedAt: null, verification: 'pending' }) });
    const { rows: [recorded] } = await db.owner.query('select message, encode(signature, \'hex\') as signature, encode(public_key, \'hex\') as key from cage.custody_releases where dispute_id = $1', [d.disputeId]);
    expect(recorded).toEqual({ message: d.releaseMessage, signature: good.signature, key: arbiter.publicKey });
    expect(await claim(player, entryId)).toEqual({ status: 409, body: { error: 'custody_not_claimable' } });
    expect(await release(good)).toEqual({ status: 409, body: { error: 'custody_release_pending' } });
    // the worker's verification against the pinned arbiter key frees it
    expect(await verifyPendingReleases(db.pool('poker_worker', 1))).toEqual([{ releaseId: r.body.releaseId, entryId, valid: true }]);
    expect(await custodyEntry(db, entryId)).toMatchObject({ status: 'free' });
    // replayed: refused, recorded once
    expect(await release(good)).toEqual({ status: 409, body: { error: 'custody_already_released' } });

    // disputed again: a new dispute, a new nonce; the old signature releases nothing
    const again = (await dispute({ entryId, reason: 'new evidence' })).body;
    expect(again.disputeId).not.toBe(d.disputeId);
    expect(await release({ ...good, disputeId: again.disputeId })).toEqual({ status: 401, body: { error: 'invalid_arbiter_signature' } });
    expect(await release({ entryId, disputeId: again.disputeId, signature: arbiter.sign(again.releaseMessage) })).toMatchObject({ status: 200 });
    expect(await verifyPendingReleases(db.pool('poker_worker', 1))).toEqual([expect.objectContaining({ entryId, valid: true })]);

    expect((await claim(player, entryId)).body).toMatchObject({ ok: true, amount: 90 });
    expect(await m.balance(player.auth)).toBe(100 + 90);
    // the audit's check (the arbiter key read from the database, whatever this process's environment): every release holds
    expect(await releaseViolations(db.pool('poker_worker', 1))).toEqual([]);
  });

  test('the worker\'s audit job frees a release it verified, against the pinned key whatever its own environment says; the next runs are clean', async () => {
    const { player, entryId } = await freeEntry(50);
    const d = (await dispute({ entryId, reason: 'one verdict' })).body;
    expect((await release({ entryId, disputeId: d.disputeId, signature: arbiter.sign(d.releaseMessage) })).status).toBe(200);
    // the job as the worker role builds it (no arbiter key in its configuration at all), twice
    const { log, lines } = captureLogger('debug');
    const pgPool = db.pool('poker_worker', 2);
    for (let i = 0; i < 2; i++) {
      await quickAddJob({ pgPool }, 'cage_audit', {});
      await runOnce({ pgPool, logger: workerLogger(log), taskList: { cage_audit: createCageAuditTask(log) } });
    }
    // this file's other tests play hands through the test harness's route, whose hand ends carry no
    // signed record: the audit of causes names those (hand_cause, stack_link), as it must. What this
    // test is about, the releases and receipts, is clean in both runs.
    const divergences = lines.filter((l) => l.msg === 'cage divergence: the audit found violations') as unknown as { invariants: string[] }[];
    expect(divergences.flatMap((l) => l.invariants).filter((i) => !['hand_cause', 'stack_link'].includes(i))).toEqual([]);
    expect(divergences.length + lines.filter((l) => l.msg === 'cage audit clean').length).toBe(2);
    expect(await releaseViolations(db.pool('poker_worker', 1))).toEqual([]);
    expect((await claim(player, entryId)).status).toBe(200);
  });

  test('with no arbiter key pinned: 503 custody_arbiter_not_configured (after the service key); a bad key refuses to boot', async () => {
    const fresh = await createTestDatabase();
    const bare = await startMoneyPlatform(fresh);
    try {
      const url = `${bare.cage}/admin/custody/release`;
      const body = { entryId: '1', disputeId: '1', signature: arbiter.sign('anything') };
      expect(await call(url, { headers: bare.service, body })).toEqual({ status: 503, body: { error: 'custody_arbiter_not_configured' } });
      expect(await call(url, { body })).toEqual({ status: 401, body: { error: 'invalid_service_key' } });
    } finally {
      await bare.platform.stop();
      await fresh.drop();
    }
    for (const [value, problem] of [['zz', /64 hex characters/], ['ab'.repeat(32), /not an ed25519 public key/]] as const) {
      try {
        loadConfig({ CAGE_CUSTODY_ARBITER_PUBKEY: value });
        throw new Error('expected a refusal to boot');
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        expect((err as ConfigError).problems).toEqual([expect.stringMatching(new RegExp(`^CAGE_CUSTODY_ARBITER_PUBKEY: .*${problem.source}`))]);
      }
    }
  });
});

describe('the owners (GET /api/custody, POST /api/custody/claim)', () => {
  test('refused without a token or with a bad query; a player sees only their own', async () => {
    const { player, entryId } = await freeEntry(45);
    const other = await m.player(0);
    expect(await call(`${m.cage}/api/custody`)).toEqual({ status: 401, body: { error: 'missing_bearer_token' } });
    for (const q of ['?limit=0', '?before=x', '?status=free']) {
      const r = await call(`${m.cage}/api/custody${q}`, { headers: player.auth });
      expect([q, r.status, r.body.error]).toEqual([q, 400, 'bad_request']);
    }
    expect((await call(`${m.cage}/api/custody`, { headers: other.auth })).body).toEqual({ entries: [], next: null, holds: [] });
    expect(await claim(other, entryId)).toEqual({ status: 404, body: { error: 'custody_entry_not_found' } });
    expect((await claim(player, entryId)).status).toBe(200);
    expect((await call(`${m.cage}/api/custody`, { headers: player.auth })).body.entries).toEqual([
      expect.objectContaining({ entryId, status: 'claimed', claimable: false, claimedAt: expect.any(String), txHash: expect.stringMatching(/^custody-claim:/) }),
    ]);
  });

  test('concurrent claims of one FREE entry credit the balance once, with one receipt; every answer is the same claim', async () => {
    const { player, entryId } = await freeEntry(120);
    const answers = await Promise.all(Array.from({ length: 8 }, () => claim(player, entryId)));
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    expect(answers.filter((a) => !a.body.replay)).toHaveLength(1);
    expect(new Set(answers.map((a) => a.body.txHash)).size).toBe(1);
    expect(new Set(answers.map((a) => a.body.receipt.signature)).size).toBe(1);
    expect(await m.balance(player.auth)).toBe(100 + 120);
    const { rows: [n] } = await db.owner.query(
      "select (select count(*)::int from cage.cage_entries where kind = 'custody_claim' and ref_id = $1) as entries, (select count(*)::int from cage.receipts where ledger_ref_id = $1) as receipts",
      [answers[0]!.body.txHash],
    );
    expect(n).toEqual({ entries: 1, receipts: 1 });
  });
});

test('the audit names a hold split into more than its pool (a FREE entry written past the functions)', async () => {
  const hold = await divergentHold();
  const client = await db.owner.connect();
  try {
    await client.query('begin');
    await client.query(
      "insert into cage.custody_entries (ref_id, user_id, table_id, money_kind, amount, source_ref_id, hold_id) values ($1, $2, $3, 'play', 5000000, 'forged', $4)",
      [`forged:${randomUUID()}`, hold.players[0].userId, hold.tableId, hold.holdId],
    );
    const { rows } = await client.query('select invariant, subject from cage.audit()');
    expect(rows).toEqual(expect.arrayContaining([
      { invariant: 'custody', subject: `hold:${hold.holdId}` },
      { invariant: 'custody', subject: 'custody:play' },
    ]));
    await client.query('rollback');
  } finally {
    client.release();
  }
  expect(await audit(db.pool('poker_cage', 1))).toEqual([]);
  expect((await reconcile({ holdId: hold.holdId, mode: 'pro_rata', reason: 'tidy' })).status).toBe(200);
});
