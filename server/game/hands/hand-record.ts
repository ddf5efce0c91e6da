// A hand's signed record (issue 23; docs/dealer.md, "Histories that cannot be rewritten"): what the
// hand was, in canonical JSON (server/crypto/signing.ts), chained to the table's previous record by
// its hash and signed with the dealer's key. The record holds what every player may see once the
// hand is over (the revealed deal, the board, the actions, the shown cards, the stacks), never a
// hole card nobody showed: anyone dealt in can check it against their own view of the hand, and the
// revealed seeds give the rest of the deck to whoever wants it (docs/dealer.md says why that is the
// price of a deal checkable offline).
import { createHash } from 'node:crypto';
import type { Ed25519Signer } from '../../crypto/signing.ts';
import { cardsText, type DealReveal } from '../poker/fair-deal.ts';
import type { HandState } from '../poker/engine.ts';

export const RECORD_VERSION = 1;
/** The `prev` of a table's first record. */
export const GENESIS = '0'.repeat(64);

export interface HandRecord {
  v: typeof RECORD_VERSION;
  tableId: string;
  handNumber: number;
  handId: string;
  /** hex SHA-256 of the table's previous record (GENESIS for its first). */
  prev: string;
  deal: DealReveal;
  button: number;
  seats: { seat: number; playerId: string; stack: string }[];
  actions: { seat: number; action: string; to: string; timeout: boolean }[];
  board: string;
  shown: { seat: number; cards: string }[];
  stacks: { seat: number; stack: string }[];
  rake: string;
  /**
   * A committed deal never played to its end (a restart, an unload, a force-end: issue 31). Its deal
   * is revealed all the same; no card is dealt in the record (button -1, no actions, board or shown
   * cards), `seats` are the players holding funded seats with their stacks, and `stacks` are the
   * same stacks with rake "0": no chip moved.
   */
  abandoned?: true;
}

/** The record of a finished hand. */
export function recordOf(hand: HandState, at: { tableId: string; handNumber: number; prev: string; deal: DealReveal }): HandRecord {
  const record: HandRecord = {
    v: RECORD_VERSION, tableId: at.tableId, handNumber: at.handNumber, handId: hand.handId, prev: at.prev, deal: at.deal,
    button: hand.button, seats: [], actions: [], board: '', shown: [], stacks: [], rake: hand.rake.toString(),
  };
  for (const e of hand.history) {
    if (e.type === 'hand_started') record.seats = e.seats.map((s) => ({ seat: s.seat, playerId: s.playerId, stack: s.stack.toString() }));
    else if (e.type === 'action') record.actions.push({ seat: e.seat, action: e.action, to: e.to.toString(), timeout: e.timeout });
    else if (e.type === 'board') record.board += cardsText(e.cards);
    else if (e.type === 'show') record.shown.push({ seat: e.seat, cards: cardsText(e.cards) });
    else if (e.type === 'hand_ended') record.stacks = e.stacks.map((s) => ({ seat: s.seat, stack: s.stack.toString() }));
  }
  return record;
}

/** The record of an abandoned deal (see HandRecord.abandoned). */
export function abandonedRecord(at: {
  tableId: string; handNumber: number; handId: string; prev: string; deal: DealReveal; seats: { seat: number; playerId: string; stack: string }[];
}): HandRecord {
  return {
    v: RECORD_VERSION, abandoned: true, tableId: at.tableId, handNumber: at.handNumber, handId: at.handId, prev: at.prev, deal: at.deal,
    button: -1, seats: at.seats, actions: [], board: '', shown: [], stacks: at.seats.map((s) => ({ seat: s.seat, stack: s.stack })), rake: '0',
  };
}

/**
 * The record's canonical JSON: the same text as canonicalJson (keys sorted, no spaces), written by
 * JSON.stringify with each object's keys re-inserted in order, several times faster on a record (it
 * is built for every hand). A record holds only strings, numbers, booleans, arrays and plain objects,
 * where the two agree (a test checks them on recorded hands).
 */
export const recordText = (record: HandRecord): string => JSON.stringify(record, sortedKeys);

function sortedKeys(_key: string, value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const sorted: Record<string, unknown> = {};
  for (const k of Object.keys(value).sort()) sorted[k] = (value as Record<string, unknown>)[k];
  return sorted;
}

export const hashOf = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

/** A record as it is stored and shown: its exact text, that text's hash, the dealer's signature over the text. */
export interface SignedRecord {
  text: string;
  hash: string;
  signature: string;
  publicKey: string;
}

export function signRecord(record: HandRecord, signer: Ed25519Signer): SignedRecord {
  const text = recordText(record);
  return {
    text, hash: hashOf(text),
    signature: Buffer.from(signer.sign(new TextEncoder().encode(text))).toString('hex'),
    publicKey: signer.publicKeyHex,
  };
}
