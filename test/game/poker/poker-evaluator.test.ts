// The hand evaluator (POKER-RULES.md, "Evaluator"): every five-card hand, the regression cases that
// broke other evaluators, a differential run against the `phe` package, and what players read.
import { CATEGORIES, cardToString, parseCards, type Category } from '../../../server/game/poker/cards.ts';
import { categoryOf, evaluate, scoreFive, scoreHand, scoreSeven, scoreSix } from '../../../server/game/poker/evaluator.ts';
import { differential, loadPhe, randomHands } from '../../helpers/evaluator.ts';

const score = (text: string) => scoreHand(parseCards(text));
const show = (text: string) => {
  const v = evaluate(parseCards(text));
  return { category: v.category, best: v.best.map(cardToString).join(' '), description: v.description };
};

test('all 2,598,960 five-card hands: the known category counts and 7,462 distinct scores', () => {
  const perScore = new Int32Array(1 << 16); // scores are 16-bit table entries
  for (let a = 0; a < 52; a++) for (let b = a + 1; b < 52; b++) for (let c = b + 1; c < 52; c++) {
    for (let d = c + 1; d < 52; d++) for (let e = d + 1; e < 52; e++) perScore[scoreFive(a, b, c, d, e)]!++;
  }
  const scores = [...perScore.keys()].filter((s) => perScore[s]! > 0);
  const perCategory = Object.fromEntries(CATEGORIES.map((c) => [c, 0])) as Record<Category, number>;
  for (const s of scores) perCategory[categoryOf(s)] += perScore[s]!;
  expect(perCategory).toEqual({
    straight_flush: 40, four_of_a_kind: 624, full_house: 3744, flush: 5108, straight: 10200,
    three_of_a_kind: 54912, two_pair: 123552, pair: 1098240, high_card: 1302540,
  });
  expect(scores.length).toBe(7462);
  expect([scores[0], scores.at(-1)]).toEqual([1, 7462]);
});

test('six and seven cards score the best of their five-card subsets', () => {
  const subsets = (cards: number[], k: number): number[][] =>
    k === 0 ? [[]] : cards.length < k ? [] : [
      ...subsets(cards.slice(1), k - 1).map((s) => [cards[0]!, ...s]), ...subsets(cards.slice(1), k),
    ];
  const bestOfFives = (cards: number[]) => Math.max(...subsets(cards, 5).map((s) => scoreFive(...(s as [number, number, number, number, number]))));
  for (const [size, count] of [[6, 20000], [7, 20000]] as const) {
    const hands = randomHands(count, 6 + size, size);
    let wrong = 0;
    for (let h = 0; h < count; h++) {
      const cards = [...hands.subarray(h * size, h * size + size)];
      const ours = size === 6
        ? scoreSix(...(cards as [number, number, number, number, number, number]))
        : scoreSeven(...(cards as [number, number, number, number, number, number, number]));
      if (ours !== bestOfFives(cards)) wrong++;
    }
    expect({ size, wrong }).toEqual({ size, wrong: 0 });
  }
});

describe('regression cases', () => {
  test('the wheel is a five-high straight, below six high and above trips', () => {
    expect(show('Ah 2d 3c 4s 5h 9d Kc')).toEqual({ category: 'straight', best: '5h 4s 3c 2d Ah', description: 'Straight, five high' });
    expect(score('Ah 2d 3c 4s 5h 9d Kc')).toBeLessThan(score('2d 3c 4s 5h 6d 9d Kc'));
    expect(score('Ah 2d 3c 4s 5h 9d Kc')).toBeGreaterThan(score('Ah Ad Ac 4s Kh 9d 7c'));
    expect(score('Ah 2d 3c 4s 5h')).toBe(score('As 2c 3d 4h 5c 9s Kd')); // a wheel is a wheel whatever else
  });

  test('the steel wheel is a five-high straight flush, below six high and above quads', () => {
    expect(show('Ac 2c 3c 4c 5c 9h 9d')).toEqual({ category: 'straight_flush', best: '5c 4c 3c 2c Ac', description: 'Straight flush, five high' });
    expect(score('Ac 2c 3c 4c 5c 9h 9d')).toBeLessThan(score('2c 3c 4c 5c 6c 9h 9d'));
    expect(score('Ac 2c 3c 4c 5c 9h 9d')).toBeGreaterThan(score('As Ad Ah Ac Kd'));
    expect(show('As Ks Qs Js Ts 9s 8s').description).toBe('Royal flush');
  });

  test('a flush that also holds a straight of other suits is a flush', () => {
    expect(show('5h 6h 7h Kh 2h 8c 9d')).toEqual({ category: 'flush', best: 'Kh 7h 6h 5h 2h', description: 'Flush, king high' });
    expect(score('5h 6h 7h Kh 2h 8c 9d')).toBe(score('Kh 7h 6h 5h 2h'));
  });

  test('three pairs make two pair, and the kicker can come from the third pair', () => {
    expect(show('Ah Ad Kc Ks Qd Qh 2c')).toEqual({
      category: 'two_pair', best: 'Ah Ad Ks Kc Qh', description: 'Two pair, aces and kings, queen kicker',
    });
    expect(score('Ah Ad Kc Ks Qd Qh 2c')).toBe(score('Ah Ad Kc Ks Qd 3h 2c'));
    expect(score('Ah Ad Kc Ks Qd Qh 2c')).toBeGreaterThan(score('Ah Ad Kc Ks Jd Jh Tc'));
    expect(show('Ah Ad 9c 9s 5d 5h Kc').description).toBe('Two pair, aces and nines, king kicker');
  });

  test('the board plays: equal scores, a chop', () => {
    const board = '5c 6d 7h 8s 9c';
    expect(score(`${board} 2d 3h`)).toBe(score(`${board} Ad Kh`));
    expect(show(`${board} 2d 3h`).description).toBe('Straight, nine high');
    const pairs = 'Ah Ad Kc Ks Qd';
    expect(score(`${pairs} 2c 3c`)).toBe(score(`${pairs} 4h Js`));
    expect(score(`${pairs} 2c 3c`)).toBeLessThan(score(`${pairs} Kh 3c`)); // a full house does not chop
  });

  test('a six-card flush uses its top five', () => {
    expect(show('Ah Kh 9h 7h 4h 2h 3c')).toEqual({ category: 'flush', best: 'Ah Kh 9h 7h 4h', description: 'Flush, ace high' });
    expect(score('Ah Kh 9h 7h 4h 2h 3c')).toBe(score('Ah Kh 9h 7h 4h 3c 5d'));
    expect(score('Ah Kh 9h 7h 4h 2h')).toBeGreaterThan(score('Ah Kh 9h 7h 3h 2h'));
    expect(score('Ah Kh 9h 7h 4h 3h 2h')).toBe(score('Ah Kh 9h 7h 4h'));
  });
});

test('one million random seven-card hands order and classify like phe', () => {
  const result = differential(loadPhe(), randomHands(1_000_000, 20240601));
  expect(result).toEqual({ hands: 1_000_000, order: 0, category: 0, scale: 0, first: [] });
});

describe('what players read', () => {
  test.each([
    ['Kh Kd Ks 7c 7d 2s 3s', 'full_house', 'Ks Kh Kd 7d 7c', 'Full house, kings full of sevens'],
    ['9c 9d 9h 9s Ac Kd 2h', 'four_of_a_kind', '9s 9h 9d 9c Ac', 'Four of a kind, nines, ace kicker'],
    ['7c 7d 7h Ac Kd 2h 3s', 'three_of_a_kind', '7h 7d 7c Ac Kd', 'Three of a kind, sevens, ace and king kickers'],
    ['Tc Td Ac Kd 7h 2h 3s', 'pair', 'Td Tc Ac Kd 7h', 'Pair of tens, ace, king and seven kickers'],
    ['Ac Kd 9h 6s 4c 3d 2h', 'high_card', 'Ac Kd 9h 6s 4c', 'Ace high, king, nine, six and four kickers'],
    ['Ts Jd Qh Kc Ac 2d 2h', 'straight', 'Ac Kc Qh Jd Ts', 'Straight, ace high'],
    ['9d Td Jd Qd Kd 2d 3c', 'straight_flush', 'Kd Qd Jd Td 9d', 'Straight flush, king high'],
  ])('%s', (cards, category, best, description) => {
    expect(show(cards)).toEqual({ category, best, description });
  });

  test('the answer does not depend on the order of the cards', () => {
    const hands = randomHands(2000, 7);
    for (let h = 0; h < 2000; h++) {
      const cards = [...hands.subarray(h * 7, h * 7 + 7)];
      const value = evaluate(cards);
      expect(evaluate([...cards].reverse())).toEqual(value);
      expect(evaluate(value.best).score).toBe(value.score); // the best five are the hand
      expect(value.best.every((c) => cards.includes(c))).toBe(true);
    }
  });

  test.each([
    ['four cards', [0, 1, 2, 3]],
    ['eight cards', [0, 1, 2, 3, 4, 5, 6, 7]],
    ['a duplicate', [0, 1, 2, 3, 0]],
    ['card 52', [0, 1, 2, 3, 52]],
    ['card -1', [0, 1, 2, 3, -1]],
    ['card 1.5', [0, 1, 2, 3, 1.5]],
  ])('refuses %s with a RangeError', (_, cards) => {
    expect(() => evaluate(cards)).toThrow(RangeError);
    expect(() => scoreHand(cards)).toThrow(RangeError);
  });
});
