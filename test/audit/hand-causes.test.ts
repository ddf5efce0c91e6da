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
import { createTable, creditSeat, newKey, handEnding, openDepositsAs, verifyChain } from '../helpers/game.ts';

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


/** Plays and ends the table's next hand as the game role does; its id and the stacks it left. */
async function playNext(t: Table, stacks: [bigint, bigint]) {
  const h = play(t, stacks);
  const record = recordOf(h.state, { tableId: t.tableId, handNumber: ++t.n, prev: t.prev, deal: h.deal });
  const after = Object.fromEntries(h.state.result!.stacks.map((s) => [s.playerId, Number(s.stack)]));
  await end(t, h.handId, record, after, h.state.rake, historyJson(h.state.history));
  return { handId: h.handId, stacks: [BigInt(after[t.a]!), BigInt(after[t.b]!)] as [bigint, bigint] };
}

describe('a hand\'s links carried by its row (issue 33, migration 000058)', () => {
  test('none is a row of game.position_links; the chain reads them in order, hashed as before; the audit is clean, and names a link changed or taken out of a row', async () => {
    const t = await seated();
    const ids: string[] = [];
    // what each hand moved (a split pot moves no stack, and writes no link): the expected links
    const expected: { players: string[]; seqs: number[]; stacks: string[] }[] = [];
    const seq = { [t.a]: 1, [t.b]: 1 } as Record<string, number>;
    const moved: Record<string, number[]> = { [t.a]: [], [t.b]: [] };
    let stacks: [bigint, bigint] = [200n, 200n];
    // three hands at least, until one moved both stacks
    for (let i = 0; i < 3 || !expected.some((e) => e.players.length === 2); i++) {
      const next = await playNext(t, stacks);
      ids.push(next.handId);
      const changed = [0, 1].filter((k) => next.stacks[k] !== stacks[k]).map((k) => ({ p: [t.a, t.b][k]!, stack: next.stacks[k]!.toString() }))
        .sort((x, y) => Number(BigInt(x.p) - BigInt(y.p)));
      for (const c of changed) moved[c.p]!.push(i + 1);
      expected.push({ players: changed.map((c) => c.p), seqs: changed.map((c) => (seq[c.p] = seq[c.p]! + 1)), stacks: changed.map((c) => c.stack) });
      stacks = next.stacks;
    }
    expect((await db.owner.query('select count(*)::int as n from game.position_links where ref_id = any($1)', [ids])).rows[0].n).toBe(0);
    const { rows } = await db.owner.query(
      'select hand_number, link_players, link_seqs, link_stacks from game.hand_histories where hand_id = any($1) order by hand_number', [ids]);
    expect(rows.map((r) => ({ players: (r.link_players ?? []).map(String), seqs: r.link_seqs ?? [], stacks: (r.link_stacks ?? []).map(String) })))
      .toEqual(expected);
    const { rows: [pa] } = await db.owner.query('select first_hand, last_hand from game.table_players where id = $1', [t.a]);
    // the first hand that moved the stack; no last hand while the position is open (its hand links
    // may be in any hand of the table from its first: a hand end does not rewrite the row's last column)
    expect(pa).toEqual({ first_hand: moved[t.a]!.length ? BigInt(moved[t.a]![0]!) : null, last_hand: null });
    // the chain from both places, recomputed from its genesis: the buy-in, then each hand that moved
    // the stack; the head is the seat's
    for (const p of [t.a, t.b]) {
      const chain = await verifyChain(db.owner, BigInt(p));
      expect(chain.ok).toBe(true);
      expect(chain.links.map((l) => [l.event, l.ref_id])).toEqual([['buy_in', expect.any(String)], ...moved[p]!.map((n) => ['hand', ids[n - 1]])]);
    }
    expect(await hands(t.tableId)).toEqual([]);

    // an attacker with the owner's hands on the row: a link's stack changed is named
    const target = ids[expected.findIndex((e) => e.players.length === 2)]!;
    await db.owner.query('update game.hand_histories set link_stacks[1] = link_stacks[1] + 1 where hand_id = $1', [target]);
    expect(await hands(t.tableId)).not.toEqual([]);
    await db.owner.query('update game.hand_histories set link_stacks[1] = link_stacks[1] - 1 where hand_id = $1', [target]);
    expect(await hands(t.tableId)).toEqual([]);
    // a link taken out of its row (the stack change unexplained) is named too
    const { rows: [kept] } = await db.owner.query('select link_players, link_seqs, link_deltas, link_stacks, link_hashes from game.hand_histories where hand_id = $1', [target]);
    await db.owner.query(`update game.hand_histories set link_players = link_players[2:2], link_seqs = link_seqs[2:2], link_deltas = link_deltas[2:2],
                            link_stacks = link_stacks[2:2], link_hashes = link_hashes[2:2] where hand_id = $1`, [target]);
    expect(await hands(t.tableId)).not.toEqual([]);
    await db.owner.query('update game.hand_histories set link_players = $2, link_seqs = $3, link_deltas = $4, link_stacks = $5, link_hashes = $6 where hand_id = $1',
      [target, kept.link_players, kept.link_seqs, kept.link_deltas, kept.link_stacks, kept.link_hashes]);
    expect(await hands(t.tableId)).toEqual([]);
    // the row's arrays come together, one entry per link
    await expect(db.owner.query('update game.hand_histories set link_seqs = link_seqs[1:1] where hand_id = $1', [target]))
      .rejects.toMatchObject({ code: '23514' });
  });

  test('hand links stored as rows (before the hand rows carried them) read with the new ones: the same chain, a clean audit', async () => {
    const t = await seated();
    // two hands that move the stacks (a split pot moves none and makes no link)
    const moving = async (stacks: [bigint, bigint]) => {
      for (;;) {
        const next = await playNext(t, stacks);
        if (next.stacks[0] !== stacks[0]) return next;
        stacks = next.stacks;
      }
    };
    const first = await moving([200n, 200n]);
    const second = await moving(first.stacks);
    // the first hand's links as an older release stored them: rows naming the hand, its row carrying none
    await db.owner.query('alter table game.position_links disable trigger tg_position_links__append_only');
    try {
      await db.owner.query(`insert into game.position_links (player_id, seq, event, delta, stack, ref_id, prev_hash, hash, created_at)
        select c.player_id, c.seq, c.event, c.delta, c.stack, c.ref_id, c.prev_hash, c.hash, c.created_at
          from unnest($2::bigint[]) p (id) cross join lateral game_private.position_chain(p.id, 0, null) c where c.ref_id = $1`, [first.handId, [t.a, t.b]]);
    } finally {
      await db.owner.query('alter table game.position_links enable trigger tg_position_links__append_only');
    }
    await db.owner.query(`update game.hand_histories set link_players = null, link_seqs = null, link_deltas = null, link_stacks = null, link_hashes = null
                           where hand_id = $1`, [first.handId]);
    for (const p of [t.a, t.b]) {
      const chain = await verifyChain(db.owner, BigInt(p));
      expect(chain.ok).toBe(true);
      expect(chain.links.map((l) => l.ref_id).slice(1)).toEqual([first.handId, second.handId]);
    }
    expect(await hands(t.tableId)).toEqual([]);
  });

  test('the periodic audit marks each position with the hand of its last link read, and its next run reads from there', async () => {
    const t = await seated();
    let { stacks } = await playNext(t, [200n, 200n]);
    ({ stacks } = await playNext(t, stacks));
    const periodic = async () => {
      const client = await db.owner.connect();
      try {
        return await auditOnce(client, { mode: 'periodic', checks: [handCauses, stackLinks] });
      } finally {
        client.release();
      }
    };
    const run1 = await periodic();
    expect(run1.violations.filter((v) => JSON.stringify(v).includes(t.tableId))).toEqual([]);
    const marks = async () => (await db.owner.query(
      'select player_id::text, seq, hand_number from cage_private.cause_position_marks where player_id = any($1::bigint[]) order by player_id', [[t.a, t.b]])).rows;
    // each mark: the position's chain length, and the last hand that moved its stack (none: null)
    const heads = async () => (await db.owner.query(
      `select p.id::text as player_id, p.chain_length as seq,
              (select max(h.hand_number) from game.hand_histories h where h.table_id = p.table_id and p.id = any (h.link_players)) as hand_number
         from game.table_players p where p.id = any($1::bigint[]) order by p.id`, [[t.a, t.b]])).rows;
    expect(await marks()).toEqual(await heads());
    // played until a hand moves both stacks (a split pot moves none)
    for (let moved = false; !moved;) {
      const next = await playNext(t, stacks);
      moved = next.stacks[0] !== stacks[0];
      stacks = next.stacks;
    }
    const run2 = await periodic();
    expect(run2.violations.filter((v) => JSON.stringify(v).includes(t.tableId))).toEqual([]);
    // the second run read only the links after the marks: the last hand's, from the hand rows after the first run's
    expect(run2.covered.positions.filter((p) => p.player_id === t.a || p.player_id === t.b)).toEqual(
      (await heads()).map((h) => expect.objectContaining({ player_id: h.player_id, seq: h.seq, hand_number: String(h.hand_number) })));
    expect(await marks()).toEqual(await heads());
  });
});
