// Wallets: the caller's linked wallets (list, set primary, unlink), and linking an EVM wallet with
// the browser's injected EIP-1193 wallet (`window.ethereum`): the auth role issues a nonce for the
// address and chain, the wallet signs a SIWE (EIP-4361) message carrying it (`personal_sign`), and
// the auth role checks the signature and links the wallet. A Solana wallet is linked with the
// browser's injected Phantom-style wallet (`window.solana`: `connect()`, `signMessage(bytes)`): the
// auth role issues a nonce and the exact text to sign for the address (its base58 public key), the
// wallet signs it (Ed25519), and the signature goes back base58-encoded. The claim board's grants
// are minted to the linked Solana wallet.
import { call, must } from './api.ts';
import { ethereum as injected } from './chain.ts';
import { errorLine, grid, h, mount } from './ui.ts';

/** A Phantom-style injected Solana wallet. */
interface SolanaWallet {
  connect(): Promise<{ publicKey: { toString(): string } }>;
  signMessage(message: Uint8Array, display?: 'utf8' | 'hex'): Promise<{ signature: Uint8Array }>;
}

const solana = () => (window as unknown as { solana?: SolanaWallet }).solana;

const BASE58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

/** Bytes as base58 (Bitcoin's alphabet, as Solana writes keys and signatures). */
export function base58(bytes: Uint8Array): string {
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  let out = '';
  while (n > 0n) {
    out = BASE58[Number(n % 58n)]! + out;
    n /= 58n;
  }
  for (const b of bytes) {
    if (b !== 0) break;
    out = `1${out}`;
  }
  return out;
}
const utf8Hex = (text: string) => `0x${Array.from(new TextEncoder().encode(text), (b) => b.toString(16).padStart(2, '0')).join('')}`;

/** The EIP-4361 message the auth role verifies (its domain, also the URI's host; the issued nonce). */
export function siweMessage(f: { domain: string; address: string; chainId: number; nonce: string; issuedAt: Date; expiresAt: Date }) {
  return [
    `${f.domain} wants you to sign in with your Ethereum account:`, f.address, '',
    'Link this wallet to your poker account.', '',
    `URI: https://${f.domain}`, 'Version: 1', `Chain ID: ${f.chainId}`, `Nonce: ${f.nonce}`,
    `Issued At: ${f.issuedAt.toISOString()}`, `Expiration Time: ${f.expiresAt.toISOString()}`,
  ].join('\n');
}

export async function walletsPage(view: HTMLElement) {
  const status = h('div', { id: 'wallet-status' });
  const say = (node: Node) => mount(status, node);

  async function link() {
    const wallet = injected();
    if (!wallet) return say(errorLine('No browser wallet found (window.ethereum).'));
    try {
      const [address] = (await wallet.request({ method: 'eth_requestAccounts' })) as string[];
      if (!address) return say(errorLine('The wallet shared no account.'));
      const chainId = Number.parseInt(String(await wallet.request({ method: 'eth_chainId' })), 16);
      const nonce = await must('auth', '/api/auth/siwe/nonce', { body: { walletAddress: address, chainId } });
      const message = siweMessage({ domain: nonce.domain, address, chainId, nonce: nonce.nonce, issuedAt: new Date(), expiresAt: new Date(nonce.expiresAt) });
      const signature = await wallet.request({ method: 'personal_sign', params: [utf8Hex(message), address] });
      const r = await call('auth', '/api/link-wallet', { body: { message, signature, walletAddress: address, chainId } });
      if (!r.ok) return say(errorLine(`Link refused: ${r.body?.error ?? r.status}`));
      await render();
      say(h('p', { class: 'ok', id: 'wallet-linked' }, `${r.body.alreadyLinked ? 'Already linked' : 'Linked'}: ${r.body.walletAddress}${r.body.isPrimary ? ' (primary)' : ''}`));
    } catch (err) {
      say(errorLine(`Link failed: ${(err as Error).message}`));
    }
  }

  async function linkSolana() {
    const wallet = solana();
    if (!wallet) return say(errorLine('No Solana wallet found (window.solana).'));
    try {
      const { publicKey } = await wallet.connect();
      const address = publicKey.toString();
      const nonce = await must('auth', '/api/auth/solana/nonce', { body: { address } });
      const { signature } = await wallet.signMessage(new TextEncoder().encode(nonce.message), 'utf8');
      const r = await call('auth', '/api/link-wallet/solana', { body: { address, message: nonce.message, signature: base58(signature) } });
      if (!r.ok) return say(errorLine(`Link refused: ${r.body?.error ?? r.status}`));
      await render();
      say(h('p', { class: 'ok', id: 'solana-linked' }, `${r.body.alreadyLinked ? 'Already linked' : 'Linked'} Solana wallet: ${r.body.walletAddress}${r.body.isPrimary ? ' (primary)' : ''}`));
    } catch (err) {
      say(errorLine(`Link failed: ${(err as Error).message}`));
    }
  }

  async function setPrimary(address: string) {
    const r = await call('auth', '/api/wallets/set-primary', { body: { walletAddress: address } });
    await render();
    say(r.ok ? h('p', { class: 'ok' }, `Primary: ${r.body.primary}`) : errorLine(`Refused: ${r.body?.error ?? r.status}`));
  }

  async function unlink(address: string) {
    const r = await call('auth', `/api/wallets/${encodeURIComponent(address)}`, { method: 'DELETE' });
    await render();
    say(r.ok ? h('p', { class: 'ok', id: 'wallet-unlinked' }, `Unlinked ${r.body.unlinked}`) : errorLine(`Refused: ${r.body?.error ?? r.status}`));
  }

  async function render() {
    const list = await must('auth', '/api/wallets');
    const wallets = list.wallets as any[];
    mount(view, h('h1', {}, 'Wallets'),
      h('div', { class: 'card' }, h('div', { class: 'row' },
        h('button', { id: 'link-wallet', onclick: () => void link() }, 'Link a browser wallet'),
        h('span', { class: 'muted' }, injected() ? 'A browser wallet is available.' : 'No browser wallet detected.')),
      h('div', { class: 'row' },
        h('button', { id: 'link-solana', onclick: () => void linkSolana() }, 'Link a Solana wallet'),
        h('span', { class: 'muted' }, solana() ? 'A Solana wallet is available (claim board grants are paid to it).' : 'No Solana wallet detected.'))),
      wallets.length === 0 ? h('p', { class: 'muted' }, 'No wallets linked.') : grid(['Address', 'Chain', 'Primary', 'Linked', ''], wallets.map((w) => [
        h('span', { class: 'mono' }, w.address), w.chainId === 0 ? 'Solana' : String(w.chainId), w.isPrimary ? 'primary' : '', new Date(w.createdAt).toLocaleString(),
        h('span', {},
          w.isPrimary ? null : h('button', { class: 'secondary', 'data-primary': w.address, onclick: () => void setPrimary(w.address) }, 'Make primary'), ' ',
          h('button', { class: 'secondary', 'data-unlink': w.address, onclick: () => void unlink(w.address) }, 'Unlink')),
      ]), { id: 'wallets' }),
      status);
  }
  await render();
}
