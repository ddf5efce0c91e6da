// The claim board over real HTTP against running auth, game and cage roles: the caller's board,
// every claim outcome with its status and span, the kill switch, no wallet and the grant failing
// (nothing claimed, the retry credits once), conditions met over the internal route and from the
// agent registry, and the operator's catalog and settings. The game's bank (BANK_URL) is a
// fault-injecting proxy in front of the cage, which a claim never calls (its grant is posted in its
// one transaction); a second game role has no auth role to reach (the claim reads the wallet in SQL). The cage audit closes the file.
import { randomBytes, randomUUID } from 'node:crypto';
import type pg from 'pg';
import { finishedSpans, installTelemetry, resetSpans, shutdownTelemetry } from '../../server/telemetry/index.ts';
import { expectCleanAudit } from '../helpers/cage.ts';
import { startChaosProxy, type ChaosProxy } from '../helpers/chaos-proxy.ts';
import { claimRecords, claimsClient, eventually, isoWeek, linkSolana, specClaimId } from '../helpers/claims.ts';
import { createTestDatabase, harnessSwitchOn, type TestDatabase } from '../helpers/db.ts';
import { captureLogger, type LogLine } from '../helpers/logs.ts';
import { AUTH_SECRET, call, ISSUER, startMoneyPlatform } from '../helpers/money.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';

const NOW = '2026-03-04T12:00:00.000Z'; // a Wednesday
const PERIOD = '2026-W10';
const SEEDED = ['weekly_baseline', 'connect_wallet', 'build_agent', 'seat_agent', 'inspect_decision', 'tune_republish'];

let db: TestDatabase;
let cagePool: pg.Pool;
let bankProxy: ChaosProxy;
let deadAuthGame: TestPlatform;
let logLines: LogLine[];
let m: Awaited<ReturnType<typeof startMoneyPlatform>>;
let c: ReturnType<typeof claimsClient>;
let rec: ReturnType<typeof claimRecords>;

beforeAll(async () => {
  await installTelemetry({ serviceName: 'test', memory: true });
  db = await createTestDatabase();
  // the claims here are judged at the clocks the tests name: the test harness's
  await harnessSwitchOn(db);
  cagePool = db.pool('poker_cage');
  let cageUrl = '';
  bankProxy = await startChaosProxy(() => cageUrl, 20260304);
  const captured = captureLogger('info');
  logLines = captured.lines;
  m = await startMoneyPlatform(db, { env: { BANK_URL: bankProxy.url, GAME_CALL_TIMEOUT_MS: '3000' }, log: captured.log });
  cageUrl = m.cage;
  // a second game role on the same database, alone: no auth role of its own beside it
  deadAuthGame = await startTestPlatform({
    databaseUrl: db.url,
    roles: ['game'],
    env: {
      AUTH_SECRET, AUTH_BASE_URL: ISSUER, ENABLE_TEST_AUTH: 'true',
      AUTH_JWKS_URL: `${m.platform.url('auth')}/api/auth/jwks`, BANK_URL: m.cage, GAME_CALL_TIMEOUT_MS: '3000',
    },
  });
  c = claimsClient(m);
  rec = claimRecords(db);
  const on = await c.settings({ claimBoardEnabled: true });
  expect(on).toMatchObject({ status: 200, body: { environment: 'local', claimBoardEnabled: true } });
});
afterAll(async () => {
  await deadAuthGame?.stop();
  await m?.platform.stop();
  await bankProxy?.close();
  await expectCleanAudit(cagePool);
  await db.drop();
  await shutdownTelemetry();
});
beforeEach(() => resetSpans());

/** The last finished span of that name (the server ends it just after it answered). */
const span = (name: string) => eventually(() => finishedSpans().filter((s) => s.name === name).at(-1));
/** A claim and the claim.attempt span it left. */
async function attempt(auth: Record<string, string>, body: unknown, clock?: string) {
  resetSpans();
  const r = await c.claim(auth, body, clock);
  return { ...r, span: await span('claim.attempt') };
}
const sectionOf = (body: { sections: { key: string }[] }, key: string) => body.sections.find((s) => s.key === key) as Record<string, unknown> | undefined;

test('the game logs the resolved environment and the number of loaded sections at boot', () => {
  const boot = logLines.find((l) => l.msg === 'claim board catalog loaded');
  expect(boot).toMatchObject({ environment: 'local', sections: SEEDED.length, claimBoardEnabled: false });
});

test('the board and the claim need a valid access JWT: 401 missing_bearer_token / invalid_token', async () => {
  const p = await m.player();
  const [header, payload] = p.jwt.split('.');
  const forgedSignature = `${header}.${payload}.${Buffer.alloc(64).toString('base64url')}`;
  for (const path of ['/claim-board/state', '/claim-board/claim']) {
    const body = path.endsWith('claim') ? { sectionKey: 'weekly_baseline' } : undefined;
    expect(await call(`${m.game}${path}`, { body })).toEqual({ status: 401, body: { error: 'missing_bearer_token' } });
    for (const authorization of ['Bearer not-a-jwt', `Bearer ${forgedSignature}`, `Basic ${p.jwt}`]) {
      expect(await call(`${m.game}${path}`, { headers: { authorization }, body })).toEqual({ status: 401, body: { error: 'invalid_token' } });
    }
  }
  expect(await rec.ledger(p.userId)).toEqual([]);
});

test('the board: the baseline first, then the unlocks by order, each with its claimable flag', async () => {
  const p = await m.player();
  const board = await c.state(p.auth, NOW);
  expect(board.status).toBe(200);
  expect(board.body).toMatchObject({ enabled: true, environment: 'local' });
  expect(board.body.sections.map((s: { key: string }) => s.key)).toEqual(SEEDED);
  expect(board.body.sections[0]).toEqual({
    key: 'weekly_baseline', kind: 'baseline', cadence: 'weekly', amount: 500, order: 0, conditionKey: null,
    state: 'lit', claimable: true, litAt: null, claimedAt: null, period: PERIOD,
  });
  const unlocks = board.body.sections.slice(1);
  expect(unlocks.map((s: { conditionKey: string; amount: number }) => [s.conditionKey, s.amount])).toEqual([
    ['wallet_linked', 500], ['agent_version_published', 500], ['agent_seated', 1000], ['hand_flagged', 1000], ['agent_version_republished', 2500],
  ]);
  for (const s of unlocks) expect(s).toMatchObject({ kind: 'unlock', cadence: 'once', state: 'locked', claimable: false, period: 'once' });
  const orders = unlocks.map((s: { order: number }) => s.order);
  // identity from the JWT only: a query naming another user still reads the caller's board
  const other = await m.player();
  await c.light(other.userId, 'agent_seated');
  const viaQuery = await call(`${m.game}/claim-board/state?userId=${other.userId}&user_id=${other.userId}`, { headers: { ...p.auth, 'x-test-clock': NOW } });
  expect(viaQuery).toEqual(board);
  expect(orders).toEqual([...orders].sort((a, b) => a - b));

  // a condition met makes its section claimable, and only that one
  expect((await c.light(p.userId, 'hand_flagged')).body).toMatchObject({ ok: true, active: true, lit: ['inspect_decision'] });
  const lit = await c.state(p.auth, NOW);
  for (const s of lit.body.sections.slice(1)) {
    expect(s).toMatchObject(s.key === 'inspect_decision' ? { state: 'lit', claimable: true } : { state: 'locked', claimable: false });
  }
  expect(sectionOf(lit.body, 'inspect_decision')!.litAt).toEqual(expect.any(String));

  // the ladder follows `order`, not the seed: build_agent moved last, then back
  expect((await c.patchSection({ key: 'build_agent', order: 99 })).status).toBe(200);
  try {
    expect((await c.state(p.auth, NOW)).body.sections.map((s: { key: string }) => s.key)).toEqual([
      'weekly_baseline', 'connect_wallet', 'seat_agent', 'inspect_decision', 'tune_republish', 'build_agent',
    ]);
  } finally {
    expect((await c.patchSection({ key: 'build_agent', order: 2 })).status).toBe(200);
  }
  expect((await c.state(p.auth, NOW)).body.sections.map((s: { key: string }) => s.key)).toEqual(SEEDED);
});

test('claim outcomes: credited 200, already_claimed and locked 409, forged 403, bad_request 400, each with its claim.attempt span', async () => {
  const p = await m.player();
  await linkSolana(db, p.userId);
  await c.light(p.userId, 'hand_flagged');

  const credited = await attempt(p.auth, { sectionKey: 'weekly_baseline' }, NOW);
  const baselineId = specClaimId(p.userId, 'weekly_baseline', PERIOD);
  expect(credited.status).toBe(200);
  expect(credited.body).toEqual({
    outcome: 'credited', sectionKey: 'weekly_baseline', amount: 500, period: PERIOD, claimId: baselineId, grantTx: expect.any(String),
  });
  expect(credited.span.attributes['claim.outcome']).toBe('credited');
  expect(await rec.ledger(p.userId)).toEqual([
    { section_key: 'weekly_baseline', period: PERIOD, amount: 500, claim_id: baselineId, grant_tx: credited.body.grantTx },
  ]);
  expect(await rec.userSection(p.userId, 'weekly_baseline')).toMatchObject({ state: 'claimed', period: PERIOD, claim_id: baselineId });
  expect(await rec.grants(baselineId)).toHaveLength(1);

  const again = await attempt(p.auth, { sectionKey: 'weekly_baseline' }, NOW);
  expect(again).toMatchObject({ status: 409, body: { outcome: 'already_claimed', error: 'already_claimed', sectionKey: 'weekly_baseline' } });
  expect(again.span.attributes['claim.outcome']).toBe('already_claimed');

  const locked = await attempt(p.auth, { sectionKey: 'build_agent' }, NOW);
  expect(locked).toMatchObject({ status: 409, body: { outcome: 'locked', error: 'locked', sectionKey: 'build_agent' } });
  expect(locked.span.attributes['claim.outcome']).toBe('locked');

  const unknown = await attempt(p.auth, { sectionKey: 'no_such_section' }, NOW);
  expect(unknown).toMatchObject({ status: 403, body: { outcome: 'forged', error: 'forged' } });
  expect(unknown.span.attributes['claim.outcome']).toBe('forged');

  // identity comes from the JWT only: a lit section claimed in another user's name is a forgery
  for (const field of ['userId', 'user_id']) {
    const forged = await attempt(p.auth, { sectionKey: 'inspect_decision', [field]: randomUUID() }, NOW);
    expect(forged).toMatchObject({ status: 403, body: { outcome: 'forged', error: 'forged' } });
    expect(forged.span.attributes['claim.outcome']).toBe('forged');
  }
  expect(await rec.userSection(p.userId, 'inspect_decision')).toMatchObject({ state: 'lit', claim_id: null });

  // a section disabled for this environment is not live here: forged
  await c.light(p.userId, 'agent_seated');
  expect((await c.patchSection({ key: 'seat_agent', environment: 'local', enabled: false })).status).toBe(200);
  try {
    const hidden = await attempt(p.auth, { sectionKey: 'seat_agent' }, NOW);
    expect(hidden).toMatchObject({ status: 403, body: { outcome: 'forged' } });
    expect(hidden.span.attributes['claim.outcome']).toBe('forged');
  } finally {
    expect((await c.deleteSection('seat_agent', 'local')).status).toBe(200);
  }
  expect(await rec.userSection(p.userId, 'seat_agent')).toMatchObject({ state: 'lit' });

  // no section key
  for (const body of [{}, { sectionKey: 5 }, { sectionKey: '' }, { sectionKey: 'x'.repeat(65) }, undefined]) {
    resetSpans();
    const bad = await call(`${m.game}/claim-board/claim`, { method: 'POST', headers: p.auth, body });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('bad_request');
    const s = await span('claim.attempt');
    expect(s.attributes['error.code']).toBe('bad_request');
    expect(s.attributes['claim.outcome']).toBeUndefined();
  }

  // the lit unlock, claimed in the caller's own name
  const unlock = await attempt(p.auth, { sectionKey: 'inspect_decision', userId: p.userId }, NOW);
  expect(unlock.status).toBe(200);
  expect(unlock.body).toMatchObject({ outcome: 'credited', amount: 1000, period: 'once', claimId: specClaimId(p.userId, 'inspect_decision', 'once') });
  expect((await rec.ledger(p.userId)).map((l) => l.section_key)).toEqual(['weekly_baseline', 'inspect_decision']);
  expect(await m.balance(p.auth)).toBe(1500);
});

test('the baseline period is the ISO week of the claim clock: once per week, no stacking, new ISO year', async () => {
  const p = await m.player();
  await linkSolana(db, p.userId);
  const at = (iso: string) => c.claim(p.auth, { sectionKey: 'weekly_baseline' }, iso);
  // Thursday 2026-12-31 is 2026-W53; Sunday 2027-01-03 is still W53; Monday 2027-01-04 is 2027-W01
  expect(isoWeek(new Date('2026-12-31T10:00:00Z'))).toBe('2026-W53');
  expect((await at('2026-12-31T10:00:00Z')).body).toMatchObject({ outcome: 'credited', period: '2026-W53' });
  expect((await c.state(p.auth, '2027-01-03T23:59:59Z')).body.sections[0]).toMatchObject({ state: 'claimed', claimable: false, period: '2026-W53' });
  expect(await at('2027-01-03T23:59:59Z')).toMatchObject({ status: 409, body: { outcome: 'already_claimed' } });
  expect((await c.state(p.auth, '2027-01-04T00:00:00Z')).body.sections[0]).toMatchObject({ state: 'lit', claimable: true, period: '2027-W01' });
  const next = await at('2027-01-04T00:00:00Z');
  expect(next.body).toMatchObject({ outcome: 'credited', amount: 500, period: '2027-W01', claimId: specClaimId(p.userId, 'weekly_baseline', '2027-W01') });
  // skipped weeks never accumulate: ten weeks later pays one window
  expect((await at('2027-03-15T12:00:00Z')).body).toMatchObject({ outcome: 'credited', amount: 500, period: '2027-W11' });
  expect(await m.balance(p.auth)).toBe(1500);
  expect((await rec.ledger(p.userId)).map((l) => l.period)).toEqual(['2026-W53', '2027-W01', '2027-W11']);
  expect((await c.claim(p.auth, { sectionKey: 'weekly_baseline' }, 'not a date')).status).toBe(400);
});

test('board off: the state is empty, the claim is 503 claim_board_disabled and condition-met lights nothing; nothing is written', async () => {
  const p = await m.player();
  await linkSolana(db, p.userId);
  const off = await c.settings({ claimBoardEnabled: false });
  expect(off).toMatchObject({ status: 200, body: { environment: 'local', claimBoardEnabled: false } });
  try {
    const board = await c.state(p.auth, NOW);
    expect(board.status).toBe(200);
    expect(board.body).toMatchObject({ enabled: false, sections: [] });

    const refused = await attempt(p.auth, { sectionKey: 'weekly_baseline' }, NOW);
    expect(refused).toMatchObject({ status: 503, body: { error: 'claim_board_disabled' } });
    expect(refused.span.attributes['error.code']).toBe('claim_board_disabled');
    expect(refused.span.attributes['claim.outcome']).toBeUndefined();

    resetSpans();
    const met = await c.conditionMet({ userId: p.userId, conditionKey: 'hand_flagged', idempotencyKey: `off-${p.userId}` });
    expect(met).toMatchObject({ status: 200, body: { ok: true, active: false, lit: [] } });
    expect((await span('claim.condition_met')).attributes).toMatchObject({ 'claim.active': false, 'claim.condition_key': 'hand_flagged' });
  } finally {
    expect((await c.settings({ claimBoardEnabled: true })).body).toMatchObject({ claimBoardEnabled: true });
  }
  const written = await db.owner.query(
    `select (select count(*)::int from claims.user_claim_sections where user_id = $1) as states,
            (select count(*)::int from claims.claim_ledger where user_id = $1) as ledger,
            (select count(*)::int from claims.condition_events where user_id = $1) as events`,
    [p.userId],
  );
  // switched back on: what follows from state is evaluated for everyone it holds for (the wallet
  // linked while the board was off lights connect_wallet); nothing else was written
  expect(written.rows[0]).toEqual({ states: 1, ledger: 0, events: 0 });
  expect(await rec.entries(specClaimId(p.userId, 'weekly_baseline', PERIOD))).toBe(0);
  expect(await m.balance(p.auth)).toBe(0);
  const back = (await c.state(p.auth, NOW)).body;
  expect(sectionOf(back, 'connect_wallet')).toMatchObject({ state: 'lit', claimable: true });
  // the condition reported while off did not count (nor does it hold: no decision was flagged)
  expect(sectionOf(back, 'inspect_decision')).toMatchObject({ state: 'locked', claimable: false });
});

test('a known condition lights only while it holds in the platform\'s state: a forged report (or job) lights nothing', async () => {
  const p = await m.player();
  for (const conditionKey of ['wallet_linked', 'hand_flagged', 'agent_seated', 'agent_version_published', 'agent_version_republished']) {
    expect(await c.light(p.userId, conditionKey, false)).toEqual({ status: 409, body: { error: 'condition_not_met' } });
  }
  expect((await db.owner.query('select count(*)::int as n from claims.user_claim_sections where user_id = $1', [p.userId])).rows[0].n).toBe(0);
  expect((await c.light(p.userId, 'hand_flagged')).body).toMatchObject({ ok: true, active: true, lit: ['inspect_decision'] });
});

test('no linked wallet: 409 wallet_not_linked, nothing claimed, nothing minted; linking and retrying credits', async () => {
  const p = await m.player();
  await c.light(p.userId, 'hand_flagged');
  const baselineId = specClaimId(p.userId, 'weekly_baseline', PERIOD);
  const unlockId = specClaimId(p.userId, 'inspect_decision', 'once');
  for (const sectionKey of ['weekly_baseline', 'inspect_decision']) {
    const r = await attempt(p.auth, { sectionKey }, NOW);
    expect(r).toMatchObject({ status: 409, body: { error: 'wallet_not_linked' } });
    expect(r.span.attributes['error.code']).toBe('wallet_not_linked');
  }
  expect(await rec.ledger(p.userId)).toEqual([]);
  // no wallet, no claim: nothing opened
  expect(await rec.userSection(p.userId, 'weekly_baseline')).toBeUndefined();
  expect((await db.owner.query('select status from claims.claim_intents where user_id = $1', [p.userId])).rows).toEqual([]);
  expect(await rec.userSection(p.userId, 'inspect_decision')).toMatchObject({ state: 'lit', claimed_at: null, claim_id: null });
  expect(await rec.entries(baselineId)).toBe(0);
  expect(await rec.entries(unlockId)).toBe(0);
  expect(await m.balance(p.auth)).toBe(0);
  const board = (await c.state(p.auth, NOW)).body;
  expect(sectionOf(board, 'weekly_baseline')).toMatchObject({ claimable: true });
  expect(sectionOf(board, 'inspect_decision')).toMatchObject({ state: 'lit', claimable: true });

  await linkSolana(db, p.userId);
  expect((await c.claim(p.auth, { sectionKey: 'weekly_baseline' }, NOW)).body).toMatchObject({ outcome: 'credited', claimId: baselineId });
  expect((await c.claim(p.auth, { sectionKey: 'inspect_decision' }, NOW)).body).toMatchObject({ outcome: 'credited', claimId: unlockId });
  expect(await m.balance(p.auth)).toBe(1500);
});

test('a game role with no auth role beside it pays claims: the recipient wallet is read with the claim, in SQL', async () => {
  const p = await m.player();
  const wallet = await linkSolana(db, p.userId);
  await c.light(p.userId, 'hand_flagged');
  const alone = claimsClient(m, deadAuthGame.url('game'));
  expect((await alone.state(p.auth, NOW)).status).toBe(200);
  for (const sectionKey of ['weekly_baseline', 'inspect_decision']) {
    expect((await alone.claim(p.auth, { sectionKey }, NOW)).body).toMatchObject({ outcome: 'credited' });
  }
  expect(await m.balance(p.auth)).toBe(1500);
  const { rows } = await db.owner.query('select distinct recipient, status from claims.claim_intents where user_id = $1', [p.userId]);
  expect(rows).toEqual([{ recipient: wallet, status: 'claimed' }]);
});

test('the claim never calls the cage: with every grant request to it dropped, claims credit; its /api/grant replays the claim\'s grant and backs no other', async () => {
  const p = await m.player();
  const address = await linkSolana(db, p.userId);
  await c.light(p.userId, 'hand_flagged');
  const id = specClaimId(p.userId, 'inspect_decision', 'once');
  const before = JSON.stringify(bankProxy.counts);
  bankProxy.faults('/api/grant', { drop: 1, loseAnswer: 0 });
  try {
    expect((await attempt(p.auth, { sectionKey: 'weekly_baseline' }, NOW))).toMatchObject({ status: 200, body: { outcome: 'credited', amount: 500 } });
    expect(await c.claim(p.auth, { sectionKey: 'inspect_decision' }, NOW)).toMatchObject({ status: 200, body: { outcome: 'credited', amount: 1000, claimId: id, grantTx: id } });
  } finally {
    bankProxy.faults('/api/grant', { drop: 0, loseAnswer: 0 });
  }
  expect(JSON.stringify(bankProxy.counts)).toBe(before);
  const minted = await rec.grants(id);
  expect(minted).toHaveLength(1);
  expect(minted[0]!.memo).toEqual({ recipient: address, user_id: p.userId, section_key: 'inspect_decision', period: 'once' });
  expect(await m.balance(p.auth)).toBe(1500);
  expect(await rec.ledger(p.userId, 'inspect_decision')).toEqual([{ section_key: 'inspect_decision', period: 'once', amount: 1000, claim_id: id, grant_tx: id }]);
  // the cage's grant route answers the claim's grant as a replay, and mints nothing for a claim no intent backs
  const replay = await call(`${m.cage}/api/grant`, { headers: m.service, body: { recipient: address, amount: 1000, claimId: id } });
  expect(replay).toMatchObject({ status: 200, body: { ok: true, idempotent: true, claimId: id } });
  const unbacked = specClaimId(p.userId, 'inspect_decision', 'forged');
  expect((await call(`${m.cage}/api/grant`, { headers: m.service, body: { recipient: address, amount: 1000, claimId: unbacked } })).body).toMatchObject({ error: 'grant_not_backed' });
  expect(await rec.entries(unbacked)).toBe(0);
  expect(await rec.grants(id)).toEqual(minted);
  expect(await m.balance(p.auth)).toBe(1500);
  expect((await c.claim(p.auth, { sectionKey: 'inspect_decision' }, NOW))).toMatchObject({ status: 409, body: { outcome: 'already_claimed' } });
});

test('condition-met: service key, validation, lights every enabled section bound to the key, idempotent, unknown keys light nothing', async () => {
  const p = await m.player();
  const body = { userId: p.userId, conditionKey: 'test_cond', idempotencyKey: `ik-${p.userId}` };
  expect(await c.conditionMet(body, {})).toEqual({ status: 401, body: { error: 'invalid_service_key' } });
  expect(await c.conditionMet(body, { 'x-service-key': 'wrong-key' })).toEqual({ status: 401, body: { error: 'invalid_service_key' } });
  for (const bad of [
    {}, { ...body, userId: 'not-a-uuid' }, { ...body, userId: undefined }, { ...body, conditionKey: 'Bad Key' }, { ...body, conditionKey: 5 },
    { ...body, idempotencyKey: undefined }, { ...body, idempotencyKey: '' }, { ...body, idempotencyKey: 'k'.repeat(201) },
  ]) {
    const r = await c.conditionMet(bad);
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('bad_request');
  }

  // two live sections on one condition key, one disabled everywhere, one hidden here only
  const sections = [
    { key: 'test_bonus_a', amount: 10, order: 10 }, { key: 'test_bonus_b', amount: 20, order: 11 },
    { key: 'test_bonus_off', amount: 30, order: 12, enabled: false }, { key: 'test_bonus_hidden', amount: 40, order: 13 },
  ];
  for (const s of sections) {
    const created = await c.createSection({ kind: 'unlock', cadence: 'once', conditionKey: 'test_cond', ...s });
    expect(created).toMatchObject({ status: 201, body: { environment: 'all', key: s.key, kind: 'unlock', cadence: 'once', conditionKey: 'test_cond' } });
  }
  expect((await c.patchSection({ key: 'test_bonus_hidden', environment: 'local', enabled: false })).status).toBe(200);
  try {
    resetSpans();
    const met = await c.conditionMet(body);
    expect(met).toMatchObject({ status: 200, body: { ok: true, active: true, replayed: false } });
    expect([...met.body.lit].sort()).toEqual(['test_bonus_a', 'test_bonus_b']);
    expect((await span('claim.condition_met')).attributes).toMatchObject({
      'claim.condition_key': 'test_cond', 'claim.active': true, 'claim.lit_count': 2, 'auth.user_id': p.userId,
    });
    const a = await rec.userSection(p.userId, 'test_bonus_a');
    expect(a).toMatchObject({ state: 'lit' });
    expect(await rec.userSection(p.userId, 'test_bonus_b')).toMatchObject({ state: 'lit' });
    expect(await rec.userSection(p.userId, 'test_bonus_off')).toBeUndefined();
    expect(await rec.userSection(p.userId, 'test_bonus_hidden')).toBeUndefined();
    const board = (await c.state(p.auth, NOW)).body;
    expect(board.sections.map((s: { key: string }) => s.key)).toEqual([...SEEDED, 'test_bonus_a', 'test_bonus_b']);
    expect(sectionOf(board, 'test_bonus_a')).toMatchObject({ state: 'lit', claimable: true });

    // the same report again is a replay; another report of the same condition lights nothing new
    const replay = await c.conditionMet(body);
    expect(replay).toMatchObject({ status: 200, body: { ok: true, active: true, replayed: true, lit: [] } });
    const again = await c.conditionMet({ ...body, idempotencyKey: `ik2-${p.userId}` });
    expect(again).toMatchObject({ status: 200, body: { ok: true, active: true, replayed: false, lit: [] } });
    expect((await rec.userSection(p.userId, 'test_bonus_a'))!.lit_at).toEqual(a!.lit_at);

    // a condition key no section is bound to lights nothing
    const count = async () => (await db.owner.query('select count(*)::int as n from claims.user_claim_sections where user_id = $1', [p.userId])).rows[0].n;
    const n = await count();
    const unknown = await c.conditionMet({ userId: p.userId, conditionKey: 'no_such_condition', idempotencyKey: `ik3-${p.userId}` });
    expect(unknown).toMatchObject({ status: 200, body: { ok: true, active: true, lit: [] } });
    expect(await count()).toBe(n);
  } finally {
    for (const s of sections) expect((await c.deleteSection(s.key)).status).toBe(200);
    expect((await c.deleteSection('test_bonus_hidden', 'local')).status).toBe(200);
  }
  expect((await c.state(p.auth, NOW)).body.sections.map((s: { key: string }) => s.key)).toEqual(SEEDED);
});

test('agents: a first version lights build_agent, a flag lights inspect_decision, a version after a flag lights tune_republish; all three credit', async () => {
  const p = await m.player();
  const q = await m.player();
  const api = (auth: Record<string, string>, path: string, body: unknown = {}) => call(`${m.game}/api/agents${path}`, { headers: auth, body });
  expect(await call(`${m.game}/api/agents`, { body: { name: 'bot' } })).toEqual({ status: 401, body: { error: 'missing_bearer_token' } });
  const created = await api(p.auth, '', { name: 'bot' });
  expect(created).toMatchObject({ status: 201, body: { agentId: expect.any(String), name: 'bot' } });
  const agentId: string = created.body.agentId;
  // no version yet: nothing to flag
  expect(await api(p.auth, `/${agentId}/flags`)).toMatchObject({ status: 400, body: { error: 'invalid_agent' } });

  expect(await api(p.auth, `/${agentId}/versions`, { manifest: { strategy: 'tight' } })).toMatchObject({
    status: 201, body: { agentId, version: 1, event: 'agent_version_published' },
  });
  expect(sectionOf((await c.state(p.auth, NOW)).body, 'build_agent')).toMatchObject({ state: 'lit', claimable: true });

  // another user's agent is not found, and lights nothing for anyone
  for (const path of [`/${agentId}/versions`, `/${agentId}/flags`, `/${randomUUID()}/versions`, '/not-a-uuid/flags']) {
    expect(await api(q.auth, path)).toEqual({ status: 404, body: { error: 'agent_not_found' } });
  }
  const qBoard = (await c.state(q.auth, NOW)).body;
  for (const key of ['build_agent', 'inspect_decision', 'tune_republish']) expect(sectionOf(qBoard, key)).toMatchObject({ state: 'locked' });

  // a flag names a hand the agent was dealt into: none, or one it did not play, is refused and lights nothing
  expect(await api(p.auth, `/${agentId}/flags`, { note: 'no hand' })).toMatchObject({ status: 400, body: { error: 'invalid_agent' } });
  const handId = `h-${randomUUID()}`;
  expect(await api(p.auth, `/${agentId}/flags`, { handId, note: 'folded the nuts' })).toEqual({ status: 404, body: { error: 'hand_not_found' } });
  const tableId = await m.table(p.auth);
  const played = async (id: string, agents: string[]) => db.owner.query(
    "insert into game.hand_histories (hand_id, table_id, hand_number, status, agents, history) values ($1, $2, 1, 'finished', $3::uuid[], '[]')", [id, tableId, agents],
  );
  await played(`${handId}-other`, [randomUUID()]);
  expect(await api(p.auth, `/${agentId}/flags`, { handId: `${handId}-other` })).toEqual({ status: 404, body: { error: 'hand_not_found' } });
  expect(sectionOf((await c.state(p.auth, NOW)).body, 'inspect_decision')).toMatchObject({ state: 'locked' });
  // the hand the live tables stored with the agent dealt in (test/game/live-tables-play.test.ts plays one)
  await played(handId, [agentId]);
  expect(await api(p.auth, `/${agentId}/flags`, { handId, note: 'folded the nuts' })).toMatchObject({
    status: 201, body: { agentId, version: 1, flagId: expect.any(String) },
  });
  expect(sectionOf((await c.state(p.auth, NOW)).body, 'inspect_decision')).toMatchObject({ state: 'lit', claimable: true });
  expect(sectionOf((await c.state(p.auth, NOW)).body, 'tune_republish')).toMatchObject({ state: 'locked' });

  expect(await api(p.auth, `/${agentId}/versions`)).toMatchObject({ status: 201, body: { version: 2, event: 'agent_version_republished' } });
  expect(sectionOf((await c.state(p.auth, NOW)).body, 'tune_republish')).toMatchObject({ state: 'lit', claimable: true });
  // a version with no flag since the last one is no event
  expect(await api(p.auth, `/${agentId}/versions`)).toMatchObject({ status: 201, body: { version: 3, event: null } });
  expect((await call(`${m.game}/api/agents`, { headers: p.auth })).body.agents).toEqual([
    { agentId, name: 'bot', version: 3, createdAt: expect.any(String) },
  ]);

  await linkSolana(db, p.userId);
  for (const [sectionKey, amount] of [['build_agent', 500], ['inspect_decision', 1000], ['tune_republish', 2500]] as const) {
    expect(await c.claim(p.auth, { sectionKey }, NOW)).toMatchObject({
      status: 200, body: { outcome: 'credited', sectionKey, amount, claimId: specClaimId(p.userId, sectionKey, 'once') },
    });
  }
  expect(await c.claim(p.auth, { sectionKey: 'seat_agent' }, NOW)).toMatchObject({ status: 409, body: { outcome: 'locked' } });
  expect(await m.balance(p.auth)).toBe(4000);
});

test("operator routes need an operator's access JWT: 401 without one, 403 for a player's, the service key is not one", async () => {
  const p = await m.player();
  const routes: [string, string, unknown][] = [
    ['GET', '/admin/claim-sections', undefined],
    ['POST', '/admin/claim-sections', { key: 'nope', kind: 'unlock', cadence: 'once', conditionKey: 'x', amount: 1 }],
    ['PATCH', '/admin/claim-sections', { key: 'seat_agent', amount: 1 }],
    ['DELETE', '/admin/claim-sections/seat_agent', undefined],
    ['GET', '/admin/claim-settings', undefined],
    ['PATCH', '/admin/claim-settings', { claimBoardEnabled: false }],
  ];
  for (const [method, path, body] of routes) {
    for (const [headers, status, error] of [
      [{}, 401, 'missing_bearer_token'], [m.service, 401, 'missing_bearer_token'], [{ authorization: 'Bearer a.b.c' }, 401, 'invalid_token'],
      [p.auth, 403, 'admin_required'],
    ] as [Record<string, string>, number, string][]) {
      expect(await call(`${m.game}${path}`, { method, headers, body })).toEqual({ status, body: { error } });
    }
  }
  // nothing changed
  const listed = await c.listSections();
  expect(listed.body.resolved.map((s: { key: string; amount: number }) => [s.key, s.amount])).toEqual([
    ['weekly_baseline', 500], ['connect_wallet', 500], ['build_agent', 500], ['seat_agent', 1000], ['inspect_decision', 1000], ['tune_republish', 2500],
  ]);
  expect((await c.settings()).body).toEqual({ environment: 'local', claimBoardEnabled: true, playTransferGateEnabled: true });
});

test('PATCH /admin/claim-sections: amount edits are live; kind and cadence are immutable; invalid amounts and unknown keys are refused', async () => {
  const p = await m.player();
  await linkSolana(db, p.userId);
  await c.light(p.userId, 'agent_seated');
  const updated = await c.patchSection({ key: 'seat_agent', amount: 1200 });
  expect(updated).toMatchObject({
    status: 200,
    body: { environment: 'all', key: 'seat_agent', kind: 'unlock', cadence: 'once', amount: 1200, order: 3, conditionKey: 'agent_seated', enabled: true },
  });
  try {
    expect(sectionOf((await c.state(p.auth, NOW)).body, 'seat_agent')).toMatchObject({ amount: 1200, claimable: true });
    expect(await c.claim(p.auth, { sectionKey: 'seat_agent' }, NOW)).toMatchObject({ status: 200, body: { outcome: 'credited', amount: 1200 } });
    expect(await m.balance(p.auth)).toBe(1200);
  } finally {
    expect((await c.patchSection({ key: 'seat_agent', amount: 1000 })).body).toMatchObject({ amount: 1000 });
  }

  for (const edit of [{ key: 'seat_agent', kind: 'baseline' }, { key: 'seat_agent', cadence: 'weekly' }, { key: 'weekly_baseline', kind: 'unlock' },
    { key: 'weekly_baseline', cadence: 'once' }, { key: 'seat_agent', kind: 'baseline', amount: 5 }]) {
    expect(await c.patchSection(edit)).toEqual({ status: 409, body: { error: 'kind_cadence_immutable' } });
  }
  // the same kind and cadence are no change
  expect(await c.patchSection({ key: 'seat_agent', kind: 'unlock', cadence: 'once' })).toMatchObject({ status: 200, body: { amount: 1000 } });
  for (const amount of [-1, 1.5, '5', null, true]) {
    expect(await c.patchSection({ key: 'seat_agent', amount })).toEqual({ status: 400, body: { error: 'invalid_amount' } });
  }
  expect(await c.patchSection({ key: 'no_such_section', amount: 5 })).toEqual({ status: 404, body: { error: 'section_not_found' } });
  expect((await c.patchSection({ amount: 5 })).status).toBe(400);
  const listed = (await c.listSections()).body.sections.filter((s: { key: string }) => s.key === 'seat_agent');
  expect(listed).toEqual([expect.objectContaining({ environment: 'all', kind: 'unlock', cadence: 'once', amount: 1000, enabled: true })]);
});

test('a section disabled for this environment only: hidden from the board here, claims of it are forged; other environments still resolve it', async () => {
  const p = await m.player();
  await linkSolana(db, p.userId);
  await c.light(p.userId, 'agent_seated');
  const hidden = await c.patchSection({ key: 'seat_agent', environment: 'local', enabled: false });
  expect(hidden).toMatchObject({ status: 200, body: { environment: 'local', key: 'seat_agent', enabled: false, amount: 1000 } });
  try {
    expect((await c.state(p.auth, NOW)).body.sections.map((s: { key: string }) => s.key)).toEqual(SEEDED.filter((k) => k !== 'seat_agent'));
    expect(await c.claim(p.auth, { sectionKey: 'seat_agent' }, NOW)).toMatchObject({ status: 403, body: { outcome: 'forged' } });
    expect(await rec.ledger(p.userId)).toEqual([]);
    const listed = (await c.listSections()).body;
    expect(listed.resolved.map((s: { key: string }) => s.key)).not.toContain('seat_agent');
    expect(listed.sections.filter((s: { key: string }) => s.key === 'seat_agent').map((s: { environment: string; enabled: boolean }) => [s.environment, s.enabled]))
      .toEqual([['all', true], ['local', false]]);
    for (const environment of ['staging', 'production']) {
      const { rows } = await db.owner.query('select key from claims.resolved_sections($1)', [environment]);
      expect(rows.map((r) => r.key)).toContain('seat_agent');
    }
  } finally {
    expect(await c.deleteSection('seat_agent', 'local')).toMatchObject({ status: 200, body: { ok: true, deleted: { environment: 'local', key: 'seat_agent' } } });
  }
  expect((await c.state(p.auth, NOW)).body.sections.map((s: { key: string }) => s.key)).toEqual(SEEDED);
  expect(await c.claim(p.auth, { sectionKey: 'seat_agent' }, NOW)).toMatchObject({ status: 200, body: { outcome: 'credited', amount: 1000 } });
});

test('POST creates a section, DELETE deletes it; an unlock claimed, deleted and recreated under its key stays already_claimed', async () => {
  const p = await m.player();
  const q = await m.player();
  await linkSolana(db, p.userId);
  await linkSolana(db, q.userId);
  const section = { key: 'promo_once', kind: 'unlock', cadence: 'once', conditionKey: 'promo_done', amount: 300, order: 20 };
  expect(await c.createSection(section)).toMatchObject({
    status: 201, body: { environment: 'all', key: 'promo_once', kind: 'unlock', cadence: 'once', conditionKey: 'promo_done', amount: 300, order: 20, enabled: true },
  });
  try {
    expect(await c.createSection(section)).toEqual({ status: 409, body: { error: 'section_exists' } });
    expect(await c.createSection({ key: 'promo_bad', conditionKey: 'promo_done', amount: 1 })).toEqual({ status: 400, body: { error: 'invalid_section' } });
    expect(await c.createSection({ ...section, key: 'promo_bad', amount: -5 })).toEqual({ status: 400, body: { error: 'invalid_amount' } });
    // a new key for an existing kind needs nothing but the row and the condition
    expect((await c.light(p.userId, 'promo_done')).body.lit).toEqual(['promo_once']);
    expect(sectionOf((await c.state(p.auth, NOW)).body, 'promo_once')).toMatchObject({ state: 'lit', claimable: true, amount: 300 });
    expect(await c.claim(p.auth, { sectionKey: 'promo_once' }, NOW)).toMatchObject({ status: 200, body: { outcome: 'credited', amount: 300 } });

    expect(await c.deleteSection('promo_once')).toMatchObject({ status: 200, body: { ok: true, deleted: { environment: 'all', key: 'promo_once' } } });
    expect(sectionOf((await c.state(p.auth, NOW)).body, 'promo_once')).toBeUndefined();
    expect(await c.claim(p.auth, { sectionKey: 'promo_once' }, NOW)).toMatchObject({ status: 403, body: { outcome: 'forged' } });
    expect(await c.deleteSection('promo_once')).toEqual({ status: 404, body: { error: 'section_not_found' } });

    expect((await c.createSection(section)).status).toBe(201);
    expect(sectionOf((await c.state(p.auth, NOW)).body, 'promo_once')).toMatchObject({ state: 'claimed', claimable: false });
    expect((await c.light(p.userId, 'promo_done')).body.lit).toEqual([]);
    expect(await c.claim(p.auth, { sectionKey: 'promo_once' }, NOW)).toMatchObject({ status: 409, body: { outcome: 'already_claimed' } });
    expect(await rec.ledger(p.userId)).toHaveLength(1);
    expect(await m.balance(p.auth)).toBe(300);
    // another user earns it normally
    await c.light(q.userId, 'promo_done');
    expect(await c.claim(q.auth, { sectionKey: 'promo_once' }, NOW)).toMatchObject({ status: 200, body: { outcome: 'credited', amount: 300 } });
  } finally {
    await c.deleteSection('promo_once');
  }
});

test('GET/PATCH /admin/claim-settings: fail-closed defaults per environment, edits, validation', async () => {
  expect(await c.settings()).toEqual({ status: 200, body: { environment: 'local', claimBoardEnabled: true, playTransferGateEnabled: true } });
  expect(await call(`${m.game}/admin/claim-settings?environment=staging`, { headers: (await m.operator()).auth })).toEqual({
    status: 200, body: { environment: 'staging', claimBoardEnabled: false, playTransferGateEnabled: true },
  });
  expect((await call(`${m.game}/admin/claim-settings?environment=nowhere`, { headers: (await m.operator()).auth })).status).toBe(400);
  expect(await c.settings({ playTransferGateEnabled: false })).toEqual({
    status: 200, body: { environment: 'local', claimBoardEnabled: true, playTransferGateEnabled: false },
  });
  expect(await c.settings({ playTransferGateEnabled: true })).toMatchObject({ body: { playTransferGateEnabled: true, claimBoardEnabled: true } });
  for (const bad of [{ bogus: 1 }, { claimBoardEnabled: 'yes' }, { environment: 'all', claimBoardEnabled: true }]) {
    const r = await c.settings(bad);
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('bad_request');
  }
  // a staging edit leaves this deployment's settings alone
  expect((await c.settings({ environment: 'staging', claimBoardEnabled: true })).body).toEqual({
    environment: 'staging', claimBoardEnabled: true, playTransferGateEnabled: true,
  });
  expect((await c.settings()).body).toEqual({ environment: 'local', claimBoardEnabled: true, playTransferGateEnabled: true });
  expect((await c.settings({ environment: 'staging', claimBoardEnabled: false })).status).toBe(200);
});

test('a zero-amount section is credited with nothing minted', async () => {
  const p = await m.player();
  await linkSolana(db, p.userId);
  const key = `zero_${randomBytes(3).toString('hex')}`;
  expect((await call(`${m.game}/admin/claim-sections`, { headers: (await m.operator()).auth, body: { key, kind: 'unlock', cadence: 'once', conditionKey: `cond_${key}`, amount: 0, order: 51 } })).status).toBe(201);
  await c.light(p.userId, `cond_${key}`);
  const r = await c.claim(p.auth, { sectionKey: key }, NOW);
  expect(r).toMatchObject({ status: 200, body: { outcome: 'credited', amount: 0, grantTx: null } });
  expect(await rec.grants(specClaimId(p.userId, key, 'once'))).toEqual([]);
  expect(await m.balance(p.auth)).toBe(0);
  expect(await c.claim(p.auth, { sectionKey: key }, NOW)).toMatchObject({ status: 409, body: { outcome: 'already_claimed' } });
});

test('identity in the body: the caller\'s own id in any case, or null, is not a forgery', async () => {
  const p = await m.player();
  await linkSolana(db, p.userId);
  for (const userId of [p.userId.toUpperCase(), null]) {
    const r = await c.claim(p.auth, { sectionKey: 'seat_agent', userId }, NOW);
    expect([userId, r.status, r.body.outcome]).toEqual([userId, 409, 'locked']);
  }
});
