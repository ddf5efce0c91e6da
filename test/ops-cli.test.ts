// The operator CLI (`npm run ops -- <command>`, server/cli/ops.ts) run as a real child process
// against the auth, game, cage and admin roles on ephemeral ports: each command's output, its exit
// code (0 done, 1 refused with the platform's code, 2 usage, 3 audit violations) and its effect on
// the platform, read back over HTTP and from the database. No credential is ever printed, no admin
// session outlives its command, and the cage audit is empty at the end.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { hashPassword } from '../server/auth/passwords.ts';
import { expectCleanAudit } from './helpers/cage.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { call, startMoneyPlatform } from './helpers/money.ts';
import { TEST_SERVICE_KEY } from './helpers/platform.ts';

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
    for (const name of ['invite', 'buy', 'redeem', 'create-table', 'create-tournament', 'tables', 'board', 'gate', 'real-money', 'audit', 'balances', 'escape']) {
      expect(help.out.split('\n').filter((l) => l.startsWith(`  ${name} `))).toHaveLength(1);
    }
    expect(help.out).toMatch(/SERVICE_KEY/);
    expect(help.out).toMatch(/exit codes: 0 done, 1 refused/);
    expect((await ops(['help', 'escape'])).out).toMatch(/^usage: npm run ops -- escape <tableId> --reason TEXT\n/);

    for (const args of [['no-such-command'], ['buy', randomUUID()], ['buy', randomUUID(), 'ten'], ['buy', randomUUID(), '10', '--kind', 'gold'],
      ['escape', 't-1'], ['board', 'maybe'], ['create-tournament', 't-x'], ['audit', '--bogus', '1'], ['create-table', 't-x', '--settings', '[1]']]) {
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
  });
});
