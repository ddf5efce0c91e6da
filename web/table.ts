// A table: watch it (game_state after every change), sit with a buy-in (the `sit` message: the game
// role buys in through the bank), act with the legal actions and the raise-to bounds of the
// server's `legal`, stand up (the `stood_up` answer carries the cage's receipt), the hand results,
// and your receipts for this table with their signatures checked. Also the tournament view's table.
// On the chain bank the sit is a deposit paid by a permit the browser wallet signs (chain.ts), and a
// stand-up is paid back on chain to the wallet that signed it (its transaction is the receipt).
import { idempotencyKey, Live, must, session, type Msg } from './api.ts';
import { bank, chainDeposit, depositOutcome, type Bank } from './chain.ts';
import { receiptsCard } from './receipts.ts';
import { errorLine, h, mount } from './ui.ts';

const cardText = (cards: string[] | null | undefined) => (cards && cards.length ? cards.join(' ') : '');

export interface TableView {
  live: Live;
  room: Msg;
  /** The platform's bank: the cage, or the chain bank (deposits by permit). */
  bank: Bank;
  state: Msg | null;
  /** Extra handlers (the tournament view's messages). */
  onMessage(handler: (m: Msg) => void): void;
  close(): void;
}

/** Renders a live table into `root`; `sitting` false hides the sit form (tournaments). */
export async function openTable(root: HTMLElement, tableId: string, options: { sitting: boolean }): Promise<TableView> {
  const [room, theBank] = await Promise.all([must('game', `/api/tables/${encodeURIComponent(tableId)}`), bank()]);
  const me = session()?.userId ?? null;
  const live = new Live();
  const extra: ((m: Msg) => void)[] = [];
  const feltEl = h('div', { class: 'felt', id: 'felt' });
  const seatsEl = h('div', { class: 'seats', id: 'seats' });
  const actionsEl = h('div', { class: 'card', id: 'actions' });
  const sitEl = h('div', { class: 'card', id: 'sit' });
  const statusEl = h('div', { id: 'table-status' });
  const resultsEl = h('div', { class: 'log', id: 'results' });
  const receiptsEl = h('div', { id: 'receipts-slot' });
  const view: TableView = { live, room, bank: theBank, state: null, onMessage: (f) => extra.push(f), close: () => live.close() };
  let standPending = false;

  mount(root, feltEl, seatsEl, actionsEl, options.sitting ? sitEl : null, statusEl, h('h2', {}, 'Hand results'), resultsEl, receiptsEl);

  const say = (node: Node) => mount(statusEl, node);

  function mySeat(): Msg | undefined {
    return view.state?.seats.find((s: Msg) => me && s.userId === me);
  }

  function renderState() {
    const s = view.state;
    if (!s) return;
    mount(feltEl,
      h('div', {}, `Blinds ${s.blinds.small}/${s.blinds.big}${s.blinds.ante && s.blinds.ante !== '0' ? ` ante ${s.blinds.ante}` : ''} · ${s.status}${s.street ? ` · ${s.street}` : ''}`),
      h('div', { class: 'cards', id: 'board' }, cardText(s.board) || '—'),
      h('div', {}, `Pot ${(s.pots ?? []).map((p: Msg) => p.amount).join(' + ') || '0'}`));
    mount(seatsEl, (s.seats as Msg[]).map((seat) => h('div', {
      class: `seat${seat.userId === me ? ' me' : ''}${s.toAct === seat.seatIndex ? ' toact' : ''}`, 'data-seat': seat.seatIndex,
    },
    h('div', {}, h('strong', {}, `Seat ${seat.seatIndex}`), seat.userId === me ? ' (you)' : seat.agentId ? ' (agent)' : ''),
    h('div', { class: 'muted mono' }, String(seat.userId ?? 'empty').slice(0, 13)),
    h('div', {}, `Stack ${seat.stack}`, seat.bet && seat.bet !== '0' ? ` · bet ${seat.bet}` : ''),
    h('div', { class: 'cards' }, cardText(seat.cards)),
    h('div', { class: 'muted' }, [seat.folded && 'folded', seat.allIn && 'all-in', seat.sittingOut && 'sitting out', s.toAct === seat.seatIndex && 'to act'].filter(Boolean).join(', ')))));
    renderActions();
    if (options.sitting) renderSit();
  }

  function renderActions() {
    const s = view.state;
    const legal = s?.legal;
    const seat = mySeat();
    const stand = seat ? h('button', { class: 'secondary', id: 'stand-up', disabled: standPending, onclick: () => void standUp() }, standPending ? 'Leaving after this hand…' : 'Stand up') : null;
    actionsEl.dataset.turn = legal ? `${legal.handId}:${legal.seq}` : '';
    if (!legal) {
      mount(actionsEl, h('div', { class: 'row' }, h('span', { class: 'muted' }, seat ? 'Waiting for your turn.' : 'Watching.'), stand));
      return;
    }
    const amount = h('input', { id: 'raise-to', type: 'number', min: legal.minRaiseTo ?? '', max: legal.maxRaiseTo ?? '', value: legal.minRaiseTo ?? '', step: 1 });
    const act = (action: string, withAmount = false) => void send({
      type: 'action', tableId, handId: legal.handId, seq: legal.seq, action, ...(withAmount ? { amount: String(amount.value) } : {}),
    });
    const buttons = (legal.actions as string[]).map((a) => {
      if (a === 'bet' || a === 'raise') return null;
      return h('button', { id: `act-${a}`, 'data-action': a, onclick: () => act(a) }, a === 'call' ? `Call ${legal.toCall}` : a[0]!.toUpperCase() + a.slice(1));
    });
    const aggressive = (legal.actions as string[]).find((a) => a === 'bet' || a === 'raise');
    mount(actionsEl,
      h('div', { class: 'row' }, h('strong', {}, 'Your turn'), s?.turnDeadline ? h('span', { class: 'muted' }, `until ${new Date(s.turnDeadline).toLocaleTimeString()}`) : null),
      h('div', { class: 'row' }, buttons,
        aggressive ? [h('label', { for: 'raise-to' }, `${aggressive} to (${legal.minRaiseTo}–${legal.maxRaiseTo})`), amount,
          h('button', { id: `act-${aggressive}`, 'data-action': aggressive, onclick: () => act(aggressive, true) }, aggressive === 'bet' ? 'Bet' : 'Raise to')] : null,
        stand));
  }

  function renderSit() {
    if (mySeat() || !session()) {
      mount(sitEl, session() ? null : h('p', { class: 'muted' }, h('a', { href: '#/signin' }, 'Sign in'), ' to sit.'));
      return;
    }
    if (sitEl.dataset.shown === view.state?.seats.length.toString()) return; // keep what the player typed
    sitEl.dataset.shown = view.state?.seats.length.toString() ?? '';
    const settings = room.settings ?? {};
    const taken = new Set((view.state?.seats ?? []).map((s: Msg) => s.seatIndex));
    const free = Array.from({ length: settings.maxPlayers ?? 0 }, (_, i) => i).filter((i) => !taken.has(i));
    const seatSelect = h('select', { id: 'sit-seat' }, free.map((i) => h('option', { value: i }, `Seat ${i}`)));
    const amount = h('input', { id: 'sit-amount', type: 'number', min: settings.minBuyIn, max: settings.maxBuyIn, value: settings.minBuyIn, step: 1 });
    mount(sitEl, h('div', { class: 'row' }, h('strong', {}, 'Sit down'), seatSelect,
      h('label', { for: 'sit-amount' }, `Buy-in (${settings.minBuyIn}–${settings.maxBuyIn})`), amount,
      h('button', { id: 'sit-button', onclick: () => void sit(Number(seatSelect.value), String(amount.value)) }, 'Sit')));
  }

  async function send(m: Msg) {
    const r = await live.request(m);
    if (r.type === 'error') say(errorLine(`Refused: ${r.code}`));
    return r;
  }

  async function sit(seatIndex: number, amount: string) {
    if (theBank.kind === 'chain') return sitOnChain(theBank, seatIndex, amount);
    if (theBank.kind === 'unknown') return say(errorLine(`The bank did not answer (${theBank.error}); reload to try again.`));
    say(h('p', { class: 'muted' }, 'Buying in…'));
    const r = await live.request({ type: 'sit', tableId, seatIndex, amount: Number(amount), idempotencyKey: idempotencyKey() });
    if (r.type === 'sit_pending') say(h('p', { class: 'muted' }, 'You will be seated when this hand ends.'));
    else if (r.type === 'error') say(errorLine(`Sit refused: ${r.code}`));
    else if (r.type === 'seated') say(h('p', { class: 'ok', id: 'seated' }, `Seated at seat ${r.seatIndex} with ${r.chipBalance}.`));
  }

  /** The chain bank's sit: a deposit to the seat, paid by a permit the browser wallet signs. */
  async function sitOnChain(chain: Extract<Bank, { kind: 'chain' }>, seatIndex: number, amount: string) {
    if (!chain.info) return say(errorLine(`The chain bank is unavailable: ${chain.error}`));
    say(h('p', { class: 'muted' }, 'Sign the permit in your wallet…'));
    try {
      const outcome = depositOutcome(await chainDeposit(chain.info, { tableId, seatIndex, amount }));
      say(outcome.ok ? h('p', { class: 'ok', id: 'seated' }, `Seat ${seatIndex}: ${amount} chips, ${outcome.text}.`) : errorLine(`Sit refused: ${outcome.text}`));
    } catch (err) {
      say(errorLine(`Sit failed: ${(err as Error).message}`));
    }
  }

  async function standUp() {
    const r = await live.request({ type: 'stand_up', tableId });
    if (r.type === 'stand_up_pending') {
      standPending = true;
      renderActions();
      say(h('p', { class: 'muted' }, 'You will leave when this hand ends.'));
    } else if (r.type === 'error') say(errorLine(`Stand up refused: ${r.code}`));
  }

  async function stoodUp(m: Msg) {
    standPending = false;
    sitEl.dataset.shown = '';
    const paid = theBank.kind === 'chain' && m.txHash ? `, paid to your wallet on chain (tx ${String(m.txHash).slice(0, 12)}…)` : '';
    say(h('p', { class: 'ok', id: 'stood-up' }, m.busted ? 'You busted and left the table.' : `You left the table with ${m.amount} chips${paid}.`));
    if (theBank.kind === 'cage') mount(receiptsEl, await receiptsCard(tableId));
  }

  function handResult(m: Msg) {
    const winners = (m.pots as Msg[]).flatMap((p) => (p.winners as Msg[]).map((w) => `seat ${w.seat} wins ${w.amount}`));
    const shown = (m.shown as Msg[] ?? []).map((s) => `seat ${s.seat}: ${cardText(s.cards)} (${s.description})`);
    const mine = (m.stacks as Msg[]).find((s) => s.userId === me);
    resultsEl.prepend(h('div', { class: 'hand-result', 'data-hand': m.handId },
      h('strong', {}, `Hand ${String(m.handId).split(':')[1] ?? m.handId}: `), winners.join('; '),
      m.board?.length ? ` · board ${cardText(m.board)}` : '', shown.length ? ` · ${shown.join('; ')}` : '',
      mine ? h('span', { class: BigInt(mine.net) >= 0n ? 'ok' : 'error' }, ` · you ${BigInt(mine.net) >= 0n ? '+' : ''}${mine.net}`) : '',
      m.deal ? h('span', { class: 'muted mono', title: `server seed ${m.deal.serverSeed}; commitment ${m.deal.commitment}; record ${m.record?.hash ?? ''}` },
        ` · deal ${String(m.deal.commitment).slice(0, 8)}… revealed (${m.deal.contributions.length} seed${m.deal.contributions.length === 1 ? '' : 's'} mixed in)`) : ''));
  }

  // a seated player mixes a fresh random seed into each next hand's deck (docs/dealer.md): sent once
  // per commitment announced, so the dealer, committed before it, cannot pick the deck
  let contributedTo = '';
  function contribute(m: Msg) {
    if (m.yourSeat === null || !m.nextDealCommitment || m.nextDealCommitment === contributedTo) return;
    contributedTo = m.nextDealCommitment;
    const bytes = crypto.getRandomValues(new Uint8Array(16));
    const seed = btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
    void live.request({ type: 'deal_seed', tableId, commitment: contributedTo, seed });
  }

  live.onMessage = (m) => {
    if (m.tableId !== undefined && m.tableId !== tableId) return;
    if (m.type === 'game_state') {
      view.state = m;
      renderState();
      contribute(m);
    } else if (m.type === 'hand_result') handResult(m);
    else if (m.type === 'stood_up') void stoodUp(m);
    else if (m.type === 'table_closed') say(errorLine(`The table closed (${m.reason}).`));
    for (const f of extra) f(m);
  };
  live.onClose = (code) => say(errorLine(`Disconnected (${code}). Reload to reconnect.`));
  const hello = await live.ready;
  if (hello.type === 'error') say(errorLine(`Not signed in on the table: ${hello.code}`));
  const joined = await live.request({ type: 'join', tableId });
  if (joined.type !== 'joined') throw new Error(joined.code ?? 'join refused');
  if (session() && theBank.kind === 'cage') mount(receiptsEl, await receiptsCard(tableId));
  return view;
}

export async function tablePage(view: HTMLElement, tableId: string) {
  const root = h('div', {});
  mount(view, h('h1', {}, 'Table ', h('span', { class: 'mono' }, tableId)), root);
  const table = await openTable(root, tableId, { sitting: true });
  return () => table.close();
}
