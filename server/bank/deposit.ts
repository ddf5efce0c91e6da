// POST /api/deposit on the chain bank (spec: "Deposit (bank)"): a permit-funded deposit into the
// table vault, then the game's credit-chips callback. The order:
//   1. the body (tableId, seatIndex, amount, permit, signerAddress) and the key: the hash of the
//      permit fields (the bank contract's depositKeyOf, server/bank-contract/contract.ts, so the
//      same signed permit is the same deposit on either bank);
//   2. the permit's signer recovered from the token's EIP-712 domain (signature_invalid) and equal
//      to signerAddress (invalid_signer_address);
//   3. the signer one of the player's linked EVM wallets, read from the auth role
//      (wallet_not_linked; auth_service_not_configured / auth_server_unavailable), and again in SQL;
//   4. the intent opened (bank.open_deposit; a replay answers its state), the register-and-deposit
//      sent, its receipt awaited within the confirm window: confirmed (the vault's Deposited event
//      recorded), failed (409 with the revert reason), or still submitted (200 with a note: the
//      reconciler confirms and credits it);
//   5. the game's credit-chips callback; credited_at stays null until it lands (the reconciler
//      retries it every 30 s and at startup).
import type { Express, Request, Response } from 'express';
import type pg from 'pg';
import type { Logger } from 'pino';
import { getAddress, type Address, type Hex } from 'viem';
import { ApiError, zodIssues } from '../http/errors.ts';
import { playerSession, type JwtVerifier } from '../http/jwt.ts';
import type { ServiceClient } from '../http/service-client.ts';
import { withSpan } from '../telemetry/index.ts';
import { chainDepositBody, depositKeyOf, depositKeyParams } from '../bank-contract/contract.ts';
import { creditChips } from '../bank-contract/seat-calls.ts';
import { ChainRevert, ChainUnavailable, type ChainBankChain } from '../chain/types.ts';
import { describeRoute } from '../http/openapi.ts';
import { deploymentIsActive } from './deployment.ts';

export interface BankDeps {
  pool: pg.Pool;
  log: Logger;
  jwt: JwtVerifier;
  serviceKey: string | undefined;
  /** The chain, or why there is none (chain_not_configured). */
  chain: () => ChainBankChain | undefined;
  game: ServiceClient;
  /** The auth role, for the linked-wallet read; undefined: auth_service_not_configured. */
  auth: ServiceClient | undefined;
  /** How long a deposit waits for its receipt before answering `submitted`. */
  confirmWindowMs: number;
  /** Where the reconciler's scan reads the chain (EVM_RPC_URL; else the deployment's own rpc_url). */
  rpcUrl?: string;
}

export { chainDepositBody };

/**
 * Where confirmed deposits spend their time, in milliseconds summed over this process's deposits
 * (read by `npm run bench -- chain-bank`): the permit's signer recovered, the auth role's wallet
 * read, the chain (submit and receipt), the game's credit callback, and the bank's own SQL.
 */
export const depositPhases = { deposits: 0, recoverMs: 0, authMs: 0, chainMs: 0, callbackMs: 0, sqlMs: 0 };

async function timedPhase<T>(phase: 'recoverMs' | 'authMs' | 'chainMs' | 'callbackMs' | 'sqlMs', work: () => Promise<T>): Promise<T> {
  const start = performance.now();
  try {
    return await work();
  } finally {
    depositPhases[phase] += performance.now() - start;
  }
}

export function requireChain(deps: BankDeps): ChainBankChain {
  const chain = deps.chain();
  if (!chain) throw new ApiError(503, 'chain_not_configured');
  return chain;
}

/**
 * The chain, and its contracts the active deployment (an intent records the active deployment: its
 * tokens must go to that vault, not to another), else 503 deployment_not_active.
 */
export async function requireActiveChain(deps: BankDeps): Promise<ChainBankChain> {
  const chain = requireChain(deps);
  if (!(await deploymentIsActive(deps, chain.deployment))) throw new ApiError(503, 'deployment_not_active');
  return chain;
}

/** The user's linked EVM wallets (lower case), read from the auth role (the spec's internal read). */
export async function linkedWallets(deps: BankDeps, userId: string): Promise<string[]> {
  if (!deps.auth) throw new ApiError(503, 'auth_service_not_configured');
  const answer = await deps.auth.get<{ wallets: { walletAddress?: string; address?: string }[] }>(`/api/internal/user-wallets/${userId}`);
  if ('unreachable' in answer) throw new ApiError(503, answer.reason === 'not_configured' ? 'auth_service_not_configured' : 'auth_server_unavailable');
  if (!answer.ok) throw new ApiError(503, 'auth_server_unavailable');
  return answer.body.wallets.map((w) => String(w.walletAddress ?? w.address ?? '').toLowerCase());
}

interface DepositRow {
  idempotency_key: string; status: string; tx_hash: string | null; error: string | null; user_id: string; table_id: string;
  seat_index: number | null; amount: bigint; wallet: string; mode: string; credited: boolean; replayed: boolean;
}

type Span = Parameters<Parameters<typeof withSpan>[2]>[0];

/** A tournament entry's seat (once paid; after the field filled, the shuffled one) and the tournament's state and count. */
async function entryState(deps: BankDeps, tableId: string, key: string) {
  const { rows } = await deps.pool.query<{ seat_index: number | null; tournament_state: string; registered_count: number }>(
    `select (select p.seat_index from game.seats p where p.table_id = t.table_id and p.entry_ref_id = $2) as seat_index,
            t.tournament_state, t.registered_count
       from game.tournaments t where t.table_id = $1`, [tableId, key],
  );
  const r = rows[0];
  return { seatIndex: r?.seat_index ?? null, tournamentState: r?.tournament_state, registeredCount: r?.registered_count };
}

/**
 * A replayed key: its state (spec: confirmed -> replay; submitted/pending -> in flight; failed -> 409).
 * A tournament entry refunded since answers that (what is true now), as the cage's replay does.
 */
async function replayAnswer(deps: BankDeps, row: DepositRow, span: Span) {
  if (row.status === 'confirmed') {
    span.setAttribute('deposit.result', 'replay_confirmed');
    if (row.mode === 'sng') {
      const { rows } = await deps.pool.query<{ tx_hash: string | null; payment_key: string }>(
        "select refund_tx_hash as tx_hash, refund_key as payment_key from bank.deposit_states where idempotency_key = $1 and status = 'refunded'", [row.idempotency_key],
      );
      if (rows[0]) {
        return { status: 'refunded', txHash: row.tx_hash, idempotencyKey: row.idempotency_key, seatIndex: null, replay: true, refundTxHash: rows[0].tx_hash };
      }
      return { status: 'confirmed', txHash: row.tx_hash, idempotencyKey: row.idempotency_key, replay: true, ...(await entryState(deps, row.table_id, row.idempotency_key)) };
    }
    return { status: 'confirmed', txHash: row.tx_hash, idempotencyKey: row.idempotency_key, replay: true };
  }
  if (row.status === 'failed') {
    span.setAttribute('deposit.result', 'failed');
    throw new ApiError(409, 'failed', undefined, { status: 'failed', reason: row.error });
  }
  span.setAttribute('deposit.result', 'submitted_not_confirmed');
  return { status: row.status, txHash: row.tx_hash, idempotencyKey: row.idempotency_key, replay: true };
}

/**
 * The seat funded from a confirmed deposit: the game's credit-chips callback (idempotent per key),
 * then credited_at. Answers the seat as the game funded it (seatIndex, chipBalance), or undefined:
 * a failure leaves credited_at null for the reconciler; the deposit's answer stands.
 */
export async function creditDeposit(deps: BankDeps, row: { idempotency_key: string; table_id: string; user_id: string; seat_index: number | null; amount: bigint }) {
  const answer = await creditChips(deps.game, {
    creditKey: row.idempotency_key, tableId: row.table_id, userId: row.user_id, seatIndex: row.seat_index, amount: BigInt(row.amount), moneyKind: 'real',
  });
  if (!answer.ok) {
    deps.log.warn({ key: row.idempotency_key, status: answer.status, error: answer.body.error }, 'chain deposit confirmed but not credited yet; the reconciler retries');
    return undefined;
  }
  await deps.pool.query('select bank.mark_credited($1)', [row.idempotency_key]);
  return { seatIndex: answer.body.seatIndex, chipBalance: answer.body.chipBalance };
}

/** The outcome of a submitted deposit, recorded: confirmed with its event, failed with its reason, or still submitted. */
export async function settleDepositOutcome(deps: BankDeps, chain: ChainBankChain, key: string, txHash: Hex, waitMs: number) {
  const outcome = await chain.waitForOutcome(txHash, waitMs);
  if (outcome.status === 'reverted') {
    await deps.pool.query('select bank.fail_deposit($1, $2)', [key, outcome.reason]);
    return { status: 'failed' as const, reason: outcome.reason };
  }
  if (outcome.status === 'pending') return { status: 'submitted' as const };
  const event = await chain.depositOf(txHash);
  if (!event) {
    await deps.pool.query('select bank.fail_deposit($1, $2)', [key, 'no Deposited event in the receipt']);
    return { status: 'failed' as const, reason: 'no Deposited event in the receipt' };
  }
  await deps.pool.query('select bank.confirm_deposit($1, $2, $3, $4, $5)', [key, txHash, event.blockNumber.toString(), event.owner, event.amount.toString()]);
  return { status: 'confirmed' as const };
}

async function deposit(deps: BankDeps, req: Request, res: Response, span: Span) {
  const parsed = chainDepositBody.safeParse(req.body ?? {});
  if (!parsed.success) {
    const b = (req.body ?? {}) as Record<string, unknown>;
    if (b.tableId === undefined || b.amount === undefined || b.permit === undefined || b.signerAddress === undefined) {
      throw new ApiError(400, 'missing_required_fields');
    }
    if (typeof b.signerAddress !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(b.signerAddress)) throw new ApiError(400, 'invalid_signer_address');
    throw new ApiError(400, 'bad_request', zodIssues(parsed.error));
  }
  const b = parsed.data;
  const userId: string = res.locals.claims.sub;
  const chain = await requireActiveChain(deps);
  const key = depositKeyOf({ ...b.permit, deadline: b.permit.deadline.toString() }, b.signerAddress, b.amount)!;
  const claimed = getAddress(b.signerAddress) as Address;
  span.setAttributes({ 'deposit.idempotency_key': key, 'deposit.claimed_signer': claimed, 'confirm_mode': 'receipt' });
  // a permit already used answers its deposit as it stands (its signer no longer recovers: the
  // token's nonce moved on when it was spent); another player's permit is not theirs to replay
  const { rows: known } = await deps.pool.query<DepositRow>(
    "select *, credited_at is not null as credited, true as replayed from bank.deposit_records where idempotency_key = $1", [key],
  );
  if (known[0]) {
    if (known[0].user_id !== userId || known[0].table_id !== b.tableId || BigInt(known[0].amount) !== b.amount) throw new ApiError(409, 'idempotency_key_reused');
    return replayAnswer(deps, known[0], span);
  }
  // 2. the permit's signer
  const { signer: recovered, nonce } = await timedPhase('recoverMs', () => chain.recoverPermitSigner({ owner: claimed, chips: b.amount, permit: { ...b.permit, r: b.permit.r as Hex, s: b.permit.s as Hex } })
    .catch((err: unknown) => { if (err instanceof ChainUnavailable) throw new ApiError(503, 'chain_unavailable'); throw err; }));
  // the permit's nonce: the token's nonce for the signer, which the permit consumes
  span.setAttributes({ 'deposit.recovered_signer': recovered ?? '', 'deposit.nonce': nonce.toString() });
  if (!recovered) { span.setAttribute('deposit.result', 'signature_invalid'); throw new ApiError(400, 'signature_invalid'); }
  if (recovered.toLowerCase() !== claimed.toLowerCase()) { span.setAttribute('deposit.result', 'signature_invalid'); throw new ApiError(400, 'invalid_signer_address'); }
  // 3. linked to the player (the auth role's read; SQL checks it again)
  const wallets = await timedPhase('authMs', () => linkedWallets(deps, userId));
  const linked = wallets.includes(claimed.toLowerCase());
  span.setAttribute('auth.linked', linked);
  if (!linked) { span.setAttribute('deposit.result', 'wallet_not_linked'); throw new ApiError(400, 'wallet_not_linked'); }
  // 4. the intent, then the chain
  const { rows } = await timedPhase('sqlMs', () => deps.pool.query<DepositRow>(
    'select * from bank.open_deposit($1, $2, $3, $4, $5, $6, $7)',
    [playerSession(res), key, b.tableId, b.seatIndex ?? null, b.amount.toString(), claimed, b.permit.deadline.toString()],
  )).catch((err: { message?: string }) => {
    if (err.message === 'table_frozen') span.setAttribute('deposit.result', 'table_frozen');
    throw err;
  });
  const row = rows[0]!;
  if (row.replayed) return replayAnswer(deps, row, span);
  let txHash: Hex;
  try {
    txHash = await timedPhase('chainMs', () => chain.submitDeposit({ tableId: b.tableId, owner: claimed, chips: b.amount, permit: { ...b.permit, r: b.permit.r as Hex, s: b.permit.s as Hex } }));
  } catch (err) {
    if (err instanceof ChainRevert) {
      await deps.pool.query('select bank.fail_deposit($1, $2)', [key, err.reason]);
      span.setAttribute('deposit.result', 'failed');
      throw new ApiError(400, 'failed', undefined, { status: 'failed', reason: err.reason });
    }
    // unknown whether the node took it: the intent stays pending for the reconciler
    span.setAttribute('deposit.result', 'failed');
    throw new ApiError(503, 'chain_unavailable', undefined, { status: 'pending', idempotencyKey: key });
  }
  await timedPhase('sqlMs', () => deps.pool.query('select bank.submit_deposit($1, $2)', [key, txHash]));
  span.setAttribute('deposit.tx_hash', txHash);
  const outcome = await timedPhase('chainMs', () => settleDepositOutcome(deps, chain, key, txHash, deps.confirmWindowMs));
  if (outcome.status === 'failed') {
    span.setAttribute('deposit.result', 'failed');
    throw new ApiError(400, 'failed', undefined, { status: 'failed', reason: outcome.reason, txHash });
  }
  if (outcome.status === 'submitted') {
    span.setAttribute('deposit.result', 'submitted_not_confirmed');
    return { status: 'submitted', txHash, idempotencyKey: key, note: 'not confirmed within the window: chips are credited once it confirms' };
  }
  // 5. the seat, or the tournament entry (its seat the one the deposit held: row.seat_index)
  const seat = await timedPhase('callbackMs', () => creditDeposit(deps, { idempotency_key: key, table_id: b.tableId, user_id: userId, seat_index: row.seat_index, amount: b.amount }));
  depositPhases.deposits++;
  span.setAttribute('deposit.result', 'confirmed');
  deps.log.info({ userId, tableId: b.tableId, amount: b.amount.toString(), txHash }, 'chain deposit confirmed');
  // the seat as the game funded it (as the cage answers: the websocket's `seated` reads it), or the entry's
  return { status: 'confirmed', txHash, idempotencyKey: key, ...(row.mode === 'sng' ? await entryState(deps, b.tableId, key) : seat ?? {}) };
}

/** The contracts of installBankDepositRoutes. */
export const bankDepositRoutes = [
  describeRoute({
    method: 'post', path: '/api/deposit', auth: 'jwt', summary: 'Buys into a seat with an EIP-2612 permit of the signer\'s linked wallet', body: chainDepositBody,
    responses: {
      200: '{ status: confirmed, txHash, idempotencyKey, ... }', 400: 'wallet_not_linked / permit refused', 404: 'table_not_found',
      409: 'seat_taken / hand_in_progress / table_frozen', 503: 'chain_not_configured / chain_unavailable',
    },
  }),
  describeRoute({
    method: 'get', path: '/api/deposits/:idempotencyKey', auth: 'jwt', summary: 'The caller\'s deposit by its key (0x and 64 hex digits)',
    params: depositKeyParams,
    responses: { 200: '{ idempotencyKey, status, txHash, error, tableId, seatIndex, amount, moneyKind: real, wallet, creditedAt, createdAt, updatedAt }', 400: 'bad_request', 404: 'deposit_not_found' },
  }),
];

export function installBankDepositRoutes(app: Express, deps: BankDeps) {
  app.post('/api/deposit', deps.jwt.require, async (req, res) => {
    const b = (req.body ?? {}) as Record<string, unknown>;
    await withSpan('admin.deposit', {
      'deposit.userId': res.locals.claims.sub, 'deposit.tableId': typeof b.tableId === 'string' ? b.tableId.slice(0, 64) : '',
      'deposit.amount': typeof b.amount === 'string' || typeof b.amount === 'number' ? String(b.amount).slice(0, 32) : '',
    }, async (span) => {
      res.json(await deposit(deps, req, res, span));
    });
  });

  app.get('/api/deposits/:idempotencyKey', deps.jwt.require, async (req, res) => {
    const parsed = depositKeyParams.safeParse(req.params);
    if (!parsed.success) throw new ApiError(400, 'bad_request', zodIssues(parsed.error));
    // a well-formed key this bank never issues (its keys are permit hashes) is simply not found
    const key = parsed.data.idempotencyKey;
    if (!/^0x[0-9a-f]{64}$/.test(key)) throw new ApiError(404, 'deposit_not_found');
    const { rows } = await deps.pool.query(
      `select idempotency_key, status, tx_hash, error, table_id, seat_index, amount, wallet, credited_at, created_at, updated_at
         from bank.deposit_states where idempotency_key = $1 and user_id = $2`, [key, res.locals.claims.sub],
    );
    const r = rows[0];
    if (!r) throw new ApiError(404, 'deposit_not_found');
    res.json({
      idempotencyKey: r.idempotency_key, status: r.status, txHash: r.tx_hash, error: r.error, tableId: r.table_id, seatIndex: r.seat_index,
      amount: BigInt(r.amount).toString(), moneyKind: 'real', wallet: r.wallet, creditedAt: r.credited_at, createdAt: r.created_at, updatedAt: r.updated_at,
    });
  });
}
