// The bank this platform runs, and deposits through the chain bank. Both banks answer
// `GET /api/economy` with `bank` ('cage' or 'chain'); the chain bank's `GET /api/chain` then says
// what a permit is signed against. The cage's deposit takes no permit. A chain deposit is paid by an ERC-2612 permit the browser wallet signs with
// eth_signTypedData_v4: the typed data exactly as server/chain/dev-wallet.ts signPermit builds it
// (the token's EIP-712 domain as the chain bank reports it, spender the vault, value the chips in
// token base units, the owner's nonce read from the chain bank, a deadline 30 minutes ahead).
import { call, must, type Answer } from './api.ts';

export interface Eip1193 {
  request(args: { method: string; params?: unknown[] }): Promise<any>;
}

/** The browser's injected EVM wallet (EIP-1193), if any. */
export const ethereum = () => (window as unknown as { ethereum?: Eip1193 }).ethereum;

export interface ChainInfo {
  bank: 'chain';
  chainId: number;
  token: string;
  vault: string;
  tokenName: string;
  tokenVersion: string;
  chipUnits: string;
}

export type Bank = { kind: 'cage' } | { kind: 'chain'; info: ChainInfo | null; error?: string } | { kind: 'unknown'; error: string };

let known: Promise<Bank> | undefined;

async function ask(): Promise<Bank> {
  const economy = await call('bank', '/api/economy');
  if (!economy.ok) return { kind: 'unknown', error: economy.body?.error ?? `http_${economy.status}` };
  if (economy.body?.bank !== 'chain') return { kind: 'cage' };
  return chainBank();
}

/** The chain bank, with what a permit is signed against (`GET /api/chain`). */
async function chainBank(): Promise<Bank> {
  const chain = await call('bank', '/api/chain');
  if (!chain.ok) return { kind: 'chain', info: null, error: chain.body?.error ?? `http_${chain.status}` };
  return { kind: 'chain', info: chain.body as ChainInfo };
}

/**
 * A table's bank: its own when the table read names it (`bank`: the banks' contract routes every
 * call by the table's bank, so one platform serves cage and chain tables side by side), else the
 * platform's.
 */
export function bankOf(room: { bank?: string | null }): Promise<Bank> {
  if (room.bank === 'cage') return Promise.resolve({ kind: 'cage' });
  if (room.bank === 'chain') return chainBank();
  return bank();
}

/**
 * Which bank the platform runs, asked once per page load; an answer that is not whole (the bank or
 * its chain did not answer) is asked again next time, and meanwhile a deposit says why.
 */
export function bank(): Promise<Bank> {
  known ??= ask().then((b) => {
    if (b.kind === 'unknown' || (b.kind === 'chain' && !b.info)) known = undefined;
    return b;
  }, (): Bank => {
    known = undefined;
    return { kind: 'unknown', error: 'bank_unavailable' };
  });
  return known;
}

const PERMIT_TYPES = {
  EIP712Domain: [
    { name: 'name', type: 'string' },
    { name: 'version', type: 'string' },
    { name: 'chainId', type: 'uint256' },
    { name: 'verifyingContract', type: 'address' },
  ],
  Permit: [
    { name: 'owner', type: 'address' },
    { name: 'spender', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'nonce', type: 'uint256' },
    { name: 'deadline', type: 'uint256' },
  ],
};

const PERMIT_SECONDS = 30 * 60;

/** A 65-byte signature (0x r s v) as the permit's parts; v 27 or 28. */
export function splitSignature(signature: string) {
  if (!/^0x[0-9a-fA-F]{130}$/.test(signature)) throw new Error('the wallet returned no signature');
  const v = Number.parseInt(signature.slice(130, 132), 16);
  return { r: `0x${signature.slice(2, 66)}`, s: `0x${signature.slice(66, 130)}`, v: v < 27 ? v + 27 : v };
}

/**
 * A deposit of `amount` chips to the chain bank for `tableId` (a cash seat, or a tournament entry at
 * its reserved seat), paid by a permit the injected wallet signs now. Throws (with a message for the
 * player) when there is no wallet, it is on another chain, or it signs nothing; else the bank's answer.
 */
export async function chainDeposit(info: ChainInfo, d: { tableId: string; seatIndex: number | null; amount: string }): Promise<Answer> {
  const wallet = ethereum();
  if (!wallet) throw new Error('No browser wallet found (window.ethereum): the chain bank is paid by a permit your wallet signs.');
  const [owner] = (await wallet.request({ method: 'eth_requestAccounts' })) as string[];
  if (!owner) throw new Error('The wallet shared no account.');
  const walletChain = Number.parseInt(String(await wallet.request({ method: 'eth_chainId' })), 16);
  if (walletChain !== info.chainId) throw new Error(`Switch your wallet to chain ${info.chainId} (it is on ${walletChain}).`);
  const { nonce } = await must<{ nonce: string }>('bank', `/api/chain/nonces/${encodeURIComponent(owner)}`);
  const deadline = String(Math.floor(Date.now() / 1000) + PERMIT_SECONDS);
  const typedData = {
    types: PERMIT_TYPES,
    primaryType: 'Permit',
    domain: { name: info.tokenName, version: info.tokenVersion, chainId: info.chainId, verifyingContract: info.token },
    message: { owner, spender: info.vault, value: (BigInt(d.amount) * BigInt(info.chipUnits)).toString(), nonce, deadline },
  };
  const signature = String(await wallet.request({ method: 'eth_signTypedData_v4', params: [owner, JSON.stringify(typedData)] }));
  const { v, r, s } = splitSignature(signature);
  return call('bank', '/api/deposit', {
    body: { tableId: d.tableId, ...(d.seatIndex === null ? {} : { seatIndex: d.seatIndex }), amount: d.amount, permit: { v, r, s, deadline }, signerAddress: owner },
  });
}

/** What a chain deposit's answer means to the player. */
export function depositOutcome(a: Answer): { ok: boolean; text: string } {
  if (a.ok && a.body?.status === 'confirmed') return { ok: true, text: `confirmed on chain (tx ${String(a.body.txHash).slice(0, 12)}…)` };
  if (a.ok && a.body?.status === 'submitted') return { ok: true, text: `sent (tx ${String(a.body.txHash).slice(0, 12)}…); the chips arrive once it confirms` };
  if (a.ok) return { ok: true, text: String(a.body?.status ?? 'done') };
  const reason = typeof a.body?.reason === 'string' ? ` (${a.body.reason})` : '';
  return { ok: false, text: `${a.body?.error ?? `http_${a.status}`}${reason}` };
}
