// Job `send_password_reset`: the password-reset mail, queued by auth.request_password_reset in the
// transaction that made the token (db/functions/auth/60_password_reset.sql). The token exists only
// in this job's payload and in the mail: the auth process and its login never hold it, so a stolen
// auth login cannot reset an admin's password. Sent to AUTH_MAIL_WEBHOOK_URL ({ to, subject, text });
// a transport failure fails the job (graphile-worker retries it, 5 attempts in all); with no
// transport configured the mail is dropped and said so (a retry could not succeed).
import type { Task } from 'graphile-worker';
import type { Logger } from 'pino';
import { z } from 'zod';
import { withSpan } from '../server/telemetry/index.ts';

const payload = z.object({ to: z.string().min(3).max(320), link: z.url({ protocol: /^https?$/ }) });

export function createSendPasswordResetTask(deps: { mailWebhook: string | undefined; log: Logger }): Task {
  return async (raw) => {
    const parsed = payload.safeParse(raw);
    if (!parsed.success) {
      deps.log.error({ task: 'send_password_reset' }, 'password reset mail dropped: malformed job payload');
      return;
    }
    await withSpan('auth.password_reset.mail', {}, async (span) => {
      if (!deps.mailWebhook) {
        span.setAttribute('error.code', 'mail_transport_not_configured');
        deps.log.warn({ marker: 'auth.password_reset.no_transport' }, 'password reset requested but no mail transport is configured');
        return;
      }
      try {
        const res = await fetch(deps.mailWebhook, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ to: parsed.data.to, subject: 'Reset your password', text: `Reset your password: ${parsed.data.link}` }),
          signal: AbortSignal.timeout(5000),
        });
        if (!res.ok) throw new Error(`mail transport answered ${res.status}`);
      } catch (err) {
        span.setAttribute('error.code', 'mail_transport_failed');
        deps.log.error({ marker: 'auth.password_reset.transport_failed', err: (err as Error).message }, 'password reset mail not sent; retried');
        throw new Error('password reset mail not sent');
      }
    });
  };
}
