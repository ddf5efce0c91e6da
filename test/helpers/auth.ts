// A poker user as the bridge makes one (an invite, a bridge sign-in) and an access JWT for it,
// signed with the auth role's own keys: what a bridged browser holds.
import { randomBytes, randomUUID } from 'node:crypto';
import { createKeyStore } from '../../server/auth/keys.ts';
import type { TestDatabase } from './db.ts';

export async function bridgedUser(db: TestDatabase, options: { secret: string; issuer: string }) {
  const invite = `inv_${randomBytes(12).toString('hex')}`;
  await db.owner.query('select auth.mint_invite($1)', [invite]);
  const { rows } = await db.owner.query("select user_id from auth.bridge_sign_in('oidc', $1, null, $2)", [randomUUID(), invite]);
  const userId = rows[0].user_id as string;
  const jwt = await createKeyStore(db.pool('poker_auth', 1), options).sign({ sub: userId, walletAddress: null });
  return { userId, jwt };
}
