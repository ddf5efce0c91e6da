// The lobby: cash tables (blinds, seats, state) and Sit-and-Go tournaments (state, entry fee,
// registered count, level), from the game role's table list; the player's cage balance (on the
// chain bank there is none: chips are tokens in the player's wallet).
import { call, must, session } from './api.ts';
import { bank } from './chain.ts';
import { grid, h, mount } from './ui.ts';

export async function lobbyPage(view: HTMLElement) {
  const render = async () => {
    const theBank = await bank();
    const [cash, sng, balances] = await Promise.all([
      must('game', '/api/tables?mode=cash&limit=200'),
      must('game', '/api/tables?mode=sng&limit=200'),
      session() && theBank.kind === 'cage' ? call('bank', '/api/cage/balances') : Promise.resolve(null),
    ]);
    const balance = balances?.ok ? h('p', { id: 'balance' }, `Your chips: ${balances.body.balances.play} play`, balances.body.balances.real ? `, ${balances.body.balances.real} real` : '')
      : theBank.kind === 'chain' ? h('p', { class: 'muted', id: 'balance' }, `Chain bank${theBank.info ? ` (chain ${theBank.info.chainId})` : ''}: your chips are tokens in your wallet; a sit or an entry is paid with a permit your wallet signs.`)
        : null;
    mount(view,
      h('h1', {}, 'Lobby'),
      balance,
      h('h2', {}, 'Cash tables'),
      cash.tables.length === 0 ? h('p', { class: 'muted' }, 'No cash tables yet.') : grid(
        ['Table', 'Blinds', 'Seats', 'State', 'Money', ''],
        cash.tables.map((t: any) => [
          h('span', { class: 'mono' }, t.tableId), `${t.smallBlind}/${t.bigBlind}`, `${t.seated}/${t.seats}`,
          `${t.status}${t.handInProgress ? ', hand in progress' : ''}`, t.moneyKind,
          h('a', { href: `#/table/${encodeURIComponent(t.tableId)}`, 'data-table': t.tableId }, 'Open'),
        ]), { id: 'cash-tables' }),
      h('h2', {}, 'Sit-and-Go tournaments'),
      sng.tables.length === 0 ? h('p', { class: 'muted' }, 'No tournaments yet.') : grid(
        ['Tournament', 'State', 'Entry fee', 'Registered', 'Level', ''],
        sng.tables.map((t: any) => [
          h('span', { class: 'mono' }, t.tableId), t.tournamentState ?? '—', String(t.entryFee), `${t.seated}/${t.seats}`,
          t.currentLevel === null || t.currentLevel === undefined ? '—' : String(t.currentLevel + 1),
          h('a', { href: `#/tournament/${encodeURIComponent(t.tableId)}`, 'data-tournament': t.tableId }, 'Open'),
        ]), { id: 'sng-tables' }),
      h('p', {}, h('button', { class: 'secondary', id: 'refresh', onclick: () => void render() }, 'Refresh')));
  };
  await render();
  const timer = setInterval(() => void render().catch(() => undefined), 5000);
  return () => clearInterval(timer);
}
