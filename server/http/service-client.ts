// Calls from one role to another over the HTTP seams (x-service-key, JSON, a deadline). A coded
// refusal from the other side comes back as { status, body }; anything else (refused connection,
// timeout, a 5xx, a body that is not JSON) is `unreachable`: the caller cannot know what happened.
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

export function createServiceClient(options: {
  /** The other role's base URL, read at every call (it may be known only after both started). */
  baseUrl: () => string | undefined;
  serviceKey: string | undefined;
  timeoutMs: number;
}): ServiceClient {
  const call = async <T>(method: 'GET' | 'POST', path: string, body?: unknown, callOptions: CallOptions = {}): Promise<ServiceAnswer<T>> => {
    const base = options.baseUrl();
    if (!base) return { ok: false, status: 0, unreachable: true, reason: 'not_configured', body: {} };
    let res: Response;
    try {
      res = await fetch(`${base.replace(/\/+$/, '')}${path}`, {
        method,
        headers: {
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          // a user's call forwarded carries the user's token, never the service key
          ...(callOptions.bearer ? { authorization: `Bearer ${callOptions.bearer}` } : { 'x-service-key': options.serviceKey ?? '' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body, bigintAsString),
        signal: AbortSignal.timeout(options.timeoutMs),
      });
    } catch (err) {
      return { ok: false, status: 0, unreachable: true, reason: (err as Error).name, body: {} };
    }
    let parsed: unknown;
    try {
      parsed = await res.json();
    } catch {
      return { ok: false, status: 0, unreachable: true, reason: `non-JSON ${res.status}`, body: {} };
    }
    if (res.status >= 500) return { ok: false, status: 0, unreachable: true, reason: `status ${res.status}`, body: {} };
    if (res.ok) return { ok: true, status: res.status, body: parsed as never };
    return { ok: false, status: res.status, body: (parsed ?? {}) as { error?: string } };
  };
  return {
    post: (path, body, callOptions) => call('POST', path, body, callOptions),
    get: (path, callOptions) => call('GET', path, undefined, callOptions),
  };
}
