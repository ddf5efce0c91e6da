// A room's side of commit and reveal (docs/dealer.md, "A deal anyone can check"): the next hand's
// server seed and hand id, drawn and committed together before any contribution for that hand is
// taken (the commitment names the hand: nothing the dealer picks after the contributions enters the
// deck); the players' contributions, each naming the commitment it answers; the deal, which consumes
// both and commits the following hand's seed at once; the sealed copies of the committed deals the
// table keeps (so a deal never played to its end is revealed by the next room, issue 31); and the
// table's chain head, which each hand's signed record extends. Synchronous: the room calls it inside
// its steps, and a contribution (a websocket message) lands between steps, so it is always for the
// commitment published then.
import { randomBytes } from 'node:crypto';
import type { Ed25519Signer } from '../../crypto/signing.ts';
import type { Card } from '../poker/cards.ts';
import type { HandState } from '../poker/engine.ts';
import {
  DEAL_ALGORITHM, dealCommitmentOf, deckOf, SEEDED_ALGORITHM, SERVER_SEED_BYTES, seededServerSeed, toHex,
  type Contribution, type DealAlgorithm, type DealReveal,
} from '../poker/fair-deal.ts';
import { abandonedRecord, GENESIS, recordOf, signRecord, type SignedRecord } from '../hands/hand-record.ts';
import { sealSeed, unsealSeed } from './deal-seal.ts';

interface Committed {
  algorithm: DealAlgorithm;
  handNumber: number;
  handId: string;
  serverSeed: Uint8Array;
  commitment: string;
  /** Its sealed seed, once made (sealed once: as the next deal, then again as the deal dealt). */
  sealed?: string;
}

/** A committed deal as the table keeps it (game.tables deal_next / deal_current): the seed sealed. */
export interface SealedDeal {
  algorithm: DealAlgorithm;
  handNumber: number;
  handId: string;
  commitment: string;
  /** hex of the sealed seed (deal-seal.ts). */
  sealed: string;
  /** The hand being dealt's contributions as the deal's write saw them (absent on a next deal). */
  contributions?: Contribution[];
}

/** An abandoned deal to reveal, as game.open_deals answers it. */
export interface PendingDeal {
  handId: string;
  handNumber: number;
  deal: SealedDeal & { seats: { seat: number; playerId: string; stack: string }[] };
}

export class DealSeeds {
  /** The next hand's committed deal (drawn when first asked for). */
  private next: Committed | null = null;
  /** The deal after the next, drawn for the deal's write and committed when the deal goes ahead. */
  private staged: Committed | null = null;
  private readonly contributions = new Map<number, string>();
  /** What the hand in play will reveal at its end. */
  private current: DealReveal | null = null;
  /** The hash of the table's latest record. */
  private head = GENESIS;

  private readonly tableId: string;
  /** The harness's seed of the table (seeded-v1), or null. */
  private readonly deckSeed: () => string | null;
  private readonly signer: Ed25519Signer;

  constructor(tableId: string, deckSeed: () => string | null, signer: Ed25519Signer) {
    this.tableId = tableId;
    this.deckSeed = deckSeed;
    this.signer = signer;
  }

  /** The table's latest record, as read when the room opens (none yet: GENESIS). */
  setHead(hash: string | null): void {
    this.head = hash ?? GENESIS;
  }

  /** A fresh deal for hand `handNumber`: its seed and its hand id, drawn together. */
  private draw(handNumber: number): Committed {
    const handId = `${this.tableId}:${handNumber}:${randomBytes(4).toString('hex')}`;
    const seeded = this.deckSeed();
    const algorithm = seeded === null ? DEAL_ALGORITHM : SEEDED_ALGORITHM;
    const serverSeed = seeded === null ? new Uint8Array(randomBytes(SERVER_SEED_BYTES)) : seededServerSeed(seeded, handNumber);
    return { algorithm, handNumber, handId, serverSeed, commitment: dealCommitmentOf(algorithm, serverSeed, { tableId: this.tableId, handNumber, handId }) };
  }

  /** The committed deal of the hand after `handNumber` (drawn now if it was not). */
  private upcoming(handNumber: number): Committed {
    if (this.next?.handNumber !== handNumber + 1) {
      this.next = this.draw(handNumber + 1);
      this.contributions.clear();
    }
    return this.next;
  }

  private sealed(c: Committed): SealedDeal {
    c.sealed ??= sealSeed(this.signer, { tableId: this.tableId, handId: c.handId, commitment: c.commitment }, c.serverSeed);
    return { algorithm: c.algorithm, handNumber: c.handNumber, handId: c.handId, commitment: c.commitment, sealed: c.sealed };
  }

  /** The commitment of the hand after `handNumber`. */
  nextCommitment(handNumber: number): string {
    return this.upcoming(handNumber).commitment;
  }

  /** The hand id committed with it: the hand after `handNumber` is dealt under this id. */
  nextHandId(handNumber: number): string {
    return this.upcoming(handNumber).handId;
  }

  /** The next hand's committed deal, sealed: what a room that opens stores before publishing it (game.commit_deal). */
  sealedNext(handNumber: number): SealedDeal {
    return this.sealed(this.upcoming(handNumber));
  }

  /** The hand in play's commitment (null between hands). */
  get currentCommitment(): string | null {
    return this.current?.commitment ?? null;
  }

  private contributionList(): Contribution[] {
    return [...this.contributions]
      .sort(([a], [b]) => a - b)
      .map(([seat, seed]) => ({ seat, seed }));
  }

  /**
   * A seat's seed for the next hand: refused unless it names that hand's commitment; the last one sent
   * counts. Once the deal's write is on its way (`dealWrite`) the hand's contributions are fixed: one
   * arriving meanwhile is stale (send it again for the next commitment), so what an abandonment
   * reveals is exactly what the deal mixed in.
   */
  contribute(seat: number, commitment: string, seed: string, handNumber: number): 'stale_commitment' | 'seeded_table' | null {
    if (this.deckSeed() !== null) return 'seeded_table';
    if (this.staged || commitment !== this.upcoming(handNumber).commitment) return 'stale_commitment';
    this.contributions.set(seat, seed);
    return null;
  }

  /**
   * What the deal of the hand after `handNumber` writes (game.deal_hand), sealed: that hand's committed
   * deal with the contributions it has, and the deal of the hand after it, drawn now and committed
   * only when the deal goes ahead (`deal`); a deal released unplayed forgets it (`unstage`).
   */
  dealWrite(handNumber: number): { deal: SealedDeal; next: SealedDeal } {
    const deal = { ...this.sealed(this.upcoming(handNumber)), contributions: this.contributionList() };
    this.staged = this.draw(handNumber + 2);
    return { deal, next: this.sealed(this.staged) };
  }

  /** The deal written was released (nobody to deal to): the next hand's deal stays the one committed. */
  unstage(): void {
    this.staged = null;
  }

  /**
   * The deck of hand `handNumber` (the one being dealt) and its committed hand id: the committed seed
   * with every contribution accepted for it (from seated players, dealt in or not: who is dealt in
   * moves where the cards go, never the deck). The contributions are cleared and the deal staged by
   * the write becomes the next, so a contribution only ever counts for the commitment it named.
   */
  deal(handNumber: number): { handId: string; deck: Card[] } {
    const committed = this.upcoming(handNumber - 1);
    const contributions = committed.algorithm === SEEDED_ALGORITHM ? [] : this.contributionList();
    this.current = { algorithm: committed.algorithm, commitment: committed.commitment, serverSeed: toHex(committed.serverSeed), contributions };
    this.contributions.clear();
    this.next = this.staged?.handNumber === handNumber + 1 ? this.staged : null;
    this.staged = null;
    return { handId: committed.handId, deck: deckOf(this.current, committed.handId) };
  }

  /** The hand in play's reveal and signed record, extending the table's chain. */
  signedRecord(hand: HandState, at: { tableId: string; handNumber: number }, signer: Ed25519Signer): { deal: DealReveal; record: SignedRecord } {
    const deal = this.current!;
    return { deal, record: signRecord(recordOf(hand, { ...at, prev: this.head, deal }), signer) };
  }

  /**
   * An abandoned deal revealed: its seed unsealed (an empty seed when the seal does not open: the
   * dealer key changed, and the hand's commitment check fails in plain view) and its record, signed,
   * extending the table's chain.
   */
  revealAbandoned(p: PendingDeal): { deal: DealReveal; record: SignedRecord } {
    const seed = unsealSeed(this.signer, { tableId: this.tableId, handId: p.handId, commitment: p.deal.commitment }, p.deal.sealed);
    const deal: DealReveal = { algorithm: p.deal.algorithm, commitment: p.deal.commitment, serverSeed: seed ? toHex(seed) : '', contributions: p.deal.contributions ?? [] };
    const record = abandonedRecord({ tableId: this.tableId, handNumber: Number(p.handNumber), handId: p.handId, prev: this.head, deal, seats: p.deal.seats });
    return { deal, record: signRecord(record, this.signer) };
  }

  /** The table's stored deals replace the room's (game.open_deals abandoned what it held): nothing drawn is kept. */
  forget(): void {
    this.next = null;
    this.staged = null;
    this.contributions.clear();
  }

  /** A record was written: it is the table's head now. */
  extended(hash: string): void {
    this.head = hash;
  }

  /** The hand in play was dropped unwritten: its deal is revealed as abandoned (game.reveal_abandoned). */
  dropped(): void {
    this.current = null;
  }
}
