// One pg pool per service role. Each connects as the role's own LOGIN (server/db/roles.ts: the
// owner URL's host and database, the login's derived password) and starts in the role
// (`-c role=...`: the login itself, or for the admin GraphQL's poker_graphql login the role it
// starts as), so every query the service makes runs with that role's grants and RLS policies.
import pg from 'pg';
import { loginOf, loginUrl, type DbRole } from './roles.ts';

export type { DbRole } from './roles.ts';

// bigint chips stay bigint: int8 and numeric sums are parsed to BigInt, never to a float.
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === pg.types.builtins.INT8) return (value: string) => BigInt(value);
    return pg.types.getTypeParser(oid, format);
  },
};

export interface PoolOptions {
  max?: number;
  lockTimeoutMs?: number;
  statementTimeoutMs?: number;
  applicationName?: string;
  /** DB_ROLE_SECRET (the logins' passwords are derived from it); unset: the environment's or the development one. */
  secret?: string;
  /** The login's own password (DB_PASSWORD_<LOGIN>): used instead of deriving one from the secret. */
  password?: string;
  /**
   * Leave int8 as pg's default (a string): for libraries that put the rows they read into JSON
   * (graphile-worker serialises job ids), which a BigInt would make throw.
   */
  int8AsString?: boolean;
}

export function createRolePool(connectionString: string, role: DbRole, options: PoolOptions = {}) {
  const pool = new pg.Pool({
    connectionString: loginUrl(connectionString, loginOf(role), options.secret, options.password),
    max: options.max ?? 10,
    application_name: options.applicationName ?? role,
    options: `-c role=${role} -c lock_timeout=${options.lockTimeoutMs ?? 5000} -c statement_timeout=${options.statementTimeoutMs ?? 30000}`,
    ...(options.int8AsString ? {} : { types }),
  });
  quietErrors(pool);
  return pool;
}

/** A client that loses its connection must not crash the process; the pool replaces it. */
function quietErrors(pool: pg.Pool) {
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
}

/**
 * A single connection for one short job (a pin at start, the migrations, a probe): a connection the
 * server ends while it is idle (a terminated backend, a dropped database) is an error of its next
 * query, never an unhandled 'error' event that ends the process.
 */
export function oneClient(config: pg.ClientConfig): pg.Client {
  const client = new pg.Client(config);
  client.on('error', () => {});
  return client;
}

/** A pool as the owner (the migrator, test setup and fixtures, benchmarks' raw postings); never a service's. */
export function createOwnerPool(connectionString: string, max = 10) {
  const pool = new pg.Pool({ connectionString, max, types });
  quietErrors(pool);
  return pool;
}

const RETRYABLE = new Set(['40001', '40P01', '55P03']);

/**
 * Runs `fn` and retries it (same arguments, so the same ref_id) on serialization failure, deadlock
 * and lock timeout only, with jittered backoff. A business refusal is never retried.
 */
export async function withRetry<T>(fn: () => Promise<T>, attempts = 8): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (!code || !RETRYABLE.has(code) || attempt >= attempts) throw err;
      await new Promise((r) => setTimeout(r, Math.random() * 5 * 2 ** attempt));
    }
  }
}
