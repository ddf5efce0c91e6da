// Provably fair deals over the live tables (issue 23; docs/dealer.md, "A deal anyone can check"):
// against running roles (auth, game, cage) and real websockets, every hand is dealt from a server
// seed committed before the players' contributions for it could exist, nothing about the seed is
// sent before the hand's hand_result, and 1,000 live-dealt hands verify from the players' own view
// (GET /api/hands/:handId) with the dealer key of GET /api/dealer/key, offline and through
// `npm run verify:hand`; a rewritten record is caught.
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import WebSocket from 'ws';
import { loadDealerSigner } from '../../server/game/hands/dealer-key.ts';
import { auditOnce } from '../../server/audit/run.ts';
import { GENESIS, signRecord } from '../../server/game/hands/hand-record.ts';
import { fromHex, handCommitmentOf } from '../../server/game/poker/fair-deal.ts';
import { verifyChain, verifyHand, type HandView } from '../../server/game/hands/verify-hand.ts';
import { expectCleanAudit } from '../helpers/cage.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { liveClient, prng, until, type LiveClient, type LivePlayer, type Msg } from '../helpers/live.ts';
import { parseToml, readHand } from '../helpers/phh-reader.ts';
import { call, POKER_SETTINGS, startMoneyPlatform } from '../helpers/money.ts';

type Money = Awaited<ReturnType<typeof startMoneyPlatform>>;

let db: TestDatabase;
let cagePool: pg.Pool;
let m: Money;
let live: LiveClient;
let dealerKey: string;

beforeAll(async () => {
  db = await createTestDatabase();
  cagePool = db.pool('poker_cage');
  m = await startMoneyPlatform(db, { env: { HAND_DELAY_MS: '2' } });
  live = liveClient(m, db);
  dealerKey = (await call(`${m.game}/api/dealer/key`)).body.publicKey;
});
afterAll(async () => {
  await live?.closeAll();
  await m?.platform.stop();
  await expectCleanAudit(cagePool);
  await db.drop();
});

const SETTINGS = { ...POKER_SETTINGS, turnTimerEnabled: false };

/** A player's own view of a hand, as the route answers it. */
async function handView(p: LivePlayer, handId: string): Promise<HandView> {
  const r = await call(`${m.game}/api/hands/${encodeURIComponent(handId)}`, { headers: p.auth });
  if (r.status !== 200) throw new Error(`hand ${handId}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body as HandView;
}

/**
 * A light driver on its own connection: acts on every turn (fold where it may, else check or call,
 * now and then a minimum raise) and, when `contribute`, answers every new nextDealCommitment with a
 * seed of its own. Records every message as received, raw.
 */
function driver(p: LivePlayer, tableId: string, seed: number, contribute: boolean) {
  const rng = prng(seed);
  const raw: string[] = [];
  const results: Msg[] = [];
  const sent = new Map<string, string>(); // commitment -> the seed sent for it
  const accepted = new Set<string>();
  let answered = '';
  let lastCommitment = '';
  let refs = 0;
  const ws = new WebSocket(live.wsUrl + '/ws', { headers: p.auth });
  const send = (m: Record<string, unknown>) => ws.send(JSON.stringify({ ...m, ref: `d${++refs}` }));
  ws.on('message', (data) => {
    const text = data.toString();
    raw.push(text);
    const msg = JSON.parse(text) as Msg;
    if (msg.type === 'hand_result' && msg.tableId === tableId) results.push(msg);
    if (msg.type === 'deal_seed_accepted') accepted.add(msg.commitment);
    if (msg.type !== 'game_state' || msg.tableId !== tableId) return;
    if (contribute && msg.nextDealCommitment && msg.nextDealCommitment !== lastCommitment) {
      lastCommitment = msg.nextDealCommitment;
      const mine = `s${seed}-${Math.floor(rng() * 1e9).toString(36)}`;
      sent.set(lastCommitment, mine);
      send({ type: 'deal_seed', tableId, commitment: lastCommitment, seed: mine });
    }
    const legal = msg.legal;
    if (!legal || `${legal.handId}:${legal.seq}` === answered) return;
    answered = `${legal.handId}:${legal.seq}`;
    const roll = rng();
    const action = roll < 0.35 && legal.actions.includes('fold') ? 'fold'
      : roll < 0.42 && legal.actions.includes('raise') ? 'raise'
        : legal.actions.includes('check') ? 'check' : 'call';
    send({ type: 'action', tableId, handId: legal.handId, seq: legal.seq, action, ...(action === 'raise' ? { amount: String(legal.minRaiseTo) } : {}) });
  });
  const opened = new Promise<void>((resolve, reject) => {
    ws.once('open', () => {
      send({ type: 'join', tableId });
      resolve();
    });
    ws.once('error', reject);
  });
  return { raw, results, sent, accepted, opened, close: () => ws.close() };
}

test('commitment before the contributions, seed only in hand_result, contributions mixed in; spectators see the commitment too', async () => {
  const players = [await live.player(1000), await live.player(1000), await live.player(1000)];
  const tableId = await m.table(players[0]!.auth, SETTINGS);
  await live.seatBeforeRoom(players, tableId, [200, 200, 200]);
  const spectator = await live.open();
  await live.join({ ws: spectator }, tableId);
  const drivers = players.map((p, i) => driver(p, tableId, 7 + i, i !== 2));
  await Promise.all(drivers.map((d) => d.opened));
  await until(() => drivers[0]!.results.length >= 12, '12 hands', 30_000, 10);

  for (const result of drivers[0]!.results.slice(1, 12)) {
    const { handId, deal } = result;
    expect(deal.algorithm).toBe('sha256-fisher-yates-v2');
    // the commitment names the hand it was drawn for: table, number, hand id
    const handNumber = Number(handId.split(':').at(-2));
    expect(handCommitmentOf(fromHex(deal.serverSeed), { tableId, handNumber, handId })).toBe(deal.commitment);
    for (const [i, d] of drivers.entries()) {
      const messages = d.raw.map((t) => JSON.parse(t) as Msg);
      const first = messages.findIndex((x) => x.type === 'game_state' && x.handId === handId);
      const end = messages.findIndex((x) => x.type === 'hand_result' && x.handId === handId);
      expect(first).toBeGreaterThan(0);
      // the commitment was announced as the next hand's before the hand was dealt, and the hand says it
      const before = messages.slice(0, first).filter((x) => x.type === 'game_state' && x.tableId === tableId).at(-1)!;
      expect(before.nextDealCommitment).toBe(deal.commitment);
      expect(messages[first]!.dealCommitment).toBe(deal.commitment);
      // nothing of the seed before hand_result, in any message to anyone
      expect(d.raw.slice(0, end).some((t) => t.includes(deal.serverSeed))).toBe(false);
      // a seed sent for this commitment and accepted is in the reveal, at its seat
      const mine = d.sent.get(deal.commitment);
      if (i !== 2 && mine && d.accepted.has(deal.commitment)) expect(deal.contributions).toContainEqual({ seat: i, seed: mine });
    }
    expect(deal.contributions.some((c: { seat: number }) => c.seat === 2)).toBe(false);
  }
  // the spectator saw each hand's commitment and never a seed early
  const seen = spectator.messages;
  const aHand = drivers[0]!.results[5]!;
  expect(seen.find((x) => x.type === 'game_state' && x.handId === aHand.handId)?.dealCommitment).toBe(aHand.deal.commitment);
  const specEnd = seen.findIndex((x) => x.type === 'hand_result' && x.handId === aHand.handId);
  expect(seen.slice(0, specEnd).some((x) => JSON.stringify(x).includes(aHand.deal.serverSeed))).toBe(false);
  for (const d of drivers) d.close();
  await live.standUpAll(players, tableId);
}, 60_000);

test('deal_seed: a stale commitment, a seat not taken and a malformed seed are refused', async () => {
  const [a, b, watcher] = [await live.player(1000), await live.player(1000), await live.player(1000)];
  const tableId = await m.table(a.auth, SETTINGS);
  await live.join(watcher, tableId);
  const stale = await live.request(watcher.ws, { type: 'deal_seed', tableId, commitment: '0'.repeat(64), seed: 'abc' });
  expect(stale).toMatchObject({ type: 'error', code: 'not_at_table' });
  await live.seatBeforeRoom([a, b], tableId, [200, 200]);
  const state = await until(() => a.ws.messages.filter((x) => x.type === 'game_state' && x.tableId === tableId).at(-1), 'a state');
  expect(await live.request(a.ws, { type: 'deal_seed', tableId, commitment: '0'.repeat(64), seed: 'abc' })).toMatchObject({ type: 'error', code: 'stale_commitment' });
  for (const seed of ['', 'has space', 'x'.repeat(65), 5]) {
    expect(await live.request(a.ws, { type: 'deal_seed', tableId, commitment: state.nextDealCommitment, seed })).toMatchObject({ type: 'error', code: 'bad_request' });
  }
  await live.standUpAll([a, b], tableId);
});

test('1,000 live-dealt hands verify from the players\' own view; the chain links; verify:hand agrees and catches a rewrite', async () => {
  const TABLES = 8;
  const tables = await Promise.all(Array.from({ length: TABLES }, async (_, t) => {
    const players = [await live.player(5000), await live.player(5000), await live.player(5000)];
    const tableId = await m.table(players[0]!.auth, SETTINGS);
    await live.seatBeforeRoom(players, tableId, [200, 200, 200]);
    const drivers = players.map((p, i) => driver(p, tableId, 1000 * t + i, i === 0));
    await Promise.all(drivers.map((d) => d.opened));
    return { tableId, players, drivers };
  }));
  const dealt = () => tables.reduce((n, t) => n + t.drivers[1]!.results.length, 0);
  await until(() => dealt() >= 1000, '1,000 hands', 120_000, 50);
  for (const t of tables) for (const d of t.drivers) d.close();
  await Promise.all(tables.map((t) => live.standUpAll(t.players, t.tableId)));

  let verified = 0;
  for (const t of tables) {
    // each hand from the view of a player dealt in (hands someone busted out of are still theirs)
    const views: HandView[] = [];
    for (const result of t.drivers[1]!.results) {
      const seat = result.stacks[0].seat as number;
      views.push(await handView(t.players[seat]!, result.handId));
    }
    for (const v of views) {
      const verdict = verifyHand(v, dealerKey);
      if (!verdict.ok) throw new Error(`${v.handId}: ${JSON.stringify(verdict.checks.filter((c) => !c.ok))}`);
      verified++;
    }
    // hands seen by the same player link into the table's chain
    const byViewer = verifyChain(views);
    expect(byViewer.filter((c) => !c.ok)).toEqual([]);
  }
  expect(verified).toBeGreaterThanOrEqual(1000);

  // the portable history carries the same proof (PHH user fields)
  const sample = tables[1]!;
  const first = sample.drivers[1]!.results[2]!;
  const owner = sample.players[first.stacks[0].seat as number]!;
  const [view, phh] = await Promise.all([
    handView(owner, first.handId),
    fetch(`${m.game}/api/hands/${encodeURIComponent(first.handId)}?format=phh`, { headers: owner.auth }).then((r) => r.text()),
  ]);
  const { fields } = readHand(parseToml(phh).root);
  expect(fields).toMatchObject({
    _deal_algorithm: view.deal!.algorithm, _deal_commitment: view.deal!.commitment, _deal_server_seed: view.deal!.serverSeed,
    _deal_contributions: view.deal!.contributions.map((c) => `${c.seat}:${c.seed}`),
    _record_hash: view.record!.hash, _record_signature: view.record!.signature, _dealer_key: dealerKey,
  });

  // the command line, online, as a player; then a record rewritten in the database is caught
  const t = tables[0]!;
  const some = t.drivers[1]!.results.slice(3, 6).map((r) => r.handId as string);
  const viewer = t.players[1]!;
  // what the viewer kept of those hands' hand_results, as a client would
  const kept = join(mkdtempSync(join(tmpdir(), 'fair-deal-')), 'results.json');
  writeFileSync(kept, JSON.stringify({ results: t.drivers[1]!.results.filter((r) => some.includes(r.handId)) }));
  // not spawnSync: the roles answering it run in this process
  const run = (...extra: string[]) => new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, ['--no-warnings', 'server/cli/verify-hand.ts', ...some, ...extra], {
      env: { ...process.env, POKER_TOKEN: viewer.jwt, GAME_URL: m.game },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
  const ok = await run('--announced', kept);
  expect(ok.stderr).toBe('');
  expect(ok.status).toBe(0);
  expect(ok.stdout.match(/: verified/g)).toHaveLength(3);
  expect(ok.stdout.match(/ok {5}announced/g)).toHaveLength(3);
  // each hand against the one before it (the first's fetched from the player's own list of the table's hands)
  expect(ok.stdout.match(/ok {5}prev: follows hand/g)).toHaveLength(3);

  // the audit of causes (issue 31) replays every live hand from its record and finds each stack's cause
  const audited = await db.owner.connect().then(async (c) => {
    try {
      return await auditOnce(c, { mode: 'full' });
    } finally {
      c.release();
    }
  });
  expect(audited.violations).toEqual([]);
  expect(audited.covered.hands).toBeGreaterThanOrEqual(1000);

  // a rewrite with the dealer's own key (the record re-chained to another prev, re-signed, its hash
  // updated): every check but the one against what hand_result announced passes
  const { signer: dealer } = await loadDealerSigner({ NODE_ENV: 'test', PG_DATA_DIR: process.env.PG_DATA_DIR ?? '.data/postgres' });
  const { rows: [stored] } = await db.owner.query('select record from game.hand_histories where hand_id = $1', [some[0]]);
  const forged = signRecord({ ...JSON.parse(stored.record), prev: GENESIS }, dealer);
  await db.owner.query('update game.hand_histories set record = $2, record_hash = $3, record_signature = $4 where hand_id = $1',
    [some[0], forged.text, forged.hash, forged.signature]);
  const resigned = await run('--announced', kept);
  expect(resigned.status).toBe(1);
  expect(resigned.stdout).toMatch(/FAILED announced: the hand as stored differs from its hand_result in the record's hash, its signature/);
  expect((await run()).stdout).toMatch(/FAILED chain/); // without what was announced: only the link to the next hand held
  await db.owner.query(
    `update game.hand_histories set record = replace(record, '"rake":"', '"rake":"9') where hand_id = $1`, [some[1]],
  );
  const caught = await run();
  expect(caught.status).toBe(1);
  expect(caught.stdout).toMatch(new RegExp(`hand ${some[1]!.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: FAILED \\(record\\)`));
}, 240_000);
