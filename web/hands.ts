// Your hand histories: the hands you played (newest first, with your net), and one hand's record.
import { must } from './api.ts';
import { grid, h, mount } from './ui.ts';

export async function handsPage(view: HTMLElement) {
  const detail = h('div', { id: 'hand-detail' });
  const list = await must('game', '/api/hands?limit=50');
  async function show(handId: string) {
    const hand = await must('game', `/api/hands/${encodeURIComponent(handId)}`);
    mount(detail, h('div', { class: 'card' }, h('h2', {}, `Hand ${hand.handId}`),
      h('p', {}, `Table ${hand.tableId} · ${hand.status} · started ${new Date(hand.startedAt).toLocaleString()}`),
      h('pre', { class: 'log mono' }, JSON.stringify({ result: hand.result, history: hand.history }, null, 2))));
  }
  mount(view, h('h1', {}, 'Hand histories'),
    list.hands.length === 0 ? h('p', { class: 'muted' }, 'No hands yet.') : grid(['Hand', 'Table', 'Status', 'Started', 'Net', ''], (list.hands as any[]).map((x) => [
      h('span', { class: 'mono' }, x.handId), h('span', { class: 'mono' }, x.tableId), x.status, new Date(x.startedAt).toLocaleTimeString(),
      x.net ?? '—', h('button', { class: 'secondary', 'data-hand': x.handId, onclick: () => void show(x.handId) }, 'Show'),
    ]), { id: 'hands' }),
    detail);
}
