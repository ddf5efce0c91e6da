// The hand verifier (issue 23, issue 31; docs/dealer.md, "Checking a hand"): what `npm run
// verify:hand` runs on the hands a player reads from GET /api/hands/:handId, and what anyone can run
// offline on a saved copy. Each check is named, so a failure says which one failed (in this order):
//   commitment the revealed server seed, with the hand it was committed for (table, number, hand id),
//              gives the commitment published before the hand (v2); a v1 or seeded-v1 deal, whose
//              commitment does not name the hand, fails unless the caller allows legacy deals;
//   cards      the deck recomputed from the revealed seeds deals the viewer's hole cards, every shown
//              hand and the board, each where the engine takes it from (an abandoned record deals none);
//   record     the record's text hashes to its hash, and the record says what the hand view says
//              (hand, table, number, status, deal, board, actions, shown cards, final stacks);
//   seats      the record's seats (seat, player, starting stack) are the hand's hand_started seats;
//   button     the record's button is the hand's button (-1 in an abandoned record: nothing dealt);
//   rake       the record's rake is the rake of the hand's end; an abandoned record's is "0" and its
//              final stacks are its starting stacks (no chip moved);
//   signature  the dealer's Ed25519 signature over the record's text verifies with the dealer's key
//              (the one the hand names, or the key the caller pinned from GET /api/dealer/key);
//   announced  (with what the player kept of the hand's hand_result) the record's hash and signature
//              and the revealed deal are the ones announced when the hand ended: a record rewritten
//              later, even one re-signed with the dealer's key and re-chained, fails here;
//   prev       (the table's hand before it held, or this is hand 1) the record's `prev` is that
//              record's hash (GENESIS for hand 1), abandoned hands included;
//   mixed      (the player's own seed given) the seed is among the contributions the deal revealed;
//   chain      (several hands of one table) each record's `prev` is the hash of the table's record
//              before it, where the caller holds both, across abandoned hands.
// Pure apart from hashing: no I/O.
import { canonicalJson, verifyEd25519 } from '../../crypto/signing.ts';
import { parseCards, cardToString } from '../poker/cards.ts';
import { commitmentOf, dealtFrom, DEAL_ALGORITHM, deckOf, fromHex, handCommitmentOf, type DealReveal } from '../poker/fair-deal.ts';
import { GENESIS, hashOf, type HandRecord, type SignedRecord } from './hand-record.ts';

export const CHECKS = ['commitment', 'cards', 'record', 'seats', 'button', 'rake', 'signature', 'announced', 'prev', 'mixed', 'chain'] as const;
export type CheckName = (typeof CHECKS)[number];

/** A hand as GET /api/hands/:handId shows it (the fields the verifier reads). */
export interface HandView {
  handId: string;
  tableId: string;
  handNumber: number;
  /** finished or abandoned (as the route answers it; absent in older saved copies). */
  status?: string;
  history: { type: string; seat?: number; cards?: string[]; [k: string]: unknown }[];
  deal: DealReveal | null;
  record: SignedRecord | null;
  /** When the hand ended (ISO), as the route answers it: which pinned key was in use then. */
  endedAt?: string | null;
}

/** A dealer key as GET /api/dealer/key lists it among the pinned ones. */
export interface PinnedDealerKey {
  publicKey: string;
  pinnedAt: string;
  retiredAt: string | null;
}

/** The dealer keys a caller trusts: one key (hex), or the pinned list with when each was in use. */
export type TrustedKeys = string | readonly PinnedDealerKey[];

export interface Check {
  name: CheckName;
  ok: boolean;
  detail: string;
}

export interface Verdict {
  handId: string;
  ok: boolean;
  /** The first check that failed, if any. */
  failed: CheckName | null;
  checks: Check[];
}

const pass = (name: CheckName, detail: string): Check => ({ name, ok: true, detail });
const fail = (name: CheckName, detail: string): Check => ({ name, ok: false, detail });

function parseRecord(text: string): HandRecord | null {
  try {
    const value = JSON.parse(text) as HandRecord;
    return value && typeof value === 'object' && value.v === 1 ? value : null;
  } catch {
    return null;
  }
}

/** Equal as canonical JSON: the same facts whatever the order of their keys. */
const same = (a: unknown, b: unknown) => canonicalJson(a) === canonicalJson(b);

/** What the view's history says, in the record's terms. */
function viewFacts(view: HandView) {
  const board = view.history.filter((e) => e.type === 'board').flatMap((e) => e.cards ?? []).join('');
  const actions = view.history.filter((e) => e.type === 'action').map((e) => ({ seat: e.seat, action: e.action, to: String(e.to), timeout: e.timeout }));
  const shown = view.history.filter((e) => e.type === 'show').map((e) => ({ seat: e.seat, cards: (e.cards ?? []).join('') }));
  const ended = view.history.find((e) => e.type === 'hand_ended') as { stacks?: { seat: number; stack: unknown }[] } | undefined;
  const stacks = (ended?.stacks ?? []).map((s) => ({ seat: s.seat, stack: String(s.stack) }));
  return { board, actions, shown, stacks };
}

function checkRecord(view: HandView, record: HandRecord | null, signed: SignedRecord): Check {
  if (hashOf(signed.text) !== signed.hash) return fail('record', `the record's text hashes to ${hashOf(signed.text)}, not ${signed.hash}`);
  if (!record) return fail('record', 'the record is not a version-1 hand record');
  const facts = viewFacts(view);
  const abandoned = record.abandoned === true;
  const differs = [
    record.handId !== view.handId && 'handId', record.tableId !== view.tableId && 'tableId', record.handNumber !== view.handNumber && 'handNumber',
    view.status !== undefined && (view.status === 'abandoned') !== abandoned && 'status',
    !same(record.deal, view.deal) && 'deal', record.board !== facts.board && 'board', !same(record.actions, facts.actions) && 'actions',
    !same(record.shown, facts.shown) && 'shown', !abandoned && !same(record.stacks, facts.stacks) && 'stacks',
  ].filter(Boolean);
  return differs.length ? fail('record', `the record and the hand differ in: ${differs.join(', ')}`) : pass('record', `hash ${signed.hash}`);
}

/** Why the record's key is not one the caller trusts for this hand, or null. */
function untrusted(signed: SignedRecord, trusted: TrustedKeys, endedAt?: string | null): string | null {
  const key = signed.publicKey.toLowerCase();
  if (typeof trusted === 'string') return trusted.toLowerCase() === key ? null : `signed with ${signed.publicKey}, not the dealer key ${trusted}`;
  const pin = trusted.find((k) => k.publicKey.toLowerCase() === key);
  if (!pin) return `signed with ${signed.publicKey}, which is not a pinned dealer key`;
  const ended = endedAt ? Date.parse(endedAt) : NaN;
  if (Number.isNaN(ended)) return pin.retiredAt === null ? null : `signed with ${signed.publicKey}, a retired dealer key, and the hand says not when it ended`;
  if (Date.parse(pin.pinnedAt) > ended) return `signed with ${signed.publicKey}, pinned only after the hand ended`;
  if (pin.retiredAt !== null && Date.parse(pin.retiredAt) < ended) return `signed with ${signed.publicKey}, retired before the hand ended`;
  return null;
}

function checkSignature(signed: SignedRecord, trusted?: TrustedKeys, endedAt?: string | null): Check {
  const problem = trusted === undefined ? null : untrusted(signed, trusted, endedAt);
  if (problem) return fail('signature', problem);
  const ok = verifyEd25519(new TextEncoder().encode(signed.text), fromHex(signed.signature), fromHex(signed.publicKey));
  return ok ? pass('signature', `dealer key ${signed.publicKey}`) : fail('signature', 'the signature does not verify with the dealer key');
}

/** What the caller allows beyond a v2 deal, and what it brings to the optional checks. */
export interface VerifyOptions {
  /** Accept v1 and seeded-v1 deals (their commitment does not name the hand: hands dealt before issue 31, test tables). */
  legacy?: boolean;
  /** The player's own seed for this hand: it must be among the revealed contributions (`mixed`). */
  seed?: string;
  /** The table's hand before this one (number − 1), as held by the caller (`prev`). */
  previous?: HandView;
}

function checkCommitment(view: HandView, deal: DealReveal, legacy: boolean): Check {
  if (!/^([0-9a-f]{2})+$/i.test(deal.serverSeed)) return fail('commitment', 'the revealed server seed is not hex (an abandoned deal whose seal did not open reveals none)');
  const seed = fromHex(deal.serverSeed);
  if (deal.algorithm === DEAL_ALGORITHM) {
    let computed: string;
    try {
      computed = handCommitmentOf(seed, { tableId: view.tableId, handNumber: view.handNumber, handId: view.handId });
    } catch (err) {
      return fail('commitment', `no commitment for this hand: ${(err as Error).message}`);
    }
    return computed === deal.commitment.toLowerCase()
      ? pass('commitment', `SHA-256(v2 ‖ server seed ‖ ${view.tableId} ‖ ${view.handNumber} ‖ ${view.handId}) = ${deal.commitment}`)
      : fail('commitment', `the server seed committed for hand ${view.handId} (${view.tableId} #${view.handNumber}) gives ${computed}, but the commitment published was ${deal.commitment}`);
  }
  if (!legacy) return fail('commitment', `${deal.algorithm}'s commitment does not commit the hand (the dealer could pick its hand id after the contributions): accepted only as a legacy deal`);
  const computed = commitmentOf(seed);
  return computed === deal.commitment.toLowerCase()
    ? pass('commitment', `SHA-256(server seed) = ${deal.commitment} (legacy ${deal.algorithm})`)
    : fail('commitment', `SHA-256(server seed) = ${computed}, but the commitment published was ${deal.commitment}`);
}

type Started = { button?: number; seats?: { seat: number; playerId?: unknown; stack?: unknown }[] } | undefined;
const startedOf = (view: HandView) => view.history.find((e) => e.type === 'hand_started') as Started;

function checkSeats(view: HandView, record: HandRecord): Check {
  const started = startedOf(view);
  if (record.abandoned && !started) return pass('seats', `abandoned: ${record.seats.length} funded seats named, with their stacks`);
  const seats = (started?.seats ?? []).map((s) => ({ seat: s.seat, playerId: String(s.playerId), stack: String(s.stack) }));
  return same(seats, record.seats)
    ? pass('seats', `${seats.length} seats and their starting stacks`)
    : fail('seats', `the record's seats ${canonicalJson(record.seats)} are not the hand's ${canonicalJson(seats)}`);
}

function checkButton(view: HandView, record: HandRecord): Check {
  const button = record.abandoned ? startedOf(view)?.button ?? -1 : startedOf(view)?.button;
  return record.button === button ? pass('button', `seat ${button}`) : fail('button', `the record's button is ${record.button}, the hand's ${String(button)}`);
}

function checkRake(view: HandView, record: HandRecord): Check {
  if (record.abandoned) {
    const starting = record.seats.map((s) => ({ seat: s.seat, stack: s.stack }));
    return record.rake === '0' && same(starting, record.stacks)
      ? pass('rake', 'abandoned: rake 0, every stack as it started')
      : fail('rake', `an abandoned record moves chips: rake ${record.rake}, stacks ${canonicalJson(record.stacks)} from ${canonicalJson(starting)}`);
  }
  const ended = view.history.find((e) => e.type === 'hand_ended') as { rake?: unknown } | undefined;
  const rake = ended?.rake === undefined ? undefined : String(ended.rake);
  return record.rake === rake ? pass('rake', `rake ${rake}`) : fail('rake', `the record's rake is ${record.rake}, the hand's end took ${String(rake)}`);
}

function checkPrev(view: HandView, record: HandRecord, previous?: HandView): Check | null {
  if (view.handNumber === 1) {
    return record.prev === GENESIS ? pass('prev', 'the table\'s first record') : fail('prev', `hand 1 names ${record.prev} before it, not ${GENESIS}`);
  }
  if (!previous?.record || previous.tableId !== view.tableId || previous.handNumber !== view.handNumber - 1) return null;
  return record.prev === previous.record.hash
    ? pass('prev', `follows hand ${previous.handNumber}${previous.status === 'abandoned' ? ' (abandoned)' : ''}, ${previous.record.hash}`)
    : fail('prev', `names ${record.prev} before it, but hand ${previous.handNumber}'s record hashes to ${previous.record.hash}`);
}

function checkMixed(deal: DealReveal, seed: string): Check {
  const at = deal.contributions.find((c) => c.seed === seed);
  return at ? pass('mixed', `your seed is mixed in at seat ${at.seat}`) : fail('mixed', `your seed is not among the ${deal.contributions.length} contributions revealed`);
}

function checkCards(view: HandView, deal: DealReveal, record: HandRecord | null): Check {
  if (record?.abandoned && !startedOf(view)) return pass('cards', 'abandoned: no card dealt in the record (its deck follows from the revealed seeds)');
  const started = view.history.find((e) => e.type === 'hand_started') as { button?: number; seats?: { seat: number }[] } | undefined;
  const seats = (started?.seats ?? record?.seats ?? []).map((s) => s.seat);
  const button = started?.button ?? record?.button;
  if (seats.length < 2 || button === undefined) return fail('cards', 'the hand does not say who was dealt in');
  let dealt: ReturnType<typeof dealtFrom>;
  try {
    dealt = dealtFrom(deckOf(deal, view.handId), seats, button);
  } catch (err) {
    return fail('cards', `no deck from the revealed deal: ${(err as Error).message}`);
  }
  const text = (cards: number[]) => cards.map(cardToString).join('');
  const seen: string[] = [];
  for (const e of view.history) {
    if (e.type !== 'hole_cards' && e.type !== 'show') continue;
    const expected = dealt.hole.get(e.seat!);
    const shown = parseCards((e.cards ?? []).join(''));
    if (!expected || text(expected) !== text(shown)) return fail('cards', `seat ${e.seat} holds ${text(shown)} in the hand, the deck deals it ${expected ? text(expected) : 'nothing'}`);
    seen.push(`seat ${e.seat}`);
  }
  const board = view.history.filter((e) => e.type === 'board').flatMap((e) => e.cards ?? []).join('');
  const expectedBoard = text(dealt.board).slice(0, board.length);
  if (board !== expectedBoard) return fail('cards', `the board is ${board}, the deck deals ${expectedBoard}`);
  return pass('cards', `the deck deals ${[...seen, `the board ${board || '(none)'}`].join(', ')}`);
}

/** What a player kept of a hand's `hand_result` (the message as received). */
export interface Announced {
  handId: string;
  deal: DealReveal;
  record: { hash: string; signature: string };
}

function checkAnnounced(view: HandView, announced: Announced): Check {
  const differs = [
    announced.record?.hash !== view.record!.hash && 'the record\'s hash', announced.record?.signature !== view.record!.signature && 'its signature',
    !same(announced.deal, view.deal) && 'the revealed deal',
  ].filter(Boolean);
  return differs.length
    ? fail('announced', `the hand as stored differs from its hand_result in ${differs.join(', ')}: rewritten after it was announced`)
    : pass('announced', `the record announced in hand_result, ${announced.record.hash}`);
}

/**
 * Verifies one hand; `pinnedKey`: the dealer key the caller trusts (hex), or the pinned keys with
 * when each was in use (GET /api/dealer/key's `pinned`), else the hand's own;
 * `announced`: the hand's hand_result as the player received it, when they kept it; `options`: legacy
 * deals allowed, the player's own seed, the table's hand before it.
 */
export function verifyHand(view: HandView, pinnedKey?: TrustedKeys, announced?: Announced, options: VerifyOptions = {}): Verdict {
  const checks: Check[] = [];
  if (!view.record) checks.push(fail('record', 'the hand has no signed record (dealt before records were kept, or not over)'));
  if (!view.deal) checks.push(fail('commitment', 'the hand reveals no deal (dealt before commit and reveal, or not over)'));
  if (view.record && view.deal) {
    const record = parseRecord(view.record.text);
    checks.push(checkCommitment(view, view.deal, options.legacy === true), checkCards(view, view.deal, record), checkRecord(view, record, view.record));
    if (record) checks.push(checkSeats(view, record), checkButton(view, record), checkRake(view, record));
    checks.push(checkSignature(view.record, pinnedKey, view.endedAt));
    if (announced) checks.push(checkAnnounced(view, announced));
    const prev = record && checkPrev(view, record, options.previous);
    if (prev) checks.push(prev);
    if (options.seed !== undefined) checks.push(checkMixed(view.deal, options.seed));
  }
  const failed = checks.find((c) => !c.ok)?.name ?? null;
  return { handId: view.handId, ok: failed === null, failed, checks };
}

/** The chain between hands of one table the caller holds: consecutive numbers must link. */
export function verifyChain(views: readonly HandView[]): Check[] {
  const byTable = new Map<string, { n: number; hash: string; prev: string }[]>();
  for (const v of views) {
    const record = v.record ? parseRecord(v.record.text) : null;
    if (!record || !v.record) continue;
    const list = byTable.get(v.tableId) ?? [];
    list.push({ n: v.handNumber, hash: v.record.hash, prev: record.prev });
    byTable.set(v.tableId, list);
  }
  const checks: Check[] = [];
  for (const [tableId, list] of byTable) {
    list.sort((a, b) => a.n - b.n);
    for (let i = 1; i < list.length; i++) {
      const [a, b] = [list[i - 1]!, list[i]!];
      if (b.n !== a.n + 1) continue;
      checks.push(b.prev === a.hash
        ? pass('chain', `${tableId} hand ${b.n} follows hand ${a.n}`)
        : fail('chain', `${tableId} hand ${b.n} names ${b.prev} before it, but hand ${a.n}'s record hashes to ${a.hash}`));
    }
  }
  return checks;
}
