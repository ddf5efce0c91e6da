// The chain bank's public reads for a browser wallet (no auth: all of it is public):
//   GET /api/economy                the economy's flags, as the cage's at the same place: `bank`
//                                   ('chain' here, 'cage' there: how the web client tells which bank
//                                   it talks to), the money kinds (real only) and the units. No chain
//                                   and no database read.
//   GET /api/chain                  what a permit is signed against: the token's EIP-712 domain
//                                   (tokenName, tokenVersion, chainId, token = verifyingContract, as
//                                   the token itself reports them, ERC-5267), the vault (the permit's
//                                   spender) and chipUnits (token base units per chip); and whether
//                                   the node answers now (`reachable`, probed within a short bound,
//                                   with `lastError`: when a call last found it unreachable, and why).
//   GET /api/chain/nonces/:address  the token's next permit nonce for that owner.
// The browser signs the same typed data as server/chain/dev-wallet.ts signPermit, with
// eth_signTypedData_v4 (web/permit.ts). 503 chain_not_configured without a chain; chain_unavailable
// when the node does not answer (server/chain's ChainUnavailable, mapped by the HTTP error boundary)
// and the domain was never read.
import type { Express } from 'express';
import { getAddress, type Address } from 'viem';
import { z } from 'zod';
import { ApiError } from '../http/errors.ts';
import { describeRoute } from '../http/openapi.ts';
import { BASE_UNITS_PER_CHIP, ChainUnavailable } from '../chain/types.ts';
import { requireChain, type BankDeps } from './deposit.ts';

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
export const nonceParams = z.object({ address: z.string().regex(ADDRESS).describe('an EVM address, any letter case') });

/** The routes' contracts (server/http/openapi.ts). */
export const chainInfoRoutes = [
  describeRoute({
    method: 'get', path: '/api/economy', auth: 'none', summary: 'The economy\'s flags: which bank this is, its money kinds and units',
    responses: { 200: { description: 'the chain bank', body: z.object({ bank: z.literal('chain'), moneyKinds: z.array(z.literal('real')), units: z.object({ chip: z.number(), tokenBaseUnitsPerChip: z.number() }) }) } },
  }),
  describeRoute({
    method: 'get', path: '/api/chain', auth: 'none', summary: 'What a permit is signed against: the token\'s EIP-712 domain and the vault',
    responses: {
      200: {
        description: 'the domain, and whether the node answers now',
        body: z.object({
          bank: z.literal('chain'), chainId: z.number(), token: z.string(), vault: z.string(), tokenName: z.string(), tokenVersion: z.string(), chipUnits: z.string(),
          reachable: z.boolean(), checkedAt: z.string(), blockNumber: z.string().optional(), lastError: z.object({ message: z.string(), at: z.string() }).optional(),
        }),
      },
      503: 'chain_not_configured, chain_unavailable',
    },
  }),
  describeRoute({
    method: 'get', path: '/api/chain/nonces/:address', auth: 'none', summary: 'The token\'s next permit nonce for an owner',
    params: nonceParams,
    responses: { 200: { description: 'the nonce', body: z.object({ owner: z.string(), nonce: z.string() }) }, 400: 'invalid_address', 503: 'chain_not_configured, chain_unavailable' },
  }),
];

export function installChainInfoRoutes(app: Express, deps: BankDeps) {
  app.get('/api/economy', (_req, res) => {
    res.json({ bank: 'chain', moneyKinds: ['real'], units: { chip: 1, tokenBaseUnitsPerChip: Number(BASE_UNITS_PER_CHIP) } });
  });

  app.get('/api/chain', async (_req, res) => {
    const chain = requireChain(deps);
    const reachability = await chain.reachability();
    // the domain is read once and kept: a node down since still answers it, with reachable: false
    const domain = await chain.permitDomain().catch((err: unknown) => {
      throw err instanceof ChainUnavailable ? new ApiError(503, 'chain_unavailable', undefined, { ...reachability, reachable: false }) : err;
    });
    res.json({
      bank: 'chain',
      chainId: Number(domain.chainId ?? chain.deployment.chainId),
      token: domain.verifyingContract ?? chain.deployment.token,
      vault: chain.deployment.vault,
      tokenName: domain.name,
      tokenVersion: domain.version,
      chipUnits: BASE_UNITS_PER_CHIP.toString(),
      ...reachability,
    });
  });

  app.get('/api/chain/nonces/:address', async (req, res) => {
    const parsed = nonceParams.safeParse(req.params);
    if (!parsed.success) throw new ApiError(400, 'invalid_address');
    const raw = parsed.data.address;
    const chain = requireChain(deps);
    // any spelling of the address (a checksum is not required): the chain's own form answered
    const owner = getAddress(raw.toLowerCase()) as Address;
    const nonce = await chain.permitNonce(owner);
    res.json({ owner, nonce: nonce.toString() });
  });
}
