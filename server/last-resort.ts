// The process's last boundary. Every entry point has its own (routes: the error handler; upgrades,
// timers and the worker: their own try/catch); what still escapes one is logged here and the process
// goes on. Staying up is the choice for uncaughtException too, against Node's default: the state that
// matters is in Postgres, where the failed work's transaction rolled back, while an exit would drop
// every websocket and table this process runs for one caller's bad input. The log line is `fatal`
// with a marker an operator alerts on, because each one is a missing boundary to fix.
import type { Logger } from 'pino';

export function installLastResortHandlers(log: Logger): () => void {
  const onException = (err: Error, origin: string) => {
    log.fatal({ err, origin, marker: 'process.uncaught' }, 'uncaught exception: logged, process continues');
  };
  const onRejection = (reason: unknown) => {
    log.fatal({ err: reason, marker: 'process.unhandled_rejection' }, 'unhandled rejection: logged, process continues');
  };
  process.on('uncaughtException', onException);
  process.on('unhandledRejection', onRejection);
  return () => {
    process.off('uncaughtException', onException);
    process.off('unhandledRejection', onRejection);
  };
}
