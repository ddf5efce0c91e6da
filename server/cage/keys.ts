// The operators' keys (issue 31, docs/security.md "Keys"): the pinned public keys the platform
// trusts (receipt, jwt, arbiter), listed, pinned and retired by an operator (their access JWT, a live
// admin session checked in SQL: cage.pin_key, cage.retire_key). `npm run ops -- keys` calls these.
//   GET  /api/operator/keys   operator JWT; `?purpose=`: the pinned keys, active first
//   POST /api/operator/keys   operator JWT; `{ action: 'pin' | 'retire', purpose, publicKey }`
import type { Express } from 'express';
import type pg from 'pg';
import type { Logger } from 'pino';
import { z } from 'zod';
import { parseInput } from '../http/errors.ts';
import { operatorSession, type JwtVerifier } from '../http/jwt.ts';
import { describeRoute } from '../http/openapi.ts';
import { KEY_PURPOSES, pinnedKeys } from '../crypto/pins.ts';

const keysQuery = z.object({ purpose: z.enum(KEY_PURPOSES).optional() }).strict();
const keyBody = z.object({
  action: z.enum(['pin', 'retire']),
  purpose: z.enum(KEY_PURPOSES),
  publicKey: z.string().regex(/^[0-9a-fA-F]{64}$/, 'an ed25519 public key: 32 bytes as hex'),
}).strict();

export const keyRoutes = [
  describeRoute({
    method: 'get', path: '/api/operator/keys', auth: 'admin', summary: 'The pinned public keys (receipt, jwt, arbiter)', query: keysQuery,
    responses: { 200: '{ keys: [{ purpose, publicKey, pinnedAt, pinnedBy, retiredAt, retiredBy }] }' },
  }),
  describeRoute({
    method: 'post', path: '/api/operator/keys', auth: 'admin', summary: 'Pins or retires a public key for a purpose', body: keyBody,
    responses: { 200: '{ purpose, publicKey, pinnedAt, pinnedBy, retiredAt, retiredBy, changed }', 409: 'key_retired | key_not_pinned' },
  }),
];

const parse = parseInput;

export function installKeyRoutes(app: Express, deps: { pool: pg.Pool; log: Logger; jwt: JwtVerifier }) {
  app.get('/api/operator/keys', deps.jwt.requireAdmin, async (req, res) => {
    const q = parse(keysQuery, req.query);
    res.json({ keys: await pinnedKeys(deps.pool, q.purpose) });
  });

  app.post('/api/operator/keys', deps.jwt.requireAdmin, async (req, res) => {
    const b = parse(keyBody, req.body);
    const { rows } = await deps.pool.query<{
      purpose: string; public_key: Buffer; pinned_at: Date; pinned_by: string | null; retired_at: Date | null; retired_by: string | null; replayed: boolean;
    }>(
      `select purpose, public_key, pinned_at, pinned_by, retired_at, retired_by, replayed from cage.${b.action === 'pin' ? 'pin_key' : 'retire_key'}($1, $2, $3)`,
      [operatorSession(res), b.purpose, Buffer.from(b.publicKey, 'hex')],
    );
    const k = rows[0]!;
    if (!k.replayed) deps.log.warn({ adminId: res.locals.claims.sub, action: b.action, purpose: b.purpose, publicKey: b.publicKey.toLowerCase() }, `key ${b.action === 'pin' ? 'pinned' : 'retired'} by an operator`);
    res.json({
      purpose: k.purpose, publicKey: k.public_key.toString('hex'), pinnedAt: k.pinned_at, pinnedBy: k.pinned_by,
      retiredAt: k.retired_at, retiredBy: k.retired_by, changed: !k.replayed,
    });
  });
}
