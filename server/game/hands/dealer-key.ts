// The dealer's signing key (issue 23; issue 31, docs/security.md "The dealer's key"): every finished
// hand's record is signed with it (hand-record.ts), and anyone may read its public half to check them:
// GET /api/dealer/key. The private key is the game process's own: GAME_DEALER_KEY, or outside
// production a key file beside the data directory (server/crypto/key-files.ts), never a table a
// database login reads. The database keeps the PINNED public halves (game.dealer_public_keys()):
// pinned by an operator (`npm run ops -- dealer-key pin <publicKey>`) or, in development and tests,
// by the owner at the start (pinDevelopmentDealerKey). A game process whose key is not pinned refuses
// to start: every hand it signed would be named by the audit.
import type { Express } from 'express';
import pg from 'pg';
import { loadPrivateKey } from '../../crypto/key-files.ts';
import { signerFromPrivateKey, type Ed25519Signer } from '../../crypto/signing.ts';
import { describeRoute } from '../../http/openapi.ts';
import { oneClient } from '../../db/pools.ts';

export const DEALER_KEY_ALGORITHM = 'ed25519';

export interface DealerKeyConfig {
  GAME_DEALER_KEY?: string;
  NODE_ENV: string;
  PG_DATA_DIR: string;
}

/** The dealer's signer and where its key came from (the variable's name or the file's path). */
export async function loadDealerSigner(config: DealerKeyConfig): Promise<{ signer: Ed25519Signer; source: string }> {
  const key = await loadPrivateKey({
    name: 'dealer', envName: 'GAME_DEALER_KEY', configuredHex: config.GAME_DEALER_KEY, nodeEnv: config.NODE_ENV, pgDataDir: config.PG_DATA_DIR,
  });
  return { signer: signerFromPrivateKey(key.privateKey), source: key.source };
}

export class DealerKeyNotPinnedError extends Error {
  constructor(publicKey: string) {
    super(`the dealer key ${publicKey} is not pinned (or was retired): an operator pins it with \`npm run ops -- dealer-key pin ${publicKey}\` before the game role starts with it`);
  }
}

export interface PinnedDealerKey {
  public_key: string;
  pinned_at: Date;
  pinned_by: string;
  retired_at: Date | null;
}

/** The pinned keys; refuses (DealerKeyNotPinnedError) when `publicKey` is not one in use. */
export async function requirePinned(pool: Pick<pg.Pool, 'query'>, publicKey: string): Promise<PinnedDealerKey[]> {
  const { rows } = await pool.query<PinnedDealerKey>('select * from game.dealer_public_keys()');
  if (!rows.some((k) => k.public_key === publicKey && k.retired_at === null)) throw new DealerKeyNotPinnedError(publicKey);
  return rows;
}

/**
 * Outside production, the owner pins the development dealer key at the start (npm start, the test
 * harness), as a migration would: the same key file the game role then loads. Production pins are
 * operators' acts only.
 */
export async function pinDevelopmentDealerKey(ownerUrl: string, config: DealerKeyConfig): Promise<{ publicKey: string; source: string } | null> {
  if (config.NODE_ENV === 'production') return null;
  const { signer, source } = await loadDealerSigner(config);
  const client = oneClient({ connectionString: ownerUrl });
  await client.connect();
  try {
    await client.query("select game_private.pin_dealer_key($1, 'owner')", [signer.publicKeyHex]);
  } finally {
    await client.end();
  }
  return { publicKey: signer.publicKeyHex, source };
}

export const dealerKeyRoutes = [
  describeRoute({
    method: 'get', path: '/api/dealer/key', auth: 'none', summary: 'The dealer\'s public key: every hand record is signed with it',
    responses: { 200: '{ algorithm: "ed25519", publicKey, pinned: [{ publicKey, pinnedAt, retiredAt }] } (pinned: every key a record may be signed with)' },
  }),
];

export function installDealerKeyRoute(app: Express, deps: { signer: Ed25519Signer; pool: Pick<pg.Pool, 'query'> }) {
  app.get('/api/dealer/key', async (_req, res) => {
    const { rows } = await deps.pool.query<PinnedDealerKey>('select * from game.dealer_public_keys()');
    res.json({
      algorithm: DEALER_KEY_ALGORITHM, publicKey: deps.signer.publicKeyHex,
      pinned: rows.map((k) => ({ publicKey: k.public_key, pinnedAt: k.pinned_at, retiredAt: k.retired_at })),
    });
  });
}
