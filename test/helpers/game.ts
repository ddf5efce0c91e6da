// Game-side fixtures for the SQL tests: table records, seat funding through the cage's deposit and
// the game's credit, the stand-up/settlement round trip, and a position chain checker that
// recomputes every hash as game_private.extend_chain documents it.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type pg from 'pg';
import { issueReceipt, signerFromPrivateKey } from '../../server/cage/receipts.ts';
import { TEST_RECEIPT_SEED } from './keys.ts';
import { settlePosition as settleWithReceipt } from '../../server/cage/seams.ts';
import { inTransaction } from '../../server/db/transaction.ts';
import { keccak256, stringToBytes } from 'viem';
import { playerGrant } from './db.ts';
import { compactHand } from '../../server/game/hands/compact.ts';

export type MoneyKind = 'play' | 'real';

/** Poker settings as the bank's route stores them (spec: Table records, Poker settings). */
export const POKER_SETTINGS = {
  smallBlind: 1, bigBlind: 2, minBuyIn: 40, maxBuyIn: 200, maxPlayers: 6, rakePercent: 5, rakeCap: 10,
  rakeMinPot: 0, rakeRequiresFlop: true, turnTimeSec: 30, turnTimerEnabled: true,
};

let seq = 0;
export const newTableId = (prefix = 'tbl') => `${prefix}-${process.pid}-${++seq}-${randomBytes(4).toString('hex')}`;
export const newKey = (prefix = 'key') => `${prefix}-${++seq}-${randomBytes(6).toString('hex')}`;

export interface TableRow {
  table_id: string;
  game_type: string;
  settings: Record<string, unknown>;
  money_kind: MoneyKind;
  status: string;
  mode: string;
  kind: string;
  current_hand_id: string | null;
  unreconciled_rake: bigint;
}

/** game.create_table as the cage role (the bank's POST /api/tables). */
export async function createTable(
  cage: pg.Pool,
  options: { tableId?: string; settings?: Record<string, unknown>; moneyKind?: MoneyKind; gameType?: string } = {},
): Promise<TableRow> {
  const { rows } = await cage.query<TableRow>('select * from game.create_table($1, $2, $3, $4, $5)', [
    options.tableId ?? newTableId(), options.gameType ?? 'poker', options.settings ?? POKER_SETTINGS,
    options.moneyKind ?? 'play', null,
  ]);
  return rows[0]!;
}

export interface DepositRow {
  ref_id: string;
  status: string;
  error: string | null;
  amount: bigint;
  table_id: string;
  seat_index: number;
  money_kind: MoneyKind;
  replayed: boolean;
}

export async function openDeposit(
  cage: pg.Pool, userId: string, key: string, tableId: string, seatIndex: number, amount: bigint,
): Promise<DepositRow> {
  // the player's access grant (the sid of their JWT): the cage derives the player from it
  const { rows } = await cage.query<DepositRow>('select * from cage.open_deposit($1, $2, $3, $4, $5)', [
    await playerGrant(cage, userId), key, tableId, seatIndex, String(amount),
  ]);
  return rows[0]!;
}

export interface SeatRow {
  player_id: bigint;
  seat_index: number;
  chip_balance: bigint;
  history_hash: string;
  status: string;
}

let depositOpener: pg.Pool | undefined;

/**
 * For the game side's own tests (db/tests/game_*.test.ts): every `creditSeat` first records, as the
 * owner, the pending cage deposit the key stands for, as cage.open_deposit would have (without its
 * money leg: those files do not assert the escrow). game.credit_seat funds a seat only for a live
 * deposit of the same user, table, seat and amount.
 */
export function openDepositsAs(owner: pg.Pool | undefined) {
  depositOpener = owner;
}

export async function creditSeat(
  game: pg.Pool, key: string, tableId: string, userId: string, seatIndex: number, amount: bigint,
): Promise<SeatRow> {
  await depositOpener?.query(
    `insert into cage.deposit_intents (ref_id, idempotency_key, user_id, table_id, seat_index, amount, money_kind)
     select $1, $1, $2, t.table_id, $4, $5, t.money_kind from game.tables t
      where t.table_id = $3 and $5::bigint > 0 and length($1) between 1 and 200
     on conflict do nothing`,
    [key, userId, tableId, seatIndex, String(amount)],
  );
  const { rows } = await game.query<SeatRow>('select * from game.credit_seat($1, $2, $3, $4, $5)', [
    key, tableId, userId, seatIndex, String(amount),
  ]);
  return rows[0]!;
}

/** The cage's deposit seam end to end: open (buy-in posted), credit the seat, confirm. */
/**
 * A credit as a release before credits were kept at once left it: the seat funded, the credit not
 * kept and its deposit still pending (the cage confirmed it in a call of its own). Only such a
 * credit can still be taken back by game.cancel_credit ('reverted'). Written as the owner.
 */
export async function asUnkeptCredit(owner: pg.Pool, key: string) {
  await owner.query('update game.seat_credits set kept_at = null where credit_key = $1', [key]);
  await owner.query("update cage.deposit_intents set status = 'pending', credited_at = null where ref_id = $1", [key]);
}

export async function sit(
  cage: pg.Pool, game: pg.Pool, userId: string, tableId: string, seatIndex: number, amount: bigint,
) {
  const deposit = await openDeposit(cage, userId, newKey('sit'), tableId, seatIndex, amount);
  const seat = await creditSeat(game, deposit.ref_id, tableId, userId, seatIndex, amount);
  await cage.query('select * from cage.confirm_deposit($1)', [deposit.ref_id]);
  return { deposit, seat };
}

export interface StandUpRow {
  player_id: bigint;
  seat_index: number;
  chip_balance: bigint;
  history_hash: string;
  money_kind: MoneyKind;
}

/**
 * The dealer's record that a seated player sat out `secondsAgo` ago (what game.set_sitting_out
 * writes under a room's lease), for tests without a room: a forced withdraw (the sit-out timeout)
 * is accepted only for a player sat out for the house's idle time.
 */
export async function satOutSince(owner: pg.Pool, tableId: string, userId: string, secondsAgo = 3600): Promise<void> {
  await owner.query(
    "update game.table_players set sat_out_at = now() - make_interval(secs => $3) where table_id = $1 and user_id = $2 and status = 'seated'",
    [tableId, userId, secondsAgo],
  );
}

/** The player's own stand-up: game.stand_up takes their access grant (the sid of their JWT), never a user id. */
export async function standUp(game: pg.Pool, tableId: string, userId: string): Promise<StandUpRow> {
  const { rows } = await game.query<StandUpRow>('select * from game.stand_up($1, $2)', [tableId, await playerGrant(game, userId)]);
  return rows[0]!;
}

/** The withdraw idempotency key of the spec: keccak256(userId:tableId:historyHash:chipAmount). */
export function withdrawKey(userId: string, tableId: string, historyHash: string, amount: bigint) {
  return keccak256(stringToBytes(`${userId}:${tableId}:${historyHash}:${amount}`));
}

export interface SettlementRow {
  idempotency_key: string;
  ledger_ref_id: string;
  amount: bigint;
  settlement: string;
  custody_entry_id: bigint | null;
  history_hash: string;
  money_kind: MoneyKind;
  player_id: bigint;
  replayed: boolean;
}

/** The receipt key of the SQL tests' cage (a fixed test key, pinned in the template database: receipts are not what they test). */
export const TEST_RECEIPT_SIGNER = signerFromPrivateKey(TEST_RECEIPT_SEED);

/** The cage's settlement of a stood-up position, with its receipt, in one transaction (as the cage writes it). */
export async function settlePosition(
  cage: pg.Pool,
  p: { userId: string; tableId: string; playerId: bigint; amount: bigint; historyHash: string; key?: string; settlement: 'cash_out' | 'custody' | 'bust'; forced?: boolean },
): Promise<SettlementRow> {
  const key = p.key ?? withdrawKey(p.userId, p.tableId, p.historyHash, p.amount);
  const { receipt: _receipt, ...row } = await settleWithReceipt(cage, TEST_RECEIPT_SIGNER, {
    userId: p.userId, tableId: p.tableId, playerId: String(p.playerId), chipAmount: p.amount, historyHash: p.historyHash,
    idempotencyKey: key, settlement: p.settlement, forced: p.forced ?? false,
  });
  return row as SettlementRow;
}

/** A custody claim with its receipt, in one transaction (as the cage's route writes it). */
export async function claimCustody(cage: pg.Pool, userId: string, entryId: bigint | string) {
  return inTransaction(cage, async (client) => {
    const { rows } = await client.query('select * from cage.claim_custody($1, $2)', [await playerGrant(cage, userId), String(entryId)]);
    const c = rows[0];
    await issueReceipt(client, TEST_RECEIPT_SIGNER, {
      v: 1, kind: 'custody_claim', ledgerRefId: c.ref_id, userId, tableId: c.table_id ?? undefined,
      custodyEntryId: c.entry_id.toString(), chipAmount: c.amount, moneyKind: c.money_kind,
    });
    return c;
  });
}

/** Stand-up, the cage's terminal settlement, the game's zeroing and the cage's mark, in order. */
export async function leave(
  cage: pg.Pool, game: pg.Pool, tableId: string, userId: string, settlement: 'cash_out' | 'custody' | 'bust' = 'cash_out',
) {
  const position = await standUp(game, tableId, userId);
  const settled = await settlePosition(cage, {
    userId, tableId, playerId: position.player_id, amount: position.chip_balance, historyHash: position.history_hash, settlement,
    forced: settlement === 'custody',
  });
  await game.query('select * from game.settle_seat($1, $2, $3)', [String(position.player_id), settled.ledger_ref_id, settlement]);
  await cage.query('select * from cage.mark_withdrawal_settled($1)', [settled.idempotency_key]);
  return { position, settled };
}

const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');

export interface LinkRow {
  seq: number;
  event: string;
  delta: bigint;
  stack: bigint;
  ref_id: string | null;
  prev_hash: string;
  hash: string;
}

/**
 * Reads a position's chain and recomputes it from its genesis (sha256 of
 * `position:{tableId}:{userId}:{positionId}`), each link being sha256 of
 * `prev|seq|event|delta|stack|ref`. Returns the links and whether every hash matches and the head is
 * the seat's history_hash.
 */
export async function verifyChain(reader: pg.Pool, playerId: bigint) {
  const { rows: [player] } = await reader.query<{ table_id: string; user_id: string; history_hash: string; chain_length: number }>(
    'select table_id, user_id, history_hash, chain_length from game.table_players where id = $1', [String(playerId)]);
  const { rows: links } = await reader.query<LinkRow>(
    // both places its links are kept (a hand's in its row since issue 33): the owner's read
    'select seq, event, delta, stack, ref_id, prev_hash, hash from game_private.position_chain($1, 0, null) order by seq',
    [String(playerId)]);
  let prev = sha256(`position:${player!.table_id}:${player!.user_id}:${playerId}`);
  const genesis = prev;
  let ok = links.length === player!.chain_length;
  links.forEach((l, i) => {
    const expected = sha256(`${prev}|${i + 1}|${l.event}|${l.delta}|${l.stack}|${l.ref_id ?? ''}`);
    if (l.seq !== i + 1 || l.prev_hash !== prev || l.hash !== expected) ok = false;
    prev = expected;
  });
  return { ok: ok && prev === player!.history_hash, links, genesis, head: player!.history_hash };
}

/** A poker user made the way the bridge makes one (an invite, a bridge sign-in), as the owner. */
export async function authUser(owner: pg.Pool): Promise<ReturnType<typeof randomUUID>> {
  const invite = `inv_${randomBytes(12).toString('hex')}`;
  await owner.query('select auth.mint_invite($1)', [invite]);
  const { rows } = await owner.query("select user_id from auth.bridge_sign_in('oidc', $1, null, $2)", [randomUUID(), invite]);
  return rows[0].user_id;
}

/** A random Solana-shaped address (base58, 44 characters). */
export function solanaAddress() {
  const alphabet = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
  return Array.from(randomBytes(44), (b) => alphabet[b % alphabet.length]).join('');
}


/**
 * A hand's history as game.end_hand takes it (issue 33): the compact value (history and result, as the
 * game process compresses them) and the hand_started event stored beside it. A history with no
 * hand_started event gets a bare one, the least a caller of game.end_hand must send.
 */
export function handEnding(history: string, result: string | null = null): { compact: Buffer; started: string } {
  const events = JSON.parse(history) as { type?: string }[];
  const started = events.find((e) => e.type === 'hand_started') ?? { type: 'hand_started' };
  return { compact: compactHand(history, result), started: JSON.stringify(started) };
}
