// The web role without a browser: what it serves (the page, the modules type-stripped, the security
// headers), what it refuses (paths that leave web/, calls off the proxy's allowlist, foreign
// websocket pages) and how: coded 4xx JSON, never a 500. The proxy forwards the player's JWT
// unchanged and never a service key; the websocket relay reaches the game role.
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { rawRequest } from '../helpers/fuzz.ts';
import { call, startMoneyPlatform } from '../helpers/money.ts';
import { connect } from '../helpers/ws-client.ts';

let db: TestDatabase;
let m: Awaited<ReturnType<typeof startMoneyPlatform>>;
let web: string;
beforeAll(async () => {
  db = await createTestDatabase();
  m = await startMoneyPlatform(db, { alsoWeb: true });
  web = m.platform.url('web');
});
afterAll(async () => {
  await m?.platform.stop();
  await db?.drop();
});

test('the page and its modules: type-stripped JavaScript, a CSP without inline scripts, nosniff', async () => {
  const page = await fetch(`${web}/`);
  expect(page.status).toBe(200);
  expect(page.headers.get('content-type')).toMatch(/^text\/html/);
  const csp = page.headers.get('content-security-policy')!;
  expect(csp).toContain("script-src 'self'");
  expect(csp).not.toContain('unsafe-inline');
  expect(csp).toContain("frame-ancestors 'none'");
  expect(page.headers.get('x-content-type-options')).toBe('nosniff');
  const html = await page.text();
  expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/); // every script is a file

  const main = await fetch(`${web}/app/main.ts`);
  expect(main.status).toBe(200);
  expect(main.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
  const js = await main.text();
  expect(js).toContain("import { session, signOut } from './api.ts';");
  expect(js).not.toMatch(/export type Page =/); // types are gone
  // revalidated (raw: fetch itself would add cache-control: no-cache to a conditional request)
  const again = await rawRequest(web, { method: 'GET', path: '/app/main.ts', headers: { 'if-none-match': main.headers.get('etag')! } });
  expect(again.status).toBe(304);
});

test('paths that would leave web/ and names it does not serve: coded 4xx, never the file', async () => {
  for (const path of [
    '/app/..%2fpackage.json', '/app/%2e%2e%2f%2e%2e%2fpackage.json', '/app/../package.json', '/app/.env', '/app/tsconfig.json',
    '/app/Main.ts', '/app/main.ts.bak', '/app/%00main.ts', '/app/%', '/app/', '/web/main.ts', '/index.html', '/app/x'.padEnd(400, 'x') + '.ts',
  ]) {
    const answer = await rawRequest(web, { method: 'GET', path, headers: {} });
    expect({ path, status: answer.status >= 400 && answer.status < 500 }).toEqual({ path, status: true });
    expect(JSON.parse(answer.text)).toEqual({ error: expect.any(String) });
    expect(answer.text).not.toContain('poker-platform');
  }
});

test('the proxy: only its allowlist, the JWT forwarded unchanged, upstream codes kept', async () => {
  const p = await m.player(300);
  // off the allowlist: internal, admin and service routes, other roles, traversal spellings
  for (const [method, path] of [
    ['POST', '/api/gw/auth/admin/invite-codes'], ['GET', '/api/gw/auth/api/internal/user-wallets/x'], ['POST', '/api/gw/bank/api/grant'],
    ['POST', '/api/gw/bank/internal/bust'], ['POST', '/api/gw/game/internal/claim-board/condition-met'], ['GET', '/api/gw/admin/graphql'],
    ['GET', '/api/gw/game/api/tables/..%2f..%2finternal'], ['GET', '/api/gw/game/api/tables/%2e%2e'], ['GET', '/api/gw/game/claim-board/state/'],
    ['GET', '/api/gw/game'], ['DELETE', '/api/gw/game/api/tables'], ['POST', '/api/gw/bank/api/operator/purchase'],
    // an inherited property's name is no upstream (found by the fuzz: it was a 500)
    ['POST', '/api/gw/valueOf/api/hands'], ['GET', '/api/gw/constructor/api/tables'], ['GET', '/api/gw/__proto__/api/tables'],
  ] as const) {
    const answer = await rawRequest(web, { method, path, headers: { ...p.auth, 'x-service-key': m.service['x-service-key'] } });
    expect({ method, path, status: answer.status }).toEqual({ method, path, status: answer.status >= 400 && answer.status < 500 ? answer.status : 'not 4xx' });
    expect(JSON.parse(answer.text).error).toEqual(expect.any(String));
  }
  // on it: the caller's own balance (the JWT reached the bank) and the bank's refusal codes as they are
  expect(await call(`${web}/api/gw/bank/api/cage/balances`, { headers: p.auth })).toMatchObject({ status: 200, body: { balances: { play: 300 } } });
  expect(await call(`${web}/api/gw/bank/api/cage/balances`)).toMatchObject({ status: 401, body: { error: expect.any(String) } });
  expect(await call(`${web}/api/gw/game/claim-board/state`, { headers: { authorization: 'Bearer a.b.c' } })).toMatchObject({ status: 401 });
  const tables = await call(`${web}/api/gw/game/api/tables?mode=cash`);
  expect(tables.status).toBe(200);
  expect(await call(`${web}/api/gw/game/api/tables?mode=nope`)).toMatchObject({ status: 400, body: { error: 'bad_request' } });
  // hostile bodies are refused here, before anything is forwarded
  const deep = await rawRequest(web, { method: 'POST', path: '/api/gw/game/claim-board/claim', headers: { ...p.auth, 'content-type': 'application/json' }, body: Buffer.from(`${'['.repeat(100)}${']'.repeat(100)}`) });
  expect(deep.status).toBe(400);
  const broken = await rawRequest(web, { method: 'POST', path: '/api/gw/bank/api/deposit', headers: { ...p.auth, 'content-type': 'application/json' }, body: Buffer.from('{') });
  expect(JSON.parse(broken.text)).toEqual({ error: 'malformed_json' });
});

test('the websocket relay: the game role on the page origin; a foreign page and other paths refused', async () => {
  const wsBase = web.replace(/^http/, 'ws');
  const ws = await connect(`${wsBase}/api/gw/game/ws`, { origin: web });
  expect(await ws.next((x) => x.type === 'hello')).toMatchObject({ role: 'spectator' });
  ws.send({ type: 'ping', ref: 1 });
  expect(await ws.next((x) => x.ref === 1)).toMatchObject({ type: 'pong' });
  await ws.close();
  await expect(connect(`${wsBase}/api/gw/game/ws`, { origin: 'https://evil.example' })).rejects.toThrow(/403/);
  await expect(connect(`${wsBase}/api/gw/game/internal`)).rejects.toThrow(/404/);
  await expect(connect(`${wsBase}/ws`)).rejects.toThrow(/404/);
  const health = await call(`${web}/health`);
  expect(health).toEqual({ status: 200, body: { ok: true, latency: expect.any(Number) } });
});
