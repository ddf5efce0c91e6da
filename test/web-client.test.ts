// The web client in a real browser (Debian's chromium driven by Playwright) against the real roles
// (auth, game, cage, worker and web on a test database): sign in through the bridge with the test
// token, claim on the claim board (span ui.claim.submit), link wallets with an injected EIP-1193
// wallet (a viem account in node behind window.ethereum), sit at a cash table and play a hand to the
// end against a websocket bot, stand up and check the cage's signed receipt, read the hand
// histories, and register for and finish a 2-seat Sit-and-Go. Each page is saved as a screenshot
// under test-output/screenshots/. Without chromium (CHROMIUM_PATH or /usr/bin/chromium) the tests
// are skipped with a message saying how to get it.
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ed25519 } from '@noble/curves/ed25519.js';
import type { Browser, BrowserContext, Page } from '@playwright/test';
import type pg from 'pg';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { finishedSpans, installTelemetry, shutdownTelemetry } from '../server/telemetry/index.ts';
import { expectCleanAudit } from './helpers/cage.ts';
import { linkSolana } from './helpers/claims.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { latestState, liveClient, prng, until, type LiveClient, type LivePlayer } from './helpers/live.ts';
import { call, startMoneyPlatform } from './helpers/money.ts';
import { freePort } from './helpers/ports.ts';
import { playBot, SNG, tournamentBooks } from './helpers/tournament.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SHOTS = path.join(ROOT, 'test-output', 'screenshots');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) {
  process.stdout.write(`web-client: SKIPPED: no chromium at ${CHROMIUM}. Install Debian's package (apt-get install chromium) or set CHROMIUM_PATH to a Chromium binary.\n`);
}
const suite = haveChromium ? describe : describe.skip;

let db: TestDatabase;
let cagePool: pg.Pool;
let m: Awaited<ReturnType<typeof startMoneyPlatform>>;
let live: LiveClient;
let browser: Browser;
let web: string;

async function screenshot(page: Page, name: string) {
  mkdirSync(SHOTS, { recursive: true });
  const file = path.join(SHOTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  process.stdout.write(`web-client: screenshot ${path.relative(ROOT, file)}\n`);
}

/** A fresh browser context (its own sessionStorage) and page; console errors are collected. */
async function newPage(): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const context = await browser.newContext({ baseURL: web, viewport: { width: 1200, height: 900 } });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(err.message));
  page.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(msg.text());
  });
  return { context, page, errors };
}

/** Signs in on the sign-in page with the test token of a new subject and an invite: the user id and the JWT the page holds. */
async function signIn(page: Page, name: string, shot = false) {
  const invite = await call(`${m.platform.url('auth')}/admin/invite-codes`, { headers: m.service, body: {} });
  expect(invite.status).toBe(201);
  await page.goto('/#/signin');
  await page.locator('#invite').fill(invite.body.code);
  await page.locator('#test-subject').fill(`${name}-${Date.now()}`);
  if (shot) await screenshot(page, 'signin');
  await page.locator('#signin-test').click();
  const who = page.getByTestId('user-id');
  await who.waitFor();
  const userId = (await who.textContent())!.replace('signed in: ', '').trim();
  const jwt = (await page.evaluate(() => sessionStorage.getItem('poker.jwt')))!;
  return { userId, jwt, auth: { authorization: `Bearer ${jwt}` } };
}

suite('the web client in chromium', () => {
  beforeAll(async () => {
    await installTelemetry({ serviceName: 'web-client-test', memory: true });
    db = await createTestDatabase();
    cagePool = db.pool('poker_cage');
    // the auth role must trust the page's origin (link-wallet checks it): the web role's port is
    // taken up front and named in AUTH_TRUSTED_ORIGINS
    const webPort = await freePort();
    m = await startMoneyPlatform(db, {
      alsoWorker: true, alsoWeb: true,
      env: { HAND_DELAY_MS: '500', WEB_PORT: String(webPort), AUTH_TRUSTED_ORIGINS: `http://127.0.0.1:${webPort}` },
    });
    web = m.platform.url('web');
    live = liveClient(m, db);
    const on = await call(`${m.game}/admin/claim-settings`, { method: 'PATCH', headers: (await m.operator()).auth, body: { claimBoardEnabled: true } });
    expect(on.status).toBe(200);
    const { chromium } = await import('@playwright/test');
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  });
  afterAll(async () => {
    await browser?.close();
    await live?.closeAll();
    await m?.platform.stop();
    if (cagePool) await expectCleanAudit(cagePool);
    await db?.drop();
    await shutdownTelemetry();
  });

  test('sign in through the bridge, then claim the weekly baseline on the claim board (span ui.claim.submit)', async () => {
    const { context, page, errors } = await newPage();
    const me = await signIn(page, 'claimer', true);
    expect(me.userId).toMatch(/^[0-9a-f-]{36}$/);
    await linkSolana(db, me.userId); // the grant's recipient (the Solana link is not what this test is about)

    await page.goto('/#/claims');
    const claim = page.locator('button[data-claim="weekly_baseline"]');
    await expect(claim.isEnabled()).resolves.toBe(true);
    await screenshot(page, 'claims-before');
    await claim.click();
    await page.locator('#claim-status [data-outcome="credited"]').waitFor();
    await expect(page.locator('button[data-claim="weekly_baseline"]').isDisabled()).resolves.toBe(true);
    await screenshot(page, 'claims');

    expect(await m.balance(me.auth)).toBe(500);
    const spans = finishedSpans().filter((s) => s.name === 'ui.claim.submit');
    expect(spans.map((s) => s.attributes)).toContainEqual({ 'section.key': 'weekly_baseline', 'claim.outcome': 'credited' });
    expect(errors).toEqual([]);
    await context.close();
  });

  test('wallets: link two EVM wallets with the injected window.ethereum, set the second primary, unlink the first', async () => {
    const { context, page, errors } = await newPage();
    const accounts: PrivateKeyAccount[] = [privateKeyToAccount(generatePrivateKey()), privateKeyToAccount(generatePrivateKey())];
    let current = 0;
    const signed: string[] = [];
    // the wallet as a browser extension would be: the page calls window.ethereum.request, the key
    // stays in node (a viem account) and signs what the page asks
    await page.exposeFunction('__walletRequest', async (method: string, params: unknown[]) => {
      const account = accounts[current]!;
      if (method === 'eth_requestAccounts' || method === 'eth_accounts') return [account.address];
      if (method === 'eth_chainId') return '0x1';
      if (method === 'personal_sign') {
        signed.push(method);
        return account.signMessage({ message: { raw: params[0] as `0x${string}` } });
      }
      if (method === 'eth_signTypedData_v4') {
        signed.push(method);
        return account.signTypedData(JSON.parse(params[1] as string));
      }
      throw new Error(`unsupported method ${method}`);
    });
    await page.addInitScript(() => {
      // runs in the page (this file's types have no DOM: the page's global as what it is there)
      const page = globalThis as unknown as { ethereum: unknown; __walletRequest: (m: string, p: unknown[]) => Promise<unknown> };
      page.ethereum = { request: ({ method, params }: { method: string; params?: unknown[] }) => page.__walletRequest(method, params ?? []) };
    });
    const me = await signIn(page, 'wallets');
    await page.goto('/#/wallets');
    await page.locator('#link-wallet').click();
    await page.locator('#wallet-linked').waitFor();
    current = 1;
    await page.locator('#link-wallet').click();
    await page.getByText(`Linked: ${accounts[1]!.address}`).waitFor();
    await page.locator(`button[data-primary="${accounts[1]!.address}"]`).click();
    await page.getByText(`Primary: ${accounts[1]!.address}`).waitFor();
    await screenshot(page, 'wallets');
    await page.locator(`button[data-unlink="${accounts[0]!.address}"]`).click();
    await page.locator('#wallet-unlinked').waitFor();

    const list = await call(`${m.platform.url('auth')}/api/wallets`, { headers: me.auth });
    expect(list.body.wallets).toEqual([expect.objectContaining({ address: accounts[1]!.address, chainId: 1, isPrimary: true })]);
    expect(signed).toEqual(['personal_sign', 'personal_sign']);
    expect(errors).toEqual([]);
    await context.close();
  });

  test('a cash table: sit, play a hand to the end against a websocket bot, stand up, the receipt verified; the lobby and the hand histories', async () => {
    const { context, page, errors } = await newPage();
    const me = await signIn(page, 'cash');
    await m.buy(me.userId, 1000);
    const host = await m.player();
    const tableId = await m.table(host.auth);
    const bot = await live.player(1000);
    expect((await live.sit(bot, tableId, 0, 200)).type).toBe('seated');

    // the bot: checks or calls every turn until told to stop
    let stop = false;
    const botDone = (async () => {
      const answered = new Set<string>();
      while (!stop) {
        const s = await until(() => {
          if (stop) return { stop: true } as Record<string, any>;
          const st = latestState(bot.ws, tableId);
          return st?.legal && !answered.has(`${st.legal.handId}:${st.legal.seq}`) ? st : undefined;
        }, 'a turn of the bot', 60_000);
        if (s.stop) return;
        answered.add(`${s.legal.handId}:${s.legal.seq}`);
        const action = s.legal.actions.includes('check') ? 'check' : 'call';
        await live.request(bot.ws, { type: 'action', tableId, handId: s.legal.handId, seq: s.legal.seq, action });
      }
    })();

    await page.goto('/#/lobby');
    await page.locator(`a[data-table="${tableId}"]`).waitFor();
    await screenshot(page, 'lobby');
    await page.locator(`a[data-table="${tableId}"]`).click();
    await page.locator('#sit-seat').selectOption('1');
    await page.locator('#sit-amount').fill('200');
    await page.locator('#sit-button').click();
    await page.locator('#seated').waitFor();

    // play: check or call on each turn until the first hand's result is shown
    for (let turns = 0; turns < 50; turns++) {
      const next = page.locator('.hand-result, #act-check, #act-call').first();
      await next.waitFor({ timeout: 30_000 });
      if (await page.locator('.hand-result').count()) break;
      const turn = await page.locator('#actions').getAttribute('data-turn');
      if (turns === 0) await screenshot(page, 'table-turn');
      await page.locator('#act-check, #act-call').first().click();
      await page.waitForFunction((prev) => (globalThis as unknown as { document: { querySelector(s: string): { getAttribute(a: string): string | null } | null } })
        .document.querySelector('#actions')?.getAttribute('data-turn') !== prev, turn);
    }
    await page.locator('.hand-result').first().waitFor();
    await screenshot(page, 'table-hand-result');

    await page.locator('#stand-up').click();
    await page.locator('#stood-up').waitFor({ timeout: 30_000 });
    await page.locator('#receipts .receipt-verified').first().waitFor();
    expect(await page.locator('#receipts .receipt-invalid').count()).toBe(0);
    await screenshot(page, 'table-stood-up');
    stop = true;
    await botDone;

    // the receipt the page showed, checked here too: Ed25519 over its payload with the cage's published key
    const key = await call(`${m.cage}/api/cage/receipt-key`);
    const receipts = await call(`${m.cage}/api/cage/receipts`, { headers: me.auth });
    const mine = receipts.body.receipts.filter((r: { tableId: string }) => r.tableId === tableId);
    expect(mine).toHaveLength(1);
    const r = mine[0];
    expect(ed25519.verify(Buffer.from(r.signature, 'hex'), Buffer.from(r.payload, 'base64'), Buffer.from(key.body.publicKey, 'hex'))).toBe(true);
    const payload = JSON.parse(Buffer.from(r.payload, 'base64').toString('utf8'));
    expect(payload).toMatchObject({ userId: me.userId, tableId });
    const shown = await page.locator('#stood-up').textContent();
    expect(shown).toContain(`with ${payload.chipAmount} chips`);
    expect(await m.balance(me.auth)).toBe(800 + Number(payload.chipAmount));

    await page.goto('/#/hands');
    await page.locator('#hands button[data-hand]').first().click();
    await page.locator('#hand-detail pre').waitFor();
    await screenshot(page, 'hands');
    expect(errors).toEqual([]);
    await context.close();
  });

  test('a 2-seat Sit-and-Go: register and pay the entry in the browser, a bot takes the other seat, the tournament closes with its payouts', async () => {
    const { context, page, errors } = await newPage();
    const me = await signIn(page, 'sng');
    await m.buy(me.userId, 1000);
    const host = await m.player();
    const tableId = await m.table(host.auth, SNG({ seats: 2, deckSeed: 'web-client-sng' }));

    await page.goto('/#/lobby');
    await page.locator(`a[data-tournament="${tableId}"]`).click();
    await page.locator('#register').click();
    await page.locator('#registered').waitFor();
    await until(async () => (await page.locator('#registered-count').textContent()) === '1/2', 'the page to count one registration');
    await screenshot(page, 'tournament-registering');

    const bot: LivePlayer = await live.player(1000);
    await live.join(bot, tableId);
    const reserved = await live.request(bot.ws, { type: 'register_for_tournament', tableId });
    expect(reserved.type).toBe('tournament_registered');
    expect((await m.deposit(bot.auth, { tableId, amount: 100, seatIndex: reserved.seatIndex })).status).toBe(200);
    const played = playBot(live, bot, tableId, prng(21), 'random', 60_000);

    // the browser's seat is played by the turn timer (it checks, else folds); the bot goes all in often
    await page.locator('#level-blinds').waitFor({ timeout: 30_000 });
    await screenshot(page, 'tournament-playing');
    await page.locator('#tournament-state', { hasText: 'closed' }).waitFor({ timeout: 60_000 });
    await played;
    await page.locator('#payouts .payout-settled').first().waitFor();
    await screenshot(page, 'tournament-closed');

    const books = await tournamentBooks(db.owner, tableId);
    expect(books).toMatchObject({ state: 'closed', unconfirmed: 0 });
    const standings = await page.locator('#standings tbody tr').count();
    expect(standings).toBe(2);
    const paid = await page.locator('#payouts tbody tr').count();
    expect(paid).toBeGreaterThanOrEqual(1);
    expect(await m.balance(me.auth) + await m.balance(bot.auth)).toBe(2000 - 200 + Number(books.payouts));
    expect(errors).toEqual([]);
    await context.close();
  });
});
