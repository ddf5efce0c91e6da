// The web client in a real browser (Debian's chromium driven by Playwright) against the real roles
// (auth, game, cage, worker and web on a test database): sign in through the bridge with the test
// token, claim on the claim board (span ui.claim.submit), link wallets with an injected EIP-1193
// wallet (a viem account in node behind window.ethereum), sit at a cash table and play a hand to the
// end against a websocket bot, stand up and check the cage's signed receipt, read the hand
// histories, and register for and finish a 2-seat Sit-and-Go; link a Solana wallet with an injected
// Phantom-style window.solana (an Ed25519 key in node). Then a second platform on the chain bank
// (auth, game, chain-bank with its local anvil, web): link the EVM wallet in the page, sit at a chain
// table with an ERC-2612 permit the injected wallet signs (eth_signTypedData_v4), stand up and find
// the chips back in the wallet on chain; register for a chain Sit-and-Go with a permit for the entry
// fee and unregister (refunded on chain). Each page is saved as a screenshot
// under test-output/screenshots/. Without chromium (CHROMIUM_PATH or /usr/bin/chromium) the tests
// are skipped with a message saying how to get it.
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ed25519 } from '@noble/curves/ed25519.js';
import type { Browser, BrowserContext, Page } from '@playwright/test';
import type pg from 'pg';
import { base58 } from '@scure/base';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { mintChips } from '../../server/chain/dev-wallet.ts';
import { createChainBankChain } from '../../server/chain/evm.ts';
import type { LocalChain } from '../helpers/chain-bank.ts';
import { finishedSpans, installTelemetry, shutdownTelemetry } from '../../server/telemetry/index.ts';
import { expectCleanAudit } from '../helpers/cage.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { latestState, liveClient, prng, until, type LiveClient, type LivePlayer } from '../helpers/live.ts';
import { AUTH_SECRET, call, ISSUER, POKER_SETTINGS, startMoneyPlatform } from '../helpers/money.ts';
import { startTestPlatform, TEST_SERVICE_KEY, type TestPlatform } from '../helpers/platform.ts';
import { freePort } from '../helpers/ports.ts';
import { playBot, SNG, tournamentBooks } from '../helpers/tournament.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
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
let browser: Browser | undefined;
let web: string;

/** The one browser of this file (both platforms' suites), launched on first use. */
async function launch(): Promise<Browser> {
  if (!browser) {
    const { chromium } = await import('@playwright/test');
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  }
  return browser;
}
afterAll(async () => {
  await browser?.close();
});

async function screenshot(page: Page, name: string) {
  mkdirSync(SHOTS, { recursive: true });
  const file = path.join(SHOTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  process.stdout.write(`web-client: screenshot ${path.relative(ROOT, file)}\n`);
}

/** A fresh browser context (its own sessionStorage) and page; console errors are collected. */
async function newPage(baseURL = web): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const context = await (await launch()).newContext({ baseURL, viewport: { width: 1200, height: 900 } });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(err.message));
  // a failed load's console line names no URL: the answer does
  page.on('response', (res) => {
    if (res.status() >= 400) errors.push(`${res.status()} ${res.request().method()} ${new URL(res.url()).pathname}`);
  });
  page.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(msg.text());
  });
  return { context, page, errors };
}

/** Signs in on the sign-in page with the test token of a new subject and an invite: the user id and the JWT the page holds. */
async function signIn(page: Page, name: string, shot = false, authUrl = m.platform.url('auth')) {
  const invite = await call(`${authUrl}/admin/invite-codes`, { headers: { 'x-service-key': TEST_SERVICE_KEY }, body: {} });
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

/**
 * The page's window.ethereum as a browser extension would be: the page calls request(), the key
 * stays in node (a viem account, `accounts()[0]` the current one) and signs what the page asks;
 * `signed` records the signing methods called.
 */
async function injectEthereum(page: Page, accounts: () => PrivateKeyAccount, chainId = 1) {
  const signed: string[] = [];
  await page.exposeFunction('__walletRequest', async (method: string, params: unknown[]) => {
    const account = accounts();
    if (method === 'eth_requestAccounts' || method === 'eth_accounts') return [account.address];
    if (method === 'eth_chainId') return `0x${chainId.toString(16)}`;
    if (method === 'personal_sign') {
      signed.push(method);
      return account.signMessage({ message: { raw: params[0] as `0x${string}` } });
    }
    if (method === 'eth_signTypedData_v4') {
      // as a wallet does: the typed data is signed for the account named, else refused
      if (String(params[0]).toLowerCase() !== account.address.toLowerCase()) throw new Error('unknown account');
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
  return signed;
}

/**
 * The page's window.solana as Phantom's: connect() shares the public key (base58), signMessage(bytes)
 * answers the Ed25519 signature of those bytes by a key held in node (@noble/curves).
 */
async function injectSolana(page: Page) {
  const secret = ed25519.utils.randomSecretKey();
  const address = base58.encode(ed25519.getPublicKey(secret));
  const signed: string[] = [];
  await page.exposeFunction('__solanaConnect', () => address);
  await page.exposeFunction('__solanaSign', (bytes: number[]) => {
    const message = Uint8Array.from(bytes);
    signed.push(new TextDecoder().decode(message));
    return Array.from(ed25519.sign(message, secret));
  });
  await page.addInitScript(() => {
    const page = globalThis as unknown as {
      solana: unknown; __solanaConnect: () => Promise<string>; __solanaSign: (bytes: number[]) => Promise<number[]>;
    };
    let publicKey: { toString(): string; toBase58(): string } | null = null;
    page.solana = {
      isPhantom: true,
      get publicKey() { return publicKey; },
      async connect() {
        const key = await page.__solanaConnect();
        publicKey = { toString: () => key, toBase58: () => key };
        return { publicKey };
      },
      async signMessage(message: Uint8Array) {
        if (!publicKey) throw new Error('not connected');
        return { signature: Uint8Array.from(await page.__solanaSign(Array.from(message))), publicKey };
      },
    };
  });
  return { address, signed };
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
    await launch();
  });
  afterAll(async () => {
    await live?.closeAll();
    await m?.platform.stop();
    if (cagePool) await expectCleanAudit(cagePool);
    await db?.drop();
    await shutdownTelemetry();
  });

  test('sign in through the bridge, link a Solana wallet with the injected window.solana, then claim the weekly baseline on the claim board (span ui.claim.submit)', async () => {
    const { context, page, errors } = await newPage();
    const solana = await injectSolana(page);
    const me = await signIn(page, 'claimer', true);
    expect(me.userId).toMatch(/^[0-9a-f-]{36}$/);

    // the grant's recipient: a Solana wallet linked on the wallets page (nonce, the wallet's signature, the link)
    await page.goto('/#/wallets');
    await page.locator('#link-solana').click();
    await page.locator('#solana-linked').waitFor();
    expect(await page.locator('#solana-linked').textContent()).toContain(solana.address);
    await screenshot(page, 'wallets-solana');
    expect(solana.signed).toHaveLength(1);
    expect(solana.signed[0]).toMatch(new RegExp(`wants you to link your Solana account:\n${solana.address}\n\nNonce: [0-9a-f]{32}$`));
    const linked = await call(`${m.platform.url('auth')}/api/wallets`, { headers: me.auth });
    expect(linked.body.wallets).toEqual([expect.objectContaining({ address: solana.address, chainId: 0 })]);

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
    const signed = await injectEthereum(page, () => accounts[current]!);
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

  test('an escape: the seated player\'s page names the custody entry their chips went to (issue 32)', async () => {
    const { context, page, errors } = await newPage();
    const me = await signIn(page, 'escape');
    await m.buy(me.userId, 500);
    const host = await m.player();
    const tableId = await m.table(host.auth);
    await page.goto('/#/lobby');
    await page.locator(`a[data-table="${tableId}"]`).click();
    await page.locator('#sit-seat').selectOption('2');
    await page.locator('#sit-amount').fill('150');
    await page.locator('#sit-button').click();
    await page.locator('#seated').waitFor();
    const escape = await call(`${m.cage}/escape/${tableId}`, { headers: (await m.operator()).auth, body: { reason: 'the web client test' } });
    expect(escape).toMatchObject({ status: 200, body: { outcome: 'clean' } });
    await page.locator('#escaped').waitFor({ timeout: 30_000 });
    const custody = (await call(`${m.cage}/api/custody`, { headers: me.auth })).body.entries as { tableId: string; entryId: string; amount: number }[];
    const mine = custody.filter((e) => e.tableId === tableId);
    expect(mine).toEqual([expect.objectContaining({ amount: 150 })]);
    expect(await page.locator('#escaped').getAttribute('data-entry')).toBe(mine[0]!.entryId);
    expect(await page.locator('#escaped').textContent()).toContain(`your 150 chips are in custody entry #${mine[0]!.entryId}`);
    await screenshot(page, 'table-escaped');
    // claimed back from the page: the cage balance has the 150 again, the entry claimed
    const before = await m.balance(me.auth);
    await page.locator('#claim-custody').click();
    await page.locator('#custody-claimed').waitFor();
    expect(await page.locator('#custody-claimed').textContent()).toContain('Claimed: 150 chips');
    expect(await m.balance(me.auth)).toBe(before + 150);
    const after = (await call(`${m.cage}/api/custody`, { headers: me.auth })).body.entries as { entryId: string; status: string }[];
    expect(after.find((e) => e.entryId === mine[0]!.entryId)?.status).toBe('claimed');
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
    // the schedule's shares (game_state's tournamentSchedule: a fraction of the pool) as percentages:
    // a 2-seat Sit-and-Go pays its winner the whole pool
    await until(async () => ((await page.locator('#payouts tbody').textContent()) ?? '').includes('100.00 %'), 'the winner\'s share shown as 100.00 %');

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

suite('the web client on the chain bank', () => {
  const C = 1_000_000n;
  let chainDb: TestDatabase;
  let platform: TestPlatform;
  let chainWeb: string;
  let local: LocalChain;
  let reader: ReturnType<typeof createChainBankChain>;

  beforeAll(async () => {
    chainDb = await createTestDatabase();
    await chainDb.owner.query("insert into cage.switches (name, enabled) values ('real_money', true) on conflict (name) do update set enabled = true");
    const webPort = await freePort();
    // no cage: the game role's bank and the web role's `bank` upstream are the chain bank
    platform = await startTestPlatform({
      databaseUrl: chainDb.url, roles: ['auth', 'game', 'chain-bank', 'web'],
      env: { AUTH_SECRET, AUTH_BASE_URL: ISSUER, ENABLE_TEST_AUTH: 'true', CHAIN_CONFIRM_WINDOW_MS: '10000', WEB_PORT: String(webPort), AUTH_TRUSTED_ORIGINS: `http://127.0.0.1:${webPort}` },
    });
    chainWeb = platform.url('web');
    local = (platform.role('chain-bank') as unknown as { chain: LocalChain }).chain;
    // a read-only view of the same chain (its operator key is never used)
    reader = createChainBankChain({ rpcUrl: local.url, operatorKey: generatePrivateKey(), deployment: local.deployment });
    await launch();
  }, 60_000);
  afterAll(async () => {
    await platform?.stop();
    await chainDb?.drop();
  });

  /** A signed-in page whose injected wallet holds `chips` on the local chain and is linked on the wallets page. */
  async function walletPlayer(name: string, chips: bigint) {
    const { context, page, errors } = await newPage(chainWeb);
    const account = privateKeyToAccount(generatePrivateKey());
    await mintChips({ rpcUrl: local.url, deployment: local.deployment, minterKey: local.minterKey, to: account.address, chips });
    const signed = await injectEthereum(page, () => account, local.deployment.chainId);
    const me = await signIn(page, name, false, platform.url('auth'));
    await page.goto('/#/wallets');
    await page.locator('#link-wallet').click();
    await page.locator('#wallet-linked').waitFor();
    return { context, page, errors, account, signed, me };
  }

  test('the chain bank says it is one and what a permit is signed against; hostile reads are 4xx', async () => {
    expect((await call(`${chainWeb}/api/gw/bank/api/economy`)).body).toEqual({ bank: 'chain', moneyKinds: ['real'], units: { chip: 1, tokenBaseUnitsPerChip: 1_000_000 } });
    const info = await call(`${chainWeb}/api/gw/bank/api/chain`);
    expect(info).toEqual({ status: 200, body: {
      bank: 'chain', chainId: local.deployment.chainId, token: local.deployment.token, vault: local.deployment.vault,
      tokenName: expect.any(String), tokenVersion: expect.any(String), chipUnits: '1000000',
      // the chain as last probed (issue 32)
      reachable: true, checkedAt: expect.any(String), blockNumber: expect.stringMatching(/^\d+$/),
    } });
    const someone = privateKeyToAccount(generatePrivateKey()).address;
    expect(await call(`${chainWeb}/api/gw/bank/api/chain/nonces/${someone.toLowerCase()}`)).toEqual({ status: 200, body: { owner: someone, nonce: '0' } });
    expect(await call(`${platform.url('chain-bank')}/api/chain/nonces/0x1234`)).toEqual({ status: 400, body: { error: 'invalid_address' } });
    expect((await call(`${platform.url('chain-bank')}/api/chain/nonces/${'0x'.padEnd(42, 'g')}`)).body).toEqual({ error: 'invalid_address' });
  });

  test('a chain-bank table: link the EVM wallet in the page, sit with a permit the injected wallet signs, stand up, the chips back in the wallet on chain', async () => {
    const p = await walletPlayer('chain-cash', 1000n);
    const tableId = `wc-${randomUUID().slice(0, 10)}`;
    const created = await call(`${platform.url('chain-bank')}/api/tables`, { headers: p.me.auth, body: { tableId, gameType: 'poker', settings: POKER_SETTINGS } });
    expect(created.status).toBe(200);

    await p.page.goto(`/#/table/${tableId}`);
    await p.page.locator('#sit-seat').selectOption('3');
    await p.page.locator('#sit-amount').fill('150');
    await p.page.locator('#sit-button').click();
    await p.page.locator('#seated').waitFor({ timeout: 30_000 });
    await p.page.locator('.seat.me').waitFor();
    await screenshot(p.page, 'chain-table-seated');
    expect(p.signed).toEqual(['personal_sign', 'eth_signTypedData_v4']);
    expect(await reader.balanceOf(p.account.address)).toBe(850n * C);
    expect(await reader.tableBalance(tableId)).toBe(150n * C);
    const seats = (await call(`${platform.url('game')}/api/tables/${tableId}`)).body.seats;
    expect(seats).toEqual([{ seatIndex: 3, userId: p.me.userId, chipBalance: '150', status: 'seated' }]);

    await p.page.locator('#stand-up').click();
    await p.page.locator('#stood-up').waitFor({ timeout: 30_000 });
    expect(await p.page.locator('#stood-up').textContent()).toMatch(/with 150 chips, paid to your wallet on chain \(tx 0x[0-9a-f]{10}…\)/);
    await screenshot(p.page, 'chain-table-stood-up');
    expect(await reader.balanceOf(p.account.address)).toBe(1000n * C);
    expect(await reader.tableBalance(tableId)).toBe(0n);
    expect(p.errors).toEqual([]);
    await p.context.close();
  });

  test('a chain Sit-and-Go: the entry fee paid with a permit for exactly the fee, then unregistered and refunded on chain', async () => {
    const p = await walletPlayer('chain-sng', 500n);
    const tableId = `wt-${randomUUID().slice(0, 10)}`;
    const created = await call(`${platform.url('chain-bank')}/api/tables`, { headers: p.me.auth, body: { tableId, gameType: 'poker', settings: SNG({ seats: 2 }) } });
    expect(created.status).toBe(200);

    await p.page.goto(`/#/tournament/${tableId}`);
    await p.page.locator('#register').click();
    await p.page.locator('#registered').waitFor({ timeout: 30_000 });
    await until(async () => (await p.page.locator('#registered-count').textContent()) === '1/2', 'the page to count one registration');
    await screenshot(p.page, 'chain-tournament-registered');
    expect(await reader.balanceOf(p.account.address)).toBe(400n * C);
    expect(p.signed).toEqual(['personal_sign', 'eth_signTypedData_v4']);

    await p.page.locator('#unregister').click();
    await p.page.locator('#unregistered').waitFor({ timeout: 30_000 });
    expect(await p.page.locator('#unregistered').textContent()).toMatch(/refunded, 100 back, tx 0x/);
    expect(await reader.balanceOf(p.account.address)).toBe(500n * C);
    expect(p.errors).toEqual([]);
    await p.context.close();
  });
});
