// A slow, obviously-correct hand ranker for cross-checking the dealer's showdowns: every five-card
// subset is ranked by counting ranks and suits, with no tables. It shares nothing with
// server/game/poker/evaluator.ts except the card encoding.
import { rankOf, suitOf, type Card } from '../../server/game/poker/cards.ts';

/** A comparable rank of the best five of 5..7 cards: higher wins, equal ties. */
export function referenceScore(cards: readonly Card[]): number {
  let best = -1;
  const n = cards.length;
  for (let a = 0; a < n; a++) for (let b = a + 1; b < n; b++) for (let c = b + 1; c < n; c++) {
    for (let d = c + 1; d < n; d++) for (let e = d + 1; e < n; e++) {
      best = Math.max(best, fiveCardScore([cards[a]!, cards[b]!, cards[c]!, cards[d]!, cards[e]!]));
    }
  }
  return best;
}

function fiveCardScore(five: Card[]): number {
  const counts = new Array<number>(13).fill(0);
  for (const card of five) counts[rankOf(card)]!++;
  // Ranks ordered by (count, rank), most significant first: the trips before the pair, and so on.
  const groups: number[] = [];
  for (let count = 4; count >= 1; count--) for (let rank = 12; rank >= 0; rank--) if (counts[rank] === count) groups.push(rank);
  const shape = groups.map((rank) => counts[rank]).join('');
  const flush = five.every((card) => suitOf(card) === suitOf(five[0]!));
  let straightHigh = -1;
  if (groups.length === 5) {
    if (groups[0]! - groups[4]! === 4) straightHigh = groups[0]!;
    else if (groups.join(',') === '12,3,2,1,0') straightHigh = 3; // the wheel, five high
  }
  let category: number;
  let kickers = groups;
  if (straightHigh >= 0 && flush) { category = 8; kickers = [straightHigh]; }
  else if (shape === '41') category = 7;
  else if (shape === '32') category = 6;
  else if (flush) category = 5;
  else if (straightHigh >= 0) { category = 4; kickers = [straightHigh]; }
  else if (shape === '311') category = 3;
  else if (shape === '221') category = 2;
  else if (shape === '2111') category = 1;
  else category = 0;
  let score = category;
  for (let i = 0; i < 5; i++) score = score * 13 + (kickers[i] ?? 0);
  return score;
}
