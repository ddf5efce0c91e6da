// One operator key, many concurrent submissions: transactions are signed and sent one at a time, each
// with the next nonce from a local counter (read from the node's pending count on first use and after
// any failure, so a send that failed before the node took it leaves no gap). Waiting for receipts
// happens outside, so only the send itself is serialised.
import { BaseError, NonceTooLowError, type Address, type Hex, type PublicClient } from 'viem';
import { getTransactionCount } from 'viem/actions';
import { ChainUnavailable } from './types.ts';

/** A bound on submissions waiting for the operator key: beyond it the bank is overloaded, not queued forever. */
export const MAX_QUEUED_SENDS = 512;

const NONCE_ATTEMPTS = 2;

export class SerialSender {
  private tail: Promise<void> = Promise.resolve();
  private nextNonce: number | undefined;
  private queued = 0;

  private readonly client: PublicClient;
  private readonly address: Address;

  constructor(client: PublicClient, address: Address) {
    this.client = client;
    this.address = address;
  }

  /**
   * Forgets the local counter (after the next queued send finishes): the node dropped a transaction
   * of this key, so its nonce is free again and the counter is re-read from the node.
   */
  resync(): void {
    this.tail = this.tail.then(() => { this.nextNonce = undefined; });
  }

  /** Runs `send` with the operator's next nonce once every earlier send has finished. */
  run(send: (nonce: number) => Promise<Hex>): Promise<Hex> {
    if (this.queued >= MAX_QUEUED_SENDS) return Promise.reject(new ChainUnavailable(`operator send queue full (${MAX_QUEUED_SENDS})`));
    this.queued += 1;
    const result = this.tail.then(() => this.sendNext(send)).finally(() => { this.queued -= 1; });
    this.tail = result.then(() => undefined, () => undefined);
    return result;
  }

  /** One send; when the node says the nonce is stale (the key was used elsewhere), re-read it and send once more. */
  private async sendNext(send: (nonce: number) => Promise<Hex>): Promise<Hex> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        const nonce = this.nextNonce ?? (await getTransactionCount(this.client, { address: this.address, blockTag: 'pending' }));
        const hash = await send(nonce);
        this.nextNonce = nonce + 1;
        return hash;
      } catch (err) {
        this.nextNonce = undefined;
        const stale = err instanceof BaseError && err.walk((e) => e instanceof NonceTooLowError) instanceof NonceTooLowError;
        if (!stale || attempt >= NONCE_ATTEMPTS) throw err;
      }
    }
  }
}
