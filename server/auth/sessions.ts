// Admin sessions over HTTP: email/password sign-in, sign-out, get-session, and a fresh JWT for the
// session. A session is an opaque random token (cookie `poker_session` or `Authorization: Bearer`),
// stored only as its sha-256.
import { createHash, randomBytes } from 'node:crypto';
import type { Express, Request, RequestHandler } from 'express';
import type pg from 'pg';
import type { Logger } from 'pino';
import { z } from 'zod';
import { ApiError, refusedWith } from '../http/errors.ts';
import type { AuthSettings } from './config.ts';
import type { KeyStore } from './keys.ts';
import { DECOY_PARAMS, derivePasswordKey } from './passwords.ts';
import type { AttemptLimiter } from './rate-limit.ts';
import { walletAddressClaim } from './token-claims.ts';
import { describeRoute } from '../http/openapi.ts';

export const SESSION_COOKIE = 'poker_session';
/** A browser that signed in (issue 31): its sign-in attempts count on their own, never locked out by others' failures. */
export const DEVICE_COOKIE = 'poker_device';
const DEVICE_TTL_SECONDS = 180 * 24 * 60 * 60;
export const SESSION_TTL_SECONDS = 12 * 60 * 60;
const SESSION_TOKEN = /^[A-Za-z0-9_-]{43}$/;

export const signInBody = z.object({ email: z.email().max(320), password: z.string().min(1).max(1024) }).strip();
const hashToken = (token: string) => createHash('sha256').update(token).digest();

function cookieValue(req: Request, name: string): string | undefined {
  const cookie = (req.get('cookie') ?? '').split(';').map((c) => c.trim()).find((c) => c.startsWith(`${name}=`));
  const value = cookie?.slice(name.length + 1);
  return value && SESSION_TOKEN.test(value) ? value : undefined;
}

function sessionToken(req: Request): string | undefined {
  const bearer = /^Bearer (\S+)$/.exec(req.get('authorization') ?? '')?.[1];
  if (bearer && SESSION_TOKEN.test(bearer)) return bearer;
  return cookieValue(req, SESSION_COOKIE);
}

/** The identity service's CSRF check: a cross-origin call must come from a trusted origin. */
export function trustedOrigin(settings: AuthSettings): RequestHandler {
  return (req, _res, next) => {
    const origin = req.get('origin');
    if (origin !== undefined && !settings.trustedOrigins.has(origin)) return next(new ApiError(403, 'untrusted_origin'));
    next();
  };
}

export type SessionReader = (req: Request) => Promise<{ token: string; user_id: string; email: string; expires_at: Date; sid: string } | undefined>;

/** The link flows' stricter form: the Origin header must be present, and trusted. */
export function requireTrustedOrigin(settings: AuthSettings, req: Request) {
  const origin = req.get('origin');
  if (!origin || !settings.trustedOrigins.has(origin)) throw new ApiError(403, 'untrusted_origin');
}

/** The contracts of installSessionRoutes (server/http/openapi.ts). */
export const sessionRoutes = [
  describeRoute({
    method: 'post', path: '/api/auth/sign-in/email', auth: 'none', summary: 'An operator signs in: opens an admin session', body: signInBody,
    responses: { 200: '{ token, user: { id, email }, expiresAt } and the poker_session cookie', 401: 'invalid_credentials', 403: 'untrusted_origin', 429: 'too_many_attempts' },
  }),
  describeRoute({
    method: 'post', path: '/api/auth/sign-out', auth: ['session', 'none'], summary: 'Revokes the admin session (if any) and clears its cookie',
    responses: { 200: '{ ok: true }', 403: 'untrusted_origin' },
  }),
  describeRoute({
    method: 'get', path: '/api/auth/get-session', auth: ['session', 'none'], summary: 'The admin session, or null',
    responses: { 200: '{ session: { expiresAt }, user: { id, email } } or null' },
  }),
  describeRoute({
    method: 'get', path: '/api/auth/token', auth: 'session', summary: 'An operator\'s access JWT for the admin session',
    responses: { 200: '{ token }', 401: 'not signed in' },
  }),
];

export function installSessionRoutes(
  app: Express,
  deps: { pool: pg.Pool; keys: KeyStore; settings: AuthSettings; log: Logger; limiter: AttemptLimiter },
): SessionReader {
  const { pool, keys, settings, log, limiter } = deps;
  const secure = settings.baseUrl.startsWith('https:') ? '; Secure' : '';
  const cookie = (value: string, maxAge: number) =>
    `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAge}${secure}`;

  const session: SessionReader = async (req) => {
    const token = sessionToken(req);
    if (!token) return undefined;
    const { rows } = await pool.query<{ user_id: string; email: string; expires_at: Date; sid: string }>(
      'select user_id, email, expires_at, sid from auth.session_for($1)', [hashToken(token)],
    );
    return rows[0] ? { token, ...rows[0] } : undefined;
  };

  app.post('/api/auth/sign-in/email', trustedOrigin(settings), async (req, res) => {
    const body = signInBody.parse(req.body ?? {});
    const device = cookieValue(req, DEVICE_COOKIE);
    // counted before the password is checked, known email or not (the count tells nothing), and
    // before the costly scrypt; refused (429) over a limit
    const ticket = await limiter.signIn(req, res, body.email, device);
    // the password is proven to the database: it hands out the scrypt parameters (never the key),
    // binds the attempt to the key derived here (committed before the check), and opens the session
    // only for that key (an unknown email derives against a decoy, at the same cost, and is refused the same way)
    const { rows } = await pool.query<{ user_id: string; params: string }>(
      'select user_id, params from auth.admin_password_params($1)', [body.email],
    );
    const key = await derivePasswordKey(body.password, rows[0]?.params ?? DECOY_PARAMS);
    await pool.query('select auth.bind_sign_in($1, $2)', [ticket, createHash('sha256').update(key).digest()]);
    const token = randomBytes(32).toString('base64url');
    const newDevice = randomBytes(32).toString('base64url');
    let created: { user_id: string; expires_at: Date };
    try {
      const opened = await pool.query<{ user_id: string; expires_at: Date }>(
        'select user_id, expires_at from auth.create_session($1, $2, $3, $4, $5)', [ticket, key, hashToken(token), SESSION_TTL_SECONDS, hashToken(newDevice)],
      );
      created = opened.rows[0]!;
    } catch (err) {
      if (!refusedWith(err, 'auth', 'invalid_credentials')) throw err;
      log.warn({ marker: 'auth.sign_in.failed' }, 'sign-in failed');
      throw new ApiError(401, 'invalid_credentials');
    }
    res.set('set-cookie', [
      cookie(token, SESSION_TTL_SECONDS),
      `${DEVICE_COOKIE}=${newDevice}; Path=/api/auth; HttpOnly; SameSite=Strict; Max-Age=${DEVICE_TTL_SECONDS}${secure}`,
    ]);
    res.json({ token, user: { id: created.user_id, email: body.email }, expiresAt: created.expires_at });
  });

  app.post('/api/auth/sign-out', trustedOrigin(settings), async (req, res) => {
    const token = sessionToken(req);
    if (token) await pool.query('select auth.revoke_session($1)', [hashToken(token)]);
    res.set('set-cookie', cookie('', 0));
    res.json({ ok: true });
  });

  app.get('/api/auth/get-session', async (req, res) => {
    const s = await session(req);
    res.json(s ? { session: { expiresAt: s.expires_at }, user: { id: s.user_id, email: s.email } } : null);
  });

  app.get('/api/auth/token', async (req, res) => {
    const s = await session(req);
    if (!s) throw new ApiError(401, 'not signed in');
    // a session exists only for an admin's credentials (the sign-in above): its token is an operator's,
    // and carries the session's handle (sid): every operator act is checked in SQL against that live
    // session (auth_private.admin_of_session), so signing out ends what the token may do
    res.json({
      token: await keys.sign({
        sub: s.user_id, email: s.email, walletAddress: await walletAddressClaim(pool, s.user_id), authMethod: 'email', role: 'admin', sid: s.sid,
      }),
    });
  });

  return session;
}
