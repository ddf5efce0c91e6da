// Smart-contract wallets (EIP-1271) on POST /api/link-wallet: a real local chain (anvil), a real
// contract wallet deployed on it, its owner signing the SIWE message as a browser wallet would, and
// the auth role asking the chain through EVM_RPC_URL.
import type { Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { createSiweMessage } from 'viem/siwe';
import { startAuth } from '../../server/roles/auth.ts';
import { loadConfig } from '../../server/config/index.ts';
import type { StartedRole } from '../../server/roles/types.ts';
import { deployOwnerWallet, startAnvil, type Anvil } from '../helpers/anvil.ts';
import { bridgedUser } from '../helpers/auth.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { freePort } from '../helpers/ports.ts';
import { createLogger } from '../../server/telemetry/index.ts';

const ISSUER = 'https://auth.poker.test';
const DOMAIN = 'poker.test';
const ORIGIN = 'https://poker.test';
const SECRET = 'link-wallet-1271-test-secret-0123456789';
let db: TestDatabase;
let anvil: Anvil;
let withRpc: StartedRole;
let withoutRpc: StartedRole;
let deadRpc: StartedRole;
let owner: PrivateKeyAccount;
let contractWallet: Address;

const start = (env: Record<string, string>) =>
  startAuth({
    config: loadConfig({ NODE_ENV: 'test', PORT: '0', AUTH_SECRET: SECRET, AUTH_BASE_URL: ISSUER, AUTH_DOMAIN: DOMAIN, AUTH_TRUSTED_ORIGINS: ORIGIN, ...env }),
    databaseUrl: db.url, log: createLogger('silent'),
  });

beforeAll(async () => {
  [db, anvil] = await Promise.all([createTestDatabase(), startAnvil()]);
  owner = privateKeyToAccount(generatePrivateKey());
  contractWallet = await deployOwnerWallet(anvil, owner.address);
  withRpc = await start({ EVM_RPC_URL: anvil.url });
  withoutRpc = await start({});
  deadRpc = await start({ EVM_RPC_URL: `http://127.0.0.1:${await freePort()}` });
}, 60_000);
afterAll(async () => {
  await Promise.all([withRpc?.stop(), withoutRpc?.stop(), deadRpc?.stop()]);
  await anvil?.stop();
  await db?.drop();
});

async function pokerUser() {
  const { userId, jwt } = await bridgedUser(db, { issuer: ISSUER });
  return { userId, headers: { authorization: `Bearer ${jwt}`, origin: ORIGIN, 'content-type': 'application/json' } as Record<string, string> };
}
const post = (role: StartedRole, path: string, headers: Record<string, string>, body: unknown) =>
  fetch(`${role.url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });

/** Asks `role` for a nonce for `address`, and signs a SIWE message for it with `signer`. */
async function signedLink(role: StartedRole, headers: Record<string, string>, address: Address, signer: PrivateKeyAccount, chainId: number) {
  const res = await post(role, '/api/auth/siwe/nonce', headers, { walletAddress: address, chainId });
  expect(res.status).toBe(200);
  const { nonce } = (await res.json()) as { nonce: string };
  const message = createSiweMessage({ address, chainId, domain: DOMAIN, nonce, uri: `https://${DOMAIN}/wallets`, version: '1' });
  return { message, signature: await signer.signMessage({ message }), walletAddress: address, chainId };
}

test('a contract wallet links when its owner signs and the chain says isValidSignature', async () => {
  const user = await pokerUser();
  const res = await post(withRpc, '/api/link-wallet', user.headers, await signedLink(withRpc, user.headers, contractWallet, owner, anvil.chainId));
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ ok: true, walletAddress: contractWallet, chainId: anvil.chainId, isPrimary: true });
  const { rows } = await db.owner.query('select address, chain_id from auth.wallets where user_id = $1', [user.userId]);
  expect(rows).toEqual([{ address: contractWallet, chain_id: anvil.chainId }]);
});

test('a contract wallet signature from a key that does not own it -> 401 invalid signature', async () => {
  const user = await pokerUser();
  const stranger = privateKeyToAccount(generatePrivateKey());
  const res = await post(withRpc, '/api/link-wallet', user.headers, await signedLink(withRpc, user.headers, contractWallet, stranger, anvil.chainId));
  expect(res.status).toBe(401);
  expect(await res.json()).toEqual({ error: 'invalid signature', code: 'invalid_signature' });
});

test('a contract wallet on a chain the RPC does not serve, or with no RPC configured -> 401 invalid signature', async () => {
  const user = await pokerUser();
  const otherChain = await post(withRpc, '/api/link-wallet', user.headers, await signedLink(withRpc, user.headers, contractWallet, owner, 1));
  expect(otherChain.status).toBe(401);
  const noRpc = await post(withoutRpc, '/api/link-wallet', user.headers, await signedLink(withoutRpc, user.headers, contractWallet, owner, anvil.chainId));
  expect(noRpc.status).toBe(401);
  expect(await noRpc.json()).toEqual({ error: 'invalid signature', code: 'invalid_signature' });
});

test('an unreachable RPC is a 503 for a contract wallet, while EOA links (checked offline) still work', async () => {
  const user = await pokerUser();
  const res = await post(deadRpc, '/api/link-wallet', user.headers, await signedLink(deadRpc, user.headers, contractWallet, owner, anvil.chainId));
  expect(res.status).toBe(503);
  expect(await res.json()).toEqual({ error: 'wallet_rpc_unavailable' });
  const { rows } = await db.owner.query('select 1 from auth.wallets where user_id = $1', [user.userId]);
  expect(rows).toHaveLength(0);

  const eoa = privateKeyToAccount(generatePrivateKey());
  const ok = await post(deadRpc, '/api/link-wallet', user.headers, await signedLink(deadRpc, user.headers, eoa.address, eoa, anvil.chainId));
  expect(ok.status).toBe(200);
});
