// What the auth role needs beyond the shared configuration. In production every value must be set.
// Elsewhere the base URL and SIWE domain default to this machine. (The JWT signing key is the
// role's own, AUTH_JWT_KEY or its development file: server/crypto/pins.ts, roleKey.)
import { ConfigError, type Config } from '../config/index.ts';

export interface AuthSettings {
  baseUrl: string;
  domain: string;
  /** Origins whose cross-origin session calls are accepted: this service's own and the configured ones. */
  trustedOrigins: Set<string>;
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

export function authSettings(config: Config): AuthSettings {
  const production = config.NODE_ENV === 'production';
  const problems: string[] = [];
  if (production && !config.AUTH_BASE_URL) problems.push('AUTH_BASE_URL: required by the auth role in production');
  if (production && !config.AUTH_DOMAIN) problems.push('AUTH_DOMAIN: required by the auth role in production');
  if (problems.length) throw new ConfigError(problems);
  const baseUrl = (config.AUTH_BASE_URL ?? `http://localhost:${config.PORT}`).replace(/\/+$/, '');
  const trustedOrigins = new Set([
    new URL(baseUrl).origin,
    ...(config.AUTH_TRUSTED_ORIGINS ?? '').split(',').map((o) => o.trim()).filter(Boolean).map((o) => new URL(o).origin),
    ...(config.NODE_ENV === 'development' ? developmentOrigins(config) : []),
  ]);
  return { baseUrl, domain: config.AUTH_DOMAIN ?? new URL(baseUrl).host, trustedOrigins };
}
