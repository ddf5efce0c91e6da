// The database logins of the service roles. Each service connects as its own LOGIN role with only
// its grants (db/policies/): poker_cage, poker_auth, poker_game, poker_worker, poker_betting, poker_bank; the admin GraphQL as
// poker_graphql, which may only switch between poker_anonymous and poker_admin. The owner login (the
// URL given to the platform) is used by the migrator alone.
//
// Passwords come from one secret, DB_ROLE_SECRET: password(login) = base64url(HMAC-SHA256(secret,
// "login:" + login)). The migrator stores each as a SCRAM-SHA-256 verifier computed here (so the
// password itself never reaches the server or its logs), with a salt derived from the secret too:
// the same secret gives the same verifier, and a migrator that finds it in place changes nothing.
// Outside production an unset secret is DEV_DB_ROLE_SECRET (production refuses to boot without one).
//
// A split deployment gives no process the secret: the migrator (`npm run migrate -- --print-passwords`)
// prints each login's password, and each role process is given only its own login's, in
// DB_PASSWORD_<LOGIN> (passwordVariable), with DB_LOGIN_ONLY=true (docs/operations.md).
import { createHash, createHmac, pbkdf2Sync } from 'node:crypto';
import pg from 'pg';
import { oneClient } from './pools.ts';

export type DbRole = 'poker_cage' | 'poker_auth' | 'poker_game' | 'poker_worker' | 'poker_betting' | 'poker_bank' | 'poker_admin' | 'poker_anonymous';

/** The LOGIN roles the services connect as. */
export const SERVICE_LOGINS = ['poker_cage', 'poker_auth', 'poker_game', 'poker_worker', 'poker_betting', 'poker_bank', 'poker_graphql'] as const;
export type ServiceLogin = (typeof SERVICE_LOGINS)[number];

/** The secret of development and test clusters when DB_ROLE_SECRET is unset (never in production). */
export const DEV_DB_ROLE_SECRET = 'poker-platform-development-database-roles';

const SCRAM_ITERATIONS = 4096;

/** The login each role connects as (the web role has no database connection). */
export const ROLE_LOGIN: Readonly<Record<string, ServiceLogin | undefined>> = {
  auth: 'poker_auth', game: 'poker_game', cage: 'poker_cage', 'chain-bank': 'poker_bank', admin: 'poker_graphql',
  worker: 'poker_worker', betting: 'poker_betting', web: undefined,
};

/** The variable that gives a process one login's password: DB_PASSWORD_POKER_CAGE, ... */
export function passwordVariable(login: ServiceLogin): string {
  return `DB_PASSWORD_${login.toUpperCase()}`;
}

/** The login a database role is reached through: the admin GraphQL's two roles share poker_graphql. */
export function loginOf(role: DbRole): ServiceLogin {
  return role === 'poker_admin' || role === 'poker_anonymous' ? 'poker_graphql' : role;
}

export function roleSecret(secret?: string): string {
  return secret || process.env.DB_ROLE_SECRET || DEV_DB_ROLE_SECRET;
}

export function rolePassword(login: ServiceLogin, secret?: string): string {
  return createHmac('sha256', roleSecret(secret)).update(`login:${login}`).digest('base64url');
}

/**
 * The connection string of a login: the owner URL's host, port and database, this login's credentials
 * (its given password, else the one derived from the secret).
 */
export function loginUrl(ownerUrl: string, login: ServiceLogin, secret?: string, password?: string): string {
  const url = new URL(ownerUrl);
  url.username = login;
  url.password = password ?? rolePassword(login, secret);
  return url.toString();
}

/** The SCRAM-SHA-256 verifier PostgreSQL stores for a password (RFC 5802 / 7677, PostgreSQL's format). */
export function scramVerifier(password: string, salt: Buffer): string {
  const salted = pbkdf2Sync(password, salt, SCRAM_ITERATIONS, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$${SCRAM_ITERATIONS}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}

function verifierOf(login: ServiceLogin, secret: string): string {
  const salt = createHmac('sha256', secret).update(`salt:${login}`).digest().subarray(0, 16);
  return scramVerifier(rolePassword(login, secret), salt);
}

const quote = (text: string) => `'${text.replace(/'/g, "''")}'`;

/**
 * Makes every service login LOGIN with its password, as the owner (after db/policies created the
 * roles). Roles are cluster-wide: one already in place (read from pg_authid when the owner may, or
 * proven by logging in) is left alone, so concurrent migrators of one cluster do not race on it.
 */
export async function ensureRoleLogins(client: pg.ClientBase, ownerUrl: string, secretOption?: string): Promise<ServiceLogin[]> {
  const secret = roleSecret(secretOption);
  const changed: ServiceLogin[] = [];
  for (const login of SERVICE_LOGINS) {
    const verifier = verifierOf(login, secret);
    if (await inPlace(client, ownerUrl, login, verifier, secret)) continue;
    for (let attempt = 1; ; attempt++) {
      try {
        // a verifier, not the password: nothing secret in the statement
        await client.query(`alter role ${login} with login password ${quote(verifier)}`);
        break;
      } catch (err) {
        // a concurrent migrator of another database of this cluster altered it first
        if ((err as { code?: string }).code !== 'XX000' || attempt >= 5) throw err;
        await new Promise((r) => setTimeout(r, 20 * attempt));
        if (await inPlace(client, ownerUrl, login, verifier, secret)) break;
      }
    }
    changed.push(login);
  }
  return changed;
}

async function inPlace(client: pg.ClientBase, ownerUrl: string, login: ServiceLogin, verifier: string, secret: string): Promise<boolean> {
  try {
    const { rows } = await client.query<{ ok: boolean }>(
      'select rolcanlogin and rolpassword = $2 as ok from pg_authid where rolname = $1', [login, verifier],
    );
    return rows[0]?.ok === true;
  } catch (err) {
    if ((err as { code?: string }).code !== '42501') throw err;
  }
  // an owner that may not read pg_authid (a managed database): try the login itself
  const probe = oneClient({ connectionString: loginUrl(ownerUrl, login, secret) });
  try {
    await probe.connect();
    return true;
  } catch {
    return false;
  } finally {
    await probe.end().catch(() => undefined);
  }
}
