// A committed seed sealed for the table's row (server/game/live/deal-seal.ts; issue 31): it opens with
// the dealer's key for the hand it was sealed for, and for nothing else; the sealed text reveals
// nothing of the seed; a DealSeeds deal is sealed once as the next deal and reused at the deal.
import { randomBytes } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { signerFromPrivateKey } from '../../server/crypto/signing.ts';
import { sealSeed, unsealSeed } from '../../server/game/live/deal-seal.ts';
import { DealSeeds } from '../../server/game/live/deal-seeds.ts';
import { handCommitmentOf } from '../../server/game/poker/fair-deal.ts';

const key = ed25519.utils.randomSecretKey();
const dealer = signerFromPrivateKey(key);
const at = { tableId: 't1', handId: 't1:1:0a1b2c3d', commitment: 'c'.repeat(64) };

test('a sealed seed opens with the dealer key (any process holding it) for its own hand only', () => {
  const seed = new Uint8Array(randomBytes(32));
  const sealed = sealSeed(dealer, at, seed);
  expect(sealed).not.toContain(Buffer.from(seed).toString('hex'));
  expect(sealSeed(dealer, at, seed)).not.toBe(sealed); // a fresh nonce every time
  expect(unsealSeed(signerFromPrivateKey(key), at, sealed)).toEqual(seed); // another process, the same key
  expect(unsealSeed(signerFromPrivateKey(ed25519.utils.randomSecretKey()), at, sealed)).toBeNull();
  expect(unsealSeed(dealer, { ...at, handId: 't1:1:0a1b2c3e' }, sealed)).toBeNull();
  expect(unsealSeed(dealer, { ...at, commitment: 'd'.repeat(64) }, sealed)).toBeNull();
  const flipped = Buffer.from(sealed, 'hex');
  flipped[flipped.length - 1] = flipped[flipped.length - 1]! ^ 1;
  expect(unsealSeed(dealer, at, flipped.toString('hex'))).toBeNull();
  expect(unsealSeed(dealer, at, 'zz')).toBeNull();
});

test('the room\'s committed deals: the hand id drawn with the seed, the commitment naming both, sealed for the table', () => {
  const seeds = new DealSeeds('t1', () => null, dealer);
  const next = seeds.sealedNext(0);
  expect(next).toMatchObject({ algorithm: 'sha256-fisher-yates-v2', handNumber: 1, handId: seeds.nextHandId(0), commitment: seeds.nextCommitment(0) });
  const seed = unsealSeed(dealer, { tableId: 't1', handId: next.handId, commitment: next.commitment }, next.sealed)!;
  expect(handCommitmentOf(seed, { tableId: 't1', handNumber: 1, handId: next.handId })).toBe(next.commitment);
  expect(seeds.contribute(2, next.commitment, 'abc', 0)).toBeNull();
  expect(seeds.contribute(5, next.commitment, 'sat-out', 0)).toBeNull();
  const write = seeds.dealWrite(0);
  // the deal written is the one committed (sealed once), with its contributions; the next is drawn for hand 2
  const contributions = [{ seat: 2, seed: 'abc' }, { seat: 5, seed: 'sat-out' }];
  expect(write.deal).toEqual({ ...next, contributions });
  expect(write.next).toMatchObject({ handNumber: 2 });
  // while the write is on its way the contributions are fixed
  expect(seeds.contribute(3, next.commitment, 'late', 0)).toBe('stale_commitment');
  const { handId } = seeds.deal(1);
  expect(handId).toBe(next.handId);
  // every contribution accepted is mixed in, whoever is dealt in: the deal reveals what the write kept
  expect((seeds as unknown as { current: { contributions: unknown } }).current.contributions).toEqual(contributions);
  expect(seeds.nextCommitment(1)).toBe(write.next.commitment);
});
