// The signing keys the test harness's roles hold: as `npm start` outside production, each role's
// development file beside PG_DATA_DIR (server/crypto/key-files.ts), pinned as the owner by
// startPlatform (and in the template database by test/global-setup.ts, for the files that start a
// role directly). A test signs its players' tokens with the auth role's own key.
import { loadConfig } from '../../server/config/index.ts';
import { roleKey } from '../../server/crypto/pins.ts';

/** The private key the test harness's `role` signs with (its development file). */
export async function testRoleKey(role: 'auth' | 'cage', env: Record<string, string | undefined> = {}): Promise<Uint8Array> {
  return (await roleKey(loadConfig({ ...process.env, NODE_ENV: 'test', ...env }), role)).privateKey;
}

/**
 * The receipt key of the SQL tests' cage (test/helpers/game.ts TEST_RECEIPT_SIGNER: a fixed key,
 * receipts are not what they test): pinned in the template database as the owner (global-setup).
 */
export const TEST_RECEIPT_SEED = new Uint8Array(32).fill(7);
