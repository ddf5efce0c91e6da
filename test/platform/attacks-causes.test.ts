// Issue 31, classes 1 (the dealer's part) and 2, and the bullet "An audit of causes": attacks made as
// an attacker holding the game login's password would make them (connected as poker_game, reading a
// value first, then using it), and what must catch each: a refusal in SQL, or the audit (the one
// list of checks the periodic job and `npm run ops -- audit` run, server/audit/) naming it.
// What the game login can still do on its own (after the parts "procs" and "deck"): register a process
// of its own (with no URL: a URL of its own is refused), take a table's lease for it, commit a deal of
// its own (a seed it drew and sealed under a key of its own: SQL cannot open a seal) and deal it
// through game.deal_hand, then end that hand with any stacks through game.end_hand. No refusal stops
// that; the audit names it. game.begin_hand and game.finish_hand are no longer the game login's.
import { randomBytes, randomUUID } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import pg from 'pg';
import { loginUrl } from '../../server/db/roles.ts';
import { signerFromPrivateKey } from '../../server/crypto/signing.ts';
import { GENESIS, recordOf, signRecord, type HandRecord } from '../../server/game/hands/hand-record.ts';
import { applyAction, isRefusal, legalActions, startHand, type HandState } from '../../server/game/poker/engine.ts';
import { DEAL_ALGORITHM, dealCommitmentOf, deckOf, toHex, type DealReveal } from '../../server/game/poker/fair-deal.ts';
import { sealSeed } from '../../server/game/live/deal-seal.ts';
import type { SealedDeal } from '../../server/game/live/deal-seeds.ts';
import { historyJson } from '../../server/game/live/wire.ts';
import { auditOnce } from '../../server/audit/run.ts';
import { quickAddJob, runOnce } from 'graphile-worker';
import { createCageAuditTask } from '../../tasks/cage_audit.ts';
import { workerLogger } from '../../server/worker/logger.ts';
import { auditLiveness } from '../../server/audit/routes.ts';
import { captureLogger, type LogLine } from '../helpers/logs.ts';
import { startTestPlatform } from '../helpers/platform.ts';
import { fund, userAccount } from '../helpers/cage.ts';
import { playerGrant } from '../helpers/db.ts';
import { resolveSngSettings } from '../../server/tournaments/settings.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { createTable, creditSeat, handEnding, openDeposit } from '../helpers/game.ts';

let db: TestDatabase;
let game: pg.Client;

beforeAll(async () => {
  db = await createTestDatabase();
  game = new pg.Client({ connectionString: loginUrl(db.url, 'poker_game', undefined) });
  await game.connect();
});
afterAll(async () => {
  await game?.end();
  await db?.drop();
});

/** The audit's verdict as an operator reads it (`npm run ops -- audit`: every check, no checkpoint moved). */
async function verdict() {
  const client = await db.owner.connect();
  try {
    return await auditOnce(client, { mode: 'read' });
  } finally {
    client.release();
  }
}

/** A cash table with a victim and an accomplice seated, 200 chips each. */
async function cashTable() {
  const cage = db.pool('poker_cage', 2);
  const tableId = (await createTable(cage)).table_id;
  const seats: { userId: string; playerId: string }[] = [];
  for (const seat of [0, 1]) {
    const u = await userAccount(db.owner);
    await fund(db.owner, u.id, 1000n);
    const deposit = await openDeposit(cage, u.userId, `sit-${randomUUID()}`, tableId, seat, 200n);
    const row = await creditSeat(db.pool('poker_game', 2), deposit.ref_id, tableId, u.userId, seat, 200n);
    seats.push({ userId: u.userId, playerId: String(row.player_id) });
  }
  return { tableId, victim: seats[0]!, accomplice: seats[1]! };
}

/** The attacker's key: the only signing key a thief of the game login's password can hold. */
const attackerKey = signerFromPrivateKey(ed25519.utils.randomSecretKey());
let registered = false;

/**
 * The attacker's own presence and lease on the table, as the game login: a process of its own (a URL
 * of its own is refused: only the operators' list; no URL is allowed), then the table's lease for it.
 */
async function takeTable(tableId: string): Promise<string> {
  if (!registered) {
    await expect(game.query("select process_id from game.register_process('http://attacker.invalid')")).rejects.toMatchObject({ code: 'GMPUL' });
    await game.query('select process_id from game.register_process(null)');
    registered = true;
  }
  const { rows: [lease] } = await game.query('select granted, epoch::text from game.take_lease($1, 3600)', [tableId]);
  expect(lease.granted).toBe(true);
  return lease.epoch;
}

/** A deal the attacker draws: a seed it knows, its (valid) commitment, the seed sealed under its own key. */
interface AttackerDeal { handNumber: number; handId: string; reveal: DealReveal; sealed: SealedDeal }
function drawDeal(tableId: string, handNumber: number): AttackerDeal {
  const handId = `forged-${randomUUID()}`;
  const seed = new Uint8Array(randomBytes(32));
  const commitment = dealCommitmentOf(DEAL_ALGORITHM, seed, { tableId, handNumber, handId });
  return {
    handNumber, handId, reveal: { algorithm: DEAL_ALGORITHM, commitment, serverSeed: toHex(seed), contributions: [] },
    sealed: { algorithm: DEAL_ALGORITHM, handNumber, handId, commitment, sealed: sealSeed(attackerKey, { tableId, handId, commitment }, seed) },
  };
}
/** The deal each table committed for its next hand, as the attacker committed it. */
const committed = new Map<string, AttackerDeal>();

/**
 * Begins a hand the way the game login can (the deal path: server/game/hands/hands.ts): the table
 * holds no committed deal (no room opened it), so the attacker commits one of its own
 * (game.commit_deal), then deals it (game.deal_hand), committing the next one the same way.
 */
async function beginHand(tableId: string, epoch: string): Promise<AttackerDeal> {
  let deal = committed.get(tableId);
  if (!deal) {
    const { rows: [table] } = await game.query('select deal_next from game.tables where table_id = $1', [tableId]);
    expect(table.deal_next).toBeNull();
    deal = drawDeal(tableId, 1);
    await game.query('select game.commit_deal($1, $2, $3::jsonb)', [tableId, epoch, JSON.stringify(deal.sealed)]);
  }
  const next = drawDeal(tableId, deal.handNumber + 1);
  await game.query('select * from game.deal_hand($1, $2, $3, $4::jsonb, $5::jsonb)',
    [tableId, deal.handId, epoch, JSON.stringify({ ...deal.sealed, contributions: [] }), JSON.stringify(next.sealed)]);
  committed.set(tableId, next);
  return deal;
}

const endHand = (tableId: string, handId: string, handNumber: number, stacks: Record<string, number>, epoch: string,
  signed?: { deal: unknown; text: string; signature: string; publicKey: string }) =>
  game.query(
    `select game.end_hand($1, $2, $3, $4, 0, 0, $10, $11::jsonb, '{}', null, $5, $6, $7, $8, $9)`,
    [tableId, handId, handNumber, JSON.stringify(stacks), epoch, signed ? JSON.stringify(signed.deal) : null,
      signed?.text ?? null, signed?.signature ?? null, signed?.publicKey ?? null, handEnding('[]').compact, handEnding('[]').started],
  );

test('class 1: the game login reads no dealer signing key (the function and its table are gone)', async () => {
  await expect(game.query('select game.dealer_private_key($1)', [Buffer.alloc(32, 1)])).rejects.toMatchObject({ code: '42883' });
  const { rows } = await db.owner.query(`select count(*)::int as n from pg_tables where schemaname like 'game%' and tablename = 'dealer_keys'`);
  expect(rows[0].n).toBe(0);
  // what the game login may read of dealer keys: public halves only, pinned by the owner or an operator
  const { rows: keys } = await game.query('select * from game.dealer_public_keys()');
  for (const k of keys) expect(Object.keys(k).sort()).toEqual(['pinned_at', 'pinned_by', 'public_key', 'retired_at']);
});

test('class 2: a hand end written by the game login that moves a victim\'s stack is named by the audit', async () => {
  const t = await cashTable();
  expect(await verdict()).toMatchObject({ violations: [] });
  const epoch = await takeTable(t.tableId);
  // 1. a hand of its own dealt, ended with no record at all
  const hand = await beginHand(t.tableId, epoch);
  const forgedAt = Date.now();
  await endHand(t.tableId, hand.handId, hand.handNumber, { [t.victim.playerId]: 0, [t.accomplice.playerId]: 400 }, epoch);
  // cage.audit() still sums: escrow = live stacks, the books balance
  expect((await db.owner.query('select * from cage.audit()')).rows).toEqual([]);
  const named = await verdict();
  // eslint-disable-next-line no-console
  console.log(`forged hand end named by the audit ${Date.now() - forgedAt} ms after it was written`);
  expect(named.violations).toEqual(expect.arrayContaining([expect.objectContaining({ invariant: 'hand_cause', subject: `hand:${hand.handId}` })]));

  // 2. a record signed by the attacker's own key (the one it can hold), chained to the table's head,
  // its deal the attacker's committed one revealed (the commitment verifies: the attacker drew the seed)
  const hand2 = await beginHand(t.tableId, epoch);
  const record: HandRecord = {
    v: 1, tableId: t.tableId, handNumber: hand2.handNumber, handId: hand2.handId, prev: GENESIS, deal: hand2.reveal, button: 0,
    seats: [{ seat: 0, playerId: t.accomplice.playerId, stack: '400' }], actions: [], board: '', shown: [],
    stacks: [{ seat: 0, stack: '400' }], rake: '0',
  };
  const signed = signRecord(record, attackerKey);
  // (the victim's position was closed as a bust by the first forged end, in its transaction: issue 32)
  await endHand(t.tableId, hand2.handId, hand2.handNumber, { [t.accomplice.playerId]: 400 }, epoch, { deal: hand2.reveal, ...signed });
  const again = await verdict();
  expect(again.violations).toEqual(expect.arrayContaining([
    expect.objectContaining({ invariant: 'hand_signature', subject: `hand:${hand2.handId}` }),
  ]));
});

const RAKE = { percent: 5, cap: 10n, minPot: 0n, requiresFlop: true };

/** The engine plays the attacker's dealt hand (check or call each turn) from the stacks it starts with. */
function played(tableId: string, deal: AttackerDeal, seats: { seat: number; playerId: string; stack: bigint }[]): HandState {
  let state = startHand({ handId: deal.handId, seats, button: 0, smallBlind: 1n, bigBlind: 2n, ante: 0n, deck: deckOf(deal.reveal, deal.handId), rake: RAKE });
  while (state.status === 'betting') {
    const legal = legalActions(state)!;
    const next = applyAction(state, legal.seat, legal.actions.includes('check') ? { type: 'check' } : { type: 'call' }, legal.seq);
    if (isRefusal(next)) throw new Error(`${tableId}: ${next.error}`);
    state = next;
  }
  return state;
}

test('class 2: a played hand of the attacker\'s own deal, its record giving the victim\'s stack to the accomplice, is named (hand_signature, hand_replay)', async () => {
  const t = await cashTable();
  const epoch = await takeTable(t.tableId);
  const hand = await beginHand(t.tableId, epoch);
  // a real hand, by the engine, from the deal the attacker committed (its history is the engine's)
  const state = played(t.tableId, hand, [{ seat: 0, playerId: t.victim.playerId, stack: 200n }, { seat: 1, playerId: t.accomplice.playerId, stack: 200n }]);
  const record = recordOf(state, { tableId: t.tableId, handNumber: hand.handNumber, prev: GENESIS, deal: hand.reveal });
  // ... whose record and stored stacks the engine did not produce: every chip left to the accomplice
  const total = record.stacks.reduce((sum, x) => sum + BigInt(x.stack), 0n);
  record.stacks = [{ seat: 0, stack: '0' }, { seat: 1, stack: total.toString() }];
  const signed = signRecord(record, attackerKey);
  await game.query(
    `select game.end_hand($1, $2, $3, $4, $5, 0, $6, $12::jsonb, '{}', null, $7, $8, $9, $10, $11)`,
    [t.tableId, hand.handId, hand.handNumber, JSON.stringify({ [t.victim.playerId]: 0, [t.accomplice.playerId]: Number(total) }), state.rake.toString(),
      handEnding(historyJson(state.history)).compact, epoch, JSON.stringify(hand.reveal), signed.text, signed.signature, signed.publicKey, handEnding(historyJson(state.history)).started],
  );
  const named = (await verdict()).violations.filter((v) => v.subject === `hand:${hand.handId}`);
  expect(named).toEqual(expect.arrayContaining([
    expect.objectContaining({ invariant: 'hand_signature' }),
    expect.objectContaining({ invariant: 'hand_replay', detail: expect.objectContaining({ problem: expect.stringContaining('stacks') }) }),
  ]));
});

/** One periodic run of the worker's own `cage_audit` job, as poker_worker; its log lines. */
async function periodicRun(target: TestDatabase = db): Promise<LogLine[]> {
  const { log, lines } = captureLogger('debug');
  const pgPool = target.pool('poker_worker', 2);
  await quickAddJob({ pgPool }, 'cage_audit', {});
  await runOnce({ pgPool, logger: workerLogger(log), taskList: { cage_audit: createCageAuditTask(log) } });
  return lines;
}
const key = (v: { invariant: string; subject: string }) => `${v.invariant} ${v.subject}`;

test('class 2 and "nothing executable that production does not call": begin_hand and finish_hand are not the game login\'s; a stack change with no hand history is named', async () => {
  const t = await cashTable();
  const epoch = await takeTable(t.tableId);
  const stacks = JSON.stringify({ [t.victim.playerId]: 0, [t.accomplice.playerId]: 400 });
  // the test-only functions: refused to the game login, even under its own lease
  await expect(game.query('select game.begin_hand($1, $2, $3)', [t.tableId, `nohistory-${randomUUID()}`, epoch])).rejects.toMatchObject({ code: '42501' });
  const hand = await beginHand(t.tableId, epoch);
  await expect(game.query('select * from game.finish_hand($1, $2, $3, 0, $4)', [t.tableId, hand.handId, stacks, epoch])).rejects.toMatchObject({ code: '42501' });
  // the audit's part: the owner ends the hand through finish_hand (the harness's route), standing in
  // for any path that writes a stack without a hand's history; the change is named all the same
  await db.owner.query('select * from game.finish_hand($1, $2, $3, 0, $4)', [t.tableId, hand.handId, stacks, epoch]);
  expect((await verdict()).violations).toEqual(expect.arrayContaining([
    expect.objectContaining({ invariant: 'hand_cause', subject: `hand:${hand.handId}`, detail: expect.objectContaining({ problem: 'a stack changed under a hand that has no history' }) }),
  ]));
});

test('one verdict: the periodic job names what ops audit names, keeps its marks, and records the run', async () => {
  const t = await cashTable();
  const epoch = await takeTable(t.tableId);
  const { handId, handNumber } = await beginHand(t.tableId, epoch);
  const forgedAt = performance.now();
  await endHand(t.tableId, handId, handNumber, { [t.victim.playerId]: 0, [t.accomplice.playerId]: 400 }, epoch);
  const lines = await periodicRun();
  const named = lines.find((l) => l.msg === 'cage divergence: the audit found violations') as (LogLine & { violations: { invariant: string; subject: string }[] }) | undefined;
  // the figure for the closing note: the forged end to the periodic job naming it, when the job runs
  // next (at most one period later: CAGE_AUDIT_CRON, every minute by default)
  // eslint-disable-next-line no-console
  console.log(`the periodic audit named the forged hand end ${Math.round(performance.now() - forgedAt)} ms after it was written (plus the wait for the next period)`);
  expect(named?.violations.map(key)).toContain(`hand_cause hand:${handId}`);
  expect(new Set(named!.violations.map(key))).toEqual(new Set((await verdict()).violations.map(key)));
  // not clean: no mark moved past the forged hand, so the next run names it again
  const { rows: [mark] } = await db.owner.query('select hand_number from cage_private.cause_table_marks where table_id = $1', [t.tableId]);
  expect(mark).toBeUndefined();
  expect(await auditLiveness(db.owner, 60)).toMatchObject({ lastCleanAt: null });
  expect((await periodicRun()).some((l) => l.msg === 'cage divergence: the audit found violations')).toBe(true);
});

test('liveness: a clean periodic run moves the marks; /health of the admin role fails when it is older than three periods', async () => {
  const clean = await createTestDatabase();
  try {
    const lines = await periodicRun(clean);
    expect(lines.some((l) => l.msg === 'cage audit clean')).toBe(true);
    expect(await auditLiveness(clean.owner, 60)).toMatchObject({ stale: false, lastCleanAt: expect.any(String) });
    // the run is recorded with where it left the checkpoints
    const { rows: [run] } = await clean.owner.query('select clean, periodic, checkpoint from cage_private.audit_runs order by id desc limit 1');
    expect(run).toMatchObject({ clean: true, periodic: true, checkpoint: { cageEntryId: expect.anything(), tables: expect.any(Number), positions: expect.any(Number) } });
    const admin = await startTestPlatform({ databaseUrl: clean.url, roles: ['admin'], env: { CAGE_AUDIT_CRON: '* * * * *' } });
    try {
      const health = async () => { const r = await fetch(`${admin.url('admin')}/health`); return { status: r.status, body: await r.json() as Record<string, unknown> }; };
      expect(await health()).toMatchObject({ status: 200, body: { ok: true, audit: { stale: false, periodSeconds: 60 } } });
      // the job stopped three periods and more ago (its rename, a dead worker): /health says so
      await clean.owner.query("update cage_private.audit_runs set ran_at = ran_at - interval '4 minutes'");
      expect(await health()).toMatchObject({ status: 503, body: { ok: false, audit: { stale: true, periodSeconds: 60 } } });
    } finally {
      await admin.stop();
    }
  } finally {
    await clean.drop();
  }
});

const BLINDS = { startingSmallBlind: 10, increaseFactor: 2, levelDurationSeconds: 60, anteStartLevel: null, startingAnte: 0, anteIncreaseFactor: 1 };

test('the bullet "payouts wait for the audit": a Sit-and-Go decided by a forged hand end pays nobody and settles no market', async () => {
  const tableId = `causes-${randomUUID().slice(0, 8)}`;
  const settings = resolveSngSettings({ mode: 'sng', seats: 2, entryFee: 100, rakeFee: 10, startingStack: 1000, blindStructure: BLINDS });
  await db.owner.query("select game.create_table($1, 'poker', $2, 'play', null, null, null, 'sng', 'open')", [tableId, JSON.stringify(settings)]);
  for (let i = 0; i < 2; i++) {
    const u = await userAccount(db.owner);
    await fund(db.owner, u.id, 1000n);
    await db.owner.query('select * from cage.open_tournament_entry($1, $2, $3, null, 100, 120)', [await playerGrant(db.owner, u.userId), `k-${randomUUID()}`, tableId]);
  }
  await db.owner.query("update game.tables set starts_at = now() - interval '1 s' where table_id = $1", [tableId]);
  const worker = db.pool('poker_worker', 1);
  const betting = db.pool('poker_betting', 1);
  await worker.query('select game.tournament_begin_play($1)', [tableId]);
  expect((await betting.query('select status from betting.sync_market($1)', [tableId])).rows[0].status).toBe('open');
  const { rows: entries } = await db.owner.query('select id::text from game.table_players where table_id = $1 order by seat_index', [tableId]);
  const [victim, accomplice] = entries.map((r) => r.id as string);
  // the game login's own lease, a deal of its own, a hand end with no record: the accomplice wins the tournament
  const epoch = await takeTable(tableId);
  const { handId, handNumber } = await beginHand(tableId, epoch);
  await endHand(tableId, handId, handNumber, { [victim!]: 0, [accomplice!]: 2000 }, epoch);
  expect((await db.owner.query('select tournament_state from game.tables where table_id = $1', [tableId])).rows[0].tournament_state).toBe('ended');
  // the audit names the hand and keeps the table's mark; the settlement and the market wait for it
  await periodicRun();
  expect((await verdict()).violations).toEqual(expect.arrayContaining([expect.objectContaining({ invariant: 'hand_cause', subject: `hand:${handId}` })]));
  expect((await worker.query('select tournament_state from cage.settle_tournament($1)', [tableId])).rows[0].tournament_state).toBe('ended');
  expect((await db.owner.query('select count(*)::int as n from cage.payout_intents where table_id = $1', [tableId])).rows[0].n).toBe(0);
  expect((await betting.query('select status from betting.sync_market($1)', [tableId])).rows[0].status).toBe('closed');
});
