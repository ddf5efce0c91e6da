// The hand check of the audit of causes (issue 31; docs/security.md "The audit of causes"): every
// hand after its table's mark (cage.cause_audit_hands) must be
//   (a) signed: its record's signature verifies with a dealer key pinned when the hand ended (and not
//       retired before), and the record's text hashes to the stored hash;       -> hand_signature
//   (b) chained: the record names as `prev` the hash of the table's record before it;  -> hand_chain
//   (c) replayed: the engine, from the revealed deal (fair-deal.ts deckOf) and the record's actions,
//       ends the hand with the record's stacks, rake and board;                   -> hand_replay
//   (d) the cause of the stored stacks: at a cash table each position's `hand` link says what the
//       record says (no link for an unchanged stack, none for a position the record does not name),
//       and the record's starting stack is the position's stack before the hand; at a tournament
//       table each hand starts from the stacks the table's previous hand ended with, and the last
//       hand's stacks are the ones stored.                                        -> hand_cause
// A finished hand with no record is named (hand_cause), unless it ended before records were kept
// (migration 000038): those legacy hands are the sums' alone. An abandoned hand moves no chip: with a
// record (abandoned: true) it still signs and chains, and its stacks are its seats' stacks.
import { createPublicKey, verify as cryptoVerify, type KeyObject } from 'node:crypto';
import type pg from 'pg';
import { replay, type HandState, type RakeRule } from '../game/poker/engine.ts';
import { cardsText, dealCommitmentOf, deckOf, fromHex, type DealReveal } from '../game/poker/fair-deal.ts';
import { GENESIS, hashOf, type HandRecord } from '../game/hands/hand-record.ts';
import type { AuditCheck, AuditScope, Violation } from './types.ts';

interface HandRow {
  table_id: string; mode: string; settings: Record<string, unknown>; mark_number: string | null; mark_hash: string | null;
  mark_stacks: Record<string, string>; hand_id: string; hand_number: string; status: string; ended_at: Date; legacy: boolean;
  deal: DealReveal | null; record: string | null; record_hash: string | null; record_signature: string | null; dealer_key: string | null;
  started: Record<string, unknown> | null; links: Record<string, { delta: string; stack: string }>; before: Record<string, string | null> | null;
  latest: boolean; now_stacks: Record<string, string>;
}

export interface PinnedKey {
  public_key: string;
  pinned_at: Date;
  retired_at: Date | null;
}

/** What the check carries along a table's hands: the chain head and (tournaments) the stacks. */
interface TableState {
  tableId: string;
  handNumber: number;
  hash: string | null;
  stacks: Record<string, string>;
}

type Found = (invariant: string, detail: Record<string, unknown>) => void;

const big = (v: unknown): bigint => BigInt(String(v ?? '0'));

/** The SubjectPublicKeyInfo DER prefix of a raw 32-byte Ed25519 public key (RFC 8410). */
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const keyObjects = new Map<string, KeyObject>();

/** Ed25519 verification by OpenSSL (strict RFC 8032), the key objects kept: the audit verifies every hand. */
function verifiedBy(publicKeyHex: string, payload: string, signatureHex: string): boolean {
  try {
    let key = keyObjects.get(publicKeyHex);
    if (!key) {
      key = createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, Buffer.from(publicKeyHex, 'hex')]), format: 'der', type: 'spki' });
      keyObjects.set(publicKeyHex, key);
    }
    return cryptoVerify(null, Buffer.from(payload, 'utf8'), key, Buffer.from(signatureHex, 'hex'));
  } catch {
    return false;
  }
}

export function signedByPinned(row: { record: string; record_signature: string; dealer_key: string; ended_at: Date }, keys: readonly PinnedKey[]): string | null {
  const key = keys.find((k) => k.public_key === row.dealer_key.toLowerCase());
  if (!key) return `signed with ${row.dealer_key}, which is not a pinned dealer key`;
  if (key.pinned_at > row.ended_at || (key.retired_at && key.retired_at <= row.ended_at)) {
    return `signed with ${row.dealer_key}, which was not in use when the hand ended`;
  }
  return verifiedBy(key.public_key, row.record, row.record_signature) ? null : 'the signature does not verify with the dealer key';
}

function parsed(text: string): HandRecord | null {
  try {
    const r = JSON.parse(text) as HandRecord;
    return r && typeof r === 'object' && r.v === 1 && Array.isArray(r.seats) && Array.isArray(r.stacks) ? r : null;
  } catch {
    return null;
  }
}

function rakeRuleOf(row: HandRow): RakeRule {
  if (row.mode !== 'cash') return { percent: 0, cap: 0n, minPot: 0n, requiresFlop: true };
  const s = row.settings;
  return { percent: typeof s.rakePercent === 'number' ? s.rakePercent : 0, cap: big(s.rakeCap), minPot: big(s.rakeMinPot), requiresFlop: s.rakeRequiresFlop !== false };
}

/** The engine's replay of the record (throws when an action is refused or the deal is not well formed). */
export function replayRecord(record: HandRecord, started: Record<string, unknown>, rake: RakeRule): HandState {
  const deck = deckOf(record.deal, record.handId);
  const blindSeat = (v: unknown) => (v === null || v === undefined ? null : Number(v));
  return replay({
    handId: record.handId, button: record.button,
    seats: record.seats.map((s) => ({ seat: s.seat, playerId: s.playerId, stack: big(s.stack) })),
    smallBlindSeat: blindSeat(started.smallBlindSeat), bigBlindSeat: Number(started.bigBlindSeat),
    smallBlind: big(started.smallBlind), bigBlind: big(started.bigBlind), ante: big(started.ante), deck, rake,
  }, record.actions.map((a) => ({
    seat: a.seat, type: a.action as never, timeout: a.timeout, ...(a.action === 'bet' || a.action === 'raise' ? { amount: big(a.to) } : {}),
  })));
}

/** (c): the engine agrees with the record. */
function checkReplay(row: HandRow, record: HandRecord, found: Found) {
  if (!row.started) return found('hand_replay', { problem: 'the stored history has no hand_started event to replay from' });
  const hand = { tableId: record.tableId, handNumber: record.handNumber, handId: record.handId };
  if (dealCommitmentOf(record.deal.algorithm, fromHex(record.deal.serverSeed), hand) !== record.deal.commitment.toLowerCase()) {
    return found('hand_replay', { problem: 'the revealed server seed does not hash to the commitment' });
  }
  if (row.mode === 'cash' && (big(row.started.smallBlind) !== big(row.settings.smallBlind) || big(row.started.bigBlind) !== big(row.settings.bigBlind ?? 2))) {
    return found('hand_replay', { problem: 'the hand was dealt with blinds other than the table\'s' });
  }
  let state: HandState;
  try {
    state = replayRecord(record, row.started, rakeRuleOf(row));
  } catch (err) {
    return found('hand_replay', { problem: `the engine refuses the record: ${(err as Error).message}` });
  }
  const ended = state.history.find((e) => e.type === 'hand_ended');
  const stacks = ended?.type === 'hand_ended' ? ended.stacks.map((s) => ({ seat: s.seat, stack: s.stack.toString() })) : [];
  const board = state.history.flatMap((e) => (e.type === 'board' ? [cardsText(e.cards)] : [])).join('');
  const differs = [
    state.status !== 'complete' && 'the hand is not over after its actions',
    JSON.stringify(stacks) !== JSON.stringify(record.stacks.map((s) => ({ seat: s.seat, stack: String(s.stack) }))) && 'stacks',
    state.rake.toString() !== String(record.rake) && 'rake', board !== record.board && 'board',
  ].filter(Boolean);
  if (differs.length) found('hand_replay', { problem: `the engine's replay differs from the record in: ${differs.join(', ')}`, replayed: { stacks, rake: state.rake.toString(), board } });
}

/** (d) at a cash table: the positions' links and starting stacks are the record's. */
function checkCashStacks(row: HandRow, record: HandRecord, found: Found) {
  const ends = new Map(record.stacks.map((s) => [s.seat, String(s.stack)]));
  const named = new Set<string>();
  for (const s of record.seats) {
    const position = String(s.playerId);
    named.add(position);
    const start = big(s.stack);
    const end = big(ends.get(s.seat));
    const link = row.links[position];
    if (end !== start && (!link || big(link.stack) !== end || big(link.delta) !== end - start)) {
      found('hand_cause', { problem: 'the stored stack change is not the record\'s', position, record: { start: start.toString(), end: end.toString() }, stored: link ?? null });
    } else if (end === start && link) {
      found('hand_cause', { problem: 'a stack changed that the record leaves unchanged', position, stored: link });
    }
    const before = row.before?.[position];
    if (before === null || before === undefined || big(before) !== start) {
      found('hand_cause', { problem: 'the record\'s starting stack is not the stored stack before the hand', position, record: start.toString(), stored: before ?? null });
    }
  }
  for (const [position, link] of Object.entries(row.links)) {
    if (!named.has(position)) found('hand_cause', { problem: 'a stack changed under this hand whose record does not deal the position in', position, stored: link });
  }
}

/** (d) at a tournament table: each hand starts where the previous ended; the last one's stacks are stored. */
function checkTournamentStacks(row: HandRow, record: HandRecord, table: TableState, found: Found) {
  for (const s of record.seats) {
    const known = table.stacks[String(s.playerId)];
    if (known !== undefined && big(known) !== big(s.stack)) {
      found('hand_cause', { problem: 'the hand starts from a stack the previous hand did not end with', position: String(s.playerId), record: String(s.stack), previous: known });
    }
  }
  const bySeat = new Map(record.seats.map((s) => [s.seat, String(s.playerId)]));
  for (const s of record.stacks) table.stacks[bySeat.get(s.seat) ?? `seat${s.seat}`] = String(s.stack);
  if (!row.latest) return;
  for (const [position, stack] of Object.entries(table.stacks)) {
    const stored = row.now_stacks[position];
    if (stored !== undefined && big(stored) !== big(stack)) {
      found('hand_cause', { problem: 'the stored tournament stack is not the one the table\'s last hand ended with', position, record: stack, stored });
    }
  }
}

function checkAbandoned(record: HandRecord, row: HandRow, found: Found) {
  const starts = JSON.stringify(record.seats.map((s) => ({ seat: s.seat, stack: String(s.stack) })));
  if (JSON.stringify(record.stacks.map((s) => ({ seat: s.seat, stack: String(s.stack) }))) !== starts || String(record.rake) !== '0') {
    found('hand_replay', { problem: 'an abandoned hand\'s record moves chips' });
  }
  if (Object.keys(row.links).length) found('hand_cause', { problem: 'a stack changed under an abandoned hand', stored: row.links });
}

/** One hand, in its table's order: (a) to (d), or the reason it has no record. */
function checkHand(row: HandRow, table: TableState, keys: readonly PinnedKey[], found: Found) {
  if (!row.record || !row.record_signature || !row.dealer_key) {
    if (row.status === 'abandoned' || row.legacy) {
      if (Object.keys(row.links).length) found('hand_cause', { problem: 'a stack changed under a hand with no record', stored: row.links });
      return;
    }
    return found('hand_cause', { problem: 'a hand ended with no signed record', status: row.status, stored: row.links });
  }
  const record = parsed(row.record);
  if (!record || hashOf(row.record) !== row.record_hash) return found('hand_signature', { problem: 'the record is not a hand record whose text hashes to its stored hash' });
  const unsigned = signedByPinned({ ...row, record: row.record, record_signature: row.record_signature, dealer_key: row.dealer_key }, keys);
  if (unsigned) found('hand_signature', { problem: unsigned });
  const expected = table.hash ?? GENESIS;
  if (record.prev !== expected) found('hand_chain', { problem: 'the record does not extend the table\'s chain', prev: record.prev, head: expected });
  table.hash = row.record_hash;
  if (record.handId !== row.hand_id || record.tableId !== row.table_id || String(record.handNumber) !== String(row.hand_number)) {
    found('hand_signature', { problem: 'the record is another hand\'s' });
  }
  if ((record as { abandoned?: boolean }).abandoned === true || row.status === 'abandoned') return checkAbandoned(record, row, found);
  checkReplay(row, record, found);
  if (row.mode === 'cash') checkCashStacks(row, record, found);
  else checkTournamentStacks(row, record, table, found);
}

/** Hands checked between two turns of the event loop. */
const YIELD_EVERY = 100;

/** The hands after the marks, checked table by table in order; what was covered goes to scope.covered. */
export async function checkHands(client: pg.ClientBase, scope: AuditScope, keys: readonly PinnedKey[]): Promise<Violation[]> {
  const read = performance.now();
  const { rows } = await client.query<HandRow>('select * from cage.cause_audit_hands($1, $2)', [scope.mode === 'full', scope.limit]);
  scope.covered.readMs = (scope.covered.readMs ?? 0) + performance.now() - read;
  const tables = new Map<string, TableState>();
  const violations: Violation[] = [];
  for (const [i, row] of rows.entries()) {
    // the audit shares its process with the roles `npm start` runs (the game's rooms among them): a
    // batch of 20,000 signatures and replays checked in one go held their event loop for seconds
    // (issue 33's soak: an action answered 2.4 s late once a minute); every 100 hands it lets them run
    if (i % YIELD_EVERY === YIELD_EVERY - 1) await new Promise((resolve) => setImmediate(resolve));
    let table = tables.get(row.table_id);
    if (!table) {
      table = { tableId: row.table_id, handNumber: Number(row.mark_number ?? -1), hash: row.mark_hash, stacks: { ...row.mark_stacks } };
      tables.set(row.table_id, table);
    }
    checkHand(row, table, keys, (invariant, detail) => {
      scope.covered.dirty.add(row.table_id);
      violations.push({ invariant, subject: `hand:${row.hand_id}`, detail: { tableId: row.table_id, handNumber: String(row.hand_number), ...detail } });
    });
    table.handNumber = Math.max(table.handNumber, Number(row.hand_number));
  }
  scope.covered.hands += rows.length;
  for (const t of tables.values()) scope.covered.tables.push({ table_id: t.tableId, hand_number: t.handNumber, record_hash: t.hash, stacks: t.stacks });
  return violations;
}

export const handCauses: AuditCheck = {
  name: 'hand_causes',
  snapshot: true,
  async run(client, scope) {
    const { rows: keys } = await client.query<PinnedKey>('select public_key, pinned_at, retired_at from cage.audit_dealer_keys()');
    return checkHands(client, scope, keys);
  },
};
