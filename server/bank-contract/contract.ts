// The bank contract (spec: "Table creation (bank)", "Deposit (bank)", "Withdraw (bank)", the bank's
// tournament unregister): what both banks serve, stated once. The cage (server/cage/, money in its
// journal) and the chain bank (server/bank/, money in a vault on chain) each implement it and share
// nothing else: each imports from this folder, never from the other's.
//   routes         BANK_ROUTES: every route of the contract, each bank answers all of them alike
//                  (test/bank/bank-contract.test.ts runs them against both);
//   schemas        the bodies and parameters the routes accept (below), and the deposit read's answer;
//   keys           a deposit's key (the caller's Idempotency-Key, or the hash of a permit's fields),
//                  a withdrawal's key (the spec's keccak256 of userId:tableId:historyHash:chipAmount);
//   replay window  how long a repeated withdraw answers its settlement: cage.withdraw_replay_window()
//                  in SQL (db/functions/00_bank_contract.sql), read by both banks' lookups;
//   seat calls     the game's seat routes a bank calls (seat-calls.ts); table creation (tables.ts);
//   routing        a table's bank is its own (game.tables.bank): callers pick the bank per table
//                  (routing.ts), never per deployment.
import { keccak256, toHex } from 'viem';
import { z } from 'zod';
import { ApiError, zodIssues } from '../http/errors.ts';
import { describeRoute } from '../http/openapi.ts';
import { canonicalJson } from '../crypto/signing.ts';
import { chips, idempotencyKey, tableId } from '../http/schemas.ts';

/** The two banks, as game.tables.bank names them. */
export type BankName = 'cage' | 'chain';
export const BANK_NAMES: readonly BankName[] = ['cage', 'chain'];

/** Every route of the contract (method, path): both banks serve each one. */
export const BANK_ROUTES = [
  ['POST', '/api/tables'],
  ['POST', '/api/deposit'],
  ['GET', '/api/deposits/:idempotencyKey'],
  ['POST', '/api/withdraw'],
  ['POST', '/api/tournament/unregister'],
] as const;

/** The SQL expression of the withdraw replay window (an interval), for both banks' replay lookups. */
export const WITHDRAW_REPLAY_WINDOW_SQL = 'cage.withdraw_replay_window()';

// ---- schemas -------------------------------------------------------------------------------

/** A deposit's amount: a positive whole number of chips (a decimal string or a safe integer). */
export const depositAmount = chips;

/** An EIP-2612 permit as a client signs it for the chain bank (its deadline a decimal string or an integer). */
export const permitSchema = z.object({
  v: z.number().int().min(0).max(255),
  r: z.string().regex(/^0x[0-9a-fA-F]{64}$/),
  s: z.string().regex(/^0x[0-9a-fA-F]{64}$/),
  deadline: z.union([z.string().regex(/^[0-9]{1,20}$/), z.number().int().nonnegative()]).transform((v) => BigInt(v)),
}).strict();
export const signerAddress = z.string().regex(/^0x[0-9a-fA-F]{40}$/);

/** The cage's deposit: the cage balance pays, under the caller's key (header or body). */
export const cageDepositBody = z.object({
  tableId,
  seatIndex: z.number().int().min(0).max(9),
  amount: depositAmount,
  idempotencyKey: idempotencyKey.optional(),
});

/** The chain bank's deposit: a permit of the signer's linked wallet pays; its key is the permit's hash. */
export const chainDepositBody = z.object({
  tableId,
  seatIndex: z.number().int().min(0).max(9).nullish(),
  amount: z.union([z.string().regex(/^[1-9][0-9]{0,12}$/), z.number().int().positive().max(9_223_372_036_854)]).transform((v) => BigInt(v)),
  permit: permitSchema,
  signerAddress,
}).strict();

/** GET /api/deposits/:idempotencyKey: the key as either bank issues one (anything else: 400 bad_request). */
export const depositKeyParams = z.object({ idempotencyKey });

/** The deposit read's answer, on either bank: the caller's own deposit as it stands. */
export const depositReadAnswer = z.object({
  idempotencyKey: z.string(),
  status: z.string(),
  txHash: z.string().nullable(),
  tableId: z.string(),
  seatIndex: z.number().int().nullable(),
  amount: z.string().describe('chips, a decimal string'),
  moneyKind: z.enum(['play', 'real']),
  createdAt: z.date(),
  updatedAt: z.date(),
}).passthrough();

/** A voluntary withdraw (the caller's JWT); the chain bank also reads a linked destination wallet. */
export const voluntaryWithdrawBody = z.object({ tableId, destinationWallet: signerAddress.optional() }).strict();
/** A forced withdraw (x-service-key): the sit-out timeout's, or an operator's clearing. */
export const forcedWithdrawBody = z.object({ tableId, forced: z.literal(true), userId: z.uuid() }).strict();
/** A tournament place paid (x-service-key): the game's payout row's place and amount. */
export const payoutWithdrawBody = z.object({
  tableId,
  payoutIntent: z.object({
    position: z.number().int().min(1).max(10),
    amount: z.union([z.number().int().min(0).max(Number.MAX_SAFE_INTEGER), z.string().regex(/^[0-9]{1,19}$/)]).transform((v) => BigInt(v)),
  }).strict(),
}).strict();

/** POST /api/tournament/unregister: the caller leaves a registering tournament. */
export const unregisterBody = z.object({ tableId }).strict();

/** The route both banks serve for it (the refund's shape: docs/tournaments.md). */
export const unregisterRoute = describeRoute({
  method: 'post', path: '/api/tournament/unregister', auth: 'jwt', summary: 'Refunds the caller\'s paid registration while the tournament registers', body: unregisterBody,
  responses: { 200: '{ status, tableId, amount, txHash, registeredCount }' },
});

/** A paid place as both banks answer it (the cage's hash is its ledger ref, the chain bank's the chain's). */
export function payoutAnswer<H extends string | null>(p: {
  txHash: H; destination: string; amount: bigint; key: string; position: number; userId: string;
  tournamentState: string | undefined; replayed: boolean;
}) {
  return {
    status: 'confirmed' as const, txHash: p.txHash, destination: p.destination, amount: Number(p.amount), idempotencyKey: p.key,
    position: p.position, userId: p.userId, tournamentState: p.tournamentState, ...(p.replayed ? { replay: true } : {}),
  };
}

// ---- keys ----------------------------------------------------------------------------------

const permitKeyShape = z.object({
  permit: z.object({
    v: z.number().int().min(0).max(255),
    r: z.string().regex(/^0x[0-9a-fA-F]{64}$/),
    s: z.string().regex(/^0x[0-9a-fA-F]{64}$/),
    deadline: z.union([z.string().regex(/^[0-9]{1,78}$/), z.number().int().nonnegative()]).transform(String),
  }),
  signerAddress,
});

/**
 * The deposit key a client written for the chain bank brings: the hash of the permit fields,
 * keccak256 over the canonical JSON of `{ wallet: signerAddress, amount, deadline, v, r, s }` (hex
 * lower-cased, amount and deadline as decimal strings), so the same signed permit is the same
 * deposit however often it is sent, on either bank. Undefined when the body carries no permit.
 */
export function depositKeyOf(permit: unknown, signer: unknown, amount: bigint): `0x${string}` | undefined {
  if (permit === undefined && signer === undefined) return undefined;
  const parsed = permitKeyShape.safeParse({ permit, signerAddress: signer });
  if (!parsed.success) throw new ApiError(400, 'bad_request', zodIssues(parsed.error));
  const { v, r, s, deadline } = parsed.data.permit;
  return keccak256(toHex(canonicalJson({
    wallet: parsed.data.signerAddress.toLowerCase(), amount: amount.toString(), deadline, v, r: r.toLowerCase(), s: s.toLowerCase(),
  })));
}

/** The withdrawal key of the spec: keccak256 of `userId:tableId:historyHash:chipAmount`. */
export function withdrawKey(userId: string, table: string, historyHash: string, chipAmount: bigint): `0x${string}` {
  return keccak256(toHex(`${userId}:${table}:${historyHash}:${chipAmount}`));
}

// ---- the table a call names ----------------------------------------------------------------

/** A table as a bank reads it before any write: whose money, which mode, which status. */
export interface BankTable { table_id: string; bank: BankName; mode: 'cash' | 'sng'; status: 'active' | 'pending' | 'frozen'; money_kind: 'play' | 'real' }

/** The table a body names, or undefined (no such table, or not a table id). */
export async function findTable(pool: { query: (sql: string, values: unknown[]) => Promise<{ rows: unknown[] }> }, id: unknown): Promise<BankTable | undefined> {
  if (!tableId.safeParse(id).success) return undefined;
  const { rows } = await pool.query('select table_id, bank, mode, status, money_kind from game.table_records where table_id = $1', [id]);
  return rows[0] as BankTable | undefined;
}

/**
 * The table a call names, as `bank` may serve it: 404 table_not_found, or 409 not_a_cage_table /
 * not_a_chain_table for the other bank's table. Read before anything is written or asked of the
 * game: a call to the wrong bank leaves nothing behind (the seat is not stood up).
 */
export async function tableOfBank(pool: Parameters<typeof findTable>[0], id: unknown, bank: BankName): Promise<BankTable> {
  const table = await findTable(pool, id);
  if (!table) throw new ApiError(404, 'table_not_found');
  if (table.bank !== bank) throw new ApiError(409, bank === 'cage' ? 'not_a_cage_table' : 'not_a_chain_table');
  return table;
}

/** The lobby's query (GET /api/tables), judged by the game and proxied as it is by either bank. */
export const tableListQuery = z.object({
  mode: z.enum(['cash', 'sng']).optional(),
  status: z.enum(['active', 'pending', 'frozen']).optional(),
  moneyKind: z.enum(['play', 'real']).optional(),
  after: z.string().min(1).max(128).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
}).strict();
