// The deal's commit and reveal (server/game/poker/fair-deal.ts), as docs/dealer.md specifies it:
// the published test vectors, the framing re-implemented here from the page with node:crypto, where
// the engine takes each card from, and the harness's seeded decks unchanged.
import { createHash, randomBytes } from 'node:crypto';
import { cardToString } from '../../../server/game/poker/cards.ts';
import { randomDeck, shuffledDeck } from '../../../server/game/poker/deck.ts';
import { applyAction, isRefusal, legalActions, startHand, type HandState } from '../../../server/game/poker/engine.ts';
import {
  cardsText, combinedSeed, commitmentOf, DEAL_ALGORITHM, dealtFrom, deckOf, handCommitmentOf, SEEDED_ALGORITHM, seededServerSeed, toHex, type Contribution,
} from '../../../server/game/poker/fair-deal.ts';

// docs/dealer.md, "Test vectors"
const VECTOR = {
  serverSeed: Uint8Array.from({ length: 32 }, (_, i) => i),
  handId: 'table-1:1:0a1b2c3d',
  contributions: [{ seat: 1, seed: 'alice-7f3a' }, { seat: 4, seed: 'bob' }],
  commitment: '630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd',
  combined: '73e8533472a78fbcd9b061d530d0c52b0a1c128e0ea8cf2f40e593e825eb5176',
  deck: 'Qd9sJsKcAdKh6hQh5c4c2hJhJd9d3d6s5sJc2c8c7s3sTsQc9h5hAs4s2s6c6d5dQsKd8s7dTdTh7hAcKs2d7c8d4d9c4hTc3c3h8hAh',
  deckWithoutContributions: '8c9s6c6d5dJc3hKh2hQd',
};

/** The combined seed as docs/dealer.md frames it, written again with node:crypto. */
function framedAgain(serverSeed: Uint8Array, handId: string, contributions: Contribution[]): string {
  const hand = Buffer.from(handId, 'utf8');
  const parts = [Buffer.from('poker-deal-v1\u0000'), Buffer.from(serverSeed), Buffer.from([hand.length >> 8, hand.length & 0xff]), hand, Buffer.from([contributions.length])];
  for (const c of contributions) parts.push(Buffer.from([c.seat, Buffer.byteLength(c.seed)]), Buffer.from(c.seed, 'utf8'));
  return createHash('sha256').update(Buffer.concat(parts)).digest('hex');
}

test('the published test vectors', () => {
  const { serverSeed, handId, contributions } = VECTOR;
  expect(commitmentOf(serverSeed)).toBe(VECTOR.commitment);
  expect(commitmentOf(serverSeed)).toBe(createHash('sha256').update(serverSeed).digest('hex'));
  expect(toHex(combinedSeed(serverSeed, handId, contributions))).toBe(VECTOR.combined);
  expect(framedAgain(serverSeed, handId, contributions)).toBe(VECTOR.combined);
  const reveal = { algorithm: DEAL_ALGORITHM, commitment: VECTOR.commitment, serverSeed: toHex(serverSeed), contributions } as const;
  expect(cardsText(deckOf(reveal, handId))).toBe(VECTOR.deck);
  expect(cardsText(deckOf({ ...reveal, contributions: [] }, handId)).slice(0, 20)).toBe(VECTOR.deckWithoutContributions);
});

// docs/dealer.md, "Test vectors": the v2 commitment names the hand (issue 31)
test('the v2 commitment: the published vector, the framing written again, and every part of the hand moves it', () => {
  const hand = { tableId: 'table-1', handNumber: 1, handId: VECTOR.handId };
  expect(handCommitmentOf(VECTOR.serverSeed, hand)).toBe('1d43b2c0575e3cf95a95fb12ae34716de85aaeaf226aa1f0a7cd3a3ca301cb3b');
  const framed = (t: string, n: number, h: string) => {
    const u16 = (b: Buffer) => Buffer.from([b.length >> 8, b.length & 0xff]);
    const number = Buffer.alloc(4);
    number.writeUInt32BE(n);
    return createHash('sha256').update(Buffer.concat([
      Buffer.from('poker-commit-v2\u0000'), Buffer.from(VECTOR.serverSeed), u16(Buffer.from(t)), Buffer.from(t), number, u16(Buffer.from(h)), Buffer.from(h),
    ])).digest('hex');
  };
  expect(handCommitmentOf(VECTOR.serverSeed, hand)).toBe(framed(hand.tableId, 1, hand.handId));
  const base = handCommitmentOf(VECTOR.serverSeed, hand);
  expect(handCommitmentOf(VECTOR.serverSeed, { ...hand, tableId: 'table-2' })).not.toBe(base);
  expect(handCommitmentOf(VECTOR.serverSeed, { ...hand, handNumber: 2 })).not.toBe(base);
  expect(handCommitmentOf(VECTOR.serverSeed, { ...hand, handId: 'table-1:1:0a1b2c3e' })).not.toBe(base);
  expect(DEAL_ALGORITHM).toBe('sha256-fisher-yates-v2');
});

test('the framing matches the page for random seeds, hands and contributions', () => {
  for (let i = 0; i < 200; i++) {
    const serverSeed = randomBytes(32);
    const handId = `t-${i}:${i + 1}:${randomBytes(4).toString('hex')}`;
    const seats = [0, 1, 2, 3, 4, 5, 6, 7, 8].filter(() => Math.random() < 0.5);
    const contributions = seats.map((seat) => ({ seat, seed: randomBytes(1 + (i % 40)).toString('base64url').slice(0, 64) }));
    expect(toHex(combinedSeed(serverSeed, handId, contributions))).toBe(framedAgain(serverSeed, handId, contributions));
  }
});

test('every input moves the deck: the server seed, the hand, each contribution', () => {
  const { serverSeed, handId, contributions } = VECTOR;
  const base = toHex(combinedSeed(serverSeed, handId, contributions));
  const otherSeed = Uint8Array.from(serverSeed);
  otherSeed[31] = otherSeed[31]! ^ 1;
  expect(toHex(combinedSeed(otherSeed, handId, contributions))).not.toBe(base);
  expect(toHex(combinedSeed(serverSeed, `${handId}x`, contributions))).not.toBe(base);
  expect(toHex(combinedSeed(serverSeed, handId, [contributions[0]!, { seat: 4, seed: 'bob2' }]))).not.toBe(base);
  expect(toHex(combinedSeed(serverSeed, handId, [contributions[0]!, { seat: 5, seed: 'bob' }]))).not.toBe(base);
  expect(toHex(combinedSeed(serverSeed, handId, [contributions[0]!]))).not.toBe(base);
  // framed, not concatenated: moving a character between two contributions is another seed
  expect(toHex(combinedSeed(serverSeed, handId, [{ seat: 1, seed: 'ab' }, { seat: 2, seed: 'c' }])))
    .not.toBe(toHex(combinedSeed(serverSeed, handId, [{ seat: 1, seed: 'a' }, { seat: 2, seed: 'bc' }])));
});

test('malformed reveals and contributions are refused, never guessed at', () => {
  const { serverSeed, handId } = VECTOR;
  expect(() => combinedSeed(serverSeed, handId, [{ seat: 4, seed: 'a' }, { seat: 1, seed: 'b' }])).toThrow(RangeError);
  expect(() => combinedSeed(serverSeed, handId, [{ seat: 1, seed: 'a' }, { seat: 1, seed: 'b' }])).toThrow(RangeError);
  expect(() => combinedSeed(serverSeed, handId, [{ seat: 1, seed: 'has space' }])).toThrow(RangeError);
  expect(() => combinedSeed(serverSeed, handId, [{ seat: 1, seed: 'x'.repeat(65) }])).toThrow(RangeError);
  const reveal = { algorithm: DEAL_ALGORITHM, commitment: VECTOR.commitment, serverSeed: toHex(serverSeed), contributions: [] } as const;
  expect(() => deckOf({ ...reveal, serverSeed: toHex(serverSeed).slice(2) }, handId)).toThrow(RangeError);
  expect(() => deckOf({ ...reveal, serverSeed: `zz${toHex(serverSeed).slice(2)}` }, handId)).toThrow(RangeError);
  expect(() => deckOf({ ...reveal, algorithm: 'md5' as never }, handId)).toThrow(RangeError);
});

test('seeded-v1: the harness deckSeed deals the decks it always dealt', () => {
  const seed = seededServerSeed('fixed-seed', 7);
  expect(Buffer.from(seed).toString('utf8')).toBe('fixed-seed:7');
  const deck = deckOf({ algorithm: SEEDED_ALGORITHM, commitment: commitmentOf(seed), serverSeed: toHex(seed), contributions: [] }, 'any-hand');
  expect(deck).toEqual(shuffledDeck('fixed-seed:7'));
  expect(() => deckOf({ algorithm: SEEDED_ALGORITHM, commitment: '', serverSeed: toHex(seed), contributions: [{ seat: 0, seed: 'a' }] }, 'h')).toThrow(RangeError);
});

/** Plays a hand to its end by checking or calling, so every street is dealt. */
function checkDown(state: HandState): HandState {
  let h = state;
  for (let guard = 0; guard < 200 && h.status === 'betting'; guard++) {
    const legal = legalActions(h)!;
    const type = legal.actions.includes('check') ? 'check' : 'call';
    const next = applyAction(h, legal.seat, { type });
    if (isRefusal(next)) throw new Error(next.message);
    h = next;
  }
  return h;
}

test('dealtFrom names the cards the engine deals: holes in dealing order, burns before each street', () => {
  for (let i = 0; i < 300; i++) {
    const seats = [0, 1, 2, 3, 4, 5, 6, 7, 8].filter(() => Math.random() < 0.6);
    if (seats.length < 2) continue;
    const button = Math.floor(Math.random() * 9);
    const deck = randomDeck(randomBytes(32));
    const end = checkDown(startHand({
      handId: `h${i}`, seats: seats.map((seat) => ({ seat, playerId: `p${seat}`, stack: 1000n })), button,
      smallBlind: 1n, bigBlind: 2n, ante: 0n, deck, rake: { percent: 0, cap: 0n, minPot: 0n, requiresFlop: true },
    }));
    const expected = dealtFrom(deck, seats, button);
    for (const e of end.history) {
      if (e.type === 'hole_cards') expect(cardsText(e.cards)).toBe(cardsText(expected.hole.get(e.seat)!));
    }
    const board = end.history.flatMap((e) => (e.type === 'board' ? e.cards : []));
    expect(board.map(cardToString)).toEqual(expected.board.map(cardToString));
  }
});
