// The hold'em hand evaluator: the best five of five, six or seven cards. Pure: no I/O, no clock.
//
// A score numbers the 7,462 classes of five-card hands from the weakest (1: 7-5-4-3-2 in mixed
// suits) to the strongest (7,462: a royal flush); higher wins, equal scores tie. It is the classic
// Cactus Kev order turned upside down, so an independent evaluator can be checked hand for hand.
//
// How a score is found with one add per card and two table reads (the showdown and equity
// simulations call the seven-card path millions of times a second):
// - every card adds a suit nibble, 1 << 4 * suit; adding 3 to each nibble sets its top bit only for
//   a suit with five or more cards, so one add and one mask find a flush and its suit;
// - with a flush, the 13-bit rank mask of that suit indexes FLUSH_SCORE: the best straight
//   flush or flush among any 5 to 7 ranks (the wheel A-2-3-4-5 included). Five suited cards out of
//   at most seven leave no room for a full house or quads, so nothing else needs comparing;
// - otherwise every card adds a rank key. The keys (from Kenneth Shackleton's SKPokerEval) give
//   every multiset of 5, 6 or 7 ranks its own sum; a base per card count keeps the three sizes
//   apart, and a perfect hash (hash and displace) built at load maps each sum to the best hand of
//   those ranks: 73,775 sums into 131,072 slots, 320 KB with the displacements, which stay in cache.
import {
  CATEGORIES, cardToString, makeCard, rankOf, suitOf, type Card, type Category, type HandValue,
} from './cards.ts';

const HIGH_CARD = 0;
const PAIR = 1;
const TWO_PAIR = 2;
const THREE_OF_A_KIND = 3;
const STRAIGHT = 4;
const FLUSH = 5;
const FULL_HOUSE = 6;
const FOUR_OF_A_KIND = 7;
const STRAIGHT_FLUSH = 8;

const RANK_KEYS = [0, 1, 5, 22, 98, 453, 2031, 8698, 22854, 83661, 262349, 636345, 1479181];
/** Added to the rank-key sum of 5, 6 and 7 cards: the largest sums are 6.6M, 7.2M and 7.9M. */
const BASE_5 = 0;
const BASE_6 = 1 << 23;
const BASE_7 = 1 << 24;
/** The perfect hash: a key's bucket picks a displacement that is XORed into the key's slot. */
const SLOT_BITS = 17; // 131,072 slots for 73,775 keys
const BUCKET_BITS = 14;
const SLOT_MULTIPLIER = 0x85ebca6b | 0;
const BUCKET_MULTIPLIER = 0x9e3779b1 | 0;

// Bound once: inside a vm context (jest's) every lookup of the global Math is slow.
const { imul, clz32, max } = Math;

const RANK_KEY = Int32Array.from({ length: 52 }, (_, card) => RANK_KEYS[rankOf(card)]!);
const SUIT_NIBBLE = Int32Array.from({ length: 52 }, (_, card) => 1 << (suitOf(card) << 2));
/** Nibbles of 5+ cards reach 8 when 3 is added: bit 3 (clubs), 7, 11 or 15 (spades). */
const FIVE_OF_A_SUIT = 0x3333;
const SUIT_TOP_BITS = 0x8888;

/** Score → category index, and score → the five ranks by significance, four bits each. */
const CATEGORY_OF = new Uint8Array(7463);
const RANKS_OF = new Int32Array(7463);
/** 13-bit rank mask of the flush suit → best straight flush or flush (0 under five ranks). */
const FLUSH_SCORE = new Uint16Array(1 << 13);
const DISPLACEMENTS = new Int32Array(1 << BUCKET_BITS);
const SCORES = new Uint16Array(1 << SLOT_BITS);

buildTables();

/** The score of seven cards, unchecked: the caller guarantees seven distinct cards 0..51. */
export function scoreSeven(c0: Card, c1: Card, c2: Card, c3: Card, c4: Card, c5: Card, c6: Card): number {
  const flush = (SUIT_NIBBLE[c0]! + SUIT_NIBBLE[c1]! + SUIT_NIBBLE[c2]! + SUIT_NIBBLE[c3]! + SUIT_NIBBLE[c4]!
    + SUIT_NIBBLE[c5]! + SUIT_NIBBLE[c6]! + FIVE_OF_A_SUIT) & SUIT_TOP_BITS;
  if (flush !== 0) {
    const s = flushSuit(flush);
    return FLUSH_SCORE[inSuit(c0, s) | inSuit(c1, s) | inSuit(c2, s) | inSuit(c3, s) | inSuit(c4, s) | inSuit(c5, s) | inSuit(c6, s)]!;
  }
  const key = BASE_7 + RANK_KEY[c0]! + RANK_KEY[c1]! + RANK_KEY[c2]! + RANK_KEY[c3]! + RANK_KEY[c4]! + RANK_KEY[c5]! + RANK_KEY[c6]!;
  return SCORES[slotOf(key)]!;
}

/** The score of six cards, unchecked. */
export function scoreSix(c0: Card, c1: Card, c2: Card, c3: Card, c4: Card, c5: Card): number {
  const flush = (SUIT_NIBBLE[c0]! + SUIT_NIBBLE[c1]! + SUIT_NIBBLE[c2]! + SUIT_NIBBLE[c3]! + SUIT_NIBBLE[c4]!
    + SUIT_NIBBLE[c5]! + FIVE_OF_A_SUIT) & SUIT_TOP_BITS;
  if (flush !== 0) {
    const s = flushSuit(flush);
    return FLUSH_SCORE[inSuit(c0, s) | inSuit(c1, s) | inSuit(c2, s) | inSuit(c3, s) | inSuit(c4, s) | inSuit(c5, s)]!;
  }
  const key = BASE_6 + RANK_KEY[c0]! + RANK_KEY[c1]! + RANK_KEY[c2]! + RANK_KEY[c3]! + RANK_KEY[c4]! + RANK_KEY[c5]!;
  return SCORES[slotOf(key)]!;
}

/** The score of five cards, unchecked. */
export function scoreFive(c0: Card, c1: Card, c2: Card, c3: Card, c4: Card): number {
  const flush = (SUIT_NIBBLE[c0]! + SUIT_NIBBLE[c1]! + SUIT_NIBBLE[c2]! + SUIT_NIBBLE[c3]! + SUIT_NIBBLE[c4]!
    + FIVE_OF_A_SUIT) & SUIT_TOP_BITS;
  if (flush !== 0) return FLUSH_SCORE[(1 << (c0 >> 2)) | (1 << (c1 >> 2)) | (1 << (c2 >> 2)) | (1 << (c3 >> 2)) | (1 << (c4 >> 2))]!;
  const key = BASE_5 + RANK_KEY[c0]! + RANK_KEY[c1]! + RANK_KEY[c2]! + RANK_KEY[c3]! + RANK_KEY[c4]!;
  return SCORES[slotOf(key)]!;
}

function slotOf(key: number) {
  return (imul(key, SLOT_MULTIPLIER) >>> (32 - SLOT_BITS)) ^ DISPLACEMENTS[imul(key, BUCKET_MULTIPLIER) >>> (32 - BUCKET_BITS)]!;
}

function flushSuit(topBits: number) {
  return (31 - clz32(topBits)) >> 2;
}

function inSuit(card: Card, suit: number) {
  return (card & 3) === suit ? 1 << (card >> 2) : 0;
}

/** The score of 5, 6 or 7 distinct cards; throws RangeError on anything else. */
export function scoreHand(cards: readonly Card[]): number {
  checkCards(cards);
  const [c0, c1, c2, c3, c4, c5, c6] = cards as [Card, Card, Card, Card, Card, Card?, Card?];
  if (c5 === undefined) return scoreFive(c0, c1, c2, c3, c4);
  if (c6 === undefined) return scoreSix(c0, c1, c2, c3, c4, c5);
  return scoreSeven(c0, c1, c2, c3, c4, c5, c6);
}

/** The category of a score from any of the score functions. */
export function categoryOf(score: number): Category {
  if (!((score | 0) === score && score >= 1 && score <= 7462)) throw new RangeError(`not a hand score: ${score}`);
  return CATEGORIES[CATEGORY_OF[score]!]!;
}

/** The best five of 5, 6 or 7 distinct cards, with its score and a description. */
export function evaluate(cards: readonly Card[]): HandValue {
  const score = scoreHand(cards);
  const category = CATEGORY_OF[score]!;
  const ranks = ranksOf(score);
  return { category: CATEGORIES[category]!, score, best: bestFive(cards, category, ranks), description: describe(category, ranks) };
}

function checkCards(cards: readonly Card[]) {
  if (!Array.isArray(cards) || cards.length < 5 || cards.length > 7) {
    throw new RangeError(`a hand is 5, 6 or 7 cards, not ${Array.isArray(cards) ? cards.length : typeof cards}`);
  }
  let low = 0; // cards 0..25 as bits, then 26..51
  let high = 0;
  for (const card of cards) {
    if (!Number.isInteger(card) || card < 0 || card > 51) throw new RangeError(`not a card: ${String(card)}`);
    const bit = 1 << (card % 26);
    const seen = card < 26 ? low : high;
    if (seen & bit) throw new RangeError(`duplicate card: ${cardToString(card)}`);
    if (card < 26) low |= bit;
    else high |= bit;
  }
}

function ranksOf(score: number): number[] {
  const packed = RANKS_OF[score]!;
  return [16, 12, 8, 4, 0].map((shift) => (packed >> shift) & 15);
}

/** The cards behind the ranks; where a rank has spare cards, the highest suit is taken. */
function bestFive(cards: readonly Card[], category: number, ranks: number[]): Card[] {
  if (category === FLUSH || category === STRAIGHT_FLUSH) {
    const perSuit = [0, 0, 0, 0];
    for (const card of cards) perSuit[suitOf(card)]!++;
    const suit = perSuit.findIndex((n) => n >= 5);
    return ranks.map((rank) => makeCard(rank, suit));
  }
  const left = [...cards].sort((a, b) => b - a);
  return ranks.map((rank) => left.splice(left.findIndex((card) => rankOf(card) === rank), 1)[0]!);
}

const NAMES = ['two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'jack', 'queen', 'king', 'ace'];
const PLURALS = ['twos', 'threes', 'fours', 'fives', 'sixes', 'sevens', 'eights', 'nines', 'tens', 'jacks', 'queens', 'kings', 'aces'];

function describe(category: number, [r0, r1, r2, r3, r4]: number[]): string {
  const name = (r: number | undefined) => NAMES[r!]!;
  const plural = (r: number | undefined) => PLURALS[r!]!;
  const kickers = (rs: (number | undefined)[]) => {
    const names = rs.map(name);
    const list = names.length === 1 ? names[0]! : `${names.slice(0, -1).join(', ')} and ${names.at(-1)!}`;
    return `${list} kicker${names.length > 1 ? 's' : ''}`;
  };
  switch (category) {
    case STRAIGHT_FLUSH: return r0 === 12 ? 'Royal flush' : `Straight flush, ${name(r0)} high`;
    case FOUR_OF_A_KIND: return `Four of a kind, ${plural(r0)}, ${kickers([r4])}`;
    case FULL_HOUSE: return `Full house, ${plural(r0)} full of ${plural(r3)}`;
    case FLUSH: return `Flush, ${name(r0)} high`;
    case STRAIGHT: return `Straight, ${name(r0)} high`;
    case THREE_OF_A_KIND: return `Three of a kind, ${plural(r0)}, ${kickers([r3, r4])}`;
    case TWO_PAIR: return `Two pair, ${plural(r0)} and ${plural(r2)}, ${kickers([r4])}`;
    case PAIR: return `Pair of ${plural(r0)}, ${kickers([r2, r3, r4])}`;
    default: {
      const high = name(r0);
      return `${high[0]!.toUpperCase()}${high.slice(1)} high, ${kickers([r1, r2, r3, r4])}`;
    }
  }
}

// --- the tables, built once at load ---

/** Category and ranks by significance (the trips before the pair, the wheel's ace last). */
function fiveCardClass(counts: ArrayLike<number>, suited: boolean): { category: number; ranks: number[] } {
  const ranks: number[] = [];
  for (let n = 4; n >= 1; n--) for (let r = 12; r >= 0; r--) if (counts[r] === n) for (let i = 0; i < n; i++) ranks.push(r);
  const first = counts[ranks[0]!]!;
  const second = counts[ranks[first]!] ?? 0;
  if (first === 1) {
    const top = straightTop(ranks.reduce((mask, r) => mask | (1 << r), 0));
    if (top >= 0) {
      const run = [top, top - 1, top - 2, top - 3, (top + 9) % 13]; // the wheel's fifth card is the ace
      return { category: suited ? STRAIGHT_FLUSH : STRAIGHT, ranks: run };
    }
    return { category: suited ? FLUSH : HIGH_CARD, ranks };
  }
  if (first === 4) return { category: FOUR_OF_A_KIND, ranks };
  if (first === 3) return { category: second === 2 ? FULL_HOUSE : THREE_OF_A_KIND, ranks };
  return { category: second === 2 ? TWO_PAIR : PAIR, ranks };
}

/** Orders classes: category first, then the ranks by significance. */
function strengthOf({ category, ranks }: { category: number; ranks: number[] }) {
  return ranks.reduce((s, r) => s * 16 + r, category);
}

/** The top rank of the highest straight in a 13-bit rank mask (3 for the wheel), or -1. */
function straightTop(mask: number): number {
  const withLowAce = (mask << 1) | ((mask >> 12) & 1); // bit 0 is the ace below the deuce
  const runs = withLowAce & (withLowAce >> 1) & (withLowAce >> 2) & (withLowAce >> 3) & (withLowAce >> 4);
  return runs === 0 ? -1 : 31 - clz32(runs) + 3;
}

/**
 * Every multiset of `size` ranks with at most four of each, as its rank-key sum and the mask of the
 * ranks it holds; `visit` also sees the counts.
 */
function rankMultisets(size: number, visit?: (counts: Int32Array, sum: number) => void) {
  const sums: number[] = [];
  const present: number[] = [];
  const counts = new Int32Array(13);
  const walk = (rank: number, left: number, sum: number, mask: number) => {
    if (rank === 13) {
      if (left !== 0) return;
      sums.push(sum);
      present.push(mask);
      visit?.(counts, sum);
      return;
    }
    for (let n = 0; n <= 4 && n <= left; n++) {
      counts[rank] = n;
      walk(rank + 1, left - n, sum + n * RANK_KEYS[rank]!, n > 0 ? mask | (1 << rank) : mask);
    }
    counts[rank] = 0;
  };
  walk(0, size, 0, 0);
  return { sums, present };
}

function buildTables() {
  // 1. The 7,462 classes, numbered by strength.
  const strengths = new Set<number>();
  const fiveStrengths: number[] = [];
  const five = rankMultisets(5, (counts) => {
    const strength = strengthOf(fiveCardClass(counts, false));
    fiveStrengths.push(strength);
    strengths.add(strength);
  });
  const flushStrengths = new Map<number, number>();
  const single = new Int32Array(13);
  for (let mask = 0; mask < 1 << 13; mask++) {
    if (popcount(mask) !== 5) continue;
    for (let r = 0; r < 13; r++) single[r] = (mask >> r) & 1;
    const strength = strengthOf(fiveCardClass(single, true));
    flushStrengths.set(mask, strength);
    strengths.add(strength);
  }
  const scoreOf = new Map<number, number>();
  [...strengths].sort((a, b) => a - b).forEach((strength, i) => {
    scoreOf.set(strength, i + 1);
    const packed = strength % (1 << 20);
    CATEGORY_OF[i + 1] = (strength - packed) / (1 << 20);
    RANKS_OF[i + 1] = packed;
  });
  if (scoreOf.size !== 7462) throw new Error(`expected 7,462 hand classes, built ${scoreOf.size}`);

  // 2. Flushes: five ranks score their class; six or seven the best five (smaller masks come first).
  for (let mask = 0; mask < 1 << 13; mask++) {
    const size = popcount(mask);
    if (size === 5) FLUSH_SCORE[mask] = scoreOf.get(flushStrengths.get(mask)!)!;
    else if (size > 5) {
      for (let m = mask; m !== 0; m &= m - 1) FLUSH_SCORE[mask] = max(FLUSH_SCORE[mask]!, FLUSH_SCORE[mask & ~(m & -m)]!);
    }
  }

  // 3. Rank multisets: place every key, then five ranks score their class and six or seven the
  //    best left after dropping one card.
  const six = rankMultisets(6);
  const seven = rankMultisets(7);
  placeKeys([five.sums.map((s) => BASE_5 + s), six.sums.map((s) => BASE_6 + s), seven.sums.map((s) => BASE_7 + s)].flat());
  five.sums.forEach((sum, i) => {
    SCORES[slotOf(BASE_5 + sum)] = scoreOf.get(fiveStrengths[i]!)!;
  });
  for (const [{ sums, present }, base, smaller] of [[six, BASE_6, BASE_5], [seven, BASE_7, BASE_6]] as const) {
    for (let i = 0; i < sums.length; i++) {
      let best = 0;
      for (let m = present[i]!; m !== 0; m &= m - 1) {
        best = max(best, SCORES[slotOf(smaller + sums[i]! - RANK_KEYS[31 - clz32(m & -m)]!)]!);
      }
      SCORES[slotOf(base + sums[i]!)] = best;
    }
  }
}

function popcount(x: number): number {
  let n = 0;
  for (; x !== 0; x &= x - 1) n++;
  return n;
}

/**
 * Hash and displace (CHD): buckets are placed fullest first, each with the lowest displacement
 * that sends all its keys to free slots. At this load (56%) that takes about 100,000 tries.
 */
function placeKeys(keys: number[]) {
  const buckets = Array.from({ length: 1 << BUCKET_BITS }, () => [] as number[]);
  for (const key of keys) buckets[imul(key, BUCKET_MULTIPLIER) >>> (32 - BUCKET_BITS)]!.push(imul(key, SLOT_MULTIPLIER) >>> (32 - SLOT_BITS));
  const taken = new Uint8Array(1 << SLOT_BITS);
  const order = [...buckets.keys()].sort((a, b) => buckets[b]!.length - buckets[a]!.length || a - b);
  for (const bucket of order) {
    const bases = buckets[bucket]!;
    let d = 0;
    for (let j = 0; j < bases.length; j++) {
      if (taken[bases[j]! ^ d] === 1) {
        if (++d === 1 << SLOT_BITS) throw new Error(`no displacement places the rank keys of bucket ${bucket}`);
        j = -1;
      }
    }
    DISPLACEMENTS[bucket] = d;
    for (const base of bases) {
      // every slot was free a moment ago: a taken one is a second key of this bucket on the same base
      if (taken[base ^ d] === 1) throw new Error(`two rank keys share a slot in bucket ${bucket}`);
      taken[base ^ d] = 1;
    }
  }
}
