// The test harness's JWT mint: `POST /api/dev/mint-jwt { userId }` answers an access JWT for an
// existing user, signed like every other token. The route exists only while the harness is
// permitted (ENABLE_TEST_AUTH=true and NODE_ENV development or test); otherwise it is not mounted
// at all, so it answers the ordinary 404.
import type { Express } from 'express';
import type pg from 'pg';
import { z } from 'zod';
import { ApiError } from '../http/errors.ts';
import type { KeyStore } from './keys.ts';
import { walletAddressClaim } from './token-claims.ts';
import { userEmail } from './queries.ts';
import { describeRoute } from '../http/openapi.ts';

export const mintJwtBody = z.object({ userId: z.uuid() });

/** The contract of installDevRoutes: mounted only while the test harness is permitted. */
export const devRoutes = [
  describeRoute({
    method: 'post', path: '/api/dev/mint-jwt', auth: 'none', summary: 'Test harness: an access JWT for an existing user', body: mintJwtBody,
    responses: { 200: '{ token }', 404: 'user_not_found' },
  }),
];

export function installDevRoutes(app: Express, deps: { pool: pg.Pool; keys: KeyStore }) {
  app.post('/api/dev/mint-jwt', async (req, res) => {
    const { userId } = mintJwtBody.parse(req.body ?? {});
    const user = await userEmail(deps.pool, userId);
    if (!user) throw new ApiError(404, 'user_not_found');
    // never an operator's token: no role claim, whatever the body asks
    const token = await deps.keys.sign({
      sub: userId, email: user.email ?? undefined, walletAddress: await walletAddressClaim(deps.pool, userId), authMethod: 'email',
    });
    res.json({ token });
  });
}
