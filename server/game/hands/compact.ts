// A finished hand's compact history (issue 33): its events and its result (the hand_result as sent)
// in ONE value the game process compresses, stored as bytea that Postgres never parses nor compresses
// again (db/migrations/000053_compact_history.sql: storage external, the row kept inline). Before, the
// history and the result went in as jsonb: Postgres parsed about 5 KB of JSON per hand and pglz
// compressed it again into TOAST.
//
// Format 1: byte 0 = 1, bytes 1-4 = the inflated length (unsigned, big-endian), then raw deflate
// (node:zlib, level 6) of the UTF-8 text `{"history":[...],"result":{...}}`, with a preset dictionary:
// compact-dictionary-1.txt, 8 KiB of hands as stored (ids, seeds and keys blanked), which a hand's
// text refers back to from its first byte (a hand of 5.3 KB deflates to about 1.3 KB alone, 0.8 KB
// with it). The dictionary is part of the format: its bytes never change (pinned by their SHA-256
// below, checked when this module loads); another dictionary is another format byte. SQL checks the shape
// (game_private.compact_valid: the format byte, 6 bytes to 64 KiB, an inflated length of 2 bytes to
// 1 MiB); a reader inflates at most the length the header declares, so no stored value makes it
// inflate more (docs/decisions.md, "Issue 33: a compact hand history", says why this codec).
//
// Readers answer what they answered when the history was jsonb, byte for byte: the parsed objects'
// keys are put in jsonb's order (shorter keys first, then bytewise), which is the order Postgres gave
// them back in. A hand stored before (history and result as jsonb, no compact value) reads as it did.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { deflateRawSync, inflateRawSync } from 'node:zlib';

export const COMPACT_FORMAT = 1;
const DICTIONARY_SHA256 = 'f71e02331c336567e7acb7280da6364b6f178fd4ea7cac0837b9327c0d789531';
/** Format 1's preset dictionary: a changed byte would make every stored hand unreadable, so a changed file stops the process here. */
export const COMPACT_DICTIONARY = readFileSync(new URL('./compact-dictionary-1.txt', import.meta.url));
if (createHash('sha256').update(COMPACT_DICTIONARY).digest('hex') !== DICTIONARY_SHA256) {
  throw new Error('server/game/hands/compact-dictionary-1.txt is not the dictionary of compact format 1 (its SHA-256 differs): stored hands would not inflate');
}
const HEADER = 5;
/** What SQL accepts (game_private.compact_valid). */
export const MAX_COMPACT_BYTES = 65536;
export const MAX_INFLATED_BYTES = 1 << 20;

/** The compact value of a hand's history (wire.ts historyJson) and its hand_result as sent (JSON text). */
export function compactHand(historyJson: string, resultJson: string | null): Buffer {
  const text = Buffer.from(`{"history":${historyJson},"result":${resultJson ?? 'null'}}`, 'utf8');
  const body = deflateRawSync(text, { level: 6, dictionary: COMPACT_DICTIONARY });
  const out = Buffer.allocUnsafe(HEADER + body.length);
  out[0] = COMPACT_FORMAT;
  out.writeUInt32BE(text.length, 1);
  body.copy(out, HEADER);
  return out;
}

/** A hand's events and result as stored (whichever form its row holds). */
export interface StoredHand {
  history: Record<string, unknown>[];
  result: Record<string, unknown> | null;
  /** False when the row's compact value does not inflate to a history (written so by no game process). */
  readable: boolean;
}

const ASCII = /^[\x00-\x7f]*$/;
/** jsonb's order of keys: by length in bytes, then bytewise (the events' keys are ASCII: compared as strings). */
const jsonbKeyOrder = (a: string, b: string) => (ASCII.test(a) && ASCII.test(b)
  ? a.length - b.length || (a < b ? -1 : a > b ? 1 : 0)
  : Buffer.byteLength(a) - Buffer.byteLength(b) || Buffer.compare(Buffer.from(a), Buffer.from(b)));

/** JSON.parse's reviver: each object's keys in jsonb's order. */
function jsonbOrdered(_key: string, value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const keys = Object.keys(value);
  const ordered: Record<string, unknown> = {};
  for (const k of keys.sort(jsonbKeyOrder)) ordered[k] = (value as Record<string, unknown>)[k];
  return ordered;
}

/** The hand a compact value holds, or null when it is not one this format reads. */
export function readCompact(compact: Uint8Array): { history: Record<string, unknown>[]; result: Record<string, unknown> | null } | null {
  const buf = Buffer.from(compact.buffer, compact.byteOffset, compact.byteLength);
  if (buf.length <= HEADER || buf.length > MAX_COMPACT_BYTES || buf[0] !== COMPACT_FORMAT) return null;
  const length = buf.readUInt32BE(1);
  if (length < 2 || length > MAX_INFLATED_BYTES) return null;
  try {
    const text = inflateRawSync(buf.subarray(HEADER), { dictionary: COMPACT_DICTIONARY, maxOutputLength: length });
    if (text.length !== length) return null;
    const parsed = JSON.parse(text.toString('utf8'), jsonbOrdered) as { history?: unknown; result?: unknown };
    if (!Array.isArray(parsed.history)) return null;
    const result = parsed.result !== null && typeof parsed.result === 'object' ? (parsed.result as Record<string, unknown>) : null;
    return { history: parsed.history as Record<string, unknown>[], result };
  } catch {
    // not deflate, longer than it says, not JSON: not a history
    return null;
  }
}

/** A hand row's events and result: its compact value inflated, else its jsonb history and result (an abandoned hand: none). */
export function storedHand(row: { compact?: Uint8Array | null; history?: unknown; result?: unknown }): StoredHand {
  if (row.compact) {
    const read = readCompact(row.compact);
    return read ? { ...read, readable: true } : { history: [], result: null, readable: false };
  }
  return {
    history: Array.isArray(row.history) ? (row.history as Record<string, unknown>[]) : [],
    result: (row.result ?? null) as Record<string, unknown> | null,
    readable: true,
  };
}
