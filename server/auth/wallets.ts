// Wallet routes: list, set-primary, unlink (the rules are SQL: db/functions/auth/30_wallets.sql),
// and the internal reads other roles use with the service key.
// Who may call the user routes: an admin session (cookie or Bearer session token), or, for poker
// users, who sign in through the bridge and get no session, this service's own access JWT as the
// Bearer (verified against our own keys: issuer and audience are this service).
import type { Express, Request } from 'express';
import { createLocalJWKSet } from 'jose';
import type pg from 'pg';
import type { Logger } from 'pino';
import { z } from 'zod';
import { requireServiceKey } from '../http/service-key.ts';
import { ApiError } from '../http/errors.ts';
import { verifyAccessJwt } from '../http/jwt.ts';
import type { AuthSettings } from './config.ts';
import type { KeyStore } from './keys.ts';
import { trustedOrigin, type SessionReader } from './sessions.ts';
import { describeRoute } from '../http/openapi.ts';
import { walletsOf, type WalletRecord } from './queries.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;


const toWire = (w: WalletRecord) => ({ address: w.address, chainId: w.chain_id, isPrimary: w.is_primary, createdAt: w.created_at });

/**
 * The caller's user id from a session, or from this service's own access JWT as the Bearer;
 * 401 `not signed in` otherwise.
 */
export function callerResolver(deps: { keys: KeyStore; settings: AuthSettings; session: SessionReader }) {
  const { keys, settings, session } = deps;
  return async (req: Request): Promise<string> => {
    const s = await session(req);
    if (s) return s.user_id;
    const bearer = /^Bearer (\S+\.\S+\.\S+)$/.exec(req.get('authorization') ?? '')?.[1];
    if (bearer) {
      try {
        return (await verifyAccessJwt(bearer, createLocalJWKSet(await keys.jwks()), settings.baseUrl)).sub;
      } catch {
        // falls through to 401
      }
    }
    throw new ApiError(401, 'not signed in');
  };
}

export const setPrimaryBody = z.object({ walletAddress: z.string().min(1).max(128) });
const walletParams = z.object({ address: z.string().describe('the wallet\'s address (longer than 128: wallet_not_found)') });
const publicUserParams = z.object({ publicUserId: z.string().describe('a user id (not a uuid: user_not_found)') });

/** The contracts of installWalletRoutes: the caller is an admin session or this service's own access JWT. */
export const walletRoutes = [
  describeRoute({
    method: 'get', path: '/api/wallets', auth: ['session', 'jwt'], summary: 'The caller\'s linked wallets',
    responses: { 200: '{ wallets: [{ address, chainId, isPrimary, createdAt }] }' },
  }),
  describeRoute({
    method: 'post', path: '/api/wallets/set-primary', auth: ['session', 'jwt'], summary: 'Makes a linked wallet the primary one', body: setPrimaryBody,
    responses: { 200: '{ ok, primary, alreadyPrimary? }', 403: 'untrusted_origin', 404: 'wallet_not_found' },
  }),
  describeRoute({
    method: 'delete', path: '/api/wallets/:address', auth: ['session', 'jwt'], summary: 'Unlinks a wallet', params: walletParams,
    responses: { 200: '{ ok, unlinked, wasPrimary }', 403: 'untrusted_origin', 404: 'wallet_not_found' },
  }),
  describeRoute({
    method: 'get', path: '/api/internal/user-wallets/:publicUserId', auth: 'service', summary: 'A user\'s EVM wallets (service to service)', params: publicUserParams,
    responses: { 200: '{ wallets: [{ address, chainId, isPrimary, createdAt }] }', 404: 'user_not_found' },
  }),
  describeRoute({
    method: 'get', path: '/api/internal/user-wallets-solana/:publicUserId', auth: 'service', summary: 'A user\'s Solana wallets (service to service)', params: publicUserParams,
    responses: { 200: '{ wallets: [{ address }] }', 404: 'user_not_found' },
  }),
];

export function installWalletRoutes(
  app: Express,
  deps: { pool: pg.Pool; settings: AuthSettings; log: Logger; userOf: (req: Request) => Promise<string>; serviceKey?: string },
) {
  const { pool, settings, log, userOf } = deps;

  const serviceOnly = requireServiceKey(deps.serviceKey);

  app.get('/api/wallets', async (req, res) => {
    const userId = await userOf(req);
    res.json({ wallets: (await walletsOf(pool, userId)).map(toWire) });
  });

  app.post('/api/wallets/set-primary', trustedOrigin(settings), async (req, res) => {
    const userId = await userOf(req);
    const { walletAddress } = setPrimaryBody.parse(req.body ?? {});
    const { rows } = await pool.query<{ address: string; already_primary: boolean }>(
      'select address, already_primary from auth.set_primary_wallet($1, $2)', [userId, walletAddress],
    );
    const r = rows[0]!;
    if (r.already_primary) return void res.json({ ok: true, primary: r.address, alreadyPrimary: true });
    log.info({ userId, primary: r.address }, 'primary wallet changed');
    res.json({ ok: true, primary: r.address });
  });

  app.delete('/api/wallets/:address', trustedOrigin(settings), async (req, res) => {
    const userId = await userOf(req);
    const address = String(req.params.address);
    if (address.length > 128) throw new ApiError(404, 'wallet_not_found');
    const { rows } = await pool.query<{ address: string; was_primary: boolean; new_primary: string | null }>(
      'select address, was_primary, new_primary from auth.unlink_wallet($1, $2)', [userId, address],
    );
    const r = rows[0]!;
    log.info({ userId, unlinked: r.address, wasPrimary: r.was_primary, primary: r.new_primary }, 'wallet unlinked');
    res.json({ ok: true, unlinked: r.address, wasPrimary: r.was_primary });
  });

  const internalRead = (chain: 'evm' | 'solana') => async (req: Request, res: import('express').Response) => {
    const userId = String(req.params.publicUserId);
    if (!UUID.test(userId)) throw new ApiError(404, 'user_not_found');
    const rows = await walletsOf(pool, userId, chain);
    res.json({ wallets: chain === 'evm' ? rows.map(toWire) : rows.map((w) => ({ address: w.address })) });
  };
  app.get('/api/internal/user-wallets/:publicUserId', serviceOnly, internalRead('evm'));
  app.get('/api/internal/user-wallets-solana/:publicUserId', serviceOnly, internalRead('solana'));
}
