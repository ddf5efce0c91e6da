import { createHash, timingSafeEqual } from 'node:crypto';

/** Constant-time comparison of a presented secret with the configured one (hashed to equal length). */
export function secretMatches(presented: unknown, expected: string | undefined): boolean {
  if (!expected || typeof presented !== 'string' || presented.length === 0) return false;
  const a = createHash('sha256').update(presented).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}
