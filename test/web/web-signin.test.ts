// The identity provider's sign-in in a real browser (Debian's chromium driven by Playwright): the
// auth and web roles on a test database, the bridge trusting a local OIDC issuer whose `/authorize`
// stands in for the provider's login page. "Sign in with <provider>" sends the tab there as an OIDC
// implicit ID-token request; it comes back with `#id_token=…&state=…` and lands signed in (first
// sign-in with an invite code typed before leaving, a returning user without one, a new user who
// is asked for the code on return). Refused with a visible error and without calling the bridge: a
// response whose `state` this tab did not start (a forged link, a tampered answer, a replay), an ID
// token whose `nonce` is not the tab's; the provider's own error is shown. Without chromium the
// browser tests are skipped with a message.
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from '@playwright/test';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { AUTH_SECRET, call, ISSUER } from '../helpers/money.ts';
import { startLocalIssuer, type LocalIssuer } from '../helpers/oidc-issuer.ts';
import { startTestPlatform, TEST_SERVICE_KEY, type TestPlatform } from '../helpers/platform.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SHOTS = path.join(ROOT, 'test-output', 'screenshots');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) {
  process.stdout.write(`web-signin: SKIPPED: no chromium at ${CHROMIUM}. Install Debian's package (apt-get install chromium) or set CHROMIUM_PATH to a Chromium binary.\n`);
}
const browserTest = haveChromium ? test : test.skip;

let db: TestDatabase;
let idp: LocalIssuer;
let platform: TestPlatform;
let web: string;
let browser: Browser | undefined;
beforeAll(async () => {
  db = await createTestDatabase();
  idp = await startLocalIssuer('poker-web-client');
  platform = await startTestPlatform({
    databaseUrl: db.url,
    roles: ['auth', 'web'],
    env: {
      AUTH_SECRET, AUTH_BASE_URL: ISSUER, ENABLE_TEST_AUTH: undefined,
      IDP_ISSUER: idp.issuer, IDP_JWKS_URL: idp.jwksUrl, IDP_AUDIENCE: idp.audience,
      WEB_IDP_AUTHORIZE_URL: idp.authorizeUrl, WEB_IDP_CLIENT_ID: idp.audience, WEB_IDP_NAME: 'Test IdP',
    },
  });
  web = platform.url('web');
});
afterAll(async () => {
  await browser?.close();
  await platform?.stop();
  await idp?.close();
  await db?.drop();
});

async function newPage(): Promise<{ context: BrowserContext; page: Page; errors: string[]; bridgeCalls: string[] }> {
  if (!browser) {
    const { chromium } = await import('@playwright/test');
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  }
  const context = await browser.newContext({ baseURL: web, viewport: { width: 1000, height: 700 } });
  const page = await context.newPage();
  const errors: string[] = [];
  const bridgeCalls: string[] = [];
  page.on('pageerror', (err) => errors.push(err.message));
  page.on('request', (req) => {
    if (new URL(req.url()).pathname === '/api/gw/auth/api/auth/bridge') bridgeCalls.push(req.postData() ?? '');
  });
  page.on('response', (res) => {
    if (res.status() >= 400) errors.push(`${res.status()} ${res.request().method()} ${new URL(res.url()).pathname}`);
  });
  page.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(msg.text());
  });
  return { context, page, errors, bridgeCalls };
}

async function screenshot(page: Page, name: string) {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
}

const invite = async () => {
  const answer = await call(`${platform.url('auth')}/admin/invite-codes`, { headers: { 'x-service-key': TEST_SERVICE_KEY }, body: {} });
  expect(answer.status).toBe(201);
  return answer.body.code as string;
};
const stored = (page: Page, key: string) => page.evaluate((k) => sessionStorage.getItem(k), key);
const status = (page: Page) => page.locator('#signin-status [role=alert]');

/** The user the page shows once signed in, and the JWT it holds (verified against the auth role's JWKS). */
async function signedIn(page: Page) {
  const who = page.getByTestId('user-id');
  await who.waitFor();
  const userId = (await who.textContent())!.replace('signed in: ', '').trim();
  const jwt = (await stored(page, 'poker.jwt'))!;
  const { payload } = await jwtVerify(jwt, createRemoteJWKSet(new URL(`${platform.url('auth')}/api/auth/jwks`)), { issuer: ISSUER, audience: ISSUER });
  expect(payload.sub).toBe(userId);
  return { userId, claims: payload };
}

test('GET /api/web/config tells the page where the provider signs in', async () => {
  const answer = await fetch(`${web}/api/web/config`);
  expect(answer.status).toBe(200);
  expect(await answer.json()).toMatchObject({ idp: { name: 'Test IdP', authorizeUrl: idp.authorizeUrl, clientId: 'poker-web-client' } });
});

describe('the provider\'s sign-in in the browser', () => {
  const sub = `idp-${randomUUID()}`;
  let firstUser = '';

  browserTest('first sign-in: the invite typed, the provider button, back signed in on the page asked for', async () => {
    const { context, page, errors } = await newPage();
    await page.goto('/#/signin?next=wallets');
    const button = page.locator('#signin-provider');
    expect(await button.textContent()).toBe('Sign in with Test IdP');
    await page.locator('#invite').fill(await invite());
    await screenshot(page, 'signin-provider');
    idp.signInAs({ sub, email: 'idp-player@example.com', email_verified: true });
    await button.click();
    const { userId, claims } = await signedIn(page);
    firstUser = userId;
    expect(claims.email).toBe('idp-player@example.com');
    await page.getByRole('heading', { name: 'Wallets' }).waitFor();
    // the ID token is gone from the address bar; the pending request from sessionStorage
    expect(new URL(page.url()).hash).toBe('#/wallets');
    expect(await stored(page, 'poker.oidc')).toBeNull();
    // the request the provider saw: an OIDC implicit ID-token request back to the page's own URL
    const request = idp.authorizeRequests.at(-1)!;
    expect(Object.fromEntries(request)).toMatchObject({
      response_type: 'id_token', response_mode: 'fragment', scope: 'openid email', client_id: 'poker-web-client', redirect_uri: `${web}/`,
    });
    expect(request.get('state')).toMatch(/^[\w-]{43}$/);
    expect(request.get('nonce')).toMatch(/^[\w-]{43}$/);
    expect(request.get('nonce')).not.toBe(request.get('state'));
    expect(errors).toEqual([]);
    await context.close();
  });

  browserTest('a returning user signs in without a code; the back button does not replay the token', async () => {
    expect(firstUser).not.toBe('');
    const { context, page, errors, bridgeCalls } = await newPage();
    await page.goto('/#/signin?next=wallets');
    idp.signInAs({ sub });
    await page.locator('#signin-provider').click();
    expect((await signedIn(page)).userId).toBe(firstUser);
    expect(bridgeCalls).toHaveLength(1);
    expect(JSON.parse(bridgeCalls[0]!)).not.toHaveProperty('inviteCode');
    await page.goBack();
    await page.waitForURL((url) => url.hash === '#/signin');
    expect(page.url()).not.toContain('id_token');
    expect(bridgeCalls).toHaveLength(1);
    expect(errors).toEqual([]);
    await context.close();
  });

  browserTest('a new user without a code is asked for one on return, and goes on with the same sign-in', async () => {
    const { context, page, errors, bridgeCalls } = await newPage();
    await page.goto('/#/signin?next=wallets');
    idp.signInAs({ sub: `idp-${randomUUID()}`, email: 'new-player@example.com' });
    await page.locator('#signin-provider').click();
    await status(page).getByText('A first sign-in needs an invite code.').waitFor();
    expect(await stored(page, 'poker.jwt')).toBeNull();
    await page.locator('#invite').fill(await invite());
    await page.locator('#signin-continue').click();
    const { claims } = await signedIn(page);
    expect(claims.email).toBe('new-player@example.com');
    await page.getByRole('heading', { name: 'Wallets' }).waitFor();
    expect(bridgeCalls).toHaveLength(2);
    expect(idp.authorizeRequests.filter((r) => r.get('state') === idp.authorizeRequests.at(-1)!.get('state'))).toHaveLength(1);
    // the one refusal (its answer, and chromium's console line for it)
    expect(errors).toContain('403 POST /api/gw/auth/api/auth/bridge');
    expect(errors.filter((e) => !/403/.test(e))).toEqual([]);
    await context.close();
  });

  browserTest('a forged state is refused with a visible error, and the bridge is never called', async () => {
    // an attacker's link carrying a valid ID token of the attacker's account (login CSRF)
    const attacker = await idp.idToken({ sub: `attacker-${randomUUID()}`, nonce: 'attacker-nonce' });
    const { context, page, errors, bridgeCalls } = await newPage();
    await page.goto(`/#id_token=${attacker}&state=forged-state`);
    await status(page).getByText(/its state differs/).waitFor();
    await screenshot(page, 'signin-forged-state');
    expect(page.url()).not.toContain('id_token');
    expect(await stored(page, 'poker.jwt')).toBeNull();

    // a tab that did start a sign-in: an answer with another state is refused the same way, and the
    // pending request is spent (the genuine answer arriving later finds nothing to match)
    idp.signInAs({ sub }, { state: 'tampered-state' });
    await page.reload(); // a fresh document: the alert to wait for is the answer's
    await page.locator('#signin-provider').click();
    await status(page).getByText(/its state differs/).waitFor();
    expect(await stored(page, 'poker.oidc')).toBeNull();
    const genuine = idp.authorizeRequests.at(-1)!.get('state')!;
    await page.goto('about:blank');
    await page.goto(`${web}/#id_token=${await idp.idToken({ sub, nonce: 'n' })}&state=${genuine}`);
    await status(page).getByText(/its state differs/).waitFor();

    expect(bridgeCalls).toEqual([]);
    expect(await stored(page, 'poker.jwt')).toBeNull();
    await expect(page.getByTestId('user-id').count()).resolves.toBe(0);
    expect(errors).toEqual([]);
    await context.close();
  });

  browserTest('an ID token with another nonce is refused; the provider\'s own error is shown', async () => {
    const { context, page, errors, bridgeCalls } = await newPage();
    await page.goto('/#/signin');
    idp.signInAs({ sub }, { nonce: 'replayed-nonce' });
    await page.locator('#signin-provider').click();
    await status(page).getByText(/its nonce differs/).waitFor();

    idp.signInAs(null);
    await page.locator('#signin-provider').click();
    await status(page).getByText('Test IdP did not sign you in: access_denied (the user cancelled).').waitFor();

    expect(bridgeCalls).toEqual([]);
    expect(await stored(page, 'poker.jwt')).toBeNull();
    expect(errors).toEqual([]);
    await context.close();
  });
});
