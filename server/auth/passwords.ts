// Admin passwords: scrypt (memory-hard), a random salt per hash, compared in constant time.
// Format: scrypt$N$r$p$salt$hash (base64url), so the cost can rise later without breaking old hashes.
import { randomBytes, scrypt as scryptCallback, timingSafeEqual, type ScryptOptions } from 'node:crypto';

const COST = { N: 2 ** 15, r: 8, p: 1 } as const; // 32 MiB per hash
const KEY_LENGTH = 32;

function scrypt(password: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scryptCallback(password.normalize('NFKC'), salt, KEY_LENGTH, { ...options, maxmem: 128 * options.N! * options.r! * 2 }, (err, key) =>
      err ? reject(err) : resolve(key),
    ),
  );
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, COST);
  return ['scrypt', COST.N, COST.r, COST.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/** A hash that nothing matches, so an unknown email costs the same time as a wrong password. */
export const DECOY_HASH = `scrypt$${COST.N}$${COST.r}$${COST.p}$${Buffer.alloc(16).toString('base64url')}$${Buffer.alloc(KEY_LENGTH).toString('base64url')}`;

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const actual = await scrypt(password, Buffer.from(salt, 'base64url'), { N: Number(n), r: Number(r), p: Number(p) });
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

/** A hash's scrypt parameters without its key (`scrypt$N$r$p$salt`): what the database hands out. */
export const DECOY_PARAMS = DECOY_HASH.slice(0, DECOY_HASH.lastIndexOf('$'));

/**
 * The scrypt key of a password under stored parameters (`scrypt$N$r$p$salt`, from
 * auth.admin_password_params): the proof auth.create_session compares with the stored key, so the
 * database, not this process, decides whether the password is right. Parameters that do not parse
 * derive against the decoy's, at the same cost.
 */
export async function derivePasswordKey(password: string, params: string): Promise<Buffer> {
  const [scheme, n, r, p, salt] = params.split('$');
  const ok = scheme === 'scrypt' && salt && [n, r, p].every((x) => /^[0-9]{1,7}$/.test(x ?? ''));
  const [, dn, dr, dp, dsalt] = DECOY_PARAMS.split('$');
  const use = ok ? { n: n!, r: r!, p: p!, salt: salt! } : { n: dn!, r: dr!, p: dp!, salt: dsalt! };
  return scrypt(password, Buffer.from(use.salt, 'base64url'), { N: Number(use.n), r: Number(use.r), p: Number(use.p) });
}
