// The client's calls: every HTTP call goes to this page's own origin, through the web role's proxy
// (`/api/gw/<role>/<path>`), with the access JWT as the Bearer; the table's websocket goes through
// the same origin (`/api/gw/game/ws`), authenticated with a first `auth` message.

import type { ClientMessage } from '../server/game/live/messages.ts';
import type { ServerMessage, ServerMessageOf } from '../server/game/live/server-messages.ts';

const TOKEN_KEY = 'poker.jwt';

export interface Session {
  token: string;
  userId: string;
}

/** The access JWT of this tab (sessionStorage: gone when the tab closes; never a cookie). */
export function session(): Session | null {
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (!token) return null;
  try {
    const claims = JSON.parse(atob(token.split('.')[1]!.replace(/-/g, '+').replace(/_/g, '/'))) as { sub?: string; exp?: number };
    if (!claims.sub || (claims.exp && claims.exp * 1000 < Date.now())) throw new Error('expired');
    return { token, userId: claims.sub };
  } catch {
    sessionStorage.removeItem(TOKEN_KEY);
    return null;
  }
}

export const setToken = (token: string) => sessionStorage.setItem(TOKEN_KEY, token);
export const signOut = () => sessionStorage.removeItem(TOKEN_KEY);

export interface Answer<T = any> {
  status: number;
  ok: boolean;
  body: T;
}

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly body: any;
  constructor(status: number, body: any) {
    const code = typeof body?.error === 'string' ? (typeof body.code === 'string' ? body.code : body.error) : `http_${status}`;
    super(code);
    this.status = status;
    this.code = code;
    this.body = body;
  }
}

/** A call through the proxy; the answer whatever its status. */
export async function call<T = any>(role: 'auth' | 'game' | 'bank', path: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<Answer<T>> {
  const s = session();
  const headers: Record<string, string> = { accept: 'application/json', ...init.headers };
  if (s) headers.authorization = `Bearer ${s.token}`;
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`/api/gw/${role}${path}`, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  let body: any = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = { error: `http_${res.status}` };
  }
  return { status: res.status, ok: res.ok, body };
}

/** A call that must succeed: the body, else an ApiError with the server's code. */
export async function must<T = any>(role: 'auth' | 'game' | 'bank', path: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<T> {
  const a = await call<T>(role, path, init);
  if (!a.ok) throw new ApiError(a.status, a.body);
  return a.body;
}

/** The provider's browser sign-in (WEB_IDP_*): its authorization endpoint and our client id there. */
export interface IdentityProvider {
  name: string;
  authorizeUrl: string;
  clientId: string;
}

export async function webConfig(): Promise<{ testAuth: boolean; environment: string; idp: IdentityProvider | null }> {
  const res = await fetch('/api/web/config');
  return res.json();
}

/** A message the client sends (docs/protocol.md), as the server parses it; `ref` is added by `request`. */
export type Outgoing = ClientMessage extends infer M ? (M extends { ref?: unknown } ? Omit<M, 'ref'> : never) : never;
export type { ServerMessage, ServerMessageOf };

/**
 * The table connection: one websocket through the page's origin, authenticated first if signed in
 * (`ready`: the answer to `auth`, null for a spectator), requests answered by `ref`, every message
 * handed to `onMessage`. The messages are the server's own wire types (server-messages.ts), as the
 * example agent reads them.
 */
export class Live {
  private ws: WebSocket;
  private refs = 0;
  private waiting = new Map<string, (m: ServerMessage) => void>();
  readonly ready: Promise<ServerMessage | null>;
  onMessage: (m: ServerMessage) => void = () => undefined;
  onClose: (code: number) => void = () => undefined;

  constructor() {
    const url = new URL('/api/gw/game/ws', location.href);
    url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
    this.ws = new WebSocket(url);
    this.ready = new Promise((resolve, reject) => {
      this.ws.addEventListener('open', async () => {
        const s = session();
        if (!s) return resolve(null);
        resolve(await this.request({ type: 'auth', token: s.token }));
      });
      this.ws.addEventListener('error', () => reject(new Error('websocket_unavailable')));
    });
    this.ws.addEventListener('message', (ev) => {
      let m: ServerMessage;
      try {
        m = JSON.parse(String(ev.data)) as ServerMessage;
      } catch {
        return;
      }
      const ref = 'ref' in m && typeof m.ref === 'string' ? m.ref : undefined;
      const waiter = ref ? this.waiting.get(ref) : undefined;
      if (ref && waiter) {
        this.waiting.delete(ref);
        waiter(m);
      }
      this.onMessage(m);
    });
    this.ws.addEventListener('close', (ev) => this.onClose(ev.code));
  }

  send(m: ClientMessage) {
    this.ws.send(JSON.stringify(m));
  }

  /** Sends `m` with a fresh `ref`; resolves to the answer carrying it. */
  request(m: Outgoing): Promise<ServerMessage> {
    const ref = `w${++this.refs}`;
    return new Promise((resolve) => {
      this.waiting.set(ref, resolve);
      this.send({ ...m, ref } as ClientMessage);
    });
  }

  close() {
    this.onMessage = () => undefined;
    this.onClose = () => undefined;
    this.ws.close();
  }
}

/** The code of a refused answer, else the type of the unexpected one. */
export const refusal = (m: ServerMessage) => (m.type === 'error' ? m.code : m.type);

/** A random idempotency key (one per user action, reused on a retry of that action). */
export const idempotencyKey = () => crypto.randomUUID();
