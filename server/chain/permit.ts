// The ERC-2612 Permit as EIP-712 typed data in the token's own domain (read from the token by
// ERC-5267 eip712Domain(): name, version, chainId, verifyingContract), the spender always the vault.
// The bank recovers with it; a browser wallet (and server/chain/dev-wallet.ts) signs the same thing.
import { getAddress, parseSignature, serializeSignature, type Address, type Hex, type PublicClient, type TypedDataDomain } from 'viem';
import { getEip712Domain, readContract } from 'viem/actions';
import { CHIP_TOKEN } from './contracts.ts';
import { BASE_UNITS_PER_CHIP, type Deployment, type PermitParts } from './types.ts';

export const PERMIT_TYPES = {
  Permit: [
    { name: 'owner', type: 'address' },
    { name: 'spender', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'nonce', type: 'uint256' },
    { name: 'deadline', type: 'uint256' },
  ],
} as const;

/** Chips to token base units (x 10^6), the one place the conversion happens; a chip count is a positive integer. */
export function toBaseUnits(chips: bigint): bigint {
  if (chips <= 0n) throw new RangeError(`a chip amount must be positive (got ${chips})`);
  return chips * BASE_UNITS_PER_CHIP;
}

/** The token's EIP-712 domain as the token itself reports it. */
export async function permitDomain(client: PublicClient, deployment: Deployment): Promise<TypedDataDomain> {
  const { domain } = await getEip712Domain(client, { address: deployment.token });
  return { name: domain.name, version: domain.version, chainId: domain.chainId, verifyingContract: domain.verifyingContract };
}

/** The permit's next nonce for `owner`, read from the token. */
export async function permitNonce(client: PublicClient, deployment: Deployment, owner: Address): Promise<bigint> {
  return (await readContract(client, { address: deployment.token, abi: CHIP_TOKEN.abi, functionName: 'nonces', args: [owner] })) as bigint;
}

/** The typed-data message of a permit of `value` base units from `owner` to the vault. */
export function permitMessage(deployment: Deployment, owner: Address, value: bigint, nonce: bigint, deadline: bigint) {
  return { owner: getAddress(owner), spender: deployment.vault, value, nonce, deadline };
}

/** v as the token's ECDSA wants it: 27 or 28 (a wallet's 0/1 recovery id is accepted and shifted). */
export function permitV(v: number): number {
  return v < 27 ? v + 27 : v;
}

export function permitSignature(permit: PermitParts): Hex {
  return serializeSignature({ r: permit.r, s: permit.s, v: BigInt(permitV(permit.v)) });
}

export function permitParts(signature: Hex, deadline: bigint): PermitParts {
  const { r, s, v, yParity } = parseSignature(signature);
  return { r, s, v: v === undefined ? 27 + yParity : Number(v), deadline };
}
