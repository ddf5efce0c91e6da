// The admin sign-in limit under concurrency and across processes (issue 10): attempts are counted
// before the password is checked, per (client address, account) and per client address, in the
// database every auth process shares. The client address is the TCP peer unless TRUST_PROXY says
// which proxy's X-Forwarded-For to believe.
import { startAuth } from '../../server/roles/auth.ts';
import { hashPassword } from '../../server/auth/passwords.ts';
import { clientKey } from '../../server/auth/rate-limit.ts';
import { loadConfig } from '../../server/config/index.ts';
import type { StartedRole } from '../../server/roles/types.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { captureLogger } from '../helpers/logs.ts';

const env = {
  NODE_ENV: 'test', PORT: '0', AUTH_SECRET: 'sign-in-limit-test-secret-0123456789ab', AUTH_BASE_URL: 'http://auth.test.local',
};
const PER_ACCOUNT = 10; // the default
let db: TestDatabase;
const roles: StartedRole[] = [];
async function auth(extra: Record<string, string> = {}) {
  const role = await startAuth({ config: loadConfig({ ...env, ...extra }), databaseUrl: db.url, log: captureLogger('silent').log });
  roles.push(role);
  return role;
}
async function admin(email: string, password: string) {
  await db.owner.query('select auth.create_admin($1, $2)', [email, await hashPassword(password)]);
}
beforeAll(async () => {
  db = await createTestDatabase();
});
// each test starts with no attempts counted (they all come from this machine's loopback peer)
beforeEach(async () => {
  await db.owner.query('delete from auth.attempt_limits');
  await db.owner.query('delete from auth_private.sign_in_attempts');
});
afterAll(async () => {
  await Promise.all(roles.map((r) => r.stop()));
  await db?.drop();
});

const signIn = (role: StartedRole, email: string, password: string, headers: Record<string, string> = {}) =>
  fetch(`${role.url}/api/auth/sign-in/email`, {
    method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ email, password }),
  });

test('300 concurrent wrong guesses with the right one among them: at most the limit are checked, then every attempt is 429', async () => {
  const role = await auth();
  await admin('target@example.com', 'the-real-password');
  const guesses = Array.from({ length: 301 }, (_, i) => (i === 150 ? 'the-real-password' : `wrong-${i}`));
  const answers = await Promise.all(guesses.map(async (password) => {
    const res = await signIn(role, 'target@example.com', password);
    return { password, status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.json() };
  }));
  const count = (status: number) => answers.filter((a) => a.status === status).length;
  const checked = count(200) + count(401);
  expect(checked).toBeLessThanOrEqual(PER_ACCOUNT);
  expect(count(429)).toBe(301 - checked);
  expect(count(200) + count(401) + count(429)).toBe(301);
  for (const a of answers.filter((x) => x.status === 429)) {
    expect(a.body).toEqual({ error: 'too_many_attempts' });
    expect(Number(a.retryAfter)).toBeGreaterThan(0);
  }
  expect(answers.find((a) => a.password === 'the-real-password')!.status).not.toBe(401);
  const later = await signIn(role, 'target@example.com', 'the-real-password');
  expect(later.status).toBe(429);
  expect(await later.json()).toEqual({ error: 'too_many_attempts' });
  process.stdout.write(`sign-in limit: of 301 concurrent attempts ${count(401)} got 401, ${count(200)} got 200, ${count(429)} got 429\n`);
});

test('the count holds across two auth processes on one database', async () => {
  const [a, b] = [await auth(), await auth()];
  await admin('shared@example.com', 'shared-password');
  const wrong = await Promise.all(Array.from({ length: PER_ACCOUNT }, (_, i) => signIn(i % 2 ? a : b, 'shared@example.com', `nope-${i}`)));
  expect(wrong.map((r) => r.status)).toEqual(Array(PER_ACCOUNT).fill(401));
  for (const role of [a, b]) {
    const res = await signIn(role, 'shared@example.com', 'shared-password');
    expect(res.status).toBe(429);
  }
});

test('an unknown email counts like a known one: the limit does not tell which accounts exist', async () => {
  const role = await auth({ AUTH_SIGN_IN_LIMIT_PER_ACCOUNT: '2' });
  const statuses = [];
  for (const email of ['ghost@example.com', 'ghost@example.com', 'ghost@example.com']) statuses.push((await signIn(role, email, 'x')).status);
  expect(statuses).toEqual([401, 401, 429]);
});

describe('behind a trusted proxy (TRUST_PROXY)', () => {
  test('a locked-out peer does not lock the account for another peer', async () => {
    const role = await auth({ TRUST_PROXY: 'loopback' });
    await admin('proxied@example.com', 'proxied-password');
    const attacker = { 'x-forwarded-for': '198.51.100.7' };
    for (let i = 0; i < PER_ACCOUNT; i++) expect((await signIn(role, 'proxied@example.com', `guess-${i}`, attacker)).status).toBe(401);
    expect((await signIn(role, 'proxied@example.com', 'proxied-password', attacker)).status).toBe(429);
    const owner = await signIn(role, 'proxied@example.com', 'proxied-password', { 'x-forwarded-for': '203.0.113.20' });
    expect(owner.status).toBe(200);
  });

  test('one peer trying many accounts is stopped by the per-peer limit; another peer is not', async () => {
    const role = await auth({ TRUST_PROXY: 'loopback', AUTH_SIGN_IN_LIMIT_PER_PEER: '6' });
    await admin('victim@example.com', 'victim-password');
    const sprayer = { 'x-forwarded-for': '198.51.100.99' };
    for (let i = 0; i < 6; i++) expect((await signIn(role, `spray-${i}@example.com`, 'pw', sprayer)).status).toBe(401);
    expect((await signIn(role, 'victim@example.com', 'victim-password', sprayer)).status).toBe(429);
    expect((await signIn(role, 'victim@example.com', 'victim-password', { 'x-forwarded-for': '198.51.100.100' })).status).toBe(200);
  });

  test('without TRUST_PROXY a forwarding header is not believed: the TCP peer is the client', async () => {
    const role = await auth({ AUTH_SIGN_IN_LIMIT_PER_ACCOUNT: '3' });
    await admin('direct@example.com', 'direct-password');
    for (let i = 0; i < 3; i++) {
      expect((await signIn(role, 'direct@example.com', `g-${i}`, { 'x-forwarded-for': `192.0.2.${i}` })).status).toBe(401);
    }
    expect((await signIn(role, 'direct@example.com', 'direct-password', { 'x-forwarded-for': '192.0.2.200' })).status).toBe(429);
  });
});

test('an IPv6 client counts by its /64, an IPv4-mapped one as IPv4, a forwarded non-address by a bounded hash', () => {
  expect(clientKey('2001:db8:1:2:3:4:5:6')).toBe('2001:db8:1:2::/64');
  expect(clientKey('2001:db8:1:2::9')).toBe('2001:db8:1:2::/64');
  expect(clientKey('2001:0db8:0001:0002:ffff::1%eth0')).toBe('2001:db8:1:2::/64');
  expect(clientKey('::1')).toBe('0:0:0:0::/64');
  expect(clientKey('::ffff:10.0.0.1')).toBe('10.0.0.1');
  expect(clientKey('203.0.113.5')).toBe('203.0.113.5');
  expect(clientKey(undefined)).toBe('unknown');
  expect(clientKey('x'.repeat(5000))).toMatch(/^other:[\w-]{43}$/);
});

test('behind a trusted proxy, a forwarded value that is no address is still counted, not a failure', async () => {
  const role = await auth({ TRUST_PROXY: 'loopback', AUTH_SIGN_IN_LIMIT_PER_ACCOUNT: '1' });
  const odd = { 'x-forwarded-for': `${'z'.repeat(2000)}` };
  expect((await signIn(role, 'nobody@example.com', 'pw', odd)).status).toBe(401);
  expect((await signIn(role, 'nobody@example.com', 'pw', odd)).status).toBe(429);
});

test('only failures count against an account: an operator signing in again and again is never locked out; failures still are; the per-address limit still holds', async () => {
  const role = await auth({ AUTH_SIGN_IN_LIMIT_PER_PEER: '30' });
  await admin('busy-operator@example.com', 'the-operators-password');
  // twice the per-account limit of sign-ins in one window, most of them successful, a typo now and then
  for (let i = 0; i < PER_ACCOUNT * 2; i++) {
    const res = await signIn(role, 'busy-operator@example.com', i % 5 === 4 ? 'a-typo' : 'the-operators-password');
    expect([i, res.status]).toEqual([i, i % 5 === 4 ? 401 : 200]);
  }
  // failures alone still reach the account's limit (the last success cleared what came before it; one typo since)
  const failures = [];
  for (let i = 0; i < PER_ACCOUNT + 1; i++) failures.push((await signIn(role, 'busy-operator@example.com', `wrong-${i}`)).status);
  expect(failures.filter((s) => s === 401).length).toBe(PER_ACCOUNT - 1);
  expect(failures.at(-1)).toBe(429);
  // the right password is refused too while the account's count is over (counted before the check)
  expect((await signIn(role, 'busy-operator@example.com', 'the-operators-password')).status).toBe(429);
  // and the per-address limit counts every attempt, successes included: 20 + 11 + 1 = 32 > 30
  await admin('other-operator@example.com', 'another-password');
  expect((await signIn(role, 'other-operator@example.com', 'another-password')).status).toBe(429);
});
