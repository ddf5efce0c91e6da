// Fixtures of the escape and custody tests (test/cage/cage-escape.test.ts, test/cage/cage-custody.test.ts):
// a cash table with seated players over HTTP, a hand, the books made to diverge as a crash would
// leave them, escapes, an operator who signed out, and the custody arbiter's key and signatures.
import { randomUUID } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { hashPassword } from '../../server/auth/passwords.ts';
import type { TestDatabase } from './db.ts';
import { call, type moneyClient } from './money.ts';

type Money = ReturnType<typeof moneyClient>;
export type Player = Awaited<ReturnType<Money['player']>>;
export interface Seated extends Player {
  positionId: string;
  seatIndex: number;
}

/** A cash table where each buy-in sits a new player (bought `buyIn + spare` chips), seats 0, 1, ... */
export async function seatedTable(m: Money, buyIns: number[], spare = 100) {
  const players = await Promise.all(buyIns.map(() => m.player(0)));
  for (const [i, p] of players.entries()) await m.buy(p.userId, buyIns[i]! + spare);
  const tableId = await m.table(players[0]!.auth);
  const seated: Seated[] = [];
  for (const [i, p] of players.entries()) {
    const r = await m.deposit(p.auth, { tableId, seatIndex: i, amount: buyIns[i] });
    if (r.status !== 200) throw new Error(`sit failed: ${r.status} ${JSON.stringify(r.body)}`);
    const { rows } = await m.db.owner.query<{ id: bigint }>(
      "select id from game.table_players where table_id = $1 and user_id = $2 and status <> 'closed'", [tableId, p.userId]);
    seated.push({ ...p, positionId: rows[0]!.id.toString(), seatIndex: i });
  }
  return { tableId, players: seated };
}

/** One hand played to its end through the harness's dealer route: the new stacks (by player) and the rake. */
export async function playHand(m: Money, tableId: string, stacks: [Seated, number][], rake = 0) {
  const handId = `h-${randomUUID()}`;
  const begin = await m.hand({ action: 'begin', tableId, handId });
  if (begin.status !== 200) throw new Error(`begin failed: ${begin.status} ${JSON.stringify(begin.body)}`);
  const end = await m.hand({ action: 'finish', tableId, handId, stacks: Object.fromEntries(stacks.map(([p, s]) => [p.positionId, s])), rake });
  if (end.status !== 200) throw new Error(`finish failed: ${end.status} ${JSON.stringify(end.body)}`);
  return handId;
}

/**
 * The books of a table made to diverge the way a crash would leave them: a seat's stack written
 * without its chain link and without the escrow moving (a torn hand end). Here a hand end is one
 * transaction, so this cannot happen through the platform; it is what a crash between two separate
 * writes leaves where the seats and the escrow live apart (the chain bank), or a bad manual edit.
 * Written as the owner, which is the only way to reach it now.
 */
export async function tearStack(db: TestDatabase, positionId: string, delta: number) {
  await db.owner.query('update game.table_players set chip_balance = chip_balance + $2 where id = $1', [positionId, delta]);
}

/** POST /escape/:tableId as an operator. */
export const escape = (m: Money, auth: Record<string, string>, tableId: string, reason = 'the game process is gone') =>
  call(`${m.cage}/escape/${encodeURIComponent(tableId)}`, { headers: auth, body: { reason } });

/** An operator whose session is over: signed in, given an access JWT, then signed out. The JWT still verifies. */
export async function signedOutOperator(db: TestDatabase, authUrl: string) {
  const email = `ops-${randomUUID().slice(0, 8)}@example.com`;
  const password = `operator-${randomUUID()}`;
  await db.owner.query('select auth.create_admin($1, $2)', [email, await hashPassword(password)]);
  const session = await call<{ token: string }>(`${authUrl}/api/auth/sign-in/email`, { body: { email, password } });
  const token = await call<{ token: string }>(`${authUrl}/api/auth/token`, { headers: { authorization: `Bearer ${session.body.token}` } });
  const out = await call(`${authUrl}/api/auth/sign-out`, { method: 'POST', headers: { authorization: `Bearer ${session.body.token}` } });
  if (out.status !== 200 || !token.body.token) throw new Error('operator sign-in/out failed');
  return { authorization: `Bearer ${token.body.token}` };
}

/** An ed25519 key pair: the arbiter's, or any other signer's. */
export function signer() {
  const secret = ed25519.utils.randomSecretKey();
  return {
    publicKey: Buffer.from(ed25519.getPublicKey(secret)).toString('hex'),
    /** A detached signature over the message's UTF-8 bytes, as hex. */
    sign: (message: string) => Buffer.from(ed25519.sign(new TextEncoder().encode(message), secret)).toString('hex'),
  };
}

/** A custody entry's row as the owner reads it. */
export async function custodyEntry(db: TestDatabase, entryId: string) {
  const { rows } = await db.owner.query('select id, user_id, status, amount, hold_id, escape_id from cage.custody_entries where id = $1', [entryId]);
  return rows[0];
}

/** The balance of a table's escrow (0 when it has none). */
export async function escrowOf(db: TestDatabase, tableId: string): Promise<bigint> {
  const { rows } = await db.owner.query<{ balance: bigint }>(
    "select coalesce(sum(balance), 0)::bigint as balance from cage.cage_accounts where account_type = 'table_escrow' and scope = $1", [tableId]);
  return rows[0]!.balance;
}
