// Legacy password recovery (the spec's recorded shape), live for admin accounts, the only accounts
// with a password: poker users have none, so for them it is a no-op that answers the same.
//   POST /api/auth/request-password-reset { email, redirectTo } -> always { status: true }, for known
//     and unknown emails alike and whatever the mail transport does. The token is made in SQL and
//     leaves only in the mail job the worker sends (tasks/send_password_reset.ts), sealed to the
//     worker's mail key (issue 31): the auth process and its login never hold it, nor does the worker
//     login that reads the job. A transport failure shows in telemetry and the log, and is retried.
//   POST /api/auth/reset-password { newPassword, token } -> { status: true }, or 400
//     reset_token_invalid (unknown or already used) / reset_token_expired; every session of the
//     user is revoked. The token is looked up before the new password is hashed, so a wrong token
//     costs no scrypt; both routes share one attempt budget per client address (rate-limit.ts).
// redirectTo must be an absolute URL on a trusted origin (no open redirect through our mail).
import { createHash } from 'node:crypto';
import type { Express } from 'express';
import type pg from 'pg';
import type { Logger } from 'pino';
import { z } from 'zod';
import { ApiError } from '../http/errors.ts';
import type { AuthSettings } from './config.ts';
import { hashPassword } from './passwords.ts';
import type { AttemptLimiter } from './rate-limit.ts';
import { describeRoute } from '../http/openapi.ts';

export const requestResetBody = z.object({ email: z.string().max(320), redirectTo: z.url({ protocol: /^https?$/ }) });
export const resetBody = z.object({ newPassword: z.string().min(12).max(1024), token: z.string().regex(/^[\w-]{43}$/) });
const hash = (token: string) => createHash('sha256').update(token).digest();

export const passwordResetRoutes = [
  describeRoute({
    method: 'post', path: '/api/auth/request-password-reset', auth: 'none', summary: 'Mails a reset link (the same answer for an unknown email)', body: requestResetBody,
    responses: { 200: '{ status: true }', 400: 'untrusted_redirect', 429: 'too_many_attempts' },
  }),
  describeRoute({
    method: 'post', path: '/api/auth/reset-password', auth: 'none', summary: 'Sets a new password with a reset token; revokes every session', body: resetBody,
    responses: { 200: '{ status: true }', 400: 'reset_token_invalid / reset_token_expired', 429: 'too_many_attempts' },
  }),
];

export function installPasswordResetRoutes(
  app: Express,
  deps: {
    pool: pg.Pool; settings: AuthSettings; log: Logger; limiter: AttemptLimiter; ttlSeconds: number;
    hashPassword?: (password: string) => Promise<string>;
  },
) {
  const { pool, settings, log, limiter } = deps;
  const hashNew = deps.hashPassword ?? hashPassword;

  app.post('/api/auth/request-password-reset', async (req, res) => {
    const { email, redirectTo } = requestResetBody.parse(req.body ?? {});
    await limiter.recovery(req, res);
    if (!settings.trustedOrigins.has(new URL(redirectTo).origin)) throw new ApiError(400, 'untrusted_redirect');
    // the token is made in SQL and leaves only sealed in the worker's mail job: this process never holds it
    await pool.query('select auth.request_password_reset($1, $2, $3)', [email, redirectTo, deps.ttlSeconds]);
    res.json({ status: true });
  });

  app.post('/api/auth/reset-password', async (req, res) => {
    const { newPassword, token } = resetBody.parse(req.body ?? {});
    await limiter.recovery(req, res);
    await pool.query('select auth.check_reset_token($1)', [hash(token)]); // before the scrypt below
    const { rows } = await pool.query<{ user_id: string }>('select auth.reset_password($1, $2) as user_id', [hash(token), await hashNew(newPassword)]);
    log.info({ userId: rows[0]!.user_id }, 'password reset; all sessions revoked');
    res.json({ status: true });
  });
}
