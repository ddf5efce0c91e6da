// One hand of no-limit hold'em as a state machine. Pure and deterministic: no I/O, no clock, no
// randomness (the deck comes in shuffled, see deck.ts). The rules it follows are the 17 of
// `../shared/design/POKER-RULES.md`; the choices they leave open are in docs/dealer.md.
//
// States are never changed in place: startHand, applyAction and timeout return a new state (or a
// refusal that leaves the old one as it was). Internally each step copies the state into a draft
// and mutates the draft, so the code reads like a dealer's procedure.
//
// Amounts are chips as bigint. Bet and raise amounts are raise-TO: the player's total bet on this
// street after the action, never the increment ("raise to 300", not "raise by 200").
import type { Card, Category, HandValue } from './cards.ts';
import { evaluate, scoreHand } from './evaluator.ts';

export type ActionType = 'fold' | 'check' | 'call' | 'bet' | 'raise';
export type Street = 'preflop' | 'flop' | 'turn' | 'river';
export type RefusalCode = 'not_your_turn' | 'illegal_amount' | 'illegal_action' | 'hand_over' | 'stale_sequence';

export interface Refusal {
  error: RefusalCode;
  message: string;
}

export interface Action {
  type: ActionType;
  /** Bet and raise only: the total this player will have in front of them on this street. */
  amount?: bigint;
}

export interface RakeRule {
  /** 0..100, may be fractional (2.5 means 2.5 %); read as the decimal the operator typed. */
  percent: number;
  /** Most rake per hand; 0 means no rake at all. */
  cap: bigint;
  /** No rake when the hand's pot (after uncalled bets went back) is below this. */
  minPot: bigint;
  /** No rake unless a flop was dealt ("no flop, no drop"); an all-in run-out counts as a flop. */
  requiresFlop: boolean;
}

export interface SeatInput {
  seat: number;
  playerId: string;
  stack: bigint;
  /** Not dealt in: posts nothing, receives no cards (see table.ts for who sits out). */
  sittingOut?: boolean;
}

export interface StartHandInput {
  handId: string;
  seats: SeatInput[];
  /** The button's seat; with a dead button it may be a seat nobody plays from. */
  button: number;
  /** Who posts the small blind; null = no small blind this hand. Default: derived from the button. */
  smallBlindSeat?: number | null;
  /** Who posts the big blind. Default: derived from the button. */
  bigBlindSeat?: number;
  smallBlind: bigint;
  bigBlind: bigint;
  ante: bigint;
  /** Cards in dealing order (deck.ts); the hand uses 2 per player, 3 burns and 5 for the board. */
  deck: readonly Card[];
  rake: RakeRule;
}

export interface PlayerState {
  seat: number;
  playerId: string;
  startingStack: bigint;
  /** Chips behind (not yet put in). */
  stack: bigint;
  /** Chips in front of the player on this street (blinds and bets; antes are dead and not here). */
  bet: bigint;
  /** Everything this player has put in this hand, antes included, uncalled chips given back. */
  committed: bigint;
  hole: Card[];
  folded: boolean;
  /** Has acted voluntarily on this street (posting a blind is not acting). */
  acted: boolean;
  /** The street's bet to call right after this player's last action (decides reopening). */
  actedAtBet: bigint;
}

export interface Pot {
  amount: bigint;
  /** Seats that can win it: not folded and put in at least this pot's level. */
  eligible: number[];
}

export interface HandState {
  handId: string;
  /** Increments with every applied action (timeouts included); an action may name the seq it saw. */
  seq: number;
  street: Street;
  status: 'betting' | 'complete';
  /** The seat to act, or null once the hand is over. */
  toAct: number | null;
  button: number;
  smallBlindSeat: number | null;
  bigBlindSeat: number;
  smallBlind: bigint;
  bigBlind: bigint;
  ante: bigint;
  rakeRule: RakeRule;
  /** The players dealt in, by seat. */
  players: PlayerState[];
  board: Card[];
  deck: readonly Card[];
  /** The next card of `deck` to deal. */
  deckIndex: number;
  /** The bet to call on this street (the full big blind preflop, even behind a short big blind). */
  currentBet: bigint;
  /** The last full bet or raise increment on this street (starts at the big blind). */
  lastRaiseSize: bigint;
  /** Who made the street's last bet or raise: shows first at showdown. */
  lastAggressor: number | null;
  /** Pots of the chips already gathered from finished streets (and antes); empty once awarded. */
  pots: Pot[];
  /** Rake recorded at the end of the hand (0 before). */
  rake: bigint;
  history: HandEvent[];
  result: HandResult | null;
}

export interface LegalActions {
  handId: string;
  seq: number;
  seat: number;
  actions: ActionType[];
  /** Chips a call adds (capped by the stack: a short call is all-in); 0 when checking is free. */
  toCall: bigint;
  /** Raise-to bounds for bet/raise (the street total); null when neither is legal. */
  minRaiseTo: bigint | null;
  maxRaiseTo: bigint | null;
  currentBet: bigint;
  pots: Pot[];
}

export interface ShownHand {
  seat: number;
  hole: Card[];
  value: HandValue;
}

export interface PotResult {
  amount: bigint;
  rake: bigint;
  eligible: number[];
  winners: { seat: number; amount: bigint }[];
}

export interface HandResult {
  board: Card[];
  /** True when the hand ended with cards compared (not everyone-but-one folded). */
  showdown: boolean;
  pots: PotResult[];
  uncalled: { seat: number; amount: bigint }[];
  rake: bigint;
  stacks: { seat: number; playerId: string; stack: bigint; net: bigint }[];
  shown: ShownHand[];
  /** Seats still in at the end whose cards were not shown (an uncontested winner, auto-mucked losers). */
  mucked: number[];
}

export type HandEvent =
  | {
    type: 'hand_started'; handId: string; button: number; smallBlindSeat: number | null; bigBlindSeat: number;
    smallBlind: bigint; bigBlind: bigint; ante: bigint; seats: { seat: number; playerId: string; stack: bigint }[];
  }
  | { type: 'ante'; seat: number; amount: bigint; allIn: boolean }
  | { type: 'blind'; seat: number; blind: 'small' | 'big'; amount: bigint; allIn: boolean }
  | { type: 'hole_cards'; seat: number; cards: Card[] }
  | {
    type: 'action'; seq: number; seat: number; action: ActionType;
    /** Chips this action added. */ amount: bigint;
    /** The player's street total after it. */ to: bigint;
    allIn: boolean; timeout: boolean;
  }
  /** An uncalled bet (rule 9), or dead money nobody still in the hand matched, back to its owner. */
  | { type: 'uncalled_bet_returned'; seat: number; amount: bigint }
  | { type: 'board'; street: Exclude<Street, 'preflop'>; cards: Card[] }
  | { type: 'show'; seat: number; cards: Card[]; best: Card[]; category: Category; description: string }
  | { type: 'muck'; seat: number }
  | { type: 'pot_awarded'; pot: number; amount: bigint; rake: bigint; winners: { seat: number; amount: bigint }[] }
  | { type: 'hand_ended'; rake: bigint; stacks: { seat: number; stack: bigint }[] };

/** An action as the history records it, enough to replay the hand. */
export interface RecordedAction {
  seat: number;
  type: ActionType;
  amount?: bigint;
  timeout: boolean;
}

export const isRefusal = (value: HandState | Refusal): value is Refusal => 'error' in value;

/** Stacks + bets + pots + rake: the same at every step of a hand (rule 15). */
export function chipsOnTable(state: HandState): bigint {
  let sum = state.rake;
  for (const p of state.players) sum += p.stack + p.bet;
  for (const pot of state.pots) sum += pot.amount;
  return sum;
}

// ---------------------------------------------------------------------------------------------
// Starting a hand

export function startHand(input: StartHandInput): HandState {
  const players = validatedPlayers(input);
  const seats = players.map((p) => p.seat);
  const { smallBlindSeat, bigBlindSeat } = blindSeats(input, seats);
  if (input.deck.length < players.length * 2 + 8) throw new RangeError('the deck is too short for this many players');

  const h: HandState = {
    handId: input.handId,
    seq: 0,
    street: 'preflop',
    status: 'betting',
    toAct: null,
    button: input.button,
    smallBlindSeat,
    bigBlindSeat,
    smallBlind: input.smallBlind,
    bigBlind: input.bigBlind,
    ante: input.ante,
    rakeRule: { ...input.rake },
    players,
    board: [],
    deck: [...input.deck],
    deckIndex: 0,
    currentBet: input.bigBlind,
    lastRaiseSize: input.bigBlind,
    lastAggressor: null,
    pots: [],
    rake: 0n,
    history: [],
    result: null,
  };
  h.history.push({
    type: 'hand_started', handId: h.handId, button: h.button, smallBlindSeat, bigBlindSeat,
    smallBlind: h.smallBlind, bigBlind: h.bigBlind, ante: h.ante,
    seats: players.map((p) => ({ seat: p.seat, playerId: p.playerId, stack: p.stack })),
  });

  const dealingOrder = clockwiseAfter(h, h.button);
  if (h.ante > 0n) {
    for (const p of dealingOrder) {
      const amount = min(h.ante, p.stack);
      p.stack -= amount;
      p.committed += amount;
      h.history.push({ type: 'ante', seat: p.seat, amount, allIn: p.stack === 0n });
    }
  }
  if (smallBlindSeat !== null) postBlind(h, playerAt(h, smallBlindSeat), 'small', h.smallBlind);
  postBlind(h, playerAt(h, bigBlindSeat), 'big', h.bigBlind);

  for (let round = 0; round < 2; round++) {
    for (const p of dealingOrder) p.hole.push(h.deck[h.deckIndex++]!);
  }
  for (const p of dealingOrder) h.history.push({ type: 'hole_cards', seat: p.seat, cards: [...p.hole] });

  h.pots = potsOf(h.players);
  h.toAct = nextToAct(h, bigBlindSeat);
  if (h.toAct === null) endStreet(h);
  return h;
}

function validatedPlayers(input: StartHandInput): PlayerState[] {
  const { smallBlind, bigBlind, ante } = input;
  if (smallBlind < 0n || bigBlind <= 0n || smallBlind >= bigBlind || ante < 0n) {
    throw new RangeError('blinds must satisfy 0 <= smallBlind < bigBlind, ante >= 0');
  }
  const rake = input.rake;
  if (!Number.isFinite(rake.percent) || rake.percent < 0 || rake.percent > 100 || rake.cap < 0n || rake.minPot < 0n) {
    throw new RangeError('rake must have 0 <= percent <= 100, cap >= 0, minPot >= 0');
  }
  const seen = new Set<number>();
  for (const s of input.seats) {
    if (!Number.isInteger(s.seat) || s.seat < 0 || seen.has(s.seat)) throw new RangeError(`bad or repeated seat ${s.seat}`);
    seen.add(s.seat);
  }
  if (!Number.isInteger(input.button) || input.button < 0) throw new RangeError(`bad button seat ${input.button}`);
  const used = new Uint8Array(52);
  for (const card of input.deck) {
    if (!Number.isInteger(card) || card < 0 || card > 51 || used[card] === 1) {
      throw new RangeError('the deck holds a repeated or invalid card');
    }
    used[card] = 1;
  }
  const players = input.seats
    .filter((s) => !s.sittingOut)
    .sort((a, b) => a.seat - b.seat)
    .map((s): PlayerState => {
      if (s.stack <= 0n) throw new RangeError(`seat ${s.seat} is dealt in with no chips`);
      return {
        seat: s.seat, playerId: s.playerId, startingStack: s.stack, stack: s.stack, bet: 0n, committed: 0n,
        hole: [], folded: false, acted: false, actedAtBet: 0n,
      };
    });
  if (players.length < 2) throw new RangeError('a hand needs at least two players dealt in');
  return players;
}

function blindSeats(input: StartHandInput, seats: number[]): { smallBlindSeat: number | null; bigBlindSeat: number } {
  let smallBlindSeat: number | null;
  let bigBlindSeat: number;
  if (input.bigBlindSeat === undefined) {
    if (input.smallBlindSeat !== undefined) throw new RangeError('a small blind seat needs a big blind seat');
    const after = (seat: number) => seats.find((s) => s > seat) ?? seats[0]!;
    smallBlindSeat = seats.length === 2 && seats.includes(input.button) ? input.button : after(input.button);
    bigBlindSeat = after(smallBlindSeat);
  } else {
    bigBlindSeat = input.bigBlindSeat;
    smallBlindSeat = input.smallBlindSeat ?? null;
  }
  if (!seats.includes(bigBlindSeat)) throw new RangeError(`the big blind seat ${bigBlindSeat} is not dealt in`);
  if (smallBlindSeat !== null && (!seats.includes(smallBlindSeat) || smallBlindSeat === bigBlindSeat)) {
    throw new RangeError(`the small blind seat ${smallBlindSeat} is not dealt in or is the big blind`);
  }
  return { smallBlindSeat, bigBlindSeat };
}

function postBlind(h: HandState, p: PlayerState, blind: 'small' | 'big', size: bigint): void {
  const amount = min(size, p.stack);
  p.stack -= amount;
  p.bet += amount;
  p.committed += amount;
  h.history.push({ type: 'blind', seat: p.seat, blind, amount, allIn: p.stack === 0n });
}

// ---------------------------------------------------------------------------------------------
// Acting

export function legalActions(state: HandState): LegalActions | null {
  if (state.status === 'complete' || state.toAct === null) return null;
  const p = playerAt(state, state.toAct);
  const o = optionsOf(state, p);
  const actions: ActionType[] = o.toCall > 0n ? ['fold', 'call'] : ['check'];
  if (o.canRaise) actions.push(state.currentBet === 0n ? 'bet' : 'raise');
  return {
    handId: state.handId, seq: state.seq, seat: p.seat, actions, toCall: o.toCall,
    minRaiseTo: o.canRaise ? o.minRaiseTo : null, maxRaiseTo: o.canRaise ? o.maxRaiseTo : null,
    currentBet: state.currentBet, pots: state.pots,
  };
}

/**
 * Applies one action of the player to act. Refusals (a coded reason, the state untouched):
 * hand_over, stale_sequence (expectedSeq given and not the state's seq, e.g. a resent action),
 * not_your_turn, illegal_action (a type not legal now), illegal_amount (bet/raise outside
 * minRaiseTo..maxRaiseTo, or not a bigint).
 */
export function applyAction(state: HandState, seat: number, action: Action, expectedSeq?: number): HandState | Refusal {
  return act(state, seat, action, expectedSeq, false);
}

/** The turn timer ran out: check when checking is free, otherwise fold. */
export function timeout(state: HandState): HandState | Refusal {
  if (state.status === 'complete' || state.toAct === null) return refuse('hand_over', 'the hand is over');
  const p = playerAt(state, state.toAct);
  return act(state, p.seat, { type: optionsOf(state, p).toCall === 0n ? 'check' : 'fold' }, undefined, true);
}

function act(state: HandState, seat: number, action: Action, expectedSeq: number | undefined, timedOut: boolean): HandState | Refusal {
  if (state.status === 'complete' || state.toAct === null) return refuse('hand_over', 'the hand is over');
  if (expectedSeq !== undefined && expectedSeq !== state.seq) {
    return refuse('stale_sequence', `the action was meant for seq ${expectedSeq}, the hand is at ${state.seq}`);
  }
  if (seat !== state.toAct) return refuse('not_your_turn', `seat ${state.toAct} is to act`);
  const o = optionsOf(state, playerAt(state, seat));
  const type = action.type;
  const aggressive = state.currentBet === 0n ? 'bet' : 'raise';
  const legal = o.toCall > 0n ? type === 'fold' || type === 'call' : type === 'check';
  if (!legal && !(o.canRaise && type === aggressive)) {
    return refuse('illegal_action', `${String(type)} is not legal now (legal: ${legalActions(state)!.actions.join(', ')})`);
  }
  const to = action.amount;
  if (type === aggressive && (typeof to !== 'bigint' || to < o.minRaiseTo || to > o.maxRaiseTo)) {
    return refuse('illegal_amount', `${type} to between ${o.minRaiseTo} and ${o.maxRaiseTo} (the street total)`);
  }

  const h = draft(state);
  const p = playerAt(h, seat);
  const appliedSeq = h.seq++;
  let added = 0n;
  if (type === 'fold') {
    p.folded = true;
  } else if (type === 'call') {
    added = o.toCall;
  } else if (type === aggressive) {
    const raiseTo = to as bigint;
    added = raiseTo - p.bet;
    if (raiseTo > h.currentBet) {
      if (raiseTo - h.currentBet >= h.lastRaiseSize) h.lastRaiseSize = raiseTo - h.currentBet;
      h.currentBet = raiseTo;
      h.lastAggressor = p.seat;
    }
  }
  p.stack -= added;
  p.bet += added;
  p.committed += added;
  p.acted = true;
  p.actedAtBet = h.currentBet;
  h.history.push({
    type: 'action', seq: appliedSeq, seat, action: type, amount: added, to: p.bet,
    allIn: !p.folded && p.stack === 0n, timeout: timedOut,
  });

  h.toAct = nextToAct(h, seat);
  if (h.toAct === null) endStreet(h);
  return h;
}

function refuse(error: RefusalCode, message: string): Refusal {
  return { error, message };
}

function draft(state: HandState): HandState {
  return {
    ...state,
    players: state.players.map((p) => ({ ...p })),
    board: [...state.board],
    history: [...state.history],
  };
}

/** What decides who must act: players still in with chips behind, and the two largest bets. */
interface Survey {
  live: number;
  withChips: number;
  top: PlayerState | null;
  topBet: bigint;
  secondBet: bigint;
}

function survey(h: HandState): Survey {
  const s: Survey = { live: 0, withChips: 0, top: null, topBet: 0n, secondBet: 0n };
  for (const p of h.players) {
    if (!p.folded) {
      s.live++;
      if (p.stack > 0n) s.withChips++;
    }
    if (s.top === null || p.bet > s.topBet) {
      if (s.top !== null) s.secondBet = s.topBet;
      s.top = p;
      s.topBet = p.bet;
    } else if (p.bet > s.secondBet) {
      s.secondBet = p.bet;
    }
  }
  return s;
}

/** Other players still in the hand with chips behind: someone who could still put chips in. */
function opponentsWithChips(s: Survey, p: PlayerState): boolean {
  return s.withChips - (!p.folded && p.stack > 0n ? 1 : 0) > 0;
}

/**
 * Someone a bet or raise could be aimed at: another player still in who can put in more than the
 * street's bet. Anyone else (all-in, or holding no more than the bet to call) could never match
 * the excess, so it would only come back as an uncalled bet.
 */
function someoneCanAnswer(h: HandState, p: PlayerState): boolean {
  return h.players.some((q) => q !== p && !q.folded && q.bet + q.stack > h.currentBet);
}

/**
 * The bet this player must match. It is the street's bet, except when nobody else in the hand has
 * chips behind: then nothing above the largest other bet could ever be called, and that excess
 * would go straight back as an uncalled bet, so the call stops there (a short all-in big blind
 * facing the small blind alone, for instance).
 */
function betToMatch(h: HandState, s: Survey, p: PlayerState): bigint {
  if (opponentsWithChips(s, p)) return h.currentBet;
  return min(h.currentBet, s.top === p ? s.secondBet : s.topBet);
}

interface Options {
  toCall: bigint;
  canRaise: boolean;
  minRaiseTo: bigint;
  maxRaiseTo: bigint;
}

/**
 * Rules 6–8 for the player to act. A raise needs chips beyond the call, an opponent who could
 * answer it (someoneCanAnswer), and an open betting round: either this player has not acted on this street, or the bet
 * has grown by at least one full raise since they did (one full raise, or several short all-ins
 * adding up to one). Below a full raise only all-in is left: minRaiseTo = maxRaiseTo = all-in.
 */
function optionsOf(h: HandState, p: PlayerState): Options {
  const s = survey(h);
  const owed = betToMatch(h, s, p) - p.bet;
  const toCall = owed > 0n ? min(owed, p.stack) : 0n;
  const canRaise = p.stack > toCall && someoneCanAnswer(h, p) && (!p.acted || h.currentBet - p.actedAtBet >= h.lastRaiseSize);
  const maxRaiseTo = p.bet + p.stack;
  return { toCall, canRaise, minRaiseTo: min(h.currentBet + max(h.lastRaiseSize, h.bigBlind), maxRaiseTo), maxRaiseTo };
}

function needsToAct(h: HandState, s: Survey, p: PlayerState): boolean {
  if (p.folded || p.stack === 0n) return false;
  return p.bet < betToMatch(h, s, p) || (!p.acted && someoneCanAnswer(h, p));
}

/** The next player clockwise after `afterSeat` who must act, or null: the street's betting is over. */
function nextToAct(h: HandState, afterSeat: number): number | null {
  const s = survey(h);
  if (s.live < 2) return null;
  const n = h.players.length;
  const start = firstIndexAfter(h, afterSeat);
  for (let k = 0; k < n; k++) {
    const p = h.players[(start + k) % n]!;
    if (needsToAct(h, s, p)) return p.seat;
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Between streets and the end of the hand

function endStreet(h: HandState): void {
  returnUncalledBet(h);
  for (const p of h.players) p.bet = 0n;
  returnUnmatchedChips(h);
  h.pots = potsOf(h.players);

  const live = livePlayers(h);
  if (live.length === 1) return finish(h, false);
  if (h.street === 'river') return finish(h, true);
  if (live.filter((p) => p.stack > 0n).length <= 1) {
    while (h.board.length < 5) dealStreet(h);
    return finish(h, true);
  }
  dealStreet(h);
  h.currentBet = 0n;
  h.lastRaiseSize = h.bigBlind;
  h.lastAggressor = null;
  for (const p of h.players) {
    p.acted = false;
    p.actedAtBet = 0n;
  }
  h.toAct = nextToAct(h, h.button);
}

/** Rule 9: the part of the street's top bet that nobody matched goes back to its owner. */
function returnUncalledBet(h: HandState): void {
  let top: PlayerState | null = null;
  let second = 0n;
  for (const p of h.players) {
    if (top === null || p.bet > top.bet) {
      if (top !== null) second = max(second, top.bet);
      top = p;
    } else {
      second = max(second, p.bet);
    }
  }
  if (top === null || top.bet <= second) return;
  const amount = top.bet - second;
  top.bet -= amount;
  giveBack(h, top, amount);
}

/**
 * The same rule for the whole hand: chips nobody still in the hand could win go back. It only
 * bites on dead money — antes, or a blind above a big blind all-in on its ante — when everyone
 * else folds to a player all-in for less: each folder gets back what exceeds the most any live
 * player put in, and the top live player gets back what exceeds everyone else's total.
 */
function returnUnmatchedChips(h: HandState): void {
  let topLive: PlayerState | null = null;
  for (const p of h.players) if (!p.folded && (topLive === null || p.committed > topLive.committed)) topLive = p;
  for (const p of h.players) {
    if (p.folded && p.committed > topLive!.committed) giveBack(h, p, p.committed - topLive!.committed);
  }
  let others = 0n;
  for (const p of h.players) if (p !== topLive && p.committed > others) others = p.committed;
  if (topLive!.committed > others) giveBack(h, topLive!, topLive!.committed - others);
}

function giveBack(h: HandState, p: PlayerState, amount: bigint): void {
  p.committed -= amount;
  p.stack += amount;
  h.history.push({ type: 'uncalled_bet_returned', seat: p.seat, amount });
}

function dealStreet(h: HandState): void {
  h.deckIndex++; // burn
  const count = h.board.length === 0 ? 3 : 1;
  const cards = h.deck.slice(h.deckIndex, h.deckIndex + count) as Card[];
  h.deckIndex += count;
  h.board.push(...cards);
  h.street = h.board.length === 3 ? 'flop' : h.board.length === 4 ? 'turn' : 'river';
  h.history.push({ type: 'board', street: h.street, cards });
}

/**
 * Rule 10: pots layered by what each player put in. Each all-in level of a player still in the
 * hand closes a pot; folded chips stay in the pots they reached; only players still in and level
 * with a pot can win it. Chips still in front of players (this street's bets) are not in a pot yet.
 */
function potsOf(players: PlayerState[]): Pot[] {
  const levels: bigint[] = [];
  let top = 0n;
  for (const p of players) {
    if (p.folded) continue;
    const gathered = p.committed - p.bet;
    if (gathered > top) top = gathered;
    if (p.stack === 0n && p.bet === 0n && !levels.includes(gathered)) levels.push(gathered);
  }
  if (!levels.includes(top)) levels.push(top);
  levels.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

  const pots: Pot[] = [];
  let floor = 0n;
  let total = 0n;
  for (const level of levels) {
    if (level <= floor) continue;
    let amount = 0n;
    const eligible: number[] = [];
    for (const p of players) {
      const gathered = p.committed - p.bet;
      if (gathered > floor) amount += min(gathered, level) - floor;
      if (!p.folded && gathered >= level) eligible.push(p.seat);
    }
    pots.push({ amount, eligible });
    total += amount;
    floor = level;
  }
  let gatheredTotal = 0n;
  for (const p of players) gatheredTotal += p.committed - p.bet;
  // After uncalled bets go back, no folded player ever put in more than every live player.
  if (total !== gatheredTotal) throw new Error('engine invariant broken: chips above every live player');
  return pots;
}

function finish(h: HandState, contested: boolean): void {
  const pots = h.pots;
  let total = 0n;
  for (const pot of pots) total += pot.amount;
  const rake = rakeOf(total, h.rakeRule, h.board.length >= 3);
  const potRakes = pots.map((pot) => (total === 0n ? 0n : (rake * pot.amount) / total));
  let leftover = rake - potRakes.reduce((a, b) => a + b, 0n);
  for (let i = 0; leftover > 0n; i++, leftover--) potRakes[i]! += 1n;

  const live = livePlayers(h);
  // scores decide the pots (the fast path); best five and description only for hands shown
  const values = new Map<number, number>();
  const shown: ShownHand[] = [];
  const mucked: number[] = [];
  if (contested) {
    for (const p of live) values.set(p.seat, scoreHand([...p.hole, ...h.board]));
    const showing = showdownShows(h, live, values, pots);
    for (const p of showdownOrder(h, live)) {
      if (showing.has(p.seat)) {
        const value = evaluate([...p.hole, ...h.board]);
        shown.push({ seat: p.seat, hole: [...p.hole], value });
        h.history.push({
          type: 'show', seat: p.seat, cards: [...p.hole], best: value.best, category: value.category, description: value.description,
        });
      } else {
        mucked.push(p.seat);
        h.history.push({ type: 'muck', seat: p.seat });
      }
    }
  } else {
    mucked.push(live[0]!.seat);
    h.history.push({ type: 'muck', seat: live[0]!.seat });
  }

  const potResults: PotResult[] = pots.map((pot, index) => {
    const net = pot.amount - potRakes[index]!;
    const contenders = pot.eligible.map((seat) => playerAt(h, seat));
    let best = -Infinity;
    for (const p of contenders) best = Math.max(best, contested ? values.get(p.seat)! : 0);
    const winners = clockwiseAfter(h, h.button).filter((p) => contenders.includes(p) && (!contested || values.get(p.seat)! === best));
    const share = net / BigInt(winners.length);
    let oddChips = net % BigInt(winners.length);
    const paid = winners.map((p) => {
      const amount = share + (oddChips > 0n ? 1n : 0n);
      if (oddChips > 0n) oddChips--;
      p.stack += amount;
      return { seat: p.seat, amount };
    });
    h.history.push({ type: 'pot_awarded', pot: index, amount: pot.amount, rake: potRakes[index]!, winners: paid });
    return { amount: pot.amount, rake: potRakes[index]!, eligible: pot.eligible, winners: paid };
  });

  h.pots = [];
  h.rake = rake;
  h.status = 'complete';
  h.toAct = null;
  h.history.push({ type: 'hand_ended', rake, stacks: h.players.map((p) => ({ seat: p.seat, stack: p.stack })) });
  h.result = {
    board: [...h.board],
    showdown: contested,
    pots: potResults,
    uncalled: h.history.flatMap((e) => (e.type === 'uncalled_bet_returned' ? [{ seat: e.seat, amount: e.amount }] : [])),
    rake,
    stacks: h.players.map((p) => ({ seat: p.seat, playerId: p.playerId, stack: p.stack, net: p.stack - p.startingStack })),
    shown,
    mucked,
  };
}

/**
 * Who shows (docs/dealer.md, "Showing and mucking"): after an all-in run-out everyone; otherwise
 * all-in players, then the others in showdown order, each showing only a hand that wins or ties
 * against the hands already shown for some contested pot it can win (the first to show always
 * shows). Everyone else mucks face down.
 */
function showdownShows(h: HandState, live: PlayerState[], values: Map<number, number>, pots: Pot[]): Set<number> {
  const ranOut = live.filter((p) => p.stack > 0n).length <= 1;
  if (ranOut) return new Set(live.map((p) => p.seat));
  const showing = new Set<number>(live.filter((p) => p.stack === 0n).map((p) => p.seat));
  for (const p of showdownOrder(h, live)) {
    if (showing.has(p.seat)) continue;
    const score = values.get(p.seat)!;
    const contends = showing.size === 0 || pots.some((pot) => {
      if (pot.eligible.length < 2 || !pot.eligible.includes(p.seat)) return false;
      const rivals = pot.eligible.filter((seat) => showing.has(seat));
      return rivals.every((seat) => values.get(seat)! <= score);
    });
    if (contends) showing.add(p.seat);
  }
  return showing;
}

/**
 * The last bettor or raiser of the final betting round first (the river, or the round that ended
 * in an all-in), else the first player left of the button; then clockwise.
 */
function showdownOrder(h: HandState, live: PlayerState[]): PlayerState[] {
  const aggressor = h.lastAggressor !== null && live.some((p) => p.seat === h.lastAggressor) ? h.lastAggressor : null;
  const ordered = clockwiseAfter(h, h.button).filter((p) => live.includes(p));
  if (aggressor === null) return ordered;
  const at = ordered.findIndex((p) => p.seat === aggressor);
  return [...ordered.slice(at), ...ordered.slice(0, at)];
}

/**
 * Rule 13: rake = pot × percent / 100 rounded down, only when the pot reaches minPot and (if
 * required) a flop was dealt, never above cap. The percent is read as its exact decimal (2.5 % is
 * 25/1000), so no float rounding creeps into chips.
 */
export function rakeOf(pot: bigint, rule: RakeRule, flopDealt: boolean): bigint {
  if (pot === 0n || pot < rule.minPot || (rule.requiresFlop && !flopDealt)) return 0n;
  const { numerator, denominator } = decimalFraction(rule.percent);
  return min((pot * numerator) / (100n * denominator), rule.cap);
}

function decimalFraction(value: number): { numerator: bigint; denominator: bigint } {
  const [mantissa = '0', exponentText = '0'] = String(value).split('e');
  const [whole = '0', fraction = ''] = mantissa.split('.');
  const exponent = Number(exponentText) - fraction.length;
  const digits = BigInt(whole + fraction);
  return exponent >= 0
    ? { numerator: digits * 10n ** BigInt(exponent), denominator: 1n }
    : { numerator: digits, denominator: 10n ** BigInt(-exponent) };
}

// ---------------------------------------------------------------------------------------------
// Replay

/** The actions a history holds, in order: with the same start, replay() gives the same history. */
export function actionsOf(history: readonly HandEvent[]): RecordedAction[] {
  return history.flatMap((e): RecordedAction[] => {
    if (e.type !== 'action') return [];
    return [{ seat: e.seat, type: e.action, timeout: e.timeout, ...(e.action === 'bet' || e.action === 'raise' ? { amount: e.to } : {}) }];
  });
}

/** Starts the hand and applies the recorded actions; throws if one of them is refused. */
export function replay(input: StartHandInput, actions: readonly RecordedAction[]): HandState {
  let state = startHand(input);
  for (const a of actions) {
    const next = a.timeout ? timeout(state) : applyAction(state, a.seat, { type: a.type, amount: a.amount });
    if (isRefusal(next)) throw new Error(`replay refused ${a.type} by seat ${a.seat}: ${next.error}`);
    state = next;
  }
  return state;
}

// ---------------------------------------------------------------------------------------------
// Small helpers

function playerAt(h: HandState, seat: number): PlayerState {
  const p = h.players.find((q) => q.seat === seat);
  if (!p) throw new RangeError(`seat ${seat} is not in this hand`);
  return p;
}

function livePlayers(h: HandState): PlayerState[] {
  return h.players.filter((p) => !p.folded);
}

/** The players in clockwise order starting with the first seat after `seat` (which comes last). */
function clockwiseAfter(h: HandState, seat: number): PlayerState[] {
  const start = firstIndexAfter(h, seat);
  if (start === 0) return h.players.slice();
  return [...h.players.slice(start), ...h.players.slice(0, start)];
}

/** The index in `players` of the first seat clockwise after `seat`. */
function firstIndexAfter(h: HandState, seat: number): number {
  const start = h.players.findIndex((p) => p.seat > seat);
  return start < 0 ? 0 : start;
}

const min = (a: bigint, b: bigint) => (a < b ? a : b);
const max = (a: bigint, b: bigint) => (a > b ? a : b);
