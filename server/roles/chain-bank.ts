// The chain-bank role (`--role chain-bank`, CHAIN_BANK_PORT): the bank interface on an EVM chain
// (spec: "Chain bank"), the bank contract the cage implements too (server/bank-contract/), for the
// tables whose bank is 'chain': the game and web roles send those tables' calls here. Its chain: EVM_RPC_URL with the deployed contracts (CHAIN_TOKEN_ADDRESS,
// CHAIN_VAULT_ADDRESS) and the operator key (CHAIN_OPERATOR_KEY); without EVM_RPC_URL a local anvil
// is started with the contracts deployed (server/chain/local.ts) and printed with the roles. Its
// intents are rows of the `bank` schema, moved only by the bank functions its login (poker_bank)
// may execute; the chain's receipts are the authority for a confirmation, and the game reads each
// deposit back from the chain before it funds a seat. Which contracts are active is an operator's
// act (POST /api/operator/chain/deployment); `npm start` without EVM_RPC_URL activates its local
// anvil's as the owner (the database owner's URL it starts with), at boot.
import type { Express } from 'express';
import { createApp, serveRole } from '../http/app.ts';
import { createRolePool } from '../db/pools.ts';
import { lazyJwtVerifier } from '../http/jwt.ts';
import { authIssuer, loginCredentials } from '../config/index.ts';
import { createServiceClient } from '../http/service-client.ts';
import { installTableRoutes, tableCreateRoutes } from '../bank-contract/tables.ts';
import { bankDepositRoutes, installBankDepositRoutes, type BankDeps } from '../bank/deposit.ts';
import { bankWithdrawRoutes, installBankWithdrawRoutes } from '../bank/withdraw.ts';
import { chainTournamentRoutes, installChainTournamentRoutes } from '../bank/tournaments.ts';
import { chainInfoRoutes, installChainInfoRoutes } from '../bank/chain-info.ts';
import { activateLocalDeployment, deploymentIsActive, deploymentRoutes, installDeploymentRoutes } from '../bank/deployment.ts';
import { chainBankReconciler, installReconcileRoute, reconcileRoutes } from '../bank/reconcile.ts';
import { createChainBankChain } from '../chain/evm.ts';
import { startLocalChain, type LocalChain } from '../chain/local.ts';
import type { ChainBankChain } from '../chain/types.ts';
import { publicClientFor } from '../chain/client.ts';
import type { Address, Hex } from 'viem';
import { ownerUrlOf, type RoleContext, type StartedRole } from './types.ts';

/** Every route the chain bank mounts, described. */
export const chainBankRoutes = (testAuthPermitted: boolean) => [
  ...tableCreateRoutes({ testAuthPermitted, bank: 'chain' }), ...bankDepositRoutes, ...bankWithdrawRoutes, ...chainTournamentRoutes, ...chainInfoRoutes, ...deploymentRoutes, ...reconcileRoutes,
];

/** The chain: configured (EVM_RPC_URL and the contracts), or a local anvil with the contracts deployed. */
async function openChain(config: RoleContext['config'], log: RoleContext['log']): Promise<{ chain?: ChainBankChain; local?: LocalChain }> {
  if (!config.EVM_RPC_URL && config.NODE_ENV === 'production') {
    // a development chain with public keys has no place in production
    log.warn('no EVM_RPC_URL in production: deposits and withdrawals answer chain_not_configured');
    return {};
  }
  if (!config.EVM_RPC_URL) {
    const local = await startLocalChain();
    return { local, chain: createChainBankChain({ rpcUrl: local.url, operatorKey: local.operatorKey, deployment: local.deployment }) };
  }
  if (!(config.CHAIN_TOKEN_ADDRESS && config.CHAIN_VAULT_ADDRESS && config.CHAIN_OPERATOR_KEY)) {
    log.warn('EVM_RPC_URL is set without CHAIN_TOKEN_ADDRESS, CHAIN_VAULT_ADDRESS and CHAIN_OPERATOR_KEY: deposits and withdrawals answer chain_not_configured');
    return {};
  }
  const chainId = await publicClientFor(config.EVM_RPC_URL).getChainId();
  return {
    chain: createChainBankChain({
      rpcUrl: config.EVM_RPC_URL, operatorKey: config.CHAIN_OPERATOR_KEY as Hex,
      deployment: { chainId, token: config.CHAIN_TOKEN_ADDRESS as Address, vault: config.CHAIN_VAULT_ADDRESS as Address },
    }),
  };
}

/**
 * /health of the chain bank: the database (createApp) and the chain, probed within a short bound
 * (its block number): a node that does not answer is 503 `ok: false`, `error: chain_unreachable`,
 * with when and why it last failed; healthy again as soon as it answers. Without a chain configured
 * there is nothing to probe (deposits answer chain_not_configured).
 */
async function chainHealth(chain: ChainBankChain | undefined) {
  if (!chain) return { ok: true, chain: { configured: false } };
  const reachability = await chain.reachability();
  return { ok: reachability.reachable, ...(reachability.reachable ? {} : { error: 'chain_unreachable' }), chain: reachability };
}

/** The chain bank's routes (chainBankRoutes describes them). */
function installChainBankRoutes(app: Express, config: RoleContext['config'], deps: BankDeps, reconciler: ReturnType<typeof chainBankReconciler>) {
  installTableRoutes(app, {
    pool: deps.pool, log: deps.log, requireJwt: deps.jwt.require, testAuthPermitted: config.testAuthPermitted, bank: 'chain',
    creationLimit: { tables: config.TABLE_CREATE_LIMIT, windowSeconds: config.TABLE_CREATE_WINDOW_SECONDS },
  });
  installBankDepositRoutes(app, deps);
  installBankWithdrawRoutes(app, deps);
  installChainTournamentRoutes(app, deps);
  installChainInfoRoutes(app, deps);
  installDeploymentRoutes(app, deps);
  installReconcileRoute(app, config.SERVICE_KEY, reconciler);
}

export async function startChainBank(ctx: RoleContext): Promise<StartedRole> {
  const { config, databaseUrl, log, peers } = ctx, ownerUrl = ownerUrlOf(ctx);
  const roleLog = log.child({ role: 'chain-bank' });
  const pool = createRolePool(databaseUrl, 'poker_bank', { max: 20, applicationName: 'chain-bank', ...loginCredentials(config, 'poker_bank') });
  const jwt = lazyJwtVerifier({ jwksUrl: config.AUTH_JWKS_URL, issuer: authIssuer(config), peerAuthUrl: () => peers?.get('auth') });
  const game = createServiceClient({
    baseUrl: () => config.GAME_URL ?? peers?.get('game') ?? `http://${config.HOST}:${config.GAME_PORT}`,
    serviceKey: config.SERVICE_KEY,
    timeoutMs: config.GAME_CALL_TIMEOUT_MS,
  });
  const authUrl = () => config.AUTH_URL ?? peers?.get('auth');
  const auth = createServiceClient({ baseUrl: authUrl, serviceKey: config.SERVICE_KEY, timeoutMs: config.GAME_CALL_TIMEOUT_MS });

  const { chain, local } = await openChain(config, roleLog);
  const deps: BankDeps = {
    pool, log: roleLog, jwt, serviceKey: config.SERVICE_KEY, chain: () => chain, game,
    auth, confirmWindowMs: config.CHAIN_CONFIRM_WINDOW_MS, rpcUrl: config.EVM_RPC_URL ?? local?.url,
  };
  try {
    // a deployment is an operator's act; the local anvil's, the owner's at boot (development only; a
    // login-only process has no owner: an operator activates it as any other)
    if (local && ownerUrl) await activateLocalDeployment(ownerUrl, local.deployment, local.url);
    else if (chain && !(await deploymentIsActive(deps, chain.deployment))) {
      roleLog.warn({ vault: chain.deployment.vault }, 'these contracts are not the active deployment: an operator activates them (POST /api/operator/chain/deployment) before this bank serves deposits');
    }
  } catch (err) {
    await local?.stop();
    await pool.end();
    throw err;
  }

  // run once at startup, then whenever the worker's periodic job asks (server/intents/periodic.ts)
  const reconciler = chainBankReconciler(deps, Math.ceil(config.CHAIN_CONFIRM_WINDOW_MS / 1000) + 5);
  const started = await serveRole({ role: 'chain-bank', pool, log: roleLog, host: config.HOST, port: config.CHAIN_BANK_PORT, build: async () => {
    const app = await createApp({
      log: roleLog,
      bodyLimit: config.HTTP_BODY_LIMIT,
      pool,
      api: { role: 'chain-bank', routes: chainBankRoutes(config.testAuthPermitted) },
      health: () => chainHealth(chain),
      routes: (app: Express) => installChainBankRoutes(app, config, deps, reconciler),
    });
    return {
      app,
      fields: { chain: local?.url ?? config.EVM_RPC_URL ?? null, ...(chain ? { vault: chain.deployment.vault, token: chain.deployment.token } : {}) },
      onListening: () => {
        void reconciler.runNow();
      },
      onStop: async () => {
        await reconciler.stop();
      },
    };
  } }).catch(async (err: unknown) => {
    await local?.stop();
    throw err;
  });
  return {
    ...started,
    async stop() {
      try {
        await started.stop();
      } finally {
        await local?.stop();
      }
    },
    /** Runs the reconciler now (it also runs at startup and when the worker's periodic job asks); resolves when it is done. */
    reconcileNow: async () => { await reconciler.runNow(); },
    /** The local chain of this role (npm start without EVM_RPC_URL), for the printout and the tests. */
    ...(local ? { chain: { url: local.url, deployment: local.deployment, minterKey: local.minterKey } } : {}),
  } as StartedRole;
}
