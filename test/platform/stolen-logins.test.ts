// A stolen login proves no authority (issue 18): connected as each service login with its real
// password, an attacker calls every function that login may execute (listed from the catalog, so a
// new function without a case here fails the suite) with forged arguments: other users' ids,
// made-up admin and session ids, zero, negative and huge amounts, null epochs, cash calls on
// tournament tables. Each call must be refused, or move no money the audit does not name. The
// first cases are the attacks found from outside; the catalog checks close the classes they came
// from (a temporary schema that shadows, a direct table write).
import { randomBytes, randomUUID } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import pg from 'pg';
import { releaseViolations, verifyPendingReleases } from '../../server/cage/custody.ts';
import { pinAsOwner } from '../../server/crypto/pins.ts';
import { derivePasswordKey, hashPassword } from '../../server/auth/passwords.ts';
import { loginUrl } from '../../server/db/roles.ts';
import { resolveSngSettings } from '../../server/tournaments/settings.ts';
import { fixtureOperatorSession, fund, userAccount } from '../helpers/cage.ts';
import { createTestDatabase, playerGrant, type TestDatabase } from '../helpers/db.ts';
import { authUser, createTable, creditSeat, openDeposit, solanaAddress } from '../helpers/game.ts';
import { isoWeek, linkSolana, specClaimId } from '../helpers/claims.ts';

const LOGINS = ['poker_cage', 'poker_auth', 'poker_game', 'poker_worker', 'poker_betting', 'poker_bank', 'poker_graphql'] as const;
type Login = (typeof LOGINS)[number];
const SCHEMAS = ['cage', 'cage_private', 'auth', 'auth_private', 'game', 'game_private', 'claims', 'claims_private', 'betting', 'betting_private', 'bank', 'bank_private', 'poker_refusals'];

let db: TestDatabase;
const clients = new Map<Login, pg.Client>();
let operator: { adminId: string; sid: string };
/** The world the attacks aim at: a victim with chips at a cash table, a registering and a playing Sit-and-Go. */
let world: { victim: string; attacker: string; cash: string; registering: string; playing: string; victimAccount: bigint; attackerAccount: bigint };

const BLINDS = { startingSmallBlind: 10, increaseFactor: 2, levelDurationSeconds: 60, anteStartLevel: null, startingAnte: 0, anteIncreaseFactor: 1 };

async function sngTable(seats = 2) {
  const tableId = `stolen-${randomUUID().slice(0, 8)}`;
  const settings = resolveSngSettings({ mode: 'sng', seats, entryFee: 100, rakeFee: 10, startingStack: 1000, blindStructure: BLINDS });
  await db.owner.query("select game.create_table($1, 'poker', $2, 'play', null, null, null, 'sng', 'open')", [tableId, JSON.stringify(settings)]);
  return tableId;
}

async function funded(chips = 1000) {
  const u = await userAccount(db.owner);
  await fund(db.owner, u.id, BigInt(chips));
  return u;
}

const enter = (userId: string, tableId: string) =>
  playerGrant(db.owner, userId).then((sid) => db.owner.query('select * from cage.open_tournament_entry($1, $2, $3, null, 100, 120)', [sid, `k-${randomUUID()}`, tableId]));

beforeAll(async () => {
  db = await createTestDatabase();
  for (const login of LOGINS) {
    const client = new pg.Client({ connectionString: loginUrl(db.url, login, undefined) });
    await client.connect();
    await client.query("set statement_timeout = '10s'");
    clients.set(login, client);
  }
  operator = await fixtureOperatorSession(db.owner);
  const victim = await funded(1000);
  const attacker = await funded(200);
  const cash = (await createTable(db.pool('poker_cage', 2))).table_id;
  const deposit = await openDeposit(db.pool('poker_cage', 2), victim.userId, `sit-${randomUUID()}`, cash, 0, 200n);
  await creditSeat(db.pool('poker_game', 2), deposit.ref_id, cash, victim.userId, 0, 200n);
  await db.owner.query('select cage.confirm_deposit($1)', [deposit.ref_id]);
  const registering = await sngTable(3);
  await enter(victim.userId, registering);
  const playing = await sngTable(2);
  await enter(victim.userId, playing);
  await enter(attacker.userId, playing);
  await db.owner.query("update game.tables set starts_at = now() - interval '1 s' where table_id = $1", [playing]);
  await db.owner.query('select game.tournament_begin_play($1)', [playing]);
  world = {
    victim: victim.userId, attacker: attacker.userId, cash, registering, playing, victimAccount: victim.id, attackerAccount: attacker.id,
  };
});
afterAll(async () => {
  for (const c of clients.values()) await c.end().catch(() => undefined);
  await db?.drop();
});

const as = (login: Login) => clients.get(login)!;
/** The refusal a call met (SQLSTATE and message), or 'ok'. */
const outcome = (p: Promise<unknown>) => p.then(() => 'ok', (err: { code?: string; message?: string }) => `${err.code} ${err.message}`);
const violations = async () => (await db.owner.query<{ invariant: string; subject: string }>('select invariant, subject from cage.audit()')).rows;
/**
 * What each user owns: their cage balances, their positions' chips (a seat's stack, a tournament
 * entry's claim) and the unpaid prizes owed to them. A forged call that a login may make on a
 * user's behalf (a refund of their own entry, say) leaves it as it was; one that mints, drains or
 * strands changes it, and must then be named by the audit.
 */
async function books() {
  const { rows } = await db.owner.query<{ fp: string }>(`
    with owned as (
      select a.user_id, a.money_kind::text as kind, a.balance as amount from cage.cage_accounts a where a.account_type = 'user'
      union all
      select p.user_id, t.money_kind::text, p.chip_balance from game.table_players p join game.tables t on t.table_id = p.table_id where p.status <> 'closed'
      union all
      select i.user_id, t.money_kind::text, i.amount from cage.payout_intents i join game.tables t on t.table_id = i.table_id where i.confirmed_at is null
    )
    select coalesce(string_agg(user_id || ':' || kind || ':' || total, ',' order by user_id, kind), '') as fp
      from (select user_id, kind, sum(amount) as total from owned group by user_id, kind) o`);
  return rows[0]!.fp;
}

describe('the attacks found from outside', () => {
  test('cage: a purchase of 9e15 real chips naming an admin id read from the operator acts is refused (admin_session_required)', async () => {
    await db.owner.query("insert into cage.switches (name, enabled) values ('real_money', true) on conflict (name) do update set enabled = true");
    try {
      for (const forged of [operator.adminId, randomUUID(), null]) {
        expect(await outcome(as('poker_cage').query("select * from cage.exchange_chips('purchase', $1, 9000000000000000, $2, 'real', $3)", [
          world.attacker, `pay-${randomUUID()}`, forged,
        ]))).toBe('AUASR admin_session_required');
      }
    } finally {
      await db.owner.query("update cage.switches set enabled = false where name = 'real_money'");
    }
    // the real operator's live session, with real money off: refused in SQL too
    expect(await outcome(as('poker_cage').query("select * from cage.exchange_chips('purchase', $1, 5, $2, 'real', $3)", [
      world.attacker, `pay-${randomUUID()}`, operator.sid,
    ]))).toBe('CGRMD real_money_disabled');
  });

  test('cage: a correction draining a victim naming an admin id is refused; a signed-out or expired session too', async () => {
    const legs = [[String(world.victimAccount), String(world.attackerAccount)], ['-500', '500']];
    const { rows: [ended] } = await db.owner.query<{ sid: string }>(
      "insert into auth_private.sessions (user_id, token_hash, expires_at) values ($1, sha256(gen_random_uuid()::text::bytea), now() + interval '60 s') returning sid", [operator.adminId],
    );
    await db.owner.query("update auth_private.sessions set expires_at = now() - interval '1 s' where sid = $1", [ended!.sid]);
    const { rows: [signedOut] } = await db.owner.query<{ sid: string }>(
      "insert into auth_private.sessions (user_id, token_hash, expires_at) values ($1, sha256(gen_random_uuid()::text::bytea), now() + interval '600 s') returning sid", [operator.adminId],
    );
    await db.owner.query('update auth_private.sessions set revoked_at = now() where sid = $1', [signedOut!.sid]);
    for (const forged of [operator.adminId, world.victim, randomUUID(), ended!.sid, signedOut!.sid]) {
      expect(await outcome(as('poker_cage').query('select * from cage.correct_books($1, $2, \'play\', $3, $4, \'x\')', [forged, `fix-${randomUUID()}`, ...legs])))
        .toBe('AUASR admin_session_required');
      expect(await outcome(as('poker_game').query("select * from claims.set_board_settings($1, 'local', true, false)", [forged])))
        .toBe('AUASR admin_session_required');
      expect(await outcome(as('poker_cage').query("select * from cage.set_switch($1, 'real_money', true)", [forged])))
        .toBe('AUASR admin_session_required');
    }
  });

  test('game: a cash hand on a registering Sit-and-Go (no lease, null epoch) is refused; a cash stand-up on a playing one too', async () => {
    const before = await books();
    const pos = (await db.owner.query('select id from game.table_players where table_id = $1', [world.registering])).rows.map((r) => String(r.id));
    // begin_hand and finish_hand are the test harness's (issue 31): no service login executes them
    const epoch = await db.leaseEpoch(world.registering);
    expect(await outcome(as('poker_game').query("select game.begin_hand($1, 'forged', $2)", [world.registering, epoch]))).toMatch(/^42501 /);
    expect(await outcome(as('poker_game').query("select * from game.finish_hand($1, 'forged', $2, 0, $3)", [
      world.registering, JSON.stringify(Object.fromEntries(pos.map((p) => [p, 0]))), epoch,
    ]))).toMatch(/^42501 /);
    for (const fn of ['stand_up_busted', 'stand_up_idle']) {
      expect(await outcome(as('poker_game').query(`select * from game.${fn}($1, $2)`, [world.playing, world.victim])))
        .toBe('GMSUT stand_up_not_allowed_in_tournament');
    }
    expect(await outcome(as('poker_game').query('select * from game.credit_seat($1, $2, $3, 1, 100)', [`k-${randomUUID()}`, world.playing, world.attacker])))
      .toBe('GMNCT not_a_cash_table');
    expect(await books()).toBe(before);
  });

  test('game: no stand-up names a player it cannot prove: a voluntary one needs the player\'s grant, a forced one a player sat out for the house\'s idle time, a bust a zero stack', async () => {
    const before = await books();
    const seat = () => db.owner.query('select status, sat_out_at from game.table_players where table_id = $1 and user_id = $2', [world.cash, world.victim]).then((r) => r.rows[0]);
    // the victim's user id, a made-up handle: not a live grant (no service login reads the grants)
    for (const forged of [world.victim, randomUUID()]) {
      expect(await outcome(as('poker_game').query('select * from game.stand_up($1, $2)', [world.cash, forged]))).toBe('AUSES session_required');
    }
    expect(await outcome(as('poker_game').query('select * from game.stand_up_idle($1, $2)', [world.cash, world.victim]))).toBe('GMIDL player_not_idle');
    expect(await outcome(as('poker_game').query('select * from game.stand_up_busted($1, $2)', [world.cash, world.victim]))).toBe('GMNBU not_busted');
    // sitting a player out is the dealer's, under the table's lease: no lease, no epoch, no sit-out
    expect(await outcome(as('poker_game').query('select game.set_sitting_out($1, $2, true, null)', [world.cash, world.victim]))).toBe('GMLSE lease_lost');
    expect(await outcome(as('poker_game').query('select game.set_sitting_out($1, $2, true, 1)', [world.cash, world.victim]))).toBe('GMLSE lease_lost');
    // sat out just now (as the dealer would) is not idle: the house's idle time has to pass
    await db.owner.query('update game.table_players set sat_out_at = now() where table_id = $1 and user_id = $2 and status = \'seated\'', [world.cash, world.victim]);
    expect(await outcome(as('poker_game').query('select * from game.stand_up_idle($1, $2)', [world.cash, world.victim]))).toBe('GMIDL player_not_idle');
    expect((await as('poker_game').query('select * from game.idle_players($1)', [world.cash])).rows).toEqual([]);
    await db.owner.query('update game.table_players set sat_out_at = null where table_id = $1 and user_id = $2', [world.cash, world.victim]);
    expect(await seat()).toEqual({ status: 'seated', sat_out_at: null });
    expect(await books()).toBe(before);
    expect(await violations()).toEqual([]);
  });

  test('cage (the service key\'s grant): a claim id no open claim backs mints nothing (grant_not_backed), whatever the amount', async () => {
    const wallet = solanaAddress();
    await db.owner.query("select * from auth.link_wallet($1, $2, 'solana', 0)", [await authUser(db.owner), wallet]);
    const before = await books();
    for (const amount of ['1', '500', '4503599627370496']) {
      expect(await outcome(as('poker_cage').query('select * from cage.grant_play_chips($1, $2, $3, null, null)', [wallet, amount, `0x${randomBytes(32).toString('hex')}`])))
        .toBe('CGGNB grant_not_backed');
    }
    expect(await books()).toBe(before);
  });

  test('cage and game: acting in a player\'s name needs their token\'s grant: a user id, a made-up or expired handle is refused (session_required)', async () => {
    const before = await books();
    const expired = await playerGrant(db.owner, world.victim);
    await db.owner.query("update auth_private.access_grants set expires_at = now() - interval '1 s' where sid = $1", [expired]);
    for (const forged of [world.victim, randomUUID(), expired, null]) {
      for (const [sql, args] of [
        ['select * from cage.refund_tournament_entry($1, $2)', [forged, world.registering]],
        ['select * from cage.open_deposit($1, $2, $3, 1, 100)', [forged, `k-${randomUUID()}`, world.cash]],
        ['select * from cage.deposit_to_seat($1, $2, $3, 1, 100)', [forged, `k-${randomUUID()}`, world.cash]],
        ['select * from cage.open_tournament_entry($1, $2, $3, null, 100, 120)', [forged, `k-${randomUUID()}`, world.registering]],
        ['select * from cage.claim_custody($1, 1)', [forged]],
      ] as const) {
        expect(await outcome(as('poker_cage').query(sql, [...args]))).toBe('AUSES session_required');
      }
      // ... and the game login's: a claim, the agent registry
      for (const [sql, args] of [
        ["select * from claims.credit_claim('local', $1, 'weekly_baseline', now(), '{}')", [forged]],
        ["select * from game.create_agent($1, 'forged')", [forged]],
        ['select * from game.publish_agent_version($1, $2, null)', [forged, randomUUID()]],
        ["select * from game.flag_agent_decision($1, $2, 'h', null)", [forged, randomUUID()]],
        ['select * from game.tournament_reserve($1, $2, null, null, 60)', [world.registering, forged]],
      ] as const) {
        expect(await outcome(as('poker_game').query(sql, [...args]))).toBe('AUSES session_required');
      }
    }
    expect(await books()).toBe(before);
  });

  test('game: a claim (claims.credit_claim posts the cage grant) pays only what the SQL judges claimable for the session\'s own user', async () => {
    await db.owner.query("select claims.set_board_settings($1, 'local', true, null)", [operator.sid]);
    try {
      const now = new Date();
      const ids = (userId: string, section: string) => JSON.stringify({ once: specClaimId(userId, section, 'once'), [isoWeek(now)]: specClaimId(userId, section, isoWeek(now)) });
      const claim = (sid: string | null, section: string, claimIds: string) =>
        as('poker_game').query('select outcome, amount::int from claims.credit_claim($1, $2, $3, $4, $5)', ['local', sid, section, now, claimIds]);
      const victim = await authUser(db.owner);
      await linkSolana(db, victim);
      const before = await books();
      // the victim's claim in their name: a user id, a made-up or expired handle is no session
      const expired = await playerGrant(db.owner, victim);
      await db.owner.query("update auth_private.access_grants set expires_at = now() - interval '1 s' where sid = $1", [expired]);
      for (const forged of [victim, randomUUID(), expired, null]) {
        expect(await outcome(claim(forged, 'weekly_baseline', ids(victim, 'weekly_baseline')))).toBe('AUSES session_required');
      }
      expect(await books()).toBe(before);
      // the thief's own live session (an account of theirs): what the SQL judges claimable for that user, at the catalog's amount, once
      const thief = { userId: await authUser(db.owner) };
      const sid = await playerGrant(db.owner, thief.userId);
      expect((await claim(sid, 'tune_republish', ids(thief.userId, 'tune_republish'))).rows).toEqual([{ outcome: 'locked', amount: 2500 }]);
      expect((await claim(sid, 'weekly_baseline', ids(thief.userId, 'weekly_baseline'))).rows).toEqual([{ outcome: 'no_wallet', amount: 500 }]);
      expect(await books()).toBe(before);
      await linkSolana(db, thief.userId);
      expect((await claim(sid, 'weekly_baseline', ids(thief.userId, 'weekly_baseline'))).rows).toEqual([{ outcome: 'credited', amount: 500 }]);
      expect((await claim(sid, 'weekly_baseline', ids(thief.userId, 'weekly_baseline'))).rows).toEqual([{ outcome: 'already_claimed', amount: 500 }]);
      // next week's baseline claimed now, the game login naming the clock: outside the test harness
      // (the test_seeds switch off) the SQL's own clock decides the period, so it is this week's, claimed
      expect((await db.owner.query("select enabled from cage.switches where name = 'test_seeds'")).rows).not.toEqual([{ enabled: true }]);
      const nextWeek = new Date(now.getTime() + 7 * 86400_000);
      const later = JSON.stringify({ once: specClaimId(thief.userId, 'weekly_baseline', 'once'), [isoWeek(nextWeek)]: specClaimId(thief.userId, 'weekly_baseline', isoWeek(nextWeek)) });
      expect((await as('poker_game').query('select outcome, amount::int from claims.credit_claim($1, $2, $3, $4, $5)', ['local', sid, 'weekly_baseline', nextWeek, later])).rows)
        .toEqual([{ outcome: 'already_claimed', amount: 500 }]);
      const { rows } = await db.owner.query("select memo ->> 'user_id' as user_id, amounts[2]::int as amount from cage.cage_entries where kind = 'grant' and memo ->> 'user_id' in ($1, $2)", [thief.userId, victim]);
      expect(rows).toEqual([{ user_id: thief.userId, amount: 500 }]);
      expect(await violations()).toEqual([]);
    } finally {
      await db.owner.query("select claims.set_board_settings($1, 'local', false, null)", [operator.sid]);
    }
  });

  test('game: a reserve held for a day is refused (120 s at most, while registering)', async () => {
    const u = await userAccount(db.owner);
    expect(await outcome(as('poker_game').query('select * from game.tournament_reserve($1, $2, null, null, 86400)', [world.registering, await playerGrant(db.owner, u.userId)])))
      .toBe('GMTBL invalid_table');
    expect((await db.owner.query('select tournament_state from game.tables where table_id = $1', [world.playing])).rows[0].tournament_state).toBe('playing');
    expect(await outcome(as('poker_game').query('select * from game.tournament_reserve($1, $2, null, null, 120)', [world.playing, await playerGrant(db.owner, u.userId)])))
      .toBe('GMTNR tournament_not_in_registration');
  });

  test('auth: a stolen auth login opens no admin session: the password\'s key is proven in SQL, the parameters give it away to no one', async () => {
    const email = `ops-${randomUUID().slice(0, 8)}@example.com`;
    const password = `pw-${randomUUID()}`;
    const { rows: [admin] } = await db.owner.query('select auth.create_admin($1, $2) as id', [email, await hashPassword(password)]);
    const { rows: [params] } = await as('poker_auth').query('select user_id, params from auth.admin_password_params($1)', [email]);
    expect(params).toMatchObject({ user_id: admin.id, params: expect.stringMatching(/^scrypt\$\d+\$\d+\$\d+\$[\w-]+$/) });
    const open = async (email: string, key: Buffer) => {
      const { rows: [counted] } = await as('poker_auth').query("select ticket from auth.count_sign_in($1, '192.0.2.1', null, 100, 100, 60)", [email]);
      await as('poker_auth').query('select auth.bind_sign_in($1, sha256($2))', [counted.ticket, key]);
      return outcome(as('poker_auth').query('select * from auth.create_session($1, $2, sha256(gen_random_uuid()::text::bytea), 3600, null)', [counted.ticket, key]));
    };
    for (const key of [randomBytes(32), Buffer.alloc(32), Buffer.alloc(0)]) expect(await open(email, key)).toBe('AUCRD invalid_credentials');
    expect(await open('nobody@example.com', randomBytes(32))).toBe('AUCRD invalid_credentials');
    // the real password's key opens one
    expect(await open(email, await derivePasswordKey(password, params.params))).toBe('ok');
  });

  test('betting: a stolen betting login invents no stake and takes back no bet; a stolen cage login stakes, unbets and claims for nobody but a grant\'s user', async () => {
    // a market on the playing tournament, a bettor's stake in it (its debit and its bet in one transaction)
    await db.owner.query('select betting.sync_market($1)', [world.playing]);
    const bettor = await funded(300);
    const marketId = `sng:${world.playing}`;
    const { rows: [staked] } = await as('poker_cage').query('select ref_id, status from cage.open_bet_stake($1, $2, $3, $4, 100)', [
      await playerGrant(db.owner, bettor.userId), `k-${randomUUID()}`, marketId, world.victim,
    ]);
    expect(staked.status).toBe('confirmed');
    const before = await books();
    // no stake, no bet: a made-up ref, the victim's ref shape; the real one only answers its bet
    for (const ref of [`bet-stake:${world.victim}:forged`, `ref-${randomUUID()}`]) {
      expect(await outcome(as('poker_betting').query('select * from betting.record_bet($1)', [ref]))).toBe('BTSNF stake_not_found');
    }
    expect((await as('poker_betting').query('select replayed from betting.record_bet($1)', [staked.ref_id])).rows[0].replayed).toBe(true);
    // a bet taken back (and its stake credited) needs the bettor's grant, from either login
    for (const login of ['poker_betting', 'poker_cage'] as const) {
      for (const forged of [bettor.userId, randomUUID(), null]) {
        expect(await outcome(as(login).query('select * from betting.remove_bet($1, $2)', [forged, staked.ref_id]))).toBe('AUSES session_required');
      }
      // another player's grant finds no bet of theirs
      expect(await outcome(as(login).query('select * from betting.remove_bet($1, $2)', [await playerGrant(db.owner, world.attacker), staked.ref_id])))
        .toBe('BTBNF bet_not_found');
    }
    // the cage stakes and claims for nobody but a grant's user
    expect(await outcome(as('poker_cage').query('select * from cage.open_bet_stake($1, $2, $3, $4, 100)', [bettor.userId, `k-${randomUUID()}`, marketId, world.victim])))
      .toBe('AUSES session_required');
    expect(await outcome(as('poker_cage').query('select * from cage.claim_bet_payout($1, $2)', [bettor.userId, marketId]))).toBe('AUSES session_required');
    expect(await outcome(as('poker_cage').query('select * from cage.claim_bet_payout($1, $2)', [await playerGrant(db.owner, bettor.userId), marketId])))
      .toBe('CGMNS market_not_settled');
    // neither login reads the tables themselves
    for (const login of ['poker_betting', 'poker_cage'] as const) {
      for (const table of ['betting.bets', 'betting.markets', 'betting.payouts', 'cage.bet_stakes']) {
        expect(await outcome(as(login).query(`select count(*) from ${table}`))).toMatch(/^42501 permission denied for /);
      }
    }
    expect(await books()).toBe(before);
  });

  test('cage: an escape, a hold\'s split, a dispute and the custody list need a live admin session; a release needs the entry\'s open dispute and its message, once', async () => {
    // a cash table of its own where the victim sits with 120 chips, and a hold of another (divergent) one
    const cage = db.pool('poker_cage', 2);
    const seat = async (chips: bigint) => {
      const tableId = (await createTable(cage)).table_id;
      const deposit = await openDeposit(cage, world.victim, `sit-${randomUUID()}`, tableId, 0, chips);
      await creditSeat(db.pool('poker_game', 2), deposit.ref_id, tableId, world.victim, 0, chips);
      await db.owner.query('select cage.confirm_deposit($1)', [deposit.ref_id]);
      return tableId;
    };
    const clean = await seat(120n);
    const divergent = await seat(80n);
    await db.owner.query('update game.table_players set chip_balance = chip_balance + 7 where table_id = $1', [divergent]);
    const before = await books();
    const { rows: [ended] } = await db.owner.query<{ sid: string }>(
      "insert into auth_private.sessions (user_id, token_hash, expires_at, revoked_at) values ($1, sha256(gen_random_uuid()::text::bytea), now() + interval '600 s', now()) returning sid", [operator.adminId],
    );
    for (const forged of [operator.adminId, world.victim, randomUUID(), ended!.sid, null]) {
      for (const [sql, args] of [
        ["select * from cage.escape_table($1, $2, 'forged')", [forged, clean]],
        ["select * from cage.custody_holdings($1, null, null, null, null, 10)", [forged]],
        ["select * from cage.reconcile_custody_hold($1, 1, 'pro_rata', null, 'forged')", [forged]],
        ["select * from cage.dispute_custody($1, 1, 'forged')", [forged]],
      ] as const) {
        expect(await outcome(as('poker_cage').query(sql, [...args]))).toBe('AUASR admin_session_required');
      }
    }
    expect(await books()).toBe(before);

    // the operator's own acts (their live session), then what a thief holding only the login can do
    const escaped = (await as('poker_cage').query("select answer from cage.escape_table($1, $2, 'ops')", [operator.sid, clean])).rows[0].answer;
    const hold = (await as('poker_cage').query("select answer from cage.escape_table($1, $2, 'ops')", [operator.sid, divergent])).rows[0].answer;
    const entryId = escaped.entries[0].entryId;
    const dispute = (await as('poker_cage').query("select answer from cage.dispute_custody($1, $2, 'ops')", [operator.sid, entryId])).rows[0].answer;
    const sig = randomBytes(64);
    const key = randomBytes(32);
    for (const [args, refusal] of [
      [[entryId, dispute.disputeId, 'release me', sig, key], 'CGYMM release_message_mismatch'],
      [[entryId, '987654321', dispute.releaseMessage, sig, key], 'CGYDN dispute_not_found'],
      [[hold.hold.entryId, dispute.disputeId, dispute.releaseMessage, sig, key], 'CGCNF custody_entry_not_found'],
      [[entryId, dispute.disputeId, dispute.releaseMessage, randomBytes(32), key], 'CGBRQ bad_request'],
    ] as const) {
      expect(await outcome(as('poker_cage').query('select * from cage.release_custody($1, $2, $3, $4, $5)', [...args]))).toBe(refusal);
    }
    // a key that is not the pinned arbiter key records nothing (issue 31, class 3)
    expect(await outcome(as('poker_cage').query('select * from cage.release_custody($1, $2, $3, $4, $5)', [entryId, dispute.disputeId, dispute.releaseMessage, sig, key])))
      .toBe('CGKNP key_not_pinned');
    // SQL cannot check an ed25519 signature: under the pinned arbiter key, a release is recorded
    // whatever signature it carries, but pending: the entry stays DISPUTED (the owner cannot claim
    // it) until the worker verifies the signature; a forged one gets its verdict and is named
    const arbiterKey = ed25519.getPublicKey(ed25519.utils.randomSecretKey());
    await pinAsOwner(db.owner, 'arbiter', arbiterKey);
    const pinned = Buffer.from(arbiterKey);
    expect(await outcome(as('poker_cage').query('select * from cage.release_custody($1, $2, $3, $4, $5)', [entryId, dispute.disputeId, dispute.releaseMessage, sig, pinned]))).toBe('ok');
    expect(await outcome(as('poker_cage').query('select * from cage.release_custody($1, $2, $3, $4, $5)', [entryId, dispute.disputeId, dispute.releaseMessage, sig, pinned])))
      .toBe('CGYRP custody_release_pending');
    expect((await db.owner.query('select user_id, status from cage.custody_entries where id = $1', [entryId])).rows[0]).toEqual({ user_id: world.victim, status: 'disputed' });
    expect(await outcome(as('poker_cage').query('select * from cage.claim_custody($1, $2)', [await playerGrant(db.owner, world.victim), entryId])))
      .toBe('CGCNC custody_not_claimable');
    // the cage login cannot give the verdict itself
    const { rows: [forged] } = await db.owner.query('select id from cage.custody_releases where dispute_id = $1', [dispute.disputeId]);
    expect(await outcome(as('poker_cage').query('select * from cage.verify_custody_release($1, true)', [forged.id]))).toMatch(/^42501/);
    expect(await verifyPendingReleases(db.pool('poker_worker', 1))).toEqual([expect.objectContaining({ releaseId: forged.id.toString(), valid: false })]);
    expect((await db.owner.query('select status from cage.custody_entries where id = $1', [entryId])).rows[0]).toEqual({ status: 'disputed' });
    expect(await violations()).toEqual([]);
    const named = await releaseViolations(db.pool('poker_worker', 1));
    expect(named).toContainEqual(expect.objectContaining({ invariant: 'custody_release', subject: `release:${forged.id}` }));
  });

  test('no login makes a temporary table (so none shadows pg_locks for game.take_lease)', async () => {
    for (const login of LOGINS) {
      expect(await outcome(as(login).query('create temp table pg_locks (locktype text)'))).toBe(`42501 permission denied to create temporary tables in database "${db.name}"`);
    }
  });

  test('no login writes auth.attempt_limits directly', async () => {
    for (const sql of ["insert into auth.attempt_limits (key, points, expire) values ('x', 0, 0)", 'delete from auth.attempt_limits']) {
      expect(await outcome(as('poker_auth').query(sql))).toMatch(/^42501 /);
    }
  });
});

describe('the catalog', () => {
  test('no service login holds TEMP on the database', async () => {
    const { rows } = await db.owner.query<{ login: string; temp: boolean }>(
      'select l as login, has_database_privilege(l, current_database(), \'temporary\') as temp from unnest($1::text[]) l', [[...LOGINS]],
    );
    expect(rows.filter((r) => r.temp)).toEqual([]);
  });

  test('every function of ours pins its search_path with pg_temp last', async () => {
    const { rows } = await db.owner.query<{ fn: string; config: string[] | null }>(`
      select p.oid::regprocedure::text as fn, p.proconfig as config
        from pg_proc p join pg_namespace n on n.oid = p.pronamespace
       where n.nspname = any($1) and p.prokind = 'f'`, [SCHEMAS]);
    const wrong = rows.filter((r) => !(r.config ?? []).some((c) => /^search_path=.*pg_temp$/.test(c)));
    expect(wrong.map((r) => `${r.fn} ${JSON.stringify(r.config)}`)).toEqual([]);
    expect(rows.length).toBeGreaterThan(100);
  });

  test('no service login may INSERT, UPDATE or DELETE any table outside graphile_worker\'s own', async () => {
    const { rows } = await db.owner.query<{ login: string; tbl: string; priv: string }>(`
      select l as login, c.oid::regclass::text as tbl, priv
        from pg_class c join pg_namespace n on n.oid = c.relnamespace
        cross join unnest($1::text[]) l
        cross join unnest(array['insert', 'update', 'delete']) priv
       where c.relkind in ('r', 'p', 'v') and n.nspname not in ('pg_catalog', 'information_schema', 'graphile_worker', 'pg_toast')
         and (has_table_privilege(l, c.oid, priv) or (priv = 'update' and has_any_column_privilege(l, c.oid, 'update')))`, [[...LOGINS, 'poker_admin', 'poker_anonymous']]);
    expect(rows).toEqual([]);
  });
});

/**
 * Every function of our schemas a login may execute (graphile-worker's own, the queue's, are not
 * ours: its jobs re-read what they act on, test/worker/forged-jobs.test.ts), as the role it acts as.
 */
async function executable(login: Login) {
  const { rows } = await db.owner.query<{ fn: string; oid: number; types: string[] }>(`
    select p.oid::regprocedure::text as fn, p.oid::int as oid,
           array(select format_type(t, null) from unnest(p.proargtypes) t) as types
      from pg_proc p join pg_namespace n on n.oid = p.pronamespace
     where n.nspname = any($2) and p.prokind = 'f' and has_function_privilege($1, p.oid, 'execute')
     order by 1`, [login === 'poker_graphql' ? 'poker_admin' : login, SCHEMAS]);
  return rows;
}


/**
 * Every function a service login may execute, with the authority it relies on: what it derives
 * the acting identity or the amount from, so that a caller holding only the login proves nothing.
 * The catalog is checked against this list (a function granted without its entry fails the suite),
 * and every function is then tried with forged arguments below.
 */
const REVIEWED: Record<string, string> = {
  // auth: the identity service (it verifies the identity provider's tokens and wallets' signatures
  // itself; a password is proven to SQL; reset tokens never reach it)
  'auth.admin_password_params(text)': 'the scrypt parameters, never the key',
  'auth.bridge_sign_in(text,text,text,text)': 'identity root: the identity provider\'s verified identity',
  'auth.check_reset_token(bytea)': 'identity root: the token\'s hash',
  'auth.consume_nonce(text,uuid)': 'identity root: a nonce it issued',
  'auth.count_attempt(text,integer)': 'counts only, recovery keys only; no reset (issue 31: no sign-in key)',
  'auth.count_sign_in(text,text,text,integer,integer,integer)': 'counts only (issue 31): the account\'s ceiling is fixed in SQL whatever the address or limits named; a device bucket only for a device token of a past success',
  'auth.bind_sign_in(uuid,bytea)': 'a counted ticket, bound once to one key',
  'auth.create_session(uuid,bytea,bytea,integer,bytea)': 'proof of the admin\'s password (the scrypt key, compared in SQL), for a ticket counted and bound in an earlier transaction (issue 31)',
  'auth.current_admin()': 'the request\'s admin session handle',
  'auth.grant_access(uuid,integer)': 'identity root: a token it mints',
  'auth.issue_nonce(text,uuid,text,integer)': 'identity root',
  'auth.link_wallet(uuid,text,text,integer)': 'identity root: after the wallet\'s signature',
  'auth.mint_invite(text,integer,integer,text)': 'identity root: invites',
  'auth.request_password_reset(text,text,integer)': 'makes the token in SQL; it leaves only sealed to the worker\'s pinned mail key (issue 31)',
  'auth.reset_password(bytea,text)': 'identity root: the reset token\'s hash',
  'auth.revoke_session(bytea)': 'the session token\'s hash',
  'auth.session_for(bytea)': 'the session token\'s hash',
  'auth.set_primary_wallet(uuid,text)': 'identity root',
  'auth.jwt_public_keys(integer)': 'the pinned jwt public keys (the JWKS): public values, pinned by operators or the owner only',
  'auth.unlink_wallet(uuid,text)': 'identity root',
  // bank: the chain bank (issue 20). A confirmation is the chain's: the bank process reads it from
  // the receipt, and its reconciler reads a row back from the chain before crediting or settling it
  'bank.activate_deployment(uuid,bigint,text,text,bigint)': 'a live admin session (an operator\'s act; issue 31 class 7: test/platform/attacks-chain.test.ts)',
  'bank.create_table(text,text,jsonb,uuid,integer,integer,text,text)': 'the creator\'s token grant (as game.create_table)',
  'bank.open_deposit(uuid,text,text,integer,bigint,text,bigint)': 'the player\'s token grant; the signer one of their linked wallets',
  'bank.submit_deposit(text,text)': 'bookkeeping of its own intent; moves nothing',
  'bank.confirm_deposit(text,text,bigint,text,numeric)': 'a claim: the game reads the transaction and its Deposited event back from the chain (game.record_chain_deposit) before any seat is credited from it; a forged one is named (chain_deposit_confirmed_without_event)',
  'bank.fail_deposit(text,text)': 'a claim: the receipt overrides it (confirm_deposit from failed); a failed deposit whose tokens reached the vault is named and confirmed by the reconciler\'s scan',
  'bank.mark_credited(text)': 'bound: the game\'s seat credit of this key',
  'bank.uncredited_deposits(integer,integer)': 'reads',
  'bank.unresolved_deposits(integer,integer)': 'reads',
  'bank.open_withdrawal(uuid,text,bigint,bigint,text,text,text,boolean,text)': 'bound: the position the game froze (stack, chain head); a linked wallet or the last permit signer',
  'bank.advance_withdrawal(text,text,text,bigint,text,numeric,text)': 'the chain\'s receipt (the Withdrawn event), read back from the chain before any seat is settled from it',
  'bank.retry_withdrawal(text)': 'bookkeeping: a failed payment tried again to its own destination; its earlier transaction kept and read on chain before another is sent (a claimed failure never pays twice: attacks-chain.test.ts class 7 (d))',
  'bank.take_withdrawal(text)': 'bookkeeping: changes nothing; the row locked for its one sender until it records the transaction it sent (a second sender waits, then sends nothing: chain-payments-race.test.ts)',
  'bank.mark_withdrawal_settled(text)': 'bound: the game closed the position under this key',
  'bank.unsettled_withdrawals(integer,integer)': 'reads',
  'bank.refund_tournament_entry(uuid,text)': 'the player\'s token grant; their own paid entry, refunded to the wallet that signed its confirmed deposit',
  'bank.open_tournament_payout(text,integer,bigint)': 'state: the game\'s payout row of the place (user, amount), paid to the wallet of that player\'s confirmed entry deposit',
  'bank.advance_tournament_payment(text,text,text,bigint,text,numeric,text)': 'the chain\'s receipt (the PaidOut or Withdrawn event of its own destination and amount)',
  'bank.retry_tournament_payment(text)': 'bookkeeping: a failed payment tried again to its own destination; its earlier transaction kept and read on chain before another is sent',
  'bank.tournament_payments_to_resume(integer,integer)': 'reads (and clears failedAt)',
  'bank.open_vault_refund(text,integer,text,text,numeric,text)': 'evidence: a Deposited event (transaction, log index) no intent backs, or a confirmed deposit uncredited ten minutes on, paid back to its own owner; refused for a credited, refunded or recent deposit; a made-up one is never paid (the operator key pays only an event it re-read) and is named (chain-refunds.test.ts (3))',
  'bank.advance_vault_refund(text,text,text,bigint,text,numeric,text)': 'the chain\'s receipt (the Withdrawn event of its own destination and amount); a claimed failure keeps its transaction, read on chain before another is sent',
  // betting (issue 19): the betting service's login
  'betting.claim_quote(uuid,text)': 'the player\'s token grant; reads the payout its market recorded (moves nothing)',
  'betting.record_bet(text)': 'reads: the bet of the cage\'s stake of this ref (written with its debit; moves nothing)',
  'betting.remove_bet(uuid,text)': 'the player\'s token grant; their own bet, while its market takes bets; credits back that stake\'s own amount to that bettor',
  'betting.sweep_markets(integer)': 'state: the tournaments\' own rows',
  'betting.sync_market(text)': 'state: the tournament\'s own rows (play started, eliminations, standings, a force-end)',
  // cage
  'cage.audit()': 'reads',
  'cage.audit_since_checkpoint()': 'reads, and moves its own checkpoint when clean; moves nothing',
  // the audit of causes (issue 31, server/audit/): reads of what is new since its marks, the pinned
  // dealer keys and the liveness (no secret: records and deals of finished hands, public keys,
  // times); the worker's run end records the run and, when clean, moves the marks forward only, to
  // hands and links that exist (the worst a stolen worker login does: mark hands audited that are not,
  // which a full audit, `npm run ops -- audit --full`, reads again from the start)
  'cage.audit_dealer_keys()': 'reads public keys',
  'cage.audit_liveness()': 'reads two times',
  'cage.cause_audit_finish(boolean,integer,jsonb,jsonb,integer,integer)': 'records a run; moves the audit\'s marks forward only, to hands and links that exist; moves no chip',
  'cage.cause_audit_hands(boolean,integer)': 'reads finished hands\' records and deals (public once a hand is over)',
  'cage.cause_audit_links(boolean,integer)': 'reads the positions\' chains',
  'cage.cause_audit_tournaments(boolean)': 'reads the tournaments\' stacks',
  'cage.claim_bet_payout(uuid,text)': 'the player\'s token grant; the amount the market\'s settlement recorded for them (after the audit mark)',
  'cage.open_bet_stake(uuid,text,text,uuid,bigint)': 'the player\'s token grant, a market taking bets, the real_money switch; the debit and the bet together',
  'cage.claim_custody(uuid,bigint)': 'the player\'s token grant',
  'cage.confirm_deposit(text)': 'bound: the game holds the credit of this deposit',
  'cage.correct_books(uuid,text,text,bigint[],bigint[],text)': 'a live admin session',
  'cage.custody_holdings(uuid,text[],text,uuid,bigint,integer)': 'a live admin session; reads',
  'cage.custody_release_message(bigint,bigint)': 'reads (the message is no secret: the signature is)',
  'cage.dispute_custody(uuid,bigint,text)': 'a live admin session; blocks the owner\'s claim, moves nothing',
  'cage.escape_table(uuid,text,text)': 'a live admin session; the table\'s own escrow, to custody for its own positions\' owners (or one hold)',
  'cage.exchange_chips(text,uuid,bigint,text,text,uuid)': 'a live admin session, the real_money switch',
  'cage.fail_deposit(text,text)': 'bound: reverses its own deposit, only while the game holds no credit',
  'cage.gas_deposit(uuid,text,bigint,text)': 'the player\'s token grant; their own balance to their own tank',
  'cage.reserve_gas_withdrawal(uuid,text,bigint,text)': 'the player\'s token grant; their own tank, never below zero',
  'cage.deliver_gas_withdrawal(text)': 'bound: the reservation\'s user, kind and chips',
  'cage.refund_gas_withdrawal(text,text)': 'bound: the reservation, back to the tank it came from',
  'cage.play_gate_state()': 'reads',
  'cage.seed_test_chips(uuid,text,bigint)': 'the player\'s token grant, the test_seeds switch only the migrator sets',
  'cage.grant_play_chips(text,bigint,text,text,text)': 'bound: an open claim intent of this amount and recipient',
  'cage.mark_payout_failed(text,integer,text)': 'bookkeeping of a payout intent; moves nothing',
  'cage.mark_withdrawal_settled(text)': 'bound: the game zeroed the seat',
  'cage.open_deposit(uuid,text,text,integer,bigint)': 'the player\'s token grant, the real_money switch',
  'cage.deposit_to_seat(uuid,text,text,integer,bigint)': 'cage.open_deposit (the player\'s token grant, the real_money switch), then game.credit_seat on that deposit only, in its transaction',
  'cage.open_tournament_entry(uuid,text,text,integer,bigint,integer)': 'the player\'s token grant, the entry fee of the table',
  'cage.pay_tournament_payout(text,integer,bigint)': 'bound: the payout intent\'s place, user and amount',
  'cage.repost_payout(text)': 'an unconfirmed payout older than its grace marked submitted (failedAt cleared); no chip moves',
  // the one intent model (issue 32): the reconcilers' due intents (keys only) and each step's outcome,
  // recorded for the operators (an existing intent's only; no chip moves; a back-off of at most 5 minutes)
  'cage.due_intents(text,integer,integer)': 'reads',
  'cage.record_intent_attempt(text,text,text)': 'an existing intent\'s attempt record only: what operators read and when it is retried (at most 5 minutes on); no chip moves',
  'cage.reconcile_custody_hold(uuid,bigint,text,jsonb,text)': 'a live admin session; a split summing to the hold\'s pool',
  'cage.reconcile_rake(text)': 'bound: the game\'s house rows',
  'cage.refund_tournament_entry(uuid,text)': 'the player\'s token grant, while registering',
  'cage.release_custody(bigint,bigint,text,bytea,bytea)': 'bound: the entry\'s open dispute, its canonical message and the pinned arbiter key; recorded pending, frees nothing (the worker verifies the signature: cage.verify_custody_release)',
  'cage.verify_custody_release(bigint,boolean)': 'bound: a release the cage recorded under a pinned arbiter key; frees the entry to its own owner, moves nothing (the audit re-verifies every release: releaseViolations)',
  'cage.pinned_keys(text)': 'reads public keys',
  'cage.pin_key(uuid,text,bytea)': 'a live admin session',
  'cage.retire_key(uuid,text,bytea)': 'a live admin session',
  'cage.set_switch(uuid,text,boolean)': 'a live admin session',
  'cage.settle_position(uuid,text,bigint,bigint,text,text,text,boolean)': 'bound: the position the game froze (stack, chain head)',
  'cage.settle_tournament(text)': 'state: an ended tournament\'s places',
  'cage.store_receipt(text,text,text,bytea,bytea,bytea)': 'bound: its settlement\'s own user, the pinned receipt key (the audit verifies the signature: receiptViolations)',
  'cage.switch_states()': 'reads',
  'cage.tables_with_unreconciled_rake()': 'reads',
  'cage.unsettled_stand_ups(integer,integer)': 'reads',
  'game.escape_notices(text,uuid[])': 'reads (an escaped table\'s custody entries of the players it unseated; moves nothing)',
  'cage.unsigned_bust_receipts(integer)': 'reads (the busts whose receipt the cage signs; no key or signature)',
  // claims
  'claims.board(text,uuid,timestamp with time zone)': 'reads what the login may select anyway',
  'claims.board_settings(text)': 'reads',
  'claims.create_section(uuid,text,jsonb)': 'a live admin session',
  'claims.credit_claim(text,uuid,text,timestamp with time zone,jsonb)': 'the player\'s token grant; the catalog\'s amount; claimable as the SQL judges it (posts the cage grant)',
  'claims.delete_section(uuid,text,text)': 'a live admin session',
  'claims.iso_week(timestamp with time zone)': 'pure',
  'claims.mark_condition_met(text,uuid,text,text)': 'state: a known condition must hold',
  'claims.patch_section(uuid,text,text,jsonb)': 'a live admin session',
  'claims.resolved_sections(text)': 'reads',
  'claims.set_board_settings(uuid,text,boolean,boolean)': 'a live admin session',
  // game
  'game.abandon_hand(text,bigint)': 'the table\'s lease epoch',
  'game.cancel_credit(text,text,uuid,bigint)': 'bound: the cage\'s deposit of this key',
  'game.chain_deposit_to_verify(text)': 'reads a confirmed chain deposit and its deployment',
  'game.record_chain_deposit(text,text,bigint,text,numeric)': 'bound: the bank\'s confirmed deposit of this key, transaction, owner and amount (the game\'s own read of the chain); funds nothing by itself',
  'game.create_agent(uuid,text)': 'the player\'s token grant',
  'game.create_table(text,text,jsonb,text,uuid,integer,integer,text,text)': 'the real_money switch; the creator from the token\'s grant',
  'game.credit_seat(text,text,uuid,integer,bigint)': 'bound: a live cage deposit of the same user, table, seat and amount',
  'game.commit_deal(text,bigint,jsonb)': 'the lease epoch; one committed deal per table (a published seed is never drawn again)',
  'game.deal_hand(text,text,bigint,jsonb,jsonb)': 'the table\'s lease epoch; the deal must be the one the table committed; none while an abandoned deal is unrevealed; then reads',
  'game.allow_process_url(uuid,text)': 'a live admin session',
  'game.forbid_process_url(uuid,text)': 'a live admin session',
  'game.process_url_list(uuid)': 'a live admin session; reads',
  'game.dealer_public_keys()': 'reads the pinned public keys (the private key is the game process\'s own, never the database\'s: issue 31)',
  'game.pin_dealer_key(uuid,text)': 'an operator\'s live admin session (admin_of_session)',
  'game.retire_dealer_key(uuid,text)': 'an operator\'s live admin session (admin_of_session)',
  'game.end_hand(text,text,bigint,jsonb,bigint,integer,bytea,jsonb,uuid[],timestamp with time zone,bigint,jsonb,text,text,text)': 'the lease epoch; chips conserved; the positions left with no chips closed by their bank\'s zero settlement (derived from the stacks it wrote: moves nothing); a replay answers only what this table committed for that hand; the history and result only as a compact value of the checked shape (format, size, declared inflated length: docs/security.md, "The compact hand history"), never money; the record must be this hand\'s and extend the table\'s chain (SQL has no ed25519: the audit of causes checks its signature against the pinned dealer keys and replays it, and the table\'s payouts wait for that: attacks-causes.test.ts)',
  'game.write_boundaries(text[],text[],bigint[],jsonb[],bigint[],integer[],bytea[],jsonb[],text[],timestamp with time zone[],bigint[],jsonb[],text[],text[],text[],text[],text[],bigint[],jsonb[],jsonb[])': 'no authority of its own: each entry is written by game.end_hand or game.deal_hand as above, with their checks (a group commit\'s batch in one call); mismatched arguments refused',
  'game.flag_agent_decision(uuid,uuid,text,text)': 'the player\'s token grant; a hand the agent was dealt',
  'game.hand_for_player(text,uuid)': 'reads what the login may select anyway',
  'game.open_deals(text,bigint)': 'the lease epoch; abandons only what the table holds (its stacks stand): the abandoned deal is revealed by the room and counted',
  'game.publish_agent_version(uuid,uuid,jsonb)': 'the player\'s token grant',
  'game.record_tournament_announced(text,text,integer,integer[])': 'bookkeeping of announcements; moves nothing',
  'game.recover_interrupted_hands()': 'state: leases whose holder is gone',
  'game.register_process(text,text)': 'the calling connection becomes a new process (its id made in SQL; an old id only with its succession secret); the URL from the operators\' list (attacks-procs.test.ts)',
  'game.release_hand(text,text,bigint)': 'the lease epoch',
  'game.release_lease(text,bigint)': 'the calling connection\'s process and the lease epoch',
  'game.renew_leases(text[],bigint[],integer)': 'the calling connection\'s process and the lease epochs',
  'game.reveal_abandoned(text,text,bigint,jsonb,text,text,text)': 'the lease epoch; the revealed seed must hash to the sealed commitment (unknown to the login); no chip moved; extends the chain',
  'game.seats_of(text)': 'reads',
  'game.set_process_url(text)': 'the calling connection\'s process; a URL from the operators\' list',
  'game.set_seat_agent(text,uuid,uuid)': 'state: the user\'s own agent on their own seat (ownership checked)',
  'game.set_table_status(uuid,text,text)': 'a live admin session (freezing is an operator act)',
  'game.set_tournament_trace(text,jsonb)': 'a span\'s ids; moves nothing',
  'game.settle_seat(bigint,text,text)': 'bound: the cage\'s settlement of the position',
  'game.stand_up(text,uuid)': 'the player\'s token grant; cash tables only',
  'game.stand_up_busted(text,uuid)': 'state: a zero stack; cash tables only',
  'game.stand_up_idle(text,uuid)': 'state: sat out (by the lease holder) for the house\'s idle time, which no service login may set; cash tables only',
  'game.set_sitting_out(text,uuid,boolean,bigint)': 'the table\'s lease epoch (the dealer\'s word, as a hand end); moves nothing',
  'game.idle_players(text)': 'reads',
  'game.take_lease(text,integer)': 'the calling connection\'s process (its presence lock on this backend, its session nonce)',
  'game.tournament_advance_level(text,integer)': 'state: the level\'s deadline',
  'game.tournament_begin_play(text)': 'state: the grace elapsed',
  'game.tournament_force_end(text)': 'state: playing (the service key\'s authority, as the spec gives it)',
  'game.tournament_payouts(text)': 'reads',
  'game.tournament_rearm()': 'state: re-arms stored deadlines',
  'game.tournament_release_reserve(text,uuid,bigint)': 'an unpaid reserve only (paid entries take the refund path)',
  'game.tournament_reserve(text,uuid,uuid,uuid,integer)': 'the player\'s token grant, or the agent\'s owner; 120 s at most',
  'game.unregister_process()': 'the calling connection\'s process only',
  // pure: a ref spelled from its parts, a rule applied to the settings given (db/functions/00_refs.sql,
  // game/07_tournament_rules.sql); nothing is read or written
  'cage.deposit_ref(uuid,text)': 'pure: formats a ref',
  'cage.tournament_refund_ref(text)': 'pure: formats a ref',
  'cage.tournament_ref(text)': 'pure: formats a ref',
  'cage.is_tournament_refund_ref(text)': 'pure: reads a ref',
  'cage.withdraw_replay_window()': 'pure: the bank contract\'s constant',
  // the one intent model's vocabulary and the chip units (issue 32): what the admin's view of the intents calls
  'cage.intent_statuses()': 'pure: the vocabulary',
  'cage.intent_status(text,text)': 'pure: maps a status word',
  'cage.intent_grace(text)': 'pure: a kind\'s grace',
  'cage.chip_units()': 'pure: the chip units',
  'game_private.sng_clock_factor(jsonb)': 'pure: the settings given',
  'game_private.sng_level_ms(jsonb)': 'pure: the settings given',
  'game_private.sng_action_ms(jsonb)': 'pure: the settings given',
  'game_private.sng_place_amount_list(jsonb)': 'pure: the settings given',
  'game_private.registered_count(text)': 'reads',
};

test('every function a service login may execute is reviewed for the authority it relies on (none missing, none stale)', async () => {
  const granted = new Set<string>();
  for (const login of LOGINS) for (const f of await executable(login)) granted.add(f.fn.replace(/, /g, ','));
  expect([...granted].filter((fn) => !(fn in REVIEWED)).sort()).toEqual([]);
  expect(Object.keys(REVIEWED).filter((fn) => !granted.has(fn)).sort()).toEqual([]);
});

/** Forged values by type: other users' ids and made-up ones, victim tables, zero, negative and huge amounts, nulls. */
function forgedValues(type: string): unknown[] {
  switch (type) {
    case 'uuid': return [world.victim, randomUUID(), operator.adminId, null];
    case 'text': return [world.cash, world.playing, world.registering, `ref-${randomUUID()}`, null];
    case 'bigint': return ['9000000000000000', '-5', '0', '1', null];
    case 'integer': return [0, -1, 86400, 1, null];
    case 'boolean': return [true, false, null];
    case 'jsonb': return ['{}', JSON.stringify({ '1': 9000000000000000 }), null];
    case 'bigint[]': return [[String(world.victimAccount), String(world.attackerAccount)], null];
    case 'text[]': return [[world.cash], null];
    case 'uuid[]': return [[world.victim], null];
    case 'bytea': return [randomBytes(32), null];
    case 'timestamp with time zone': return [new Date(), null];
    default: return [null];
  }
}

/**
 * Functions whose forged call may change what users own because the change is derived from state
 * the login cannot forge: the redistribution a tournament's places decide (an ended tournament's
 * settlement turns entry claims into prizes, checked by the audit's tournament books).
 */
const DERIVED: Record<string, string> = {
  'cage.settle_tournament(text)': 'an ended tournament\'s places, computed in SQL',
};

test.each(LOGINS)('%s: every function it may execute refuses forged calls or moves nothing unnamed', async (login) => {
  const fns = await executable(login);
  expect(fns.length).toBeGreaterThan(0);
  const unsafe: string[] = [];
  for (const f of fns) {
    const sql = `select * from ${f.fn.slice(0, f.fn.indexOf('('))}(${f.types.map((_, i) => `$${i + 1}`).join(', ')})`;
    for (let round = 0; round < 4; round++) {
      const args = f.types.map((t, i) => { const v = forgedValues(t); return v[(round + i) % v.length]; });
      const before = await books();
      const client = as(login);
      // the GraphQL login executes nothing itself: it is tried as the poker_admin it may become
      if (login === 'poker_graphql') await client.query('begin; set local role poker_admin');
      const result = await outcome(client.query(sql, args));
      if (login === 'poker_graphql') await client.query('rollback');
      expect(result).not.toMatch(/^XX000 /); // an unregistered refusal is a bug
      if (result !== 'ok') continue;
      if (DERIVED[f.fn]) continue;
      if ((await books()) !== before && (await violations()).length === 0) unsafe.push(`${f.fn} ${JSON.stringify(args)}`);
    }
  }
  expect(unsafe).toEqual([]);
});
