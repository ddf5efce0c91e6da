// POST /api/tables over real HTTP against the running auth, game and cage roles (spec: "Table
// creation (bank)", "Table records"): the stored record, every refusal of the route, deckSeed only
// under the test harness, real-money tables only when switched on, the admin.tables.create span,
// and one winner among concurrent creations of the same id.
import { randomUUID } from 'node:crypto';
import { generateKeyPair, SignJWT } from 'jose';
import { finishedSpans, installTelemetry, resetSpans, shutdownTelemetry } from '../../server/telemetry/index.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { expectCleanAudit } from '../helpers/cage.ts';
import { call, ISSUER, POKER_SETTINGS, startMoneyPlatform } from '../helpers/money.ts';

type Money = Awaited<ReturnType<typeof startMoneyPlatform>>;
type Player = Awaited<ReturnType<Money['player']>>;

const ARENA_SETTINGS = {
  minBuyIn: 50, maxBuyIn: 500, maxPlayers: 4, rakePercent: 2.5, rakeCap: 5, turnTimeSec: 20, turnTimerEnabled: false, scoreTarget: 100,
};

let db: TestDatabase;
let m: Money;
let p: Player;
beforeAll(async () => {
  await installTelemetry({ serviceName: 'test', memory: true });
  db = await createTestDatabase();
  m = await startMoneyPlatform(db);
  p = await m.player();
});
afterAll(async () => {
  await m?.platform.stop();
  await expectCleanAudit(db.pool('poker_cage'));
  await db.drop();
  await shutdownTelemetry();
});

const newId = () => `t-${randomUUID().slice(0, 12)}`;
const create = (body: Record<string, unknown>, headers: Record<string, string> = p.auth, cage = m.cage) =>
  call(`${cage}/api/tables`, { headers, body });
const row = async (tableId: string) => (await db.owner.query('select * from game.tables where table_id = $1', [tableId])).rows[0];
const tableCount = async () => (await db.owner.query<{ n: number }>('select count(*)::int as n from game.tables')).rows[0]!.n;
const without = (settings: Record<string, unknown>, key: string) => Object.fromEntries(Object.entries(settings).filter(([k]) => k !== key));

/** The finished admin.tables.create span of a table id (the span ends right after the answer is written). */
async function spanOf(tableId: string) {
  for (let i = 0; i < 40; i++) {
    const found = finishedSpans().filter((s) => s.name === 'admin.tables.create' && s.attributes['table.id'] === tableId);
    if (found.length > 0) return found;
    await new Promise((r) => setTimeout(r, 25));
  }
  return [];
}

describe('a created table', () => {
  test('poker: 200 { tableId, gameType, status:active }; the row holds the parsed settings, extra fields stripped', async () => {
    const tableId = newId();
    const res = await create({ tableId, gameType: 'poker', settings: { ...POKER_SETTINGS, color: 'green', nested: { a: 1 } } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ tableId, gameType: 'poker', status: 'active' });
    const stored = await row(tableId);
    expect(stored).toMatchObject({
      table_id: tableId, game_type: 'poker', status: 'active', mode: 'cash', kind: 'open', money_kind: 'play',
      tournament_state: null, current_level: null, level_started_at: null, current_hand_id: null, created_by: p.userId,
    });
    expect(stored.settings).toEqual(POKER_SETTINGS);

    const room = await m.room(tableId);
    expect(room.status).toBe(200);
    expect(room.body).toMatchObject({
      tableId, gameType: 'poker', settings: POKER_SETTINGS, moneyKind: 'play', status: 'active', mode: 'cash', kind: 'open',
      tournamentState: null, currentLevel: null, levelStartedAt: null, handInProgress: false, seats: [],
    });
  });

  test('poker with every optional field kept: ante, hostedOnly, showHands', async () => {
    const tableId = newId();
    const settings = { ...POKER_SETTINGS, ante: 0, hostedOnly: true, showHands: true };
    expect((await create({ tableId, gameType: 'poker', settings })).status).toBe(200);
    expect((await row(tableId)).settings).toEqual(settings);
  });

  test('arena: its own schema; poker fields are extra fields there and are stripped', async () => {
    const tableId = newId();
    const res = await create({ tableId, gameType: 'arena', settings: { ...ARENA_SETTINGS, smallBlind: 1, bigBlind: 2, ante: 1 } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ tableId, gameType: 'arena', status: 'active' });
    const stored = await row(tableId);
    expect(stored).toMatchObject({ game_type: 'arena', status: 'active', mode: 'cash', kind: 'open', money_kind: 'play', tournament_state: null });
    expect(stored.settings).toEqual(ARENA_SETTINGS);
    expect((await m.room(tableId)).body).toMatchObject({ tableId, gameType: 'arena', settings: ARENA_SETTINGS, seats: [] });
  });

  test('the bounds themselves are accepted: maxPlayers 2 and 9 (poker), 2 and 8 (arena), rakePercent 0 and 100, smallBlind 0', async () => {
    const cases: [string, Record<string, unknown>][] = [
      ['poker', { ...POKER_SETTINGS, maxPlayers: 2 }],
      ['poker', { ...POKER_SETTINGS, maxPlayers: 9, rakePercent: 100 }],
      ['poker', { ...POKER_SETTINGS, smallBlind: 0, bigBlind: 1, rakePercent: 0 }],
      ['arena', { ...ARENA_SETTINGS, maxPlayers: 2, rakePercent: 0 }],
      ['arena', { ...ARENA_SETTINGS, maxPlayers: 8, rakePercent: 100 }],
    ];
    for (const [gameType, settings] of cases) {
      const tableId = newId();
      const res = await create({ tableId, gameType, settings });
      expect([gameType, settings, res.status]).toEqual([gameType, settings, 200]);
      expect((await row(tableId)).settings).toEqual(settings);
    }
  });

  test('the room never shows deckSeed; the row keeps it (harness on), for poker and for arena', async () => {
    for (const [gameType, base] of [['poker', POKER_SETTINGS], ['arena', ARENA_SETTINGS]] as const) {
      const tableId = newId();
      const res = await create({ tableId, gameType, settings: { ...base, deckSeed: 'seed-42' } });
      expect(res.status).toBe(200);
      expect((await row(tableId)).settings).toEqual({ ...base, deckSeed: 'seed-42' });
      const room = await m.room(tableId);
      expect(room.body.settings).toEqual(base);
      expect(JSON.stringify(room.body)).not.toContain('seed-42');
    }
  });

  test('an unknown table has no room', async () => {
    expect(await m.room(newId())).toEqual({ status: 404, body: { error: 'table_not_found' } });
  });
});

describe('refusals', () => {
  test('400 missing_table_id and missing_game_type; nothing stored', async () => {
    const before = await tableCount();
    for (const tableId of [undefined, null, '']) {
      expect(await create({ tableId, gameType: 'poker', settings: POKER_SETTINGS })).toEqual({ status: 400, body: { error: 'missing_table_id' } });
    }
    for (const gameType of [undefined, null, '']) {
      expect(await create({ tableId: newId(), gameType, settings: POKER_SETTINGS })).toEqual({ status: 400, body: { error: 'missing_game_type' } });
    }
    // both missing: the table id is named first
    expect(await create({ settings: POKER_SETTINGS })).toEqual({ status: 400, body: { error: 'missing_table_id' } });
    expect(await tableCount()).toBe(before);
  });

  // [what, gameType, settings, the path of the expected issue, its code]
  const settingsCases: [string, string, Record<string, unknown>, string[], string][] = [
    ['a missing required field (turnTimeSec)', 'poker', without(POKER_SETTINGS, 'turnTimeSec'), ['settings', 'turnTimeSec'], 'invalid_type'],
    ['a missing required field (bigBlind)', 'poker', without(POKER_SETTINGS, 'bigBlind'), ['settings', 'bigBlind'], 'invalid_type'],
    ['a missing required field (arena scoreTarget)', 'arena', without(ARENA_SETTINGS, 'scoreTarget'), ['settings', 'scoreTarget'], 'invalid_type'],
    ['bigBlind equal to smallBlind', 'poker', { ...POKER_SETTINGS, smallBlind: 2, bigBlind: 2 }, ['settings', 'bigBlind'], 'custom'],
    ['bigBlind below smallBlind', 'poker', { ...POKER_SETTINGS, smallBlind: 5, bigBlind: 2 }, ['settings', 'bigBlind'], 'custom'],
    ['bigBlind 0', 'poker', { ...POKER_SETTINGS, smallBlind: 0, bigBlind: 0 }, ['settings', 'bigBlind'], 'too_small'],
    ['maxBuyIn below minBuyIn (poker)', 'poker', { ...POKER_SETTINGS, minBuyIn: 100, maxBuyIn: 99 }, ['settings', 'maxBuyIn'], 'custom'],
    ['maxBuyIn below minBuyIn (arena)', 'arena', { ...ARENA_SETTINGS, minBuyIn: 100, maxBuyIn: 99 }, ['settings', 'maxBuyIn'], 'custom'],
    ['minBuyIn 0', 'poker', { ...POKER_SETTINGS, minBuyIn: 0 }, ['settings', 'minBuyIn'], 'too_small'],
    ['poker maxPlayers 10', 'poker', { ...POKER_SETTINGS, maxPlayers: 10 }, ['settings', 'maxPlayers'], 'too_big'],
    ['poker maxPlayers 1', 'poker', { ...POKER_SETTINGS, maxPlayers: 1 }, ['settings', 'maxPlayers'], 'too_small'],
    ['arena maxPlayers 9', 'arena', { ...ARENA_SETTINGS, maxPlayers: 9 }, ['settings', 'maxPlayers'], 'too_big'],
    ['arena maxPlayers 1', 'arena', { ...ARENA_SETTINGS, maxPlayers: 1 }, ['settings', 'maxPlayers'], 'too_small'],
    ['rakePercent above 100 (poker)', 'poker', { ...POKER_SETTINGS, rakePercent: 100.5 }, ['settings', 'rakePercent'], 'too_big'],
    ['rakePercent above 100 (arena)', 'arena', { ...ARENA_SETTINGS, rakePercent: 101 }, ['settings', 'rakePercent'], 'too_big'],
    ['a negative rakePercent', 'poker', { ...POKER_SETTINGS, rakePercent: -1 }, ['settings', 'rakePercent'], 'too_small'],
    ['a negative ante', 'poker', { ...POKER_SETTINGS, ante: -1 }, ['settings', 'ante'], 'too_small'],
    ['a negative rakeCap', 'poker', { ...POKER_SETTINGS, rakeCap: -1 }, ['settings', 'rakeCap'], 'too_small'],
    ['turnTimeSec 0', 'poker', { ...POKER_SETTINGS, turnTimeSec: 0 }, ['settings', 'turnTimeSec'], 'too_small'],
    ['showHands without hostedOnly', 'poker', { ...POKER_SETTINGS, showHands: true }, ['settings', 'showHands'], 'custom'],
    ['showHands with hostedOnly false', 'poker', { ...POKER_SETTINGS, showHands: true, hostedOnly: false }, ['settings', 'showHands'], 'custom'],
    ['a fractional smallBlind', 'poker', { ...POKER_SETTINGS, smallBlind: 0.5 }, ['settings', 'smallBlind'], 'invalid_type'],
    ['a fractional bigBlind', 'poker', { ...POKER_SETTINGS, bigBlind: 2.5 }, ['settings', 'bigBlind'], 'invalid_type'],
    ['blinds as strings', 'poker', { ...POKER_SETTINGS, smallBlind: '1' }, ['settings', 'smallBlind'], 'invalid_type'],
    ['a fractional maxPlayers', 'poker', { ...POKER_SETTINGS, maxPlayers: 4.5 }, ['settings', 'maxPlayers'], 'invalid_type'],
    ['a non-boolean turnTimerEnabled', 'poker', { ...POKER_SETTINGS, turnTimerEnabled: 'yes' }, ['settings', 'turnTimerEnabled'], 'invalid_type'],
  ];
  test.each(settingsCases)('400 validation_failed for %s; nothing stored', async (_what, gameType, settings, path, code) => {
    const tableId = newId();
    const res = await create({ tableId, gameType, settings });
    expect(res.status).toBe(400);
    expect(Object.keys(res.body).sort()).toEqual(['error', 'issues']);
    expect(res.body.error).toBe('validation_failed');
    const issues = res.body.issues as { path: string[]; message: string; code: string }[];
    expect(issues.length).toBeGreaterThan(0);
    for (const issue of issues) {
      expect(Object.keys(issue).sort()).toEqual(['code', 'message', 'path']);
      expect(issue.path[0]).toBe('settings');
      expect(typeof issue.message).toBe('string');
      expect(issue.message.length).toBeGreaterThan(0);
    }
    expect(issues).toContainEqual({ path, message: expect.any(String), code });
    expect(await row(tableId)).toBeUndefined();
  });

  const envelopeCases: [string, Record<string, unknown>, string[], string][] = [
    ['an unknown gameType', { tableId: newId(), gameType: 'holdem', settings: POKER_SETTINGS }, ['gameType'], 'invalid_value'],
    ['a tableId with a space', { tableId: 'bad id', gameType: 'poker', settings: POKER_SETTINGS }, ['tableId'], 'invalid_format'],
    ['a tableId starting with a dash', { tableId: '-lead', gameType: 'poker', settings: POKER_SETTINGS }, ['tableId'], 'invalid_format'],
    ['a tableId of 65 characters', { tableId: 'a'.repeat(65), gameType: 'poker', settings: POKER_SETTINGS }, ['tableId'], 'invalid_format'],
    ['a numeric tableId', { tableId: 42, gameType: 'poker', settings: POKER_SETTINGS }, ['tableId'], 'invalid_type'],
    ['missing settings', { tableId: newId(), gameType: 'poker' }, ['settings'], 'invalid_type'],
    ['settings that are not an object', { tableId: newId(), gameType: 'poker', settings: 'big' }, ['settings'], 'invalid_type'],
    ['an unknown moneyKind', { tableId: newId(), gameType: 'poker', settings: POKER_SETTINGS, moneyKind: 'gold' }, ['moneyKind'], 'invalid_value'],
  ];
  test.each(envelopeCases)('400 validation_failed for %s; nothing stored', async (_what, body, path, code) => {
    const before = await tableCount();
    const res = await create(body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'validation_failed', issues: [{ path, message: expect.any(String), code }] });
    expect(await tableCount()).toBe(before);
  });

  test('deckSeed is refused while the harness is off (poker and arena), and nothing is stored', async () => {
    const off = await startMoneyPlatform(db, { env: { ENABLE_TEST_AUTH: 'false' } });
    try {
      for (const [gameType, base] of [['poker', POKER_SETTINGS], ['arena', ARENA_SETTINGS]] as const) {
        const tableId = newId();
        const res = await create({ tableId, gameType, settings: { ...base, deckSeed: 'seed-1' } }, p.auth, off.cage);
        expect(res).toEqual({
          status: 400,
          body: { error: 'validation_failed', issues: [{ path: ['settings', 'deckSeed'], message: expect.any(String), code: 'custom' }] },
        });
        expect(await row(tableId)).toBeUndefined();
        // the same settings without the seed are fine there
        expect((await create({ tableId, gameType, settings: base }, p.auth, off.cage)).status).toBe(200);
      }
    } finally {
      await off.platform.stop();
    }
  });

  test('409 table_exists on a duplicate tableId; the original row is unchanged', async () => {
    const tableId = newId();
    expect((await create({ tableId, gameType: 'poker', settings: POKER_SETTINGS })).status).toBe(200);
    const original = await row(tableId);
    const other = await m.player();
    for (const body of [
      { tableId, gameType: 'poker', settings: POKER_SETTINGS },
      { tableId, gameType: 'poker', settings: { ...POKER_SETTINGS, bigBlind: 50, maxPlayers: 9 } },
      { tableId, gameType: 'arena', settings: ARENA_SETTINGS },
    ]) {
      expect(await create(body, other.auth)).toEqual({ status: 409, body: { error: 'table_exists' } });
    }
    expect(await row(tableId)).toEqual(original);
  });

  test('401 missing_bearer_token without Authorization, invalid_token with a garbage, tampered or foreign JWT; nothing stored', async () => {
    const before = await tableCount();
    const body = { tableId: newId(), gameType: 'poker', settings: POKER_SETTINGS };
    expect(await create(body, {})).toEqual({ status: 401, body: { error: 'missing_bearer_token' } });

    const [header, payload, signature] = p.jwt.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const tampered = `${header}.${Buffer.from(JSON.stringify({ ...claims, sub: randomUUID() })).toString('base64url')}.${signature}`;
    const { privateKey } = await generateKeyPair('EdDSA');
    const foreign = await new SignJWT({ sub: p.userId }).setProtectedHeader({ alg: 'EdDSA', kid: 'foreign' })
      .setIssuer(ISSUER).setAudience(ISSUER).setIssuedAt().setExpirationTime('5m').sign(privateKey);
    for (const authorization of ['Bearer garbage', 'Bearer a.b.c', `Bearer ${tampered}`, `Bearer ${foreign}`, `Basic ${p.jwt}`, 'Bearer']) {
      expect([authorization, await create(body, { authorization })]).toEqual([authorization, { status: 401, body: { error: 'invalid_token' } }]);
    }
    expect(await tableCount()).toBe(before);
  });

  test('moneyKind real: 403 real_money_disabled while the operators\' switch is off (nothing stored); created once an operator sets it on', async () => {
    const tableId = newId();
    expect(await create({ tableId, gameType: 'poker', settings: POKER_SETTINGS, moneyKind: 'real' }))
      .toEqual({ status: 403, body: { error: 'real_money_disabled' } });
    expect(await row(tableId)).toBeUndefined();

    // REAL_MONEY_ENABLED seeds only a database that has no switch yet: this one keeps its own
    const seeded = await startMoneyPlatform(db, { env: { REAL_MONEY_ENABLED: 'true' } });
    try {
      expect(await create({ tableId, gameType: 'poker', settings: POKER_SETTINGS, moneyKind: 'real' }, p.auth, seeded.cage))
        .toEqual({ status: 403, body: { error: 'real_money_disabled' } });
    } finally {
      await seeded.platform.stop();
    }
    const operator = (await m.operator()).auth;
    const setSwitch = (enabled: boolean, headers = operator) => call(`${m.cage}/api/operator/switches`, { headers, body: { name: 'real_money', enabled } });
    // a player's token, no token and a bad body are refused; nothing changes
    expect(await setSwitch(true, p.auth)).toEqual({ status: 403, body: { error: 'admin_required' } });
    expect((await setSwitch(true, {})).status).toBe(401);
    expect((await call(`${m.cage}/api/operator/switches`, { headers: operator, body: { name: 'everything', enabled: true } })).status).toBe(400);
    expect((await call(`${m.cage}/api/operator/switches`, { headers: operator, method: 'GET' })).body)
      .toMatchObject({ switches: [{ name: 'real_money', enabled: false }] });

    expect((await setSwitch(true)).body).toMatchObject({ name: 'real_money', enabled: true, changed: true });
    expect((await setSwitch(true)).body).toMatchObject({ name: 'real_money', enabled: true, changed: false });
    const acts = await db.owner.query("select admin_id, change from cage.operator_acts where act = 'switch' order by id");
    expect(acts.rows).toEqual([{ admin_id: (await m.operator()).adminId, change: { switch: 'real_money', enabled: true } }]);
    try {
      const res = await create({ tableId, gameType: 'poker', settings: POKER_SETTINGS, moneyKind: 'real' });
      expect(res).toEqual({ status: 200, body: { tableId, gameType: 'poker', status: 'active' } });
      expect(await row(tableId)).toMatchObject({ money_kind: 'real', status: 'active', mode: 'cash', kind: 'open' });
      expect((await m.room(tableId)).body).toMatchObject({ moneyKind: 'real' });
      // play stays the default there
      const playId = newId();
      expect((await create({ tableId: playId, gameType: 'arena', settings: ARENA_SETTINGS })).status).toBe(200);
      expect((await row(playId)).money_kind).toBe('play');
    } finally {
      expect((await setSwitch(false)).body).toMatchObject({ enabled: false, changed: true });
    }
  });

});

describe('the admin.tables.create span', () => {
  beforeEach(() => resetSpans());

  test('created: table.id, table.game_type, settings.max_players, auth.user_id and result', async () => {
    const tableId = newId();
    expect((await create({ tableId, gameType: 'poker', settings: { ...POKER_SETTINGS, maxPlayers: 7 } })).status).toBe(200);
    const [span, ...more] = await spanOf(tableId);
    expect(more).toEqual([]);
    expect(span?.attributes).toMatchObject({
      'table.id': tableId, 'table.game_type': 'poker', 'settings.max_players': 7, 'auth.user_id': p.userId, result: 'created',
    });
  });

  test('replay on a duplicate id', async () => {
    const tableId = newId();
    await create({ tableId, gameType: 'arena', settings: ARENA_SETTINGS });
    resetSpans();
    expect((await create({ tableId, gameType: 'arena', settings: ARENA_SETTINGS })).status).toBe(409);
    const [span] = await spanOf(tableId);
    expect(span?.attributes).toMatchObject({
      'table.id': tableId, 'table.game_type': 'arena', 'settings.max_players': 4, 'auth.user_id': p.userId, result: 'replay',
    });
  });

  test('validation_failed on bad settings', async () => {
    const tableId = newId();
    expect((await create({ tableId, gameType: 'poker', settings: { ...POKER_SETTINGS, maxPlayers: 12 } })).status).toBe(400);
    const [span] = await spanOf(tableId);
    expect(span?.attributes).toMatchObject({ 'table.id': tableId, 'table.game_type': 'poker', 'auth.user_id': p.userId, result: 'validation_failed' });
    expect(span?.attributes['error.code']).toBe('validation_failed');
  });
});

test('20 concurrent creations of one new tableId: exactly one 200 and 19 x 409 table_exists, one row', async () => {
  const tableId = newId();
  const players = await Promise.all(Array.from({ length: 4 }, () => m.player()));
  const answers = await Promise.all(Array.from({ length: 20 }, (_, i) =>
    create({ tableId, gameType: 'poker', settings: { ...POKER_SETTINGS, maxPlayers: 2 + (i % 8) } }, players[i % 4]!.auth)));
  const created = answers.filter((a) => a.status === 200);
  expect(created).toEqual([{ status: 200, body: { tableId, gameType: 'poker', status: 'active' } }]);
  expect(answers.filter((a) => a.status === 409)).toHaveLength(19);
  for (const a of answers.filter((x) => x.status === 409)) expect(a.body).toEqual({ error: 'table_exists' });
  const { rows } = await db.owner.query('select settings, created_by from game.tables where table_id = $1', [tableId]);
  expect(rows).toHaveLength(1);
  // the stored row is the winner's
  const winner = answers.indexOf(created[0]!);
  expect(rows[0]).toEqual({ settings: { ...POKER_SETTINGS, maxPlayers: 2 + (winner % 8) }, created_by: players[winner % 4]!.userId });
});
