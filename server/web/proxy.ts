// The web role's same-origin proxy: the browser calls `/api/gw/<role>/<path>` on the page's own
// origin and the web role forwards the call to that role, for a fixed allowlist of (method, path)
// only. What is forwarded: the Authorization header unchanged (the player's access JWT), the
// Origin (the auth role's trusted-origin check judges the page's origin), an Idempotency-Key, the
// query string and a JSON body (parsed and size-checked here first). Never cookies, never the
// service key (the web role holds none). The upstream's answer comes back as it is (its body, content
// type and download name, e.g. `?format=phh` hand histories as text), except that an
// upstream that cannot be reached, times out or fails uncoded is a coded 502/504 here.
// `/api/gw/game/ws` and `/api/gw/game/ws/tables/<tableId>` are the game role's websocket, relayed
// byte for byte (ws.ts).
// `bank` is two banks behind one name (server/bank-contract/): a call naming a table (the deposit,
// the withdraw, the tournament unregister) goes to that table's own bank, learnt from the game
// role's table read (its `bank`) and remembered (a table's bank never changes); the deposit read
// asks the cage, then the chain bank when the cage does not know the key; the chain's reads
// (/api/chain...) go to the chain bank; the rest to the cage.
import type { Express, Request, Response } from 'express';
import { tableId as tableIdSchema } from '../http/schemas.ts';
import type { BankName } from '../bank-contract/contract.ts';
import { isBankName } from '../bank-contract/routing.ts';
import { ApiError } from '../http/errors.ts';
import { withSpan } from '../telemetry/index.ts';

export type Upstream = 'auth' | 'game' | 'bank';

/** Each upstream's allowed calls: a method and a path pattern (`:x` one segment). */
export const ALLOWLIST: Record<Upstream, [string, string][]> = {
  auth: [
    ['POST', '/api/auth/bridge'],
    ['POST', '/api/auth/siwe/nonce'],
    ['POST', '/api/link-wallet'],
    ['POST', '/api/auth/solana/nonce'],
    ['POST', '/api/link-wallet/solana'],
    ['GET', '/api/wallets'],
    ['POST', '/api/wallets/set-primary'],
    ['DELETE', '/api/wallets/:address'],
  ],
  game: [
    ['GET', '/claim-board/state'],
    ['POST', '/claim-board/claim'],
    ['GET', '/api/tables'],
    ['GET', '/api/tables/:tableId'],
    ['GET', '/api/hands'],
    ['GET', '/api/hands/:handId'],
  ],
  bank: [
    ['GET', '/api/economy'],
    ['POST', '/api/deposit'],
    ['GET', '/api/deposits/:idempotencyKey'],
    ['POST', '/api/withdraw'],
    ['POST', '/api/tournament/unregister'],
    ['GET', '/api/cage/balances'],
    ['GET', '/api/cage/receipts'],
    ['GET', '/api/cage/receipt-key'],
    // a player's custody (an escaped table's chips): read, and claimed back to the cage balance
    ['GET', '/api/custody'],
    ['POST', '/api/custody/claim'],
    ['GET', '/api/chain'],
    ['GET', '/api/chain/nonces/:address'],
  ],
};

const SEGMENT = /^[A-Za-z0-9._:~-]{1,128}$/;

/** Whether `path` (decoded segments checked, never `..`) is on `role`'s allowlist for `method`. */
export function allowed(role: Upstream, method: string, path: string): boolean {
  const segments = path.split('/');
  return ALLOWLIST[role].some(([m, pattern]) => {
    if (m !== method) return false;
    const want = pattern.split('/');
    if (want.length !== segments.length) return false;
    return want.every((w, i) => (w.startsWith(':') ? SEGMENT.test(segments[i]!) && !/^\.+$/.test(segments[i]!) : w === segments[i]));
  });
}

const FORWARDED_HEADERS = ['authorization', 'origin', 'idempotency-key', 'accept'];

interface Answer {
  status: number;
  contentType: string | null;
  /** A download name the upstream gave (a hand history's `.phh`). */
  contentDisposition: string | null;
  body: Buffer;
}

async function forward(base: string, req: Request, path: string, timeoutMs: number): Promise<Answer> {
  const headers: Record<string, string> = {};
  for (const name of FORWARDED_HEADERS) {
    const value = req.get(name);
    if (value !== undefined) headers[name] = value;
  }
  const query = req.originalUrl.includes('?') ? req.originalUrl.slice(req.originalUrl.indexOf('?')) : '';
  const hasBody = req.method !== 'GET' && req.method !== 'DELETE';
  if (hasBody) headers['content-type'] = 'application/json';
  let res: globalThis.Response;
  try {
    res = await fetch(`${base}${path}${query}`, {
      method: req.method, headers, redirect: 'manual', signal: AbortSignal.timeout(timeoutMs),
      body: hasBody ? JSON.stringify(req.body ?? {}) : undefined,
    });
  } catch (err) {
    if ((err as Error).name === 'TimeoutError') throw new ApiError(504, 'upstream_timeout');
    throw new ApiError(502, 'upstream_unavailable');
  }
  const body = Buffer.from(await res.arrayBuffer());
  // a coded answer passes; an uncoded 5xx (or a 500 of any kind) is the upstream's failure
  if (res.status >= 500 && (res.status === 500 || !codeOf(body))) throw new ApiError(502, 'upstream_error');
  return { status: res.status, contentType: res.headers.get('content-type'), contentDisposition: res.headers.get('content-disposition'), body };
}

function codeOf(body: Buffer): string | undefined {
  try {
    const parsed = JSON.parse(body.toString('utf8')) as { error?: unknown };
    return typeof parsed?.error === 'string' ? parsed.error : undefined;
  } catch {
    return undefined;
  }
}

function send(res: Response, answer: Answer) {
  res.status(answer.status);
  if (answer.contentType) res.set('content-type', answer.contentType);
  if (answer.contentDisposition) res.set('content-disposition', answer.contentDisposition);
  res.send(answer.body);
}

/** What the proxy forwards to: each role's base URL, and each bank's (the `bank` upstream is both). */
export interface ProxyDeps {
  upstream: (role: Exclude<Upstream, 'bank'>) => string | undefined;
  bank: (bank: BankName) => string | undefined;
  /** The bank of the calls that name no table: the cage, or the chain bank of a deployment without one. */
  defaultBank: () => BankName;
  timeoutMs: number;
}

/** The bank calls that name a table in their body: each goes to that table's own bank. */
const BY_TABLE = new Set(['POST /api/deposit', 'POST /api/withdraw', 'POST /api/tournament/unregister']);
/** Tables' banks as the game role read them (bounded: forgotten all at once when full). */
const tableBanks = new Map<string, BankName>();
const TABLE_BANKS_MAX = 10_000;

/** A table's bank, read from the game role's table read; undefined for a table that does not exist. */
async function bankOfTable(deps: ProxyDeps, tableId: string): Promise<BankName | undefined> {
  const known = tableBanks.get(tableId);
  if (known) return known;
  const game = deps.upstream('game');
  if (!game) throw new ApiError(503, 'upstream_not_configured');
  let res: globalThis.Response;
  try {
    res = await fetch(`${game}/api/tables/${encodeURIComponent(tableId)}`, { signal: AbortSignal.timeout(deps.timeoutMs) });
  } catch (err) {
    throw new ApiError((err as Error).name === 'TimeoutError' ? 504 : 502, (err as Error).name === 'TimeoutError' ? 'upstream_timeout' : 'upstream_unavailable');
  }
  if (res.status === 404) return undefined;
  const body = (await res.json().catch(() => undefined)) as { bank?: unknown } | undefined;
  if (!res.ok || !isBankName(body?.bank)) throw new ApiError(502, 'upstream_error');
  if (tableBanks.size >= TABLE_BANKS_MAX) tableBanks.clear();
  tableBanks.set(tableId, body.bank);
  return body.bank;
}

/**
 * The bank a call goes to: the named table's own (a table that does not exist, or no table id:
 * the default bank, which answers the refusal), the chain bank for its chain reads, else the
 * default bank.
 */
async function bankFor(deps: ProxyDeps, req: Request, path: string): Promise<BankName> {
  if (path === '/api/chain' || path.startsWith('/api/chain/')) return 'chain';
  if (!BY_TABLE.has(`${req.method} ${path}`)) return deps.defaultBank();
  const tableId = tableIdSchema.safeParse((req.body as { tableId?: unknown } | undefined)?.tableId);
  return (tableId.success && (await bankOfTable(deps, tableId.data))) || deps.defaultBank();
}

/** The deposit read: the cage's answer, unless it does not know the key and the chain bank does. */
async function depositRead(deps: ProxyDeps, req: Request, path: string): Promise<Answer> {
  const cage = deps.defaultBank() === 'cage' ? deps.bank('cage') : undefined;
  const fromCage = cage ? await forward(cage, req, path, deps.timeoutMs) : undefined;
  if (fromCage && !(fromCage.status === 404 && codeOf(fromCage.body) === 'deposit_not_found')) return fromCage;
  const chain = deps.bank('chain');
  if (!chain) {
    if (fromCage) return fromCage;
    throw new ApiError(503, 'upstream_not_configured');
  }
  return forward(chain, req, path, deps.timeoutMs);
}

/** A bank route, forwarded to the bank it belongs to. */
async function forwardToBank(deps: ProxyDeps, req: Request, raw: string, path: string): Promise<Answer> {
  if (req.method === 'GET' && path.startsWith('/api/deposits/')) return depositRead(deps, req, raw);
  const base = deps.bank(await bankFor(deps, req, path));
  if (!base) throw new ApiError(503, 'upstream_not_configured');
  return forward(base, req, raw, deps.timeoutMs);
}

export function installProxyRoutes(app: Express, deps: ProxyDeps) {
  app.all('/api/gw/:role/{*rest}', async (req, res) => {
    const role = req.params.role as string;
    // own keys only: 'valueOf', 'constructor' and the like are no upstream
    if (!Object.hasOwn(ALLOWLIST, role)) throw new ApiError(404, 'not_proxied');
    // the path as sent (still %-encoded): forwarded as written, judged decoded segment by segment
    const raw = req.path.slice(`/api/gw/${role}`.length);
    let decoded: string[];
    try {
      decoded = raw.split('/').map((s) => decodeURIComponent(s));
    } catch {
      throw new ApiError(400, 'malformed_path');
    }
    if (decoded.some((s, i) => i > 0 && (s === '' || s.includes('/')))) throw new ApiError(404, 'not_proxied');
    if (!allowed(role as Upstream, req.method, decoded.join('/'))) throw new ApiError(404, 'not_proxied');
    if (role === 'bank') return void send(res, await forwardToBank(deps, req, raw, decoded.join('/')));
    const base = deps.upstream(role as Exclude<Upstream, 'bank'>);
    if (!base) throw new ApiError(503, 'upstream_not_configured');
    if (role === 'game' && raw === '/claim-board/claim') return void send(res, await submitClaim(base, req, deps.timeoutMs));
    send(res, await forward(base, req, raw, deps.timeoutMs));
  });
}

/**
 * The claim submit (spec: span `ui.claim.submit`, attributes `section.key` and `claim.outcome`, or
 * `error.code` when the claim answered no outcome).
 */
function submitClaim(base: string, req: Request, timeoutMs: number): Promise<Answer> {
  const key = typeof req.body?.sectionKey === 'string' ? req.body.sectionKey.slice(0, 64) : '';
  return withSpan('ui.claim.submit', { 'section.key': key }, async (span) => {
    const answer = await forward(base, req, '/claim-board/claim', timeoutMs);
    let body: { outcome?: unknown; error?: unknown } = {};
    try {
      body = JSON.parse(answer.body.toString('utf8'));
    } catch {
      // not JSON: recorded as the status below
    }
    if (typeof body?.outcome === 'string') span.setAttribute('claim.outcome', body.outcome);
    else span.setAttribute('error.code', typeof body?.error === 'string' ? body.error : `http_${answer.status}`);
    return answer;
  });
}
