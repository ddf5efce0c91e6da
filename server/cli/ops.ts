// `npm run ops -- <command>`: the operator's command line. Every command is a call of the platform's
// own HTTP routes (server/cli/ops/commands.ts) with the credential the route takes: the admin's
// access JWT, signed in for the command from OPS_EMAIL / OPS_PASSWORD (or stdin) and signed out at
// its end, or SERVICE_KEY where the route takes the service key. The roles' URLs come from the
// configuration `npm start` reads (AUTH_URL, GAME_URL, CAGE_URL, else HOST and the ports), or flags.
// Exit codes: 0 done, 1 refused by the platform (its code printed) or unreachable, 2 usage or
// configuration, 3 the audit found violations. No credential is ever printed.
import { createInterface } from 'node:readline';
import pg from 'pg';
import { runningEmbeddedUrl } from '../db/embedded.ts';
import { ConfigError, loadConfig, type Config } from '../config/index.ts';
import { COMMANDS, type Command, type Context, type OwnerQuery } from './ops/commands.ts';
import { Refusal, roleUrl, signIn, Unreachable, UsageError, type Credentials, type OperatorSession } from './ops/client.ts';

const GLOBAL_FLAGS = ['auth-url', 'game-url', 'cage-url', 'admin-url', 'json', 'email'];
const BOOLEAN_FLAGS = new Set(['json']);

function helpText(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((n) => n.length));
  const lines = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(width)}  ${c.help}`);
  return [
    'usage: npm run ops -- <command> [arguments] [flags]',
    '',
    'commands:',
    `  ${'help'.padEnd(width)}  this list; \`help <command>\` shows a command's arguments`,
    ...lines,
    '',
    'credentials: the admin\'s OPS_EMAIL and OPS_PASSWORD (or --email; what is missing is read from',
    '  stdin: the email, then the password, one line each; never an argument). `invite` takes',
    '  SERVICE_KEY from the environment instead (the invite route takes the service key, not an admin).',
    'roles: --auth-url --game-url --cage-url --admin-url, else AUTH_URL, GAME_URL, CAGE_URL, else',
    '  http://$HOST:$PORT, $GAME_PORT, $CAGE_PORT, $ADMIN_PORT as `npm start` prints them (.env is read).',
    'output: readable lines; --json prints the platform\'s answer as JSON.',
    'exit codes: 0 done, 1 refused by the platform (its error code printed) or a role unreachable,',
    '  2 usage or configuration, 3 the audit found violations, 4 its last clean periodic run is older than three periods.',
  ].join('\n');
}

export function parseArgs(argv: string[]): { name: string | undefined; args: string[]; flags: Record<string, string | true> } {
  const args: string[] = [];
  const flags: Record<string, string | true> = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (!a.startsWith('--') || a === '--') {
      args.push(a);
      continue;
    }
    const eq = a.indexOf('=');
    const key = eq > 0 ? a.slice(2, eq) : a.slice(2);
    if (key in flags) throw new UsageError(`--${key} given twice`);
    if (eq > 0) flags[key] = a.slice(eq + 1);
    else if (!BOOLEAN_FLAGS.has(key) && i + 1 < argv.length && !argv[i + 1]!.startsWith('--')) flags[key] = argv[++i]!;
    else flags[key] = true;
  }
  return { name: args.shift(), args, flags };
}

/** Lines from stdin, read only when asked for; on a terminal the password is not echoed. */
function stdinReader() {
  const lines: string[] = [];
  let waiting: ((line: string | undefined) => void) | undefined;
  let ended = false;
  let rl: ReturnType<typeof createInterface> | undefined;
  const open = () => {
    rl ??= createInterface({ input: process.stdin, terminal: false });
    rl.on('line', (line) => (waiting ? (waiting(line), (waiting = undefined)) : lines.push(line)));
    rl.on('close', () => {
      ended = true;
      waiting?.(undefined);
    });
  };
  return {
    async next(prompt: string, secret: boolean): Promise<string | undefined> {
      if (process.stdin.isTTY) {
        process.stderr.write(prompt);
        if (secret) process.stdin.setRawMode?.(true);
      }
      if (!rl) open();
      const line = lines.length ? lines.shift() : ended ? undefined : await new Promise<string | undefined>((r) => (waiting = r));
      if (process.stdin.isTTY && secret) {
        process.stdin.setRawMode?.(false);
        process.stderr.write('\n');
      }
      return line?.replace(/\r$/, '');
    },
    close: () => rl?.close(),
  };
}

async function credentials(flags: Record<string, string | true>, stdin: ReturnType<typeof stdinReader>): Promise<Credentials> {
  if (flags.email === true) throw new UsageError('--email needs an address');
  const email = (flags.email ?? process.env.OPS_EMAIL ?? (await stdin.next('admin email: ', false)))?.trim();
  if (!email) throw new UsageError('no admin email: set OPS_EMAIL (or --email, or give it on stdin)');
  const password = process.env.OPS_PASSWORD || (await stdin.next('password: ', true));
  if (!password) throw new UsageError('no admin password: set OPS_PASSWORD (or give it on stdin)');
  return { email, password };
}

/** The owner's connection: DATABASE_URL, else the embedded database a running `npm start` holds. */
async function ownerConnection(config: Config): Promise<pg.Client> {
  const url = config.DATABASE_URL ?? (await runningEmbeddedUrl(config.PG_DATA_DIR));
  if (!url) throw new UsageError('--owner needs the owner\'s database: set DATABASE_URL (or run it beside a running `npm start`)');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return client;
}

function context(command: Command, parsed: ReturnType<typeof parseArgs>, config: Config, stdin: ReturnType<typeof stdinReader>) {
  let session: Promise<OperatorSession> | undefined;
  let owner: Promise<pg.Client> | undefined;
  const asJson = parsed.flags.json === true;
  const ctx: Context = {
    args: parsed.args,
    flags: parsed.flags,
    url: (role) => roleUrl(config, role, parsed.flags),
    async operator() {
      session ??= credentials(parsed.flags, stdin).then((c) => signIn(roleUrl(config, 'auth', parsed.flags), c));
      return (await session).auth;
    },
    async owner(): Promise<OwnerQuery> {
      const client = await (owner ??= ownerConnection(config));
      return async (sql, params) => (await client.query(sql, params)).rows;
    },
    serviceKey() {
      if (!config.SERVICE_KEY) throw new UsageError(`${command.usage.split(' ')[0]} takes the service key: set SERVICE_KEY`);
      return { 'x-service-key': config.SERVICE_KEY };
    },
    say: (line) => void (asJson ? undefined : process.stdout.write(`${line}\n`)),
    json: (value) => void (asJson ? process.stdout.write(`${JSON.stringify(value, null, 2)}\n`) : undefined),
  };
  return {
    ctx,
    signOut: async () => {
      await (owner ? (await owner.catch(() => undefined))?.end() : undefined);
      return session ? (await session.catch(() => undefined))?.signOut() : undefined;
    },
  };
}

function printRefusal(err: Refusal) {
  process.stderr.write(`refused: ${err.message}\n`);
  const body = err.body as { issues?: unknown; errors?: { message?: string }[] } | undefined;
  if (body?.issues) process.stderr.write(`  issues: ${JSON.stringify(body.issues)}\n`);
  for (const e of body?.errors ?? []) process.stderr.write(`  ${e.message ?? JSON.stringify(e)}\n`);
}

async function main(argv: string[]): Promise<number> {
  const parsed = parseArgs(argv);
  if (!parsed.name || parsed.name === 'help' || parsed.flags.help === true) {
    const about = parsed.name === 'help' && parsed.args[0] ? COMMANDS[parsed.args[0]] : undefined;
    process.stdout.write(about ? `usage: npm run ops -- ${about.usage}\n  ${about.help}\n` : `${helpText()}\n`);
    return parsed.name || parsed.flags.help === true ? 0 : 2;
  }
  const command = COMMANDS[parsed.name];
  if (!command) throw new UsageError(`unknown command '${parsed.name}'`);
  for (const f of Object.keys(parsed.flags)) {
    if (!command.flags.includes(f) && !GLOBAL_FLAGS.includes(f)) throw new UsageError(`${parsed.name}: unknown flag --${f} (usage: ${command.usage})`);
  }
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(err.message);
    throw err;
  }
  const stdin = stdinReader();
  const { ctx, signOut } = context(command, parsed, config, stdin);
  try {
    return await command.run(ctx);
  } finally {
    await signOut();
    stdin.close();
  }
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (err) {
  if (err instanceof UsageError) {
    process.stderr.write(`usage: ${err.message}\n(npm run ops -- help lists the commands)\n`);
    process.exitCode = 2;
  } else if (err instanceof Refusal) {
    printRefusal(err);
    process.exitCode = 1;
  } else if (err instanceof Unreachable) {
    process.stderr.write(`${err.message}\n`);
    process.exitCode = 1;
  } else {
    process.stderr.write(`failed: ${(err as Error).message}\n`);
    process.exitCode = 1;
  }
}
