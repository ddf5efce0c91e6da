// A Sit-and-Go: registration (the `register_for_tournament` message reserves a seat; the entry fee
// is paid through the bank's deposit for that seat, amount = entryFee; on the chain bank with a
// permit the browser wallet signs, chain.ts), the level clock, the standings, the payouts, and the table itself (the tournament deals to every seat).
import { call, idempotencyKey, must, refusal, session, type ServerMessage, type ServerMessageOf } from './api.ts';
import { chainDeposit, depositOutcome } from './chain.ts';
import { openTable, type TableRoom, type TableView } from './table.ts';
import { errorLine, grid, h, mount } from './ui.ts';

type GameState = ServerMessageOf<'game_state'>;

/** A Sit-and-Go page: what it has heard on the table's websocket, and its elements. */
interface Tourney {
  tableId: string;
  me: string | null;
  settings: NonNullable<TableRoom['settings']>;
  table: TableView;
  els: ReturnType<typeof tournamentElements>;
  state: string;
  registered: number;
  /** The level clock: game_state's `tournament`, moved on by blind_level_changed. */
  level: Pick<NonNullable<GameState['tournament']>, 'currentLevel' | 'smallBlind' | 'bigBlind' | 'ante' | 'levelEndsAt'> | null;
  schedule: GameState['tournamentSchedule'] | null;
  myView: GameState['tournamentMyView'] | null;
  ended: ServerMessageOf<'tournament_ended'> | null;
  eliminated: ServerMessageOf<'player_eliminated'>[];
  settled: Map<number, ServerMessageOf<'tournament_payout_settled'>>;
  seats: GameState['seats'];
}

function tournamentElements() {
  return {
    info: h('div', { class: 'card', id: 'tournament-info' }),
    clock: h('div', { class: 'card', id: 'level-clock' }),
    standings: h('div', { class: 'card', id: 'standings' }),
    payouts: h('div', { class: 'card', id: 'payouts' }),
    regStatus: h('div', { id: 'registration-status' }),
    tableRoot: h('div', {}),
  };
}

const mine = (t: Tourney) => t.seats.some((s) => s.userId === t.me);

async function register(t: Tourney) {
  const status = t.els.regStatus;
  mount(status, h('p', { class: 'muted' }, 'Registering…'));
  const r = await t.table.live.request({ type: 'register_for_tournament', tableId: t.tableId });
  if (r.type !== 'tournament_registered') return void mount(status, errorLine(`Registration refused: ${refusal(r)}`));
  mount(status, h('p', { class: 'muted' }, `Seat ${r.seatIndex} reserved; paying the entry fee (${r.entryFee})…`));
  if (t.table.bank.kind !== 'cage') return payOnChain(t, r.seatIndex, r.entryFee);
  const paid = await call('bank', '/api/deposit', { body: { tableId: t.tableId, seatIndex: r.seatIndex, amount: Number(r.entryFee) }, headers: { 'idempotency-key': idempotencyKey() } });
  if (!paid.ok) return void mount(status, errorLine(`Entry fee refused: ${paid.body?.error ?? paid.status}`));
  mount(status, h('p', { class: 'ok', id: 'registered' }, `Registered at seat ${r.seatIndex}: entry fee ${r.entryFee} paid.`));
}

/** The chain bank's entry: a deposit of exactly the entry fee for the reserved seat, paid by a permit the browser wallet signs. */
async function payOnChain(t: Tourney, seatIndex: number, entryFee: string) {
  const status = t.els.regStatus;
  const theBank = t.table.bank;
  if (theBank.kind !== 'chain' || !theBank.info) return void mount(status, errorLine(`The bank did not answer (${theBank.kind === 'cage' ? '' : theBank.error}); reload to try again.`));
  mount(status, h('p', { class: 'muted' }, `Seat ${seatIndex} reserved; sign the permit for the entry fee (${entryFee}) in your wallet…`));
  try {
    const outcome = depositOutcome(await chainDeposit(theBank.info, { tableId: t.tableId, seatIndex, amount: entryFee }));
    mount(status, outcome.ok ? h('p', { class: 'ok', id: 'registered' }, `Registered at seat ${seatIndex}: entry fee ${entryFee} ${outcome.text}.`)
      : errorLine(`Entry fee refused: ${outcome.text}`));
  } catch (err) {
    mount(status, errorLine(`Entry fee not paid: ${(err as Error).message}`));
  }
}

async function unregister(t: Tourney) {
  const r = await t.table.live.request({ type: 'stand_up', tableId: t.tableId });
  if (r.type === 'error') mount(t.els.regStatus, errorLine(`Unregister refused: ${r.code}`));
}

function renderInfo(t: Tourney) {
  const { settings, state } = t;
  const canRegister = state === 'registering' && session() && !mine(t);
  mount(t.els.info,
    h('div', { class: 'row' }, h('strong', {}, 'State: '), h('span', { id: 'tournament-state' }, state),
      h('span', {}, `· entry fee ${settings.entryFee} · starting stack ${settings.startingStack} · ${settings.seats} seats`),
      state === 'registering' ? h('span', {}, '· registered ', h('span', { id: 'registered-count' }, `${t.registered}/${settings.seats}`)) : null),
    h('div', { class: 'row' },
      canRegister ? h('button', { id: 'register', onclick: () => void register(t) }, `Register (${settings.entryFee} chips)`) : null,
      state === 'registering' && mine(t) ? h('button', { class: 'secondary', id: 'unregister', onclick: () => void unregister(t) }, 'Unregister') : null),
    t.els.regStatus);
}

function renderClock(t: Tourney) {
  const level = t.level;
  if (!level) return void mount(t.els.clock, h('p', { class: 'muted' }, 'The level clock starts when the tournament plays.'));
  const left = Math.max(0, Math.round((Number(level.levelEndsAt) - Date.now()) / 1000));
  mount(t.els.clock, h('div', { class: 'row' }, h('strong', {}, `Level ${level.currentLevel + 1}`),
    h('span', { id: 'level-blinds' }, `blinds ${level.smallBlind}/${level.bigBlind}${level.ante && level.ante !== '0' ? ` ante ${level.ante}` : ''}`),
    h('span', { id: 'level-left' }, t.state === 'playing' ? `next level in ${left} s` : '')),
  t.myView ? h('p', { class: 'muted' }, `Your rank ${t.myView.rank} · ${t.myView.stackInBigBlinds.toFixed(1)} big blinds · M ${t.myView.mRatio.toFixed(1)}`) : null);
}

function renderStandings(t: Tourney) {
  const { ended, me } = t;
  const rows = ended
    ? ended.finalStandings.map((s) => [String(s.position), h('span', { class: 'mono' }, s.userId.slice(0, 13)), s.userId === me ? 'you' : ''])
    : [...t.seats].sort((a, b) => Number(BigInt(b.stack) - BigInt(a.stack))).map((s, i) => [
      String(i + 1), h('span', { class: 'mono' }, s.userId.slice(0, 13)), `${s.stack}${s.userId === me ? ' (you)' : ''}`]);
  mount(t.els.standings, h('h2', {}, ended ? 'Final standings' : 'Standings'),
    rows.length ? grid(['Place', 'Player', ended ? '' : 'Stack'], rows) : h('p', { class: 'muted' }, 'Nobody yet.'),
    t.eliminated.length ? h('p', { class: 'muted' }, t.eliminated.map((e) => `${e.userId.slice(0, 8)} out in place ${e.position}`).join(' · ')) : null);
}

function renderPayouts(t: Tourney) {
  const { ended } = t;
  // the schedule's share is a fraction of the pool (server-messages.ts: 0 to 1)
  const rows = ended
    ? ended.payouts.map((p) => [String(p.position), h('span', { class: 'mono' }, p.userId.slice(0, 13)), p.amount,
      t.settled.has(p.position) ? h('span', { class: 'ok payout-settled' }, 'paid') : 'settling'])
    : (t.schedule?.prizeStructure ?? []).map((p) => [String(p.position), '', `${(p.share * 100).toFixed(2)} %`, '']);
  mount(t.els.payouts, h('h2', {}, 'Payouts'), rows.length ? grid(['Place', 'Player', ended ? 'Amount' : 'Share', ''], rows) : h('p', { class: 'muted' }, 'Shown when the field is set.'));
}

const renderAll = (t: Tourney) => { renderInfo(t); renderClock(t); renderStandings(t); renderPayouts(t); };

/** The tournament's messages on the table's websocket; false for one the page does not show. */
function heard(t: Tourney, m: ServerMessage): boolean {
  if (m.type === 'game_state') {
    t.seats = m.seats;
    t.registered = m.tournament?.registeredCount ?? t.seats.length;
    if (m.tournament) {
      t.level = m.tournament;
      t.state = m.tournament.state;
    }
    t.schedule = m.tournamentSchedule ?? t.schedule;
    t.myView = m.tournamentMyView ?? null;
  } else if (m.type === 'tournament_state_changed') t.state = m.state;
  else if (m.type === 'blind_level_changed' && t.level) t.level = { ...t.level, ...m };
  else if (m.type === 'player_eliminated') t.eliminated.push(m);
  else if (m.type === 'tournament_ended') t.ended = m;
  else if (m.type === 'tournament_payout_settled') t.settled.set(m.position, m);
  else if (m.type === 'tournament_unregistered') {
    mount(t.els.regStatus, h('p', { class: 'ok', id: 'unregistered' }, `Unregistered (${m.status}, ${m.amount} back${m.txHash ? `, tx ${m.txHash.slice(0, 12)}…` : ''}).`));
  } else return false;
  return true;
}

export async function tournamentPage(view: HTMLElement, tableId: string) {
  const room = await must<TableRoom>('game', `/api/tables/${encodeURIComponent(tableId)}`);
  if (room.mode !== 'sng') throw new Error('not a tournament');
  const els = tournamentElements();
  mount(view, h('h1', {}, 'Tournament ', h('span', { class: 'mono' }, tableId)), els.info, els.clock, els.standings, els.payouts, h('h2', {}, 'Table'), els.tableRoot);
  const table = await openTable(els.tableRoot, tableId, { sitting: false });
  const t: Tourney = {
    tableId, me: session()?.userId ?? null, settings: room.settings ?? {}, table, els, state: room.tournamentState ?? 'registering', registered: 0,
    level: null, schedule: null, myView: null, ended: null, eliminated: [], settled: new Map(), seats: [],
  };
  table.onMessage((m) => {
    if (heard(t, m)) renderAll(t);
  });
  if (table.state) table.live.onMessage(table.state);
  renderAll(t);
  const timer = setInterval(() => renderClock(t), 1000);
  return () => {
    clearInterval(timer);
    table.close();
  };
}
