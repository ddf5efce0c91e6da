// A table: watch it (game_state after every change), sit with a buy-in (the `sit` message: the game
// role buys in through the bank), act with the legal actions and the raise-to bounds of the
// server's `legal`, stand up (the `stood_up` answer carries the cage's receipt), the hand results,
// and your receipts for this table with their signatures checked. Also the tournament view's table.
// On the chain bank the sit is a deposit paid by a permit the browser wallet signs (chain.ts), and a
// stand-up is paid back on chain to the wallet that signed it (its transaction is the receipt).
import { call, idempotencyKey, Live, must, refusal, session, type Outgoing, type ServerMessage, type ServerMessageOf } from './api.ts';
import { bankOf, chainDeposit, depositOutcome, type Bank } from './chain.ts';
import { receiptsCard } from './receipts.ts';
import { errorLine, h, mount } from './ui.ts';

type GameState = ServerMessageOf<'game_state'>;
type Seat = GameState['seats'][number];
type Legal = NonNullable<GameState['legal']>;

/**
 * A table's room as `GET /api/tables/:tableId` answers it (an HTTP answer: the OpenAPI document
 * describes it); the fields the page reads.
 */
export interface TableRoom {
  tableId: string;
  mode: 'cash' | 'sng';
  /** The table's own bank, when the table read names it. */
  bank?: 'cage' | 'chain' | null;
  tournamentState?: string | null;
  settings?: { maxPlayers?: number; minBuyIn?: string | number; maxBuyIn?: string | number; entryFee?: string | number; startingStack?: string | number; seats?: number };
}

const cardText = (cards: readonly string[] | null | undefined) => (cards && cards.length ? cards.join(' ') : '');

export interface TableView {
  live: Live;
  room: TableRoom;
  /** The table's bank: the cage, or the chain bank (deposits by permit). */
  bank: Bank;
  state: GameState | null;
  /** Extra handlers (the tournament view's messages). */
  onMessage(handler: (m: ServerMessage) => void): void;
  close(): void;
}

/** One open table: what every part of the page below reads and writes. */
interface Table {
  tableId: string;
  me: string | null;
  sitting: boolean;
  view: TableView;
  els: ReturnType<typeof tableElements>;
  standPending: boolean;
  /** The commitment this player last mixed a seed into (one per commitment announced). */
  contributedTo: string;
}

function tableElements() {
  return {
    felt: h('div', { class: 'felt', id: 'felt' }),
    seats: h('div', { class: 'seats', id: 'seats' }),
    actions: h('div', { class: 'card', id: 'actions' }),
    sit: h('div', { class: 'card', id: 'sit' }),
    status: h('div', { id: 'table-status' }),
    results: h('div', { class: 'log', id: 'results' }),
    receipts: h('div', { id: 'receipts-slot' }),
  };
}

const say = (t: Table, node: Node) => mount(t.els.status, node);
const mySeat = (t: Table): Seat | undefined => t.view.state?.seats.find((s) => t.me && s.userId === t.me);

function seatCard(t: Table, s: GameState, seat: Seat) {
  const me = seat.userId === t.me;
  const notes = [seat.folded && 'folded', seat.allIn && 'all-in', seat.sittingOut && 'sitting out', s.toAct === seat.seatIndex && 'to act'];
  return h('div', { class: `seat${me ? ' me' : ''}${s.toAct === seat.seatIndex ? ' toact' : ''}`, 'data-seat': seat.seatIndex },
    h('div', {}, h('strong', {}, `Seat ${seat.seatIndex}`), me ? ' (you)' : seat.agentId ? ' (agent)' : ''),
    h('div', { class: 'muted mono' }, String(seat.userId ?? 'empty').slice(0, 13)),
    h('div', {}, `Stack ${seat.stack}`, seat.bet && seat.bet !== '0' ? ` · bet ${seat.bet}` : ''),
    h('div', { class: 'cards' }, cardText(seat.cards)),
    h('div', { class: 'muted' }, notes.filter(Boolean).join(', ')));
}

function renderState(t: Table) {
  const s = t.view.state;
  if (!s) return;
  mount(t.els.felt,
    h('div', {}, `Blinds ${s.blinds.small}/${s.blinds.big}${s.blinds.ante && s.blinds.ante !== '0' ? ` ante ${s.blinds.ante}` : ''} · ${s.status}${s.street ? ` · ${s.street}` : ''}`),
    h('div', { class: 'cards', id: 'board' }, cardText(s.board) || '—'),
    h('div', {}, `Pot ${s.pots.map((p) => p.amount).join(' + ') || '0'}`));
  mount(t.els.seats, s.seats.map((seat) => seatCard(t, s, seat)));
  renderActions(t);
  if (t.sitting) renderSit(t);
}

/** The buttons of the legal actions, the raise-to input for a bet or a raise. */
function actionButtons(t: Table, legal: Legal) {
  const amount = h('input', { id: 'raise-to', type: 'number', min: legal.minRaiseTo ?? '', max: legal.maxRaiseTo ?? '', value: legal.minRaiseTo ?? '', step: 1 });
  const act = (action: string, withAmount = false) => void send(t, {
    type: 'action', tableId: t.tableId, handId: legal.handId, seq: legal.seq, action, ...(withAmount ? { amount: String(amount.value) } : {}),
  });
  const buttons = legal.actions.map((a) => {
    if (a === 'bet' || a === 'raise') return null;
    return h('button', { id: `act-${a}`, 'data-action': a, onclick: () => act(a) }, a === 'call' ? `Call ${legal.toCall}` : a[0]!.toUpperCase() + a.slice(1));
  });
  const aggressive = legal.actions.find((a) => a === 'bet' || a === 'raise');
  return [buttons, aggressive ? [h('label', { for: 'raise-to' }, `${aggressive} to (${legal.minRaiseTo}–${legal.maxRaiseTo})`), amount,
    h('button', { id: `act-${aggressive}`, 'data-action': aggressive, onclick: () => act(aggressive, true) }, aggressive === 'bet' ? 'Bet' : 'Raise to')] : null];
}

function renderActions(t: Table) {
  const s = t.view.state;
  const legal = s?.legal;
  const seat = mySeat(t);
  const stand = seat ? h('button', { class: 'secondary', id: 'stand-up', disabled: t.standPending, onclick: () => void standUp(t) }, t.standPending ? 'Leaving after this hand…' : 'Stand up') : null;
  t.els.actions.dataset.turn = legal ? `${legal.handId}:${legal.seq}` : '';
  if (!legal) {
    mount(t.els.actions, h('div', { class: 'row' }, h('span', { class: 'muted' }, seat ? 'Waiting for your turn.' : 'Watching.'), stand));
    return;
  }
  mount(t.els.actions,
    h('div', { class: 'row' }, h('strong', {}, 'Your turn'), s?.turnDeadline ? h('span', { class: 'muted' }, `until ${new Date(s.turnDeadline).toLocaleTimeString()}`) : null),
    h('div', { class: 'row' }, ...actionButtons(t, legal), stand));
}

function renderSit(t: Table) {
  const sitEl = t.els.sit;
  if (mySeat(t) || !session()) {
    mount(sitEl, session() ? null : h('p', { class: 'muted' }, h('a', { href: '#/signin' }, 'Sign in'), ' to sit.'));
    return;
  }
  if (sitEl.dataset.shown === t.view.state?.seats.length.toString()) return; // keep what the player typed
  sitEl.dataset.shown = t.view.state?.seats.length.toString() ?? '';
  const settings = t.view.room.settings ?? {};
  const taken = new Set((t.view.state?.seats ?? []).map((s) => s.seatIndex));
  const free = Array.from({ length: settings.maxPlayers ?? 0 }, (_, i) => i).filter((i) => !taken.has(i));
  const seatSelect = h('select', { id: 'sit-seat' }, free.map((i) => h('option', { value: i }, `Seat ${i}`)));
  const amount = h('input', { id: 'sit-amount', type: 'number', min: settings.minBuyIn, max: settings.maxBuyIn, value: settings.minBuyIn, step: 1 });
  mount(sitEl, h('div', { class: 'row' }, h('strong', {}, 'Sit down'), seatSelect,
    h('label', { for: 'sit-amount' }, `Buy-in (${settings.minBuyIn}–${settings.maxBuyIn})`), amount,
    h('button', { id: 'sit-button', onclick: () => void sit(t, Number(seatSelect.value), String(amount.value)) }, 'Sit')));
}

async function send(t: Table, m: Outgoing) {
  const r = await t.view.live.request(m);
  if (r.type === 'error') say(t, errorLine(`Refused: ${r.code}`));
  return r;
}

async function sit(t: Table, seatIndex: number, amount: string) {
  const theBank = t.view.bank;
  if (theBank.kind === 'chain') return sitOnChain(t, theBank, seatIndex, amount);
  if (theBank.kind === 'unknown') return say(t, errorLine(`The bank did not answer (${theBank.error}); reload to try again.`));
  say(t, h('p', { class: 'muted' }, 'Buying in…'));
  const r = await t.view.live.request({ type: 'sit', tableId: t.tableId, seatIndex, amount: Number(amount), idempotencyKey: idempotencyKey() });
  if (r.type === 'sit_pending') say(t, h('p', { class: 'muted' }, 'You will be seated when this hand ends.'));
  else if (r.type === 'error') say(t, errorLine(`Sit refused: ${r.code}`));
  else if (r.type === 'seated') say(t, h('p', { class: 'ok', id: 'seated' }, `Seated at seat ${r.seatIndex} with ${r.chipBalance}.`));
}

/** The chain bank's sit: a deposit to the seat, paid by a permit the browser wallet signs. */
async function sitOnChain(t: Table, chain: Extract<Bank, { kind: 'chain' }>, seatIndex: number, amount: string) {
  if (!chain.info) return say(t, errorLine(`The chain bank is unavailable: ${chain.error}`));
  say(t, h('p', { class: 'muted' }, 'Sign the permit in your wallet…'));
  try {
    const outcome = depositOutcome(await chainDeposit(chain.info, { tableId: t.tableId, seatIndex, amount }));
    say(t, outcome.ok ? h('p', { class: 'ok', id: 'seated' }, `Seat ${seatIndex}: ${amount} chips, ${outcome.text}.`) : errorLine(`Sit refused: ${outcome.text}`));
  } catch (err) {
    say(t, errorLine(`Sit failed: ${(err as Error).message}`));
  }
}

async function standUp(t: Table) {
  const r = await t.view.live.request({ type: 'stand_up', tableId: t.tableId });
  if (r.type === 'stand_up_pending') {
    t.standPending = true;
    renderActions(t);
    say(t, h('p', { class: 'muted' }, 'You will leave when this hand ends.'));
  } else if (r.type === 'error') say(t, errorLine(`Stand up refused: ${r.code}`));
}

async function stoodUp(t: Table, m: ServerMessageOf<'stood_up'>) {
  t.standPending = false;
  t.els.sit.dataset.shown = '';
  const paid = t.view.bank.kind === 'chain' && m.txHash ? `, paid to your wallet on chain (tx ${m.txHash.slice(0, 12)}…)` : '';
  say(t, h('p', { class: 'ok', id: 'stood-up' }, m.busted ? 'You busted and left the table.' : `You left the table with ${m.amount} chips${paid}.`));
  if (t.view.bank.kind === 'cage') mount(t.els.receipts, await receiptsCard(t.tableId));
}

function handResult(t: Table, m: ServerMessageOf<'hand_result'>) {
  const winners = m.pots.flatMap((p) => p.winners.map((w) => `seat ${w.seat} wins ${w.amount}`));
  const shown = m.shown.map((s) => `seat ${s.seat}: ${cardText(s.cards)} (${s.description})`);
  const mine = m.stacks.find((s) => s.userId === t.me);
  const seeds = m.deal.contributions.length;
  t.els.results.prepend(h('div', { class: 'hand-result', 'data-hand': m.handId },
    h('strong', {}, `Hand ${m.handId.split(':')[1] ?? m.handId}: `), winners.join('; '),
    m.board.length ? ` · board ${cardText(m.board)}` : '', shown.length ? ` · ${shown.join('; ')}` : '',
    mine ? h('span', { class: BigInt(mine.net) >= 0n ? 'ok' : 'error' }, ` · you ${BigInt(mine.net) >= 0n ? '+' : ''}${mine.net}`) : '',
    h('span', { class: 'muted mono', title: `server seed ${m.deal.serverSeed}; commitment ${m.deal.commitment}; record ${m.record.hash}` },
      ` · deal ${m.deal.commitment.slice(0, 8)}… revealed (${seeds} seed${seeds === 1 ? '' : 's'} mixed in)`)));
}

// a seated player mixes a fresh random seed into each next hand's deck (docs/dealer.md): sent once
// per commitment announced, so the dealer, committed before it, cannot pick the deck
function contribute(t: Table, m: GameState) {
  if (m.yourSeat === null || !m.nextDealCommitment || m.nextDealCommitment === t.contributedTo) return;
  t.contributedTo = m.nextDealCommitment;
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  const seed = btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  void t.view.live.request({ type: 'deal_seed', tableId: t.tableId, commitment: t.contributedTo, seed });
}

/** An operator escaped the table: where this player's chips went (their custody entry, or the table's hold), and a free entry's claim. */
function escapedLine(m: ServerMessageOf<'table_escaped'>) {
  const text = m.outcome === 'clean'
    ? `An operator escaped this table: your ${m.entry.amount} chips are in custody entry #${m.entry.id} (${m.entry.status}), yours to claim.`
    : `An operator escaped this table with books that disagree: its ${m.entry.amount} chips are held in custody entry #${m.entry.id} (${m.entry.status}) until an operator splits them.`;
  const line = h('div', { id: 'escaped', 'data-entry': m.entry.id }, h('p', { class: 'error' }, text));
  if (m.outcome === 'clean' && m.entry.status === 'free') line.append(claimButton(line, m.entry.id));
  return line;
}

/** Claims a FREE custody entry back to the cage balance (POST /api/custody/claim), once. */
function claimButton(into: HTMLElement, entryId: string) {
  const button = h('button', {
    id: 'claim-custody',
    onclick: () => {
      button.disabled = true;
      void call<{ amount?: number; error?: string }>('bank', '/api/custody/claim', { method: 'POST', body: { entryId } }).then((r) => {
        if (r.ok) into.append(h('p', { class: 'ok', id: 'custody-claimed' }, `Claimed: ${r.body.amount} chips are back in your cage balance.`));
        else {
          button.disabled = false;
          into.append(errorLine(`Claim refused: ${r.body.error ?? r.status}`));
        }
      });
    },
  }, 'Claim them back');
  return button;
}

/** Every message of this table: the state, the results, the stand-up's answer, then the extra handlers. */
function onMessage(t: Table, m: ServerMessage, extra: ((m: ServerMessage) => void)[]) {
  if ('tableId' in m && m.tableId !== undefined && m.tableId !== t.tableId) return;
  if (m.type === 'game_state') {
    t.view.state = m;
    renderState(t);
    contribute(t, m);
  } else if (m.type === 'hand_result') handResult(t, m);
  else if (m.type === 'stood_up') void stoodUp(t, m);
  else if (m.type === 'table_closed') say(t, errorLine(`The table closed (${m.reason}).`));
  else if (m.type === 'table_escaped') say(t, escapedLine(m));
  for (const f of extra) f(m);
}

/** Renders a live table into `root`; `sitting` false hides the sit form (tournaments). */
export async function openTable(root: HTMLElement, tableId: string, options: { sitting: boolean }): Promise<TableView> {
  const room = await must<TableRoom>('game', `/api/tables/${encodeURIComponent(tableId)}`);
  const theBank = await bankOf(room);
  const live = new Live();
  const extra: ((m: ServerMessage) => void)[] = [];
  const view: TableView = { live, room, bank: theBank, state: null, onMessage: (f) => extra.push(f), close: () => live.close() };
  const els = tableElements();
  const t: Table = { tableId, me: session()?.userId ?? null, sitting: options.sitting, view, els, standPending: false, contributedTo: '' };
  mount(root, els.felt, els.seats, els.actions, options.sitting ? els.sit : null, els.status, h('h2', {}, 'Hand results'), els.results, els.receipts);
  live.onMessage = (m) => onMessage(t, m, extra);
  live.onClose = (code) => say(t, errorLine(`Disconnected (${code}). Reload to reconnect.`));
  const hello = await live.ready;
  if (hello?.type === 'error') say(t, errorLine(`Not signed in on the table: ${hello.code}`));
  const joined = await live.request({ type: 'join', tableId });
  if (joined.type !== 'joined') throw new Error(refusal(joined));
  if (session() && theBank.kind === 'cage') mount(els.receipts, await receiptsCard(tableId));
  return view;
}

export async function tablePage(view: HTMLElement, tableId: string) {
  const root = h('div', {});
  mount(view, h('h1', {}, 'Table ', h('span', { class: 'mono' }, tableId)), root);
  const table = await openTable(root, tableId, { sitting: true });
  return () => table.close();
}
