// The downstream verification path for access JWTs (bank deposit, withdraw, table creation, claim
// board, receipts...): the auth role's JWKS fetched once and cached by jose (refetched only for an
// unknown kid, rate limited), EdDSA only, issuer and audience = the auth base URL, exp/iat/sub
// required, iat at most JWT_CLOCK_SKEW_SECONDS in the future (jose checks that only with a
// maxTokenAge). Missing token: 401 missing_bearer_token; anything wrong with it: 401 invalid_token.
// A token that verified is remembered (by its exact text) until its exp or for VERIFIED_TTL_MS,
// whichever is first: a client sends the same token on every call, and an EdDSA verification costs
// more than the rest of a small request's JSON and routing.
import type { Request, RequestHandler } from 'express';
import { createRemoteJWKSet, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { ApiError } from './errors.ts';

export interface AccessClaims extends JWTPayload {
  sub: string;
  email?: string;
  walletAddress?: string | null;
  authMethod?: string;
  /** `admin` on an operator's token, minted only by the admin sign-in path (the session's /api/auth/token). */
  role?: 'admin';
  /** On an operator's token: the handle of the admin session that minted it, which SQL checks is live on every operator act. */
  sid?: string;
}

export interface JwtVerifier {
  verify(token: string): Promise<AccessClaims>;
  /** Express middleware: puts the verified claims on `res.locals.claims`. */
  require: RequestHandler;
  /** As `require`, then 403 admin_required unless the token is an operator's (`role: 'admin'`). */
  requireAdmin: RequestHandler;
}

/** Wraps a `require` middleware: a verified token without the admin role claim is 403 admin_required. */
export function adminOnly(require: RequestHandler): RequestHandler {
  return (req, res, next) => require(req, res, (err?: unknown) => {
    if (err) return next(err);
    if (res.locals.claims?.role !== 'admin') return next(new ApiError(403, 'admin_required'));
    // an operator's token names its session; SQL checks that it is live (admin_session_required)
    if (typeof res.locals.claims.sid !== 'string' || !UUID.test(res.locals.claims.sid)) return next(new ApiError(403, 'admin_session_required'));
    next();
  });
}

/** How far in the future a token's `iat` may be (clock skew between the auth role and a verifier). */
export const JWT_CLOCK_SKEW_SECONDS = 60;

/** The admin session handle of a verified operator token (adminOnly checked its shape). */
export const operatorSession = (res: { locals: Record<string, any> }): string => res.locals.claims.sid;

/**
 * The grant handle of a verified access JWT (its `sid`): what the SQL that acts for the player takes,
 * deriving the player from it (auth_private.user_of_sid). A token without one (or not a uuid) is
 * passed as null, which SQL refuses (401 session_required).
 */
export const playerSession = (res: { locals: Record<string, any> }): string | null =>
  typeof res.locals.claims?.sid === 'string' && UUID.test(res.locals.claims.sid) ? res.locals.claims.sid : null;

/** A user id (the `sub` of every access JWT), a session or grant handle (`sid`): a uuid. */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The one check of the platform's own access JWTs (every verifier calls it): EdDSA, iss and aud =
 * the auth base URL, exp/iat/sub present, sub a user id, iat not beyond the skew in the future.
 * Throws on anything wrong.
 */
export async function verifyAccessJwt(token: string, keys: JWTVerifyGetKey, issuer: string, now = Date.now()): Promise<AccessClaims> {
  const { payload } = await jwtVerify(token, keys, {
    issuer, audience: issuer, algorithms: ['EdDSA'], requiredClaims: ['exp', 'iat', 'sub'], currentDate: new Date(now),
  });
  if (typeof payload.sub !== 'string' || !UUID.test(payload.sub)) throw new Error('sub is not a user id');
  if (payload.iat! > Math.floor(now / 1000) + JWT_CLOCK_SKEW_SECONDS) throw new Error('iat is in the future');
  return payload as AccessClaims;
}

/** How long a verified token is taken on trust before it is verified again (a key withdrawn from the JWKS stops its tokens within this). */
export const VERIFIED_TTL_MS = 60_000;
/** Tokens remembered at most; past it, the oldest is forgotten first. */
export const VERIFIED_MAX = 10_000;

/**
 * Verified tokens by their exact text, each until min(its exp, verified + VERIFIED_TTL_MS). Only a
 * token that verified is kept: a changed byte is another key, verified in full. The claims are frozen
 * so no caller can alter what the next caller is handed.
 */
export function verifiedTokens(max = VERIFIED_MAX) {
  const kept = new Map<string, { claims: AccessClaims; until: number }>();
  return {
    get(token: string, now: number): AccessClaims | undefined {
      const hit = kept.get(token);
      if (!hit) return undefined;
      if (now < hit.until) return hit.claims;
      kept.delete(token);
      return undefined;
    },
    keep(token: string, claims: AccessClaims, now: number): AccessClaims {
      const frozen = Object.freeze(claims);
      const until = Math.min(claims.exp! * 1000, now + VERIFIED_TTL_MS);
      kept.delete(token);
      if (kept.size >= max) kept.delete(kept.keys().next().value!);
      kept.set(token, { claims: frozen, until });
      return frozen;
    },
    get size() {
      return kept.size;
    },
  };
}

export function bearerToken(req: Request): string | undefined {
  return /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/.exec(req.get('authorization') ?? '')?.[1];
}

export function createJwtVerifier(options: { jwksUrl: string; issuer: string; now?: () => number; maxVerified?: number }): JwtVerifier {
  const jwks = createRemoteJWKSet(new URL(options.jwksUrl), { cooldownDuration: 30_000, cacheMaxAge: 10 * 60_000 });
  const clock = options.now ?? Date.now;
  const verified = verifiedTokens(options.maxVerified);
  const verify = async (token: string): Promise<AccessClaims> => {
    const now = clock();
    const known = verified.get(token, now);
    if (known) return known;
    try {
      return verified.keep(token, await verifyAccessJwt(token, jwks, options.issuer, now), now);
    } catch {
      throw new ApiError(401, 'invalid_token');
    }
  };
  const require: RequestHandler = async (req, res, next) => {
    const token = bearerToken(req);
    if (!token) return next(new ApiError(401, req.get('authorization') ? 'invalid_token' : 'missing_bearer_token'));
    try {
      res.locals.claims = await verify(token);
      next();
    } catch (err) {
      next(err);
    }
  };
  return { verify, require, requireAdmin: adminOnly(require) };
}

/**
 * The verifier a downstream role uses: the auth role's JWKS at AUTH_JWKS_URL, else the auth role
 * of this process (`peerAuthUrl()`, read at first use), else the issuer's own; iss/aud = the issuer
 * (AUTH_BASE_URL). Built on first use, so the auth role may start after this one.
 */
export function lazyJwtVerifier(options: { jwksUrl?: string; issuer: string; peerAuthUrl: () => string | undefined }): JwtVerifier {
  let verifier: JwtVerifier | undefined;
  const get = () =>
    (verifier ??= createJwtVerifier({ jwksUrl: options.jwksUrl ?? `${options.peerAuthUrl() ?? options.issuer}/api/auth/jwks`, issuer: options.issuer }));
  return {
    verify: (token) => get().verify(token),
    require: (req, res, next) => get().require(req, res, next),
    requireAdmin: (req, res, next) => get().requireAdmin(req, res, next),
  };
}
