// The operator CLI's HTTP side: the roles' URLs from the configuration `npm start` reads, the admin's
// sign-in on the auth role (email and password -> session -> access JWT, signed out at the end),
// and JSON calls that turn a refusal into a `Refusal` carrying the platform's own error code.
// Nothing here ever prints a credential: the password, the session token, the access JWT and the
// service key live only in memory and in request headers.
import type { Config, Role } from '../../config/index.ts';

export type OpsRole = Extract<Role, 'auth' | 'game' | 'cage' | 'admin'>;

/** The platform answered with an error status: its code (`{ error }`), printed as the platform said it. */
export class Refusal extends Error {
  readonly status: number;
  readonly code: string;
  readonly body: unknown;
  constructor(what: string, status: number, body: unknown) {
    const code = typeof (body as { error?: unknown })?.error === 'string' ? (body as { error: string }).error : `http_${status}`;
    super(`${what}: ${status} ${code}`);
    this.status = status;
    this.code = code;
    this.body = body;
  }
}

/** A problem of the command line or of the local configuration (exit 2). */
export class UsageError extends Error {}

/** A role could not be reached at all (exit 1, like a refusal: the act did not happen). */
export class Unreachable extends Error {}

const PORT_OF: Record<OpsRole, keyof Config> = { auth: 'PORT', game: 'GAME_PORT', cage: 'CAGE_PORT', admin: 'ADMIN_PORT' };
const URL_OF: Partial<Record<OpsRole, keyof Config>> = { auth: 'AUTH_URL', game: 'GAME_URL', cage: 'CAGE_URL' };

/**
 * A role's base URL: the `--<role>-url` flag, else the configuration variable the platform's own
 * roles use to reach it (AUTH_URL, GAME_URL, CAGE_URL), else http://HOST:<its port> as `npm start`
 * prints it (a wildcard HOST such as 0.0.0.0 is reached on 127.0.0.1).
 */
export function roleUrl(config: Config, role: OpsRole, flags: Record<string, string | true>): string {
  const flag = flags[`${role}-url`];
  if (flag === true) throw new UsageError(`--${role}-url needs a URL`);
  const configured = URL_OF[role] ? (config[URL_OF[role]] as string | undefined) : undefined;
  const host = ['0.0.0.0', '::', '[::]'].includes(config.HOST) ? '127.0.0.1' : config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST;
  const url = flag ?? configured ?? `http://${host}:${String(config[PORT_OF[role]])}`;
  if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) throw new UsageError(`--${role}-url: not an http(s) URL`);
  return url.replace(/\/+$/, '');
}

export interface CallOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: unknown;
  /** What the call is, for the refusal line (e.g. `purchase`). */
  what: string;
}

export async function callJson<T = any>(url: string, options: CallOptions): Promise<T> {
  let res: Response;
  try {
    res = await fetch(url, {
      method: options.method ?? (options.body === undefined ? 'GET' : 'POST'),
      headers: { accept: 'application/json', ...(options.body === undefined ? {} : { 'content-type': 'application/json' }), ...options.headers },
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal: AbortSignal.timeout(30_000),
    });
  } catch (err) {
    // only the URL, never the headers (they carry the credentials)
    throw new Unreachable(`${options.what}: ${new URL(url).origin} unreachable (${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message})`);
  }
  const text = await res.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  if (!res.ok) throw new Refusal(options.what, res.status, body);
  return body as T;
}

export interface Credentials {
  email: string;
  password: string;
}

/** An operator signed in: the access JWT's header, and the sign-out that ends the session. */
export interface OperatorSession {
  auth: Record<string, string>;
  signOut(): Promise<void>;
}

/**
 * The operator's sign-in, as test/helpers/operator.ts does it: `POST /api/auth/sign-in/email` (no
 * Origin header: a command line is not a browser, and the auth role's CSRF check judges only an
 * Origin that is sent), then `GET /api/auth/token` with the session token as the Bearer. The session
 * is signed out when the command ends, so no operator session outlives the command that opened it.
 */
export async function signIn(authUrl: string, credentials: Credentials): Promise<OperatorSession> {
  const session = await callJson<{ token?: string }>(`${authUrl}/api/auth/sign-in/email`, { what: 'sign-in', body: credentials });
  if (typeof session?.token !== 'string') throw new Refusal('sign-in', 502, { error: 'no_session_token' });
  const bearer = { authorization: `Bearer ${session.token}` };
  const signOut = async () => {
    await callJson(`${authUrl}/api/auth/sign-out`, { what: 'sign-out', method: 'POST', headers: bearer }).catch(() => undefined);
  };
  try {
    const token = await callJson<{ token?: string }>(`${authUrl}/api/auth/token`, { what: 'token', headers: bearer });
    if (typeof token?.token !== 'string') throw new Refusal('token', 502, { error: 'no_access_token' });
    return { auth: { authorization: `Bearer ${token.token}` }, signOut };
  } catch (err) {
    await signOut();
    throw err;
  }
}
