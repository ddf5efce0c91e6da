// Issue 31, "The dealer cannot steer a deal either": attacks by the dealer itself on the deal.
//
// (a) Hand-id grinding. The dealer holds its committed seed and, once the players' contributions are
//     in, every input of the deck but one it still picks: the hand id. If the hand id enters the deck
//     and is drawn after the contributions, the dealer tries hand ids until the deck deals two aces to
//     a seat of its choosing, plays that hand, signs its record, and the hand verifies.
import { randomBytes } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { signerFromPrivateKey } from '../../server/crypto/signing.ts';
import { DealSeeds } from '../../server/game/live/deal-seeds.ts';
import { applyAction, isRefusal, legalActions, startHand, type HandState } from '../../server/game/poker/engine.ts';
import { commitmentOf, dealtFrom, deckOf, fromHex, LEGACY_ALGORITHM, type DealReveal } from '../../server/game/poker/fair-deal.ts';
import { GENESIS, recordOf, signRecord } from '../../server/game/hands/hand-record.ts';
import { redactHistory } from '../../server/game/hands/histories.ts';
import { verifyHand, type HandView } from '../../server/game/hands/verify-hand.ts';
import { historyJson } from '../../server/game/live/wire.ts';

const dealer = signerFromPrivateKey(ed25519.utils.randomSecretKey());
const TABLE = 'attacked-table';
const SEATS = [0, 1, 2, 3];
const BUTTON = 3;
const TARGET = 1; // the seat the dealer favours
const ACE = 12; // card = rank * 4 + suit, rank 12 = ace

function play(handId: string, deck: number[]): HandState {
  let h = startHand({
    handId, seats: SEATS.map((seat) => ({ seat, playerId: `p${seat}`, stack: 1000n })), button: BUTTON,
    smallBlind: 5n, bigBlind: 10n, ante: 0n, deck, rake: { percent: 5, cap: 10n, minPot: 0n, requiresFlop: true },
  });
  while (h.status === 'betting') {
    const legal = legalActions(h)!;
    const next = applyAction(h, legal.seat, { type: legal.actions.includes('check') ? 'check' : 'call' });
    if (isRefusal(next)) throw new Error(next.message);
    h = next;
  }
  return h;
}

/** The view the favoured player reads of a hand, with its record signed by the dealer's key. */
function viewOf(hand: HandState, handNumber: number, deal: DealReveal): HandView {
  const record = signRecord(recordOf(hand, { tableId: TABLE, handNumber, prev: GENESIS, deal }), dealer);
  const history = redactHistory(JSON.parse(historyJson(hand.history)), [TARGET]);
  return { handId: hand.handId, tableId: TABLE, handNumber, history, deal, record };
}

const twoAces = (deck: number[], handId: string) => dealtFrom(deck, SEATS, BUTTON).hole.get(TARGET)!.every((c) => c >> 2 === ACE) && handId;

test('class "dealer steers a deal" (a): grinding the hand id after the contributions gives no deck that verifies', () => {
  // the room's own commit and reveal: the commitment is published, the players contribute to it
  const seeds = new DealSeeds(TABLE, () => null, dealer);
  const commitment = seeds.nextCommitment(0);
  for (const seat of SEATS) expect(seeds.contribute(seat, commitment, randomBytes(12).toString('base64url'), 0)).toBeNull();
  // the honest deal, as the room makes it, gives the dealer every input it holds once the contributions are in
  seeds.dealWrite(0);
  const { handId: honestId, deck } = seeds.deal(1, SEATS);
  const deal = seeds.signedRecord(play(honestId, deck), { tableId: TABLE, handNumber: 1 }, dealer).deal;
  expect(verifyHand(viewOf(play(honestId, deckOf(deal, honestId)), 1, deal), dealer.publicKeyHex).ok).toBe(true);

  // the attack: try hand ids (what the dealer still picks after the contributions) until seat 1 holds two aces
  let found: string | null = null;
  let tries = 0;
  for (; tries < 20_000 && !found; tries++) {
    const handId = `${TABLE}:1:${tries.toString(16).padStart(8, '0')}`;
    found = twoAces(deckOf(deal, handId), handId) || null;
  }
  expect(found).not.toBeNull(); // the deck moves with the hand id: a favourable one is a few hundred tries away
  const steered = play(found!, deckOf(deal, found!));
  expect(steered.history.find((e) => e.type === 'hole_cards' && e.seat === TARGET)).toBeDefined();
  const verdict = verifyHand(viewOf(steered, 1, deal), dealer.publicKeyHex);
  // a steered hand must not verify: something the dealer picked after the commitment entered the deck
  expect(verdict.ok).toBe(false);
  // the commitment names the hand: the ground hand id is not the one committed before the contributions
  expect(verdict.failed).toBe('commitment');

  // nor can the dealer go back to a commitment of the seed alone (v1): such a deal fails by default
  const legacy = { ...deal, algorithm: LEGACY_ALGORITHM, commitment: commitmentOf(fromHex(deal.serverSeed)) } as const;
  const relabelled = verifyHand(viewOf(play(found!, deckOf(legacy, found!)), 1, legacy), dealer.publicKeyHex);
  expect(relabelled.failed).toBe('commitment');
  expect(relabelled.checks.find((c) => c.name === 'commitment')!.detail).toMatch(/does not commit the hand/);
});
