// The betting domain's SQL, one typed function per call (the pattern of server/game/hands/hands.ts):
// the routes hold no SQL. Reads go through the read views (db/functions/betting/30_read_views.sql),
// never a base table; each money step is ONE call of one function, one transaction across the cage
// and betting schemas (issue 32: betting has one boundary):
//   openStake    cage.open_bet_stake: the bet_stake debit and the bet, together
//   removeBet    betting.remove_bet: the bet out of the pool, then the stake credited back
//   claimPayout  cage.claim_bet_payout: the market brought up to date, the recorded payout credited
import type pg from 'pg';

type Db = pg.Pool | pg.PoolClient;

export interface MarketRow {
  market_id: string;
  table_id: string;
  money_kind: string;
  runners: string[];
  status: string;
  winner_user_id: string | null;
  void_reason: string | null;
  opened_at: Date;
  closed_at: Date | null;
  settled_at: Date | null;
}

export interface StakeRow {
  ref_id: string; status: string; error: string | null; market_id: string; runner_user_id: string; amount: bigint;
  money_kind: string; replayed: boolean;
}

export interface StakeRecord {
  ref_id: string; idempotency_key: string; market_id: string; runner_user_id: string; amount: bigint; money_kind: string;
  status: string; error: string | null; refund_ref_id: string | null; created_at: Date; updated_at: Date;
}

export interface UnbetRow { stake_ref: string; market_id: string; amount: bigint; replayed: boolean; refund_ref_id: string; money_kind: string }
export interface PayoutRow { ref_id: string; market_id: string; amount: bigint; money_kind: string; replayed: boolean }
export interface BetRow { stake_ref: string; market_id: string; user_id: string; runner_user_id: string; amount: bigint; replayed: boolean }

const MARKET_COLUMNS = 'market_id, table_id, money_kind, runners, status, winner_user_id, void_reason, opened_at, closed_at, settled_at';

export async function marketById(db: Db, marketId: string): Promise<MarketRow | null> {
  const { rows } = await db.query<MarketRow>(`select ${MARKET_COLUMNS} from betting.market_records where market_id = $1`, [marketId]);
  return rows[0] ?? null;
}

/** The market of a tournament brought up to date first (betting.sync_market); null when it has none. */
export async function syncedMarketOfTable(db: Db, tableId: string): Promise<MarketRow | null> {
  const { rows } = await db.query<{ market_id: string | null }>('select (betting.sync_market($1)).market_id', [tableId]);
  if (!rows[0]?.market_id) return null;
  return marketById(db, rows[0].market_id);
}

/** Each runner's pool of a market: the bets still in it. */
export async function runnerPools(db: Db, marketId: string) {
  const { rows } = await db.query<{ runner_user_id: string; staked: bigint; bets: number }>(
    'select runner_user_id, staked, bets from betting.runner_pools where market_id = $1', [marketId],
  );
  return rows;
}

/** A user's stakes, newest first. */
export async function stakesOf(db: Db, userId: string): Promise<StakeRecord[]> {
  const { rows } = await db.query<StakeRecord>(
    `select ref_id, idempotency_key, market_id, runner_user_id, amount, money_kind, status, error, refund_ref_id, created_at, updated_at
       from betting.stakes where user_id = $1 order by created_at desc, ref_id limit 500`, [userId],
  );
  return rows;
}

/** The status of a user's own stake, or null when it is not theirs (or does not exist). */
export async function stakeStatus(db: Db, stakeRef: string, userId: string): Promise<string | null> {
  const { rows } = await db.query<{ status: string }>('select status from betting.stakes where ref_id = $1 and user_id = $2', [stakeRef, userId]);
  return rows[0]?.status ?? null;
}

/** The bet of a stake as the betting service recorded it, or null. */
export async function betRecord(db: Db, stakeRef: string) {
  const { rows } = await db.query<{ stake_ref: string; market_id: string; amount: bigint; status: string }>(
    'select stake_ref, market_id, amount, status from betting.bet_records where stake_ref = $1', [stakeRef],
  );
  return rows[0] ?? null;
}

export async function openStake(db: Db, s: { sid: string; key: string; marketId: string; runnerUserId: string; amount: bigint }): Promise<StakeRow> {
  const { rows } = await db.query<StakeRow>(
    'select ref_id, status, error, market_id, runner_user_id, amount, money_kind, replayed from cage.open_bet_stake($1, $2, $3, $4, $5)',
    [s.sid, s.key, s.marketId, s.runnerUserId, s.amount.toString()],
  );
  return rows[0]!;
}

export async function removeBet(db: Db, sid: string, stakeRef: string): Promise<UnbetRow> {
  const { rows } = await db.query<UnbetRow>(
    'select stake_ref, market_id, amount, replayed, refund_ref_id, money_kind from betting.remove_bet($1, $2)', [sid, stakeRef],
  );
  return rows[0]!;
}

export async function claimPayout(db: Db, sid: string, marketId: string): Promise<PayoutRow> {
  const { rows } = await db.query<PayoutRow>('select ref_id, market_id, amount, money_kind, replayed from cage.claim_bet_payout($1, $2)', [sid, marketId]);
  return rows[0]!;
}

/** The bet of a cage stake (betting.record_bet: written with its debit, so always a replay). */
export async function recordedBet(db: Db, stakeRef: string): Promise<BetRow> {
  const { rows } = await db.query<BetRow>('select stake_ref, market_id, user_id, runner_user_id, amount, replayed from betting.record_bet($1)', [stakeRef]);
  return rows[0]!;
}

/** What the bettor of a grant may claim of a market (moves nothing). */
export async function claimQuote(db: Db, sid: string, marketId: string) {
  const { rows } = await db.query<{ market_id: string; user_id: string; amount: bigint; market_status: string }>(
    'select market_id, user_id, amount, market_status from betting.claim_quote($1, $2)', [sid, marketId],
  );
  return rows[0]!;
}
