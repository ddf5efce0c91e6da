// One table, one dealer, with real processes: two `node server/main.ts --role game` children on
// one database (auth and cage in this process; the cage's seat calls go through a forwarder that
// stands for the deployment's load balancer). Bots play a table on the first; the second refuses
// it (table_elsewhere, with the first's URL). The first is killed with SIGKILL in the middle of a
// hand: the cage's next seat call recovers the hand (no 409 hand_in_progress), the second takes
// the table over at once (a new epoch), play goes on, the dead tenure's epoch is refused by the
// hand functions, and the books hold. A clean stop lets the table go.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import WebSocket from 'ws';
import { bridgedUser } from '../helpers/auth.ts';
import { expectCleanAudit } from '../helpers/cage.ts';
import { startChaosProxy, type ChaosProxy } from '../helpers/chaos-proxy.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import type { Msg } from '../helpers/live.ts';
import { fromHex, handCommitmentOf } from '../../server/game/poker/fair-deal.ts';
import { AUTH_SECRET, ISSUER, POKER_SETTINGS, call, operatorAuth } from '../helpers/money.ts';
import { startTestPlatform, TEST_SERVICE_KEY, QUIET_CRON, type TestPlatform } from '../helpers/platform.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BUY = 1_000;

interface GameChild {
  proc: ChildProcess;
  url: string;
  output: string;
  exit: Promise<unknown>;
}

let db: TestDatabase;
let platform: TestPlatform;
let forwarder: ChaosProxy;
let gameUrl = '';
const children: GameChild[] = [];
let operatorCredential: ReturnType<typeof operatorAuth> | undefined;
/** The operator who buys the players' chips (made once). */
const operator = () => (operatorCredential ??= operatorAuth(db, platform.url('auth')));

async function until<T>(what: string, probe: () => T | undefined | null | false | Promise<T | undefined | null | false>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function startGameChild(): Promise<GameChild> {
  const proc = spawn(process.execPath, ['server/main.ts', '--role', 'game'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin', LOG_LEVEL: 'warn', NODE_ENV: 'test', HOST: '127.0.0.1', GAME_PORT: '0',
      DATABASE_URL: db.url, SERVICE_KEY: TEST_SERVICE_KEY, AUTH_BASE_URL: ISSUER,
      AUTH_JWKS_URL: `${platform.url('auth')}/api/auth/jwks`, BANK_URL: platform.url('cage'),
      HAND_DELAY_MS: '100', CAGE_AUDIT_CRON: QUIET_CRON, CAGE_RAKE_RECONCILE_CRON: QUIET_CRON,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const child: GameChild = { proc, url: '', output: '', exit: new Promise((r) => proc.once('exit', r)) };
  proc.stdout!.on('data', (d) => (child.output += d));
  proc.stderr!.on('data', (d) => (child.output += d));
  children.push(child);
  child.url = await until('the game child listening', () => /^game +(http\S+)$/m.exec(child.output)?.[1] ?? (proc.exitCode !== null && Promise.reject(new Error(child.output))), 30_000);
  return child;
}

/**
 * A player that answers every turn while `playing`. It only checks and calls: nobody busts, so a
 * table keeps dealing for as long as a test needs.
 */
async function bot(game: string, tableId: string, jwt: string) {
  const messages: Msg[] = [];
  const ws = new WebSocket(`${game.replace(/^http/, 'ws')}/ws`, { headers: { authorization: `Bearer ${jwt}` } });
  const b = { playing: true, closed: false };
  const answered = new Set<string>();
  const answer = (state: Msg) => {
    if (!b.playing || !state.legal) return;
    answered.add(`${state.legal.handId}:${state.legal.seq}`);
    const action = state.legal.actions.includes('check') ? 'check' : 'call';
    ws.send(JSON.stringify({ type: 'action', tableId, handId: state.legal.handId, seq: state.legal.seq, action }));
  };
  ws.on('message', (data) => {
    const m = JSON.parse(data.toString()) as Msg;
    messages.push(m);
    if (m.type === 'game_state' && m.tableId === tableId) answer(m);
  });
  ws.on('close', () => (b.closed = true));
  ws.on('error', () => undefined);
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  return {
    get playing() {
      return b.playing;
    },
    set playing(on: boolean) {
      b.playing = on;
      const last = messages.filter((m) => m.type === 'game_state' && m.tableId === tableId).at(-1);
      if (on && last) answer(last);
    },
    get closed() {
      return b.closed;
    },
    messages,
    send: (m: Msg) => ws.send(JSON.stringify(m)),
    /** The first message after `from` (an index into messages) that matches. */
    next: (match: (m: Msg) => boolean, from = 0, timeoutMs = 15_000) =>
      until('a message', () => messages.slice(from).find(match), timeoutMs).catch((err: Error) => {
        throw new Error(`${err.message}; the last messages: ${JSON.stringify(messages.slice(-5))}`);
      }),
    results: () => messages.filter((m) => m.type === 'hand_result' && m.tableId === tableId).length,
    /** The hand this bot holds up: its last state asks it to act and it did not (it stopped playing). */
    holding: () => {
      const last = messages.filter((m) => m.type === 'game_state' && m.tableId === tableId).at(-1);
      return last?.legal && !answered.has(`${last.legal.handId}:${last.legal.seq}`) ? String(last.legal.handId) : null;
    },
    close: () => ws.close(),
  };
}

const lease = async (tableId: string) =>
  (await db.owner.query<{ holder: string | null; epoch: bigint; url: string | null }>(
    'select l.holder, l.epoch, p.url from game.table_leases l left join game.game_processes p on p.id = l.holder where l.table_id = $1', [tableId],
  )).rows[0];
const currentHand = async (tableId: string) =>
  (await db.owner.query<{ current_hand_id: string | null }>('select current_hand_id from game.tables where table_id = $1', [tableId])).rows[0]!.current_hand_id;

/** The hand in progress once it waits on a bot that stopped acting (so its end cannot race what the test does next). */
const heldHand = (bots: { holding(): string | null }[], tableId: string) => until('a hand held up by its players', async () => {
  const hand = await currentHand(tableId);
  return hand !== null && bots.some((b) => b.holding() === hand) ? hand : null;
});

beforeAll(async () => {
  db = await createTestDatabase();
  forwarder = await startChaosProxy(() => gameUrl, 1);
  platform = await startTestPlatform({
    databaseUrl: db.url,
    roles: ['auth', 'cage'],
    env: { AUTH_SECRET, AUTH_BASE_URL: ISSUER, ENABLE_TEST_AUTH: 'true', GAME_URL: forwarder.url },
  });
}, 60_000);

afterAll(async () => {
  for (const c of children) if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGKILL');
  await Promise.all(children.map((c) => c.exit));
  await platform?.stop();
  await forwarder?.close();
  await db?.drop();
});

test('two game processes: one runs the table, a kill -9 hands it to the other, the old epoch is fenced, the books hold', async () => {
  const cage = platform.url('cage');
  const service = { 'x-service-key': TEST_SERVICE_KEY };
  const [first, second] = await Promise.all([startGameChild(), startGameChild()]);
  gameUrl = first.url;

  const users = await Promise.all(Array.from({ length: 4 }, () => bridgedUser(db, { issuer: ISSUER })));
  for (const u of users) {
    const r = await call(`${cage}/api/operator/purchase`, { headers: (await operator()).auth, body: { userId: u.userId, amount: BUY, externalRef: `pay-${u.userId}`, moneyKind: 'play' } });
    expect(r.status).toBe(200);
  }
  const auth = (i: number) => ({ authorization: `Bearer ${users[i]!.jwt}` });
  const tableId = `lease-${Date.now()}`;
  expect((await call(`${cage}/api/tables`, { headers: auth(0), body: { tableId, gameType: 'poker', settings: POKER_SETTINGS } })).status).toBe(200);

  // three bots sit and play on the first process
  const bots = await Promise.all([0, 1, 2].map((i) => bot(first.url, tableId, users[i]!.jwt)));
  for (const [i, b] of bots.entries()) {
    b.send({ type: 'join', tableId, ref: 'j' });
    await b.next((m) => m.ref === 'j' && m.type === 'joined');
    b.send({ type: 'sit', tableId, seatIndex: i, amount: 100, ref: 's' });
    // the first two seated deal a hand: a later sit may wait for its end (sit_pending, then seated)
    expect(await b.next((m) => m.ref === 's' && m.type !== 'sit_pending', 0, 30_000)).toMatchObject({ type: 'seated' });
  }
  await until('two hands on the first process', () => bots[0]!.results() >= 2);
  const held = await lease(tableId);
  expect(held).toMatchObject({ url: first.url, epoch: expect.any(BigInt) });

  // the second process does not run a table the first runs: the client is sent there
  const elsewhere = await bot(second.url, tableId, users[3]!.jwt);
  elsewhere.send({ type: 'join', tableId, ref: 'j' });
  expect(await elsewhere.next((m) => m.ref === 'j')).toEqual({ type: 'error', code: 'table_elsewhere', ref: 'j', tableId, url: first.url });

  // a hand waits for its players (they stop acting), and the first process is killed in it
  for (const b of bots) b.playing = false;
  const interrupted = await heldHand(bots, tableId);
  const killedAt = performance.now();
  first.proc.kill('SIGKILL');
  await first.exit;
  gameUrl = second.url; // the load balancer now sends the cage's seat calls to the survivor

  // the cage's seat path is not stranded: the next seat call recovers the dead process's hand
  const late = await call(`${cage}/api/deposit`, { headers: { ...auth(3), 'idempotency-key': 'late-sit' }, body: { tableId, seatIndex: 3, amount: 100 } });
  const seatPathMs = performance.now() - killedAt;
  expect(late.status).toBe(200);
  const { rows: abandoned } = await db.owner.query('select status from game.hand_histories where hand_id = $1', [interrupted]);
  expect(abandoned).toEqual([{ status: 'abandoned' }]);

  // the players come back through the second process, which takes the table for a new tenure
  await until('the bots saw the first process go', () => bots.every((b) => b.closed));
  const again = await Promise.all([0, 1, 2].map((i) => bot(second.url, tableId, users[i]!.jwt)));
  again[0]!.send({ type: 'join', tableId, ref: 'j' });
  expect(await again[0]!.next((m) => m.ref === 'j')).toMatchObject({ type: 'joined', tableId });
  const takeoverMs = performance.now() - killedAt;
  for (const b of again.slice(1)) {
    b.send({ type: 'join', tableId, ref: 'j' });
    await b.next((m) => m.ref === 'j' && m.type === 'joined');
  }
  elsewhere.send({ type: 'join', tableId, ref: 'j2' });
  await elsewhere.next((m) => m.ref === 'j2' && m.type === 'joined');
  const taken = await lease(tableId);
  expect(taken!.url).toBe(second.url);
  expect(taken!.epoch).toBeGreaterThan(held!.epoch);

  // play goes on
  await again[0]!.next((m) => m.type === 'game_state' && m.tableId === tableId && m.handId && m.handId !== interrupted);
  const playableMs = performance.now() - killedAt;
  const before = again[0]!.results();
  await until('two hands on the second process', () => again[0]!.results() >= before + 2, 30_000);
  console.log(`takeover after kill -9: seat path ${seatPathMs.toFixed(0)} ms, join answered ${takeoverMs.toFixed(0)} ms, next hand dealt ${playableMs.toFixed(0)} ms`);

  // issue 31: what the dead process had committed is revealed by the survivor, not thrown away: the
  // interrupted hand (its contributions as dealt) and the next deal it had published, each an abandoned
  // hand of its own number, naming its players, its seed giving the commitment, chained to the table
  const { rows: dropped } = await db.owner.query(
    `select hand_id, hand_number::int as n, record, record_hash, deal, cardinality(players) as players
       from game.hand_histories where table_id = $1 and status = 'abandoned' order by hand_number`, [tableId]);
  const n = Number(interrupted.split(':').at(-2));
  expect(dropped.map((r) => [r.hand_id === interrupted, r.n])).toEqual([[true, n], [false, n + 1]]);
  const { rows: [preceding] } = await db.owner.query('select record_hash from game.hand_histories where table_id = $1 and hand_number = $2', [tableId, n - 1]);
  let prev = preceding.record_hash as string;
  // the interrupted hand names the three seated when it was dealt; the next deal, abandoned when the
  // survivor opened the table, the four seated then (the late sit came in between)
  expect(dropped.map((r) => r.players)).toEqual([3, 4]);
  for (const r of dropped) {
    const record = JSON.parse(r.record);
    expect(record).toMatchObject({ abandoned: true, handNumber: r.n, prev, rake: '0' });
    expect(handCommitmentOf(fromHex(r.deal.serverSeed), { tableId, handNumber: r.n, handId: r.hand_id })).toBe(r.deal.commitment);
    prev = r.record_hash;
  }
  const { rows: [after] } = await db.owner.query('select record from game.hand_histories where table_id = $1 and hand_number = $2', [tableId, n + 2]);
  expect(JSON.parse(after.record).prev).toBe(prev);

  // the dead tenure's hand boundaries are refused in SQL
  const game: pg.Pool = db.pool('poker_game', 1);
  await expect(game.query('select * from game.deal_hand($1, $2, $3, null, null)', [tableId, 'stale-hand', String(held!.epoch)])).rejects.toMatchObject({ code: 'GMLSE', message: 'lease_lost' });
  await expect(game.query('select game.abandon_hand($1, $2)', [tableId, String(held!.epoch)])).rejects.toMatchObject({ code: 'GMLSE' });

  // everyone leaves; the books hold and every chip is in a cage balance or in the rake
  for (const b of [...again, elsewhere]) b.playing = true;
  for (const b of [...again, elsewhere]) {
    for (let i = 0; ; i++) {
      const from = b.messages.length;
      b.send({ type: 'stand_up', tableId, ref: `u${i}` });
      const r = await b.next((m) => m.ref === `u${i}`, from);
      if (r.type === 'stood_up' || r.type === 'stand_up_pending' || r.code === 'not_at_table') break;
      expect(r.code).toBe('hand_in_progress');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
  await until('the table empty', async () => (await db.owner.query(
    "select count(*)::int as n from game.table_players where table_id = $1 and status <> 'closed'", [tableId])).rows[0].n === 0);
  const { rows: books } = await db.owner.query(
    `select (select coalesce(sum(balance), 0) from cage.account_balances where account_type = 'user' and money_kind = 'play')::text as users,
            (select unreconciled_rake + reconciled_rake from game.tables where table_id = $1)::text as rake`, [tableId]);
  expect(BigInt(books[0].users) + BigInt(books[0].rake)).toBe(BigInt(4 * BUY));
  await expectCleanAudit(db.pool('poker_cage', 1));

  // a clean stop lets the table go at once
  for (const b of [...again, elsewhere]) b.close();
  second.proc.kill('SIGTERM');
  await second.exit;
  expect(await lease(tableId)).toMatchObject({ holder: null });
}, 120_000);

test('a starting game process recovers hands left by a dead one before it answers; a clean stop lets its tables go', async () => {
  const cage = platform.url('cage');
  const service = { 'x-service-key': TEST_SERVICE_KEY };
  const first = await startGameChild();
  gameUrl = first.url;
  const users = await Promise.all(Array.from({ length: 2 }, () => bridgedUser(db, { issuer: ISSUER })));
  for (const u of users) {
    expect((await call(`${cage}/api/operator/purchase`, { headers: (await operator()).auth, body: { userId: u.userId, amount: BUY, externalRef: `pay-${u.userId}`, moneyKind: 'play' } })).status).toBe(200);
  }
  const tableId = `restart-${Date.now()}`;
  expect((await call(`${cage}/api/tables`, { headers: { authorization: `Bearer ${users[0]!.jwt}` }, body: { tableId, gameType: 'poker', settings: POKER_SETTINGS } })).status).toBe(200);

  /** Bots sit (or come back) on `game`, play a hand, then leave the next one waiting on them. */
  async function playThenHold(game: string, sit: boolean) {
    const bots = await Promise.all(users.map((u) => bot(game, tableId, u.jwt)));
    for (const [i, b] of bots.entries()) {
      b.send({ type: 'join', tableId, ref: 'j' });
      await b.next((m) => m.ref === 'j' && m.type === 'joined');
      if (sit) {
        b.send({ type: 'sit', tableId, seatIndex: i, amount: 100, ref: 's' });
        expect(await b.next((m) => m.ref === 's')).toMatchObject({ type: 'seated' });
      }
    }
    await until('a hand played', () => bots[0]!.results() >= 1);
    for (const b of bots) b.playing = false;
    return { bots, hand: await heldHand(bots, tableId) };
  }

  const { hand: crashed } = await playThenHold(first.url, true);
  const dead = (await lease(tableId))!;
  first.proc.kill('SIGKILL');
  await first.exit;

  // the next process to start recovers the hand before it listens: nothing waits for a join
  const next = await startGameChild();
  gameUrl = next.url;
  expect(await currentHand(tableId)).toBeNull();
  expect(await lease(tableId)).toMatchObject({ holder: null, epoch: dead.epoch + 1n });
  expect((await db.owner.query('select status from game.hand_histories where hand_id = $1', [crashed])).rows).toEqual([{ status: 'abandoned' }]);
  expect(next.output).toContain('interrupted hand recovered at start');

  // play resumes there; a clean stop in the middle of a hand abandons it and releases the table
  const { bots, hand: stopped } = await playThenHold(next.url, false);
  for (const b of bots) b.close();
  next.proc.kill('SIGTERM');
  await next.exit;
  expect(await currentHand(tableId)).toBeNull();
  expect(await lease(tableId)).toMatchObject({ holder: null });
  expect((await db.owner.query('select status from game.hand_histories where hand_id = $1', [stopped])).rows).toEqual([{ status: 'abandoned' }]);
  expect((await db.owner.query('select count(*)::int as n from game.game_processes')).rows[0].n).toBe(0);
  await expectCleanAudit(db.pool('poker_cage', 1));
}, 120_000);

test('a room whose tenure ended stops (table_closed lease_lost); a lost presence connection comes back under the same id', async () => {
  const cage = platform.url('cage');
  const service = { 'x-service-key': TEST_SERVICE_KEY };
  const child = await startGameChild();
  gameUrl = child.url;
  const users = await Promise.all(Array.from({ length: 2 }, () => bridgedUser(db, { issuer: ISSUER })));
  for (const u of users) {
    expect((await call(`${cage}/api/operator/purchase`, { headers: (await operator()).auth, body: { userId: u.userId, amount: BUY, externalRef: `pay-${u.userId}`, moneyKind: 'play' } })).status).toBe(200);
  }
  const tableId = `fenced-${Date.now()}`;
  expect((await call(`${cage}/api/tables`, { headers: { authorization: `Bearer ${users[0]!.jwt}` }, body: { tableId, gameType: 'poker', settings: POKER_SETTINGS } })).status).toBe(200);
  const bots = await Promise.all(users.map((u) => bot(child.url, tableId, u.jwt)));
  for (const [i, b] of bots.entries()) {
    b.send({ type: 'join', tableId, ref: 'j' });
    await b.next((m) => m.ref === 'j' && m.type === 'joined');
    b.send({ type: 'sit', tableId, seatIndex: i, amount: 100, ref: 's' });
    expect(await b.next((m) => m.ref === 's')).toMatchObject({ type: 'seated' });
  }
  await until('a hand played', () => bots[0]!.results() >= 1);

  // the presence connection drops (a network blip): the process registers again under its id and
  // keeps its table, since nobody took it meanwhile
  const { rows: [before] } = await db.owner.query('select id from game.game_processes where url = $1', [child.url]);
  const { rows: dropped } = await db.owner.query<{ pid: number }>(
    "select pid from pg_stat_activity where application_name = 'game-presence' and datname = current_database()");
  await db.owner.query('select pg_terminate_backend(pid) from unnest($1::int[]) pid', [dropped.map((r) => r.pid)]);
  // back = a new connection holds the presence lock again (a join meanwhile is `unavailable`: the
  // process cannot take a lease while it is not present)
  await until('the presence back', async () => (await db.owner.query(
    `select game_private.process_present($1) and exists (select from pg_stat_activity where application_name = 'game-presence'
        and datname = current_database() and pid <> all($2::int[])) as back`, [before.id, dropped.map((r) => r.pid)])).rows[0].back, 10_000);
  expect((await db.owner.query('select id from game.game_processes where url = $1', [child.url])).rows).toEqual([before]);
  const played = bots[0]!.results();
  await until('play going on', () => bots[0]!.results() >= played + 1);

  // another tenure begins behind the room's back (as a takeover would): its next hand boundary is
  // refused, and the room stops instead of dealing on
  const from = bots.map((b) => b.messages.length);
  await db.owner.query('update game.table_leases set epoch = epoch + 1 where table_id = $1', [tableId]);
  for (const [i, b] of bots.entries()) {
    expect(await b.next((m) => m.type === 'table_closed', from[i])).toEqual({ type: 'table_closed', tableId, reason: 'lease_lost' });
  }
  // joining again takes the table for a new tenure, and play goes on
  for (const b of bots) {
    b.send({ type: 'join', tableId, ref: 'again' });
    await b.next((m) => m.ref === 'again' && m.type === 'joined');
  }
  const resumed = bots[0]!.results();
  await until('play going on again', () => bots[0]!.results() >= resumed + 1);
  for (const b of bots) b.close();
  child.proc.kill('SIGTERM');
  await child.exit;
  await expectCleanAudit(db.pool('poker_cage', 1));
}, 120_000);
