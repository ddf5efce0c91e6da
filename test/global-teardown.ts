import type { EmbeddedPostgres } from '../server/db/embedded.ts';

export default async function globalTeardown() {
  const embedded = (globalThis as Record<string, unknown>).__embeddedPostgres as EmbeddedPostgres | undefined;
  await embedded?.stop();
}
