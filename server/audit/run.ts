// (before the fix: today's list, the cage's sums and the custody releases)
import type pg from 'pg';
import { auditOn } from '../cage/ledger.ts';
import { unverifiedReleases } from '../cage/custody.ts';
export async function auditOnce(client: pg.PoolClient, _o: { mode: 'read' | 'periodic' }) {
  return { violations: [...(await auditOn(client)), ...(await unverifiedReleases(client, undefined))] };
}
