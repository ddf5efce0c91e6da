// Chain-bank fixtures for tests: a player's EVM wallet (a viem private-key account) linked to their
// user and funded with chips on the local chain, and a deposit body carrying a permit that wallet
// signed as a browser wallet would (the chain bank's POST /api/deposit).
import type { Address, Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { mintChips, signPermit } from '../../server/chain/dev-wallet.ts';
import { createChainBankChain } from '../../server/chain/evm.ts';
import type { Deployment } from '../../server/chain/types.ts';
import type { TestDatabase } from './db.ts';
import { startTestPlatform } from './platform.ts';

/** The chain-bank role's local chain (its `chain` field under the test harness). */
export interface LocalChain { url: string; deployment: Deployment; minterKey: Hex }

export const inAnHour = () => BigInt(Math.floor(Date.now() / 1000) + 3600);

/** A fresh wallet linked to `userId`, holding `chips` on the local chain. */
export async function fundedWallet(db: TestDatabase, local: LocalChain, userId: string, chips: bigint) {
  const key = generatePrivateKey();
  const wallet = privateKeyToAccount(key).address;
  await db.owner.query("select * from auth.link_wallet($1, $2, 'evm', $3)", [userId, wallet, local.deployment.chainId]);
  if (chips > 0n) await mintChips({ rpcUrl: local.url, deployment: local.deployment, minterKey: local.minterKey, to: wallet, chips });
  return { key, wallet };
}

/** A deposit body: `chips` to `seatIndex` of `tableId`, paid by a permit the wallet of `key` signs now. */
export async function permitDeposit(
  local: LocalChain, w: { key: Hex; wallet: Address }, tableId: string, chips: bigint,
  opts: { seatIndex?: number; deadline?: bigint; signer?: Address } = {},
) {
  const permit = await signPermit({ rpcUrl: local.url, deployment: local.deployment, ownerKey: w.key, chips, deadline: opts.deadline ?? inAnHour() });
  return {
    tableId, seatIndex: opts.seatIndex ?? 0, amount: Number(chips),
    permit: { v: permit.v, r: permit.r, s: permit.s, deadline: permit.deadline.toString() }, signerAddress: opts.signer ?? w.wallet,
  };
}

/** The issuer of the tokens the chain-bank platform's auth role mints (bridgedUser's `issuer`). */
export const CHAIN_ISSUER = 'https://auth.poker.test';

/**
 * Real money on, and the auth, game and chain-bank roles on `db` (the chain bank's own local anvil,
 * its contracts deployed and activated): the chain bank's URL, its local chain, and a reader of that
 * chain with a key of its own (it sends nothing the tests count).
 */
export async function startChainBank(db: TestDatabase) {
  await db.owner.query("insert into cage.switches (name, enabled) values ('real_money', true) on conflict (name) do update set enabled = true");
  const platform = await startTestPlatform({
    databaseUrl: db.url, roles: ['auth', 'game', 'chain-bank'],
    env: { AUTH_BASE_URL: CHAIN_ISSUER, ENABLE_TEST_AUTH: 'true', CHAIN_CONFIRM_WINDOW_MS: '20000' },
  });
  const local = (platform.role('chain-bank') as unknown as { chain: LocalChain }).chain;
  const reader = createChainBankChain({ rpcUrl: local.url, operatorKey: generatePrivateKey(), deployment: local.deployment });
  return { platform, bank: platform.url('chain-bank'), local, reader };
}
