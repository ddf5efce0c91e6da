// The operator CLI (`npm run ops -- <command>`, server/cli/ops.ts) run as a real child process
// against the auth, game, cage and admin roles on ephemeral ports: each command's output, its exit
// code (0 done, 1 refused with the platform's code, 2 usage, 3 audit violations) and its effect on
// the platform, read back over HTTP and from the database. No credential is ever printed, no admin
// session outlives its command, and the cage audit is empty at the end.
import { spawn } from 'node:child_process';
import { ed25519 } from '@noble/curves/ed25519.js';
import { randomUUID } from 'node:crypto';
import { hashPassword } from '../../server/auth/passwords.ts';
import { expectCleanAudit } from '../helpers/cage.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { call, startMoneyPlatform } from '../helpers/money.ts';
import { TEST_SERVICE_KEY } from '../helpers/platform.ts';

let db: TestDatabase;
let m: Awaited<ReturnType<typeof startMoneyPlatform>>;
let adminId: string;
const email = `ops-cli-${randomUUID().slice(0, 8)}@example.com`;
const password = `cli-password-${randomUUID()}`;
const outputs: string[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  m = await startMoneyPlatform(db, { alsoAdmin: true });
  const { rows } = await db.owner.query<{ id: string }>('select auth.create_admin($1, $2) as id', [email, await hashPassword(password)]);
  adminId = rows[0]!.id;
});
afterAll(async () => {
  await m?.platform.stop();
  await db?.drop();
});

interface Run { code: number | null; out: string; err: string }

function ops(args: string[], options: { env?: Record<string, string | undefined>; stdin?: string } = {}): Promise<Run> {
  const env: Record<string, string> = {
    PATH: process.env.PATH!, NODE_ENV: 'test', LOG_LEVEL: 'silent', HOST: '127.0.0.1',
    AUTH_URL: m.platform.url('auth'), GAME_URL: m.game, CAGE_URL: m.cage,
    ADMIN_PORT: new URL(m.platform.url('admin')).port,
    OPS_EMAIL: email, OPS_PASSWORD: password, SERVICE_KEY: TEST_SERVICE_KEY,
  };
  for (const [k, v] of Object.entries(options.env ?? {})) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--no-warnings=ExperimentalWarning', 'server/cli/ops.ts', ...args], { env, cwd: process.cwd() });
    let out = '';
    let err = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (err += c));
    child.on('close', (code) => {
      outputs.push(out, err);
      resolve({ code, out, err });
    });
    child.stdin.end(options.stdin ?? '');
  });
}

const liveSessions = async () =>
  (await db.owner.query<{ n: number }>('select count(*)::int as n from auth_private.sessions where user_id = $1 and revoked_at is null and expires_at > now()', [adminId])).rows[0]!.n;

const bridge = (sub: string, inviteCode?: string) =>
  call(`${m.platform.url('auth')}/api/auth/bridge`, { body: { idToken: `test-idp-token:${sub}`, ...(inviteCode ? { inviteCode } : {}) } });

describe('usage', () => {
  test('help lists every command with one line each; usage errors exit 2 without calling the platform', async () => {
    const help = await ops(['help']);
    expect(help.code).toBe(0);
    for (const name of ['invite', 'buy', 'redeem', 'create-table', 'create-tournament', 'tables', 'board', 'gate', 'real-money', 'process-url', 'freeze', 'thaw', 'audit', 'dealer-key', 'balances', 'escape', 'keys']) {
      expect(help.out.split('\n').filter((l) => l.startsWith(`  ${name} `))).toHaveLength(1);
    }
    expect(help.out).toMatch(/SERVICE_KEY/);
    expect(help.out).toMatch(/exit codes: 0 done, 1 refused/);
    expect((await ops(['help', 'escape'])).out).toMatch(/^usage: npm run ops -- escape <tableId> --reason TEXT\n/);

    for (const args of [['no-such-command'], ['buy', randomUUID()], ['buy', randomUUID(), 'ten'], ['buy', randomUUID(), '10', '--kind', 'gold'],
      ['escape', 't-1'], ['board', 'maybe'], ['create-tournament', 't-x'], ['audit', '--bogus', '1'], ['create-table', 't-x', '--settings', '[1]'],
      ['keys', 'pin', 'jwt'], ['keys', 'pin', 'dealer', 'ab'.repeat(32)], ['keys', 'retire', 'jwt', 'xyz'], ['keys', 'forget']]) {
      const r = await ops(args);
      expect([args, r.code, r.out]).toEqual([args, 2, '']);
      expect(r.err).toMatch(/^usage: /);
    }
    // no credential at all (and nothing on stdin): a usage error, not a refusal
    const none = await ops(['audit'], { env: { OPS_EMAIL: undefined, OPS_PASSWORD: undefined } });
    expect(none).toMatchObject({ code: 2, err: expect.stringMatching(/OPS_EMAIL/) });
    const noKey = await ops(['invite'], { env: { SERVICE_KEY: undefined } });
    expect(noKey).toMatchObject({ code: 2, err: expect.stringMatching(/set SERVICE_KEY/) });
    expect(await liveSessions()).toBe(0);
  });
});

describe('credentials', () => {
  test('a wrong password is the platform\'s refusal (exit 1, its code); the password can come on stdin', async () => {
    const wrong = await ops(['audit'], { env: { OPS_PASSWORD: 'not-the-password' } });
    expect(wrong).toMatchObject({ code: 1, out: '', err: 'refused: sign-in: 401 invalid_credentials\n' });
    const viaStdin = await ops(['real-money', 'status'], { env: { OPS_EMAIL: undefined, OPS_PASSWORD: undefined }, stdin: `${email}\n${password}\n` });
    expect(viaStdin).toMatchObject({ code: 0, out: 'real money off\n' });
    const unreachable = await ops(['real-money'], { env: { AUTH_URL: 'http://127.0.0.1:9' } });
    expect(unreachable).toMatchObject({ code: 1, err: expect.stringMatching(/^sign-in: http:\/\/127\.0\.0\.1:9 unreachable/) });
    expect(await liveSessions()).toBe(0);
  });
});

describe('the commands', () => {
  let userId: string;
  let player: Record<string, string>;
  let tableId: string;

  test('invite (service key): a code the bridge accepts for a first sign-in; a wrong key is refused', async () => {
    const r = await ops(['invite', '--max-uses', '2', '--expires-in', '3600']);
    expect(r.code).toBe(0);
    const code = /^invite (\S+) \(max uses 2, expires \S+\)\n$/.exec(r.out)?.[1];
    expect(code).toBeDefined();
    expect((await db.owner.query('select max_uses, created_by from auth.invite_codes where code = $1', [code])).rows).toEqual([{ max_uses: 2, created_by: 'ops-cli' }]);
    const first = await bridge(`cli-${randomUUID()}`, code);
    expect(first).toMatchObject({ status: 200, body: { created: true } });
    userId = first.body.user.id;
    player = { authorization: `Bearer ${first.body.token}` };
    expect(await bridge(`cli-${randomUUID()}`)).toMatchObject({ status: 403, body: { error: 'invite_required' } });

    const json = await ops(['invite', '--json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.out)).toMatchObject({ code: expect.any(String), maxUses: 1, expiresAt: null });
    expect(await ops(['invite'], { env: { SERVICE_KEY: 'another-service-key-0123456789' } })).toMatchObject({ code: 1, err: 'refused: invite: 401 invalid_service_key\n' });
  });

  test('buy and redeem play chips for a user: the balance moves, a repeated --ref replays, an overdraft is refused', async () => {
    const ref = `pay-${randomUUID()}`;
    const buy = await ops(['buy', userId, '500', '--kind', 'play', '--ref', ref]);
    expect(buy.code).toBe(0);
    expect(buy.out).toMatch(new RegExp(`^purchase recorded: 500 play chips to ${userId}\n  ref ${ref}, ledger \\S+, balance now 500\n$`));
    expect(await m.balance(player)).toBe(500);
    const again = await ops(['buy', userId, '500', '--kind', 'play', '--ref', ref]);
    expect(again).toMatchObject({ code: 0, out: expect.stringMatching(/^purchase already recorded \(replay\): 500 play chips/) });
    expect(await m.balance(player)).toBe(500);
    const redeem = await ops(['redeem', userId, '120', '--kind', 'play']);
    expect(redeem).toMatchObject({ code: 0, out: expect.stringMatching(new RegExp(`^redemption recorded: 120 play chips from ${userId}\n  ref ops-[0-9a-f-]{36}, ledger \\S+, balance now 380\n$`)) });
    expect(await m.balance(player)).toBe(380);
    expect(await ops(['redeem', userId, '1000', '--kind', 'play'])).toMatchObject({ code: 1, out: '', err: 'refused: redemption: 402 insufficient_cage_balance\n' });
    expect(await ops(['buy', randomUUID().toUpperCase().replace(/-/g, ''), '1'])).toMatchObject({ code: 1, err: expect.stringMatching(/^refused: purchase: 400 bad_request\n  issues: /) });
    expect(await m.balance(player)).toBe(380);
    expect((await db.owner.query("select count(*)::int as n from cage.operator_acts where admin_id = $1 and act in ('purchase', 'redemption')", [adminId])).rows[0].n).toBe(2);
  });

  test('real-money: the operators\' switch, read back from the cage\'s economy; real chips only while it is on', async () => {
    expect(await ops(['buy', userId, '10'])).toMatchObject({ code: 1, err: 'refused: purchase: 403 real_money_disabled\n' });
    expect(await ops(['real-money', 'on'])).toMatchObject({ code: 0, out: 'real money on\n' });
    expect((await call(`${m.cage}/api/economy`)).body.realMoneyEnabled).toBe(true);
    expect(await ops(['real-money', 'on'])).toMatchObject({ code: 0, out: 'real money on (unchanged)\n' });
    expect(await ops(['buy', userId, '10', '--kind', 'real'])).toMatchObject({ code: 0 });
    expect(await ops(['redeem', userId, '10', '--kind', 'real'])).toMatchObject({ code: 0, out: expect.stringMatching(/balance now 0\n$/) });
    expect(await ops(['real-money', 'off'])).toMatchObject({ code: 0, out: 'real money off\n' });
    expect(await ops(['real-money'])).toMatchObject({ code: 0, out: 'real money off\n' });
    expect((await call(`${m.cage}/api/economy`)).body.realMoneyEnabled).toBe(false);
  });

  test('create-table and create-tournament: tables of the lobby; a duplicate id and bad settings are refused', async () => {
    tableId = `ops-${randomUUID().slice(0, 8)}`;
    const created = await ops(['create-table', tableId, '--blinds', '1/2', '--buy-in', '40-200', '--seats', '4']);
    expect(created).toMatchObject({ code: 0, out: `table ${tableId} created (play chips, 1/2, status active)\n` });
    const room = await m.room(tableId);
    expect(room.status).toBe(200);
    expect(room.body).toMatchObject({ tableId, moneyKind: 'play', settings: { smallBlind: 1, bigBlind: 2, minBuyIn: 40, maxBuyIn: 200, maxPlayers: 4 } });
    expect(await ops(['create-table', tableId])).toMatchObject({ code: 1, err: 'refused: create-table: 409 table_exists\n' });
    expect(await ops(['create-table', `ops-${randomUUID().slice(0, 8)}`, '--blinds', '5/2'])).toMatchObject({ code: 1, err: expect.stringMatching(/^refused: create-table: 400 validation_failed\n  issues: .*bigBlind/) });

    const sng = `ops-sng-${randomUUID().slice(0, 8)}`;
    expect(await ops(['create-tournament', sng, '--seats', '3', '--entry-fee', '100', '--rake-fee', '10', '--stack', '1500']))
      .toMatchObject({ code: 0, out: `tournament ${sng} created (play chips, 3 seats, entry fee 100, status active)\n` });
    expect((await m.room(sng)).body).toMatchObject({ tableId: sng, settings: { mode: 'sng', seats: 3, entryFee: 100, rakeFee: 10, startingStack: 1500 } });

    const lobby = await ops(['tables']);
    expect(lobby.code).toBe(0);
    expect(lobby.out).toContain(`${tableId}  active  play  cash 1/2  0/4 seated\n`);
    expect(lobby.out).toContain(`${sng}  active  play  sng registering entry 100  0/3 seated\n`);
    expect((await ops(['tables', '--mode', 'sng'])).out).not.toContain(`${tableId} `);
  });

  test('board and gate: the claim board and the play-chip transfer gate of this deployment, read back by the platform', async () => {
    const settings = async () => (await call(`${m.game}/admin/claim-settings`, { headers: (await m.operator()).auth })).body;
    expect(await ops(['board', 'status'])).toMatchObject({ code: 0, out: 'claim board off (environment local)\n' });
    expect(await ops(['board', 'on'])).toMatchObject({ code: 0, out: 'claim board on (environment local)\n' });
    expect(await settings()).toMatchObject({ environment: 'local', claimBoardEnabled: true, playTransferGateEnabled: true });
    expect((await call(`${m.game}/claim-board/state`, { headers: player })).body.enabled).toBe(true);
    expect(await ops(['gate', 'off'])).toMatchObject({ code: 0, out: 'play-chip transfer gate off (environment local)\n' });
    expect(await settings()).toMatchObject({ claimBoardEnabled: true, playTransferGateEnabled: false });
    expect((await call(`${m.cage}/api/economy`)).body.playTransferGate.enabled).toBe(false);
    expect(await ops(['gate', 'on'])).toMatchObject({ code: 0, out: 'play-chip transfer gate on (environment local)\n' });
    expect(await ops(['board', 'off'])).toMatchObject({ code: 0, out: 'claim board off (environment local)\n' });
    expect(await settings()).toMatchObject({ claimBoardEnabled: false, playTransferGateEnabled: true });
    // another environment's switch: set there, this deployment's unchanged
    expect(await ops(['board', 'on', '--environment', 'staging'])).toMatchObject({ code: 0, out: 'claim board on (environment staging)\n' });
    expect(await settings()).toMatchObject({ environment: 'local', claimBoardEnabled: false });
    expect(await ops(['board', 'off', '--environment', 'staging'])).toMatchObject({ code: 0 });
    expect((await db.owner.query('select count(*)::int as n from claims.catalog_edits where admin_id = $1', [adminId])).rows[0].n).toBeGreaterThanOrEqual(6);
  });

  test('balances: a user\'s accounts and the system accounts, from the admin GraphQL', async () => {
    const mine = await ops(['balances', userId]);
    expect(mine).toMatchObject({ code: 0, err: '' });
    expect(mine.out).toContain('user  play  380\n');
    const json = await ops(['balances', userId, '--json']);
    expect(JSON.parse(json.out)).toEqual(expect.arrayContaining([{ accountType: 'user', scope: null, moneyKind: 'play', balance: '380' }]));
    const system = await ops(['balances']);
    expect(system.code).toBe(0);
    expect(system.out).toMatch(/^outside  play  -?\d+$/m);
    expect(system.out).not.toMatch(/^user /m);
  });

  test('process-url, freeze and thaw (issue 31): the operators keep the game process URLs and freeze tables', async () => {
    const url = `http://game-${randomUUID().slice(0, 8)}.test`;
    expect(await ops(['process-url', 'add', url])).toMatchObject({ code: 0, out: `${url} listed\n` });
    expect(await ops(['process-url', 'add', url])).toMatchObject({ code: 0, out: `${url} was listed already\n` });
    const list = await ops(['process-url', 'list']);
    expect(list.out.split('\n')).toEqual(expect.arrayContaining([`${url}  0 live processes`, `${m.game}  1 live process`]));
    expect(await ops(['process-url', 'remove', url])).toMatchObject({ code: 0, out: `${url} removed\n` });
    expect(await ops(['process-url', 'remove', url])).toMatchObject({ code: 0, out: `${url} was not listed\n` });
    expect(await ops(['process-url', 'add', 'ftp://x'])).toMatchObject({ code: 2 });
    const t = `ops-frz-${randomUUID().slice(0, 8)}`;
    expect(await ops(['create-table', t])).toMatchObject({ code: 0 });
    expect(await ops(['freeze', t])).toMatchObject({ code: 0, out: `table ${t} frozen\n` });
    expect(await m.deposit(player, { tableId: t, seatIndex: 0, amount: 10 })).toEqual({ status: 409, body: { error: 'table_frozen' } });
    expect(await ops(['thaw', t])).toMatchObject({ code: 0, out: `table ${t} active\n` });
    expect((await db.owner.query('select status from game.table_status_acts where table_id = $1 order by id', [t])).rows).toEqual([{ status: 'frozen' }, { status: 'active' }]);
    expect(await ops(['freeze', `no-${randomUUID().slice(0, 8)}`])).toMatchObject({ code: 1, err: 'refused: freeze: 404 table_not_found\n' });
  });

  test('escape: a seated player\'s chips go to a FREE custody entry, the table is frozen; again: the first answer', async () => {
    const sit = await m.deposit(player, { tableId, seatIndex: 0, amount: 100 });
    expect(sit.status).toBe(200);
    expect(await ops(['escape', tableId])).toMatchObject({ code: 2 });
    const r = await ops(['escape', tableId, '--reason', 'the game process is gone (ops CLI test)']);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(new RegExp(`^table ${tableId} escaped: clean, frozen, escrow 100\n  custody entry \\d+: 100 to ${userId}\n$`));
    const custody = await call(`${m.cage}/api/custody`, { headers: player });
    expect(custody.body.entries).toEqual([expect.objectContaining({ tableId, amount: 100, status: 'free', claimable: true, source: 'escape' })]);
    expect((await db.owner.query("select status from game.tables where table_id = $1", [tableId])).rows[0].status).toBe('frozen');
    expect((await db.owner.query("select amount::int, status from cage.custody_entries where user_id = $1", [userId])).rows).toEqual([{ amount: 100_000_000, status: 'free' }]);
    const again = await ops(['escape', tableId, '--reason', 'the game process is gone (ops CLI test)']);
    expect(again).toMatchObject({ code: 0, out: expect.stringMatching(/escaped \(replay of the first escape\): clean, frozen/) });
    expect(await ops(['escape', `no-${randomUUID().slice(0, 8)}`, '--reason', 'x'])).toMatchObject({ code: 1, err: 'refused: escape: 404 table_not_found\n' });
  });

  test('keys: the pinned keys listed; an operator pins and retires one, the owner too (--owner); a retired key is never pinned again', async () => {
    const listed = await ops(['keys', '--json']);
    expect(listed.code).toBe(0);
    const pins = JSON.parse(listed.out) as { purpose: string; publicKey: string; retiredAt: string | null }[];
    // the keys the roles started with (npm start's pins as the owner): the receipt and the JWT key
    expect(pins.filter((k) => k.retiredAt === null).map((k) => k.purpose)).toEqual(expect.arrayContaining(['jwt', 'receipt']));
    const key = Buffer.from(ed25519.getPublicKey(ed25519.utils.randomSecretKey())).toString('hex');
    const pinned = await ops(['keys', 'pin', 'arbiter', key]);
    expect(pinned).toMatchObject({ code: 0, out: expect.stringMatching(new RegExp(`^pinned: arbiter  ${key}  pinned .* by operator ${adminId}, active\n$`)) });
    expect((await ops(['keys', 'pin', 'arbiter', key])).out).toMatch(/^pinned \(already\)/);
    expect((await ops(['keys', 'list', '--purpose', 'arbiter'])).out).toContain(key);
    const retired = await ops(['keys', 'retire', 'arbiter', key]);
    expect(retired).toMatchObject({ code: 0, out: expect.stringMatching(new RegExp(`retired ${'\\'}S+ by operator ${adminId}\n$`)) });
    expect(await ops(['keys', 'pin', 'arbiter', key])).toMatchObject({ code: 1, err: 'refused: keys pin: 409 key_retired\n' });
    expect(await ops(['keys', 'retire', 'receipt', 'ab'.repeat(32)])).toMatchObject({ code: 1, err: 'refused: keys retire: 409 key_not_pinned\n' });
    // the owner's act: no operator, the database owner's connection
    const owned = Buffer.from(ed25519.getPublicKey(ed25519.utils.randomSecretKey())).toString('hex');
    const byOwner = await ops(['keys', 'pin', 'jwt', owned, '--owner'], { env: { DATABASE_URL: db.url, OPS_EMAIL: undefined, OPS_PASSWORD: undefined } });
    expect(byOwner).toMatchObject({ code: 0, out: expect.stringMatching(/^pinned: jwt .* by the owner, active\n$/) });
    expect(await ops(['keys', 'retire', 'jwt', owned, '--owner'], { env: { DATABASE_URL: db.url } })).toMatchObject({ code: 0 });
    expect(await ops(['keys', 'pin', 'jwt', owned, '--owner'], { env: { DATABASE_URL: db.url } })).toMatchObject({ code: 1, err: expect.stringMatching(/key_retired/) });
    // a player's token pins nothing
    const player = await m.player(0);
    expect(await call(`${m.cage}/api/operator/keys`, { headers: player.auth, body: { action: 'pin', purpose: 'jwt', publicKey: owned } }))
      .toEqual({ status: 403, body: { error: 'admin_required' } });
    expect(await liveSessions()).toBe(0);
  });

  test('audit: the books hold (exit 0), as the database says; no credential was printed and no session outlived its command', async () => {
    // the same list of checks as the periodic job (issue 31): the sums, the custody releases, the causes of every stack
    expect(await ops(['audit'])).toMatchObject({ code: 0, out: expect.stringMatching(/^audit: read \d+ new hands and \d+ stack links\nlast clean periodic audit: never \(period \d+s\)\naudit: the books hold and every stack has its cause \(0 violations\)\n$/), err: '' });
    await expectCleanAudit(db.pool('poker_cage', 1));
    expect(await liveSessions()).toBe(0);
    const all = outputs.join('\n');
    expect(all).not.toContain(password);
    expect(all).not.toContain(TEST_SERVICE_KEY);
    expect(all).not.toMatch(/Bearer|eyJ[\w-]{10,}/);
  });
});
