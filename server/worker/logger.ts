import { Logger as WorkerLogger } from 'graphile-worker';
import type { Logger } from 'pino';

/**
 * graphile-worker's log lines through pino. Its routine lines (a job found, a job completed, the
 * worker polling) are debug: a healthy worker is quiet at info. Warnings and errors keep their level.
 */
export function workerLogger(log: Logger) {
  const child = log.child({ component: 'graphile-worker' });
  return new WorkerLogger((scope) => (level, message, meta) => {
    const fields = { ...scope, ...meta };
    if (level === 'error') child.error(fields, message);
    else if (level === 'warning') child.warn(fields, message);
    else child.debug(fields, message);
  });
}
