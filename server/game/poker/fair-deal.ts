// Commit and reveal for the deal (issue 23; docs/dealer.md, "A deal anyone can check"). Pure: the
// caller draws the server seed (crypto.randomBytes in the game role) and keeps it secret until the
// hand is over; this file only combines, commits and recomputes.
//
//   commitment  = hex SHA-256("poker-commit-v2" 0x00 ‖ serverSeed ‖ u16be(len tableId) ‖ tableId
//                         ‖ u32be(handNumber) ‖ u16be(len handId) ‖ handId)
//                 published before the hand's players contribute (the previous boundary): the hand id
//                 is drawn with the seed, so nothing the dealer picks after the contributions enters
//                 the deck (v1's commitment was SHA-256(serverSeed) alone: a dealer could grind the
//                 hand id once the contributions were in; issue 31)
//   combined    = SHA-256("poker-deal-v1" 0x00 ‖ serverSeed ‖ u16be(len handId) ‖ handId
//                         ‖ u8(count) ‖ per contribution, ascending seat: u8(seat) ‖ u8(len) ‖ seed)
//   deck        = deck.ts's shuffle of `combined` (SHA-256 counter-mode stream, Fisher–Yates with
//                 rejection sampling)
// The test harness's deckSeed (algorithm `seeded-v1`) keeps its decks: the server seed is the text
// `${deckSeed}:${handNumber}`, the deck deck.ts's shuffledDeck of it, and nothing is mixed in.
import { cardToString, type Card } from './cards.ts';
import { randomDeck, sha256, shuffledDeck } from './deck.ts';

/** What the room deals with: the v1 deck, under a commitment that names the hand (table, number, id). */
export const DEAL_ALGORITHM = 'sha256-fisher-yates-v2';
/** Hands dealt before issue 31: the commitment named the seed only (the hand id was picked at the deal). */
export const LEGACY_ALGORITHM = 'sha256-fisher-yates-v1';
export const SEEDED_ALGORITHM = 'seeded-v1';
export type DealAlgorithm = typeof DEAL_ALGORITHM | typeof LEGACY_ALGORITHM | typeof SEEDED_ALGORITHM;

/** The hand a deal is for: what the commitment names beside the seed. */
export interface DealHand {
  tableId: string;
  handNumber: number;
  handId: string;
}

/** Bytes of server seed drawn per hand: as many as deck.ts needs to reach every ordering. */
export const SERVER_SEED_BYTES = 32;
/** What a player may contribute: 1..64 characters a client can type or generate (base64url, hex). */
export const CLIENT_SEED = /^[A-Za-z0-9_-]{1,64}$/;

const DOMAIN = new TextEncoder().encode('poker-deal-v1\u0000');
const COMMIT_DOMAIN = new TextEncoder().encode('poker-commit-v2\u0000');

export interface Contribution {
  seat: number;
  seed: string;
}

/** What the hand's end reveals (hand_result, the stored history): enough to recompute its deck. */
export interface DealReveal {
  algorithm: DealAlgorithm;
  /** hex SHA-256 of the server seed, as published before the hand. */
  commitment: string;
  /** hex of the server seed's bytes. */
  serverSeed: string;
  /** The players' contributions mixed in, ascending seat (empty for `seeded-v1`). */
  contributions: readonly Contribution[];
}

export const toHex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');
export const fromHex = (hex: string) => new Uint8Array(Buffer.from(hex, 'hex'));

/** A v1 (and seeded-v1) commitment to a server seed: hex SHA-256 of its bytes. */
export const commitmentOf = (serverSeed: Uint8Array): string => toHex(sha256(serverSeed));

function framed(text: string): number[] {
  const bytes = new TextEncoder().encode(text);
  if (bytes.length > 0xffff) throw new RangeError('too long to frame');
  return [bytes.length >> 8, bytes.length & 0xff, ...bytes];
}

/** The v2 commitment: the server seed and the hand it is drawn for (table, number, id), framed. */
export function handCommitmentOf(serverSeed: Uint8Array, hand: DealHand): string {
  const n = hand.handNumber;
  if (!Number.isInteger(n) || n < 0 || n > 0xffffffff) throw new RangeError('hand number: 0..2^32-1');
  const number = [(n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff];
  return toHex(sha256(Uint8Array.from([...COMMIT_DOMAIN, ...serverSeed, ...framed(hand.tableId), ...number, ...framed(hand.handId)])));
}

/** The commitment a deal of `algorithm` publishes for this seed and hand. */
export const dealCommitmentOf = (algorithm: DealAlgorithm, serverSeed: Uint8Array, hand: DealHand): string =>
  (algorithm === DEAL_ALGORITHM ? handCommitmentOf(serverSeed, hand) : commitmentOf(serverSeed));

/** The server seed of a harness table's hand (`seeded-v1`): the text the deck has always come from. */
export const seededServerSeed = (deckSeed: string, handNumber: number): Uint8Array => new TextEncoder().encode(`${deckSeed}:${handNumber}`);

/** The 32 bytes the deck is shuffled from: the server seed, the hand and every contribution, framed. */
export function combinedSeed(serverSeed: Uint8Array, handId: string, contributions: readonly Contribution[]): Uint8Array {
  const enc = new TextEncoder();
  const hand = enc.encode(handId);
  if (hand.length > 0xffff) throw new RangeError('handId too long');
  if (contributions.length > 0xff) throw new RangeError('too many contributions');
  const parts: number[] = [...DOMAIN, ...serverSeed, hand.length >> 8, hand.length & 0xff, ...hand, contributions.length];
  let lastSeat = -1;
  for (const c of contributions) {
    if (!Number.isInteger(c.seat) || c.seat <= lastSeat || c.seat > 0xff) throw new RangeError('contributions must be in ascending seat order');
    if (!CLIENT_SEED.test(c.seed)) throw new RangeError(`not a client seed: ${c.seed}`);
    lastSeat = c.seat;
    const seed = enc.encode(c.seed);
    parts.push(c.seat, seed.length, ...seed);
  }
  return sha256(Uint8Array.from(parts));
}

/**
 * The deck a revealed deal stands for (throws on a reveal that is not well formed): the only place a
 * deck is computed from a deal. v1 and v2 shuffle the same inputs (the server seed, the hand id, the
 * contributions); they differ in what the commitment names.
 */
export function deckOf(reveal: DealReveal, handId: string): Card[] {
  const serverSeed = fromHex(reveal.serverSeed);
  if (reveal.algorithm === SEEDED_ALGORITHM) {
    if (reveal.contributions.length) throw new RangeError('a seeded deal mixes nothing in');
    return shuffledDeck(new TextDecoder('utf-8', { fatal: true }).decode(serverSeed));
  }
  if (reveal.algorithm !== DEAL_ALGORITHM && reveal.algorithm !== LEGACY_ALGORITHM) throw new RangeError(`unknown deal algorithm: ${String(reveal.algorithm)}`);
  if (serverSeed.length !== SERVER_SEED_BYTES || toHex(serverSeed) !== reveal.serverSeed.toLowerCase()) throw new RangeError('the server seed is not 32 bytes of hex');
  return randomDeck(combinedSeed(serverSeed, handId, reveal.contributions));
}

/**
 * Where the engine takes each card from the deck (engine.ts startHand and its streets): one card at
 * a time to each player in dealing order (clockwise from the button's left, the button last), two
 * rounds; then a burn and three for the flop, a burn and one for the turn, a burn and one for the
 * river.
 */
export function dealtFrom(deck: readonly Card[], seats: readonly number[], button: number): { hole: Map<number, Card[]>; board: Card[] } {
  const order = [...seats].sort((a, b) => a - b);
  const start = order.findIndex((s) => s > button);
  const dealing = start < 0 ? order : [...order.slice(start), ...order.slice(0, start)];
  const hole = new Map<number, Card[]>(dealing.map((s) => [s, []]));
  let at = 0;
  for (let round = 0; round < 2; round++) for (const s of dealing) hole.get(s)!.push(deck[at++]!);
  const board = [deck[at + 1]!, deck[at + 2]!, deck[at + 3]!, deck[at + 5]!, deck[at + 7]!];
  return { hole, board };
}

export const cardsText = (cards: readonly Card[]) => cards.map(cardToString).join('');
