// The websocket fuzz: every client message type the game role handles (server/game/live/ws.ts),
// sent with hostile fields, plus frames that are not messages at all (not JSON, binary, arrays, JSON
// nested 5,000 deep, unknown and non-string types), on anonymous, authenticated and joined
// connections. Every refusal is an `error` message with a string code (never `internal_error`), the
// connection stays usable (a ping after the storm is answered), the game role stays up, and the cage
// audit stays empty. A message type the fuzz does not cover fails the suite.
// Seeded: FUZZ_SEED (printed), FUZZ_RUNS messages per type and connection.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import WebSocket from 'ws';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { expectCleanAudit } from '../helpers/cage.ts';
import { startMoneyPlatform } from '../helpers/money.ts';
import { FUZZ_RUNS, FUZZ_SEED, fieldValue, hostileJson, hostileString } from '../helpers/fuzz.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

let db: TestDatabase;
let m: Awaited<ReturnType<typeof startMoneyPlatform>>;
let player: Awaited<ReturnType<typeof m.player>>;
let tableId: string;
let sngTableId: string;
const counts = { messages: 0, frames: 0, errors: new Map<string, number>() };

beforeAll(async () => {
  process.stdout.write(`fuzz-ws: FUZZ_SEED=${FUZZ_SEED} FUZZ_RUNS=${FUZZ_RUNS}\n`);
  db = await createTestDatabase();
  m = await startMoneyPlatform(db, { env: { HAND_DELAY_MS: '0' } });
  player = await m.player(2000);
  tableId = await m.table(player.auth);
  sngTableId = await m.table(player.auth, {
    mode: 'sng', seats: 3, entryFee: 10, startingStack: 100, actionTimeoutSeconds: 3,
    blindStructure: { startingSmallBlind: 1, increaseFactor: 2, levelDurationSeconds: 60, anteStartLevel: null, startingAnte: 0, anteIncreaseFactor: 1 },
  });
});
afterAll(async () => {
  await m?.platform.stop();
  await db?.drop();
});

/**
 * The client message types the game role handles: ws.ts's CLIENT_MESSAGE_TYPES when it exports
 * them, else the cases of its `handle` switch (read from the source).
 */
async function clientMessageTypes(): Promise<string[]> {
  const mod = (await import('../../server/game/live/ws.ts')) as { CLIENT_MESSAGE_TYPES?: readonly string[] };
  if (mod.CLIENT_MESSAGE_TYPES) return [...mod.CLIENT_MESSAGE_TYPES];
  const source = await readFile(path.join(ROOT, 'server/game/live/ws.ts'), 'utf8');
  const body = source.slice(source.indexOf('async function handle('));
  const sw = body.slice(body.indexOf('switch (m.type)'), body.indexOf('default:'));
  return [...sw.matchAll(/case '([a-z_]+)':/g)].map((x) => x[1]!);
}

/** The fields each message type reads, with plausible values so some get past the first check. */
function messages(): Record<string, Record<string, unknown[]>> {
  const table = [tableId, 'no-such-table', ''];
  return {
    ping: {},
    auth: { token: [player.jwt, 'a.b.c', ''], agentId: [undefined, '00000000-0000-0000-0000-000000000000'] },
    join: { tableId: table, agentId: [undefined, 'x'] },
    leave: { tableId: table },
    sit: { tableId: table, seatIndex: [0, 1, 9], amount: [40, '40', '0x10', 200], idempotencyKey: ['k1', 'k2'] },
    action: { tableId: table, seq: [0, 1, 2, -1, 1.5], action: ['fold', 'check', 'call', 'bet', 'raise', 'all_in'], amount: [2, '4', '0x10', 1e300] },
    sit_out: { tableId: table },
    sit_in: { tableId: table },
    stand_up: { tableId: [...table, sngTableId] },
    register_for_tournament: { tableId: [...table, sngTableId], advisorAgentId: [undefined, null, 'x', '00000000-0000-0000-0000-000000000000'] },
    deal_seed: { tableId: table, commitment: ['0'.repeat(64), 'f'.repeat(63), ''], seed: ['abc', '', 'x y', 'z'.repeat(65)] },
  };
}

function messageArb(type: string, fields: Record<string, unknown[]>) {
  return fc.record({
    type: fc.oneof({ weight: 9, arbitrary: fc.constant(type) }, { weight: 1, arbitrary: hostileJson }),
    ref: fc.option(hostileJson, { nil: undefined }),
    ...Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, fieldValue(v.filter((x) => x !== undefined))])),
  }, { requiredKeys: ['type'] });
}

/** Frames that are not well-formed messages (each under the 16 KiB frame bound, tested on its own). */
const garbageFrames = fc.oneof(
  fc.constantFrom('', 'not json', '{"type":', '[]', '[1,2]', 'null', '5', '"ping"', `${'['.repeat(5000)}${']'.repeat(5000)}`,
    `${'{"a":'.repeat(2500)}1${'}'.repeat(2500)}`, '{"type":null}', '{"type":["ping"]}', '{"type":{"toString":1}}', '{"__proto__":{"type":"ping"}}'),
  hostileString.map((s) => JSON.stringify({ type: s })),
  hostileJson.map((v) => JSON.stringify(v) ?? 'undefined'),
);

interface Socket {
  ws: WebSocket;
  received: Record<string, any>[];
  closed: { code: number } | null;
}

async function open(query = '', headers: Record<string, string> = {}): Promise<Socket> {
  const ws = new WebSocket(`${m.game.replace(/^http/, 'ws')}/ws${query}`, { headers });
  const s: Socket = { ws, received: [], closed: null };
  ws.on('message', (data) => s.received.push(JSON.parse(data.toString())));
  ws.on('close', (code) => (s.closed = { code }));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return s;
}

/** Resolves once the server has handled everything sent so far (it answers in order). */
async function drained(s: Socket, label: string) {
  const ref = `drain-${label}-${Math.random()}`;
  s.ws.send(JSON.stringify({ type: 'ping', ref }));
  const deadline = Date.now() + 30_000;
  while (!s.received.some((x) => x.type === 'pong' && x.ref === ref)) {
    if (s.closed) throw new Error(`${label}: the server closed the connection (${s.closed.code})`);
    if (Date.now() > deadline) throw new Error(`${label}: no pong within 30 s`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const CHIP_FIELDS = new Set(['amount', 'chipBalance', 'stack', 'bet', 'currentBet', 'toCall', 'minRaiseTo', 'maxRaiseTo', 'small', 'big', 'ante']);

/** Chip amounts the server sends that are not decimal strings (docs/protocol.md: chips are decimal strings). */
function numericChips(value: unknown, path: string, out: string[], depth = 0) {
  if (value === null || typeof value !== 'object' || depth > 8) return;
  for (const [k, v] of Object.entries(value)) {
    if (CHIP_FIELDS.has(k) && typeof v === 'number') out.push(`${path}.${k} is the number ${v}`);
    numericChips(v, `${path}.${k}`, out, depth + 1);
  }
}

function breaches(s: Socket, label: string): string[] {
  const out: string[] = [];
  for (const x of s.received) {
    numericChips(x, `${label}: ${String(x.type)}`, out);
    if (x.type !== 'error') continue;
    counts.errors.set(String(x.code), (counts.errors.get(String(x.code)) ?? 0) + 1);
    if (typeof x.code !== 'string' || x.code === '') out.push(`${label}: an error without a code: ${JSON.stringify(x).slice(0, 200)}`);
    else if (x.code === 'internal_error') out.push(`${label}: internal_error`);
  }
  return out;
}

test('the fuzz covers every client message type the game role handles', async () => {
  const types = await clientMessageTypes();
  process.stdout.write(`fuzz-ws: message types ${types.join(', ')}\n`);
  expect(types.length).toBeGreaterThanOrEqual(9);
  expect(types.filter((t) => !(t in messages()))).toEqual([]);
});

test('hostile messages of every type, and frames that are no message: coded errors, the connection usable', async () => {
  const started = performance.now();
  const types = await clientMessageTypes();
  const fields = messages();
  const found: string[] = [];
  const connections: [string, () => Promise<Socket>][] = [
    ['anonymous', () => open()],
    ['token in the query', () => open(`?token=${player.jwt}`)],
    ['bearer on the upgrade, joined', () => open(`/tables/${encodeURIComponent(tableId)}`, player.auth)],
  ];
  for (const [label, connect] of connections) {
    const s = await connect();
    for (const [i, type] of types.entries()) {
      for (const message of fc.sample(messageArb(type, fields[type]!), { seed: FUZZ_SEED + i, numRuns: FUZZ_RUNS })) {
        s.ws.send(JSON.stringify(message));
        counts.messages++;
      }
      await drained(s, `${label}/${type}`);
    }
    for (const frame of fc.sample(garbageFrames, { seed: FUZZ_SEED, numRuns: FUZZ_RUNS * 2 })) {
      s.ws.send(frame);
      counts.frames++;
    }
    // every field of every type nested 2,000 deep (under the frame bound)
    const deep = JSON.parse(`${'['.repeat(2000)}${']'.repeat(2000)}`) as unknown;
    for (const type of types) {
      for (const field of Object.keys(fields[type]!)) {
        s.ws.send(JSON.stringify({ type, tableId, [field]: deep }));
        counts.frames++;
      }
    }
    s.ws.send(Buffer.from([0, 1, 2, 255]), { binary: true });
    counts.frames++;
    await drained(s, `${label}/garbage`);
    found.push(...breaches(s, label));
    s.ws.close();
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  process.stdout.write(`fuzz-ws: ${counts.messages} messages and ${counts.frames} other frames in ${seconds} s; error codes ${JSON.stringify(Object.fromEntries(counts.errors))}\n`);
  expect(found.slice(0, 25)).toEqual([]);
});

/** The latest game_state at the table that offers this socket a turn. */
const turnOf = (s: Socket) => s.received.filter((x) => x.type === 'game_state' && x.tableId === tableId).at(-1)?.legal as
  { actions: string[]; handId: string; seq: number; minRaiseTo: string | null; maxRaiseTo: string | null } | undefined;

test('hands in play: the seated players send hostile actions on their turns and off them', async () => {
  const started = performance.now();
  const other = await m.player(2000);
  const seats: Socket[] = [];
  for (const [i, p] of [player, other].entries()) {
    const s = await open(`/tables/${encodeURIComponent(tableId)}`, p.auth);
    s.ws.send(JSON.stringify({ type: 'sit', tableId, seatIndex: 4 + i, amount: 100, ref: `sit-${i}` }));
    seats.push(s);
  }
  const dealt = Date.now() + 15_000;
  while (!seats.some(turnOf) && Date.now() < dealt) await new Promise((r) => setTimeout(r, 20));
  expect(seats.some(turnOf)).toBe(true);
  const action = (legal: ReturnType<typeof turnOf>) => fc.record({
    type: fc.constant('action'),
    tableId: fieldValue([tableId], 12),
    handId: fieldValue(legal ? [legal.handId] : [], 6),
    seq: fieldValue(legal ? [legal.seq, legal.seq, legal.seq - 1, legal.seq + 1] : [0], 6),
    action: fieldValue([...(legal?.actions ?? []), 'raise', 'bet', 'all_in'], 4),
    amount: fieldValue([legal?.minRaiseTo, legal?.maxRaiseTo, '0x10', '1e3', ' 4', '4.0', '-4', '99999999999999999999'].filter((a) => a != null), 3),
    ref: fc.nat(),
  }, { requiredKeys: ['type', 'tableId', 'seq'] });
  const sent = new Map<number, Record<string, unknown>>();
  for (let round = 0; round < FUZZ_RUNS; round++) {
    for (const [i, s] of seats.entries()) {
      for (const message of fc.sample(action(turnOf(s)), { seed: FUZZ_SEED + round * 2 + i, numRuns: 4 })) {
        const ref = sent.size;
        sent.set(ref, message);
        s.ws.send(JSON.stringify({ ...message, ref }));
        counts.messages++;
      }
      await drained(s, `seat ${i}, round ${round}`);
    }
  }
  // both stand up; whoever is to act folds, so the hand ends and pending stand-ups are made
  for (const s of seats) s.ws.send(JSON.stringify({ type: 'stand_up', tableId, ref: 'stand' }));
  const standDeadline = Date.now() + 5_000;
  while (Date.now() < standDeadline && !seats.every((s) => s.received.some((x) => x.type === 'stood_up' || (x.type === 'error' && x.ref === 'stand')))) {
    for (const s of seats) {
      const legal = turnOf(s);
      if (legal) s.ws.send(JSON.stringify({ type: 'action', tableId, handId: legal.handId, seq: legal.seq, action: legal.actions.includes('check') ? 'check' : 'fold' }));
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const found = seats.flatMap((s, i) => breaches(s, `seat ${i}`));
  // chips are decimal digit strings or safe integers: an acknowledged bet or raise had one
  for (const s of seats) {
    for (const ack of s.received.filter((x) => x.type === 'action_ack' && !x.duplicate)) {
      const m = sent.get(ack.ref as number);
      const amount = m?.amount;
      if (m && (m.action === 'bet' || m.action === 'raise')
          && !((typeof amount === 'string' && /^[0-9]+$/.test(amount)) || Number.isSafeInteger(amount))) {
        found.push(`a ${String(m.action)} of ${JSON.stringify(amount)} was acknowledged`);
      }
    }
  }
  const hands = new Set(seats.flatMap((s) => s.received.filter((x) => x.type === 'hand_result').map((x) => x.handId)));
  process.stdout.write(`fuzz-ws: seated play, ${FUZZ_RUNS * 8} actions, ${hands.size} hands finished, in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
  if (process.env.FUZZ_DEBUG) for (const s of seats) process.stdout.write(`${JSON.stringify(s.received.filter((x) => x.type !== 'game_state').map((x) => x.code ?? x.type))}\n${JSON.stringify(s.received.filter((x) => x.type === 'game_state').at(-1))}\n`);
  for (const s of seats) s.ws.close();
  expect(found.slice(0, 25)).toEqual([]);
});

test('a frame over the size bound closes that connection with a code, and nothing else', async () => {
  const s = await open();
  s.ws.send(JSON.stringify({ type: 'ping', pad: 'x'.repeat(64 * 1024) }));
  const deadline = Date.now() + 10_000;
  while (!s.closed && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  expect(s.closed?.code).toBe(1009);
  const other = await open();
  await drained(other, 'after an oversize frame');
  other.ws.close();
});

test('the game role is alive and the books are clean after all of it', async () => {
  const health = await fetch(`${m.game}/health`);
  expect(health.status).toBe(200);
  const s = await open();
  await drained(s, 'final');
  expect(s.received[0]).toMatchObject({ type: 'hello' });
  s.ws.close();
  await expectCleanAudit(db.owner);
});
