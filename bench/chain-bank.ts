// The chain-bank benchmark: confirmed deposits per second through the chain bank over HTTP, against
// the same permit-and-deposit transactions sent straight to anvil by viem, in the same run:
//   bank@N  N clients, each POSTing /api/deposit on the chain-bank role (a JWT, a permit signed by
//           a fresh player's wallet, a free seat of a chain table); a unit is a 200 `confirmed`
//           (signer recovered, the auth role's wallet read, register-and-deposit mined, the game's
//           credit callback landed);
//   raw@N   N clients sending the vault's registerAndDeposit for the same kind of permit straight
//           to the local anvil with viem (a second operator key) and waiting for its receipt; a unit
//           is a confirmed receipt.
// Their ratio is the price of the bank (goal: at least 0.5x). Permits, players and tables are made
// before each round (untimed). The bank's time per confirmed deposit is split into signature
// recovery, the auth read, the chain (submit and receipt), the credit callback and its own SQL
// (server/bank/deposit.ts depositPhases). Any answer other than 200 confirmed is a bug: failures make
// the exit code 1, as do vault balances that are not what the game and the raw case put there.
import { randomBytes, randomUUID } from 'node:crypto';
import { cpus } from 'node:os';
import type pg from 'pg';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { getChainId, waitForTransactionReceipt, writeContract } from 'viem/actions';
import { keccak256, stringToBytes, type Address, type Hex } from 'viem';
import { createKeyStore, type KeyStore } from '../server/auth/keys.ts';
import { benchJwtKey } from './lib/keys.ts';
import { loadConfig } from '../server/config/index.ts';
import { migrate } from '../server/db/migrate.ts';
import { createOwnerPool, createRolePool } from '../server/db/pools.ts';
import type { Platform } from '../server/platform.ts';
import { createLogger } from '../server/telemetry/index.ts';
import { publicClientFor, walletClientFor } from '../server/chain/client.ts';
import { CHIP_TOKEN, TABLE_VAULT } from '../server/chain/contracts.ts';
import { signPermit } from '../server/chain/dev-wallet.ts';
import { createChainBankChain } from '../server/chain/evm.ts';
import { ANVIL_DEV_KEYS } from '../server/chain/anvil.ts';
import type { Deployment, PermitParts } from '../server/chain/types.ts';
import { depositPhases } from '../server/bank/deposit.ts';
import { benchDatabase, fmtRate, fmtRatio, median, flagsOrUsage, table, timed } from './lib/harness.ts';
import { call, databaseLine, describeAnswer, Failures, interleavedRounds } from './lib/platform.ts';
import { baseUnitsToChips, chipsToBaseUnits } from '../server/units.generated.ts';

const USAGE = `usage: npm run bench -- chain-bank [--seconds N] [--rounds N] [--clients N]
  --seconds  measured seconds per case per round (default 3)
  --rounds   interleaved rounds; medians are taken over them (default 3)
  --clients  concurrent clients in both cases (default 8)
  An embedded PostgreSQL (or DATABASE_URL) and the chain bank's own local anvil are used.`;

const SECRET = 'bench-chain-bank-auth-secret-0123456789ab';
const ISSUER = 'https://auth.bench.local';
const SERVICE_KEY = 'bench-chain-bank-service-key-0123456789';
const CHIPS = 50n;
const SEATS = 9;
const log = (msg: string) => console.log(msg);

interface Slot { userId: string; key: Hex; wallet: Address; auth: Record<string, string>; tableId: string; seat: number; permit?: PermitParts }

/** The auth, game and chain-bank roles in this process, the chain bank's own anvil with its contracts. */
async function startChainPlatform(databaseUrl: string) {
  process.env.GRAPHILE_ENV ??= 'development';
  const { startPlatform } = await import('../server/platform.ts');
  const platform = await startPlatform({
    config: loadConfig({
      NODE_ENV: 'test', LOG_LEVEL: 'silent', PORT: '0', GAME_PORT: '0', CHAIN_BANK_PORT: '0', SERVICE_KEY, AUTH_SECRET: SECRET, AUTH_BASE_URL: ISSUER,
      ENABLE_TEST_AUTH: 'true', CHAIN_CONFIRM_WINDOW_MS: '60000', CHAIN_RECONCILE_INTERVAL_SECONDS: '3600',
    }),
    roles: ['auth', 'game', 'chain-bank'], log: createLogger('silent'), databaseUrl,
  });
  const bankRole = platform.roles.find((r) => r.role === 'chain-bank')! as unknown as { url: string; chain: { url: string; deployment: Deployment; minterKey: Hex } };
  return { platform, bank: bankRole.url, local: bankRole.chain };
}

type Local = Awaited<ReturnType<typeof startChainPlatform>>['local'];

/** The raw case sends as a second operator of the vault (granted by its admin, anvil's first key). */
async function rawOperator(local: Local) {
  const chainId = await getChainId(publicClientFor(local.url));
  const client = publicClientFor(local.url, chainId);
  const admin = walletClientFor(local.url, chainId, privateKeyToAccount(local.minterKey));
  const rawKey = ANVIL_DEV_KEYS[2]!;
  const grant = await writeContract(admin, {
    address: local.deployment.vault, abi: TABLE_VAULT.abi, functionName: 'grantRole',
    args: [keccak256(stringToBytes('OPERATOR_ROLE')), privateKeyToAccount(rawKey).address], account: admin.account!, chain: admin.chain,
  });
  await waitForTransactionReceipt(client, { hash: grant, pollingInterval: 20 });
  const raw = createChainBankChain({ rpcUrl: local.url, operatorKey: rawKey, deployment: local.deployment, pollingIntervalMs: 20 });
  return { chainId, client, admin, raw };
}

type Chain = Awaited<ReturnType<typeof rawOperator>>;

/** A player for a slot: bridged, its wallet linked, a day's access JWT. */
async function slotUser(owner: pg.Pool, keys: KeyStore, slot: Slot, chainId: number) {
  const invite = `inv_${randomBytes(8).toString('hex')}`;
  await owner.query('select auth.mint_invite($1)', [invite]);
  const { rows } = await owner.query("select user_id from auth.bridge_sign_in('oidc', $1, null, $2)", [randomUUID(), invite]);
  slot.userId = rows[0].user_id;
  await owner.query("select * from auth.link_wallet($1, $2, 'evm', $3)", [rows[0].user_id, slot.wallet, chainId]);
  slot.auth = { authorization: `Bearer ${await keys.sign({ sub: rows[0].user_id, walletAddress: null }, { ttlSeconds: 86_400 })}` };
}

/** Makes `n` fresh slots: players with linked, funded wallets and signed permits, each at a free seat of a new chain table. */
async function slotMaker(owner: pg.Pool, keys: KeyStore, local: Local, chain: Chain) {
  let minterNonce = await chain.client.getTransactionCount({ address: chain.admin.account!.address, blockTag: 'pending' });
  return async (n: number, withUser: boolean): Promise<Slot[]> => {
    const slots: Slot[] = [];
    const deadline = BigInt(Math.floor(Date.now() / 1000) + 3600);
    let lastMint: Hex | undefined;
    for (let i = 0; i < n; i++) {
      const key = generatePrivateKey();
      const wallet = privateKeyToAccount(key).address;
      lastMint = await writeContract(chain.admin, {
        address: local.deployment.token, abi: CHIP_TOKEN.abi, functionName: 'mint', args: [wallet, chipsToBaseUnits(CHIPS)],
        account: chain.admin.account!, chain: chain.admin.chain, nonce: minterNonce++,
      });
      slots.push({ userId: '', key, wallet, auth: {}, tableId: `bench-${randomUUID().slice(0, 12)}`, seat: 0 });
      if (withUser) await slotUser(owner, keys, slots[i]!, chain.chainId);
    }
    // nine players to a table
    for (let i = 0; i < slots.length; i++) {
      slots[i]!.tableId = slots[i - (i % SEATS)]!.tableId;
      slots[i]!.seat = i % SEATS;
    }
    if (withUser) {
      for (const tableId of new Set(slots.map((s) => s.tableId))) {
        await owner.query(
          `insert into game.tables (table_id, game_type, settings, money_kind, bank) values ($1, 'poker', $2, 'real', 'chain')`,
          [tableId, JSON.stringify({ smallBlind: 1, bigBlind: 2, minBuyIn: 20, maxBuyIn: 200, maxPlayers: SEATS, rakePercent: 0, turnTimeSec: 30 })],
        );
      }
    }
    if (lastMint) await waitForTransactionReceipt(chain.client, { hash: lastMint, pollingInterval: 20 });
    for (const s of slots) s.permit = await signPermit({ rpcUrl: local.url, deployment: local.deployment, ownerKey: s.key, chips: CHIPS, deadline, nonce: 0n });
    return slots;
  };
}

/** The two cases, each taking prepared slots from its queue; what they confirmed and their best rates. */
function depositCases(bank: string, raw: Chain['raw'], clients: number, failures: Failures) {
  const state = { queues: { bank: [] as Slot[], raw: [] as Slot[] }, best: { bank: 100, raw: 400 }, confirmedBank: 0, confirmedRaw: 0 };
  const take = (q: Slot[]) => {
    const slot = q.shift();
    if (!slot) throw new Error('out of prepared deposits');
    return slot;
  };
  const viaBank = async () => {
    const slot = take(state.queues.bank);
    const p = slot.permit!;
    const a = await call(`${bank}/api/deposit`, { headers: slot.auth, body: {
      tableId: slot.tableId, seatIndex: slot.seat, amount: Number(CHIPS), signerAddress: slot.wallet,
      permit: { v: p.v, r: p.r, s: p.s, deadline: p.deadline.toString() },
    } });
    if (a.status === 200 && a.body?.status === 'confirmed') { state.confirmedBank++; return 1; }
    failures.add(`bank ${a.status} ${a.body?.error ?? a.body?.status}`, describeAnswer(a));
    return 0;
  };
  const straight = async () => {
    const slot = take(state.queues.raw);
    const tx = await raw.submitDeposit({ tableId: slot.tableId, owner: slot.wallet, chips: CHIPS, permit: slot.permit! });
    const outcome = await raw.waitForOutcome(tx, 60_000);
    if (outcome.status === 'confirmed') { state.confirmedRaw++; return 1; }
    failures.add(`raw ${outcome.status}`, JSON.stringify(outcome));
    return 0;
  };
  const measured = (which: 'bank' | 'raw', op: () => Promise<number>) => async (s: number) => {
    const r = await timed(clients, s, op);
    state.best[which] = Math.max(state.best[which], r.perSecond);
    return r.perSecond;
  };
  const cases = [
    { name: `bank@${clients}`, unit: 'confirmed deposits', run: measured('bank', viaBank) },
    { name: `raw@${clients}`, unit: 'confirmed receipts', run: measured('raw', straight) },
  ];
  return { cases, state };
}

type Cases = ReturnType<typeof depositCases>['cases'];

/** The rates, their ratio, and the bank's time per confirmed deposit by phase. */
function report(cases: Cases, results: Map<string, number[]>, busy: Map<string, number[]>, clients: number, phasesAtStart: typeof depositPhases) {
  const m = (name: string) => median(results.get(name)!);
  const rows = cases.map((c) => [c.name, fmtRate(m(c.name)), c.unit, results.get(c.name)!.map(fmtRate).join(' / '), `${Math.round(median(busy.get(c.name)!) * 100)}%`]);
  log('\nmedian rates over rounds (node busy: this process runs the client, the roles and viem; anvil is its own process)');
  log(table(['case', 'per second (median)', 'unit', 'rounds', 'node busy'], rows));
  const ratios = results.get(cases[0]!.name)!.map((b, i) => b / results.get(cases[1]!.name)![i]!);
  log(`\nconfirmed deposits through the bank vs straight to anvil at ${clients} clients = ${fmtRatio(m(cases[0]!.name) / m(cases[1]!.name))} (goal 0.5x; median of within-round ratios: ${ratios.map(fmtRatio).join(', ')})`);
  const n = depositPhases.deposits - phasesAtStart.deposits;
  const per = (k: 'recoverMs' | 'authMs' | 'chainMs' | 'callbackMs' | 'sqlMs') => (depositPhases[k] - phasesAtStart[k]) / Math.max(1, n);
  const total = per('recoverMs') + per('authMs') + per('chainMs') + per('callbackMs') + per('sqlMs');
  log(`one confirmed deposit through the bank (${n} measured, ms each and share): ${(['recoverMs', 'authMs', 'chainMs', 'callbackMs', 'sqlMs'] as const)
    .map((k) => `${k.replace('Ms', '')} ${per(k).toFixed(1)} (${Math.round((per(k) / total) * 100)}%)`).join(', ')}`);
}

/** The books: every confirmed deposit is in the vault, credited once. */
async function checkBooks(owner: pg.Pool, local: Local, chain: Chain, confirmed: { bank: number; raw: number }, failures: Failures) {
  const { rows: credited } = await owner.query("select count(*)::int as n from bank.deposit_intents where status = 'confirmed' and credited_at is not null");
  if (credited[0].n !== confirmed.bank) failures.add('books', `${credited[0].n} credited deposits for ${confirmed.bank} confirmed answers`);
  const vaultTotal = (await chain.client.readContract({ address: local.deployment.token, abi: CHIP_TOKEN.abi, functionName: 'balanceOf', args: [local.deployment.vault] })) as bigint;
  const expected = BigInt(confirmed.bank + confirmed.raw) * chipsToBaseUnits(CHIPS);
  if (vaultTotal !== expected) failures.add('books', `vault holds ${vaultTotal} base units, expected ${expected}`);
  log(`books: ${confirmed.bank} bank deposits credited once, vault holds ${baseUnitsToChips(vaultTotal)} chips = ${confirmed.bank + confirmed.raw} deposits x ${CHIPS}`);
}

export default async function chainBankBench(args: string[]): Promise<number> {
  const flags = flagsOrUsage(args, { seconds: 3, rounds: 3, clients: 8 }, USAGE);
  if (!flags) return 2;
  const { seconds } = flags;
  const rounds = Math.max(1, Math.round(flags.rounds));
  const clients = Math.max(1, Math.round(flags.clients));
  const db = await benchDatabase(log);
  let owner: pg.Pool | undefined;
  let authPool: pg.Pool | undefined;
  let platform: Platform | undefined;
  const failures = new Failures();
  try {
    await migrate(db.url);
    owner = createOwnerPool(db.url, 4);
    authPool = createRolePool(db.url, 'poker_auth', { max: 2, applicationName: 'bench-chain-auth' });
    log(await databaseLine(owner, db.source));
    await owner.query("insert into cage.switches (name, enabled) values ('real_money', true) on conflict (name) do update set enabled = true");
    const started = await startChainPlatform(db.url);
    platform = started.platform;
    const { bank, local } = started;
    log(`client: node ${process.version}; ${clients} clients in both cases; the auth, game and chain-bank roles and anvil (${local.url}) on this machine; ${cpus().length} CPUs shared`);
    const chain = await rawOperator(local);
    const makeSlots = await slotMaker(owner, createKeyStore(authPool, { privateKey: await benchJwtKey(), issuer: ISSUER }), local, chain);
    const { cases, state } = depositCases(bank, chain.raw, clients, failures);
    const phasesAtStart = { ...depositPhases };
    const setupStart = performance.now();
    const { results, busy } = await interleavedRounds({
      cases, rounds, seconds, failures, noun: 'failed deposit', log,
      // permits, players and tables for the round, untimed
      beforeRound: async (round) => {
        const span = round < 0 ? Math.min(1, seconds) : seconds;
        const { queues, best } = state;
        queues.bank.push(...(await makeSlots(Math.ceil(best.bank * span * 2.5) + clients * 2 - queues.bank.length, true)));
        queues.raw.push(...(await makeSlots(Math.ceil(best.raw * span * 2.5) + clients * 2 - queues.raw.length, false)));
      },
    });
    log(`(players, permits and tables made before each round in ${((performance.now() - setupStart) / 1000).toFixed(1)} s in all, untimed)`);
    report(cases, results, busy, clients, phasesAtStart);
    await checkBooks(owner, local, chain, { bank: state.confirmedBank, raw: state.confirmedRaw }, failures);
    if (failures.count) {
      log(`\nFAILURES (${failures.count}):\n${failures.lines().join('\n')}`);
      return 1;
    }
    return 0;
  } finally {
    await platform?.stop().catch(() => undefined);
    await authPool?.end().catch(() => undefined);
    await owner?.end().catch(() => undefined);
    await db.stop();
  }
}
