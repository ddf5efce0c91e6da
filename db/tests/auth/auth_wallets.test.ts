// Wallet linkage rules in SQL: one owner per wallet, exactly one primary, the link nonce taken once.
import { randomBytes, randomUUID } from 'node:crypto';
import type pg from 'pg';
import { privateKeyToAccount, generatePrivateKey } from 'viem/accounts';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/db.ts';

let db: TestDatabase;
let auth: pg.Pool;
beforeAll(async () => {
  db = await createTestDatabase();
  auth = db.pool('poker_auth', 20);
});
afterAll(async () => {
  await db.drop();
});

async function newUser() {
  const invite = `inv_${randomBytes(12).toString('hex')}`;
  await auth.query('select auth.mint_invite($1)', [invite]);
  return (await auth.query('select user_id from auth.bridge_sign_in($1, $2, null, $3)', ['oidc', randomUUID(), invite])).rows[0].user_id as string;
}
const evmAddress = () => privateKeyToAccount(generatePrivateKey()).address; // EIP-55 checksummed
const BASE58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
const solanaAddress = () => Array.from(randomBytes(44), (b) => BASE58[b % 58]).join('');
const link = (user: string, address: string, chain = 'evm', chainId = 1) =>
  auth.query('select * from auth.link_wallet($1, $2, $3, $4)', [user, address, chain, chainId]);
const wallets = async (user: string) =>
  (await auth.query('select address, is_primary from auth.wallets where user_id = $1 order by created_at, id', [user])).rows;

test('the first wallet becomes primary, the next ones do not; relinking your own is idempotent', async () => {
  const user = await newUser();
  const [a, b] = [evmAddress(), evmAddress()];
  expect((await link(user, a)).rows[0]).toEqual({ address: a, chain_id: 1, is_primary: true, already_linked: false });
  expect((await link(user, b)).rows[0]).toMatchObject({ is_primary: false, already_linked: false });
  expect((await link(user, a.toLowerCase())).rows[0]).toEqual({ address: a, chain_id: 1, is_primary: true, already_linked: true });
  expect(await wallets(user)).toEqual([{ address: a, is_primary: true }, { address: b, is_primary: false }]);
});

test('a wallet of another user is refused (sybil), EVM case-insensitively, Solana case-sensitively', async () => {
  const [alice, bob] = [await newUser(), await newUser()];
  const evm = evmAddress();
  await link(alice, evm);
  await expect(link(bob, evm.toLowerCase())).rejects.toMatchObject({ code: 'AUSYB', message: 'wallet already linked to another account' });
  const sol = solanaAddress();
  await link(alice, sol, 'solana', 0);
  await expect(link(bob, sol, 'solana', 0)).rejects.toMatchObject({ code: 'AUSYB' });
  const swapped = sol.replace(/[a-z]/, (c) => c.toUpperCase());
  if (swapped !== sol && /^[1-9A-HJ-NP-Za-km-z]+$/.test(swapped)) {
    expect((await link(bob, swapped, 'solana', 0)).rows[0]).toMatchObject({ already_linked: false });
  }
});

test('many users racing for one wallet: exactly one owns it', async () => {
  const users = await Promise.all(Array.from({ length: 10 }, () => newUser()));
  const evm = evmAddress();
  const results = await Promise.allSettled(users.map((u) => link(u, evm)));
  expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
  for (const r of results) if (r.status === 'rejected') expect(r.reason).toMatchObject({ code: 'AUSYB' });
});

test('one user linking several wallets at once still gets exactly one primary', async () => {
  const user = await newUser();
  await Promise.all(Array.from({ length: 6 }, () => link(user, evmAddress())));
  const rows = await wallets(user);
  expect(rows).toHaveLength(6);
  expect(rows.filter((w) => w.is_primary)).toHaveLength(1);
  expect(rows[0].is_primary).toBe(true);
});

test.each([
  ['not hex', '0xZZ', 'evm', 1],
  ['too short', '0x1234', 'evm', 1],
  ['chain id 0 on evm', '0x' + 'a'.repeat(40), 'evm', 0],
  ['solana with a chain id', 'So1ana1111111111111111111111111111111111111', 'solana', 1],
  ['bad base58 (0, O, I, l)', '0OIl' + '1'.repeat(40), 'solana', 0],
  ['an unknown chain', '0x' + 'a'.repeat(40), 'bitcoin', 1],
])('a malformed wallet is refused: %s', async (_name, address, chain, chainId) => {
  const user = await newUser();
  await expect(link(user, address, chain, chainId)).rejects.toMatchObject({ code: 'AUADR', message: 'invalid walletAddress' });
  expect(await wallets(user)).toEqual([]);
});

test('set-primary moves the flag in one transaction; the other user\'s wallet is not found', async () => {
  const [user, other] = [await newUser(), await newUser()];
  const [a, b] = [evmAddress(), evmAddress()];
  await link(user, a);
  await link(user, b);
  expect((await auth.query('select * from auth.set_primary_wallet($1, $2)', [user, b.toLowerCase()])).rows[0]).toEqual({ address: b, already_primary: false });
  expect(await wallets(user)).toEqual([{ address: a, is_primary: false }, { address: b, is_primary: true }]);
  expect((await auth.query('select * from auth.set_primary_wallet($1, $2)', [user, b])).rows[0]).toEqual({ address: b, already_primary: true });
  await expect(auth.query('select * from auth.set_primary_wallet($1, $2)', [other, a])).rejects.toMatchObject({ code: 'AUWNF' });
});

test('unlinking the primary promotes the most recently created remaining wallet; the last one may go too', async () => {
  const user = await newUser();
  const [a, b, c] = [evmAddress(), evmAddress(), solanaAddress()];
  await link(user, a);
  await link(user, b);
  await link(user, c, 'solana', 0);
  expect((await auth.query('select * from auth.unlink_wallet($1, $2)', [user, a])).rows[0]).toEqual({ address: a, was_primary: true, new_primary: c });
  expect(await wallets(user)).toEqual([{ address: b, is_primary: false }, { address: c, is_primary: true }]);
  expect((await auth.query('select * from auth.unlink_wallet($1, $2)', [user, b])).rows[0]).toEqual({ address: b, was_primary: false, new_primary: c });
  expect((await auth.query('select * from auth.unlink_wallet($1, $2)', [user, c])).rows[0]).toEqual({ address: c, was_primary: true, new_primary: null });
  expect(await wallets(user)).toEqual([]);
  await expect(auth.query('select * from auth.unlink_wallet($1, $2)', [user, c])).rejects.toMatchObject({ code: 'AUWNF' });
});

test('the database itself refuses zero or two primaries', async () => {
  const user = await newUser();
  const [a, b] = [evmAddress(), evmAddress()];
  await link(user, a);
  await link(user, b);
  await expect(db.owner.query('update auth.wallets set is_primary = true where user_id = $1', [user])).rejects.toMatchObject({ code: '23505' });
  await expect(db.owner.query('update auth.wallets set is_primary = false where user_id = $1', [user])).rejects.toMatchObject({ code: 'AUPRI' });
  await expect(auth.query('update auth.wallets set is_primary = false')).rejects.toMatchObject({ code: '42501' });
});

describe('the link nonce', () => {
  test('is taken once: a replay finds no nonce', async () => {
    const [user, id] = [await newUser(), `siwe:${evmAddress()}:1`];
    await auth.query('select auth.issue_nonce($1, $2, $3, 300)', [id, user, 'nonce12345678']);
    expect((await auth.query('select auth.consume_nonce($1, $2) as v', [id, user])).rows[0].v).toBe('nonce12345678');
    await expect(auth.query('select auth.consume_nonce($1, $2)', [id, user])).rejects.toMatchObject({ code: 'AUNON', message: 'no nonce' });
  });

  test('two concurrent links with one nonce: exactly one takes it', async () => {
    const [user, id] = [await newUser(), `siwe:${evmAddress()}:1`];
    await auth.query('select auth.issue_nonce($1, $2, $3, 300)', [id, user, 'nonceABCDEFGH']);
    const results = await Promise.allSettled(Array.from({ length: 10 }, () => auth.query('select auth.consume_nonce($1, $2) as v', [id, user])));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
  });

  test('an expired nonce is no nonce; a new nonce of the same user replaces the old one', async () => {
    const [user, id] = [await newUser(), `siwe:${evmAddress()}:1`];
    await auth.query('select auth.issue_nonce($1, $2, $3, 1)', [id, user, 'nonce-old-000']);
    await db.owner.query("update auth_private.verifications set expires_at = now() - interval '1 second' where identifier = $1", [id]);
    await expect(auth.query('select auth.consume_nonce($1, $2)', [id, user])).rejects.toMatchObject({ code: 'AUNON' });
    await auth.query('select auth.issue_nonce($1, $2, $3, 300)', [id, user, 'nonce-first-0']);
    await auth.query('select auth.issue_nonce($1, $2, $3, 300)', [id, user, 'nonce-second0']);
    expect((await auth.query('select auth.consume_nonce($1, $2) as v', [id, user])).rows[0].v).toBe('nonce-second0');
  });

  test('belongs to the user who asked: another user neither replaces nor takes it', async () => {
    const [alice, mallory, id] = [await newUser(), await newUser(), `siwe:${evmAddress()}:1`];
    await auth.query('select auth.issue_nonce($1, $2, $3, 300)', [id, alice, 'nonce-alice-0']);
    await auth.query('select auth.issue_nonce($1, $2, $3, 300)', [id, mallory, 'nonce-mallory']);
    expect((await auth.query('select auth.consume_nonce($1, $2) as v', [id, mallory])).rows[0].v).toBe('nonce-mallory');
    await expect(auth.query('select auth.consume_nonce($1, $2)', [id, mallory])).rejects.toMatchObject({ code: 'AUNON' });
    expect((await auth.query('select auth.consume_nonce($1, $2) as v', [id, alice])).rows[0].v).toBe('nonce-alice-0');
  });

  test('a user holds at most 16 live nonces; asking for more drops the oldest', async () => {
    const user = await newUser();
    const ids = Array.from({ length: 20 }, () => `siwe:${evmAddress()}:1`);
    for (const id of ids) await auth.query('select auth.issue_nonce($1, $2, $3, 300)', [id, user, `nonce-${id.slice(7, 17)}`]);
    const { rows } = await db.owner.query('select identifier from auth_private.verifications where requested_by = $1', [user]);
    expect(rows.map((r) => r.identifier).sort()).toEqual(ids.slice(4).sort());
  });

  test('a user that does not exist gets no nonce', async () => {
    await expect(auth.query('select auth.issue_nonce($1, $2, $3, 300)', [`siwe:${evmAddress()}:1`, randomUUID(), 'nonce12345678']))
      .rejects.toMatchObject({ code: 'AUWNF' });
  });
});
