// A poker user as the bridge makes one (an invite, a bridge sign-in) and an access JWT for it,
// signed with the auth role's own key (the harness's: helpers/keys.ts): what a bridged browser
// holds.
import { randomBytes, randomUUID } from 'node:crypto';
import { createKeyStore } from '../../server/auth/keys.ts';
import { testRoleKey } from './keys.ts';
import type { TestDatabase } from './db.ts';

export async function bridgedUser(db: TestDatabase, options: { issuer: string }) {
  const invite = `inv_${randomBytes(12).toString('hex')}`;
  await db.owner.query('select auth.mint_invite($1)', [invite]);
  const { rows } = await db.owner.query("select user_id from auth.bridge_sign_in('oidc', $1, null, $2)", [randomUUID(), invite]);
  const userId = rows[0].user_id as string;
  const jwt = await createKeyStore(db.pool('poker_auth', 1), { privateKey: await testRoleKey('auth'), issuer: options.issuer }).sign({ sub: userId, walletAddress: null });
  return { userId, jwt };
}

/** The claim-board conditions queued for the game role (graphile-worker `deliver_condition` jobs), oldest first. */
export async function queuedConditions(db: TestDatabase, userId?: string) {
  const { rows } = await db.owner.query<{ payload: { userId: string; conditionKey: string; idempotencyKey: string } }>(
    `select j.payload from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
      where t.identifier = 'deliver_condition' and ($1::text is null or j.payload ->> 'userId' = $1) order by j.id`,
    [userId ?? null],
  );
  return rows.map((r) => r.payload);
}
