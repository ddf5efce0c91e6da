// What the auth role needs beyond the shared configuration. In production every value must be set.
// Elsewhere the base URL and SIWE domain default to this machine; AUTH_SECRET is required in test,
// and in development, when unset, one is generated once and kept beside the embedded data directory
// (`<PG_DATA_DIR>.auth-secret`, mode 0600), so `npm start` works on a fresh clone and the signing
// keys it sealed stay readable across restarts.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ConfigError, type Config } from '../config/index.ts';

export interface AuthSettings {
  secret: string;
  baseUrl: string;
  domain: string;
  /** Origins whose cross-origin session calls are accepted: this service's own and the configured ones. */
  trustedOrigins: Set<string>;
}

export async function developmentSecret(config: Config): Promise<string> {
  const file = `${path.resolve(config.PG_DATA_DIR)}.auth-secret`;
  const existing = await readFile(file, 'utf8').catch(() => undefined);
  if (existing && existing.trim().length >= 32) return existing.trim();
  await mkdir(path.dirname(file), { recursive: true });
  const secret = randomBytes(32).toString('base64url');
  await writeFile(file, `${secret}\n`, { mode: 0o600, flag: 'wx' }).catch(async () => undefined);
  return (await readFile(file, 'utf8')).trim();
}

/**
 * In development only: the URLs `npm start` prints (every HTTP role on HOST at its configured port),
 * and their localhost / 127.0.0.1 twins, so a page served by one role can call the auth role.
 */
export function developmentOrigins(config: Config): string[] {
  const hosts = new Set([config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST]);
  if (config.HOST === '127.0.0.1' || config.HOST === 'localhost') ['127.0.0.1', 'localhost'].forEach((h) => hosts.add(h));
  const ports = [config.PORT, config.GAME_PORT, config.CAGE_PORT, config.ADMIN_PORT, config.WEB_PORT].filter((p) => p > 0);
  return [...hosts].flatMap((h) => ports.map((p) => `http://${h}:${p}`));
}

export async function authSettings(config: Config): Promise<AuthSettings> {
  const production = config.NODE_ENV === 'production';
  const problems: string[] = [];
  const secret = config.AUTH_SECRET ?? (config.NODE_ENV === 'development' ? await developmentSecret(config) : undefined);
  if (!secret) problems.push('AUTH_SECRET: required by the auth role (at least 32 characters)');
  if (production && !config.AUTH_BASE_URL) problems.push('AUTH_BASE_URL: required by the auth role in production');
  if (production && !config.AUTH_DOMAIN) problems.push('AUTH_DOMAIN: required by the auth role in production');
  if (problems.length) throw new ConfigError(problems);
  const baseUrl = (config.AUTH_BASE_URL ?? `http://localhost:${config.PORT}`).replace(/\/+$/, '');
  const trustedOrigins = new Set([
    new URL(baseUrl).origin,
    ...(config.AUTH_TRUSTED_ORIGINS ?? '').split(',').map((o) => o.trim()).filter(Boolean).map((o) => new URL(o).origin),
    ...(config.NODE_ENV === 'development' ? developmentOrigins(config) : []),
  ]);
  return { secret: secret!, baseUrl, domain: config.AUTH_DOMAIN ?? new URL(baseUrl).host, trustedOrigins };
}
