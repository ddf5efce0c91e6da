// `npm run verify:evaluator`: the evaluator against what is known about poker hands, too slow for
// the test suite. Every one of the 2,598,960 five-card and 133,784,560 seven-card hands is scored
// (the score path; categories derived from the scores) and the counts per category compared with
// the known ones; then one million seeded random seven-card hands are checked against the `phe`
// package (the order of consecutive hands, each hand's category, and the score scale).
// Exit code 1 on any mismatch.
import { CATEGORIES, type Category } from '../server/game/poker/cards.ts';
import { categoryOf, scoreFive, scoreSeven } from '../server/game/poker/evaluator.ts';
import { differential, loadPhe, randomHands } from '../test/helpers/evaluator.ts';

const KNOWN_FIVE: Record<Category, number> = {
  straight_flush: 40, four_of_a_kind: 624, full_house: 3744, flush: 5108, straight: 10200,
  three_of_a_kind: 54912, two_pair: 123552, pair: 1098240, high_card: 1302540,
};
const KNOWN_SEVEN: Record<Category, number> = {
  straight_flush: 41584, four_of_a_kind: 224848, full_house: 3473184, flush: 4047644, straight: 6180020,
  three_of_a_kind: 6461620, two_pair: 31433400, pair: 58627800, high_card: 23294460,
};
/** Distinct scores: every five-card class, but only 4,824 can be the best five of seven. */
const KNOWN_DISTINCT = { five: 7462, seven: 4824 };

const fmt = (n: number) => n.toLocaleString('en-US');
let failures = 0;

function report(label: string, perScore: Int32Array, known: Record<Category, number>, knownDistinct: number, seconds: number) {
  const counted = Object.fromEntries(CATEGORIES.map((c) => [c, 0])) as Record<Category, number>;
  let hands = 0;
  let distinct = 0;
  perScore.forEach((n, score) => {
    if (n === 0) return;
    counted[categoryOf(score)] += n;
    hands += n;
    distinct++;
  });
  console.log(`\n${label}: ${fmt(hands)} hands in ${seconds.toFixed(1)} s (${fmt(Math.round(hands / seconds))} hands/s)`);
  const rows = [...CATEGORIES].reverse().map((c) => [c, fmt(counted[c]), fmt(known[c]), counted[c] === known[c] ? 'ok' : 'MISMATCH']);
  rows.push(['distinct scores', fmt(distinct), fmt(knownDistinct), distinct === knownDistinct ? 'ok' : 'MISMATCH']);
  const widths = [16, 12, 12];
  console.log(['category', 'counted', 'known'].map((h, i) => (i ? h.padStart(widths[i]!) : h.padEnd(widths[i]!))).join(' '));
  for (const r of rows) {
    console.log(`${r[0]!.padEnd(widths[0]!)} ${r[1]!.padStart(widths[1]!)} ${r[2]!.padStart(widths[2]!)}  ${r[3]}`);
    if (r[3] !== 'ok') failures++;
  }
}

const began = performance.now();

let start = performance.now();
const five = new Int32Array(1 << 16); // scores are 16-bit table entries
for (let a = 0; a < 52; a++) for (let b = a + 1; b < 52; b++) for (let c = b + 1; c < 52; c++) {
  for (let d = c + 1; d < 52; d++) for (let e = d + 1; e < 52; e++) five[scoreFive(a, b, c, d, e)]!++;
}
report('five cards', five, KNOWN_FIVE, KNOWN_DISTINCT.five, (performance.now() - start) / 1000);

start = performance.now();
const seven = new Int32Array(1 << 16);
for (let a = 0; a < 52; a++) for (let b = a + 1; b < 52; b++) for (let c = b + 1; c < 52; c++) {
  for (let d = c + 1; d < 52; d++) for (let e = d + 1; e < 52; e++) for (let f = e + 1; f < 52; f++) {
    for (let g = f + 1; g < 52; g++) seven[scoreSeven(a, b, c, d, e, f, g)]!++;
  }
}
report('seven cards', seven, KNOWN_SEVEN, KNOWN_DISTINCT.seven, (performance.now() - start) / 1000);

const SEED = 20240601;
start = performance.now();
const result = differential(loadPhe(), randomHands(1_000_000, SEED));
console.log(`\ndifferential against phe: ${fmt(result.hands)} random seven-card hands (seed ${SEED}) in ${((performance.now() - start) / 1000).toFixed(1)} s`);
console.log(`  consecutive pairs ordered differently: ${fmt(result.order)}`);
console.log(`  hands classified differently:          ${fmt(result.category)}`);
console.log(`  hands off the shared scale (7,463 - phe): ${fmt(result.scale)}`);
for (const d of result.first) console.log(`  hand ${d.hand}: ${d.kind} (ours ${d.ours}, phe ${d.phe})`);
failures += result.order + result.category + result.scale;

console.log(`\n${failures === 0 ? 'PASS' : `FAIL (${failures} mismatches)`} in ${((performance.now() - began) / 1000).toFixed(1)} s`);
process.exitCode = failures === 0 ? 0 : 1;
