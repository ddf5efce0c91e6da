// The audit's provenance checks (issue 11): every entry has the record of the step that justifies
// it. Each test corrupts one record from the owner's session, as a bug or a hand in the database
// would, sees the audit name it, and puts it back (the audit is clean again).
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { audit, auditSinceCheckpoint } from '../../server/cage/ledger.ts';
import { signerFromPrivateKey } from '../../server/cage/receipts.ts';
import { TEST_RECEIPT_SEED } from '../helpers/keys.ts';
import { settlePosition } from '../../server/cage/seams.ts';
import { expectCleanAudit, fixtureOperatorSession } from '../helpers/cage.ts';
import { isoWeek, solanaAddress, specClaimId } from '../helpers/claims.ts';
import { createTestDatabase, playerGrant, type TestDatabase } from '../helpers/db.ts';
import { authUser, newKey, newTableId, openDeposit, POKER_SETTINGS, standUp, withdrawKey } from '../helpers/game.ts';

let db: TestDatabase;
let cage: pg.Pool;
let game: pg.Pool;
let admin: string;
let adminId: string;

beforeAll(async () => {
  db = await createTestDatabase();
  cage = db.pool('poker_cage', 2);
  game = db.pool('poker_game', 2);
  ({ adminId, sid: admin } = await fixtureOperatorSession(db.owner));
  await db.owner.query("select claims.set_board_settings($1, 'local', true, null)", [admin]);
});
afterAll(async () => {
  await expectCleanAudit(cage);
  await db?.drop();
});

/** Runs `sql` as the owner with triggers off (the append-only guards): a hand in the database. */
async function asOwnerWithoutTriggers(sql: string, params: unknown[] = []) {
  const client = await db.owner.connect();
  try {
    await client.query('begin');
    await client.query('set local session_replication_role = replica');
    const result = await client.query(sql, params);
    await client.query('commit');
    return result;
  } finally {
    client.release();
  }
}

async function provenance() {
  return (await audit(cage)).filter((v) => v.invariant === 'provenance');
}

async function purchase(userId: string, amount: number) {
  const { rows } = await cage.query("select ref_id from cage.exchange_chips('purchase', $1, $2, $3, 'play', $4)", [userId, amount, `pay-${randomUUID()}`, admin]);
  return rows[0].ref_id as string;
}
const entryId = async (ref: string) => (await db.owner.query('select id from cage.cage_entries where ref_id = $1', [ref])).rows[0].id as string;

test('chips from the outside world without their operator record', async () => {
  const userId = await authUser(db.owner);
  const ref = await purchase(userId, 300);
  await expectCleanAudit(cage);
  const { rows } = await db.owner.query('delete from cage.operator_acts where ref_id = $1 returning admin_id, act, ref_id', [ref]);
  expect(await provenance()).toEqual([
    { invariant: 'provenance', subject: `entry:${await entryId(ref)}`, detail: { ref_id: ref, kind: 'purchase', problem: 'no operator record' } },
  ]);
  await db.owner.query('insert into cage.operator_acts (admin_id, act, ref_id) values ($1, $2, $3)', [rows[0].admin_id, rows[0].act, rows[0].ref_id]);
  await expectCleanAudit(cage);
});

test('an adjustment posted outside the correction function', async () => {
  const userId = await authUser(db.owner);
  const account = (await db.owner.query("select cage.ensure_account('user', $1, null, 'real') as id", [userId])).rows[0].id;
  const outside = (await db.owner.query("select cage.ensure_account('outside', null, null, 'real') as id")).rows[0].id;
  const ref = `mint-${randomUUID()}`;
  await db.owner.query("select cage.post_movement($1, 'adjustment', 'real', $2, array[-1000000, 1000000]::bigint[], '{}')", [ref, [outside, account]]);
  const found = await provenance();
  expect(found).toEqual([{
    invariant: 'provenance', subject: `entry:${await entryId(ref)}`,
    detail: { ref_id: ref, kind: 'adjustment', problem: 'adjustment without a reversed deposit or a correction record' },
  }]);
  // an operator owns up to it: the record names them and the reason
  await db.owner.query("insert into cage.operator_acts (admin_id, act, ref_id, reason) values ($1, 'correction', $2, 'test: owned up')", [adminId, ref]);
  await expectCleanAudit(cage);
});

describe('grants and claims', () => {
  async function claimant() {
    const userId = await authUser(db.owner);
    const wallet = solanaAddress();
    await db.owner.query("select * from auth.link_wallet($1, $2, 'solana', 0)", [userId, wallet]);
    return { userId, wallet };
  }
  /** A claim whose process died after its grant: its intent opened and its grant minted `minutesAgo` minutes ago. */
  async function lostGrant(wallet: string, userId: string, section: string, period: string, amount: number, minutesAgo: number) {
    const id = specClaimId(userId, section, period);
    await db.owner.query(
      "insert into claims.claim_intents (claim_id, user_id, section_key, period, amount, kind, opened_at, recipient) values ($1, $2, $3, $4, $5, $6, now() - make_interval(mins => $7), $8)",
      [id, userId, section, period, amount, period === 'once' ? 'unlock' : 'baseline', minutesAgo, wallet],
    );
    await cage.query('select * from cage.grant_play_chips($1, $2, $3, $4, $5)', [wallet, amount, id, section, period]);
    await asOwnerWithoutTriggers("update cage.cage_entries set created_at = now() - make_interval(mins => $2) where ref_id = $1", [id, minutesAgo]);
    return id;
  }
  const age = async (id: string, minutes: number) => {
    await asOwnerWithoutTriggers("update cage.cage_entries set created_at = now() - make_interval(mins => $2) where ref_id = $1", [id, minutes]);
    await db.owner.query('update claims.claim_intents set opened_at = now() - make_interval(mins => $2) where claim_id = $1', [id, minutes]);
  };

  /** The user's claim of a section now, as the game makes it (claims.credit_claim, one transaction). */
  async function creditClaim(userId: string, section: string) {
    const now = new Date();
    const ids = { once: specClaimId(userId, section, 'once'), [isoWeek(now)]: specClaimId(userId, section, isoWeek(now)) };
    const { rows } = await game.query('select * from claims.credit_claim($1, $2, $3, $4, $5)', ['local', await playerGrant(db.owner, userId), section, now, JSON.stringify(ids)]);
    return rows[0] as { outcome: string; amount: bigint; claim_id: string };
  }

  test('a grant whose claim row never came (a claim of before issue 33) is named once due; the next claim of it pays what it minted', async () => {
    const { userId, wallet } = await claimant();
    const period = isoWeek(new Date());
    // young: the claim may still be finishing; not named
    const young = await lostGrant(wallet, userId, 'weekly_baseline', period, 500, 0);
    expect(await provenance()).toEqual([]);
    // past the window: named
    await age(young, 10);
    expect(await provenance()).toEqual([{
      invariant: 'provenance', subject: `entry:${await entryId(young)}`, detail: { ref_id: young, kind: 'grant', problem: 'grant without its claim' },
    }]);
    // the user's claim takes its intent up: the grant is this claim's, nothing more is minted
    expect(await creditClaim(userId, 'weekly_baseline')).toMatchObject({ outcome: 'credited', amount: 500n, claim_id: young });
    expect((await db.owner.query('select count(*)::int as n from cage.cage_entries where ref_id = $1', [young])).rows[0].n).toBe(1);
    const row = await db.owner.query('select user_id, section_key, period, amount from claims.claim_ledger where claim_id = $1', [young]);
    expect(row.rows).toEqual([{ user_id: userId, section_key: 'weekly_baseline', period, amount: 500n }]);
    expect((await db.owner.query('select status from claims.claim_intents where claim_id = $1', [young])).rows[0].status).toBe('claimed');
    await expectCleanAudit(cage);

    // a grant for an unlock that was never lit: named; lit after all, the claim pays it (no second mint)
    const undue = await lostGrant(wallet, userId, 'connect_wallet', 'once', 500, 10);
    expect(await provenance()).toEqual([{
      invariant: 'provenance', subject: `entry:${await entryId(undue)}`, detail: { ref_id: undue, kind: 'grant', problem: 'grant without its claim' },
    }]);
    expect(await creditClaim(userId, 'connect_wallet')).toMatchObject({ outcome: 'locked' });
    await game.query("select * from claims.mark_condition_met('local', $1, 'wallet_linked', null)", [userId]);
    expect(await creditClaim(userId, 'connect_wallet')).toMatchObject({ outcome: 'credited', amount: 500n, claim_id: undue });
    expect((await db.owner.query('select count(*)::int as n from cage.cage_entries where ref_id = $1', [undue])).rows[0].n).toBe(1);
    await expectCleanAudit(cage);
  });

  test('the periodic audit judges a grant it saw young once it is due, though its checkpoint moved past it', async () => {
    const { userId, wallet } = await claimant();
    expect(await auditSinceCheckpoint(db.owner)).toEqual([]);
    const grant = await lostGrant(wallet, userId, 'weekly_baseline', isoWeek(new Date()), 500, 0);
    const entry = await entryId(grant);
    // young: not judged yet, carried by the checkpoint, which moves past it
    expect(await auditSinceCheckpoint(db.owner)).toEqual([]);
    const checkpoint = async () => {
      const { rows } = await db.owner.query<{ entry_id: bigint; young: string[] }>('select entry_id, young_grants::text[] as young from cage_private.audit_checkpoint');
      return rows[0]!;
    };
    expect((await checkpoint()).entry_id).toBe(BigInt(entry));
    expect((await checkpoint()).young).toContain(String(entry));
    // due, and still without its claim row: named as the full audit names it, and the checkpoint stays
    await age(grant, 10);
    const named = { invariant: 'provenance', subject: `entry:${entry}`, detail: { ref_id: grant, kind: 'grant', problem: 'grant without its claim' } };
    expect(await auditSinceCheckpoint(db.owner)).toEqual([named]);
    expect(await provenance()).toEqual([named]);
    expect((await checkpoint()).young).toContain(String(entry));
    // its claim made (it takes the grant up): clean, and no longer carried
    expect(await creditClaim(userId, 'weekly_baseline')).toMatchObject({ outcome: 'credited', claim_id: grant });
    expect(await auditSinceCheckpoint(db.owner)).toEqual([]);
    expect((await checkpoint()).young).not.toContain(String(entry));
    await expectCleanAudit(cage);
  });

  test('a grant no claim backs is named at once and never made a claim; an abandoned intent is claimed afresh', async () => {
    const { userId } = await claimant();
    // an intent abandoned before issue 33 (no grant came): the claim of its period takes it up and mints once
    const period = isoWeek(new Date());
    const id = specClaimId(userId, 'weekly_baseline', period);
    await db.owner.query(
      "insert into claims.claim_intents (claim_id, user_id, section_key, period, amount, kind, status, closed_at) values ($1, $2, 'weekly_baseline', $3, 500, 'baseline', 'abandoned', now())",
      [id, userId, period],
    );
    expect(await creditClaim(userId, 'weekly_baseline')).toMatchObject({ outcome: 'credited', amount: 500n, claim_id: id });
    expect((await db.owner.query('select count(*)::int as n from cage.cage_entries where ref_id = $1', [id])).rows[0].n).toBe(1);
    await expectCleanAudit(cage);
    // the owner's own grant (what a stolen key minted before intents): named at once, never made a claim
    const forged = `0x${'e'.repeat(64)}`;
    await db.owner.query(
      `select cage.post_movement($1, 'grant', 'play',
         array[cage.ensure_account('grant_source', null, null, 'play'), cage.ensure_account('user', $2::uuid, null, 'play')],
         array[-500::bigint, 500::bigint], jsonb_build_object('recipient', 'x', 'user_id', $2::text, 'section_key', 'weekly_baseline', 'period', '2021-W02'))`,
      [forged, userId],
    );
    expect(await provenance()).toEqual([{
      invariant: 'provenance', subject: `entry:${await entryId(forged)}`, detail: { ref_id: forged, kind: 'grant', problem: 'grant without its claim intent' },
    }]);
    expect((await db.owner.query('select count(*)::int as n from claims.claim_ledger where claim_id = $1', [forged])).rows[0].n).toBe(0);
    // (the owner writes the claim that would back it, so the books are clean for the file's other tests)
    await db.owner.query('insert into claims.claim_intents (claim_id, user_id, section_key, period, amount, kind, status) values ($1, $2, \'weekly_baseline\', \'2021-W02\', 500, \'baseline\', \'claimed\')', [forged, userId]);
    await db.owner.query("insert into claims.claim_ledger (user_id, section_key, period, amount, claim_id) values ($1, 'weekly_baseline', '2021-W02', 500, $2)", [userId, forged]);
    await expectCleanAudit(cage);
  });

  test('a paid claim row without its grant', async () => {
    const { userId } = await claimant();
    const id = specClaimId(userId, 'weekly_baseline', '2020-W01');
    await db.owner.query("insert into claims.claim_ledger (user_id, section_key, period, amount, claim_id) values ($1, 'weekly_baseline', '2020-W01', 500, $2)", [userId, id]);
    expect(await provenance()).toEqual([{
      invariant: 'provenance', subject: `claim:${id}`,
      detail: { user_id: userId, section_key: 'weekly_baseline', amount: 500, problem: 'claim without its grant' },
    }]);
    await asOwnerWithoutTriggers('delete from claims.claim_ledger where claim_id = $1', [id]);
    await expectCleanAudit(cage);
  });
});

describe('seats', () => {
  async function seated(amount: bigint) {
    const tableId = newTableId('prov');
    await cage.query('select * from game.create_table($1, $2, $3, $4, $5)', [tableId, 'poker', POKER_SETTINGS, 'play', null]);
    const userId = await authUser(db.owner);
    await purchase(userId, 1000);
    const deposit = await openDeposit(cage, userId, newKey('sit'), tableId, 0, amount);
    await game.query('select * from game.credit_seat($1, $2, $3, 0, $4)', [deposit.ref_id, tableId, userId, String(amount)]);
    await cage.query('select cage.confirm_deposit($1)', [deposit.ref_id]);
    return { tableId, userId, deposit };
  }

  test('a settlement without its receipt', async () => {
    const { tableId, userId } = await seated(100n);
    const position = await standUp(game, tableId, userId);
    const settled = await settlePosition(cage, signerFromPrivateKey(TEST_RECEIPT_SEED), {
      userId, tableId, playerId: String(position.player_id), chipAmount: 100n, historyHash: position.history_hash,
      idempotencyKey: withdrawKey(userId, tableId, position.history_hash, 100n), settlement: 'cash_out', forced: false,
    });
    await game.query('select * from game.settle_seat($1, $2, $3)', [String(position.player_id), settled.ledger_ref_id, 'cash_out']);
    await expectCleanAudit(cage);
    const { rows } = await asOwnerWithoutTriggers('delete from cage.receipts where ledger_ref_id = $1 returning *', [settled.ledger_ref_id]);
    expect(await provenance()).toEqual([{
      invariant: 'provenance', subject: `settlement:${settled.ledger_ref_id}`,
      detail: { player_id: Number(position.player_id), receipts: 0, entry: true, problem: 'settlement without its entry or its one receipt' },
    }]);
    const r = rows[0];
    await db.owner.query(
      'insert into cage.receipts (ledger_ref_id, user_id, table_id, history_hash, payload, signature, public_key) values ($1, $2, $3, $4, $5, $6, $7)',
      [r.ledger_ref_id, r.user_id, r.table_id, r.history_hash, r.payload, r.signature, r.public_key],
    );
    await expectCleanAudit(cage);
  });

  test('a seat credit without its deposit', async () => {
    const { tableId, userId } = await seated(80n);
    const key = `forged-${randomUUID()}`;
    await db.owner.query("insert into game.seat_credits (credit_key, table_id, user_id, amount, status) values ($1, $2, $3, 80, 'credited')", [key, tableId, userId]);
    expect(await provenance()).toEqual([{
      invariant: 'provenance', subject: `credit:${key}`,
      detail: { table_id: tableId, user_id: userId, amount: 80, problem: 'seat credit without its deposit' },
    }]);
    await db.owner.query('delete from game.seat_credits where credit_key = $1', [key]);
    await expectCleanAudit(cage);
  });
});
