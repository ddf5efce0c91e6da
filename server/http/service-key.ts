import { createHash, timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';
import { ApiError } from './errors.ts';

/** Constant-time comparison of a presented secret with the configured one (hashed to equal length). */
export function secretMatches(presented: unknown, expected: string | undefined): boolean {
  if (!expected || typeof presented !== 'string' || presented.length === 0) return false;
  const a = createHash('sha256').update(presented).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/** `x-service-key` routes: 503 when no key is configured, 401 for a missing or wrong one. */
export function requireServiceKey(serviceKey: string | undefined): RequestHandler {
  return (req, _res, next) => {
    if (!serviceKey) return next(new ApiError(503, 'service_key_not_configured'));
    if (!secretMatches(req.get('x-service-key'), serviceKey)) return next(new ApiError(401, 'invalid_service_key'));
    next();
  };
}
