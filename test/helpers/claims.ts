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
    /** condition-met with a fresh idempotency key, the condition made to hold first (holdCondition). */
    light: async (userId: string, conditionKey: string, holds = true) => {
      if (holds) await holdCondition(m.db.owner, userId, conditionKey);
      return call(`${game}/internal/claim-board/condition-met`, {
        headers: m.service, body: { userId, conditionKey, idempotencyKey: `k-${randomBytes(8).toString('hex')}` },
      });
    },
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

/**
 * Makes a condition the platform knows hold for `userId` in the state it is read from (the claim
 * board lights a known condition only while it holds: claims_private.condition_holds), as the owner:
 * a linked Solana wallet, an agent with one or two published versions, a seat an agent of theirs
 * played, a decision they flagged. A key the platform does not know needs nothing.
 */
export async function holdCondition(owner: pg.Pool, userId: string, conditionKey: string): Promise<void> {
  const agent = async (versions: number) => {
    const { rows } = await owner.query<{ id: string }>("insert into game.agents (owner_user_id, name) values ($1, 'condition agent') returning id", [userId]);
    for (let v = 1; v <= versions; v++) await owner.query('insert into game.agent_versions (agent_id, version) values ($1, $2)', [rows[0]!.id, v]);
    return rows[0]!.id;
  };
  switch (conditionKey) {
    case 'wallet_linked': return ensureClaimant(owner, userId);
    case 'agent_version_published': await agent(1); return;
    case 'agent_version_republished': await agent(2); return;
    case 'hand_flagged': await owner.query("insert into game.agent_flags (agent_id, version, flagged_by) values ($1, 1, $2)", [await agent(1), userId]); return;
    case 'agent_seated': {
      const agentId = await agent(1);
      const tableId = `cond-${randomBytes(6).toString('hex')}`;
      await owner.query("select game.create_table($1, 'poker', '{\"smallBlind\":1,\"bigBlind\":2,\"minBuyIn\":40,\"maxBuyIn\":200,\"maxPlayers\":6}', 'play', null)", [tableId]);
      await owner.query(
        "insert into game.table_players (table_id, user_id, seat_index, chip_balance, status, history_hash, agent_id, closed_at) values ($1, $2, 0, 0, 'closed', '', $3, now())",
        [tableId, userId, agentId],
      );
      return;
    }
    default:
  }
}
