// Issue 31, classes 1 (the dealer's part) and 2, and the bullet "An audit of causes": attacks made as
// an attacker holding the game login's password would make them (connected as poker_game, reading a
// value first, then using it), and what must catch each: a refusal in SQL, or the audit (the one
// list of checks the periodic job and `npm run ops -- audit` run, server/audit/) naming it.
import { randomUUID } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import pg from 'pg';
import { loginUrl } from '../../server/db/roles.ts';
import { signerFromPrivateKey } from '../../server/crypto/signing.ts';
import { GENESIS, signRecord, type HandRecord } from '../../server/game/hands/hand-record.ts';
import { auditOnce } from '../../server/audit/run.ts';
import { fund, userAccount } from '../helpers/cage.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { createTable, creditSeat, openDeposit } from '../helpers/game.ts';

let db: TestDatabase;
let game: pg.Client;

beforeAll(async () => {
  db = await createTestDatabase();
  game = new pg.Client({ connectionString: loginUrl(db.url, 'poker_game', undefined) });
  await game.connect();
});
afterAll(async () => {
  await game?.end();
  await db?.drop();
});

/** The audit's verdict as an operator reads it (`npm run ops -- audit`: every check, no checkpoint moved). */
async function verdict() {
  const client = await db.owner.connect();
  try {
    return await auditOnce(client, { mode: 'read' });
  } finally {
    client.release();
  }
}

/** A cash table with a victim and an accomplice seated, 200 chips each. */
async function cashTable() {
  const cage = db.pool('poker_cage', 2);
  const tableId = (await createTable(cage)).table_id;
  const seats: { userId: string; playerId: string }[] = [];
  for (const seat of [0, 1]) {
    const u = await userAccount(db.owner);
    await fund(db.owner, u.id, 1000n);
    const deposit = await openDeposit(cage, u.userId, `sit-${randomUUID()}`, tableId, seat, 200n);
    const row = await creditSeat(db.pool('poker_game', 2), deposit.ref_id, tableId, u.userId, seat, 200n);
    seats.push({ userId: u.userId, playerId: String(row.player_id) });
  }
  return { tableId, victim: seats[0]!, accomplice: seats[1]! };
}

/** The attacker's own presence and lease on the table (register_process + take_lease, as the game login). */
async function takeTable(tableId: string): Promise<string> {
  const { rows: [proc] } = await game.query("select process_id from game.register_process('http://attacker.invalid')");
  const { rows: [lease] } = await game.query('select granted, epoch::text from game.take_lease($1, $2, 3600)', [tableId, proc.process_id]);
  expect(lease.granted).toBe(true);
  return lease.epoch;
}

const endHand = (tableId: string, handId: string, handNumber: number, stacks: Record<string, number>, epoch: string,
  signed?: { deal: unknown; text: string; signature: string; publicKey: string }) =>
  game.query(
    `select game.end_hand($1, $2, $3, $4, 0, 0, '[]'::jsonb, null, '{}', null, $5, $6, $7, $8, $9)`,
    [tableId, handId, handNumber, JSON.stringify(stacks), epoch, signed ? JSON.stringify(signed.deal) : null,
      signed?.text ?? null, signed?.signature ?? null, signed?.publicKey ?? null],
  );

test('class 1: the game login reads no dealer signing key (the function and its table are gone)', async () => {
  await expect(game.query('select game.dealer_private_key($1)', [Buffer.alloc(32, 1)])).rejects.toMatchObject({ code: '42883' });
  const { rows } = await db.owner.query(`select count(*)::int as n from pg_tables where schemaname like 'game%' and tablename = 'dealer_keys'`);
  expect(rows[0].n).toBe(0);
  // what the game login may read of dealer keys: public halves only, pinned by the owner or an operator
  const { rows: keys } = await game.query('select * from game.dealer_public_keys()');
  for (const k of keys) expect(Object.keys(k).sort()).toEqual(['pinned_at', 'pinned_by', 'public_key', 'retired_at']);
});

test('class 2: a hand end written by the game login that moves a victim\'s stack is named by the audit', async () => {
  const t = await cashTable();
  expect(await verdict()).toMatchObject({ violations: [] });
  const epoch = await takeTable(t.tableId);
  // 1. no record at all
  const handId = `forged-${randomUUID()}`;
  await game.query('select game.begin_hand($1, $2, $3)', [t.tableId, handId, epoch]);
  const forgedAt = Date.now();
  await endHand(t.tableId, handId, 1, { [t.victim.playerId]: 0, [t.accomplice.playerId]: 400 }, epoch);
  // cage.audit() still sums: escrow = live stacks, the books balance
  expect((await db.owner.query('select * from cage.audit()')).rows).toEqual([]);
  const named = await verdict();
  // eslint-disable-next-line no-console
  console.log(`forged hand end named by the audit ${Date.now() - forgedAt} ms after it was written`);
  expect(named.violations).toEqual(expect.arrayContaining([expect.objectContaining({ invariant: 'hand_cause', subject: `hand:${handId}` })]));

  // 2. a record signed by a key the attacker made (the one they can hold), chained to the table's head
  const key = signerFromPrivateKey(ed25519.utils.randomSecretKey());
  const handId2 = `forged-${randomUUID()}`;
  await game.query('select game.begin_hand($1, $2, $3)', [t.tableId, handId2, epoch]);
  const deal = { algorithm: 'sha256-fisher-yates-v1' as const, commitment: '0'.repeat(64), serverSeed: '1'.repeat(64), contributions: [] };
  const record: HandRecord = {
    v: 1, tableId: t.tableId, handNumber: 2, handId: handId2, prev: GENESIS, deal, button: 0,
    seats: [{ seat: 0, playerId: t.accomplice.playerId, stack: '400' }], actions: [], board: '', shown: [],
    stacks: [{ seat: 0, stack: '400' }], rake: '0',
  };
  const signed = signRecord(record, key);
  await endHand(t.tableId, handId2, 2, { [t.victim.playerId]: 0, [t.accomplice.playerId]: 400 }, epoch, { deal, ...signed });
  const again = await verdict();
  expect(again.violations).toEqual(expect.arrayContaining([
    expect.objectContaining({ invariant: 'hand_signature', subject: `hand:${handId2}` }),
  ]));
});
