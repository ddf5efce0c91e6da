// The auth role: identity, JWT + JWKS, admin sessions, the invite-gated bridge, wallets.
import { randomBytes } from 'node:crypto';
import type { Express, RequestHandler } from 'express';
import { z } from 'zod';
import { loginCredentials } from '../config/index.ts';
import { createRolePool } from '../db/pools.ts';
import { createApp, serveRole } from '../http/app.ts';
import { requireServiceKey } from '../http/service-key.ts';
import type { RoleContext, StartedRole } from './types.ts';
import { withSpan } from '../telemetry/index.ts';
import { isClosedCreationPath } from '../auth/blocked-paths.ts';
import { authSettings } from '../auth/config.ts';
import { createKeyStore } from '../auth/keys.ts';
import { roleKey } from '../crypto/pins.ts';
import { installSessionRoutes } from '../auth/sessions.ts';
import { callerResolver, installWalletRoutes } from '../auth/wallets.ts';
import { installLinkWalletRoutes } from '../auth/link-wallet.ts';
import { createEvmSignatureVerifier } from '../auth/evm-signatures.ts';
import { installBridgeRoute } from '../auth/bridge.ts';
import { installSolanaLinkRoutes } from '../auth/link-solana.ts';
import { installDevRoutes } from '../auth/dev.ts';
import { installPasswordResetRoutes } from '../auth/password-reset.ts';
import { createAttemptLimiter } from '../auth/rate-limit.ts';
import { corsForTrustedOrigins } from '../auth/cors.ts';
import { describeRoute, type RouteContract } from '../http/openapi.ts';
import { sessionRoutes } from '../auth/sessions.ts';
import { walletRoutes } from '../auth/wallets.ts';
import { linkWalletRoutes } from '../auth/link-wallet.ts';
import { bridgeRoutes } from '../auth/bridge.ts';
import { devRoutes } from '../auth/dev.ts';
import { passwordResetRoutes } from '../auth/password-reset.ts';
import { solanaLinkRoutes } from '../auth/link-solana.ts';

export const inviteRequest = z
  .object({
    maxUses: z.number().int().min(1).max(1_000_000).default(1),
    // negative: an already-expired code (the spec's rule); at most ten years either way
    expiresInSeconds: z.number().int().min(-315_360_000).max(315_360_000).nullable().default(null),
    createdBy: z.string().min(1).max(200).default('admin'),
  })
  .strip();

/** The auth role's own routes. */
const authRoleRoutes = [
  describeRoute({
    method: 'get', path: '/api/auth/jwks', auth: 'none', summary: 'The public keys the access JWTs are signed with (JWKS, EdDSA)',
    responses: { 200: '{ keys: [JWK] } (cacheable: public, max-age=60)' },
  }),
  describeRoute({
    method: 'post', path: '/admin/invite-codes', auth: 'service', summary: 'Mints an invite code (account creation through the bridge is invite-gated)',
    body: inviteRequest, responses: { 201: '{ code, maxUses, expiresAt, createdAt }' },
  }),
];

/** Every route the auth role mounts, described (the dev route only while the test harness is permitted). */
export function authRoutes(testAuthPermitted: boolean): RouteContract[] {
  return [
    ...sessionRoutes, ...walletRoutes, ...linkWalletRoutes, ...bridgeRoutes, ...(testAuthPermitted ? devRoutes : []),
    ...passwordResetRoutes, ...solanaLinkRoutes, ...authRoleRoutes,
  ];
}

/** 403 account_creation_disabled for every spelling of a closed path, before anything else runs. */
function closedPaths(log: RoleContext['log']): RequestHandler {
  return (req, res, next) => {
    if (!isClosedCreationPath(req.originalUrl)) return next();
    log.warn({ marker: 'auth.blocked_path', method: req.method, path: req.originalUrl.slice(0, 512) }, 'auth.blocked_path');
    res.status(403).json({ error: 'account_creation_disabled' });
  };
}

export async function startAuth({ config, databaseUrl, log, peers }: RoleContext): Promise<StartedRole> {
  const settings = authSettings(config);
  const roleLog = log.child({ role: 'auth' });
  const jwtKey = await roleKey(config, 'auth');
  const pool = createRolePool(databaseUrl, 'poker_auth', { max: 20, applicationName: 'auth', ...loginCredentials(config, 'poker_auth') });
  return serveRole({ role: 'auth', pool, log: roleLog, host: config.HOST, port: config.PORT, build: async () => {
    const keys = createKeyStore(pool, { privateKey: jwtKey.privateKey, issuer: settings.baseUrl, source: jwtKey.source });
    // nobody signs with a key the platform does not trust: its public half is pinned and active
    const kid = await keys.activeKid();
    roleLog.info({ keySource: jwtKey.source, kid, publicKey: keys.publicKeyHex }, 'JWT signing key loaded (pinned)');
    const limiter = createAttemptLimiter(pool, {
      windowSeconds: config.AUTH_LIMIT_WINDOW_SECONDS, signInPerAccount: config.AUTH_SIGN_IN_LIMIT_PER_ACCOUNT,
      signInPerPeer: config.AUTH_SIGN_IN_LIMIT_PER_PEER, recoveryPerPeer: config.AUTH_RECOVERY_LIMIT_PER_PEER,
    }, roleLog);
    const app = await createApp({
      log: roleLog,
      bodyLimit: config.HTTP_BODY_LIMIT,
      pool,
      api: { role: 'auth', routes: authRoutes(config.testAuthPermitted) },
      before: (app: Express) => {
        // the client address the attempt limits count (req.ip): the TCP peer unless TRUST_PROXY is set
        app.set('trust proxy', config.TRUST_PROXY);
        app.use(closedPaths(roleLog));
        app.use(corsForTrustedOrigins(settings));
      },
      routes: (app: Express) => {
        const session = installSessionRoutes(app, { pool, keys, settings, log: roleLog, limiter });
        const userOf = callerResolver({ keys, settings, session });
        installWalletRoutes(app, { pool, settings, log: roleLog, userOf, serviceKey: config.SERVICE_KEY });
        installLinkWalletRoutes(app, {
          pool, settings, log: roleLog, userOf, signatures: createEvmSignatureVerifier({ rpcUrl: config.EVM_RPC_URL }),
        });
        installBridgeRoute(app, { pool, keys, config, log: roleLog });
        if (config.testAuthPermitted) installDevRoutes(app, { pool, keys });
        installPasswordResetRoutes(app, {
          pool, settings, log: roleLog, limiter, ttlSeconds: config.AUTH_RESET_TOKEN_TTL_SECONDS,
        });
        installSolanaLinkRoutes(app, {
          pool, settings, log: roleLog, userOf,
        });

        app.get('/api/auth/jwks', async (_req, res) => {
          res.set('cache-control', 'public, max-age=60').json(await keys.jwks());
        });

        // one span per call, whatever fails (the key, the body, the database): the spec's span
        // records `invite_mint_failed` on every failure; the answer keeps its own code
        const serviceKey = requireServiceKey(config.SERVICE_KEY);
        app.post('/admin/invite-codes', async (req, res) => {
          const { invite, createdBy } = await withSpan('auth.invite.mint', {}, async (span) => {
            await new Promise<void>((resolve, reject) => serviceKey(req, res, (err?: unknown) => (err ? reject(err) : resolve())));
            const body = inviteRequest.parse(req.body ?? {});
            span.setAttribute('invite.max_uses', body.maxUses);
            const { rows } = await pool.query(
              'select code, max_uses, expires_at, created_at from auth.mint_invite($1, $2, $3, $4)',
              [randomBytes(16).toString('base64url'), body.maxUses, body.expiresInSeconds, body.createdBy],
            );
            return { invite: rows[0], createdBy: body.createdBy };
          }, { errorCode: 'invite_mint_failed' });
          roleLog.info({ maxUses: invite.max_uses, expiresAt: invite.expires_at, createdBy }, 'invite minted');
          res.status(201).json({ code: invite.code, maxUses: invite.max_uses, expiresAt: invite.expires_at, createdAt: invite.created_at });
        });
      },
    });
    return { app, fields: { issuer: settings.baseUrl } };
  } });
}
