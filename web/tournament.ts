// A Sit-and-Go: registration (the `register_for_tournament` message reserves a seat; the entry fee
// is paid through the bank's deposit for that seat, amount = entryFee; on the chain bank with a
// permit the browser wallet signs, chain.ts), the level clock, the standings, the payouts, and the table itself (the tournament deals to every seat).
import { call, idempotencyKey, must, session, type Msg } from './api.ts';
import { chainDeposit, depositOutcome } from './chain.ts';
import { openTable } from './table.ts';
import { errorLine, grid, h, mount } from './ui.ts';

export async function tournamentPage(view: HTMLElement, tableId: string) {
  const room = await must('game', `/api/tables/${encodeURIComponent(tableId)}`);
  if (room.mode !== 'sng') throw new Error('not a tournament');
  const settings = room.settings ?? {};
  const me = session()?.userId ?? null;
  const info = h('div', { class: 'card', id: 'tournament-info' });
  const clock = h('div', { class: 'card', id: 'level-clock' });
  const standingsEl = h('div', { class: 'card', id: 'standings' });
  const payoutsEl = h('div', { class: 'card', id: 'payouts' });
  const regStatus = h('div', { id: 'registration-status' });
  const tableRoot = h('div', {});
  let state: string = room.tournamentState ?? 'registering';
  let registered = 0;
  let tourney: Msg | null = null;
  let schedule: Msg | null = null;
  let myView: Msg | null = null;
  let ended: Msg | null = null;
  const eliminated: Msg[] = [];
  const settled = new Map<number, Msg>();
  let seats: Msg[] = [];

  mount(view, h('h1', {}, 'Tournament ', h('span', { class: 'mono' }, tableId)), info, clock, standingsEl, payoutsEl, h('h2', {}, 'Table'), tableRoot);
  const table = await openTable(tableRoot, tableId, { sitting: false });

  const mine = () => seats.some((s) => s.userId === me);

  async function register() {
    mount(regStatus, h('p', { class: 'muted' }, 'Registering…'));
    const r = await table.live.request({ type: 'register_for_tournament', tableId });
    if (r.type !== 'tournament_registered') return void mount(regStatus, errorLine(`Registration refused: ${r.code}`));
    mount(regStatus, h('p', { class: 'muted' }, `Seat ${r.seatIndex} reserved; paying the entry fee (${r.entryFee})…`));
    if (table.bank.kind !== 'cage') return payOnChain(r.seatIndex, String(r.entryFee));
    const paid = await call('bank', '/api/deposit', { body: { tableId, seatIndex: r.seatIndex, amount: Number(r.entryFee) }, headers: { 'idempotency-key': idempotencyKey() } });
    if (!paid.ok) return void mount(regStatus, errorLine(`Entry fee refused: ${paid.body?.error ?? paid.status}`));
    mount(regStatus, h('p', { class: 'ok', id: 'registered' }, `Registered at seat ${r.seatIndex}: entry fee ${r.entryFee} paid.`));
  }

  /** The chain bank's entry: a deposit of exactly the entry fee for the reserved seat, paid by a permit the browser wallet signs. */
  async function payOnChain(seatIndex: number, entryFee: string) {
    if (table.bank.kind !== 'chain' || !table.bank.info) return void mount(regStatus, errorLine(`The bank did not answer (${table.bank.kind === 'cage' ? '' : table.bank.error}); reload to try again.`));
    mount(regStatus, h('p', { class: 'muted' }, `Seat ${seatIndex} reserved; sign the permit for the entry fee (${entryFee}) in your wallet…`));
    try {
      const outcome = depositOutcome(await chainDeposit(table.bank.info, { tableId, seatIndex, amount: entryFee }));
      mount(regStatus, outcome.ok ? h('p', { class: 'ok', id: 'registered' }, `Registered at seat ${seatIndex}: entry fee ${entryFee} ${outcome.text}.`)
        : errorLine(`Entry fee refused: ${outcome.text}`));
    } catch (err) {
      mount(regStatus, errorLine(`Entry fee not paid: ${(err as Error).message}`));
    }
  }

  async function unregister() {
    const r = await table.live.request({ type: 'stand_up', tableId });
    if (r.type === 'error') mount(regStatus, errorLine(`Unregister refused: ${r.code}`));
  }

  function renderInfo() {
    const canRegister = state === 'registering' && session() && !mine();
    mount(info,
      h('div', { class: 'row' }, h('strong', {}, 'State: '), h('span', { id: 'tournament-state' }, state),
        h('span', {}, `· entry fee ${settings.entryFee} · starting stack ${settings.startingStack} · ${settings.seats} seats`),
        state === 'registering' ? h('span', {}, '· registered ', h('span', { id: 'registered-count' }, `${registered}/${settings.seats}`)) : null),
      h('div', { class: 'row' },
        canRegister ? h('button', { id: 'register', onclick: () => void register() }, `Register (${settings.entryFee} chips)`) : null,
        state === 'registering' && mine() ? h('button', { class: 'secondary', id: 'unregister', onclick: () => void unregister() }, 'Unregister') : null),
      regStatus);
  }

  function renderClock() {
    if (!tourney) return void mount(clock, h('p', { class: 'muted' }, 'The level clock starts when the tournament plays.'));
    const left = Math.max(0, Math.round((Number(tourney.levelEndsAt) - Date.now()) / 1000));
    mount(clock, h('div', { class: 'row' }, h('strong', {}, `Level ${tourney.currentLevel + 1}`),
      h('span', { id: 'level-blinds' }, `blinds ${tourney.smallBlind}/${tourney.bigBlind}${tourney.ante && tourney.ante !== '0' ? ` ante ${tourney.ante}` : ''}`),
      h('span', { id: 'level-left' }, state === 'playing' ? `next level in ${left} s` : '')),
    myView ? h('p', { class: 'muted' }, `Your rank ${myView.rank} · ${Number(myView.stackInBigBlinds).toFixed(1)} big blinds · M ${Number(myView.mRatio).toFixed(1)}`) : null);
  }

  function renderStandings() {
    const rows = ended
      ? (ended.finalStandings as Msg[]).map((s) => [String(s.position), h('span', { class: 'mono' }, String(s.userId).slice(0, 13)), s.userId === me ? 'you' : ''])
      : [...seats].sort((a, b) => Number(BigInt(b.stack ?? 0) - BigInt(a.stack ?? 0))).map((s, i) => [
        String(i + 1), h('span', { class: 'mono' }, String(s.userId).slice(0, 13)), `${s.stack ?? ''}${s.userId === me ? ' (you)' : ''}`]);
    mount(standingsEl, h('h2', {}, ended ? 'Final standings' : 'Standings'),
      rows.length ? grid(['Place', 'Player', ended ? '' : 'Stack'], rows) : h('p', { class: 'muted' }, 'Nobody yet.'),
      eliminated.length ? h('p', { class: 'muted' }, eliminated.map((e) => `${String(e.userId).slice(0, 8)} out in place ${e.position}`).join(' · ')) : null);
  }

  function renderPayouts() {
    const rows = ended
      ? (ended.payouts as Msg[]).map((p) => [String(p.position), h('span', { class: 'mono' }, String(p.userId).slice(0, 13)), String(p.amount),
        settled.has(p.position) ? h('span', { class: 'ok payout-settled' }, 'paid') : 'settling'])
      : ((schedule?.prizeStructure ?? []) as Msg[]).map((p) => [String(p.position), '', `${(Number(p.share ?? p.percent) / (p.share !== undefined ? 100 : 1)).toFixed(2)} %`, '']);
    mount(payoutsEl, h('h2', {}, 'Payouts'), rows.length ? grid(['Place', 'Player', ended ? 'Amount' : 'Share', ''], rows) : h('p', { class: 'muted' }, 'Shown when the field is set.'));
  }

  const renderAll = () => { renderInfo(); renderClock(); renderStandings(); renderPayouts(); };
  table.onMessage((m) => {
    if (m.type === 'game_state') {
      seats = m.seats ?? [];
      registered = m.tournament?.registeredCount ?? seats.length;
      if (m.tournament) {
        tourney = m.tournament;
        state = m.tournament.state ?? state;
      }
      schedule = m.tournamentSchedule ?? schedule;
      myView = m.tournamentMyView ?? null;
    } else if (m.type === 'tournament_state_changed') state = m.state;
    else if (m.type === 'blind_level_changed' && tourney) tourney = { ...tourney, ...m };
    else if (m.type === 'player_eliminated') eliminated.push(m);
    else if (m.type === 'tournament_ended') ended = m;
    else if (m.type === 'tournament_payout_settled') settled.set(m.position, m);
    else if (m.type === 'tournament_unregistered') mount(regStatus, h('p', { class: 'ok', id: 'unregistered' }, `Unregistered (${m.status}, ${m.amount} back${m.txHash ? `, tx ${String(m.txHash).slice(0, 12)}…` : ''}).`));
    else return;
    renderAll();
  });
  if (table.state) table.live.onMessage(table.state);
  renderAll();
  const timer = setInterval(renderClock, 1000);
  return () => {
    clearInterval(timer);
    table.close();
  };
}
