// What the auth role needs beyond the shared configuration. In production every value must be set;
// in development and test the base URL and SIWE domain default to this machine, and AUTH_SECRET must
// still be given (it encrypts the signing keys: a secret that changed would orphan them).
import { ConfigError, type Config } from '../config/index.ts';

export interface AuthSettings {
  secret: string;
  baseUrl: string;
  domain: string;
  /** Origins whose cross-origin session calls are accepted: this service's own and the configured ones. */
  trustedOrigins: Set<string>;
}

export function authSettings(config: Config): AuthSettings {
  const production = config.NODE_ENV === 'production';
  const problems: string[] = [];
  if (!config.AUTH_SECRET) problems.push('AUTH_SECRET: required by the auth role (at least 32 characters)');
  if (production && !config.AUTH_BASE_URL) problems.push('AUTH_BASE_URL: required by the auth role in production');
  if (production && !config.AUTH_DOMAIN) problems.push('AUTH_DOMAIN: required by the auth role in production');
  if (problems.length) throw new ConfigError(problems);
  const baseUrl = (config.AUTH_BASE_URL ?? `http://localhost:${config.PORT}`).replace(/\/+$/, '');
  const trustedOrigins = new Set([
    new URL(baseUrl).origin,
    ...(config.AUTH_TRUSTED_ORIGINS ?? '').split(',').map((o) => o.trim()).filter(Boolean).map((o) => new URL(o).origin),
  ]);
  return { secret: config.AUTH_SECRET!, baseUrl, domain: config.AUTH_DOMAIN ?? new URL(baseUrl).host, trustedOrigins };
}
