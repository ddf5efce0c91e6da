import { Logger as WorkerLogger } from 'graphile-worker';
import type { Logger } from 'pino';

/** graphile-worker's log lines through pino, at their own levels. */
export function workerLogger(log: Logger) {
  const child = log.child({ component: 'graphile-worker' });
  return new WorkerLogger((scope) => (level, message, meta) => {
    const fields = { ...scope, ...meta };
    if (level === 'error') child.error(fields, message);
    else if (level === 'warning') child.warn(fields, message);
    else if (level === 'info') child.info(fields, message);
    else child.debug(fields, message);
  });
}
