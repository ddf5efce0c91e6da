// The bridge: the one way a poker account comes to exist. An OIDC ID token from the configured
// identity provider (signature against its JWKS, issuer, audience, expiry), plus an invite code on
// the first sign-in only; the user, the bridge record and the code's use are one SQL transaction
// (auth.bridge_sign_in). Answers with an access JWT signed with the keys of /api/auth/jwks; no
// session is created. `test-idp-token:<sub>` stands in for a provider token only while the test
// harness is permitted.
import type { Express } from 'express';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import type pg from 'pg';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Config } from '../config/index.ts';
import { withRetry } from '../db/pools.ts';
import { ApiError } from '../http/errors.ts';
import { withSpan } from '../telemetry/index.ts';
import type { KeyStore } from './keys.ts';
import { walletAddressClaim } from './token-claims.ts';
import { describeRoute } from '../http/openapi.ts';

const TEST_TOKEN = /^test-idp-token:([A-Za-z0-9._:@-]{1,200})$/;
export const bridgeBody = z.object({ idToken: z.string().max(16384).optional(), inviteCode: z.string().max(128).optional() }).strip();

interface Identity {
  provider: string;
  subject: string;
  email: string | null;
}

export const bridgeRoutes = [
  describeRoute({
    method: 'post', path: '/api/auth/bridge', auth: 'none', summary: 'Exchanges an identity provider\'s ID token (and an invite code for a new account) for an access JWT',
    body: bridgeBody,
    responses: {
      200: '{ token, user: { id, email }, created }', 400: 'idp_token_missing', 401: 'idp_token_invalid',
      403: 'invite_required / invite_invalid (account creation is invite-gated)', 503: 'idp_not_configured',
    },
  }),
];

export function installBridgeRoute(app: Express, deps: { pool: pg.Pool; keys: KeyStore; config: Config; log: Logger }) {
  const { pool, keys, config, log } = deps;
  const idpJwks = config.IDP_JWKS_URL ? createRemoteJWKSet(new URL(config.IDP_JWKS_URL)) : undefined;

  async function identityOf(idToken: string): Promise<Identity> {
    const test = TEST_TOKEN.exec(idToken);
    if (test) {
      if (!config.testAuthPermitted) throw new ApiError(401, 'idp_token_invalid');
      return { provider: 'test', subject: test[1]!, email: null };
    }
    if (!idpJwks || !config.IDP_ISSUER || !config.IDP_AUDIENCE) throw new ApiError(503, 'idp_not_configured');
    try {
      const { payload } = await jwtVerify(idToken, idpJwks, {
        issuer: config.IDP_ISSUER, audience: config.IDP_AUDIENCE, requiredClaims: ['sub', 'exp', 'iat'],
        algorithms: ['RS256', 'ES256', 'EdDSA', 'PS256'], clockTolerance: 60,
      });
      const email = typeof payload.email === 'string' && payload.email_verified !== false ? payload.email : null;
      return { provider: config.IDP_ISSUER, subject: payload.sub!, email };
    } catch {
      throw new ApiError(401, 'idp_token_invalid');
    }
  }

  app.post('/api/auth/bridge', async (req, res) => {
    const body = bridgeBody.safeParse(req.body ?? {});
    const idToken = body.success ? body.data.idToken : undefined;
    const result = await withSpan('auth.idp.bridge', {}, async (span) => {
      if (!idToken) throw new ApiError(400, 'idp_token_missing');
      const identity = await identityOf(idToken);
      span.setAttribute('auth.provider', identity.provider);
      const { rows } = await withRetry(() =>
        pool.query<{ user_id: string; email: string | null; created: boolean }>(
          'select user_id, email, created from auth.bridge_sign_in($1, $2, $3, $4)',
          [identity.provider, identity.subject, identity.email, body.success ? body.data.inviteCode ?? null : null],
        ),
      );
      const user = rows[0]!;
      span.setAttribute('auth.user_id', user.user_id);
      span.setAttribute('auth.created', user.created);
      return user;
    });
    const token = await keys.sign({
      sub: result.user_id, email: result.email ?? undefined, walletAddress: await walletAddressClaim(pool, result.user_id), authMethod: config.IDP_AUTH_METHOD,
    });
    if (result.created) log.info({ userId: result.user_id }, 'account created through the bridge');
    res.json({ token, user: { id: result.user_id, email: result.email }, created: result.created });
  });
}
