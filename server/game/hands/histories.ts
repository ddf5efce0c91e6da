// Hand histories for the players who played them (JWT; identity from the token only):
//   GET /api/hands                 the caller's hands, newest first: `limit` (1..200, default 50),
//                                  `before` (an ISO time: hands started before it), `tableId`,
//                                  `agentId` (hands one of the caller's agents played)
//   GET /api/hands/:handId         one hand the caller was dealt into: every event, with the hole
//                                  cards of the caller's own seats only (others' cards appear where
//                                  the hand showed them), and the result
// A hand the caller was not dealt into is 404 `hand_not_found`, whether it exists or not. This is
// what an agent's owner reads before flagging one of its decisions (POST /api/agents/:id/flags).
// `format=phh` on either route answers the same view as PHH text instead of JSON (phh.ts): one hand,
// or the listed hands as one `.phhs` file (newest first, as listed).
import type { Express, Response } from 'express';
import type pg from 'pg';
import { z } from 'zod';
import { ApiError, zodIssues } from '../../http/errors.ts';
import type { JwtVerifier } from '../../http/jwt.ts';
import { describeRoute } from '../../http/openapi.ts';
import { storedHand } from './compact.ts';
import { handsToPhhs, handToPhh, type PhhHand } from './phh.ts';
import { listedHands, listedHandsForPlayer, type HandFilter } from '../queries.ts';

const FIRST_SQL_TIME = Date.parse('0001-01-01T00:00:00Z');
const LAST_SQL_TIME = Date.parse('9999-12-31T23:59:59.999Z');
const withinSqlYears = (iso: string) => {
  const at = Date.parse(iso);
  return at >= FIRST_SQL_TIME && at <= LAST_SQL_TIME;
};

export const handListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  // a time Postgres holds (year 1 to 9999): `0000-01-01` parses in JavaScript but not in SQL
  before: z.iso.datetime({ offset: true }).refine(withinSqlYears, 'a time between year 1 and 9999').optional(),
  tableId: z.string().min(1).max(128).optional(),
  agentId: z.uuid().optional(),
  format: z.enum(['json', 'phh']).default('json').describe('json (the default), or phh: the hands as one PHH `.phhs` file (text/plain)'),
});

export const handQuery = z.object({
  format: z.enum(['json', 'phh']).default('json').describe('json (the default), or phh: the hand as a PHH file (text/plain)'),
});

/** PHH is TOML; the spec names no media type, so plain UTF-8 text a browser shows and any tool reads. */
const PHH_MEDIA_TYPE = 'text/plain; charset=utf-8';
const PHH_TEXT = { mediaType: 'text/plain', description: 'with format=phh: PHH (TOML), the caller\'s view' };

/** A download name safe in a header and on any file system: the hand id, other characters (its `:`) as `-`. */
const phhFileName = (handId: string, ext: string) => `${handId.replace(/[^A-Za-z0-9._-]/g, '-')}.${ext}`;

interface HistoryEvent {
  type: string;
  seat?: number;
  [field: string]: unknown;
}

/** The hand's events as `seats` may see them: hole cards of other seats are left out. */
export function redactHistory(history: HistoryEvent[], seats: readonly number[]): HistoryEvent[] {
  return history.filter((e) => e.type !== 'hole_cards' || seats.includes(e.seat as number));
}

export const handHistoryRoutes = [
  describeRoute({
    method: 'get', path: '/api/hands', auth: 'jwt', summary: 'The caller\'s hands (theirs or their agents\'), newest first', query: handListQuery,
    responses: { 200: { description: '{ hands: [{ handId, tableId, handNumber, status, startedAt, endedAt, agents, net }] }; with format=phh, those hands as one PHH `.phhs` file', text: PHH_TEXT } },
  }),
  describeRoute({
    method: 'get', path: '/api/hands/:handId', auth: 'jwt', summary: 'A hand\'s history, as the caller may see it', query: handQuery,
    responses: { 200: { description: 'the hand and its events, its revealed deal and signed record (docs/dealer.md); with format=phh, the hand as a PHH file', text: PHH_TEXT }, 404: 'hand_not_found' },
  }),
];

type ListQuery = z.infer<typeof handListQuery>;
const filterOf = (userId: string, q: ListQuery): HandFilter => ({ userId, agentId: q.agentId ?? null, tableId: q.tableId ?? null, before: q.before ?? null, limit: q.limit });

/** A stored hand's signed record, as its row holds it (null: none; `text` only where it was read). */
const signedRecordOf = (h: Record<string, any>) =>
  (h.record_hash ? { text: h.record as string | undefined, hash: h.record_hash as string, signature: h.record_signature as string, publicKey: h.dealer_key as string } : null);

/** A hand_for_player row as phh.ts reads it: the stored history (compact.ts) redacted for the caller's seats. */
function phhHand(h: Record<string, any>): PhhHand {
  const stored = storedHand(h);
  return {
    handId: h.hand_id, tableId: h.table_id, handNumber: Number(h.hand_number), status: h.status, startedAt: h.started_at,
    history: redactHistory(stored.history as HistoryEvent[], h.seats), result: stored.result as PhhHand['result'], viewerSeats: h.seats,
    deal: h.deal ?? null,
    record: signedRecordOf(h),
  };
}

function sendPhh(res: Response, text: string, fileName: string) {
  res.set('content-type', PHH_MEDIA_TYPE);
  res.set('content-disposition', `inline; filename="${fileName}"`);
  res.send(text);
}

async function listAsPhh(pool: pg.Pool, res: Response, userId: string, q: ListQuery) {
  const rows = await listedHandsForPlayer(pool, filterOf(userId, q));
  sendPhh(res, handsToPhhs(rows.map(phhHand)), 'hands.phhs');
}

export function installHandHistoryRoutes(app: Express, deps: { pool: pg.Pool; jwt: JwtVerifier }) {
  const { pool, jwt } = deps;

  app.get('/api/hands', jwt.require, async (req, res) => {
    const userId: string = res.locals.claims.sub;
    const parsed = handListQuery.safeParse(req.query);
    if (!parsed.success) throw new ApiError(400, 'bad_request', zodIssues(parsed.error));
    const q = parsed.data;
    if (q.format === 'phh') return listAsPhh(pool, res, userId, q);
    const rows = await listedHands(pool, filterOf(userId, q));
    res.json({
      hands: rows.map((h) => ({
        handId: h.hand_id, tableId: h.table_id, handNumber: Number(h.hand_number), status: h.status,
        startedAt: h.started_at.toISOString(), endedAt: h.ended_at?.toISOString() ?? null, agents: h.agents,
        net: h.net === null ? null : String(h.net),
      })),
    });
  });

  app.get('/api/hands/:handId', jwt.require, async (req, res) => {
    const userId: string = res.locals.claims.sub;
    const parsed = handQuery.safeParse(req.query);
    if (!parsed.success) throw new ApiError(400, 'bad_request', zodIssues(parsed.error));
    const handId = String(req.params.handId);
    if (handId.length > 128) throw new ApiError(404, 'hand_not_found');
    const { rows } = await pool.query(
      `select (x.hand).hand_id, (x.hand).table_id, (x.hand).hand_number, (x.hand).status, (x.hand).started_at,
              (x.hand).ended_at, (x.hand).agents, (x.hand).history, (x.hand).result, (x.hand).compact, x.seats,
              (x.hand).deal, (x.hand).record, (x.hand).record_hash, (x.hand).record_signature, (x.hand).dealer_key
         from game.hand_for_player($1, $2) x`,
      [handId, userId],
    );
    const h = rows[0];
    if (!h) throw new ApiError(404, 'hand_not_found');
    if (parsed.data.format === 'phh') {
      // a hand with nothing dealt has no PHH (and no seat of the caller): as not found
      const text = handToPhh(phhHand(h));
      if (text === null) throw new ApiError(404, 'hand_not_found');
      return sendPhh(res, text, phhFileName(h.hand_id, 'phh'));
    }
    const stored = storedHand(h);
    res.json({
      handId: h.hand_id, tableId: h.table_id, handNumber: Number(h.hand_number), status: h.status,
      startedAt: h.started_at.toISOString(), endedAt: h.ended_at?.toISOString() ?? null, agents: h.agents,
      yourSeats: h.seats, history: redactHistory(stored.history as HistoryEvent[], h.seats), result: stored.result,
      // what the hand's end revealed of its deal and its signed record (docs/dealer.md): npm run verify:hand checks them
      deal: h.deal ?? null,
      record: signedRecordOf(h),
    });
  });
}
