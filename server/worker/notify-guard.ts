// graphile-worker shuts a running worker down when it hears, on its LISTEN connection, a
// `worker:migrate` notice claiming a breaking migration. NOTIFY takes no privilege: any database login
// (the game's, the cage's...) could send one and stop every job (the audit, the reset mail, the
// tournaments' timers and payouts) until a restart (issue 31, class 6). The worker's events let this
// module wrap the listening connection's notification handler as graphile-worker attaches it: a
// `worker:migrate` notice reaches it only when graphile_worker.migrations bears it out (a breaking
// migration of that number is recorded: only the owner writes that table); any other is logged and
// dropped. `jobs:insert` notices pass as they are (at most an extra poll).
import { EventEmitter } from 'node:events';
import type { WorkerEvents } from 'graphile-worker';
import type pg from 'pg';
import type { Logger } from 'pino';

type Handler = (message: pg.Notification) => void;

/** Whether a breaking migration of the notice's number is recorded (the notice's payload is untrusted). */
async function recorded(pool: pg.Pool, payload: string | undefined): Promise<boolean> {
  let number: unknown;
  try {
    number = (JSON.parse(payload ?? 'null') as { migrationNumber?: unknown } | null)?.migrationNumber;
  } catch {
    return false;
  }
  if (!Number.isSafeInteger(number)) return false;
  const { rows } = await pool.query<{ ok: boolean }>(
    'select exists (select from graphile_worker.migrations where id = $1 and breaking) as ok', [number],
  );
  return rows[0]!.ok;
}

/** Wraps one listening client's notification handlers (and their removal) with the check above. */
function guardClient(client: pg.PoolClient, pool: pg.Pool, log: Logger) {
  const wrapped = new WeakMap<Handler, Handler>();
  const on = client.on.bind(client) as (event: string, handler: (...args: never[]) => void) => pg.PoolClient;
  const off = client.removeListener.bind(client) as (event: string, handler: (...args: never[]) => void) => pg.PoolClient;
  const guarded = (handler: Handler): Handler => (message) => {
    if (message.channel !== 'worker:migrate') return handler(message);
    recorded(pool, message.payload).then((real) => {
      if (real) handler(message);
      else log.warn({ marker: 'worker.migrate_notice.forged', payload: message.payload?.slice(0, 200) }, 'a worker:migrate notice no recorded migration bears out: ignored');
    }, (err: Error) => log.error({ err: err.message }, 'a worker:migrate notice could not be checked: ignored'));
  };
  Object.assign(client, {
    on(event: string, handler: (...args: never[]) => void) {
      if (event !== 'notification') return on(event, handler);
      const w = guarded(handler as unknown as Handler);
      wrapped.set(handler as unknown as Handler, w);
      return on(event, w as unknown as (...args: never[]) => void);
    },
    removeListener(event: string, handler: (...args: never[]) => void) {
      const w = event === 'notification' ? wrapped.get(handler as unknown as Handler) : undefined;
      return off(event, (w ?? handler) as unknown as (...args: never[]) => void);
    },
  });
}

/** The events to run graphile-worker with: its listening connection hears only borne-out migration notices. */
export function guardedWorkerEvents(pool: pg.Pool, log: Logger): WorkerEvents {
  const events = new EventEmitter() as unknown as WorkerEvents;
  events.on('pool:listen:success', ({ client }) => guardClient(client as unknown as pg.PoolClient, pool, log));
  return events;
}
