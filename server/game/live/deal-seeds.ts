// A room's side of commit and reveal (docs/dealer.md, "A deal anyone can check"): the next hand's
// server seed, drawn and committed before any contribution for that hand is taken; the players'
// contributions, each naming the commitment it answers; the deal, which consumes both and commits
// the following hand's seed at once; and the table's chain head, which each hand's signed record
// extends. Synchronous apart from nothing: the room calls it inside its steps, and a contribution
// (a websocket message) lands between steps, so it is always for the commitment published then.
import { randomBytes } from 'node:crypto';
import type { Ed25519Signer } from '../../crypto/signing.ts';
import type { Card } from '../poker/cards.ts';
import type { HandState } from '../poker/engine.ts';
import {
  commitmentOf, DEAL_ALGORITHM, deckOf, SEEDED_ALGORITHM, SERVER_SEED_BYTES, seededServerSeed, toHex, type DealReveal,
} from '../poker/fair-deal.ts';
import { GENESIS, recordOf, signRecord, type SignedRecord } from '../hands/hand-record.ts';

interface Committed {
  serverSeed: Uint8Array;
  commitment: string;
}

export class DealSeeds {
  /** The next hand's seed at a table dealt from real entropy (a harness table derives it from its deckSeed). */
  private next: Committed | null = null;
  private readonly contributions = new Map<number, string>();
  /** What the hand in play will reveal at its end. */
  private current: DealReveal | null = null;
  /** The hash of the table's latest record. */
  private head = GENESIS;

  /** The harness's seed of the table (seeded-v1), or null. */
  private readonly deckSeed: () => string | null;

  constructor(deckSeed: () => string | null) {
    this.deckSeed = deckSeed;
  }

  /** The table's latest record, as read when the room opens (none yet: GENESIS). */
  setHead(hash: string | null): void {
    this.head = hash ?? GENESIS;
  }

  private upcoming(handNumber: number): Committed {
    const seeded = this.deckSeed();
    if (seeded !== null) {
      const serverSeed = seededServerSeed(seeded, handNumber + 1);
      return { serverSeed, commitment: commitmentOf(serverSeed) };
    }
    if (!this.next) {
      const serverSeed = new Uint8Array(randomBytes(SERVER_SEED_BYTES));
      this.next = { serverSeed, commitment: commitmentOf(serverSeed) };
    }
    return this.next;
  }

  /** The commitment of the hand after `handNumber` (drawn now if it was not). */
  nextCommitment(handNumber: number): string {
    return this.upcoming(handNumber).commitment;
  }

  /** The hand in play's commitment (null between hands). */
  get currentCommitment(): string | null {
    return this.current?.commitment ?? null;
  }

  /** A seat's seed for the next hand: refused unless it names that hand's commitment; the last one sent counts. */
  contribute(seat: number, commitment: string, seed: string, handNumber: number): 'stale_commitment' | 'seeded_table' | null {
    if (this.deckSeed() !== null) return 'seeded_table';
    if (commitment !== this.upcoming(handNumber).commitment) return 'stale_commitment';
    this.contributions.set(seat, seed);
    return null;
  }

  /**
   * The deck of hand `handNumber` (the one being dealt): the committed seed with the contributions
   * of the seats dealt in. The contributions are cleared and the next hand's seed is drawn, so a
   * contribution only ever counts for the commitment it named.
   */
  deal(handId: string, handNumber: number, dealtIn: readonly number[]): Card[] {
    const seeded = this.deckSeed() !== null;
    const { serverSeed, commitment } = this.upcoming(handNumber - 1);
    const contributions = seeded ? [] : [...this.contributions]
      .filter(([seat]) => dealtIn.includes(seat))
      .sort(([a], [b]) => a - b)
      .map(([seat, seed]) => ({ seat, seed }));
    this.current = { algorithm: seeded ? SEEDED_ALGORITHM : DEAL_ALGORITHM, commitment, serverSeed: toHex(serverSeed), contributions };
    this.contributions.clear();
    this.next = null;
    return deckOf(this.current, handId);
  }

  /** The hand in play's reveal and signed record, extending the table's chain. */
  signedRecord(hand: HandState, at: { tableId: string; handNumber: number }, signer: Ed25519Signer): { deal: DealReveal; record: SignedRecord } {
    const deal = this.current!;
    return { deal, record: signRecord(recordOf(hand, { ...at, prev: this.head, deal }), signer) };
  }

  /** A record was written: it is the table's head now. */
  extended(hash: string): void {
    this.head = hash;
  }

  /** The hand in play was dropped unwritten: nothing of its deal is revealed. */
  dropped(): void {
    this.current = null;
  }
}
