// The request fields every role parses the same way, declared once (zod).
import { z } from 'zod';

/** A positive whole number of chips: a decimal string (up to 16 digits) or a safe integer, as a bigint. */
export const chips = z.union([
  z.string().regex(/^[1-9][0-9]{0,15}$/, 'a positive whole number of chips'),
  z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
]).transform((v) => BigInt(v));

/** A table id as the routes take it (the SQL refuses one of the wrong shape with its own code). */
export const tableId = z.string().min(1).max(64);

/** A client's idempotency key: 1..128 printable ASCII characters. */
export const idempotencyKey = z.string().regex(/^[\x21-\x7e]{1,128}$/, '1..128 printable characters');

/** A position (a seat's sitting) id: a positive integer, as a decimal string. */
export const positionId = z.union([z.string().regex(/^[1-9][0-9]{0,17}$/), z.number().int().positive()]).transform(String);
