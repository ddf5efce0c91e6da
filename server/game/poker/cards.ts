// Cards, as the dealer and the evaluator share them. Pure: no I/O, no clock, no randomness.
//
// A card is an integer 0..51: rank = card >> 2 (0 = deuce ... 12 = ace), suit = card & 3
// (0 = clubs, 1 = diamonds, 2 = hearts, 3 = spades). On the wire a card is two characters, rank
// then suit: `As`, `Td`, `2c`.

export type Card = number;

export const RANKS = '23456789TJQKA';
export const SUITS = 'cdhs';

export const rankOf = (card: Card) => card >> 2;
export const suitOf = (card: Card) => card & 3;
export const makeCard = (rank: number, suit: number): Card => (rank << 2) | suit;

export function cardToString(card: Card): string {
  if (!Number.isInteger(card) || card < 0 || card > 51) throw new RangeError(`not a card: ${card}`);
  return RANKS[rankOf(card)]! + SUITS[suitOf(card)]!;
}

export function parseCard(text: string): Card {
  const rank = RANKS.indexOf(text[0] ?? '');
  const suit = SUITS.indexOf(text[1] ?? '');
  if (text.length !== 2 || rank < 0 || suit < 0) throw new RangeError(`not a card: ${text}`);
  return makeCard(rank, suit);
}

/** `'As Kd 7c'` or `'AsKd7c'` → cards. */
export function parseCards(text: string): Card[] {
  const compact = text.replace(/\s+/g, '');
  if (compact.length % 2 !== 0) throw new RangeError(`not a card list: ${text}`);
  const cards: Card[] = [];
  for (let i = 0; i < compact.length; i += 2) cards.push(parseCard(compact.slice(i, i + 2)));
  return cards;
}

/** Hand categories, weakest first; `HandValue.category` is one of these. */
export const CATEGORIES = [
  'high_card', 'pair', 'two_pair', 'three_of_a_kind', 'straight', 'flush', 'full_house', 'four_of_a_kind', 'straight_flush',
] as const;
export type Category = (typeof CATEGORIES)[number];

/** What the evaluator answers for the best five of five to seven cards. */
export interface HandValue {
  category: Category;
  /** Higher is better; equal scores tie. Comparable across any two evaluated hands. */
  score: number;
  /** The five cards that make the hand, most significant first (e.g. the trips, then the pair). */
  best: Card[];
  /** A human description, e.g. `Full house, kings full of sevens`, `Flush, ace high`. */
  description: string;
}
