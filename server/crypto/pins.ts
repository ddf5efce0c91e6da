// The pinned public keys (db/functions/cage/55_keys.sql, docs/security.md "Keys"). A signing process
// holds its private key (server/crypto/key-files.ts) and refuses to start unless the key's public
// half is pinned and active: nobody signs with a key the platform does not trust. Pinning is an
// operator's act (`npm run ops -- keys pin`) or the owner's: outside production `npm start`, which
// runs the migrations as the owner, pins the keys of the roles it starts (pinDevelopmentKeys).
import { ed25519 } from '@noble/curves/ed25519.js';
import pg from 'pg';
import type { Config, Role } from '../config/index.ts';
import { refusedWith } from '../http/errors.ts';
import { loadPrivateKey } from './key-files.ts';
import { oneClient } from '../db/pools.ts';

export const KEY_PURPOSES = ['receipt', 'jwt', 'arbiter'] as const;
export type KeyPurpose = (typeof KEY_PURPOSES)[number];

export interface PinnedKey {
  purpose: KeyPurpose;
  publicKey: string;
  pinnedAt: Date;
  pinnedBy: string | null;
  retiredAt: Date | null;
  retiredBy: string | null;
}

type Queryable = Pick<pg.Pool, 'query'>;

/** The pinned keys of a purpose (every purpose when omitted), read through cage.pinned_keys. */
export async function pinnedKeys(db: Queryable, purpose?: KeyPurpose): Promise<PinnedKey[]> {
  const { rows } = await db.query<{
    purpose: KeyPurpose; public_key: Buffer; pinned_at: Date; pinned_by: string | null; retired_at: Date | null; retired_by: string | null;
  }>('select purpose, public_key, pinned_at, pinned_by, retired_at, retired_by from cage.pinned_keys($1)', [purpose ?? null]);
  return rows.map((r) => ({
    purpose: r.purpose, publicKey: r.public_key.toString('hex'), pinnedAt: r.pinned_at, pinnedBy: r.pinned_by,
    retiredAt: r.retired_at, retiredBy: r.retired_by,
  }));
}

export class KeyNotPinnedError extends Error {
  readonly purpose: KeyPurpose;
  readonly publicKey: string;
  constructor(purpose: KeyPurpose, publicKey: string, source: string) {
    super(`the ${purpose} key from ${source} (public key ${publicKey}) is not pinned, or was retired: `
      + `an operator pins it with \`npm run ops -- keys pin ${purpose} ${publicKey}\` (or the owner with --owner); `
      + 'nothing is signed with a key the platform does not trust');
    this.name = 'KeyNotPinnedError';
    this.purpose = purpose;
    this.publicKey = publicKey;
  }
}

/** Throws KeyNotPinnedError unless `publicKey` is an active (pinned, not retired) key of `purpose`. */
export function requireActive(pins: PinnedKey[], purpose: KeyPurpose, publicKey: Uint8Array, source: string): void {
  const hex = Buffer.from(publicKey).toString('hex');
  if (!pins.some((p) => p.purpose === purpose && p.publicKey === hex && p.retiredAt === null)) {
    throw new KeyNotPinnedError(purpose, hex, source);
  }
}

/** The owner's pin (cage_private.pin_key with no operator): on a connection as the database owner. */
export async function pinAsOwner(owner: Queryable, purpose: KeyPurpose, publicKey: Uint8Array): Promise<boolean> {
  const { rows } = await owner.query<{ replayed: boolean }>(
    'select replayed from cage_private.pin_key(null, $1, $2)', [purpose, Buffer.from(publicKey)],
  );
  return !rows[0]!.replayed;
}

/** The owner's retirement (cage_private.retire_key with no operator). */
export async function retireAsOwner(owner: Queryable, purpose: KeyPurpose, publicKey: Uint8Array): Promise<boolean> {
  const { rows } = await owner.query<{ replayed: boolean }>(
    'select replayed from cage_private.retire_key(null, $1, $2)', [purpose, Buffer.from(publicKey)],
  );
  return !rows[0]!.replayed;
}

/** The private keys each role signs with: its name (the development file), its variable. */
export const ROLE_KEYS: Partial<Record<Role, { purpose: KeyPurpose; name: string; envName: 'CAGE_RECEIPT_KEY' | 'AUTH_JWT_KEY' }>> = {
  cage: { purpose: 'receipt', name: 'receipt', envName: 'CAGE_RECEIPT_KEY' },
  auth: { purpose: 'jwt', name: 'jwt', envName: 'AUTH_JWT_KEY' },
};

/** The private key a role signs with (its variable, or outside production its development file). */
export function roleKey(config: Config, role: 'cage' | 'auth') {
  const k = ROLE_KEYS[role]!;
  return loadPrivateKey({
    name: k.name, envName: k.envName, configuredHex: config[k.envName], nodeEnv: config.NODE_ENV, pgDataDir: config.PG_DATA_DIR,
  });
}

/**
 * Outside production, as the owner (`npm start` after its migrations; the test harness): pins the
 * public halves of the keys the given roles sign with (generating their development files when no
 * variable is set) and CAGE_CUSTODY_ARBITER_PUBKEY when set. Returns what it pinned, for the log.
 * In production it pins nothing: an operator does (`npm run ops -- keys pin`).
 */
export async function pinDevelopmentKeys(ownerUrl: string, config: Config, roles: Role[]) {
  const pinned: { purpose: KeyPurpose; publicKey: string; source: string; added: boolean }[] = [];
  if (config.NODE_ENV === 'production') return pinned;
  const owner = oneClient({ connectionString: ownerUrl });
  await owner.connect();
  try {
    for (const role of ['cage', 'auth'] as const) {
      if (!roles.includes(role)) continue;
      const { privateKey, source } = await roleKey(config, role);
      const publicKey = ed25519.getPublicKey(privateKey);
      const purpose = ROLE_KEYS[role]!.purpose;
      const added = await pinAsOwner(owner, purpose, publicKey).catch((err: unknown) => {
        if (!refusedWith(err, 'cage', 'key_retired')) throw err;
        throw new Error(`the ${purpose} key from ${source} was retired: it is never pinned again; give ${ROLE_KEYS[role]!.envName} a new key`
          + `${source === ROLE_KEYS[role]!.envName ? '' : ` (or remove ${source} to have a new one generated)`}`);
      });
      pinned.push({ purpose, publicKey: Buffer.from(publicKey).toString('hex'), source, added });
    }
    if (config.CAGE_CUSTODY_ARBITER_PUBKEY && roles.some((r) => r === 'cage' || r === 'worker')) {
      const publicKey = Buffer.from(config.CAGE_CUSTODY_ARBITER_PUBKEY, 'hex');
      pinned.push({ purpose: 'arbiter', publicKey: config.CAGE_CUSTODY_ARBITER_PUBKEY.toLowerCase(), source: 'CAGE_CUSTODY_ARBITER_PUBKEY', added: await pinAsOwner(owner, 'arbiter', publicKey) });
    }
  } finally {
    await owner.end();
  }
  return pinned;
}
