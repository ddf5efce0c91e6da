// Configuration: every environment variable the platform reads, validated once at boot.
// A bad variable is a refusal to boot with one clear line per problem, never a half-configured server.
import { isIP } from 'node:net';
import { ed25519 } from '@noble/curves/ed25519.js';
import { z } from 'zod';
import { passwordVariable, ROLE_LOGIN, SERVICE_LOGINS, type ServiceLogin } from '../db/roles.ts';

export const ROLES = ['auth', 'game', 'cage', 'chain-bank', 'admin', 'worker', 'betting', 'web'] as const;
export type Role = (typeof ROLES)[number];

// Roles that exist in this build. Later issues add to this list as they land.
export const AVAILABLE_ROLES: readonly Role[] = ['auth', 'game', 'cage', 'chain-bank', 'admin', 'worker', 'betting', 'web'];

const port = (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback);
const flag = z
  .enum(['true', 'false', '1', '0', ''])
  .default('false')
  .transform((v) => v === 'true' || v === '1');
/** The spec's words for the test harness: permitted only by exactly `true`; any other value is off. */
const exactlyTrue = z
  .string()
  .optional()
  .transform((v) => v === 'true');
const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v === '' ? undefined : v));

const PROXY_PRESETS = new Set(['loopback', 'linklocal', 'uniquelocal']);
function validTrustProxy(value: string): boolean {
  if (/^(true|false|\d{1,2})$/.test(value)) return true;
  return value.split(',').every((item) => {
    const [address, prefix, ...rest] = item.trim().split('/');
    if (PROXY_PRESETS.has(address!) && prefix === undefined) return true;
    const family = isIP(address!);
    if (!family || rest.length) return false;
    // proxy-addr (Express) refuses a /0
    return prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) >= 1 && Number(prefix) <= (family === 4 ? 32 : 128));
  });
}

/** Whether 64 hex characters are an ed25519 public key (a point on the curve). */
function ed25519PublicKey(hex: string): boolean {
  try {
    ed25519.Point.fromHex(hex.toLowerCase());
    return true;
  } catch {
    return false;
  }
}

/** TRUST_PROXY as Express's `trust proxy` setting takes it. */
function trustProxySetting(value: string | undefined): boolean | number | string[] {
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  if (/^\d+$/.test(value)) return Number(value);
  return value.split(',').map((item) => item.trim());
}

const schema = z.object({
  NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  HOST: z.string().min(1).default('127.0.0.1'),
  DATABASE_URL: optionalString.pipe(z.url({ protocol: /^postgres(ql)?$/ }).optional()),
  PG_DATA_DIR: z.string().min(1).default('.data/postgres'),
  PG_PORT: port(54329),
  PORT: port(3673),
  GAME_PORT: port(3674),
  CAGE_PORT: port(3675),
  CHAIN_BANK_PORT: port(3676),
  ADMIN_PORT: port(3677),
  BETTING_PORT: port(3678),
  // the web client (server/roles/web.ts): its pages and the same-origin proxy to the other roles
  WEB_PORT: port(3679),
  HTTP_BODY_LIMIT: z.coerce.number().int().min(1024).max(10 * 1024 * 1024).default(64 * 1024),
  SERVICE_KEY: optionalString.pipe(z.string().min(16, 'must be at least 16 characters').optional()),
  // the service logins' passwords are derived from it (server/db/roles.ts); required in production
  DB_ROLE_SECRET: optionalString.pipe(z.string().min(16, 'must be at least 16 characters').optional()),
  // a process of a split deployment: it connects only as the logins of its roles, each with its own
  // password (DB_PASSWORD_<LOGIN>), to a DATABASE_URL without the owner's password; it never
  // migrates nor acts as the owner (npm run migrate does, apart). docs/operations.md
  DB_LOGIN_ONLY: flag,
  ENABLE_TEST_AUTH: exactlyTrue,
  CAGE_RECEIPT_KEY: optionalString.pipe(
    z.string().regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex characters (an ed25519 private key)').optional(),
  ),
  // the dealer's key (server/game/hands/dealer-key.ts): signs every hand's record; unset, one kept in the database
  GAME_DEALER_KEY: optionalString.pipe(
    z.string().regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex characters (an ed25519 private key)').optional(),
  ),
  // the custody arbiter's ed25519 public key: a disputed custody entry is released only with its
  // detached signature over the release message (unset: releases answer 503 custody_arbiter_not_configured)
  CAGE_CUSTODY_ARBITER_PUBKEY: optionalString.pipe(
    z.string().regex(/^[0-9a-fA-F]{64}$/, { message: 'must be 64 hex characters (an ed25519 public key)', abort: true })
      .refine(ed25519PublicKey, 'is not an ed25519 public key (not a point on the curve)').optional(),
  ),
  CAGE_AUDIT_CRON: z.string().min(9).default('* * * * *'),
  CAGE_RAKE_RECONCILE_CRON: z.string().min(9).default('0 * * * *'),
  // auth role (required when it runs in production; development/test defaults in server/auth/config.ts)
  // its JWT signing key (Ed25519 seed, hex): unset outside production, a file beside PG_DATA_DIR
  // (server/crypto/key-files.ts); its public half must be pinned (npm run ops -- keys)
  AUTH_JWT_KEY: optionalString.pipe(
    z.string().regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex characters (an ed25519 private key)').optional(),
  ),
  AUTH_BASE_URL: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()),
  AUTH_DOMAIN: optionalString.pipe(z.string().min(1).max(253).optional()),
  AUTH_TRUSTED_ORIGINS: optionalString.pipe(
    z.string().regex(/^https?:\/\/[^\s,/]+(,\s*https?:\/\/[^\s,/]+)*$/, 'a comma-separated list of origins (scheme://host[:port])').optional(),
  ),
  AUTH_RESET_TOKEN_TTL_SECONDS: z.coerce.number().int().min(60).max(86400).default(3600),
  // where password-reset mail goes: an HTTP mail API that takes { to, subject, text } (unset: none sent)
  AUTH_MAIL_WEBHOOK_URL: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()),
  // the worker's mail key (an RSA private key, PKCS#8 PEM; `\n` may stand for its newlines): a reset
  // token travels sealed to its public half (server/worker/mail-key.ts). Unset outside production: a
  // file of its own beside the data directory, made at the first start
  WORKER_MAIL_KEY: optionalString,
  // attempt limits of the auth role, shared by every auth process (docs/decisions.md): admin sign-in
  // per (client address, account) and per client address, password recovery per client address
  AUTH_LIMIT_WINDOW_SECONDS: z.coerce.number().int().min(1).max(86_400).default(900),
  AUTH_SIGN_IN_LIMIT_PER_ACCOUNT: z.coerce.number().int().min(1).max(10_000).default(10),
  AUTH_SIGN_IN_LIMIT_PER_PEER: z.coerce.number().int().min(1).max(100_000).default(100),
  AUTH_RECOVERY_LIMIT_PER_PEER: z.coerce.number().int().min(1).max(100_000).default(20),
  // Express `trust proxy`: unset = the client is the TCP peer and X-Forwarded-For is ignored
  TRUST_PROXY: optionalString.pipe(
    z.string().refine(validTrustProxy, 'true, false, a hop count, or a comma-separated list of IP addresses, CIDR subnets, loopback, linklocal, uniquelocal').optional(),
  ).transform(trustProxySetting),
  // downstream roles verify access JWTs with the auth role's JWKS
  AUTH_JWKS_URL: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()),
  // the game role, for the claim board's condition-met callback (best effort)
  GAME_URL: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()),
  // the chain bank's chain: an RPC URL and the deployed contracts (unset: npm start runs a local
  // anvil with the contracts deployed); its operator key signs every transaction the bank sends
  EVM_RPC_URL: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()),
  CHAIN_TOKEN_ADDRESS: optionalString.pipe(z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'a 0x address').optional()),
  CHAIN_VAULT_ADDRESS: optionalString.pipe(z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'a 0x address').optional()),
  CHAIN_OPERATOR_KEY: optionalString.pipe(z.string().regex(/^0x[0-9a-fA-F]{64}$/, 'a 0x private key (64 hex)').optional()),
  // how long a chain-bank deposit or withdrawal waits for its receipt before answering `submitted`
  CHAIN_CONFIRM_WINDOW_MS: z.coerce.number().int().min(0).max(600_000).default(15_000),
  CHAIN_RECONCILE_INTERVAL_SECONDS: z.coerce.number().int().min(1).max(3600).default(30),
  // the auth role's internal address, for the chain bank's linked-wallet read (default: this process's auth role)
  AUTH_URL: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()),
  // the deployment environment of the claim board's catalog and settings
  DEPLOY_ENVIRONMENT: optionalString.pipe(z.enum(['local', 'staging', 'production']).optional()),
  // the auth role's internal address, for the game role's wallet reads (default: this process's)
  // the cage role's internal address, for the worker's reconciler (default: this process's cage)
  CAGE_URL: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()),
  // the chain-bank role's internal address, for the worker's payouts of chain-bank tournaments (default: this process's chain bank)
  CHAIN_BANK_URL: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()),
  // how often the worker's betting sweep (betting_sweep_markets) moves the markets along with their tournaments
  BETTING_SWEEP_MS: z.coerce.number().int().min(100).max(600_000).default(2000),
  // the bank (cage) the game role reports busts to
  BANK_URL: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()),
  // the poker UI origins the bank's browser routes answer CORS for (comma-separated)
  POKER_UI_ORIGINS: optionalString.pipe(
    z.string().regex(/^https?:\/\/[^\s,/]+(,\s*https?:\/\/[^\s,/]+)*$/, 'a comma-separated list of origins (scheme://host[:port])').optional(),
  ),
  // real-money chips (purchases, real tables, deposits to them); off unless switched on
  REAL_MONEY_ENABLED: flag,
  // how long the cage waits for the game role's seat calls before it compensates
  // live tables: the pause between hands, timeouts before a player is sat out, the idle removal
  HAND_DELAY_MS: z.coerce.number().int().min(0).max(60_000).default(1500),
  TIMEOUTS_BEFORE_SIT_OUT: z.coerce.number().int().min(1).max(100).default(2),
  IDLE_KICK_SECONDS: z.coerce.number().int().min(0).max(86_400).default(300),
  CAGE_RECONCILE_INTERVAL_SECONDS: z.coerce.number().int().min(1).max(3600).default(30),
  GAME_CALL_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(5000),
  // one table, one dealer: how long a table's lease lasts unrenewed (renewed every third of it), and
  // the URL clients are sent to for the tables this game process runs (default: the URL it listens on)
  GAME_LEASE_TTL_SECONDS: z.coerce.number().int().min(3).max(3600).default(30),
  // the game role's websockets (docs/protocol.md): a connection whose send buffer passes this many
  // bytes is closed 4008 slow_consumer; pings this often, a connection that missed a pong is dropped;
  // a cash room idle (no watcher, hand, waiting sit or stand-up) this long unloads, releasing its lease
  WS_MAX_BUFFERED_BYTES: z.coerce.number().int().min(16 * 1024).max(1024 * 1024 * 1024).default(1024 * 1024),
  WS_PING_INTERVAL_SECONDS: z.coerce.number().int().min(1).max(3600).default(30),
  ROOM_IDLE_UNLOAD_SECONDS: z.coerce.number().int().min(1).max(86_400).default(60),
  GAME_PUBLIC_URL: optionalString.pipe(z.url({ protocol: /^https?$/ }).max(500).optional()),
  // admin GraphQL: what one query may cost, judged before planning (docs/decisions.md), and grafast's
  // own planning and execution deadlines
  // tables one user may create per window (POST /api/tables; 429 table_limit_reached beyond)
  TABLE_CREATE_LIMIT: z.coerce.number().int().min(1).max(1_000_000).default(20),
  TABLE_CREATE_WINDOW_SECONDS: z.coerce.number().int().min(1).max(31_536_000).default(3600),
  ADMIN_GRAPHQL_MAX_DEPTH: z.coerce.number().int().min(1).max(100).default(16),
  ADMIN_GRAPHQL_MAX_ALIASES: z.coerce.number().int().min(0).max(10_000).default(20),
  ADMIN_GRAPHQL_MAX_SELECTIONS: z.coerce.number().int().min(1).max(100_000).default(500),
  ADMIN_GRAPHQL_MAX_TOKENS: z.coerce.number().int().min(100).max(1_000_000).default(5000),
  ADMIN_GRAPHQL_PLANNING_TIMEOUT_MS: z.coerce.number().int().min(10).max(60_000).default(1000),
  ADMIN_GRAPHQL_EXECUTION_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(10_000),
  // the identity provider the bridge trusts (OIDC ID tokens)
  IDP_ISSUER: optionalString.pipe(z.url().optional()),
  IDP_JWKS_URL: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()),
  IDP_AUDIENCE: optionalString.pipe(z.string().min(1).max(512).optional()),
  IDP_AUTH_METHOD: z.enum(['google', 'apple', 'email']).default('google'),
  // the web client's own start of the provider's sign-in (an OIDC implicit ID-token request): the
  // provider's authorization endpoint, our OAuth client id there (the same value as IDP_AUDIENCE: the
  // bridge checks the ID token's aud against it), and the provider's name on the button
  WEB_IDP_AUTHORIZE_URL: optionalString.pipe(
    z.url({ protocol: /^https?$/ }).max(2000).refine((v) => !v.includes('#'), 'must not carry a fragment').optional(),
  ),
  WEB_IDP_CLIENT_ID: optionalString.pipe(
    z.string().max(512).regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces (an OAuth client id)').optional(),
  ),
  WEB_IDP_NAME: optionalString.pipe(z.string().max(40).regex(/^\P{Cc}+$/u, 'no control characters').optional()),
  OTEL_EXPORTER_OTLP_ENDPOINT: optionalString.pipe(z.url().optional()),
  OTEL_SERVICE_NAME: z.string().min(1).default('poker-platform'),
});

// Checked on its own, not as a refinement of the whole object: zod skips refinements once any
// field failed, and a refusal to boot must name every bad variable at once. The spec's rule reads
// NODE_ENV as it is set: an unset NODE_ENV (which otherwise defaults to development) does not
// permit the test harness.
const HARNESS_ENVS = ['development', 'test'];
const testAuthRule = z
  .object({ NODE_ENV: z.string().optional(), ENABLE_TEST_AUTH: exactlyTrue })
  .superRefine((env, ctx) => {
    if (env.ENABLE_TEST_AUTH && !HARNESS_ENVS.includes(env.NODE_ENV ?? '')) {
      ctx.addIssue({
        code: 'custom',
        path: ['ENABLE_TEST_AUTH'],
        message: `true is only allowed when NODE_ENV is development or test (NODE_ENV is ${env.NODE_ENV ?? 'unset'})`,
      });
    }
  });

// Production needs its own secret for the database logins (elsewhere a development default serves),
// unless the process is given its logins' passwords alone (DB_LOGIN_ONLY): then it holds neither the
// secret nor the owner's password, and a DATABASE_URL without one is required.
const dbRoleSecretRule = z
  .object({ NODE_ENV: z.string().optional(), DB_ROLE_SECRET: optionalString, DB_LOGIN_ONLY: z.string().optional(), DATABASE_URL: optionalString })
  .superRefine((env, ctx) => {
    const loginOnly = env.DB_LOGIN_ONLY === 'true' || env.DB_LOGIN_ONLY === '1';
    if (env.NODE_ENV === 'production' && !env.DB_ROLE_SECRET && !loginOnly) {
      ctx.addIssue({ code: 'custom', path: ['DB_ROLE_SECRET'], message: 'required in production (the service logins\' passwords are derived from it)' });
    }
    if (!loginOnly) return;
    if (env.DB_ROLE_SECRET) {
      ctx.addIssue({ code: 'custom', path: ['DB_ROLE_SECRET'], message: 'must be unset with DB_LOGIN_ONLY=true (it derives every login\'s password: the process gets DB_PASSWORD_<LOGIN> of its own logins)' });
    }
    if (!env.DATABASE_URL) {
      ctx.addIssue({ code: 'custom', path: ['DATABASE_URL'], message: 'required with DB_LOGIN_ONLY=true (host, port and database; no embedded database)' });
    } else if (URL.canParse(env.DATABASE_URL) && (new URL(env.DATABASE_URL).password || new URL(env.DATABASE_URL).username)) {
      ctx.addIssue({ code: 'custom', path: ['DATABASE_URL'], message: 'must carry no user nor password with DB_LOGIN_ONLY=true (only host, port and database: the owner\'s credentials stay with the migrator)' });
    }
  });

// The web client's provider sign-in: both of its variables or neither; its client id is the audience
// the bridge checks (when this process knows it); a production provider is reached over https.
const webIdpRule = z
  .object({
    NODE_ENV: z.string().optional(), WEB_IDP_AUTHORIZE_URL: optionalString, WEB_IDP_CLIENT_ID: optionalString, IDP_AUDIENCE: optionalString,
  })
  .superRefine((env, ctx) => {
    if (env.WEB_IDP_AUTHORIZE_URL && !env.WEB_IDP_CLIENT_ID) {
      ctx.addIssue({ code: 'custom', path: ['WEB_IDP_CLIENT_ID'], message: 'required with WEB_IDP_AUTHORIZE_URL (our OAuth client id at the provider, the same value as IDP_AUDIENCE)' });
    }
    if (env.WEB_IDP_CLIENT_ID && !env.WEB_IDP_AUTHORIZE_URL) {
      ctx.addIssue({ code: 'custom', path: ['WEB_IDP_AUTHORIZE_URL'], message: 'required with WEB_IDP_CLIENT_ID (the provider\'s authorization endpoint)' });
    }
    if (env.WEB_IDP_CLIENT_ID && env.IDP_AUDIENCE && env.WEB_IDP_CLIENT_ID !== env.IDP_AUDIENCE) {
      ctx.addIssue({ code: 'custom', path: ['WEB_IDP_CLIENT_ID'], message: 'must equal IDP_AUDIENCE (the bridge refuses an ID token whose aud is not IDP_AUDIENCE)' });
    }
    if (env.NODE_ENV === 'production' && env.WEB_IDP_AUTHORIZE_URL?.startsWith('http:')) {
      ctx.addIssue({ code: 'custom', path: ['WEB_IDP_AUTHORIZE_URL'], message: 'must be https in production' });
    }
  });

export type Config = z.infer<typeof schema> & {
  /** The test token and /api/dev/mint-jwt are permitted only under this flag. */
  testAuthPermitted: boolean;
  /** The logins' passwords given one by one (DB_PASSWORD_POKER_CAGE, ...): used instead of derived ones. */
  dbPasswords?: Partial<Record<ServiceLogin, string>>;
};

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const parsed = schema.safeParse(env);
  const rule = testAuthRule.safeParse(env);
  const secretRule = dbRoleSecretRule.safeParse(env);
  const idpRule = webIdpRule.safeParse(env);
  if (!parsed.success || !rule.success || !secretRule.success || !idpRule.success) {
    const issues = [...(parsed.error?.issues ?? []), ...(rule.error?.issues ?? []), ...(secretRule.error?.issues ?? []), ...(idpRule.error?.issues ?? [])];
    const problems = issues.map((issue) => `${issue.path.join('.') || 'environment'}: ${issue.message}`);
    throw new ConfigError([...new Set(problems)]);
  }
  const config = parsed.data;
  const dbPasswords: Partial<Record<ServiceLogin, string>> = {};
  for (const login of SERVICE_LOGINS) {
    const value = env[passwordVariable(login)];
    if (value) dbPasswords[login] = value;
  }
  return {
    ...config,
    testAuthPermitted: config.ENABLE_TEST_AUTH && HARNESS_ENVS.includes(env.NODE_ENV ?? ''),
    dbPasswords,
  };
}

/** What a role's pool logs in with: the login's given password, else the secret it is derived from. */
export function loginCredentials(config: Config, login: ServiceLogin): { secret?: string; password?: string } {
  return { secret: config.DB_ROLE_SECRET, password: config.dbPasswords?.[login] };
}

/**
 * With DB_LOGIN_ONLY, the refusal to boot of a process missing the password of a login one of its
 * roles connects as (each named by its variable).
 */
export function requireLoginPasswords(config: Config, roles: readonly Role[]): void {
  if (!config.DB_LOGIN_ONLY) return;
  const problems: string[] = [];
  for (const role of roles) {
    const login = ROLE_LOGIN[role];
    if (login && !config.dbPasswords?.[login]) {
      problems.push(`${passwordVariable(login)}: required with DB_LOGIN_ONLY=true (the ${role} role connects as ${login})`);
    }
  }
  if (problems.length) throw new ConfigError([...new Set(problems)]);
}

/** The access JWTs' iss and aud: the auth role's public URL (AUTH_BASE_URL, else this machine's). */
export function authIssuer(config: Config): string {
  return (config.AUTH_BASE_URL ?? `http://localhost:${config.PORT}`).replace(/\/+$/, '');
}

/**
 * The web client's provider sign-in, as the page receives it (`GET /api/web/config`): the
 * authorization endpoint, our client id there, the name on the button; null when not configured.
 */
export function webIdentityProvider(config: Config): { name: string; authorizeUrl: string; clientId: string } | null {
  if (!config.WEB_IDP_AUTHORIZE_URL || !config.WEB_IDP_CLIENT_ID) return null;
  const name = config.WEB_IDP_NAME ?? { google: 'Google', apple: 'Apple', email: 'your identity provider' }[config.IDP_AUTH_METHOD];
  return { name, authorizeUrl: config.WEB_IDP_AUTHORIZE_URL, clientId: config.WEB_IDP_CLIENT_ID };
}

/**
 * The deployment environment the claim board resolves its catalog and settings for:
 * DEPLOY_ENVIRONMENT, else `production` under NODE_ENV=production and `local` otherwise.
 */
export function deploymentEnvironment(config: Config): 'local' | 'staging' | 'production' {
  return config.DEPLOY_ENVIRONMENT ?? (config.NODE_ENV === 'production' ? 'production' : 'local');
}

export function parseRoles(argv: readonly string[]): Role[] {
  const roles: Role[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    let value: string | undefined;
    if (arg === '--role') value = argv[++i];
    else if (arg.startsWith('--role=')) value = arg.slice('--role='.length);
    else throw new ConfigError([`unknown argument ${arg} (usage: --role <${ROLES.join('|')}>, repeatable)`]);
    for (const name of (value ?? '').split(',')) {
      if (!(ROLES as readonly string[]).includes(name)) {
        throw new ConfigError([`--role: unknown role '${name}' (one of ${ROLES.join(', ')})`]);
      }
      if (!AVAILABLE_ROLES.includes(name as Role)) {
        throw new ConfigError([`--role: role '${name}' is not built yet (available: ${AVAILABLE_ROLES.join(', ')})`]);
      }
      if (!roles.includes(name as Role)) roles.push(name as Role);
    }
  }
  return roles.length ? roles : [...AVAILABLE_ROLES];
}
