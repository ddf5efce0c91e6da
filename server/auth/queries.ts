// The auth domain's reads (issue 32: reads through views): every row the auth role reads of its
// identities, through the read views (db/migrations/000051_reads_through_views.sql), typed here.
// Writes are the auth functions, called where they are used.
import type pg from 'pg';

type Db = Pick<pg.Pool, 'query'>;

/** A linked wallet as the wallet routes answer it. */
export interface WalletRecord {
  address: string;
  chain_id: number;
  is_primary: boolean;
  created_at: Date;
}

/** The user's email, null when they have none; undefined when there is no such user. */
export async function userEmail(db: Db, userId: string): Promise<{ email: string | null } | undefined> {
  const { rows } = await db.query<{ email: string | null }>('select u.email from auth.user_records u where u.id = $1', [userId]);
  return rows[0];
}

/** The user's primary wallet's address when it is an EVM wallet, else null. */
export async function primaryEvmAddress(db: Db, userId: string): Promise<string | null> {
  const { rows } = await db.query<{ address: string }>(
    "select w.address from auth.wallet_records w where w.user_id = $1 and w.is_primary and w.chain = 'evm'", [userId],
  );
  return rows[0]?.address ?? null;
}

/** The user's wallets (of one chain, or all), oldest first. */
export async function walletsOf(db: Db, userId: string, chain?: 'evm' | 'solana'): Promise<WalletRecord[]> {
  const { rows } = await db.query<WalletRecord>(
    `select w.address, w.chain_id, w.is_primary, w.created_at from auth.wallet_records w
      where w.user_id = $1 and ($2::text is null or w.chain = $2) order by w.created_at, w.id`,
    [userId, chain ?? null],
  );
  return rows;
}
