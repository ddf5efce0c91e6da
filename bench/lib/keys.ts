// The auth role's signing key as the benchmark's roles hold it (NODE_ENV test: the development file
// beside PG_DATA_DIR, pinned by startPlatform as the owner): the benchmark signs its players' tokens with it.
import { loadConfig } from '../../server/config/index.ts';
import { roleKey } from '../../server/crypto/pins.ts';

export async function benchJwtKey(): Promise<Uint8Array> {
  return (await roleKey(loadConfig({ ...process.env, NODE_ENV: 'test' }), 'auth')).privateKey;
}
