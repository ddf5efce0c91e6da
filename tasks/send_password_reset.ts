// Job `send_password_reset`: the password-reset mail, queued by auth.request_password_reset in the
// transaction that made the token (db/functions/auth/60_password_reset.sql). The payload is
// { to, redirect, sealed }: the token travels sealed to the worker's mail key (server/worker/mail-key.ts),
// with the sha-256 of `to`, a newline and `redirect`, so the worker login, which reads every job, holds
// no token it could use, and a job forged from a copied seal (another address, another link) opens to
// nothing this task sends. Sent to AUTH_MAIL_WEBHOOK_URL ({ to, subject, text }); a transport failure
// fails the job (graphile-worker retries it, 5 attempts in all); with no transport or no mail key the
// mail is dropped and said so (a retry could not succeed).
import { createHash } from 'node:crypto';
import type { Task } from 'graphile-worker';
import type { Logger } from 'pino';
import { z } from 'zod';
import { withSpan } from '../server/telemetry/index.ts';
import { openSealed, type MailKey } from '../server/worker/mail-key.ts';

const payload = z.object({ to: z.string().min(3).max(320), redirect: z.url({ protocol: /^https?$/ }), sealed: z.base64().max(2048) });

/** The reset link of a sealed token, or undefined when the seal is not this key's or not for this mail. */
export function openResetLink(key: MailKey, job: { to: string; redirect: string; sealed: string }): string | undefined {
  const opened = openSealed(key, job.sealed);
  if (!opened || opened.length !== 64) return undefined;
  const bound = createHash('sha256').update(`${job.to}\n${job.redirect}`, 'utf8').digest();
  if (!bound.equals(opened.subarray(32))) return undefined;
  const token = opened.subarray(0, 32).toString('base64url');
  return `${job.redirect}${job.redirect.includes('?') ? '&' : '?'}token=${token}`;
}

export function createSendPasswordResetTask(deps: { mailWebhook: string | undefined; mailKey: MailKey | undefined; log: Logger }): Task {
  return async (raw) => {
    const parsed = payload.safeParse(raw);
    if (!parsed.success) {
      deps.log.error({ task: 'send_password_reset' }, 'password reset mail dropped: malformed job payload');
      return;
    }
    await withSpan('auth.password_reset.mail', {}, async (span) => {
      if (!deps.mailWebhook || !deps.mailKey) {
        span.setAttribute('error.code', deps.mailWebhook ? 'mail_key_not_configured' : 'mail_transport_not_configured');
        deps.log.warn({ marker: 'auth.password_reset.no_transport' }, 'password reset requested but no mail transport or mail key is configured');
        return;
      }
      const link = openResetLink(deps.mailKey, parsed.data);
      if (!link) {
        span.setAttribute('error.code', 'mail_seal_invalid');
        deps.log.error({ marker: 'auth.password_reset.seal_invalid' }, 'password reset mail dropped: its token is not sealed to this worker for this mail');
        return;
      }
      await send(deps.mailWebhook, parsed.data.to, link).catch((err: Error) => {
        span.setAttribute('error.code', 'mail_transport_failed');
        deps.log.error({ marker: 'auth.password_reset.transport_failed', err: err.message }, 'password reset mail not sent; retried');
        throw new Error('password reset mail not sent');
      });
    });
  };
}

async function send(webhook: string, to: string, link: string) {
  const res = await fetch(webhook, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ to, subject: 'Reset your password', text: `Reset your password: ${link}` }),
    signal: AbortSignal.timeout(5000),
  });
  if (!res.ok) throw new Error(`mail transport answered ${res.status}`);
}
