// Attempt limits of the auth role (issue 10). An attempt is counted BEFORE the work it guards (the
// password check, the reset-token lookup), in Postgres (auth.count_attempt over auth.attempt_limits,
// the auth login's only way to add to the counters), so concurrent attempts
// cannot all slip under the limit and every auth process counts into the same rows: the upsert
// increments one row under its row lock, so each attempt sees a distinct count. Keys: the client
// address, and for sign-in (address, account); never the account alone, which would let anyone
// lock an admin out. A fixed window per key. A sign-in that succeeds clears its (address, account)
// count (auth.clear_sign_in_attempts, bound to the session it opened): only failures count against
// an account, while the per-address count keeps counting every attempt.
// The client address is Express's `req.ip`: the TCP peer unless TRUST_PROXY names the proxies
// whose X-Forwarded-For is believed. An IPv6 client counts by its /64, the block one host holds.
import { createHash } from 'node:crypto';
import { isIP, isIPv6 } from 'node:net';
import type { Request, Response } from 'express';
import type pg from 'pg';
import type { Logger } from 'pino';
import { ApiError } from '../http/errors.ts';

export interface AttemptLimits {
  windowSeconds: number;
  signInPerAccount: number;
  signInPerPeer: number;
  recoveryPerPeer: number;
}

export interface AttemptLimiter {
  /** Counts one sign-in attempt of this client for this account; 429 too_many_attempts when over. */
  signIn(req: Request, res: Response, email: string): Promise<void>;
  /** The attempt succeeded (`tokenHash`: its new session's): this client's count for the account is cleared. */
  signedIn(req: Request, email: string, tokenHash: Buffer): Promise<void>;
  /** Counts one password-recovery request of this client (request and reset share the budget). */
  recovery(req: Request, res: Response): Promise<void>;
}

/**
 * The address an attempt is counted against: IPv4 as is (also when IPv4-mapped), IPv6 by its /64,
 * anything else a trusted proxy forwarded by its hash (the store's key is at most 255 characters).
 */
export function clientKey(address: string | undefined): string {
  if (!address) return 'unknown';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  const bare = address.split('%')[0]!;
  if (!isIP(bare)) return `other:${createHash('sha256').update(address).digest('base64url')}`;
  if (!isIPv6(bare)) return bare;
  const [head = '', tail] = bare.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill('0'), ...right];
  return `${groups.slice(0, 4).map((g) => parseInt(g, 16).toString(16)).join(':')}::/64`;
}

const accountKey = (email: string) => createHash('sha256').update(email.trim().toLowerCase()).digest('base64url');

/** One attempt counted: whether it is within `points`, and when the window ends. */
export interface Counted {
  allowed: boolean;
  points: number;
  msBeforeNext: number;
}

/** One counter over auth.attempt_limits (auth.count_attempt): `points` attempts per key per window. */
export interface AttemptCounter {
  consume(key: string): Promise<Counted>;
}

export function attemptCounter(pool: pg.Pool, keyPrefix: string, points: number, windowSeconds: number): AttemptCounter {
  return {
    async consume(key) {
      const { rows } = await pool.query<{ points: number; ms_before_next: bigint }>(
        'select points, ms_before_next from auth.count_attempt($1, $2)', [`${keyPrefix}:${key}`.slice(0, 255), windowSeconds],
      );
      const r = rows[0]!;
      return { allowed: r.points <= points, points: r.points, msBeforeNext: Number(r.ms_before_next) };
    },
  };
}

export function createAttemptLimiter(pool: pg.Pool, limits: AttemptLimits, log: Logger): AttemptLimiter {
  const limiter = (keyPrefix: string, points: number) => attemptCounter(pool, keyPrefix, points, limits.windowSeconds);
  const signInByPeer = limiter('sign-in:peer', limits.signInPerPeer);
  const signInByAccount = limiter('sign-in:account', limits.signInPerAccount);
  const recoveryByPeer = limiter('recovery:peer', limits.recoveryPerPeer);

  async function take(route: string, res: Response, counts: [AttemptCounter, string][]) {
    // the store failing fails the request: no attempt goes unchecked
    const results = await Promise.all(counts.map(([l, key]) => l.consume(key)));
    const refused = results.filter((r) => !r.allowed);
    if (refused.length === 0) return;
    const waitMs = Math.max(...refused.map((r) => r.msBeforeNext));
    const retryAfter = Math.max(1, Math.ceil(waitMs / 1000));
    log.warn({ marker: 'auth.attempts.limited', route, retryAfter }, 'attempt refused: too many attempts');
    res.set('retry-after', String(retryAfter));
    throw new ApiError(429, 'too_many_attempts');
  }

  return {
    signIn(req, res, email) {
      const peer = clientKey(req.ip);
      return take('sign-in', res, [[signInByPeer, peer], [signInByAccount, `${peer}:${accountKey(email)}`]]);
    },
    async signedIn(req, email, tokenHash) {
      // SQL clears the account's count only for the session this sign-in just opened
      const key = `sign-in:account:${clientKey(req.ip)}:${accountKey(email)}`.slice(0, 255);
      await pool.query('select auth.clear_sign_in_attempts($1, $2)', [tokenHash, key]);
    },
    recovery(req, res) {
      return take('recovery', res, [[recoveryByPeer, clientKey(req.ip)]]);
    },
  };
}
