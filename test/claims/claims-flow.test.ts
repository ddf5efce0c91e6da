// The claim board end to end: auth, game, cage and worker roles; a player links a Solana wallet (the
// link queues wallet_linked, which the worker delivers to the game's condition-met route), claims the
// weekly baseline and the lit unlock, and the chips land in the cage through the grant, once.
import { randomBytes } from 'node:crypto';
import { base58 } from '@scure/base';
import type pg from 'pg';
import { createTestDatabase, harnessSwitchOn, type TestDatabase } from '../helpers/db.ts';
import { expectCleanAudit } from '../helpers/cage.ts';
import { call, startMoneyPlatform } from '../helpers/money.ts';

let db: TestDatabase;
let cagePool: pg.Pool;
let m: Awaited<ReturnType<typeof startMoneyPlatform>>;
beforeAll(async () => {
  db = await createTestDatabase();
  // the claims here are judged at the clocks the tests name: the test harness's
  await harnessSwitchOn(db);
  cagePool = db.pool('poker_cage');
  const { createLogger } = await import('../../server/telemetry/index.ts');
  m = await startMoneyPlatform(db, { alsoWorker: true, ...(process.env.DEBUG_LOG ? { log: createLogger('debug') } : {}) });
  const on = await call(`${m.game}/admin/claim-settings`, { method: 'PATCH', headers: (await m.operator()).auth, body: { claimBoardEnabled: true } });
  expect(on.body).toMatchObject({ environment: 'local', claimBoardEnabled: true, playTransferGateEnabled: true });
});
afterAll(async () => {
  await m?.platform.stop();
  await expectCleanAudit(cagePool);
  await db.drop();
});

const state = (auth: Record<string, string>, clock?: string) =>
  call(`${m.game}/claim-board/state`, { headers: { ...auth, ...(clock ? { 'x-test-clock': clock } : {}) } });
const claim = (auth: Record<string, string>, body: Record<string, unknown>, clock?: string) =>
  call(`${m.game}/claim-board/claim`, { headers: { ...auth, ...(clock ? { 'x-test-clock': clock } : {}) }, body });

test('baseline and an unlock: lit by the wallet link, credited once, minted through the cage', async () => {
  const p = await m.player();
  const board = await state(p.auth);
  expect(board.status).toBe(200);
  expect(board.body.sections.map((s: { key: string }) => s.key)).toEqual([
    'weekly_baseline', 'connect_wallet', 'build_agent', 'seat_agent', 'inspect_decision', 'tune_republish',
  ]);
  expect(board.body.sections[0]).toMatchObject({ kind: 'baseline', claimable: true, amount: 500 });
  expect(board.body.sections[1]).toMatchObject({ key: 'connect_wallet', state: 'locked', claimable: false });

  // no linked wallet: nothing written, nothing minted
  expect(await claim(p.auth, { sectionKey: 'weekly_baseline' })).toEqual({ status: 409, body: { error: 'wallet_not_linked' } });
  expect((await db.owner.query('select count(*)::int as n from claims.claim_ledger where user_id = $1', [p.userId])).rows[0].n).toBe(0);

  // link a Solana wallet through the auth role as the browser would; wallet_linked lights connect_wallet
  const { ed25519 } = await import('@noble/curves/ed25519.js');
  const secret = ed25519.utils.randomSecretKey();
  const address = base58.encode(ed25519.getPublicKey(secret));
  const auth = m.platform.url('auth');
  const nonceRes = await call(`${auth}/api/auth/solana/nonce`, { headers: { ...p.auth, origin: 'https://auth.poker.test' }, body: { address } });
  expect(nonceRes.status).toBe(200);
  const message: string = nonceRes.body.message;
  const signature = base58.encode(ed25519.sign(new TextEncoder().encode(message), secret));
  const linked = await call(`${auth}/api/link-wallet/solana`, {
    headers: { ...p.auth, origin: 'https://auth.poker.test' }, body: { address, message, signature },
  });
  expect(linked.status).toBe(200);
  for (let i = 0; i < 250 && (await state(p.auth)).body.sections[1].state !== 'lit'; i++) await new Promise((r) => setTimeout(r, 20));
  expect((await state(p.auth)).body.sections[1]).toMatchObject({ key: 'connect_wallet', state: 'lit', claimable: true });

  const base = await claim(p.auth, { sectionKey: 'weekly_baseline' });
  expect(base.status).toBe(200);
  expect(base.body).toMatchObject({ outcome: 'credited', amount: 500 });
  expect(await claim(p.auth, { sectionKey: 'weekly_baseline' })).toMatchObject({ status: 409, body: { outcome: 'already_claimed' } });
  const unlock = await claim(p.auth, { sectionKey: 'connect_wallet' });
  expect(unlock.body).toMatchObject({ outcome: 'credited', amount: 500 });
  expect(await claim(p.auth, { sectionKey: 'build_agent' })).toMatchObject({ status: 409, body: { outcome: 'locked' } });
  expect(await claim(p.auth, { sectionKey: 'no_such_section' })).toMatchObject({ status: 403, body: { outcome: 'forged' } });
  expect(await claim(p.auth, { sectionKey: 'weekly_baseline', userId: '00000000-0000-4000-8000-000000000000' })).toMatchObject({ status: 403, body: { outcome: 'forged' } });
  expect(await m.balance(p.auth)).toBe(1000);

  // a new ISO week makes the baseline claimable again, with no job
  const nextWeek = new Date(Date.now() + 7 * 86400_000).toISOString();
  expect((await state(p.auth, nextWeek)).body.sections[0]).toMatchObject({ claimable: true });
  expect((await claim(p.auth, { sectionKey: 'weekly_baseline' }, nextWeek)).body).toMatchObject({ outcome: 'credited' });
  expect(await m.balance(p.auth)).toBe(1500);
});
