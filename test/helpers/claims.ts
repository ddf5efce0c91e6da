// Claim-board fixtures for tests over HTTP: the board and claim calls (with the harness clock), the
// internal condition-met route, the operator routes, a Solana wallet linked straight in the
// database, the claim id as the spec defines it (computed here with viem, not with the server's
// helper), and what the claim and the cage wrote for a claim.
import { randomBytes } from 'node:crypto';
import { base58 } from '@scure/base';
import { keccak256, stringToHex } from 'viem';
import type pg from 'pg';
import type { TestDatabase } from './db.ts';
import { call, type startMoneyPlatform } from './money.ts';

type Money = Awaited<ReturnType<typeof startMoneyPlatform>>;
type Headers = Record<string, string>;

/** claim_id = keccak256 over the text `userId:sectionKey:period` (spec: Claim board records). */
export const specClaimId = (userId: string, sectionKey: string, period: string) => keccak256(stringToHex(`${userId}:${sectionKey}:${period}`));

/** The ISO-8601 week key `YYYY-Www` of an instant (UTC), computed independently of the server. */
export function isoWeek(at: Date): string {
  const d = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()));
  const day = d.getUTCDay() || 7; // Monday 1 .. Sunday 7
  d.setUTCDate(d.getUTCDate() + 4 - day); // the Thursday of this ISO week decides its year
  const yearStart = Date.UTC(d.getUTCFullYear(), 0, 1);
  const week = Math.ceil(((d.getTime() - yearStart) / 86400_000 + 1) / 7);
  return `${d.getUTCFullYear()}-W${String(week).padStart(2, '0')}`;
}

/** A random, well-formed Solana address (base58 of 32 bytes). */
export const solanaAddress = () => base58.encode(randomBytes(32));

/** Links a Solana wallet straight in the database (the link itself is not under test). */
export async function linkSolana(db: TestDatabase, userId: string, address = solanaAddress()) {
  await db.owner.query(`select * from auth.link_wallet($1, $2, 'solana', 0)`, [userId, address]);
  return address;
}

export function claimsClient(m: Money, game = m.game) {
  const clockHeader = (clock?: string): Headers => (clock ? { 'x-test-clock': clock } : {});
  return {
    state: (auth: Headers, clock?: string) => call(`${game}/claim-board/state`, { headers: { ...auth, ...clockHeader(clock) } }),
    claim: (auth: Headers, body: unknown, clock?: string) =>
      call(`${game}/claim-board/claim`, { headers: { ...auth, ...clockHeader(clock) }, body }),
    conditionMet: (body: unknown, headers: Headers = m.service) => call(`${game}/internal/claim-board/condition-met`, { headers, body }),
    /** condition-met with a fresh idempotency key. */
    light: (userId: string, conditionKey: string) =>
      call(`${game}/internal/claim-board/condition-met`, {
        headers: m.service, body: { userId, conditionKey, idempotencyKey: `k-${randomBytes(8).toString('hex')}` },
      }),
    // the operator's routes: an operator's access JWT unless the caller gives other headers
    settings: async (body?: Record<string, unknown>, headers?: Headers) => {
      const h = headers ?? (await m.operator()).auth;
      return call(`${game}/admin/claim-settings`, body === undefined ? { headers: h } : { method: 'PATCH', headers: h, body });
    },
    patchSection: async (body: unknown, headers?: Headers) =>
      call(`${game}/admin/claim-sections`, { method: 'PATCH', headers: headers ?? (await m.operator()).auth, body }),
    createSection: async (body: unknown, headers?: Headers) =>
      call(`${game}/admin/claim-sections`, { method: 'POST', headers: headers ?? (await m.operator()).auth, body }),
    deleteSection: async (key: string, environment?: string, headers?: Headers) =>
      call(`${game}/admin/claim-sections/${encodeURIComponent(key)}${environment ? `?environment=${environment}` : ''}`, {
        method: 'DELETE', headers: headers ?? (await m.operator()).auth,
      }),
    listSections: async (headers?: Headers) => call(`${game}/admin/claim-sections`, { headers: headers ?? (await m.operator()).auth }),
  };
}

/** What a claim left behind: its ledger rows, the user's state row, the cage's grant entries. */
export function claimRecords(db: TestDatabase) {
  return {
    async ledger(userId: string, sectionKey?: string) {
      const { rows } = await db.owner.query(
        `select section_key, period, amount::int, claim_id, grant_tx from claims.claim_ledger
          where user_id = $1 and ($2::text is null or section_key = $2) order by id`,
        [userId, sectionKey ?? null],
      );
      return rows as { section_key: string; period: string; amount: number; claim_id: string; grant_tx: string | null }[];
    },
    async userSection(userId: string, sectionKey: string) {
      const { rows } = await db.owner.query(
        'select state, period, claim_id, lit_at, claimed_at from claims.user_claim_sections where user_id = $1 and section_key = $2',
        [userId, sectionKey],
      );
      return rows[0] as { state: string; period: string | null; claim_id: string | null; lit_at: Date | null; claimed_at: Date | null } | undefined;
    },
    async grants(claimId: string) {
      const { rows } = await db.owner.query(
        `select id, kind::text, amounts::text[], memo from cage.cage_entries where ref_id = $1 and kind = 'grant' order by id`,
        [claimId],
      );
      return rows as { id: string; kind: string; amounts: string[]; memo: Record<string, unknown> }[];
    },
    async entries(claimId: string) {
      const { rows } = await db.owner.query('select count(*)::int as n from cage.cage_entries where ref_id = $1', [claimId]);
      return rows[0].n as number;
    },
  };
}

/** Polls until `check` returns a value (not undefined), or fails after the timeout. */
export async function eventually<T>(check: () => T | undefined | Promise<T | undefined>, timeoutMs = 2000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await check();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * The user `userId` as the bridge would have made them, with a linked Solana wallet (the claim
 * pays the user's first linked Solana wallet, read with the claim): for SQL tests that pick their
 * own user ids. Idempotent per pool and user.
 */
const walleted = new WeakMap<object, Set<string>>();
export async function ensureClaimant(owner: pg.Pool, userId: string): Promise<void> {
  const done = walleted.get(owner) ?? new Set<string>();
  walleted.set(owner, done);
  if (done.has(userId)) return;
  const client = await owner.connect();
  try {
    await client.query('begin');
    await client.query("select set_config('auth.user_creation_path', 'bridge', true)");
    await client.query('insert into auth.users (id) values ($1) on conflict do nothing', [userId]);
    if (!(await client.query("select 1 from auth.wallets where user_id = $1 and chain = 'solana'", [userId])).rowCount) {
      await client.query("select * from auth.link_wallet($1, $2, 'solana', 0)", [userId, solanaAddress()]);
    }
    await client.query('commit');
  } catch (err) {
    await client.query('rollback');
    throw err;
  } finally {
    client.release();
  }
  done.add(userId);
}
