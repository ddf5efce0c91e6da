// A hand's signed record in game.end_hand (issue 23): stored with the hand in its end's transaction,
// refused unless it is this hand's and extends the table's chain, so a holder of the game login's
// password cannot fork a table's chain, graft a record onto another hand or store half of one.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { ed25519 } from '@noble/curves/ed25519.js';
import { signerFromPrivateKey } from '../../../server/crypto/signing.ts';
import { GENESIS, hashOf, recordText, type HandRecord } from '../../../server/game/hands/hand-record.ts';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/db.ts';
import { createTable, creditSeat, handEnding, newKey, openDepositsAs, type TableRow } from '../../../test/helpers/game.ts';

const ENDING = handEnding('[{"type":"hand_started"}]');

let db: TestDatabase;
let cage: pg.Pool;
let game: pg.Pool;
let t: TableRow;
let a: bigint;
let b: bigint;
const signer = signerFromPrivateKey(ed25519.utils.randomSecretKey());

beforeAll(async () => {
  db = await createTestDatabase();
  cage = db.pool('poker_cage');
  game = db.pool('poker_game');
  openDepositsAs(db.owner);
  t = await createTable(cage);
  a = (await creditSeat(game, newKey(), t.table_id, randomUUID(), 0, 100n)).player_id;
  b = (await creditSeat(game, newKey(), t.table_id, randomUUID(), 1, 100n)).player_id;
});
afterAll(async () => {
  await db.drop();
});

const deal = (n: number) => ({ algorithm: 'sha256-fisher-yates-v1', commitment: 'c'.repeat(64), serverSeed: n.toString(16).padStart(64, '0'), contributions: [] });

function record(handId: string, handNumber: number, prev: string, overrides: Partial<HandRecord> = {}): HandRecord {
  return {
    v: 1, tableId: t.table_id, handNumber, handId, prev, deal: deal(handNumber) as HandRecord['deal'], button: 0,
    seats: [], actions: [], board: '', shown: [], stacks: [], rake: '0', ...overrides,
  };
}

/** Begins `handId` and ends it with `r` (its deal unless `dealOf` says otherwise) as the game login would. */
async function endWith(handId: string, handNumber: number, r: HandRecord | null, options: { dealOf?: unknown; signature?: string | null; begin?: boolean } = {}) {
  if (options.begin !== false) await db.owner.query('select * from game.begin_hand($1, $2, $3)', [t.table_id, handId, await db.leaseEpoch(t.table_id)]);
  const text = r ? recordText(r) : null;
  const signature = options.signature !== undefined ? options.signature : text ? Buffer.from(signer.sign(new TextEncoder().encode(text))).toString('hex') : null;
  return game.query(
    `select game.end_hand($1, $2, $3, $4::jsonb, 0, 0, $10, $11::jsonb, '{}'::uuid[], now(), $5, $6::jsonb, $7, $8, $9) as answer`,
    [t.table_id, handId, handNumber, JSON.stringify({ [String(a)]: 100, [String(b)]: 100 }), await db.leaseEpoch(t.table_id),
      options.dealOf !== undefined ? JSON.stringify(options.dealOf) : r ? JSON.stringify(r.deal) : null, text, signature, text ? signer.publicKeyHex : null,
      ENDING.compact, ENDING.started],
  );
}

const stored = async (handId: string) => (await db.owner.query(
  'select deal, record, record_hash, record_signature, dealer_key from game.hand_histories where hand_id = $1', [handId])).rows[0];
const release = async (handId: string) => game.query('select game.release_hand($1, $2, $3)', [t.table_id, handId, await db.leaseEpoch(t.table_id)]);

test('the first record names GENESIS; the next names its hash; each is stored verbatim with its hash', async () => {
  const first = record('rec-1', 1, GENESIS);
  await endWith('rec-1', 1, first);
  const one = await stored('rec-1');
  expect(one).toEqual({ deal: first.deal, record: recordText(first), record_hash: hashOf(recordText(first)), record_signature: expect.stringMatching(/^[0-9a-f]{128}$/), dealer_key: signer.publicKeyHex });
  const second = record('rec-2', 2, one.record_hash);
  await endWith('rec-2', 2, second);
  expect((await stored('rec-2')).record_hash).toBe(hashOf(recordText(second)));
});

test('a record that does not extend the table\'s chain is refused record_not_in_chain, and nothing of the hand is written', async () => {
  const head = (await stored('rec-2')).record_hash;
  // a fork: naming the first record again, or GENESIS, or a made-up hash
  for (const prev of [(await stored('rec-1')).record_hash, GENESIS, 'f'.repeat(64)]) {
    await expect(endWith('rec-3', 3, record('rec-3', 3, prev))).rejects.toMatchObject({ message: 'record_not_in_chain' });
    await release('rec-3');
    expect(await stored('rec-3')).toBeUndefined();
  }
  await endWith('rec-3', 3, record('rec-3', 3, head));
  expect((await stored('rec-3')).record_hash).toBe(hashOf(recordText(record('rec-3', 3, head))));
});

test('another hand\'s record, another table\'s, a deal that is not the record\'s, half a record: refused invalid_hand', async () => {
  const head = (await stored('rec-3')).record_hash;
  const cases: [string, HandRecord | null, Parameters<typeof endWith>[3]][] = [
    ['another hand', record('rec-other', 4, head), {}],
    ['another table', record('rec-4', 4, head, { tableId: 'elsewhere' }), {}],
    ['a deal not the record\'s', record('rec-4', 4, head), { dealOf: deal(99) }],
    ['no signature', record('rec-4', 4, head), { signature: null }],
    ['a deal without a record', null, { dealOf: deal(4) }],
  ];
  for (const [, r, options] of cases) {
    await expect(endWith('rec-4', 4, r, options)).rejects.toMatchObject({ message: 'invalid_hand' });
    await release('rec-4');
  }
  expect(await stored('rec-4')).toBeUndefined();
});

test('a record is never rewritten by a replay: the end sent again answers what was committed', async () => {
  const before = await stored('rec-3');
  const forged = record('rec-3', 3, GENESIS, { rake: '999' });
  const again = await endWith('rec-3', 3, forged, { begin: false });
  expect(again.rows[0].answer).toMatchObject({ replayed: true });
  expect(await stored('rec-3')).toEqual(before);
});

// issue 31: the commitment SQL checks when an abandoned deal is revealed is the one fair-deal.ts computes
test('game_private.deal_commitment: the v2 test vector of docs/dealer.md, and the seed alone for seeded-v1', async () => {
  const seed = Buffer.from(Array.from({ length: 32 }, (_, i) => i));
  const { rows: [v2] } = await db.owner.query<{ c: string }>(
    "select game_private.deal_commitment('sha256-fisher-yates-v2', $1, 'table-1', 1, 'table-1:1:0a1b2c3d') as c", [seed]);
  expect(v2!.c).toBe('1d43b2c0575e3cf95a95fb12ae34716de85aaeaf226aa1f0a7cd3a3ca301cb3b');
  const { rows: [seeded] } = await db.owner.query<{ c: string }>("select game_private.deal_commitment('seeded-v1', $1, 't', 1, 'h') as c", [seed]);
  expect(seeded!.c).toBe('630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd');
});

// issue 31: a committed deal that is never dealt is stored abandoned, blocks the table's deals until
// revealed, and is revealed only with a seed that gives its commitment (or none, a seal that did not open)
test('an abandoned committed deal: counted, deals refused until revealed, a made-up seed refused, revealed in order', async () => {
  const u = await createTable(cage);
  const pa = (await creditSeat(game, newKey(), u.table_id, randomUUID(), 0, 100n)).player_id;
  const pb = (await creditSeat(game, newKey(), u.table_id, randomUUID(), 1, 100n)).player_id;
  const epoch = await db.leaseEpoch(u.table_id);
  const seed = Buffer.from(randomUUID().replace(/-/g, '').repeat(2), 'hex');
  const handId = `${u.table_id}:1:0a1b2c3d`;
  const { rows: [c] } = await db.owner.query<{ c: string }>(
    "select game_private.deal_commitment('sha256-fisher-yates-v2', $1, $2, 1, $3) as c", [seed, u.table_id, handId]);
  const committed = { algorithm: 'sha256-fisher-yates-v2', handNumber: 1, handId, commitment: c!.c, sealed: 'ab'.repeat(60) };
  await game.query('select game.commit_deal($1, $2, $3::jsonb)', [u.table_id, epoch, JSON.stringify(committed)]);
  await expect(game.query('select game.commit_deal($1, $2, $3::jsonb)', [u.table_id, epoch, JSON.stringify(committed)])).rejects.toMatchObject({ code: 'GMDAC' });
  // the room that held it is gone: the next one abandons it, and may not deal before revealing it
  const { rows: [opened] } = await game.query('select * from game.open_deals($1, $2)', [u.table_id, epoch]);
  expect(opened.pending).toEqual([{ handId, handNumber: 1, deal: { ...committed, contributions: [], seats: [
    { seat: 0, playerId: String(pa), stack: '100' }, { seat: 1, playerId: String(pb), stack: '100' }] } }]);
  const next = { ...committed, handNumber: 2, handId: `${u.table_id}:2:00000000` };
  await expect(game.query('select * from game.deal_hand($1, $2, $3, $4::jsonb, $5::jsonb)',
    [u.table_id, handId, epoch, JSON.stringify({ ...committed, contributions: [] }), JSON.stringify(next)])).rejects.toMatchObject({ code: 'GMDUR' });
  const reveal = (serverSeed: string, edit: (r: HandRecord) => void = () => undefined) => {
    const deal = { algorithm: committed.algorithm, commitment: committed.commitment, serverSeed, contributions: [] };
    const r = { ...record(handId, 1, GENESIS, { abandoned: true, button: -1, seats: opened.pending[0].deal.seats,
      stacks: [{ seat: 0, stack: '100' }, { seat: 1, stack: '100' }] }), tableId: u.table_id, deal } as HandRecord;
    edit(r);
    const text = recordText(r);
    return game.query('select game.reveal_abandoned($1, $2, $3, $4::jsonb, $5, $6, $7) as hash',
      [u.table_id, handId, epoch, JSON.stringify(deal), text, Buffer.from(signer.sign(new TextEncoder().encode(text))).toString('hex'), signer.publicKeyHex]);
  };
  await expect(reveal('cd'.repeat(32))).rejects.toMatchObject({ code: 'GMHND' }); // a seed of the login's own
  await expect(reveal(seed.toString('hex'), (r) => { r.stacks[0]!.stack = '150'; })).rejects.toMatchObject({ code: 'GMHND' }); // chips moved
  await expect(reveal(seed.toString('hex'), (r) => { r.prev = 'f'.repeat(64); })).rejects.toMatchObject({ code: 'GMCHN' });
  const { rows: [done] } = await reveal(seed.toString('hex'));
  expect(done.hash).toMatch(/^[0-9a-f]{64}$/);
  const { rows: [row] } = await db.owner.query(
    `select h.status, h.hand_number::int as n, h.sealed_deal, h.deal ->> 'serverSeed' as seed, cardinality(h.players) as players, t.abandoned_deals, t.unrevealed_deals
       from game.hand_histories h join game.tables t using (table_id) where h.hand_id = $1`, [handId]);
  expect(row).toEqual({ status: 'abandoned', n: 1, sealed_deal: null, seed: seed.toString('hex'), players: 2, abandoned_deals: 1, unrevealed_deals: 0 });
  await expect(reveal(seed.toString('hex'))).rejects.toMatchObject({ code: 'GMCHN' }); // nothing left to reveal

  // a seal that does not open (the dealer key changed): revealed without its seed, in plain view, and the table deals on
  await game.query('select game.commit_deal($1, $2, $3::jsonb)', [u.table_id, epoch, JSON.stringify(next)]);
  await game.query('select * from game.open_deals($1, $2)', [u.table_id, epoch]);
  const lost = { algorithm: next.algorithm, commitment: next.commitment, serverSeed: '', contributions: [] };
  const r2 = { ...record(next.handId, 2, done.hash, { abandoned: true, button: -1, seats: opened.pending[0].deal.seats,
    stacks: [{ seat: 0, stack: '100' }, { seat: 1, stack: '100' }] }), tableId: u.table_id, deal: lost } as HandRecord;
  const text = recordText(r2);
  await game.query('select game.reveal_abandoned($1, $2, $3, $4::jsonb, $5, $6, $7)',
    [u.table_id, next.handId, epoch, JSON.stringify(lost), text, Buffer.from(signer.sign(new TextEncoder().encode(text))).toString('hex'), signer.publicKeyHex]);
  expect((await db.owner.query('select abandoned_deals, unrevealed_deals from game.tables where table_id = $1', [u.table_id])).rows[0])
    .toEqual({ abandoned_deals: 2, unrevealed_deals: 0 });
});
