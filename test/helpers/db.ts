// A database of this test file's own, cloned from the migrated template, with a pool per service
// role and one as the owner. `drop()` ends every pool and drops the database.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createOwnerPool, createRolePool, type DbRole } from '../../server/db/pools.ts';
import { withDatabase } from './url.ts';

export interface TestDatabase {
  url: string;
  name: string;
  owner: pg.Pool;
  pool(role: DbRole, max?: number): pg.Pool;
  drop(): Promise<void>;
}

export function serverUrl() {
  const url = process.env.TEST_SERVER_URL;
  if (!url) throw new Error('TEST_SERVER_URL is not set: run the tests through `npm test`');
  return url;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl() });
  await admin.connect();
  try {
    await admin.query(`create database ${name} template ${process.env.TEST_TEMPLATE_DB}`);
  } finally {
    await admin.end();
  }
  const url = withDatabase(serverUrl(), name);
  const owner = createOwnerPool(url, 5);
  const pools: pg.Pool[] = [owner];
  return {
    url,
    name,
    owner,
    pool(role, max = 10) {
      const p = createRolePool(url, role, { max });
      pools.push(p);
      return p;
    },
    async drop() {
      await Promise.all(pools.map((p) => p.end().catch(() => undefined)));
      const c = new pg.Client({ connectionString: serverUrl() });
      await c.connect();
      try {
        await c.query(`drop database if exists ${name} with (force)`);
      } finally {
        await c.end();
      }
    },
  };
}
