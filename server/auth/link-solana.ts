// Linking a Solana wallet by a signed message: the wallet signs (ed25519) a text that names our
// domain and a one-time nonce; the address is the base58 public key, stored verbatim, chain id 0.
// The nonce is the caller's own (another user's for the same wallet is neither taken nor replaced),
// and it is taken before the signature is checked. A successful first link queues the claim
// board's `wallet_linked` condition for the game role in the link's own transaction (a
// graphile-worker job, auth.link_wallet); the worker delivers it, retrying while the game is down.
import { randomBytes } from 'node:crypto';
import type { Express, Request } from 'express';
import { ed25519 } from '@noble/curves/ed25519.js';
import { base58 } from '@scure/base';
import type pg from 'pg';
import type { Logger } from 'pino';
import { z } from 'zod';
import { ApiError, refusedWith } from '../http/errors.ts';
import { withSpan } from '../telemetry/index.ts';
import type { AuthSettings } from './config.ts';
import { requireTrustedOrigin } from './sessions.ts';
import { NONCE_TTL_SECONDS } from './link-wallet.ts';
import { describeRoute } from '../http/openapi.ts';

const BASE58 = /^[1-9A-HJ-NP-Za-km-z]{32,44}$/;
export const solanaLinkBody = z.object({
  address: z.string().regex(BASE58),
  message: z.string().min(1).max(2048),
  signature: z.string().regex(/^[1-9A-HJ-NP-Za-km-z]{64,90}$/),
});

function publicKeyOf(address: string): Uint8Array {
  let key: Uint8Array;
  try {
    key = base58.decode(address);
  } catch {
    throw new ApiError(400, 'invalid walletAddress');
  }
  if (key.length !== 32) throw new ApiError(400, 'invalid walletAddress');
  return key;
}

/** The text a Solana wallet signs to link itself. */
export function solanaLinkMessage(domain: string, address: string, nonce: string) {
  return `${domain} wants you to link your Solana account:\n${address}\n\nNonce: ${nonce}`;
}

export const solanaNonceBody = z.object({ address: z.string() });

/** The contracts of installSolanaLinkRoutes: an address that is not base58 is 400 `invalid walletAddress`. */
export const solanaLinkRoutes = [
  describeRoute({
    method: 'post', path: '/api/auth/solana/nonce', auth: ['session', 'jwt'], summary: 'A nonce for linking a Solana wallet', body: solanaNonceBody,
    responses: { 200: '{ nonce, expiresAt, message }', 400: 'invalid walletAddress', 403: 'untrusted_origin' },
  }),
  describeRoute({
    method: 'post', path: '/api/link-wallet/solana', auth: ['session', 'jwt'], summary: 'Links a Solana wallet by its signed message', body: solanaLinkBody,
    responses: { 200: '{ ok, walletAddress, isPrimary, alreadyLinked? }', 400: 'invalid walletAddress / invalid message', 401: 'invalid signature', 403: 'untrusted_origin', 409: 'wallet already linked to another account' },
  }),
];

export function installSolanaLinkRoutes(
  app: Express,
  deps: {
    pool: pg.Pool; settings: AuthSettings; log: Logger; userOf: (req: Request) => Promise<string>;
  },
) {
  const { pool, settings, log, userOf } = deps;

  app.post('/api/auth/solana/nonce', async (req, res) => {
    const userId = await userOf(req);
    requireTrustedOrigin(settings, req);
    const { address } = solanaNonceBody.parse(req.body ?? {});
    if (!BASE58.test(address)) throw new ApiError(400, 'invalid walletAddress');
    publicKeyOf(address);
    const nonce = randomBytes(16).toString('hex');
    const { rows } = await pool.query<{ expires_at: Date }>('select auth.issue_nonce($1, $2, $3, $4) as expires_at', [
      `solana:${address}`, userId, nonce, NONCE_TTL_SECONDS,
    ]);
    res.json({ nonce, expiresAt: rows[0]!.expires_at, message: solanaLinkMessage(settings.domain, address, nonce) });
  });

  app.post('/api/link-wallet/solana', async (req, res) => {
    const userId = await userOf(req);
    requireTrustedOrigin(settings, req);
    const parsed = solanaLinkBody.safeParse(req.body ?? {});
    if (!parsed.success) throw new ApiError(400, 'invalid walletAddress');
    const { address, message, signature } = parsed.data;
    const publicKey = publicKeyOf(address);
    const linked = await withSpan('auth.wallet.solana_linked', { 'auth.user_id': userId }, async (span) => {
      const { rows: taken } = await pool.query<{ nonce: string }>('select auth.consume_nonce($1, $2) as nonce', [`solana:${address}`, userId]);
      if (message !== solanaLinkMessage(settings.domain, address, taken[0]!.nonce)) {
        throw new ApiError(401, 'message does not contain issued nonce');
      }
      let valid = false;
      try {
        const sig = base58.decode(signature);
        valid = sig.length === 64 && ed25519.verify(sig, new TextEncoder().encode(message), publicKey);
      } catch {
        valid = false;
      }
      if (!valid) {
        log.warn({ marker: 'auth.wallet.signature_failed', userId, address, chain: 'solana' }, 'solana link: invalid signature');
        throw new ApiError(401, 'invalid signature');
      }
      try {
        const { rows } = await pool.query<{ address: string; is_primary: boolean; already_linked: boolean }>(
          "select address, is_primary, already_linked from auth.link_wallet($1, $2, 'solana', 0)", [userId, address],
        );
        span.setAttribute('auth.already_linked', rows[0]!.already_linked);
        return rows[0]!;
      } catch (err) {
        if (refusedWith(err, 'auth', 'wallet already linked to another account')) log.warn({ marker: 'auth.wallet.sybil', userId, address }, 'solana link refused: linked to another account');
        throw err;
      }
    });
    // the wallet_linked condition was queued for the game role in the link's transaction (auth.link_wallet)
    if (!linked.already_linked) log.info({ userId, address, chain: 'solana', isPrimary: linked.is_primary }, 'wallet linked');
    res.json({ ok: true, walletAddress: linked.address, chainId: 0, isPrimary: linked.is_primary, ...(linked.already_linked ? { alreadyLinked: true } : {}) });
  });
}
