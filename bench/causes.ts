// The audit of causes benchmark (issue 31): what the audit's hand check costs per 1,000 hands.
// One cash table, 6 seats with deep stacks, --hands hands played by the engine with random legal
// actions from a fair deal (fair-deal.ts), each record chained and signed with a pinned dealer key and
// ended through game.end_hand as the game role ends them. Then, interleaved over --rounds rounds:
//   baseline  the same hands' signature checks only (what `verify:hand`'s signature check costs),
//   full      the hand and link checks of the audit over every hand (server/audit: read, verify, chain,
//             replay in the engine, compare with the stored stacks), from the start,
// printed as ms per 1,000 hands and their ratio. Then the periodic run: marks moved over the history,
// --new more hands, and one periodic run over only those: its cost follows the new hands, not history.
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { ed25519 } from '@noble/curves/ed25519.js';
import { migrate } from '../server/db/migrate.ts';
import { signerFromPrivateKey, verifyEd25519 } from '../server/crypto/signing.ts';
import { applyAction, isRefusal, legalActions, startHand, type Action, type RakeRule } from '../server/game/poker/engine.ts';
import { DEAL_ALGORITHM, deckOf, fromHex, handCommitmentOf, toHex, type DealReveal } from '../server/game/poker/fair-deal.ts';
import { GENESIS, recordOf, signRecord } from '../server/game/hands/hand-record.ts';
import { eventJson, historyJson } from '../server/game/live/wire.ts';
import { compactHand } from '../server/game/hands/compact.ts';
import { auditOnce } from '../server/audit/run.ts';
import { handCauses } from '../server/audit/hands.ts';
import { stackLinks } from '../server/audit/links.ts';
import { benchDatabase, numericFlags } from './lib/harness.ts';

const USAGE = 'usage: npm run bench -- causes [--hands 2000] [--new 500] [--rounds 3]';
const SEATS = 6;
const RAKE: RakeRule = { percent: 5, cap: 10n, minPot: 0n, requiresFlop: true };
const SETTINGS = { smallBlind: 1, bigBlind: 2, minBuyIn: 40, maxBuyIn: 100000, maxPlayers: 6, rakePercent: 5, rakeCap: 10, rakeMinPot: 0, rakeRequiresFlop: true, turnTimeSec: 30, turnTimerEnabled: true };

interface Table { tableId: string; positions: { seat: number; id: string; stack: bigint }[]; epoch: string; prev: string; handNumber: number }

async function seatTable(owner: pg.Client): Promise<Table> {
  const tableId = `bench-causes-${randomBytes(4).toString('hex')}`;
  await owner.query("select game.create_table($1, 'poker', $2, 'play', null)", [tableId, JSON.stringify(SETTINGS)]);
  const positions: Table['positions'] = [];
  for (let seat = 0; seat < SEATS; seat++) {
    const key = `bench-${randomBytes(6).toString('hex')}`;
    const user = (await owner.query('select gen_random_uuid() as id')).rows[0].id as string;
    await owner.query(`insert into cage.deposit_intents (ref_id, idempotency_key, user_id, table_id, seat_index, amount, money_kind)
                       values ($1, $1, $2, $3, $4, 100000, 'play')`, [key, user, tableId, seat]);
    const { rows } = await owner.query('select player_id::text as id from game.credit_seat($1, $2, $3, $4, 100000)', [key, tableId, user, seat]);
    positions.push({ seat, id: rows[0].id, stack: 100000n });
  }
  // this connection is the table's game process (no public URL), its lease taken on it
  await owner.query('select process_id from game.register_process(null, null)');
  const { rows: [lease] } = await owner.query('select epoch::text from game.take_lease($1, 3600)', [tableId]);
  return { tableId, positions, epoch: lease.epoch, prev: GENESIS, handNumber: 0 };
}

/** One hand: dealt from a fair deal, played by random legal actions, signed, ended through game.end_hand. */
async function playHand(owner: pg.Client, t: Table, signer: ReturnType<typeof signerFromPrivateKey>) {
  t.handNumber += 1;
  const handId = `${t.tableId}:${t.handNumber}`;
  const serverSeed = randomBytes(32);
  const deal: DealReveal = { algorithm: DEAL_ALGORITHM, commitment: handCommitmentOf(serverSeed, { tableId: t.tableId, handNumber: t.handNumber, handId }), serverSeed: toHex(serverSeed), contributions: [] };
  const live = t.positions.filter((p) => p.stack > 0n);
  let state = startHand({
    handId, seats: live.map((p) => ({ seat: p.seat, playerId: p.id, stack: p.stack })), button: live[t.handNumber % live.length]!.seat,
    smallBlind: 1n, bigBlind: 2n, ante: 0n, deck: deckOf(deal, handId), rake: RAKE,
  });
  while (state.status === 'betting') {
    const legal = legalActions(state)!;
    const type = legal.actions[Math.floor(Math.random() * legal.actions.length)]!;
    const action: Action = type === 'bet' || type === 'raise' ? { type, amount: legal.minRaiseTo! } : { type };
    const next = applyAction(state, legal.seat, action, legal.seq);
    if (isRefusal(next)) throw new Error(`engine refused ${type}: ${next.error}`);
    state = next;
  }
  const signed = signRecord(recordOf(state, { tableId: t.tableId, handNumber: t.handNumber, prev: t.prev, deal }), signer);
  const stacks: Record<string, number> = {};
  for (const p of state.result!.stacks) stacks[p.playerId] = Number(p.stack);
  await owner.query('select game.begin_hand($1, $2, $3)', [t.tableId, handId, t.epoch]);
  await owner.query(`select game.end_hand($1, $2, $3, $4, $5, 0, $6, $12::jsonb, '{}', null, $7, $8, $9, $10, $11)`, [
    t.tableId, handId, t.handNumber, JSON.stringify(stacks), state.rake.toString(), compactHand(historyJson(state.history), null), t.epoch,
    JSON.stringify(deal), signed.text, signed.signature, signed.publicKey, eventJson(state.history[0]!),
  ]);
  for (const p of t.positions) p.stack = stacks[p.id] === undefined ? p.stack : BigInt(stacks[p.id]!);
  t.prev = signed.hash;
}

async function baseline(owner: pg.Client): Promise<{ ms: number; hands: number }> {
  const started = performance.now();
  const { rows } = await owner.query<{ record: string; record_signature: string; dealer_key: string }>(
    'select record, record_signature, dealer_key from game.hand_histories where record is not null');
  for (const r of rows) {
    if (!verifyEd25519(new TextEncoder().encode(r.record), fromHex(r.record_signature), fromHex(r.dealer_key))) throw new Error('a signature does not verify');
  }
  return { ms: performance.now() - started, hands: rows.length };
}

async function audited(owner: pg.Client, mode: 'full' | 'periodic') {
  const started = performance.now();
  const run = await auditOnce(owner, { mode, checks: [handCauses, stackLinks] });
  if (run.violations.length) throw new Error(`the audit found ${run.violations.length} violations: ${JSON.stringify(run.violations.slice(0, 3))}`);
  return { ms: performance.now() - started, hands: run.covered.hands, timings: { ...run.timings, 'hand read (SQL)': run.covered.readMs ?? 0 } };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const per1000 = (ms: number, hands: number) => (ms * 1000) / Math.max(hands, 1);

export default async function causes(args: string[]): Promise<number> {
  const flags = numericFlags(args, { hands: 2000, new: 500, rounds: 3 }, USAGE);
  const db = await benchDatabase((m) => console.log(m));
  const owner = new pg.Client({ connectionString: db.url });
  try {
    await migrate(db.url, { log: () => undefined });
    await owner.connect();
    const secret = ed25519.utils.randomSecretKey();
    const signer = signerFromPrivateKey(secret);
    await owner.query("select game_private.pin_dealer_key($1, 'owner')", [signer.publicKeyHex]);
    const table = await seatTable(owner);
    const recordStarted = performance.now();
    for (let i = 0; i < flags.hands; i++) await playHand(owner, table, signer);
    console.log(`recorded ${flags.hands} hands through game.end_hand in ${Math.round(performance.now() - recordStarted)} ms`);
    const base: number[] = [];
    const full: number[] = [];
    for (let r = 0; r < flags.rounds; r++) {
      const b = await baseline(owner);
      const f = await audited(owner, 'full');
      base.push(per1000(b.ms, b.hands));
      full.push(per1000(f.ms, f.hands));
    }
    console.log(`baseline (signature checks only)   ${median(base).toFixed(1)} ms per 1,000 hands`);
    console.log(`audit of causes, hands + links     ${median(full).toFixed(1)} ms per 1,000 hands (${(median(full) / median(base)).toFixed(1)}x the baseline)`);
    const last = await audited(owner, 'full');
    console.log(`  of which (ms, ${last.hands} hands): ${Object.entries(last.timings).map(([k, v]) => `${k} ${Math.round(v)}`).join(', ')}`);
    await audited(owner, 'periodic');
    for (let i = 0; i < flags.new; i++) await playHand(owner, table, signer);
    const periodic = await audited(owner, 'periodic');
    console.log(`periodic run over ${periodic.hands} new hands after ${flags.hands} audited: ${Math.round(periodic.ms)} ms, ${per1000(periodic.ms, periodic.hands).toFixed(1)} ms per 1,000 new hands`);
    return periodic.hands === flags.new ? 0 : 1;
  } finally {
    await owner.end().catch(() => undefined);
    await db.stop();
  }
}
