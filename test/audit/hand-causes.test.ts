// The hand check of the audit of causes (server/audit/hands.ts, issue 31) on hands ended through
// game.end_hand as the game role ends them: a played hand signed with the pinned key is clean; the
// dealer's own key cannot make stacks the engine did not (hand_replay); an abandoned hand's record
// (abandoned: true) chains and moves no chip; a hand with no record is legacy only before records
// were kept (migration 000038).
import { randomBytes, randomUUID } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { auditOnce } from '../../server/audit/run.ts';
import { handCauses } from '../../server/audit/hands.ts';
import { stackLinks } from '../../server/audit/links.ts';
import { signerFromPrivateKey } from '../../server/crypto/signing.ts';
import { applyAction, isRefusal, legalActions, startHand, type HandState } from '../../server/game/poker/engine.ts';
import { dealCommitmentOf, deckOf, toHex, DEAL_ALGORITHM, type DealReveal } from '../../server/game/poker/fair-deal.ts';
import { GENESIS, recordOf, signRecord, type HandRecord } from '../../server/game/hands/hand-record.ts';
import { historyJson } from '../../server/game/live/wire.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { createTable, creditSeat, newKey, handEnding, openDepositsAs } from '../helpers/game.ts';

let db: TestDatabase;
const signer = signerFromPrivateKey(ed25519.utils.randomSecretKey());
const RAKE = { percent: 5, cap: 10n, minPot: 0n, requiresFlop: true };

beforeAll(async () => {
  db = await createTestDatabase();
  openDepositsAs(db.owner);
  await db.owner.query("select game_private.pin_dealer_key($1, 'owner')", [signer.publicKeyHex]);
});
afterAll(async () => {
  openDepositsAs(undefined);
  await db?.drop();
});

async function hands(table: string) {
  const client = await db.owner.connect();
  try {
    const run = await auditOnce(client, { mode: 'full', checks: [handCauses, stackLinks] });
    return run.violations.filter((v) => JSON.stringify(v).includes(table));
  } finally {
    client.release();
  }
}

async function seated() {
  const game = db.pool('poker_game', 2);
  const t = await createTable(db.pool('poker_cage', 1));
  const a = String((await creditSeat(game, newKey(), t.table_id, randomUUID(), 0, 200n)).player_id);
  const b = String((await creditSeat(game, newKey(), t.table_id, randomUUID(), 1, 200n)).player_id);
  return { tableId: t.table_id, a, b, epoch: await db.leaseEpoch(t.table_id), prev: GENESIS, n: 0 };
}
type Table = Awaited<ReturnType<typeof seated>>;

/** The table's next hand played by the engine (the first legal action each turn, a bet when it may), from a fair deal. */
function play(t: Table, stacks: [bigint, bigint]): { state: HandState; deal: DealReveal; handId: string } {
  const handId = `h-${randomUUID()}`;
  const seed = randomBytes(32);
  // the v2 commitment names the hand it is drawn for (table, number, id)
  const commitment = dealCommitmentOf(DEAL_ALGORITHM, seed, { tableId: t.tableId, handNumber: t.n + 1, handId });
  const deal: DealReveal = { algorithm: DEAL_ALGORITHM, commitment, serverSeed: toHex(seed), contributions: [] };
  let state = startHand({
    handId, seats: [{ seat: 0, playerId: t.a, stack: stacks[0] }, { seat: 1, playerId: t.b, stack: stacks[1] }], button: 0,
    smallBlind: 1n, bigBlind: 2n, ante: 0n, deck: deckOf(deal, handId), rake: RAKE,
  });
  while (state.status === 'betting') {
    const legal = legalActions(state)!;
    const next = applyAction(state, legal.seat, legal.actions.includes('check') ? { type: 'check' } : { type: 'call' }, legal.seq);
    if (isRefusal(next)) throw new Error(next.error);
    state = next;
  }
  return { state, deal, handId };
}

async function end(t: Table, handId: string, record: HandRecord, stacks: Record<string, number>, rake: bigint, history: string) {
  const signed = signRecord(record, signer);
  // the hand begins as the owner (game.begin_hand, the harness's route: no longer the game login's):
  // what is checked here is the hand's end, which the game login writes as the game role does
  await db.owner.query('select game.begin_hand($1, $2, $3)', [t.tableId, handId, t.epoch]);
  const ending = handEnding(history);
  await db.pool('poker_game', 1).query(`select game.end_hand($1, $2, $3, $4, $5, 0, $6, $7::jsonb, '{}', null, $8, $9, $10, $11, $12)`, [
    t.tableId, handId, record.handNumber, JSON.stringify(stacks), rake.toString(), ending.compact, ending.started, t.epoch, JSON.stringify(record.deal), signed.text, signed.signature, signed.publicKey,
  ]);
  t.prev = signed.hash;
}

test('a played hand signed with the pinned key is clean; the dealer\'s own key cannot sign stacks the engine did not make', async () => {
  const t = await seated();
  const h = play(t, [200n, 200n]);
  const record = recordOf(h.state, { tableId: t.tableId, handNumber: ++t.n, prev: t.prev, deal: h.deal });
  const stacks = Object.fromEntries(h.state.result!.stacks.map((s) => [s.playerId, Number(s.stack)]));
  await end(t, h.handId, record, stacks, h.state.rake, historyJson(h.state.history));
  expect(await hands(t.tableId)).toEqual([]);

  // the next hand: the dealer signs a record that gives seat 1 the pot it lost (or won), chips conserved
  const h2 = play(t, [BigInt(stacks[t.a]!), BigInt(stacks[t.b]!)]);
  const r2 = recordOf(h2.state, { tableId: t.tableId, handNumber: ++t.n, prev: t.prev, deal: h2.deal });
  const total = r2.stacks.reduce((s, x) => s + BigInt(x.stack), 0n);
  r2.stacks = [{ seat: 0, stack: '0' }, { seat: 1, stack: total.toString() }];
  await end(t, h2.handId, r2, { [t.a]: 0, [t.b]: Number(total) }, h2.state.rake, historyJson(h2.state.history));
  expect(await hands(t.tableId)).toEqual([expect.objectContaining({ invariant: 'hand_replay', subject: `hand:${h2.handId}` })]);
});

test('an abandoned hand\'s record chains and moves no chip; one that moves chips is named', async () => {
  const t = await seated();
  const abandoned = async (moved: boolean) => {
    const handId = `a-${randomUUID()}`;
    const record = {
      v: 1, tableId: t.tableId, handNumber: ++t.n, handId, prev: t.prev, abandoned: true,
      deal: { algorithm: DEAL_ALGORITHM, commitment: '0'.repeat(64), serverSeed: '1'.repeat(64), contributions: [] }, button: 0,
      seats: [{ seat: 0, playerId: t.a, stack: '200' }, { seat: 1, playerId: t.b, stack: '200' }], actions: [], board: '', shown: [],
      stacks: [{ seat: 0, stack: moved ? '100' : '200' }, { seat: 1, stack: moved ? '300' : '200' }], rake: '0',
    } as HandRecord;
    const signed = signRecord(record, signer);
    await db.owner.query(`insert into game.hand_histories (hand_id, table_id, hand_number, status, history, ended_at, deal, record, record_hash, record_signature, dealer_key)
                          values ($1, $2, $3, 'abandoned', '[]', now(), $4, $5, $6, $7, $8)`,
    [handId, t.tableId, record.handNumber, JSON.stringify(record.deal), signed.text, signed.hash, signed.signature, signed.publicKey]);
    t.prev = signed.hash;
    return handId;
  };
  await abandoned(false);
  expect(await hands(t.tableId)).toEqual([]);
  const bad = await abandoned(true);
  expect(await hands(t.tableId)).toEqual([expect.objectContaining({ invariant: 'hand_replay', subject: `hand:${bad}` })]);
});

test('a hand with no record is legacy before records were kept (the sums\' alone), named after', async () => {
  const t = await seated();
  const since = (await db.owner.query<{ since: Date }>('select records_since as since from cage_private.cause_audit_settings')).rows[0]!.since;
  const insert = (handId: string, n: number, endedAt: Date) => db.owner.query(
    `insert into game.hand_histories (hand_id, table_id, hand_number, status, history, started_at, ended_at) values ($1, $2, $3, 'finished', '[]', $4, $4)`,
    [handId, t.tableId, n, endedAt]);
  await insert(`legacy-${randomUUID()}`, 1, new Date(since.getTime() - 60_000));
  expect(await hands(t.tableId)).toEqual([]);
  const late = `late-${randomUUID()}`;
  await insert(late, 2, new Date());
  expect(await hands(t.tableId)).toEqual([expect.objectContaining({ invariant: 'hand_cause', subject: `hand:${late}` })]);
});

