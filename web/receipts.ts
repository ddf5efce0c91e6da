// The cage's settlement receipts: each is Ed25519-signed over its stored payload bytes; the page
// checks every one with WebCrypto against the key the cage publishes (GET /api/cage/receipt-key),
// never against the key a receipt names for itself.
import { call } from './api.ts';
import { grid, h } from './ui.ts';

const hex = (s: string) => Uint8Array.from(s.match(/../g) ?? [], (b) => parseInt(b, 16));
const base64 = (s: string) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));

export async function verifyReceipt(receipt: { payload: string; signature: string }, publicKeyHex: string): Promise<boolean> {
  try {
    const key = await crypto.subtle.importKey('raw', hex(publicKeyHex), { name: 'Ed25519' }, false, ['verify']);
    return await crypto.subtle.verify({ name: 'Ed25519' }, key, hex(receipt.signature), base64(receipt.payload));
  } catch {
    return false;
  }
}

export const payloadOf = (receipt: { payload: string }) => {
  try {
    return JSON.parse(new TextDecoder().decode(base64(receipt.payload))) as Record<string, unknown>;
  } catch {
    return {};
  }
};

/** The caller's receipts (of one table, or all), each with its verification, as a card. */
export async function receiptsCard(tableId?: string): Promise<HTMLElement> {
  const [list, key] = await Promise.all([call('bank', '/api/cage/receipts'), call('bank', '/api/cage/receipt-key')]);
  if (!list.ok) return h('div', { class: 'card', id: 'receipts' }, h('p', { class: 'muted' }, `Receipts unavailable (${list.body?.error ?? list.status}).`));
  const receipts = (list.body.receipts as any[]).filter((r) => !tableId || r.tableId === tableId);
  const publicKey: string | undefined = key.ok ? key.body.publicKey : undefined;
  const rows = await Promise.all(receipts.map(async (r) => {
    const ok = publicKey ? await verifyReceipt(r, publicKey) : false;
    const p = payloadOf(r);
    return [
      h('span', { class: 'mono' }, r.id), h('span', { class: 'mono' }, r.tableId ?? '—'), String(p.kind ?? p.settlement ?? '—'), String(p.chipAmount ?? p.amount ?? '—'),
      h('span', { class: ok ? 'ok receipt-verified' : 'error receipt-invalid', 'data-receipt': r.id }, ok ? 'signature verified' : 'NOT verified'),
      h('span', { class: 'mono' }, String(r.historyHash ?? '').slice(0, 18)),
    ];
  }));
  return h('div', { class: 'card', id: 'receipts' },
    h('h2', {}, 'Your receipts'),
    publicKey ? h('p', { class: 'muted' }, 'Cage receipt key: ', h('code', {}, publicKey)) : h('p', { class: 'error' }, 'The cage did not publish its receipt key.'),
    rows.length ? grid(['Receipt', 'Table', 'Kind', 'Amount', 'Ed25519', 'History hash'], rows) : h('p', { class: 'muted' }, 'No receipts yet.'));
}
