// Calls from one role to another over the HTTP seams (x-service-key, JSON, a deadline). A coded
// refusal from the other side comes back as { status, body }; anything else (refused connection,
// timeout, a 5xx, a body that is not JSON) is `unreachable`: the caller cannot know what happened.
// the module objects, read at each call: tracing (server/telemetry/register.ts) patches their
// request functions, and a named import would keep the unpatched one
import http from 'node:http';
import https from 'node:https';
import { bigintAsString } from './json.ts';

export type ServiceAnswer<T> =
  | { ok: true; status: number; body: T }
  | { ok: false; status: number; body: { error?: string; [k: string]: unknown } }
  | { ok: false; status: 0; unreachable: true; reason: string; body: { error?: string } };

/** Whose credential a call carries: the service key (role to role), or a user's access JWT forwarded. */
export interface CallOptions {
  /** Forward this access JWT (`Authorization: Bearer`) instead of sending the service key. */
  bearer?: string;
}

export interface ServiceClient {
  post<T = Record<string, unknown>>(path: string, body: unknown, options?: CallOptions): Promise<ServiceAnswer<T>>;
  get<T = Record<string, unknown>>(path: string, options?: CallOptions): Promise<ServiceAnswer<T>>;
}

/** The largest answer another role may send (anything longer is `unreachable`, not buffered). */
const MAX_ANSWER_BYTES = 8 * 1024 * 1024;

/**
 * One HTTP exchange on node:http(s) with a keep-alive agent: role-to-role calls are many and small,
 * and fetch (undici, web streams, an AbortSignal per call) costs several times as much CPU per call.
 * Resolves with the status and the raw body; rejects on a refused connection, the deadline, or an
 * answer beyond MAX_ANSWER_BYTES.
 */
export function exchange(url: URL, init: { method: string; headers: Record<string, string>; body?: string; timeoutMs: number; agents: Agents }): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const secure = url.protocol === 'https:';
    const req = (secure ? https.request : http.request)(url, {
      method: init.method,
      headers: init.body === undefined ? init.headers : { ...init.headers, 'content-length': String(Buffer.byteLength(init.body)) },
      agent: secure ? init.agents.https : init.agents.http,
    }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_ANSWER_BYTES) req.destroy(new Error('AnswerTooLarge'));
        else chunks.push(chunk);
      });
      res.on('end', () => {
        clearTimeout(deadline);
        resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') });
      });
      res.on('error', reject);
    });
    const deadline = setTimeout(() => req.destroy(Object.assign(new Error('the deadline passed'), { name: 'TimeoutError' })), init.timeoutMs);
    req.on('error', (err) => {
      clearTimeout(deadline);
      reject(err);
    });
    req.end(init.body);
  });
}

export interface Agents { http: http.Agent; https: https.Agent }

/**
 * Why a call got no answer, as an operator reads it (an intent's stuck reason, a log line): the
 * socket's error code (ECONNREFUSED, ECONNRESET, ...) or the error's name (TimeoutError,
 * AnswerTooLarge); never its message, which names addresses.
 */
function failureOf(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  return typeof e?.code === 'string' && /^[A-Z_]{3,40}$/.test(e.code) ? e.code : (e?.name ?? 'Error');
}

/** A 5xx's own code, when it sent one (` chain_unavailable`), for the reason. */
function codeOf(body: unknown): string {
  const code = (body as { error?: unknown } | null)?.error;
  return typeof code === 'string' && /^[a-z_]{1,64}$/.test(code) ? ` ${code}` : '';
}

/**
 * How long a kept-alive socket may idle before this side closes it. A server closes an idle socket
 * itself (node's default after 5 s, announced as `Keep-Alive: timeout=5`); a call that takes the
 * socket just as it does is reset, unanswered (`socket hang up`: cage_unavailable for a sit). node's
 * agent closes a free socket first, at the announced timeout less 1 s, only when it has a timeout
 * of its own to lower; without one it keeps free sockets forever. The timeout applies to free
 * sockets only: a call in flight is bounded by its deadline (timeoutMs).
 */
export const IDLE_SOCKET_MS = 4000;

export function createServiceClient(options: {
  /** The other role's base URL, read at every call (it may be known only after both started). */
  baseUrl: () => string | undefined;
  serviceKey: string | undefined;
  timeoutMs: number;
}): ServiceClient {
  // connections to the other role are kept open between calls (one agent per client), and closed
  // idle before the other role would close them (IDLE_SOCKET_MS)
  const kept = { keepAlive: true, maxSockets: 64, timeout: IDLE_SOCKET_MS };
  const agents: Agents = { http: new http.Agent(kept), https: new https.Agent(kept) };
  const call = async <T>(method: 'GET' | 'POST', path: string, body?: unknown, callOptions: CallOptions = {}): Promise<ServiceAnswer<T>> => {
    const base = options.baseUrl();
    if (!base) return { ok: false, status: 0, unreachable: true, reason: 'not_configured', body: {} };
    let res: { status: number; text: string };
    try {
      res = await exchange(new URL(`${base.replace(/\/+$/, '')}${path}`), {
        method,
        headers: {
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          // a user's call forwarded carries the user's token, never the service key
          ...(callOptions.bearer ? { authorization: `Bearer ${callOptions.bearer}` } : { 'x-service-key': options.serviceKey ?? '' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body, bigintAsString),
        timeoutMs: options.timeoutMs,
        agents,
      });
    } catch (err) {
      return { ok: false, status: 0, unreachable: true, reason: failureOf(err), body: {} };
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(res.text);
    } catch {
      return { ok: false, status: 0, unreachable: true, reason: `non-JSON ${res.status}`, body: {} };
    }
    if (res.status >= 500) return { ok: false, status: 0, unreachable: true, reason: `status ${res.status}${codeOf(parsed)}`, body: {} };
    if (res.status >= 200 && res.status < 300) return { ok: true, status: res.status, body: parsed as never };
    return { ok: false, status: res.status, body: (parsed ?? {}) as { error?: string } };
  };
  return {
    post: (path, body, callOptions) => call('POST', path, body, callOptions),
    get: (path, callOptions) => call('GET', path, undefined, callOptions),
  };
}
