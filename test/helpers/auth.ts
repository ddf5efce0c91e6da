// A poker user as the bridge makes one (an invite, a bridge sign-in) and an access JWT for it,
// signed with the auth role's own keys: what a bridged browser holds.
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
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

/** A condition-met call the auth role posted to the game role: its body and the service key it carried. */
export interface PostedCondition {
  body: { userId: string; conditionKey: string; idempotencyKey?: string };
  key: string | undefined;
}

/**
 * A stand-in game role on an ephemeral port that records the claim board's condition-met calls the
 * auth role posts after a Solana link (GAME_URL points at `url`) and answers them `{ ok: true }`.
 */
export async function startConditionSink() {
  const conditions: PostedCondition[] = [];
  const server = createServer((req, res) => {
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => {
      if (req.url === '/internal/claim-board/condition-met') conditions.push({ body: JSON.parse(data), key: req.headers['x-service-key'] as string | undefined });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    conditions,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
