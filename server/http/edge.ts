// What every role refuses before a handler sees the request: a path that does not decode, a NUL byte
// anywhere a string could reach SQL (Postgres text cannot hold U+0000 and answers 22021, which is the
// caller's mistake, not ours), and JSON nested deeper than any of our bodies needs (a walk over it,
// ours or a library's, must stay bounded). Each is a coded 400.
import type { RequestHandler } from 'express';
import { ApiError } from './errors.ts';

/** The deepest JSON any route accepts; our deepest body (a claim section, a table's settings) uses 3. */
export const MAX_JSON_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPENERS = new Set([0x5b, 0x7b]);
const CLOSERS = new Set([0x5d, 0x7d]);

/**
 * True when the raw JSON nests arrays/objects deeper than `max`. One pass over the bytes, brackets
 * inside strings ignored; in UTF-8 these ASCII bytes never occur inside a multi-byte character.
 */
export function jsonDeeperThan(bytes: Uint8Array, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (inString) {
      if (b === BACKSLASH) i++;
      else if (b === QUOTE) inString = false;
    } else if (b === QUOTE) inString = true;
    else if (OPENERS.has(b)) {
      if (++depth > max) return true;
    } else if (CLOSERS.has(b)) depth--;
  }
  return false;
}

/** The error express.json's `verify` throws; errors.ts maps its type to 400 json_too_deep. */
export function refuseDeepJson(_req: unknown, _res: unknown, buf: Buffer) {
  if (jsonDeeperThan(buf, MAX_JSON_DEPTH)) throw Object.assign(new Error('JSON nested too deep'), { type: 'json.too_deep' });
}

/** True when a string, or any key or string inside an array/object, holds U+0000. */
export function holdsNul(value: unknown, depth = 0): boolean {
  if (typeof value === 'string') return value.includes('\u0000');
  if (value === null || typeof value !== 'object' || depth > MAX_JSON_DEPTH) return false;
  if (Array.isArray(value)) return value.some((v) => holdsNul(v, depth + 1));
  return Object.entries(value).some(([k, v]) => k.includes('\u0000') || holdsNul(v, depth + 1));
}

/**
 * The request target: every path parameter is a slice of the decoded path, so a path that does not
 * decode (`/api/tables/%`) or decodes to a NUL is refused here, for every route, matched or not.
 */
export const refuseHostileTarget: RequestHandler = (req, _res, next) => {
  let path: string;
  try {
    path = decodeURIComponent(req.path);
  } catch {
    return next(new ApiError(400, 'malformed_path'));
  }
  if (path.includes('\u0000') || holdsNul(req.query)) return next(new ApiError(400, 'nul_character'));
  next();
};

export const refuseNulInBody: RequestHandler = (req, _res, next) => {
  if (holdsNul(req.body)) return next(new ApiError(400, 'nul_character'));
  next();
};
