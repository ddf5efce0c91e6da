// Hand histories as PHH (the Poker Hand History format of PokerKit and the public hand datasets:
// https://github.com/uoftcprg/phh-std), written from a stored history as one viewer may see it
// (histories.ts redactHistory: other seats' hole cards are gone, cards shown at showdown stay).
//
// The file is TOML. Players p1..pn are the seats dealt in, clockwise from the first seat after the
// button (the engine's dealing order, which is PHH's: the small blind first, the button last);
// seats sitting out are not players. Fields:
// - required (variant NT): antes, blinds_or_straddles (the nominal blinds at their players; two
//   players: the array is reversed, as PHH says heads-up blinds are), min_bet (the big blind),
//   starting_stacks (before the antes and blinds), actions;
// - optional: table (our table id), hand (the hand number), seats (our seat index + 1, PHH counts
//   seats from 1), players (the user ids the stored result names, "" where it names none), time
//   (UTC, whole seconds) with day, month, year, time_zone; finishing_stacks and winnings (after the
//   rake, as the hand ended) and ante_trimming_status = true when there is an ante (a short ante
//   wins only as much as it put in, as our side pots are built);
// - user-defined (PHH's leading underscore): _hand_id, _player_ids (our position ids), _rake (the
//   chips the house took), _viewer_players (the players that are the viewer's, numbered as pN),
//   and _status only for a hand that did not finish (then no finishing_stacks or winnings); a hand
//   dealt with commit and reveal (docs/dealer.md) also carries its proof: _deal_algorithm,
//   _deal_commitment, _deal_server_seed, _deal_contributions ("seat:seed"), _record_hash,
//   _record_signature and _dealer_key.
// Actions: `d dh pN` with the viewer's own cards or `????`, `d db` per street (burns are not
// written: PHH deals them implicitly), `pN f`, `pN cc` (check or call), `pN cbr X` (bet or raise to
// the street total X), a timeout carries the commentary `# timeout`, and at a showdown `pN sm` with
// the cards shown (bare: mucked). PHH shows hands as soon as the betting is over, so after an all-in
// the shows come before the run-out's boards. An uncontested winner shows nothing (PHH has no
// action after everyone folded); uncalled bets go back by the rules, so they are not written.

export interface PhhHand {
  handId: string;
  tableId: string;
  handNumber: number;
  status: string;
  startedAt: Date;
  /** The stored events, already redacted for the viewer. */
  history: readonly Record<string, unknown>[];
  /** The stored hand_result (stacks name each seat's userId), or null. */
  result: Record<string, unknown> | null;
  /** The viewer's seats in this hand. */
  viewerSeats: readonly number[];
  /** What the hand's end revealed of its deal, and its signed record's hash and signature (null: none kept). */
  deal?: { algorithm: string; commitment: string; serverSeed: string; contributions: readonly { seat: number; seed: string }[] } | null;
  record?: { hash: string; signature: string; publicKey: string } | null;
}

/** The deal's proof as user fields: enough to recompute the deck (docs/dealer.md) and check the record anywhere. */
function proofOf(hand: PhhHand): string[] {
  const lines: string[] = [];
  if (hand.deal) {
    lines.push(
      `_deal_algorithm = ${tomlString(hand.deal.algorithm)}`, `_deal_commitment = ${tomlString(hand.deal.commitment)}`,
      `_deal_server_seed = ${tomlString(hand.deal.serverSeed)}`,
      `_deal_contributions = ${array(hand.deal.contributions.map((c) => tomlString(`${c.seat}:${c.seed}`)))}`,
    );
  }
  if (hand.record) {
    lines.push(`_record_hash = ${tomlString(hand.record.hash)}`, `_record_signature = ${tomlString(hand.record.signature)}`, `_dealer_key = ${tomlString(hand.record.publicKey)}`);
  }
  return lines;
}

interface Started {
  button: number;
  smallBlindSeat: number | null;
  bigBlindSeat: number;
  smallBlind: string;
  bigBlind: string;
  ante: string;
  seats: { seat: number; playerId: string; stack: string }[];
}

type Event = Record<string, unknown> & { type?: unknown };

/** Chips as a TOML integer (the history holds them as decimal strings). */
function chips(value: unknown): string {
  const text = typeof value === 'number' ? String(value) : value;
  if (typeof text !== 'string' || !/^(0|[1-9][0-9]{0,18})$/.test(text)) throw new Error(`phh: not a chip amount: ${String(value)}`);
  return text;
}

function seatOf(value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) throw new Error(`phh: not a seat: ${String(value)}`);
  return value;
}

function cardText(cards: unknown): string {
  if (!Array.isArray(cards) || !cards.every((c) => typeof c === 'string' && /^[2-9TJQKA][cdhs]$/.test(c))) {
    throw new Error('phh: not a list of cards');
  }
  return cards.join('');
}

/** A TOML basic string. */
export function tomlString(text: string): string {
  return `"${text.replace(/[\u0000-\u001f"\\\u007f]/g, (ch) => {
    const named: Record<string, string> = { '"': '\\"', '\\': '\\\\', '\n': '\\n', '\t': '\\t', '\r': '\\r' };
    return named[ch] ?? `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`;
  })}"`;
}

const array = (items: readonly string[]) => `[${items.join(', ')}]`;

function startedOf(history: readonly Event[]): Started | null {
  const e = history.find((x) => x.type === 'hand_started');
  if (!e || !Array.isArray(e.seats)) return null;
  return {
    button: seatOf(e.button),
    smallBlindSeat: e.smallBlindSeat === null || e.smallBlindSeat === undefined ? null : seatOf(e.smallBlindSeat),
    bigBlindSeat: seatOf(e.bigBlindSeat),
    smallBlind: chips(e.smallBlind),
    bigBlind: chips(e.bigBlind),
    ante: chips(e.ante ?? '0'),
    seats: (e.seats as Record<string, unknown>[]).map((s) => ({ seat: seatOf(s.seat), playerId: String(s.playerId), stack: chips(s.stack) })),
  };
}

/** The seats dealt in, clockwise from the first after the button (which comes last): p1..pn. */
export function playerOrder(seats: readonly number[], button: number): number[] {
  const sorted = [...seats].sort((a, b) => a - b);
  const start = sorted.findIndex((s) => s > button);
  return start <= 0 ? sorted : [...sorted.slice(start), ...sorted.slice(0, start)];
}

/** blinds_or_straddles: each player's nominal blind; heads-up, PHH reads the array reversed. */
function blindsOf(started: Started, order: number[]): string[] {
  const blinds = order.map((seat) => (seat === started.bigBlindSeat ? started.bigBlind : seat === started.smallBlindSeat ? started.smallBlind : '0'));
  return order.length === 2 ? blinds.reverse() : blinds;
}

/** The actions field: hole cards, then the events in order, the showdown before an all-in's run-out. */
function actionsOf(history: readonly Event[], order: number[]): string[] {
  const p = (seat: unknown) => `p${order.indexOf(seatOf(seat)) + 1}`;
  const holes = new Map(history.filter((e) => e.type === 'hole_cards').map((e) => [seatOf(e.seat), cardText(e.cards)]));
  const out = order.map((seat) => `d dh ${p(seat)} ${holes.get(seat) ?? '????'}`);
  const lastAction = history.reduce((at, e, i) => (e.type === 'action' ? i : at), -1);
  const folded = history.filter((e) => e.type === 'action' && e.action === 'fold').length;
  const contested = order.length - folded > 1;
  const showdown: string[] = [];
  const runOut: string[] = [];
  history.forEach((e, i) => {
    if (e.type === 'action') out.push(actionText(e, p(e.seat)));
    else if (e.type === 'board') (i > lastAction ? runOut : out).push(`d db ${cardText(e.cards)}`);
    else if (e.type === 'show' && contested) showdown.push(`${p(e.seat)} sm ${cardText(e.cards)}`);
    else if (e.type === 'muck' && contested) showdown.push(`${p(e.seat)} sm`);
  });
  return [...out, ...showdown, ...runOut];
}

function actionText(e: Event, player: string): string {
  const note = e.timeout === true ? ' # timeout' : '';
  switch (e.action) {
    case 'fold': return `${player} f${note}`;
    case 'check':
    case 'call': return `${player} cc${note}`;
    case 'bet':
    case 'raise': return `${player} cbr ${chips(e.to)}${note}`;
    default: throw new Error(`phh: unknown action ${String(e.action)}`);
  }
}

/** What each player collected (after the rake) and the stacks at the end; null when the hand did not end. */
function endOf(history: readonly Event[], order: number[]): { stacks: string[]; winnings: string[]; rake: string } | null {
  const ended = history.find((e) => e.type === 'hand_ended');
  if (!ended || !Array.isArray(ended.stacks)) return null;
  const stackOf = new Map((ended.stacks as Event[]).map((s) => [seatOf(s.seat), chips(s.stack)]));
  const won = new Map<number, bigint>(order.map((seat) => [seat, 0n]));
  for (const e of history) {
    if (e.type !== 'pot_awarded' || !Array.isArray(e.winners)) continue;
    for (const w of e.winners as Event[]) won.set(seatOf(w.seat), (won.get(seatOf(w.seat)) ?? 0n) + BigInt(chips(w.amount)));
  }
  return {
    stacks: order.map((seat) => stackOf.get(seat) ?? (() => { throw new Error(`phh: no end stack for seat ${seat}`); })()),
    winnings: order.map((seat) => won.get(seat)!.toString()),
    rake: chips(ended.rake ?? '0'),
  };
}

/** The user id the stored result names for each player ("" where it names none). */
function namesOf(result: Record<string, unknown> | null, order: number[]): string[] {
  const stacks = Array.isArray(result?.stacks) ? (result.stacks as Event[]) : [];
  return order.map((seat) => {
    const userId = stacks.find((s) => s.seat === seat)?.userId;
    return typeof userId === 'string' ? userId : '';
  });
}

/** One hand as PHH text, or null when its history holds no start (nothing was dealt). */
export function handToPhh(hand: PhhHand): string | null {
  const history = hand.history as readonly Event[];
  const started = startedOf(history);
  if (!started) return null;
  const order = playerOrder(started.seats.map((s) => s.seat), started.button);
  const bySeat = new Map(started.seats.map((s) => [s.seat, s]));
  const end = hand.status === 'finished' ? endOf(history, order) : null;
  const at = hand.startedAt;
  const time = [at.getUTCHours(), at.getUTCMinutes(), at.getUTCSeconds()].map((n) => String(n).padStart(2, '0')).join(':');
  const lines = [
    'variant = "NT"',
    `antes = ${array(order.map(() => started.ante))}`,
    `blinds_or_straddles = ${array(blindsOf(started, order))}`,
    `min_bet = ${started.bigBlind}`,
    `starting_stacks = ${array(order.map((seat) => bySeat.get(seat)!.stack))}`,
    `actions = [\n${actionsOf(history, order).map((a) => `  ${tomlString(a)},\n`).join('')}]`,
    ...(started.ante !== '0' ? ['ante_trimming_status = true'] : []),
    `table = ${tomlString(hand.tableId)}`,
    `hand = ${hand.handNumber}`,
    `seats = ${array(order.map((seat) => String(seat + 1)))}`,
    `players = ${array(namesOf(hand.result, order).map(tomlString))}`,
    `time = ${time}`,
    `time_zone = "UTC"`,
    `day = ${at.getUTCDate()}`,
    `month = ${at.getUTCMonth() + 1}`,
    `year = ${at.getUTCFullYear()}`,
    ...(end ? [`finishing_stacks = ${array(end.stacks)}`, `winnings = ${array(end.winnings)}`] : []),
    `_hand_id = ${tomlString(hand.handId)}`,
    `_player_ids = ${array(order.map((seat) => tomlString(bySeat.get(seat)!.playerId)))}`,
    ...(end ? [`_rake = ${end.rake}`] : []),
    `_viewer_players = ${array(order.flatMap((seat, i) => (hand.viewerSeats.includes(seat) ? [String(i + 1)] : [])))}`,
    ...(hand.status !== 'finished' ? [`_status = ${tomlString(hand.status)}`] : []),
    ...proofOf(hand),
  ];
  return `${lines.join('\n')}\n`;
}

/**
 * Several hands as one PHH file in the `.phhs` form PokerKit reads and writes: each hand a TOML
 * table named by its position in the file (`[1]`, `[2]`, ...), in the order given. Hands with
 * nothing dealt are left out.
 */
export function handsToPhhs(hands: readonly PhhHand[]): string {
  const texts = hands.map(handToPhh).filter((t): t is string => t !== null);
  return texts.map((t, i) => `[${i + 1}]\n${t}`).join('\n');
}
