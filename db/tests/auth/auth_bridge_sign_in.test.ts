// auth.bridge_sign_in and invite consumption: the only way a poker user comes to exist.
import { randomBytes, randomUUID } from 'node:crypto';
import type pg from 'pg';
import { createTestDatabase, type TestDatabase, waitForLockWait } from '../../../test/helpers/db.ts';

let db: TestDatabase;
let auth: pg.Pool;
beforeAll(async () => {
  db = await createTestDatabase();
  auth = db.pool('poker_auth', 50);
});
afterAll(async () => {
  await db.drop();
});

const code = () => `inv_${randomBytes(12).toString('hex')}`;
const mint = async (maxUses = 1, expiresInSeconds: number | null = null) =>
  (await auth.query('select * from auth.mint_invite($1, $2, $3)', [code(), maxUses, expiresInSeconds])).rows[0] as {
    code: string; max_uses: number; current_uses: number; expires_at: Date | null; created_by: string;
  };
const signIn = (providerUserId: string, invite: string | null, email: string | null = null) =>
  auth.query('select * from auth.bridge_sign_in($1, $2, $3, $4)', ['oidc', providerUserId, email, invite]);
const counts = async () =>
  (await db.owner.query<{ users: number; bridges: number }>(
    'select (select count(*)::int from auth.users) as users, (select count(*)::int from auth.bridge_identities) as bridges',
  )).rows[0]!;

test('minting applies the spec defaults', async () => {
  const invite = await mint();
  expect(invite).toMatchObject({ max_uses: 1, current_uses: 0, expires_at: null, created_by: 'admin' });
  const expired = await mint(1, -60);
  expect(expired.expires_at!.getTime()).toBeLessThan(Date.now());
});

test('a first sign-in with a valid code creates the user and its bridge record; a returning one needs no code', async () => {
  const invite = await mint();
  const sub = randomUUID();
  const first = (await signIn(sub, invite.code, 'p@example.com')).rows[0];
  expect(first).toMatchObject({ created: true, email: 'p@example.com' });
  const again = (await signIn(sub, null)).rows[0];
  expect(again).toEqual({ user_id: first.user_id, email: 'p@example.com', created: false });
  const used = (await auth.query('select current_uses from auth.invite_codes where code = $1', [invite.code])).rows[0];
  expect(used.current_uses).toBe(1);
});

test.each([
  ['no code', async () => null, 'AUINR', 'invite_required'],
  ['an unknown code', async () => code(), 'AUINV', 'invite_invalid'],
  ['an expired code', async () => (await mint(5, -1)).code, 'AUINV', 'invite_invalid'],
  ['an exhausted code', async () => { const i = await mint(1); await signIn(randomUUID(), i.code); return i.code; }, 'AUINV', 'invite_invalid'],
])('%s is refused and creates nothing', async (_name, makeCode, sqlstate, message) => {
  const c = await makeCode();
  const before = await counts();
  await expect(signIn(randomUUID(), c)).rejects.toMatchObject({ code: sqlstate, message });
  expect(await counts()).toEqual(before);
});

test.each([1, 3, 10])('50 concurrent first sign-ins on a maxUses %i code create exactly that many accounts', async (cap) => {
  const invite = await mint(cap);
  const before = await counts();
  const results = await Promise.allSettled(Array.from({ length: 50 }, () => signIn(randomUUID(), invite.code)));
  const ok = results.filter((r) => r.status === 'fulfilled');
  const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  expect(ok).toHaveLength(cap);
  for (const r of refused) expect(r.reason).toMatchObject({ code: 'AUINV' });
  expect(await counts()).toEqual({ users: before.users + cap, bridges: before.bridges + cap });
  const row = (await auth.query('select current_uses, max_uses from auth.invite_codes where code = $1', [invite.code])).rows[0];
  expect(row).toEqual({ current_uses: cap, max_uses: cap });
});

test('the same new identity signing in concurrently becomes one user (the losers retry as returning users)', async () => {
  const invite = await mint(10);
  const sub = randomUUID();
  const results = await Promise.allSettled(Array.from({ length: 8 }, () => signIn(sub, invite.code)));
  const created = results.filter((r) => r.status === 'fulfilled' && r.value.rows[0].created);
  expect(created).toHaveLength(1);
  for (const r of results) if (r.status === 'rejected') expect(r.reason).toMatchObject({ code: '40001' });
  const again = (await signIn(sub, null)).rows[0];
  expect(again.user_id).toBe((created[0] as PromiseFulfilledResult<pg.QueryResult>).value.rows[0].user_id);
  const bridges = (await db.owner.query('select count(*)::int as n from auth.bridge_identities where auth_provider_user_id = $1', [sub])).rows[0];
  expect(bridges.n).toBe(1);
  // only the winner's use of the code stands
  expect((await auth.query('select current_uses from auth.invite_codes where code = $1', [invite.code])).rows[0].current_uses).toBe(1);
});

test('a twin sign-in of the same identity that takes the last use of the code first: the other is a returning sign-in', async () => {
  const invite = await mint(1);
  const sub = randomUUID();
  // the first sign-in has consumed the code (its last use) and made the user, not yet committed;
  // the second looks for the identity (not there yet), then waits on the code
  const holder = await auth.connect();
  let second: Promise<unknown> | undefined;
  let first: { user_id: string; created: boolean } | undefined;
  try {
    await holder.query('begin');
    first = (await holder.query("select * from auth.bridge_sign_in('oidc', $1, null, $2)", [sub, invite.code])).rows[0];
    second = signIn(sub, invite.code).then((r) => r.rows[0], (err: unknown) => err);
    await waitForLockWait(db.owner, 'poker_auth');
    await holder.query('commit');
  } finally {
    await holder.query('rollback').catch(() => undefined);
    holder.release();
  }
  expect(first).toMatchObject({ created: true });
  // the code used up by this same identity is no refusal: the twin made the user
  expect(await second).toEqual({ user_id: first!.user_id, email: null, created: false });
  const bridges = (await db.owner.query('select count(*)::int as n from auth.bridge_identities where auth_provider_user_id = $1', [sub])).rows[0];
  expect(bridges.n).toBe(1);
  expect((await auth.query('select current_uses from auth.invite_codes where code = $1', [invite.code])).rows[0].current_uses).toBe(1);
  // another identity with the used-up code is still refused
  await expect(signIn(randomUUID(), invite.code)).rejects.toMatchObject({ code: 'AUINV', message: 'invite_invalid' });
});

test('no account is created outside the bridge, whoever inserts', async () => {
  await expect(db.owner.query("insert into auth.users (email) values ('sneaky@example.com')")).rejects.toMatchObject({
    code: 'AUCRE', message: 'account_creation_disabled',
  });
  await expect(auth.query("insert into auth.users (email) values ('sneaky@example.com')")).rejects.toMatchObject({ code: '42501' });
  for (const role of ['poker_cage', 'poker_game', 'poker_worker', 'poker_admin', 'poker_anonymous'] as const) {
    await expect(db.pool(role, 1).query("select * from auth.bridge_sign_in('oidc', 'x', null, 'y')")).rejects.toMatchObject({ code: '42501' });
  }
});

test('a bridged (poker) user can never get an email/password credential', async () => {
  const invite = await mint();
  const user = (await signIn(randomUUID(), invite.code)).rows[0];
  await expect(
    db.owner.query("insert into auth_private.credentials (user_id, email, password_hash) values ($1, 'x@example.com', 'h')", [user.user_id]),
  ).rejects.toMatchObject({ code: 'AUCRE' });
  const admin = (await db.owner.query("select auth.create_admin('ops@example.com', 'scrypt$hash') as id")).rows[0].id;
  expect(admin).toMatch(/^[0-9a-f-]{36}$/);
});

test.each([
  ['a too-short code', ['short', 1, null, 'admin']],
  ['zero uses', [code(), 0, null, 'admin']],
  ['an empty createdBy', [code(), 1, null, '']],
])('minting refuses %s', async (_name, args) => {
  await expect(auth.query('select * from auth.mint_invite($1, $2, $3, $4)', args)).rejects.toMatchObject({ code: 'AUIRQ' });
});
