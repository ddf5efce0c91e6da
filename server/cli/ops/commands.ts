// The operator CLI's commands: each is one call (or a few) of the platform's own HTTP routes, with
// the credential that route takes: an operator's access JWT (signed in for the command), or the
// service key where the route takes `x-service-key` (invite minting), or none (the lobby).
import { randomUUID } from 'node:crypto';
import { callJson, Refusal, UsageError, type OpsRole } from './client.ts';

export type Credential = 'operator' | 'service-key' | 'none';

/** A query as the database owner (DATABASE_URL, or the embedded database `npm start` runs): `keys --owner` only. */
export type OwnerQuery = (sql: string, params: unknown[]) => Promise<Record<string, any>[]>;

export interface Context {
  args: string[];
  flags: Record<string, string | true>;
  url(role: OpsRole): string;
  /** The operator's `authorization` header (signed in once, on first use). */
  operator(): Promise<Record<string, string>>;
  /** The `x-service-key` header (SERVICE_KEY from the environment). */
  serviceKey(): Record<string, string>;
  /** The owner's connection, for the owner's own acts (`keys --owner`); closed when the command ends. */
  owner(): Promise<OwnerQuery>;
  /** A readable line on stdout (suppressed under --json). */
  say(line: string): void;
  /** The platform's answer, printed as JSON under --json. */
  json(value: unknown): void;
}

export interface Command {
  usage: string;
  help: string;
  credential: Credential;
  flags: string[];
  run(ctx: Context): Promise<number>;
}

// ---- arguments ----------------------------------------------------------------------------------

function positional(ctx: Context, count: number, names: string): string[] {
  if (ctx.args.length !== count) throw new UsageError(`expected ${names}`);
  return ctx.args;
}

function flagString(ctx: Context, name: string): string | undefined {
  const v = ctx.flags[name];
  if (v === true) throw new UsageError(`--${name} needs a value`);
  return v;
}

function wholeNumber(value: string | undefined, name: string, min = 0): number | undefined {
  if (value === undefined) return undefined;
  if (!/^-?\d+$/.test(value) || !Number.isSafeInteger(Number(value)) || Number(value) < min) {
    throw new UsageError(`${name} must be a whole number${min > 0 ? ` >= ${min}` : ''}`);
  }
  return Number(value);
}

function decimal(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+(\.\d+)?$/.test(value)) throw new UsageError(`${name} must be a number`);
  return Number(value);
}

function oneOf<T extends string>(value: string | undefined, name: string, allowed: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(value)) throw new UsageError(`${name} must be one of ${allowed.join(', ')}`);
  return value as T;
}

function onOff(value: string | undefined, name: string): boolean | undefined {
  if (value === undefined || value === 'status') return undefined;
  if (value === 'on') return true;
  if (value === 'off') return false;
  throw new UsageError(`${name}: on, off or status`);
}

function pair(value: string | undefined, name: string, separator: string, fallback: [number, number]): [number, number] {
  if (value === undefined) return fallback;
  const parts = value.split(separator);
  if (parts.length !== 2) throw new UsageError(`${name} is <a>${separator}<b>`);
  return [wholeNumber(parts[0], name)!, wholeNumber(parts[1], name)!];
}

function jsonFlag(ctx: Context, name: string): Record<string, unknown> | undefined {
  const raw = flagString(ctx, name);
  if (raw === undefined) return undefined;
  try {
    const parsed: unknown = JSON.parse(raw);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // falls through
  }
  throw new UsageError(`--${name} must be a JSON object`);
}

const onOffText = (b: boolean) => (b ? 'on' : 'off');

// ---- invites ------------------------------------------------------------------------------------

const invite: Command = {
  usage: 'invite [--max-uses N] [--expires-in SECONDS] [--created-by TEXT]',
  help: 'mint an invite code for the bridge (POST /admin/invite-codes; takes SERVICE_KEY, not the admin)',
  credential: 'service-key',
  flags: ['max-uses', 'expires-in', 'created-by'],
  async run(ctx) {
    positional(ctx, 0, 'no arguments');
    const body: Record<string, unknown> = {};
    const maxUses = wholeNumber(flagString(ctx, 'max-uses'), '--max-uses', 1);
    if (maxUses !== undefined) body.maxUses = maxUses;
    const raw = flagString(ctx, 'expires-in');
    if (raw !== undefined) body.expiresInSeconds = /^-\d+$/.test(raw) ? -wholeNumber(raw.slice(1), '--expires-in')! : wholeNumber(raw, '--expires-in');
    body.createdBy = flagString(ctx, 'created-by') ?? 'ops-cli';
    const r = await callJson(`${ctx.url('auth')}/admin/invite-codes`, { what: 'invite', headers: ctx.serviceKey(), body });
    ctx.json(r);
    ctx.say(`invite ${r.code} (max uses ${r.maxUses}, expires ${r.expiresAt ?? 'never'})`);
    return 0;
  },
};

// ---- chips --------------------------------------------------------------------------------------

function exchange(direction: 'purchase' | 'redemption'): Command {
  const verb = direction === 'purchase' ? 'buy' : 'redeem';
  return {
    usage: `${verb} <userId> <amount> [--kind play|real] [--ref EXTERNAL_REF]`,
    help: direction === 'purchase'
      ? 'chips bought outside credited to a user (POST /api/operator/purchase; --kind default real)'
      : 'chips of a user paid out to the outside (POST /api/operator/redemption; --kind default real)',
    credential: 'operator',
    flags: ['kind', 'ref'],
    async run(ctx) {
      const [userId, rawAmount] = positional(ctx, 2, '<userId> <amount>');
      const amount = wholeNumber(rawAmount, '<amount>', 1)!;
      const moneyKind = oneOf(flagString(ctx, 'kind'), '--kind', ['play', 'real'] as const, 'real');
      // the platform's replay-once key: pass the payment's own reference; a fresh one otherwise,
      // printed, so a retry after an unknown outcome can repeat it and never pays twice
      const externalRef = flagString(ctx, 'ref') ?? `ops-${randomUUID()}`;
      const r = await callJson(`${ctx.url('cage')}/api/operator/${direction}`, {
        what: direction, headers: await ctx.operator(), body: { userId: userId!, amount, externalRef, moneyKind },
      });
      ctx.json(r);
      ctx.say(`${direction} ${r.idempotent ? 'already recorded (replay)' : 'recorded'}: ${r.amount} ${r.moneyKind} chips ${direction === 'purchase' ? 'to' : 'from'} ${r.userId}`);
      ctx.say(`  ref ${externalRef}, ledger ${r.refId}, balance now ${r.balance}`);
      return 0;
    },
  };
}

// ---- tables and tournaments ---------------------------------------------------------------------

async function createTable(ctx: Context, tableId: string, settings: Record<string, unknown>, what: string) {
  const moneyKind = oneOf(flagString(ctx, 'money'), '--money', ['play', 'real'] as const, 'play');
  const r = await callJson(`${ctx.url('cage')}/api/tables`, {
    what, headers: await ctx.operator(), body: { tableId, gameType: 'poker', settings, moneyKind },
  });
  ctx.json(r);
  return { r, moneyKind };
}

const tableCreate: Command = {
  usage: 'create-table <tableId> [--blinds 1/2] [--buy-in 40-200] [--seats 6] [--rake 5] [--rake-cap 10] [--turn 30] [--kind open] [--money play|real] [--settings JSON]',
  help: 'create a cash table (POST /api/tables on the cage); --settings replaces the built settings',
  credential: 'operator',
  flags: ['blinds', 'buy-in', 'seats', 'rake', 'rake-cap', 'turn', 'kind', 'money', 'settings'],
  async run(ctx) {
    const [tableId] = positional(ctx, 1, '<tableId>');
    const [smallBlind, bigBlind] = pair(flagString(ctx, 'blinds'), '--blinds', '/', [1, 2]);
    const [minBuyIn, maxBuyIn] = pair(flagString(ctx, 'buy-in'), '--buy-in', '-', [40 * bigBlind / 2, 200 * bigBlind / 2]);
    const settings = jsonFlag(ctx, 'settings') ?? {
      smallBlind, bigBlind, minBuyIn, maxBuyIn,
      maxPlayers: wholeNumber(flagString(ctx, 'seats'), '--seats', 2) ?? 6,
      rakePercent: decimal(flagString(ctx, 'rake'), '--rake') ?? 5,
      rakeCap: wholeNumber(flagString(ctx, 'rake-cap'), '--rake-cap') ?? 10,
      rakeMinPot: 0, rakeRequiresFlop: true,
      turnTimeSec: wholeNumber(flagString(ctx, 'turn'), '--turn', 1) ?? 30, turnTimerEnabled: true,
      kind: oneOf(flagString(ctx, 'kind'), '--kind', ['open', 'human_only', 'agent', 'copilot'] as const, 'open'),
    };
    const { r, moneyKind } = await createTable(ctx, tableId!, settings, 'create-table');
    ctx.say(`table ${r.tableId} created (${moneyKind} chips, ${String(settings.smallBlind)}/${String(settings.bigBlind)}, status ${r.status})`);
    return 0;
  },
};

const tournamentCreate: Command = {
  usage: 'create-tournament <tableId> --entry-fee N [--seats 6] [--rake-fee 0] [--stack 3000] [--small-blind 10] [--level 300] [--action-timeout 30] [--kind open] [--money play|real] [--settings JSON]',
  help: 'create a Sit-and-Go (POST /api/tables with settings.mode sng); --settings replaces the built settings',
  credential: 'operator',
  flags: ['entry-fee', 'seats', 'rake-fee', 'stack', 'small-blind', 'level', 'action-timeout', 'kind', 'money', 'settings'],
  async run(ctx) {
    const [tableId] = positional(ctx, 1, '<tableId>');
    let settings = jsonFlag(ctx, 'settings');
    if (!settings) {
      const entryFee = wholeNumber(flagString(ctx, 'entry-fee'), '--entry-fee', 1);
      if (entryFee === undefined) throw new UsageError('--entry-fee is required (or --settings)');
      settings = {
        mode: 'sng', kind: oneOf(flagString(ctx, 'kind'), '--kind', ['open', 'human_only', 'agent', 'copilot'] as const, 'open'),
        seats: wholeNumber(flagString(ctx, 'seats'), '--seats', 2) ?? 6, entryFee,
        rakeFee: wholeNumber(flagString(ctx, 'rake-fee'), '--rake-fee') ?? 0,
        startingStack: wholeNumber(flagString(ctx, 'stack'), '--stack', 1) ?? 3000,
        blindStructure: {
          startingSmallBlind: wholeNumber(flagString(ctx, 'small-blind'), '--small-blind', 1) ?? 10, increaseFactor: 1.5,
          levelDurationSeconds: wholeNumber(flagString(ctx, 'level'), '--level', 30) ?? 300,
        },
        actionTimeoutSeconds: wholeNumber(flagString(ctx, 'action-timeout'), '--action-timeout', 3) ?? 30,
      };
    }
    const { r, moneyKind } = await createTable(ctx, tableId!, settings, 'create-tournament');
    ctx.say(`tournament ${r.tableId} created (${moneyKind} chips, ${String(settings.seats)} seats, entry fee ${String(settings.entryFee)}, status ${r.status})`);
    return 0;
  },
};

const tables: Command = {
  usage: 'tables [--mode cash|sng]',
  help: 'list the tables of the lobby (GET /api/tables on the game role; no credential)',
  credential: 'none',
  flags: ['mode'],
  async run(ctx) {
    positional(ctx, 0, 'no arguments');
    const mode = flagString(ctx, 'mode');
    const r = await callJson(`${ctx.url('game')}/api/tables${mode ? `?mode=${encodeURIComponent(mode)}` : ''}`, { what: 'tables' });
    ctx.json(r);
    if (!r.tables.length) ctx.say('no tables');
    for (const t of r.tables as Record<string, unknown>[]) {
      const stakes = t.mode === 'sng' ? `sng ${String(t.tournamentState)} entry ${String(t.entryFee)}` : `cash ${String(t.smallBlind)}/${String(t.bigBlind)}`;
      ctx.say(`${String(t.tableId)}  ${String(t.status)}  ${String(t.moneyKind)}  ${stakes}  ${String(t.seated)}/${String(t.seats)} seated`);
    }
    return 0;
  },
};

// ---- switches -----------------------------------------------------------------------------------

function boardSetting(name: 'board' | 'gate'): Command {
  const field = name === 'board' ? 'claimBoardEnabled' : 'playTransferGateEnabled';
  const label = name === 'board' ? 'claim board' : 'play-chip transfer gate';
  return {
    usage: `${name} on|off|status [--environment local|staging|production]`,
    help: `switch the ${label} (PATCH /admin/claim-settings on the game role; default: the deployment's environment)`,
    credential: 'operator',
    flags: ['environment'],
    async run(ctx) {
      if (ctx.args.length > 1) throw new UsageError('expected on, off or status');
      const enabled = onOff(ctx.args[0], name);
      const environment = flagString(ctx, 'environment');
      if (environment !== undefined) oneOf(environment, '--environment', ['local', 'staging', 'production'] as const, 'local');
      const base = `${ctx.url('game')}/admin/claim-settings`;
      const headers = await ctx.operator();
      const r = enabled === undefined
        ? await callJson(`${base}${environment ? `?environment=${environment}` : ''}`, { what: name, headers })
        : await callJson(base, { what: name, method: 'PATCH', headers, body: { ...(environment ? { environment } : {}), [field]: enabled } });
      ctx.json(r);
      ctx.say(`${label} ${onOffText(r[field])} (environment ${r.environment})`);
      return 0;
    },
  };
}

const realMoney: Command = {
  usage: 'real-money on|off|status',
  help: 'the operators\' real_money switch (GET/POST /api/operator/switches on the cage)',
  credential: 'operator',
  flags: [],
  async run(ctx) {
    if (ctx.args.length > 1) throw new UsageError('expected on, off or status');
    const enabled = onOff(ctx.args[0], 'real-money');
    const url = `${ctx.url('cage')}/api/operator/switches`;
    const headers = await ctx.operator();
    if (enabled === undefined) {
      const r = await callJson(url, { what: 'real-money', headers });
      ctx.json(r);
      const s = (r.switches as { name: string; enabled: boolean }[]).find((x) => x.name === 'real_money');
      ctx.say(`real money ${onOffText(s?.enabled ?? false)}`);
      return 0;
    }
    const r = await callJson(url, { what: 'real-money', headers, body: { name: 'real_money', enabled } });
    ctx.json(r);
    ctx.say(`real money ${onOffText(r.enabled)}${r.changed ? '' : ' (unchanged)'}`);
    return 0;
  },
};

// ---- game processes and tables ------------------------------------------------------------------

const processUrl: Command = {
  usage: 'process-url list|add|remove [URL]',
  help: 'the public URLs game processes may announce (GET/POST/DELETE /api/operator/process-urls on the cage)',
  credential: 'operator',
  flags: [],
  async run(ctx) {
    const [verb, url] = ctx.args;
    const base = `${ctx.url('cage')}/api/operator/process-urls`;
    if (verb === 'list' && ctx.args.length === 1) {
      const r = await callJson(base, { what: 'process-url', headers: await ctx.operator() });
      ctx.json(r);
      const urls = r.urls as { url: string; processes: number }[];
      if (!urls.length) ctx.say('no game process URL is listed');
      for (const u of urls) ctx.say(`${u.url}  ${u.processes} live process${u.processes === 1 ? '' : 'es'}`);
      return 0;
    }
    if ((verb !== 'add' && verb !== 'remove') || ctx.args.length !== 2 || !/^https?:\/\/\S+$/.test(url!)) {
      throw new UsageError('expected list, add URL or remove URL (an http(s) URL)');
    }
    const r = await callJson(base, { what: 'process-url', method: verb === 'add' ? 'POST' : 'DELETE', headers: await ctx.operator(), body: { url } });
    ctx.json(r);
    ctx.say(verb === 'add' ? `${url} ${r.added ? 'listed' : 'was listed already'}` : `${url} ${r.removed ? 'removed' : 'was not listed'}`);
    return 0;
  },
};

function tableStatus(status: 'frozen' | 'active'): Command {
  const verb = status === 'frozen' ? 'freeze' : 'thaw';
  return {
    usage: `${verb} <tableId>`,
    help: `${verb} a table (${status === 'frozen' ? 'deposits and withdrawals refused' : 'deposits and withdrawals again'}; POST /api/operator/tables/:tableId/status on the cage)`,
    credential: 'operator',
    flags: [],
    async run(ctx) {
      const [tableId] = positional(ctx, 1, '<tableId>');
      const r = await callJson(`${ctx.url('cage')}/api/operator/tables/${encodeURIComponent(tableId!)}/status`, { what: verb, headers: await ctx.operator(), body: { status } });
      ctx.json(r);
      ctx.say(`table ${r.tableId} ${r.status}`);
      return 0;
    },
  };
}

// ---- reads: audit and balances ------------------------------------------------------------------

async function graphql(ctx: Context, what: string, query: string, variables?: Record<string, unknown>) {
  const r = await callJson(`${ctx.url('admin')}/graphql`, { what, headers: await ctx.operator(), body: { query, variables } });
  if (r?.errors?.length) throw new Refusal(what, 200, { error: 'graphql_error', errors: r.errors });
  return r.data;
}

interface AuditAnswer {
  violations: { invariant: string; subject: string; detail: unknown }[];
  count: number;
  covered: { hands: number; links: number };
  liveness: { lastCleanAt: string | null; ageSeconds: number | null; periodSeconds: number; stale: boolean };
}

const audit: Command = {
  usage: 'audit [--full]',
  help: 'run the audit the periodic job runs (the cage\'s sums, custody releases, the causes of every stack: GET /api/audit of the admin role) and show the age of its last clean periodic run; exit 3 on violations, 4 when that run is older than three periods',
  credential: 'operator',
  flags: ['full'],
  async run(ctx) {
    positional(ctx, 0, 'no arguments');
    const full = ctx.flags.full === true;
    const r = await callJson<AuditAnswer>(`${ctx.url('admin')}/api/audit${full ? '?full=1' : ''}`, { what: 'audit', headers: await ctx.operator() });
    ctx.json(r);
    const age = r.liveness.ageSeconds === null ? 'never' : `${r.liveness.ageSeconds}s ago`;
    ctx.say(`audit: read ${r.covered.hands} new hands and ${r.covered.links} stack links${full ? ' (from the start)' : ''}`);
    ctx.say(`last clean periodic audit: ${age} (period ${r.liveness.periodSeconds}s)${r.liveness.stale ? ': STALE, older than three periods' : ''}`);
    if (r.count) {
      ctx.say(`audit: ${r.count} violation${r.count === 1 ? '' : 's'}`);
      for (const v of r.violations) ctx.say(`  ${v.invariant}  ${v.subject}  ${JSON.stringify(v.detail)}`);
      return 3;
    }
    ctx.say('audit: the books hold and every stack has its cause (0 violations)');
    return r.liveness.stale ? 4 : 0;
  },
};

const dealerKey: Command = {
  usage: 'dealer-key [list | pin <publicKey> | retire <publicKey>]',
  help: 'the dealer\'s pinned public keys (hand records verify only against them); pin a new GAME_DEALER_KEY\'s public half before the game processes start with it, retire an old one (operator acts)',
  credential: 'operator',
  flags: [],
  async run(ctx) {
    const [action = 'list', publicKey] = ctx.args;
    const url = `${ctx.url('admin')}/api/dealer-keys`;
    if (action === 'list' && ctx.args.length <= 1) {
      const r = await callJson(url, { what: 'dealer-key', headers: await ctx.operator() });
      ctx.json(r);
      for (const k of r.keys) ctx.say(`${k.publicKey}  pinned ${k.pinnedAt} by ${k.pinnedBy}${k.retiredAt ? `, retired ${k.retiredAt}` : ''}`);
      return 0;
    }
    if ((action !== 'pin' && action !== 'retire') || !publicKey || ctx.args.length !== 2) throw new UsageError('dealer-key list | pin <publicKey> | retire <publicKey>');
    const r = await callJson(url, { what: 'dealer-key', headers: await ctx.operator(), body: { action, publicKey } });
    ctx.json(r);
    ctx.say(`${r.key.publicKey}: ${r.key.retiredAt ? `retired ${r.key.retiredAt}` : `pinned ${r.key.pinnedAt}`}`);
    return 0;
  },
};

const balances: Command = {
  usage: 'balances [userId]',
  help: 'a user\'s cage accounts, or without a user every system account (the admin GraphQL\'s allAccountBalances)',
  credential: 'operator',
  flags: [],
  async run(ctx) {
    if (ctx.args.length > 1) throw new UsageError('expected [userId]');
    const userId = ctx.args[0] ?? null;
    const data = await graphql(ctx, 'balances',
      'query ($userId: UUID) { allAccountBalances(condition: { userId: $userId }, orderBy: [ROW_ID_ASC]) { nodes { accountType scope moneyKind balance } } }',
      { userId });
    const rows = data.allAccountBalances.nodes as { accountType: string; scope: string | null; moneyKind: string; balance: string }[];
    ctx.json(rows);
    if (!rows.length) ctx.say(userId ? `no cage account for ${userId}` : 'no system account');
    for (const a of rows) ctx.say(`${a.accountType}${a.scope ? ` ${a.scope}` : ''}  ${a.moneyKind}  ${a.balance}`);
    return 0;
  },
};

// ---- intents ------------------------------------------------------------------------------------

const INTENT_FIELDS = 'kind intentKey status rawStatus amount userId tableId nextStep open deadline attempts lastAttemptAt nextAttemptAt stuckSince stuckReason createdAt';

interface IntentNode {
  kind: string; intentKey: string; status: string; rawStatus: string; amount: string | null; tableId: string | null; nextStep: string | null;
  open: boolean; deadline: string; attempts: number; lastAttemptAt: string | null; nextAttemptAt: string | null; stuckSince: string | null; stuckReason: string | null;
}

function intentLine(i: IntentNode): string {
  const head = `${i.kind}  ${i.intentKey}  ${i.status}${i.rawStatus !== i.status ? ` (${i.rawStatus})` : ''}${i.amount === null ? '' : `  ${i.amount} chips`}${i.tableId ? `  table ${i.tableId}` : ''}`;
  if (!i.open) return head;
  const stuck = i.stuckSince ? `\n    STUCK since ${i.stuckSince}: ${i.stuckReason ?? 'no reason recorded'}` : '';
  const tries = i.attempts ? `; ${i.attempts} attempt${i.attempts === 1 ? '' : 's'}, last ${i.lastAttemptAt}${i.nextAttemptAt ? `, next ${i.nextAttemptAt}` : ''}` : '';
  return `${head}\n    next: ${i.nextStep} (due ${i.deadline}${tries})${stuck}`;
}

const intents: Command = {
  usage: 'intents [--kind KIND] [--stuck] [--all]',
  help: 'every pending money step in one place (the admin GraphQL\'s allIntents over cage.intents): its kind, key, status, next step, deadline, attempts, and since when and why it is stuck; --all includes the finished ones',
  credential: 'operator',
  flags: ['kind', 'stuck', 'all'],
  async run(ctx) {
    positional(ctx, 0, 'no arguments');
    const kind = flagString(ctx, 'kind');
    const condition: Record<string, unknown> = { ...(ctx.flags.all === true ? {} : { open: true }), ...(kind ? { kind } : {}) };
    const data = await graphql(ctx, 'intents',
      `query ($condition: IntentCondition) { allIntents(condition: $condition, orderBy: [CREATED_AT_ASC]) { nodes { ${INTENT_FIELDS} } } }`, { condition });
    const rows = (data.allIntents.nodes as IntentNode[]).filter((i) => ctx.flags.stuck !== true || i.stuckSince !== null);
    ctx.json(rows);
    const stuck = rows.filter((i) => i.stuckSince !== null).length;
    ctx.say(`${rows.length} ${ctx.flags.all === true ? '' : 'open '}intent${rows.length === 1 ? '' : 's'}${stuck ? `, ${stuck} stuck` : ''}`);
    for (const i of rows) ctx.say(intentLine(i));
    return 0;
  },
};

// ---- escape -------------------------------------------------------------------------------------

const escape: Command = {
  usage: 'escape <tableId> --reason TEXT',
  help: 'empty a cash table that cannot go on into custody and freeze it (POST /escape/:tableId on the cage)',
  credential: 'operator',
  flags: ['reason'],
  async run(ctx) {
    const [tableId] = positional(ctx, 1, '<tableId>');
    const reason = flagString(ctx, 'reason');
    if (!reason?.trim()) throw new UsageError('--reason is required (1..500 characters, recorded with the escape)');
    const r = await callJson(`${ctx.url('cage')}/escape/${encodeURIComponent(tableId!)}`, { what: 'escape', headers: await ctx.operator(), body: { reason } });
    ctx.json(r);
    ctx.say(`table ${r.tableId} escaped${r.replay ? ' (replay of the first escape)' : ''}: ${r.outcome}, ${r.status}, escrow ${r.escrow}`);
    for (const e of r.entries as { entryId: string; userId: string; amount: number }[]) ctx.say(`  custody entry ${e.entryId}: ${e.amount} to ${e.userId}`);
    if (r.hold) ctx.say(`  hold ${r.hold.entryId}: ${r.hold.amount} awaiting reconciliation`);
    if (r.toHouse) ctx.say(`  rake to the house: ${r.toHouse}`);
    return 0;
  },
};

// ---- keys ---------------------------------------------------------------------------------------

const PURPOSES = ['receipt', 'jwt', 'arbiter'] as const;

function keyLine(k: Record<string, any>): string {
  const by = (who: string | null | undefined) => (who ? `operator ${who}` : 'the owner');
  return `${String(k.purpose).padEnd(8)} ${String(k.publicKey)}  pinned ${new Date(k.pinnedAt).toISOString()} by ${by(k.pinnedBy)}`
    + (k.retiredAt ? `, retired ${new Date(k.retiredAt).toISOString()} by ${by(k.retiredBy)}` : ', active');
}

const asKey = (r: Record<string, any>) => ({
  purpose: r.purpose, publicKey: Buffer.from(r.public_key).toString('hex'), pinnedAt: r.pinned_at, pinnedBy: r.pinned_by,
  retiredAt: r.retired_at, retiredBy: r.retired_by, ...(r.replayed === undefined ? {} : { changed: !r.replayed }),
});

/** pin or retire, as an operator (POST /api/operator/keys) or as the owner (--owner). */
async function changeKey(ctx: Context, action: 'pin' | 'retire'): Promise<number> {
  if (ctx.args.length !== 3) throw new UsageError(`expected ${action} <purpose> <publicKeyHex>`);
  const purpose = oneOf(ctx.args[1], '<purpose>', PURPOSES, 'receipt');
  const publicKey = ctx.args[2]!;
  if (!/^[0-9a-fA-F]{64}$/.test(publicKey)) throw new UsageError('<publicKeyHex>: an ed25519 public key, 64 hex characters');
  let k: Record<string, any>;
  if (ctx.flags.owner === true) {
    const rows = await (await ctx.owner())(`select * from cage_private.${action === 'pin' ? 'pin_key' : 'retire_key'}(null, $1, $2)`, [purpose, Buffer.from(publicKey, 'hex')])
      .catch((err: { code?: string; message: string }) => {
        // the database's refusal (key_retired, key_not_pinned): its code, as the route would answer it
        throw err.code?.startsWith('CG') ? new Refusal(`keys ${action}`, 409, { error: err.message }) : err;
      });
    k = asKey(rows[0]!);
  } else {
    k = await callJson(`${ctx.url('cage')}/api/operator/keys`, { what: `keys ${action}`, headers: await ctx.operator(), body: { action, purpose, publicKey } });
  }
  ctx.json(k);
  ctx.say(`${action === 'pin' ? 'pinned' : 'retired'}${k.changed ? '' : ' (already)'}: ${keyLine(k)}`);
  return 0;
}

const keys: Command = {
  usage: 'keys [list [--purpose receipt|jwt|arbiter] | pin <purpose> <publicKeyHex> | retire <purpose> <publicKeyHex>] [--owner]',
  help: 'the pinned public keys (receipt, jwt, arbiter): list, pin or retire one (GET/POST /api/operator/keys on the cage; --owner: as the database owner, DATABASE_URL)',
  credential: 'operator',
  flags: ['purpose', 'owner'],
  async run(ctx) {
    const action = ctx.args[0] ?? 'list';
    if (action === 'pin' || action === 'retire') return changeKey(ctx, action);
    if (action !== 'list' || ctx.args.length > 1) throw new UsageError('expected list, pin or retire');
    const purpose = flagString(ctx, 'purpose');
    if (purpose !== undefined) oneOf(purpose, '--purpose', PURPOSES, 'receipt');
    const list: Record<string, any>[] = ctx.flags.owner === true
      ? (await (await ctx.owner())('select * from cage.pinned_keys($1)', [purpose ?? null])).map(asKey)
      : (await callJson(`${ctx.url('cage')}/api/operator/keys${purpose ? `?purpose=${purpose}` : ''}`, { what: 'keys', headers: await ctx.operator() })).keys;
    ctx.json(list);
    if (!list.length) ctx.say('no pinned key');
    for (const k of list) ctx.say(keyLine(k));
    return 0;
  },
};

export const COMMANDS: Record<string, Command> = {
  invite,
  buy: exchange('purchase'),
  redeem: exchange('redemption'),
  'create-table': tableCreate,
  'create-tournament': tournamentCreate,
  tables,
  board: boardSetting('board'),
  gate: boardSetting('gate'),
  'real-money': realMoney,
  'process-url': processUrl,
  freeze: tableStatus('frozen'),
  thaw: tableStatus('active'),
  audit,
  'dealer-key': dealerKey,
  balances,
  intents,
  escape,
  keys,
};
