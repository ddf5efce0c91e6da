// The auth role answers CORS for its trusted origins only (credentials, preflight), so the browser
// calls the spec describes can happen; in development the URLs `npm start` prints are trusted,
// never in production.
import { startAuth } from '../../server/roles/auth.ts';
import { authSettings } from '../../server/auth/config.ts';
import { loadConfig } from '../../server/config/index.ts';
import type { StartedRole } from '../../server/roles/types.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { captureLogger } from '../helpers/logs.ts';

const TRUSTED = 'https://poker-ui.test.local';
let db: TestDatabase;
let role: StartedRole;
beforeAll(async () => {
  db = await createTestDatabase();
  role = await startAuth({
    config: loadConfig({ NODE_ENV: 'test', PORT: '0', AUTH_SECRET: 'cors-test-secret-0123456789abcdefghij', AUTH_BASE_URL: 'http://auth.test.local', AUTH_TRUSTED_ORIGINS: TRUSTED }),
    databaseUrl: db.url, log: captureLogger('silent').log,
  });
});
afterAll(async () => {
  await role?.stop();
  await db?.drop();
});

const preflight = (origin: string, method = 'POST', headers = 'content-type, authorization') =>
  fetch(`${role.url}/api/auth/sign-in/email`, {
    method: 'OPTIONS', headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': headers },
  });

test('a preflight from a trusted origin: 204 with credentials, methods and headers', async () => {
  const res = await preflight(TRUSTED, 'POST', 'Content-Type, X-Evil');
  expect(res.status).toBe(204);
  expect(Object.fromEntries([...res.headers].filter(([k]) => k.startsWith('access-control-')))).toEqual({
    'access-control-allow-origin': TRUSTED,
    'access-control-allow-credentials': 'true',
    'access-control-allow-methods': 'GET, POST, DELETE, OPTIONS',
    'access-control-allow-headers': 'content-type, authorization',
    'access-control-max-age': '600',
  });
  expect(res.headers.get('vary')).toMatch(/origin/i);
});

test('a call from a trusted origin carries the origin and credentials; other origins get no CORS headers', async () => {
  const trusted = await fetch(`${role.url}/api/auth/jwks`, { headers: { origin: TRUSTED } });
  expect(trusted.status).toBe(200);
  expect(trusted.headers.get('access-control-allow-origin')).toBe(TRUSTED);
  expect(trusted.headers.get('access-control-allow-credentials')).toBe('true');
  for (const origin of ['https://evil.test', 'null', `${TRUSTED}.evil.test`, 'http://poker-ui.test.local']) {
    const res = await fetch(`${role.url}/api/auth/jwks`, { headers: { origin } });
    expect([origin, res.headers.get('access-control-allow-origin')]).toEqual([origin, null]);
    const pre = await preflight(origin);
    expect([origin, pre.status, await pre.json(), pre.headers.get('access-control-allow-origin')]).toEqual([origin, 403, { error: 'untrusted_origin' }, null]);
  }
});

test('in development the URLs npm start prints are trusted origins; in production they are not', async () => {
  const development = await authSettings(loadConfig({ NODE_ENV: 'development', AUTH_SECRET: 'x'.repeat(32) }));
  for (const origin of ['http://127.0.0.1:3673', 'http://127.0.0.1:3674', 'http://localhost:3675', 'http://127.0.0.1:3677']) {
    expect([origin, development.trustedOrigins.has(origin)]).toEqual([origin, true]);
  }
  const production = await authSettings(loadConfig({
    NODE_ENV: 'production', AUTH_SECRET: 'x'.repeat(32), SERVICE_KEY: 'k'.repeat(16), DB_ROLE_SECRET: 'd'.repeat(16), AUTH_BASE_URL: 'https://auth.example.com', AUTH_DOMAIN: 'example.com',
  }));
  expect([...production.trustedOrigins]).toEqual(['https://auth.example.com']);
});
