// Seeded random hands and the differential check against an independent evaluator (the `phe`
// package, a devDependency), shared by test/game/poker/poker-evaluator.test.ts, scripts/verify-evaluator.ts
// and bench/dealer.ts.
import { createRequire } from 'node:module';
import { CATEGORIES, type Category } from '../../server/game/poker/cards.ts';
import { categoryOf, scoreSeven } from '../../server/game/poker/evaluator.ts';

/**
 * phe numbers cards like we do (rank << 2 | suit, deuce = 0) with its suits in another order, which
 * no hand value depends on. Its values run the other way: 1 is a royal flush, 7,462 the worst.
 */
export interface Phe {
  evaluate7(c0: number, c1: number, c2: number, c3: number, c4: number, c5: number, c6: number): number;
  /** 0 = straight flush ... 8 = high card */
  handRank(value: number): number;
}

export function loadPhe(): Phe {
  const require = createRequire(import.meta.url);
  return {
    evaluate7: require('phe/lib/evaluator7') as Phe['evaluate7'],
    handRank: (require('phe') as { handRank: Phe['handRank'] }).handRank,
  };
}

export const pheCategory = (phe: Phe, value: number): Category => CATEGORIES[8 - phe.handRank(value)]!;

/**
 * `count` hands of `size` distinct cards, packed `size` bytes a hand: a partial Fisher–Yates driven
 * by xorshift32, which needs no global (inside jest's vm context a global lookup such as Math is
 * slow enough to dominate a loop of a million hands).
 */
export function randomHands(count: number, seed: number, size = 7): Uint8Array {
  let x = seed >>> 0 || 1;
  const deck = Uint8Array.from({ length: 52 }, (_, i) => i);
  const hands = new Uint8Array(count * size);
  for (let h = 0; h < count; h++) {
    for (let i = 0; i < size; i++) {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      const j = i + ((x >>> 0) % (52 - i));
      const card = deck[j]!;
      deck[j] = deck[i]!;
      deck[i] = card;
      hands[h * size + i] = card;
    }
  }
  return hands;
}

export interface Disagreement {
  hand: number;
  kind: 'order' | 'category' | 'scale';
  ours: number;
  phe: number;
}

export interface Differential {
  hands: number;
  /** Consecutive pairs whose order (win, tie, lose) differs, hands whose category differs, and
   * hands where our score is not 7,463 minus phe's value (both number the same 7,462 classes). */
  order: number;
  category: number;
  scale: number;
  first: Disagreement[];
}

/** Our seven-card scores against phe's on packed seven-card hands. */
export function differential(phe: Phe, hands: Uint8Array): Differential {
  const out: Differential = { hands: hands.length / 7, order: 0, category: 0, scale: 0, first: [] };
  const note = (d: Disagreement) => {
    out[d.kind]++;
    if (out.first.length < 10) out.first.push(d);
  };
  const sign = (d: number) => (d > 0 ? 1 : d < 0 ? -1 : 0);
  let previousOurs = 0;
  let previousPhe = 0;
  for (let h = 0; h < out.hands; h++) {
    const i = h * 7;
    const [c0, c1, c2, c3, c4, c5, c6] = [hands[i]!, hands[i + 1]!, hands[i + 2]!, hands[i + 3]!, hands[i + 4]!, hands[i + 5]!, hands[i + 6]!];
    const ours = scoreSeven(c0, c1, c2, c3, c4, c5, c6);
    const theirs = phe.evaluate7(c0, c1, c2, c3, c4, c5, c6);
    if (h > 0 && sign(ours - previousOurs) !== sign(previousPhe - theirs)) note({ hand: h, kind: 'order', ours, phe: theirs });
    if (categoryOf(ours) !== pheCategory(phe, theirs)) note({ hand: h, kind: 'category', ours, phe: theirs });
    if (ours !== 7463 - theirs) note({ hand: h, kind: 'scale', ours, phe: theirs });
    previousOurs = ours;
    previousPhe = theirs;
  }
  return out;
}
