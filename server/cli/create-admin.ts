// `npm run admin:create -- --email ops@example.com`: creates an admin account (email/password) on
// the configured database (DATABASE_URL, or the embedded one under PG_DATA_DIR: the running one when
// `npm start` holds it, else started for the occasion). The password comes from ADMIN_PASSWORD or, if unset, from the first line of stdin;
// it is never an argument (arguments show in `ps`). Poker users can never be given one: the
// database refuses a credential for a bridged user.
import { createInterface } from 'node:readline';
import pg from 'pg';
import { hashPassword } from '../auth/passwords.ts';
import { ConfigError, loadConfig } from '../config/index.ts';
import { runningEmbeddedUrl, startEmbeddedPostgres } from '../db/embedded.ts';
import { migrate } from '../db/migrate.ts';

async function readPassword(): Promise<string> {
  if (process.env.ADMIN_PASSWORD) return process.env.ADMIN_PASSWORD;
  const rl = createInterface({ input: process.stdin });
  for await (const line of rl) {
    rl.close();
    return line;
  }
  return '';
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  const emailArg = args.indexOf('--email');
  const email = emailArg >= 0 ? args[emailArg + 1] : undefined;
  if (!email || !/^[^@\s]+@[^@\s]+$/.test(email) || args.length !== 2) {
    process.stderr.write('usage: npm run admin:create -- --email <address>   (password: ADMIN_PASSWORD or stdin)\n');
    return 2;
  }
  const password = await readPassword();
  if (password.length < 12) {
    process.stderr.write('the password must be at least 12 characters\n');
    return 2;
  }
  const config = loadConfig();
  // a running platform's embedded database is used as it runs (it is migrated already)
  const running = config.DATABASE_URL ? undefined : await runningEmbeddedUrl(config.PG_DATA_DIR);
  const embedded = config.DATABASE_URL || running ? undefined : await startEmbeddedPostgres({ dataDir: config.PG_DATA_DIR, port: config.PG_PORT });
  const url = config.DATABASE_URL ?? running ?? embedded!.url;
  try {
    if (!running) await migrate(url, { roleSecret: config.DB_ROLE_SECRET });
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query('select auth.create_admin($1, $2) as id', [email, await hashPassword(password)]);
      process.stdout.write(`admin ${email} created: ${rows[0].id}\n`);
      return 0;
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === '23505') {
        process.stderr.write(`an account with the email ${email} already exists\n`);
        return 1;
      }
      throw err;
    } finally {
      await client.end();
    }
  } finally {
    await embedded?.stop();
  }
}

try {
  process.exitCode = await main();
} catch (err) {
  process.stderr.write(`${err instanceof ConfigError ? err.message : (err as Error).message}\n`);
  process.exitCode = 1;
}
