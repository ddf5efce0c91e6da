// Private signing keys live with the process that signs (issue 31, docs/security.md "Keys"): the
// dealer's, the cage's receipt key, the auth role's JWT keys. Each comes from its environment
// variable (hex); outside production, when that is unset, from a file of its own in a folder beside
// the embedded database's data directory (`<PG_DATA_DIR>.keys/<name>.key`, the folder 0700, the file
// 0600, owned by the process's user: no database login can read it), generated at the first start
// and reused after. Never from a table: the database keeps only the pinned public halves.
import { randomBytes } from 'node:crypto';
import { chmod, link, mkdir, readFile, stat, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';

export interface PrivateKeySource {
  /** The 32-byte Ed25519 seed. */
  privateKey: Uint8Array;
  /** Where it came from, for the boot log: the variable's name or the file's path (never the key). */
  source: string;
}

export class MissingKeyError extends Error {
  readonly envName: string;
  constructor(envName: string) {
    super(`${envName}: required in production (64 hex characters, an Ed25519 private key)`);
    this.envName = envName;
  }
}

const HEX_KEY = /^[0-9a-fA-F]{64}$/;

/** The folder development keys are kept in: beside the embedded database's data directory. */
export function developmentKeyDir(pgDataDir: string): string {
  return `${path.resolve(pgDataDir)}.keys`;
}

/**
 * The private key `name` (dealer, receipt, jwt, ...): `configuredHex` when set; otherwise, outside
 * production, the development file (created on first use; concurrent first starts race on an
 * exclusive link and every one reads the winner's key). Production without the variable refuses.
 */
export async function loadPrivateKey(options: {
  name: string;
  envName: string;
  configuredHex?: string;
  nodeEnv: string;
  pgDataDir: string;
}): Promise<PrivateKeySource> {
  const { name, envName, configuredHex, nodeEnv, pgDataDir } = options;
  if (configuredHex) {
    if (!HEX_KEY.test(configuredHex)) throw new Error(`${envName}: 64 hex characters (an Ed25519 private key)`);
    return { privateKey: Uint8Array.from(Buffer.from(configuredHex, 'hex')), source: envName };
  }
  if (nodeEnv === 'production') throw new MissingKeyError(envName);
  const dir = developmentKeyDir(pgDataDir);
  const file = path.join(dir, `${name}.key`);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  // written whole under a name of its own, then linked into place (link refuses an existing name):
  // a concurrent first start never reads a half-written file, and the first link wins
  if (!(await stat(file).catch(() => undefined))) {
    const draft = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
    await writeFile(draft, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
    try {
      await link(draft, file).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') throw err;
      });
    } finally {
      await unlink(draft);
    }
  }
  const hex = (await readFile(file, 'utf8')).trim();
  if (!HEX_KEY.test(hex)) throw new Error(`${file}: not a key (64 hex characters expected); remove it to generate a new one`);
  return { privateKey: Uint8Array.from(Buffer.from(hex, 'hex')), source: file };
}
