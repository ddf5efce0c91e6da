// Linking an EVM wallet by a signed SIWE (EIP-4361) message, in the spec's order:
//   1 session (or our own access JWT) -> 401 `not signed in`; a trusted Origin is required;
//   2 body and checksum -> 400 `invalid walletAddress`;
//   3 take the nonce stored for `siwe:{checksum}:{chainId}` by this user -> 401 `no nonce` (taken
//     here, before any signature is checked, so a nonce is never usable twice, even by a failed
//     attempt; another user's nonce for the same wallet is neither taken nor replaced);
//   4 the message carries that nonce -> 401 `message does not contain issued nonce`;
//   5 the message is for us (domain from AUTH_DOMAIN, never the Host header; address, chain, time)
//     and the signature verifies -> 401 `invalid signature` (an EOA's offline; a smart-contract
//     wallet's through EVM_RPC_URL by EIP-1271 / ERC-6492: evm-signatures.ts);
//   6-9 in SQL (auth.link_wallet): another user's wallet -> 409; already ours -> alreadyLinked; the
//     first wallet becomes primary; insert.
// viem implements EIP-4361 parsing/validation and signature checks; the `siwe` package would pull
// in ethers as a peer for the same work (docs/decisions.md).
import { randomBytes } from 'node:crypto';
import type { Express, Request } from 'express';
import type pg from 'pg';
import type { Logger } from 'pino';
import { getAddress, isAddress, type Hex } from 'viem';
import { parseSiweMessage, validateSiweMessage } from 'viem/siwe';
import { z } from 'zod';
import { ApiError, refusedWith } from '../http/errors.ts';
import type { AuthSettings } from './config.ts';
import type { EvmSignatureVerifier } from './evm-signatures.ts';
import { requireTrustedOrigin } from './sessions.ts';
import { describeRoute } from '../http/openapi.ts';

export const NONCE_TTL_SECONDS = 5 * 60;

export const nonceBody = z.object({ walletAddress: z.string().max(64), chainId: z.number().int().min(1).max(2 ** 31 - 1) });
export const linkBody = z.object({
  message: z.string().min(1).max(4096),
  // 65 bytes from an EOA; a contract wallet's (EIP-1271, ERC-6492 with its deploy data) is longer
  signature: z.string().regex(/^0x(?:[0-9a-fA-F]{2})+$/).max(16_384),
  walletAddress: z.string().max(64),
  chainId: z.number().int().min(1).max(2 ** 31 - 1),
});

type SiweFields = ReturnType<typeof parseSiweMessage>;

/** The message's fields, or none when it does not parse (so step 4 refuses it, never a 500). */
function siweFields(message: string): SiweFields {
  try {
    return parseSiweMessage(message);
  } catch {
    return {};
  }
}

const validDate = (d: unknown) => d instanceof Date && !Number.isNaN(d.getTime());

/**
 * Step 2 for the message (spec: "message: string, SIWE-formatted"): every field a SIWE message
 * must have, each of its type (a URI that parses as a URL with a host, a version 1, a safe-integer
 * chain id, dates that are dates). A message that is not one is a 400 before the nonce is looked up,
 * so a malformed message spends nothing: the client may sign a proper one under the same nonce.
 */
function siweWellFormed(fields: SiweFields): boolean {
  const uri = typeof fields.uri === 'string' && URL.canParse(fields.uri) ? new URL(fields.uri) : undefined;
  return (
    typeof fields.domain === 'string' && fields.domain.length > 0 &&
    typeof fields.address === 'string' && isAddress(fields.address, { strict: false }) &&
    uri !== undefined && uri.host.length > 0 &&
    fields.version === '1' &&
    typeof fields.chainId === 'number' && Number.isSafeInteger(fields.chainId) &&
    typeof fields.nonce === 'string' && fields.nonce.length > 0 &&
    validDate(fields.issuedAt) &&
    (fields.expirationTime === undefined || validDate(fields.expirationTime)) &&
    (fields.notBefore === undefined || validDate(fields.notBefore))
  );
}

/**
 * Step 5's message checks: for our domain (also the URI's host), this wallet and chain, this nonce,
 * a real issue time, inside its validity window. Anything malformed (a URI that is not a URL, a
 * date that is not a date) is simply not for us: false, never a throw.
 */
function siweForUs(fields: SiweFields, expected: { domain: string; address: `0x${string}`; chainId: number; nonce: string }): boolean {
  try {
    const uri = fields.uri !== undefined && URL.canParse(fields.uri) ? new URL(fields.uri) : undefined;
    return (
      fields.chainId === expected.chainId &&
      uri?.host === expected.domain &&
      fields.issuedAt instanceof Date && !Number.isNaN(fields.issuedAt.getTime()) &&
      validateSiweMessage({ message: fields, domain: expected.domain, address: expected.address, nonce: expected.nonce, time: new Date() })
    );
  } catch {
    return false;
  }
}

function checksum(address: string): `0x${string}` {
  if (!isAddress(address, { strict: false })) throw new ApiError(400, 'invalid walletAddress');
  return getAddress(address);
}

/** The contracts of installLinkWalletRoutes (SIWE): a refused body is 400 `invalid walletAddress`. */
export const linkWalletRoutes = [
  describeRoute({
    method: 'post', path: '/api/auth/siwe/nonce', auth: ['session', 'jwt'], summary: 'A SIWE nonce for linking an EVM wallet', body: nonceBody,
    responses: { 200: '{ nonce, expiresAt, domain }', 400: 'invalid walletAddress', 403: 'untrusted_origin (the Origin header is required)' },
  }),
  describeRoute({
    method: 'post', path: '/api/link-wallet', auth: ['session', 'jwt'], summary: 'Links an EVM wallet by its signed SIWE message', body: linkBody,
    responses: {
      200: '{ ok, walletAddress, chainId, isPrimary, alreadyLinked? }', 400: 'invalid walletAddress / invalid message',
      401: 'no nonce / message does not contain issued nonce / invalid signature', 403: 'untrusted_origin', 409: 'wallet already linked to another account',
    },
  }),
];

export function installLinkWalletRoutes(
  app: Express,
  deps: { pool: pg.Pool; settings: AuthSettings; log: Logger; userOf: (req: Request) => Promise<string>; signatures: EvmSignatureVerifier },
) {
  const { pool, settings, log, userOf, signatures } = deps;

  app.post('/api/auth/siwe/nonce', async (req, res) => {
    const userId = await userOf(req);
    requireTrustedOrigin(settings, req);
    const parsed = nonceBody.safeParse(req.body ?? {});
    if (!parsed.success) throw new ApiError(400, 'invalid walletAddress');
    const address = checksum(parsed.data.walletAddress);
    const nonce = randomBytes(16).toString('hex');
    const { rows } = await pool.query<{ expires_at: Date }>('select auth.issue_nonce($1, $2, $3, $4) as expires_at', [
      `siwe:${address}:${parsed.data.chainId}`, userId, nonce, NONCE_TTL_SECONDS,
    ]);
    res.json({ nonce, expiresAt: rows[0]!.expires_at, domain: settings.domain });
  });

  app.post('/api/link-wallet', async (req, res) => {
    const userId = await userOf(req); // 1
    requireTrustedOrigin(settings, req);
    const parsed = linkBody.safeParse(req.body ?? {}); // 2
    if (!parsed.success) throw new ApiError(400, 'invalid walletAddress');
    const { message, signature, chainId } = parsed.data;
    const address = checksum(parsed.data.walletAddress);
    const fields = siweFields(message);
    if (!siweWellFormed(fields)) throw new ApiError(400, 'invalid message');

    const { rows: taken } = await pool.query<{ nonce: string }>('select auth.consume_nonce($1, $2) as nonce', [`siwe:${address}:${chainId}`, userId]); // 3
    const nonce = taken[0]!.nonce;

    // 4
    if (fields.nonce !== nonce) throw new ApiError(401, 'message does not contain issued nonce');

    const forUs = siweForUs(fields, { domain: settings.domain, address, chainId, nonce }); // 5
    const valid = forUs && (await signatures.verify({ address, message, signature: signature as Hex, chainId }));
    if (!valid) {
      log.warn({ marker: 'auth.wallet.signature_failed', userId, address, chainId }, 'wallet link: invalid signature');
      throw new ApiError(401, 'invalid signature');
    }

    let rows;
    try {
      ({ rows } = await pool.query<{ address: string; chain_id: number; is_primary: boolean; already_linked: boolean }>(
        "select address, chain_id, is_primary, already_linked from auth.link_wallet($1, $2, 'evm', $3)", [userId, address, chainId],
      )); // 6-9
    } catch (err) {
      if (refusedWith(err, 'auth', 'wallet already linked to another account')) log.warn({ marker: 'auth.wallet.sybil', userId, address }, 'wallet link refused: linked to another account');
      throw err;
    }
    const w = rows[0]!;
    if (!w.already_linked) log.info({ userId, address: w.address, chainId, isPrimary: w.is_primary }, 'wallet linked');
    res.json({
      ok: true, walletAddress: w.address, chainId: w.chain_id, isPrimary: w.is_primary, ...(w.already_linked ? { alreadyLinked: true } : {}),
    });
  });
}
