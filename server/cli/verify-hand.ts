// `npm run verify:hand -- <handId> [<handId> ...]`: a player checks the deal and the record of their
// hands (issue 23; the checks are server/game/hands/verify-hand.ts's, the algorithm docs/dealer.md's).
//   online   each hand from GET /api/hands/:handId on the game role (GAME_URL, or --game-url, else
//            http://HOST:GAME_PORT as `npm start` prints it), as the player whose access JWT is in
//            POKER_TOKEN (never a flag: it would show in the process list); the dealer keys from GET
//            /api/dealer/key (every pinned key, each trusted for the hands that ended while it was in
//            use) unless --key pins one;
//   offline  --file hands.json: a saved hand (the route's answer), a list of them, or { hands: [...] };
//            the hand ids given pick from it (none: every hand in the file). Without --key the key
//            each record names is used, and the output says it was not pinned.
//   --announced results.json: the hand_result messages the player received (a list, or
//            { results: [...] }), as a client keeps them: each hand's stored record must be the one
//            announced then (a record rewritten later fails, even re-signed and re-chained).
//   --seed SEED: the seed the player contributed (deal_seed) to the hand(s) given: it must be among
//            the contributions each deal revealed (`mixed`).
//   --legacy: accept deals whose commitment does not name the hand (sha256-fisher-yates-v1, dealt
//            before issue 31, and seeded-v1 test tables); refused otherwise.
// Several hands of one table are also checked as a chain, and each hand against its predecessor
// (hand n − 1, abandoned or not: `prev`), taken from the hands given, the rest of --file, or online
// from the player's own list of that table's hands. Exit codes: 0 every check passed, 1 a
// check failed, 2 usage or configuration, 3 a hand or the key could not be read.
import { readFile } from 'node:fs/promises';
import { ConfigError, loadConfig } from '../config/index.ts';
import {
  verifyChain, verifyHand, type Announced, type Check, type HandView, type PinnedDealerKey, type TrustedKeys, type Verdict,
} from '../game/hands/verify-hand.ts';
import { callJson, Refusal, roleUrl, Unreachable, UsageError } from './ops/client.ts';

const USAGE = 'npm run verify:hand -- <handId> [<handId> ...] [--file hands.json] [--announced results.json] [--seed SEED] [--legacy] [--key HEX] [--game-url URL] [--json]';
const VALUE_FLAGS = new Set(['file', 'announced', 'key', 'game-url', 'seed']);
const SWITCHES = new Set(['json', 'help', 'legacy']);

function parse(argv: string[]) {
  const ids: string[] = [];
  const flags: Record<string, string | true> = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (!a.startsWith('--')) {
      ids.push(a);
      continue;
    }
    const [key, inline] = a.slice(2).split(/=(.*)/s, 2) as [string, string | undefined];
    if (!SWITCHES.has(key) && !VALUE_FLAGS.has(key)) throw new UsageError(`unknown flag --${key}`);
    if (VALUE_FLAGS.has(key)) {
      const value = inline ?? argv[++i];
      if (value === undefined || value === '') throw new UsageError(`--${key} needs a value`);
      flags[key] = value;
    } else flags[key] = true;
  }
  if (typeof flags.key === 'string' && !/^[0-9a-fA-F]{64}$/.test(flags.key)) throw new UsageError('--key: 64 hex characters (an ed25519 public key)');
  return { ids, flags };
}

/** A JSON file of one item, a list, or `{ [key]: [...] }`: the list. */
async function listIn<T>(flag: string, path: string, key: string): Promise<T[]> {
  let value: unknown;
  try {
    value = JSON.parse(await readFile(path, 'utf8'));
  } catch (err) {
    throw new UsageError(`--${flag} ${path}: ${(err as Error).message}`);
  }
  const listed = (value as Record<string, unknown> | null)?.[key];
  return (Array.isArray(value) ? value : Array.isArray(listed) ? listed : [value]) as T[];
}

async function fromFile(path: string, ids: string[]): Promise<HandView[]> {
  const list = await listIn<HandView>('file', path, 'hands');
  const picked = ids.length ? list.filter((h) => ids.includes(h?.handId)) : list;
  const missing = ids.filter((id) => !picked.some((h) => h.handId === id));
  if (missing.length) throw new UsageError(`--file ${path} holds no hand ${missing.join(', ')}`);
  return picked;
}

/**
 * The hands just before the ones given (number − 1 at the same table) that the player may read: found
 * in the player's own list of that table's hands (abandoned deals included), fetched for `prev`.
 */
async function predecessors(game: string, token: string, views: HandView[]): Promise<HandView[]> {
  const headers = { authorization: `Bearer ${token}` };
  const found: HandView[] = [];
  for (const v of views) {
    if (v.handNumber <= 1 || views.some((p) => p.tableId === v.tableId && p.handNumber === v.handNumber - 1)) continue;
    const { hands } = await callJson<{ hands: { handId: string; handNumber: number }[] }>(
      `${game}/api/hands?tableId=${encodeURIComponent(v.tableId)}&limit=200`, { what: `the hands of ${v.tableId}`, headers },
    );
    const before = hands.find((h) => h.handNumber === v.handNumber - 1);
    if (before) found.push(await callJson<HandView>(`${game}/api/hands/${encodeURIComponent(before.handId)}`, { what: `hand ${before.handId}`, headers }));
  }
  return found;
}

async function online(ids: string[], flags: Record<string, string | true>): Promise<{ views: HandView[]; key: TrustedKeys; earlier: HandView[] }> {
  if (!ids.length) throw new UsageError(`which hands? ${USAGE}`);
  const token = process.env.POKER_TOKEN;
  if (!token) throw new UsageError('set POKER_TOKEN to your access JWT (or use --file for a saved hand)');
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(err.message);
    throw err;
  }
  const game = roleUrl(config, 'game', flags);
  // --key, or every key the platform pinned, each trusted for the hands that ended while it was in use
  const key: TrustedKeys = typeof flags.key === 'string' ? flags.key
    : await callJson<{ publicKey: string; pinned?: PinnedDealerKey[] }>(`${game}/api/dealer/key`, { what: 'dealer key' }).then((k) => k.pinned ?? k.publicKey);
  const views: HandView[] = [];
  for (const id of ids) {
    views.push(await callJson<HandView>(`${game}/api/hands/${encodeURIComponent(id)}`, { what: `hand ${id}`, headers: { authorization: `Bearer ${token}` } }));
  }
  return { views, key, earlier: await predecessors(game, token, views) };
}

const line = (c: Check) => `  ${c.ok ? 'ok    ' : 'FAILED'} ${c.name}: ${c.detail}`;

function print(verdicts: Verdict[], chain: Check[], pinned: boolean) {
  if (!pinned) process.stdout.write('note: no --key given: each record is checked against the key it names, not one you trust\n');
  for (const v of verdicts) process.stdout.write(`hand ${v.handId}: ${v.ok ? 'verified' : `FAILED (${v.failed})`}\n${v.checks.map(line).join('\n')}\n`);
  if (chain.length) process.stdout.write(`chain:\n${chain.map(line).join('\n')}\n`);
}

async function main(argv: string[]): Promise<number> {
  const { ids, flags } = parse(argv);
  if (flags.help === true) {
    process.stdout.write(`usage: ${USAGE}\n`);
    return 0;
  }
  const { views, key, earlier } = typeof flags.file === 'string'
    ? { views: await fromFile(flags.file, ids), key: typeof flags.key === 'string' ? flags.key : undefined, earlier: await fromFile(flags.file, []) }
    : await online(ids, flags);
  const announced = typeof flags.announced === 'string'
    ? new Map((await listIn<Announced>('announced', flags.announced, 'results')).filter((r) => r?.handId).map((r) => [r.handId, r]))
    : new Map<string, Announced>();
  const options = { legacy: flags.legacy === true, seed: typeof flags.seed === 'string' ? flags.seed : undefined };
  const previous = (v: HandView) => [...views, ...earlier].find((p) => p.tableId === v.tableId && p.handNumber === v.handNumber - 1);
  const verdicts = views.map((v) => verifyHand(v, key, announced.get(v.handId), { ...options, previous: previous(v) }));
  const chain = verifyChain(views);
  if (flags.json === true) process.stdout.write(`${JSON.stringify({ hands: verdicts, chain, dealerKey: key ?? null }, null, 2)}\n`);
  else print(verdicts, chain, key !== undefined);
  return verdicts.every((v) => v.ok) && chain.every((c) => c.ok) ? 0 : 1;
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (err) {
  if (err instanceof UsageError) {
    process.stderr.write(`usage: ${err.message}\n  ${USAGE}\n`);
    process.exitCode = 2;
  } else if (err instanceof Refusal || err instanceof Unreachable) {
    process.stderr.write(`${err.message}\n`);
    process.exitCode = 3;
  } else {
    process.stderr.write(`verify:hand failed: ${(err as Error).message}\n`);
    process.exitCode = 3;
  }
}
