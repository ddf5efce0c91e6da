// The hand verifier (server/game/hands/verify-hand.ts) on hands the engine plays from a revealed
// deal, as a player sees them: a hand verifies, and a changed seed, card, commitment, record,
// signature or chain link is each caught by the check named for it.
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { canonicalJson, signerFromPrivateKey } from '../../../server/crypto/signing.ts';
import { applyAction, isRefusal, legalActions, startHand, type HandState } from '../../../server/game/poker/engine.ts';
import { DEAL_ALGORITHM, deckOf, handCommitmentOf, toHex, type DealHand, type DealReveal } from '../../../server/game/poker/fair-deal.ts';
import { abandonedRecord, GENESIS, recordOf, recordText, signRecord, type SignedRecord } from '../../../server/game/hands/hand-record.ts';
import { redactHistory } from '../../../server/game/hands/histories.ts';
import { verifyChain, verifyHand, type HandView } from '../../../server/game/hands/verify-hand.ts';
import { historyJson } from '../../../server/game/live/wire.ts';

const signer = signerFromPrivateKey(ed25519.utils.randomSecretKey());

/** Plays a hand from a fresh deal to its end: random calls, checks and folds, and sometimes a raise. */
function playHand(handId: string, deal: DealReveal, seats: number[], button: number): HandState {
  let h = startHand({
    handId, seats: seats.map((seat) => ({ seat, playerId: `player-${seat}`, stack: 500n })), button,
    smallBlind: 5n, bigBlind: 10n, ante: 0n, deck: deckOf(deal, handId), rake: { percent: 5, cap: 10n, minPot: 0n, requiresFlop: true },
  });
  for (let guard = 0; guard < 300 && h.status === 'betting'; guard++) {
    const legal = legalActions(h)!;
    const roll = Math.random();
    const type = roll < 0.1 && legal.actions.includes('fold') ? 'fold'
      : roll < 0.2 && legal.actions.includes('raise') && legal.minRaiseTo !== null ? 'raise'
        : legal.actions.includes('check') ? 'check' : 'call';
    const next = applyAction(h, legal.seat, type === 'raise' ? { type, amount: legal.minRaiseTo! } : { type });
    if (isRefusal(next)) throw new Error(next.message);
    h = next;
  }
  return h;
}

function freshDeal(seats: number[], hand: DealHand): DealReveal {
  const serverSeed = randomBytes(32);
  const contributions = seats.filter(() => Math.random() < 0.7).map((seat) => ({ seat, seed: randomBytes(12).toString('base64url') }));
  return { algorithm: DEAL_ALGORITHM, commitment: handCommitmentOf(serverSeed, hand), serverSeed: toHex(serverSeed), contributions };
}

/** A table's hands, chained and signed, and each as the player at `viewer` sees it. */
function tableOfHands(count: number, viewer = 0): HandView[] {
  const seats = [0, 2, 3, 5];
  let prev = GENESIS;
  const views: HandView[] = [];
  for (let n = 1; n <= count; n++) {
    const handId = `t1:${n}:${randomBytes(4).toString('hex')}`;
    const deal = freshDeal(seats, { tableId: 't1', handNumber: n, handId });
    const hand = playHand(handId, deal, seats, seats[n % seats.length]!);
    const record = signRecord(recordOf(hand, { tableId: 't1', handNumber: n, prev, deal }), signer);
    prev = record.hash;
    const history = redactHistory(JSON.parse(historyJson(hand.history)), [viewer]);
    views.push({ handId, tableId: 't1', handNumber: n, history, deal, record });
  }
  return views;
}

const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v));

test('every hand of a table verifies, as each player sees it, and the chain links', () => {
  for (const viewer of [0, 2, 3, 5]) {
    const views = tableOfHands(25, viewer);
    for (const v of views) {
      const verdict = verifyHand(v, signer.publicKeyHex);
      expect({ handId: v.handId, failed: verdict.failed, checks: verdict.checks.filter((c) => !c.ok) }).toEqual({ handId: v.handId, failed: null, checks: [] });
    }
    const chain = verifyChain(views);
    expect(chain).toHaveLength(24);
    expect(chain.every((c) => c.ok)).toBe(true);
  }
});

test('a changed seed, a changed card, a changed commitment: each caught by its check', () => {
  const [view] = tableOfHands(1);
  const seed = clone(view!);
  seed.deal!.serverSeed = toHex(randomBytes(32));
  expect(verifyHand(seed).failed).toBe('commitment');

  const commitment = clone(view!);
  commitment.deal!.commitment = toHex(randomBytes(32));
  expect(verifyHand(commitment).failed).toBe('commitment');

  const card = clone(view!);
  const hole = card.history.find((e) => e.type === 'hole_cards' && e.seat === 0)!;
  hole.cards = [hole.cards![1]!, hole.cards![0]!];
  const verdict = verifyHand(card);
  expect(verdict.failed).toBe('cards');
  expect(verdict.checks.find((c) => c.name === 'cards')!.detail).toMatch(/seat 0 holds/);

  // the seed and its commitment changed together: the deck no longer deals the hand
  const both = clone(view!);
  const other = randomBytes(32);
  both.deal = { ...both.deal!, serverSeed: toHex(other), commitment: handCommitmentOf(other, both) };
  expect(verifyHand(both).failed).toBe('cards');
});

test('a changed record, signature or key, and a broken chain link: each caught', () => {
  const views = tableOfHands(3);
  const view = views[1]!;
  const edit = (f: (r: SignedRecord) => void) => {
    const v = clone(view);
    f(v.record!);
    return verifyHand(v, signer.publicKeyHex);
  };
  expect(edit((r) => { r.text = r.text.replace('"rake":"', '"rake":"1'); }).failed).toBe('record');
  // re-hashed after the edit: the hash holds, the signature does not
  expect(edit((r) => {
    r.text = r.text.replace(/"stacks":\[\{"seat":0,"stack":"\d+"/, '"stacks":[{"seat":0,"stack":"999999"');
    r.hash = createHash('sha256').update(r.text).digest('hex');
  }).failed).toBe('record'); // the record no longer says what the hand says
  expect(edit((r) => {
    const sig = Buffer.from(r.signature, 'hex');
    sig[3] = sig[3]! ^ 1;
    r.signature = sig.toString('hex');
  }).failed).toBe('signature');
  const stranger = signerFromPrivateKey(ed25519.utils.randomSecretKey());
  expect(edit((r) => { r.publicKey = stranger.publicKeyHex; }).failed).toBe('signature');

  // hand 2 re-signed with another prev: its own checks pass under its key, the chain does not
  const relinked = clone(views);
  const record = JSON.parse(relinked[1]!.record!.text);
  record.prev = GENESIS;
  const resigned = signRecord(record, signer);
  relinked[1]!.record = resigned;
  expect(verifyHand(relinked[1]!, signer.publicKeyHex).ok).toBe(true);
  const chain = verifyChain(relinked);
  expect(chain.filter((c) => !c.ok).map((c) => c.detail)).toEqual([expect.stringMatching(/hand 2 names 0{64} before it/), expect.stringMatching(/hand 3 names/)]);
});

test('against the pinned keys (GET /api/dealer/key\'s list): a key in use when the hand ended passes; a retired, a later or an unknown key fails the signature check', () => {
  const view: HandView = { ...tableOfHands(2)[1]!, endedAt: '2026-06-01T12:00:00.000Z' };
  const key = signer.publicKeyHex;
  const other = { publicKey: 'ab'.repeat(32), pinnedAt: '2026-01-01T00:00:00.000Z', retiredAt: null };
  const verdict = (pinned: { publicKey: string; pinnedAt: string; retiredAt: string | null }[], v = view) => verifyHand(v, pinned);
  expect(verdict([other, { publicKey: key, pinnedAt: '2026-01-01T00:00:00.000Z', retiredAt: null }]).failed).toBeNull();
  // retired after the hand ended: still its key
  expect(verdict([{ publicKey: key, pinnedAt: '2026-01-01T00:00:00.000Z', retiredAt: '2026-07-01T00:00:00.000Z' }]).failed).toBeNull();
  for (const pinned of [
    [other],
    [{ publicKey: key, pinnedAt: '2026-01-01T00:00:00.000Z', retiredAt: '2026-05-01T00:00:00.000Z' }],
    [{ publicKey: key, pinnedAt: '2026-06-02T00:00:00.000Z', retiredAt: null }],
  ]) {
    const v = verdict(pinned);
    expect([v.failed, v.checks.filter((c) => !c.ok).map((c) => c.name)]).toEqual(['signature', ['signature']]);
  }
  // a hand that says not when it ended: only a key still in use
  expect(verdict([{ publicKey: key, pinnedAt: '2026-01-01T00:00:00.000Z', retiredAt: null }], { ...view, endedAt: null }).failed).toBeNull();
  expect(verdict([{ publicKey: key, pinnedAt: '2026-01-01T00:00:00.000Z', retiredAt: '2026-07-01T00:00:00.000Z' }], { ...view, endedAt: null }).failed).toBe('signature');
});

test('a hand without a revealed deal or a record fails, never passes by default', () => {
  const [view] = tableOfHands(1);
  expect(verifyHand({ ...view!, deal: null }).ok).toBe(false);
  expect(verifyHand({ ...view!, record: null }).failed).toBe('record');
});

describe('npm run verify:hand, offline on a saved file', () => {
  const run = (args: string[]) => spawnSync(process.execPath, ['--no-warnings', 'server/cli/verify-hand.ts', ...args], { encoding: 'utf8', env: { ...process.env, POKER_TOKEN: '' } });
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'verify-hand-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test('verified hands exit 0; a changed card exits 1 naming the check; no source is a usage error', () => {
    const views = tableOfHands(3);
    const good = join(dir, 'good.json');
    writeFileSync(good, JSON.stringify({ hands: views }));
    const ok = run(['--file', good, '--key', signer.publicKeyHex]);
    expect(ok.status).toBe(0);
    expect(ok.stdout.match(/: verified/g)).toHaveLength(3);
    expect(ok.stdout).toMatch(/ok {5}chain: t1 hand 3 follows hand 2/);

    const bad = clone(views);
    const board = bad[2]!.history.find((e) => e.type === 'board');
    const hole = bad[2]!.history.find((e) => e.type === 'hole_cards')!;
    (board ?? hole).cards = [...(board ?? hole).cards!].reverse();
    const badFile = join(dir, 'bad.json');
    writeFileSync(badFile, JSON.stringify(bad));
    const failed = run(['--file', badFile, bad[2]!.handId, '--json']);
    expect(failed.status).toBe(1);
    const report = JSON.parse(failed.stdout);
    expect(report.hands).toHaveLength(1);
    expect(report.hands[0]).toMatchObject({ handId: bad[2]!.handId, ok: false, failed: 'cards' });

    // the player's own seed (--seed): mixed in, or FAILED mixed; a v1 deal only with --legacy
    const mine = views.flatMap((v) => v.deal!.contributions).find(Boolean);
    if (mine) {
      const withMine = run(['--file', good, '--key', signer.publicKeyHex, '--seed', mine.seed]);
      expect(withMine.stdout).toMatch(/ok {5}mixed: your seed is mixed in/);
    }
    const notMine = run(['--file', good, views[1]!.handId, '--key', signer.publicKeyHex, '--seed', 'not-my-seed']);
    expect(notMine.status).toBe(1);
    expect(notMine.stdout).toMatch(/FAILED \(mixed\)/);
    const v1 = clone(views[0]!);
    v1.deal = { ...v1.deal!, algorithm: 'sha256-fisher-yates-v1', commitment: createHash('sha256').update(Buffer.from(v1.deal!.serverSeed, 'hex')).digest('hex') };
    v1.record = signRecord({ ...JSON.parse(v1.record!.text), deal: v1.deal }, signer);
    const v1File = join(dir, 'v1.json');
    writeFileSync(v1File, JSON.stringify([v1]));
    expect(run(['--file', v1File, '--key', signer.publicKeyHex]).stdout).toMatch(/FAILED commitment: sha256-fisher-yates-v1's commitment does not commit the hand/);
    expect(run(['--file', v1File, '--key', signer.publicKeyHex, '--legacy']).status).toBe(0);

    expect(run([views[0]!.handId]).status).toBe(2); // no POKER_TOKEN, no --file
    expect(run(['--file', good, 'no-such-hand']).status).toBe(2);
    expect(run(['--file', good, '--key', 'xyz']).status).toBe(2);
  });
});

test('a record\'s text is its canonical JSON (the fast writer agrees with canonicalJson)', () => {
  for (const view of tableOfHands(40)) {
    const record = JSON.parse(view.record!.text);
    expect(recordText(record)).toBe(canonicalJson(record));
    expect(view.record!.text).toBe(canonicalJson(record));
  }
});

test('a rewrite re-signed with the dealer key and re-chained passes every other check, and fails against what hand_result announced', () => {
  const views = tableOfHands(4);
  const announced = views.map((v) => ({ handId: v.handId, deal: clone(v.deal!), record: { hash: v.record!.hash, signature: v.record!.signature } }));
  for (const [i, v] of views.entries()) expect(verifyHand(v, signer.publicKeyHex, announced[i]).ok).toBe(true);
  // from hand 2 on, every record rewritten (here: hand 2 made the table's first) and re-signed in turn
  const rewritten = clone(views);
  let prev = GENESIS;
  for (const v of rewritten.slice(1)) {
    const record = JSON.parse(v.record!.text);
    record.prev = prev;
    v.record = signRecord(record, signer);
    prev = v.record.hash;
  }
  expect(rewritten.every((v) => verifyHand(v, signer.publicKeyHex).ok)).toBe(true);
  expect(verifyChain(rewritten.slice(1)).every((c) => c.ok)).toBe(true);
  for (const [i, v] of rewritten.entries()) {
    const verdict = verifyHand(v, signer.publicKeyHex, announced[i]);
    expect(verdict.failed).toBe(i === 0 ? null : 'announced');
  }
});

describe('issue 31: rake, button, starting stacks, prev and the player\'s own seed', () => {
  const failedChecks = (v: ReturnType<typeof verifyHand>) => v.checks.filter((c) => !c.ok).map((c) => c.name);
  /** The hand's record changed by `f`, then re-hashed and re-signed with the dealer's key (only the dealer could). */
  const resigned = (view: HandView, f: (r: Record<string, any>) => void): HandView => {
    const v = clone(view);
    const r = JSON.parse(v.record!.text);
    f(r);
    v.record = signRecord(r, signer);
    return v;
  };

  test('each tamper fails its own check and no other', () => {
    const views = tableOfHands(3);
    const view = views[1]!;
    const options = { previous: views[0]! };
    expect(verifyHand(view, signer.publicKeyHex, undefined, options)).toMatchObject({ ok: true });
    expect(verifyHand(view, signer.publicKeyHex, undefined, options).checks.map((c) => c.name)).toEqual(
      ['commitment', 'cards', 'record', 'seats', 'button', 'rake', 'signature', 'prev'],
    );
    const check = (f: (r: Record<string, any>) => void, extra = {}) => failedChecks(verifyHand(resigned(view, f), signer.publicKeyHex, undefined, { ...options, ...extra }));
    expect(check((r) => { r.rake = String(BigInt(r.rake) + 1n); })).toEqual(['rake']);
    expect(check((r) => { r.button = r.button === 0 ? 2 : 0; })).toEqual(['button']);
    expect(check((r) => { r.seats[0].stack = '499'; })).toEqual(['seats']);
    expect(check((r) => { r.seats[0].playerId = 'someone-else'; })).toEqual(['seats']);
    expect(check((r) => { r.prev = GENESIS; })).toEqual(['prev']);
    // hand 1 must start the chain
    expect(failedChecks(verifyHand(resigned(views[0]!, (r) => { r.prev = 'f'.repeat(64); }), signer.publicKeyHex))).toEqual(['prev']);
    // the player's own seed: mixed in, or not
    const mine = view.deal!.contributions[0];
    if (mine) expect(verifyHand(view, signer.publicKeyHex, undefined, { seed: mine.seed }).checks.at(-1)).toMatchObject({ name: 'mixed', ok: true });
    expect(failedChecks(verifyHand(view, signer.publicKeyHex, undefined, { ...options, seed: 'not-my-seed' }))).toEqual(['mixed']);
  });

  test('an abandoned deal verifies, says no chip moved, and the chain runs across it', () => {
    const views = tableOfHands(3);
    // hand 2 abandoned instead: its deal revealed, its record chained to hand 1, hand 3 chained to it
    const second = views[1]!;
    const seats = [0, 2, 3, 5].map((seat) => ({ seat, playerId: `player-${seat}`, stack: '500' }));
    const abandoned = signRecord(abandonedRecord({
      tableId: 't1', handNumber: 2, handId: second.handId, prev: views[0]!.record!.hash, deal: second.deal!, seats,
    }), signer);
    const view2: HandView = { ...second, status: 'abandoned', history: [], record: abandoned };
    const view3 = resigned(views[2]!, (r) => { r.prev = abandoned.hash; });
    const chain = [views[0]!, view2, view3];
    expect(verifyHand(view2, signer.publicKeyHex, undefined, { previous: views[0]! })).toMatchObject({ ok: true });
    expect(verifyHand(view3, signer.publicKeyHex, undefined, { previous: view2 })).toMatchObject({ ok: true });
    expect(verifyChain(chain).map((c) => c.ok)).toEqual([true, true]);
    // an abandoned record that moves chips, or a finished view passed off as abandoned
    expect(failedChecks(verifyHand(resigned(view2, (r) => { r.stacks[0].stack = '400'; }), signer.publicKeyHex))).toEqual(['rake']);
    expect(failedChecks(verifyHand(resigned(view2, (r) => { r.rake = '1'; }), signer.publicKeyHex))).toEqual(['rake']);
    expect(failedChecks(verifyHand({ ...view2, status: 'finished' }, signer.publicKeyHex))).toEqual(['record']);
  });
});
