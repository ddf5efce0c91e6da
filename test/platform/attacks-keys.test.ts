// Issue 31, attacks with one credential on the platform's keys (docs/security.md "Keys"), tried as
// an attacker would: connected as a service login with its real password, the roles running, every
// step over SQL or HTTP. Class 1 (private keys readable by the logins that use them), class 3
// (signatures checked only in TypeScript: custody releases) and the "Also" bullet (a receipt stored
// under another user's id). Each attack is refused, or named by the audit's checks.
import { randomBytes, randomUUID } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { importJWK, SignJWT } from 'jose';
import pg from 'pg';
import * as custody from '../../server/cage/custody.ts';
import * as receipts from '../../server/cage/receipts.ts';
import { loginUrl, SERVICE_LOGINS } from '../../server/db/roles.ts';
import { expectCleanAudit } from '../helpers/cage.ts';
import { escape, seatedTable, signer } from '../helpers/custody.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { call, ISSUER, startMoneyPlatform } from '../helpers/money.ts';

type Money = Awaited<ReturnType<typeof startMoneyPlatform>>;
// every service login, and the admin GraphQL's two roles
const LOGINS = [...SERVICE_LOGINS, 'poker_admin', 'poker_anonymous'];

let db: TestDatabase;
let m: Money;
const arbiter = signer();
const logins = new Map<string, pg.Client>();
beforeAll(async () => {
  db = await createTestDatabase();
  m = await startMoneyPlatform(db, { env: { CAGE_CUSTODY_ARBITER_PUBKEY: arbiter.publicKey } });
  for (const login of ['poker_cage', 'poker_auth'] as const) {
    const client = new pg.Client({ connectionString: loginUrl(db.url, login, undefined) });
    await client.connect();
    logins.set(login, client);
  }
});
afterAll(async () => {
  for (const c of logins.values()) await c.end();
  await m?.platform.stop();
  await db?.drop();
});
const as = (login: 'poker_cage' | 'poker_auth') => logins.get(login)!;

/** The query's rows, or null when it is refused (the function gone, not granted, or refusing). */
async function attempt(client: pg.Client, sql: string, args: unknown[] = []) {
  try {
    return (await client.query(sql, args)).rows;
  } catch {
    return null;
  }
}

/** The SQLSTATE a query is refused with, or 'ok'. */
async function refusal(client: pg.Client, sql: string, args: unknown[] = []) {
  try {
    await client.query(sql, args);
    return 'ok';
  } catch (err) {
    return (err as { code?: string }).code;
  }
}

test('class 1: the cage login cannot obtain the receipt key and sign a made-up receipt that verifies', async () => {
  const published = Buffer.from((await call(`${m.cage}/api/cage/receipt-key`)).body.publicKey, 'hex');
  // the attack: ask the function that handed the key out (a "candidate" it ignores once one is kept)
  const rows = await attempt(as('poker_cage'), 'select cage.receipt_private_key($1) as key', [randomBytes(32)]);
  const stolen: Buffer | undefined = rows?.[0]?.key;
  const victim = randomUUID();
  const payload = new TextEncoder().encode(JSON.stringify({ kind: 'cash_out', userId: victim, chipAmount: '1000000', ledgerRefId: 'made-up' }));
  const signature = stolen ? ed25519.sign(payload, stolen) : randomBytes(64);
  expect(receipts.verifyReceipt(payload, signature, published)).toBe(false);
});

test('class 1: the auth login cannot publish a key of its own; a token it forges for a player is refused by the cage', async () => {
  const victim = await m.player(0);
  const mine = ed25519.utils.randomSecretKey();
  const jwk = { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(ed25519.getPublicKey(mine)).toString('base64url') };
  const kid = `attacker-${randomBytes(6).toString('hex')}`;
  // every way the auth login had or might have to get a key into the JWKS
  await attempt(as('poker_auth'), 'select auth.add_signing_key($1, $2, $3)', [kid, { ...jwk, kid, alg: 'EdDSA', use: 'sig' }, randomBytes(64)]);
  await attempt(as('poker_auth'), "select * from cage.pin_key(gen_random_uuid(), 'jwt', $1)", [Buffer.from(ed25519.getPublicKey(mine))]);
  await attempt(as('poker_auth'), "select * from cage_private.pin_key(null, 'jwt', $1)", [Buffer.from(ed25519.getPublicKey(mine))]);
  // a live grant for the victim, which the auth login may mint (as it does for every token it signs)
  const sid = (await attempt(as('poker_auth'), 'select auth.grant_access($1, 600) as sid', [victim.userId]))?.[0]?.sid;
  const jwks = (await call(`${m.platform.url('auth')}/api/auth/jwks`)).body as { keys: { kid: string; x: string }[] };
  const published = jwks.keys.find((k) => k.x === jwk.x);
  const key = await importJWK({ ...jwk, d: Buffer.from(mine).toString('base64url') }, 'EdDSA');
  const now = Math.floor(Date.now() / 1000);
  const forged = await new SignJWT({ sub: victim.userId, sid, walletAddress: null })
    .setProtectedHeader({ alg: 'EdDSA', kid: published?.kid ?? kid, typ: 'JWT' })
    .setIssuer(ISSUER).setAudience(ISSUER).setIssuedAt(now).setExpirationTime(now + 600)
    .sign(key);
  const answer = await call(`${m.cage}/api/cage/receipts`, { headers: { authorization: `Bearer ${forged}` } });
  expect(answer.status).toBe(401);
  expect(published).toBeUndefined();
});

test('class 1: pinning is an operator\'s act; the cage login, which executes the pin for the operators\' route, pins nothing without a live admin session', async () => {
  const victim = await m.player(0);
  const mine = Buffer.from(ed25519.getPublicKey(ed25519.utils.randomSecretKey()));
  const adminId = (await m.operator()).adminId;
  const { rows: [ended] } = await db.owner.query<{ sid: string }>(
    "insert into auth_private.sessions (user_id, token_hash, expires_at, revoked_at) values ($1, sha256(gen_random_uuid()::text::bytea), now() + interval '600 s', now()) returning sid", [adminId],
  );
  const playerSid = (await attempt(as('poker_auth'), 'select auth.grant_access($1, 600) as sid', [victim.userId]))![0].sid;
  for (const sid of [adminId, victim.userId, randomUUID(), ended!.sid, playerSid, null]) {
    for (const purpose of ['jwt', 'receipt', 'arbiter']) {
      expect(await refusal(as('poker_cage'), 'select * from cage.pin_key($1, $2, $3)', [sid, purpose, mine])).toBe('AUASR');
    }
    expect(await refusal(as('poker_cage'), "select * from cage.retire_key($1, 'receipt', $2)", [sid, Buffer.from((await call(`${m.cage}/api/cage/receipt-key`)).body.publicKey, 'hex')])).toBe('AUASR');
  }
  const { rows } = await db.owner.query('select count(*)::int as n from cage.pinned_keys(null) where public_key = $1 or retired_at is not null', [mine]);
  expect(rows[0].n).toBe(0);
});

/** A FREE custody entry of a player (a clean escape of their table), disputed by an operator. */
async function disputedEntry() {
  const operator = (await m.operator()).auth;
  const { tableId, players: [p] } = await seatedTable(m, [60]);
  const entryId = (await escape(m, operator, tableId)).body.entries[0].entryId as string;
  const d = (await call(`${m.cage}/admin/custody/dispute`, { headers: operator, body: { entryId, reason: 'chargeback' } })).body;
  return { player: p!, entryId, disputeId: d.disputeId as string, message: d.releaseMessage as string };
}

test('class 3: the cage login records a release with a random signature; the entry is not freed, the owner cannot claim it, the audit names it', async () => {
  const { player, entryId, disputeId, message } = await disputedEntry();
  // the arbiter's public key is public; the signature is made up
  const forged = await attempt(as('poker_cage'), 'select * from cage.release_custody($1, $2, $3, $4, $5)',
    [entryId, disputeId, message, randomBytes(64), Buffer.from(arbiter.publicKey, 'hex')]);
  expect(forged).not.toBeNull(); // recorded: SQL cannot verify ed25519 ...
  // ... but nothing is claimable until a second login (the worker) has verified it
  const claimNow = await call(`${m.cage}/api/custody/claim`, { headers: player.auth, body: { entryId } });
  expect(claimNow).toEqual({ status: 409, body: { error: 'custody_not_claimable' } });
  // the worker's step: the forged release gets its verdict; the entry stays disputed
  if ('verifyPendingReleases' in custody) await custody.verifyPendingReleases(db.pool('poker_worker', 1));
  const claimAfter = await call(`${m.cage}/api/custody/claim`, { headers: player.auth, body: { entryId } });
  expect(claimAfter).toEqual({ status: 409, body: { error: 'custody_not_claimable' } });
  // named, by the check that reads the arbiter key from the database (not from an environment)
  const named = 'releaseViolations' in custody ? await custody.releaseViolations(db.pool('poker_worker', 1)) : [];
  expect(named).toContainEqual(expect.objectContaining({ invariant: 'custody_release', detail: expect.objectContaining({ entryId, verdict: 'forged' }) }));
  // the real arbiter's release still goes through afterwards, and only it frees the entry
  expect((await call(`${m.cage}/admin/custody/release`, { headers: m.service, body: { entryId, disputeId, signature: arbiter.sign(message) } })).status).toBe(200);
  await custody.verifyPendingReleases(db.pool('poker_worker', 1));
  expect((await call(`${m.cage}/api/custody/claim`, { headers: player.auth, body: { entryId } })).status).toBe(200);
  await expectCleanAudit(db.pool('poker_cage', 1));
});

test('the "Also" bullet: the cage login cannot store a made-up receipt under another user\'s id', async () => {
  const attacker = await m.player(0);
  const victim = await m.player(0);
  const bought = await m.buy(attacker.userId, 5); // a ledger entry of the attacker's
  const ref = bought.refId as string;
  const payload = Buffer.from(JSON.stringify({ kind: 'cash_out', ledgerRefId: ref, userId: victim.userId, chipAmount: '1000000' }));
  const published = Buffer.from((await call(`${m.cage}/api/cage/receipt-key`)).body.publicKey, 'hex');
  // every signature of cage.store_receipt the login may have: naming the victim, or letting SQL derive
  await attempt(as('poker_cage'), 'select * from cage.store_receipt($1, $2, null, null, $3, $4, $5)', [ref, victim.userId, payload, randomBytes(64), published]);
  await attempt(as('poker_cage'), 'select * from cage.store_receipt($1, null, null, $2, $3, $4)', [ref, payload, randomBytes(64), published]);
  const { rows } = await db.owner.query('select count(*)::int as n from cage.receipts where user_id = $1', [victim.userId]);
  expect(rows[0].n).toBe(0);
  const listed = await call(`${m.cage}/api/cage/receipts`, { headers: victim.auth });
  expect(listed.body.receipts).toEqual([]);
});

test('class 1, the catalog: no service login may execute a function that returns a private key, nor select a column holding one', async () => {
  const PRIVATE = '(private|secret|signing_key)';
  const { rows: functions } = await db.owner.query<{ login: string; fn: string; name: string }>(
    `select l.login, p.oid::regprocedure::text as fn, p.pronamespace::regnamespace::text || '.' || p.proname as name
       from pg_proc p cross join unnest($1::text[]) l(login)
      where p.pronamespace::regnamespace::text not in ('pg_catalog', 'information_schema')
        and has_function_privilege(l.login, p.oid, 'execute')
        and (p.proname ~* $2 or exists (select from unnest(coalesce(p.proargnames, '{}')) a where a ~* $2 and a !~* '^p_'))
        and p.prorettype in ('bytea'::regtype, 'text'::regtype, 'record'::regtype, 'jsonb'::regtype)`,
    [LOGINS, PRIVATE],
  );
  expect(functions.map((f) => `${f.login}: ${f.fn}`)).toEqual([]);
  const { rows: columns } = await db.owner.query<{ login: string; col: string }>(
    `select l.login, c.table_schema || '.' || c.table_name || '.' || c.column_name as col
       from information_schema.columns c cross join unnest($1::text[]) l(login)
      where c.table_schema not in ('pg_catalog', 'information_schema') and c.column_name ~* $2
        and has_column_privilege(l.login, format('%I.%I', c.table_schema, c.table_name), c.column_name, 'select')`,
    [LOGINS, PRIVATE],
  );
  expect(columns.map((c) => `${c.login}: ${c.col}`)).toEqual([]);
  // and the tables that held them are gone
  const { rows: tables } = await db.owner.query(
    "select to_regclass('cage_private.receipt_keys') as receipt, to_regclass('auth_private.signing_keys') as jwt",
  );
  expect(tables[0]).toEqual({ receipt: null, jwt: null });
});
