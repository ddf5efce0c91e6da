// Once per `npm test`: a throwaway PostgreSQL, and a template database built by the real migration
// runner. Every test file clones its own database from the template (test/helpers/db.ts), so files
// run in parallel without sharing state.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../server/db/embedded.ts';
import { migrate } from '../server/db/migrate.ts';
import { loadConfig } from '../server/config/index.ts';
import { ed25519 } from '@noble/curves/ed25519.js';
import { pinAsOwner, pinDevelopmentKeys } from '../server/crypto/pins.ts';
import { TEST_RECEIPT_SEED } from './helpers/keys.ts';
import { freePort } from './helpers/ports.ts';
import { withDatabase } from './helpers/url.ts';

export const TEMPLATE_DB = 'poker_template';

export default async function globalSetup() {
  let serverUrl = process.env.TEST_DATABASE_URL;
  if (!serverUrl) {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'poker-test-pg-'));
    const embedded = await startEmbeddedPostgres({
      dataDir,
      port: await freePort(),
      ephemeral: true,
      // a throwaway cluster: durability buys nothing here
      settings: { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off', max_connections: '300' },
    });
    (globalThis as Record<string, unknown>).__embeddedPostgres = embedded;
    serverUrl = embedded.url;
  }
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`drop database if exists ${TEMPLATE_DB}`);
  await admin.query(`create database ${TEMPLATE_DB}`);
  await admin.end();
  const templateUrl = withDatabase(serverUrl, TEMPLATE_DB);
  await migrate(templateUrl);
  // the keys the harness's roles sign with (their development files, helpers/keys.ts) pinned as the
  // owner, as `npm start` does: a file that starts the auth or cage role directly finds them pinned
  await pinDevelopmentKeys(templateUrl, loadConfig({ ...process.env, NODE_ENV: 'test' }), ['auth', 'cage']);
  // ... and the fixed receipt key the SQL tests sign with (helpers/game.ts)
  const template = new pg.Client({ connectionString: templateUrl });
  await template.connect();
  await pinAsOwner(template, 'receipt', ed25519.getPublicKey(TEST_RECEIPT_SEED)).finally(() => template.end());
  process.env.TEST_SERVER_URL = serverUrl;
  process.env.TEST_TEMPLATE_DB = TEMPLATE_DB;
}
