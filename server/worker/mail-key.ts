// The worker's mail key (issue 31, class 6): a secret a mail job carries (a password-reset token) is
// sealed in SQL to this key's public half (RSA-OAEP-SHA-256, db/functions/auth/65_mail_seal.sql), so
// the job's payload, which the worker login reads, holds no secret in clear. The private half is the
// worker process's alone: WORKER_MAIL_KEY (PKCS#8 PEM), or outside production a file of its own in the
// development key folder beside the data directory (`<PG_DATA_DIR>.keys/mail.pem`, 0600), made at the
// first start. The public half is pinned by the owner (pinMailKey, run by the migrating process),
// never by a service login: a login that pinned its own key would read every token sealed after.
import { constants, createPrivateKey, createPublicKey, generateKeyPairSync, privateDecrypt, type KeyObject } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { developmentKeyDir } from '../crypto/key-files.ts';
import { oneClient } from '../db/pools.ts';

export interface MailKey {
  privateKey: KeyObject;
  /** The public modulus and exponent, big-endian, as auth_private.pin_mail_key takes them. */
  modulus: Buffer;
  exponent: Buffer;
  /** Where it came from (the variable's name or the file's path; never the key). */
  source: string;
}

function fromPem(pem: string, source: string): MailKey {
  const privateKey = createPrivateKey(pem.replace(/\\n/g, '\n'));
  if (privateKey.asymmetricKeyType !== 'rsa') throw new Error(`${source}: an RSA private key (PKCS#8 PEM) is expected`);
  const jwk = createPublicKey(privateKey).export({ format: 'jwk' });
  const modulus = Buffer.from(jwk.n!, 'base64url');
  if (modulus.length < 256) throw new Error(`${source}: an RSA key of at least 2048 bits is expected`);
  return { privateKey, modulus, exponent: Buffer.from(jwk.e!, 'base64url'), source };
}

/** A new 2048-bit mail key, as PEM (a development file, a test's key). */
export function generateMailKeyPem(): string {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048, publicExponent: 65537 });
  return privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
}

/**
 * The worker's mail key: `configuredPem` when set; otherwise, outside production, the development
 * file (made on first use); undefined in production without the variable (reset mail is then dropped).
 */
export async function loadMailKey(options: { configuredPem?: string; nodeEnv: string; pgDataDir: string }): Promise<MailKey | undefined> {
  if (options.configuredPem) return fromPem(options.configuredPem, 'WORKER_MAIL_KEY');
  if (options.nodeEnv === 'production') return undefined;
  const dir = developmentKeyDir(options.pgDataDir);
  const file = path.join(dir, 'mail.pem');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  await writeFile(file, generateMailKeyPem(), { mode: 0o600, flag: 'wx' }).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'EEXIST') throw err;
  });
  return fromPem(await readFile(file, 'utf8'), file);
}

/** Pins the key's public half as the live mail key, connected as the owner. True when it changed. */
export async function pinMailKey(ownerUrl: string, key: MailKey): Promise<boolean> {
  const client = oneClient({ connectionString: ownerUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ changed: boolean }>('select auth_private.pin_mail_key($1, $2) as changed', [key.modulus, key.exponent]);
    return rows[0]!.changed;
  } finally {
    await client.end();
  }
}

/** Opens a sealed secret (base64 RSA-OAEP-SHA-256), or undefined when it was not sealed to this key. */
export function openSealed(key: MailKey, sealed: string): Buffer | undefined {
  try {
    return privateDecrypt({ key: key.privateKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' }, Buffer.from(sealed, 'base64'));
  } catch {
    return undefined;
  }
}
