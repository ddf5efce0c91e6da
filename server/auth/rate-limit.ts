// Attempt limits of the auth role (issues 10 and 31). Sign-in attempts are counted by the SQL that
// checks the password (auth.count_sign_in, then auth.create_session with the attempt's ticket: the
// count is committed before the password is checked), in buckets: the account whatever the address
// (a ceiling fixed in SQL), the (client address, account) pair and the client address (the limits
// configured here), or a known device of the account alone (the poker_device cookie of a browser that
// signed in before: failures without it never lock it out), before the password's key is derived; the
// key derived is then bound to the attempt's ticket (auth.bind_sign_in) and checked in a later
// transaction. A success clears what it counted, but the address's count.
// Password recovery is counted per client address (auth.count_attempt, recovery keys only). Every
// count is in Postgres, shared by every auth process; the upserts increment one row under its row
// lock, so concurrent attempts each see a distinct count.
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
  /** Counts one sign-in attempt for this account, before its key is derived: its ticket (auth.bind_sign_in, auth.create_session), or 429. */
  signIn(req: Request, res: Response, email: string, device: string | undefined): Promise<string>;
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
  const recoveryByPeer = attemptCounter(pool, 'recovery:peer', limits.recoveryPerPeer, limits.windowSeconds);
  const configured = [limits.signInPerAccount, limits.signInPerPeer, limits.windowSeconds];

  function refuse(route: string, res: Response, waitMs: number): never {
    const retryAfter = Math.max(1, Math.ceil(waitMs / 1000));
    log.warn({ marker: 'auth.attempts.limited', route, retryAfter }, 'attempt refused: too many attempts');
    res.set('retry-after', String(retryAfter));
    throw new ApiError(429, 'too_many_attempts');
  }

  return {
    async signIn(req, res, email, device) {
      // the store failing fails the request: no attempt goes unchecked
      const { rows } = await pool.query<{ ticket: string | null; retry_after: number }>(
        'select ticket, retry_after from auth.count_sign_in($1, $2, $3, $4, $5, $6)', [email, clientKey(req.ip), device ?? null, ...configured],
      );
      const r = rows[0]!;
      if (!r.ticket) refuse('sign-in', res, r.retry_after * 1000);
      return r.ticket;
    },
    async recovery(req, res) {
      const r = await recoveryByPeer.consume(clientKey(req.ip));
      if (!r.allowed) refuse('recovery', res, r.msBeforeNext);
    },
  };
}
