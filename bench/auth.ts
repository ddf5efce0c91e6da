// The auth benchmark: JWT verifications per second through the downstream verification path
// (server/http/jwt.ts: the auth role's JWKS fetched over HTTP once and cached) against a bare jose
// `jwtVerify` loop with a local key set, in the same process and run; and bridge sign-ins per
// second for returning users (a provider ID token verified against a local OIDC issuer, the SQL
// bridge lookup, a fresh access JWT), over HTTP at 8 concurrent clients. Rounds are interleaved
// and medians quoted, as everywhere in bench/.
import { randomUUID } from 'node:crypto';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { startAuth } from '../server/roles/auth.ts';
import { createKeyStore } from '../server/auth/keys.ts';
import { benchJwtKey } from './lib/keys.ts';
import { pinDevelopmentKeys } from '../server/crypto/pins.ts';
import { loadConfig } from '../server/config/index.ts';
import { migrate } from '../server/db/migrate.ts';
import { createOwnerPool, createRolePool } from '../server/db/pools.ts';
import { createJwtVerifier } from '../server/http/jwt.ts';
import { createLogger } from '../server/telemetry/index.ts';
import type pg from 'pg';
import { startLocalIssuer, type LocalIssuer } from '../test/helpers/oidc-issuer.ts';
import { benchDatabase, fmtRate, fmtRatio, median, flagsOrUsage, table, timed } from './lib/harness.ts';

const USAGE = `usage: npm run bench -- auth [--seconds N] [--rounds N] [--users N]
  --seconds  measured seconds per case per round (default 3)
  --rounds   interleaved rounds (default 3)
  --users    returning users for the bridge case (default 200)`;

const ISSUER = 'http://auth.bench.local';

/** Returning users, created once through the bridge with invite codes; each one's fresh ID token (valid an hour). */
async function returningUsers(owner: pg.Pool, authUrl: string, idp: LocalIssuer, count: number): Promise<string[]> {
  const subs = Array.from({ length: count }, () => randomUUID());
  await owner.query("select auth.mint_invite('bench-invite-code', $1)", [subs.length]);
  for (const sub of subs) {
    const res = await fetch(`${authUrl}/api/auth/bridge`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ idToken: await idp.idToken({ sub }), inviteCode: 'bench-invite-code' }),
    });
    if (res.status !== 200) throw new Error(`setup sign-in failed: ${res.status} ${await res.text()}`);
  }
  return Promise.all(subs.map((sub) => idp.idToken({ sub }, { expiresIn: '1h' })));
}

/** The cases in `rounds` interleaved rounds (order rotated), then the medians and the verification ratio. */
async function interleave(cases: Record<string, () => Promise<number>>, rounds: number) {
  const names = Object.keys(cases);
  const results: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  const ratios: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const order = names.map((_, i) => names[(i + round) % names.length]!);
    const got: Record<string, number> = {};
    for (const n of order) got[n] = await cases[n]!();
    for (const n of names) results[n]!.push(got[n]!);
    ratios.push(got.downstream! / got['bare jose']!);
    console.log(`round ${round + 1}: ${order.map((n) => `${n} ${fmtRate(got[n]!)}`).join(', ')}`);
  }
  console.log('');
  console.log(table(['case', 'per second (median)'], names.map((n) => [n, fmtRate(median(results[n]!))])));
  console.log('');
  console.log(`JWT verifications: downstream path vs bare jose jwtVerify = ${fmtRatio(median(ratios))} (median of within-round ratios)`);
  console.log(`bridge sign-ins for returning users at 8 clients: ${fmtRate(median(results['bridge@8']!))}/s`);
}

export default async function authBench(args: string[]): Promise<number> {
  const flags = flagsOrUsage(args, { seconds: 3, rounds: 3, users: 200 }, USAGE);
  if (!flags) return 2;
  const db = await benchDatabase(console.log);
  const idp = await startLocalIssuer();
  let role;
  const owner = createOwnerPool(db.url, 2);
  try {
    await migrate(db.url);
    const config = loadConfig({
      NODE_ENV: 'test', PORT: '0', AUTH_BASE_URL: ISSUER,
      IDP_ISSUER: idp.issuer, IDP_JWKS_URL: idp.jwksUrl, IDP_AUDIENCE: idp.audience, LOG_LEVEL: 'silent',
    });
    await pinDevelopmentKeys(db.url, config, ['auth']); // as `npm start` does, as the owner
    role = await startAuth({
      config,
      databaseUrl: db.url,
      log: createLogger('silent'),
    });
    const authPool = createRolePool(db.url, 'poker_auth', { max: 2 });
    const token = await createKeyStore(authPool, { privateKey: await benchJwtKey(), issuer: ISSUER }).sign({ sub: randomUUID() });
    const localJwks = createLocalJWKSet((await (await fetch(`${role.url}/api/auth/jwks`)).json()) as never);
    const downstream = createJwtVerifier({ jwksUrl: `${role.url}/api/auth/jwks`, issuer: ISSUER });
    await downstream.verify(token); // the first call fetches the JWKS; the loop measures the cached path

    const idTokens = await returningUsers(owner, role.url!, idp, Math.max(8, Math.round(flags.users)));

    const cases: Record<string, () => Promise<number>> = {
      'bare jose': async () => (await timed(1, flags.seconds, async () => {
        await jwtVerify(token, localJwks, { issuer: ISSUER, audience: ISSUER, algorithms: ['EdDSA'], requiredClaims: ['exp', 'iat', 'sub'] });
        return 1;
      })).perSecond,
      downstream: async () => (await timed(1, flags.seconds, async () => {
        await downstream.verify(token);
        return 1;
      })).perSecond,
      'bridge@8': async () => (await timed(8, flags.seconds, async (w) => {
        const res = await fetch(`${role!.url}/api/auth/bridge`, {
          method: 'POST', headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ idToken: idTokens[Math.floor(Math.random() * idTokens.length)]! }),
        });
        if (res.status !== 200) throw new Error(`bridge sign-in failed (worker ${w}): ${res.status}`);
        await res.arrayBuffer();
        return 1;
      })).perSecond,
    };
    await interleave(cases, Math.max(1, Math.round(flags.rounds)));
    await authPool.end();
    return 0;
  } finally {
    await role?.stop();
    await owner.end();
    await idp.close();
    await db.stop();
  }
}
