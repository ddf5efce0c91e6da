// The deck: a Fisher–Yates shuffle driven by SHA-256 in counter mode. Pure: no I/O, no clock, and no
// randomness of its own — the caller supplies the seed (a table's test-mode `deckSeed`) or the
// entropy (crypto.randomBytes in the game role).
//
// The stream: key = SHA-256(seed bytes); block i = SHA-256(key ‖ i as 4 big-endian bytes), read as
// eight big-endian 32-bit words, each split into two 16-bit draws (high half first). Each swap
// index is drawn by rejection sampling (draws at or above the largest multiple of n below 2^16 are
// skipped), so every permutation is equally likely given the stream. SHA-256 is written out here
// so this file imports nothing that reaches the outside.
import type { Card } from './cards.ts';

export const DECK_SIZE = 52;
/** 52! is about 2^225.6: 32 bytes of entropy can reach every ordering. */
export const RANDOM_DECK_BYTES = 32;

/** The ordered deck for a seed string: the same seed always gives the same deck. */
export function shuffledDeck(seed: string): Card[] {
  return deckFromSeedBytes(new TextEncoder().encode(seed));
}

/** A deck from caller-supplied entropy (at least 32 bytes, e.g. crypto.randomBytes(32)). */
export function randomDeck(randomBytes: Uint8Array): Card[] {
  if (randomBytes.length < RANDOM_DECK_BYTES) {
    throw new RangeError(`randomDeck needs at least ${RANDOM_DECK_BYTES} bytes of entropy, got ${randomBytes.length}`);
  }
  return deckFromSeedBytes(randomBytes);
}

function deckFromSeedBytes(seed: Uint8Array): Card[] {
  const next = halfWordStream(sha256(seed));
  const deck: Card[] = [];
  for (let card = 0; card < DECK_SIZE; card++) deck.push(card);
  for (let i = DECK_SIZE - 1; i > 0; i--) {
    const j = uniformBelow(i + 1, next);
    const held = deck[i]!;
    deck[i] = deck[j]!;
    deck[j] = held;
  }
  return deck;
}

/** Uniform in 0..n-1 (n <= 52) from 16-bit draws, rejecting the top 65536 mod n values. */
function uniformBelow(n: number, next: () => number): number {
  const limit = 0x10000 - (0x10000 % n);
  for (;;) {
    const draw = next();
    if (draw < limit) return draw % n;
  }
}

/** 16-bit halves (high first) of the 32-bit words of SHA-256(key ‖ counter), counter = 0, 1, 2, ... */
function halfWordStream(key: Uint8Array): () => number {
  const words = wordStream(key);
  let low = -1;
  return () => {
    if (low >= 0) {
      const draw = low;
      low = -1;
      return draw;
    }
    const word = words();
    low = word & 0xffff;
    return word >>> 16;
  };
}

/** Unsigned 32-bit words from SHA-256(key ‖ counter), counter = 0, 1, 2, ... (36 bytes: one block). */
function wordStream(key: Uint8Array): () => number {
  const message = new Int32Array(64);
  for (let i = 0; i < 8; i++) message[i] = (key[i * 4]! << 24) | (key[i * 4 + 1]! << 16) | (key[i * 4 + 2]! << 8) | key[i * 4 + 3]!;
  message[9] = 0x80000000;
  message[15] = 36 * 8;
  const block = new Int32Array(8);
  let counter = 0;
  let offset = 8;
  return () => {
    if (offset === 8) {
      message[8] = counter++;
      block.set(INITIAL_HASH);
      compress(block, message, 0);
      offset = 0;
    }
    return block[offset++]! >>> 0;
  };
}

const K = Int32Array.from([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);
const INITIAL_HASH = Int32Array.from([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);

/** SHA-256 (FIPS 180-4) of a byte string. Exported for the test that checks it against node:crypto. */
export function sha256(message: Uint8Array): Uint8Array {
  const blocks = ((message.length + 8) >> 6) + 1;
  const words = new Int32Array(blocks * 16);
  for (let i = 0; i < message.length; i++) words[i >> 2]! |= message[i]! << (24 - (i & 3) * 8);
  words[message.length >> 2]! |= 0x80 << (24 - (message.length & 3) * 8);
  words[words.length - 2] = Math.floor(message.length / 0x20000000);
  words[words.length - 1] = (message.length * 8) | 0;
  const hash = Int32Array.from(INITIAL_HASH);
  for (let block = 0; block < blocks; block++) compress(hash, words, block * 16);
  const digest = new Uint8Array(32);
  for (let i = 0; i < 32; i++) digest[i] = hash[i >> 2]! >>> (24 - (i & 3) * 8);
  return digest;
}

const W = new Int32Array(64);

/** One SHA-256 compression of words[at .. at+16) into hash. */
function compress(hash: Int32Array, words: Int32Array, at: number): void {
  const w = W;
  for (let t = 0; t < 16; t++) w[t] = words[at + t]!;
  for (let t = 16; t < 64; t++) {
    const w15 = w[t - 15]!;
    const w2 = w[t - 2]!;
    const s0 = rotr(w15, 7) ^ rotr(w15, 18) ^ (w15 >>> 3);
    const s1 = rotr(w2, 17) ^ rotr(w2, 19) ^ (w2 >>> 10);
    w[t] = (w[t - 16]! + s0 + w[t - 7]! + s1) | 0;
  }
  let a = hash[0]!, b = hash[1]!, c = hash[2]!, d = hash[3]!, e = hash[4]!, f = hash[5]!, g = hash[6]!, h = hash[7]!;
  for (let t = 0; t < 64; t++) {
    const t1 = (h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[t]! + w[t]!) | 0;
    const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) | 0;
    h = g; g = f; f = e; e = (d + t1) | 0;
    d = c; c = b; b = a; a = (t1 + t2) | 0;
  }
  hash[0] = hash[0]! + a; hash[1] = hash[1]! + b; hash[2] = hash[2]! + c; hash[3] = hash[3]! + d;
  hash[4] = hash[4]! + e; hash[5] = hash[5]! + f; hash[6] = hash[6]! + g; hash[7] = hash[7]! + h;
}

const rotr = (x: number, n: number) => (x >>> n) | (x << (32 - n));
