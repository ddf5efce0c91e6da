// POST /api/tables: table creation as both banks serve it (spec: "Table creation (bank)"). The
// settings are validated per game type (extra fields stripped, missing required fields refused,
// cross-field rules), then game.create_table stores the record in the game schema: a duplicate
// table id inserts nothing and answers 409 table_exists.
import type { Express, RequestHandler } from 'express';
import type pg from 'pg';
import type { Logger } from 'pino';
import { z } from 'zod';
import { MAX_TURN_TIME_SEC } from '../game/tables/rules.ts';
import { ApiError, refusedWith, zodIssues } from '../http/errors.ts';
import { playerSession } from '../http/jwt.ts';
import { withSpan } from '../telemetry/index.ts';
import { resolvedSngSettingsSchema } from '../tournaments/settings.ts';
import { realMoneyOn } from './switches.ts';
import { describeRoute, type RouteContract } from '../http/openapi.ts';

const int = () => z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const positive = () => int().min(1);
const rakePercent = z.number().min(0).max(100);
const turnTimeSec = () => positive().max(MAX_TURN_TIME_SEC);

export function tableSettingsSchemas(options: { testAuthPermitted: boolean }) {
  const deckSeed = z.string().min(1).max(128).optional();
  const noDeckSeedOutsideHarness = (value: { deckSeed?: string }, ctx: z.RefinementCtx) => {
    if (value.deckSeed !== undefined && !options.testAuthPermitted) {
      ctx.addIssue({ code: 'custom', path: ['deckSeed'], message: 'deckSeed is accepted only while the test harness is permitted' });
    }
  };
  const kind = z.enum(['open', 'human_only', 'agent', 'copilot']).optional();
  const buyIns = (value: { minBuyIn: number; maxBuyIn: number }, ctx: z.RefinementCtx) => {
    if (value.maxBuyIn < value.minBuyIn) ctx.addIssue({ code: 'custom', path: ['maxBuyIn'], message: 'maxBuyIn must be at least minBuyIn' });
  };
  const poker = z
    .object({
      smallBlind: int(),
      bigBlind: positive(),
      ante: int().optional(),
      minBuyIn: positive(),
      maxBuyIn: positive(),
      maxPlayers: z.number().int().min(2).max(9),
      rakePercent,
      rakeCap: int(),
      rakeMinPot: int(),
      rakeRequiresFlop: z.boolean(),
      turnTimeSec: turnTimeSec(),
      turnTimerEnabled: z.boolean(),
      hostedOnly: z.boolean().optional(),
      showHands: z.boolean().optional(),
      deckSeed,
      kind,
    })
    .strip()
    .superRefine((s, ctx) => {
      if (s.bigBlind <= s.smallBlind) ctx.addIssue({ code: 'custom', path: ['bigBlind'], message: 'bigBlind must be greater than smallBlind' });
      buyIns(s, ctx);
      if (s.showHands === true && s.hostedOnly !== true) {
        ctx.addIssue({ code: 'custom', path: ['showHands'], message: 'showHands requires hostedOnly' });
      }
      noDeckSeedOutsideHarness(s, ctx);
    });
  // The spec's arena table does not declare deckSeed, but arena tests use it: accepted on the same
  // terms as poker's (harness only).
  const arena = z
    .object({
      minBuyIn: positive(),
      maxBuyIn: positive(),
      maxPlayers: z.number().int().min(2).max(8),
      rakePercent,
      rakeCap: int(),
      turnTimeSec: turnTimeSec(),
      turnTimerEnabled: z.boolean(),
      scoreTarget: positive(),
      deckSeed,
      kind,
    })
    .strip()
    .superRefine((s, ctx) => {
      buyIns(s, ctx);
      noDeckSeedOutsideHarness(s, ctx);
    });
  // A Sit-and-Go table (settings.mode 'sng'): the tournament's own fields, resolved (docs/tournaments.md);
  // the harness may also set deckSeed and clockFactor (every duration of the table divided by it).
  const sng = resolvedSngSettingsSchema({ testAuthPermitted: options.testAuthPermitted });
  return { poker, arena, sng };
}

/** The schema a body's settings are judged by: its game type's, or the tournament's for `mode: 'sng'`. */
function settingsSchema(schemas: ReturnType<typeof tableSettingsSchemas>, gameType: 'poker' | 'arena', settings: Record<string, unknown>) {
  if (gameType === 'poker' && settings.mode === 'sng') return schemas.sng;
  return schemas[gameType];
}

export const envelope = z.object({
  tableId: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/, '1..64 characters: letters, digits, _ . : - (not first)'),
  gameType: z.enum(['poker', 'arena']),
  settings: z.record(z.string(), z.unknown()),
  // which economy the table plays in (not in the spec's body: documented in docs/decisions.md)
  moneyKind: z.enum(['play', 'real']).default('play'),
});

/** The table's row, by its bank's function (the cage's tables: game.create_table; the chain bank's: bank.create_table). */
function insertTable(
  pool: pg.Pool, deps: { bank?: 'cage' | 'chain'; creationLimit: { tables: number; windowSeconds: number } },
  t: { tableId: string; gameType: string; settings: Record<string, unknown>; moneyKind: string; sid: string | null; mode: string; kind: unknown },
) {
  const limit = [deps.creationLimit.tables, deps.creationLimit.windowSeconds];
  return deps.bank === 'chain'
    ? pool.query('select table_id, status from bank.create_table($1, $2, $3, $4, $5, $6, $7, $8)', [
      t.tableId, t.gameType, JSON.stringify(t.settings), t.sid, ...limit, t.mode, t.kind,
    ])
    : pool.query('select table_id, status from game.create_table($1, $2, $3, $4, $5, $6, $7, $8, $9)', [
      t.tableId, t.gameType, JSON.stringify(t.settings), t.moneyKind, t.sid, ...limit, t.mode, t.kind,
    ]);
}

/**
 * The contract of installTableRoutes: the envelope, its settings judged by the game type's schema
 * (poker, arena, or poker with `mode: 'sng'`). The chain bank's tables are real money whatever
 * moneyKind says.
 */
export function tableCreateRoutes(options: { testAuthPermitted: boolean; bank?: 'cage' | 'chain' }): RouteContract[] {
  const schemas = tableSettingsSchemas(options);
  return [describeRoute({
    method: 'post', path: '/api/tables', auth: 'jwt', summary: options.bank === 'chain' ? 'Creates a real-money table on the chain bank' : 'Creates a table',
    body: envelope.extend({ settings: z.union([schemas.poker, schemas.arena, schemas.sng]) }),
    responses: {
      200: '{ tableId, gameType, status: active }', 400: 'missing_table_id / missing_game_type / validation_failed (with issues)',
      403: 'real_money_disabled', 409: 'table_exists', 429: 'table_limit_reached',
    },
  })];
}

export function installTableRoutes(
  app: Express,
  deps: {
    pool: pg.Pool; log: Logger; requireJwt: RequestHandler; testAuthPermitted: boolean;
    /** At most `tables` creations per user per `windowSeconds` (counted in SQL: 429 table_limit_reached). */
    creationLimit: { tables: number; windowSeconds: number };
    /** Whose table it is: the cage's (default), or the chain bank's (real money, chips on chain). */
    bank?: 'cage' | 'chain';
  },
) {
  const { pool, log } = deps;
  const schemas = tableSettingsSchemas({ testAuthPermitted: deps.testAuthPermitted });

  app.post('/api/tables', async (req, res) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const attributes = {
      'table.id': typeof body.tableId === 'string' ? body.tableId.slice(0, 64) : '',
      'table.game_type': typeof body.gameType === 'string' ? body.gameType.slice(0, 16) : '',
    };
    // every call has its span, a refused token included
    await withSpan('admin.tables.create', attributes, async (span) => {
      try {
        await new Promise<void>((resolve, reject) => deps.requireJwt(req, res, (err?: unknown) => (err ? reject(err) : resolve())));
      } catch (err) {
        span.setAttribute('result', 'unauthorized');
        throw err;
      }
      const userId: string = res.locals.claims.sub;
      span.setAttribute('auth.user_id', userId);
      const missing = body.tableId === undefined || body.tableId === null || body.tableId === '' ? 'missing_table_id'
        : body.gameType === undefined || body.gameType === null || body.gameType === '' ? 'missing_game_type' : undefined;
      if (missing) {
        span.setAttribute('result', 'validation_failed');
        throw new ApiError(400, missing);
      }
      const parsedEnvelope = envelope.safeParse(body);
      let settings: Record<string, unknown> | undefined;
      let issues = parsedEnvelope.success ? [] : zodIssues(parsedEnvelope.error);
      if (parsedEnvelope.success) {
        const parsed = settingsSchema(schemas, parsedEnvelope.data.gameType, parsedEnvelope.data.settings).safeParse(parsedEnvelope.data.settings);
        if (parsed.success) settings = parsed.data;
        else issues = zodIssues(parsed.error).map((i) => ({ ...i, path: ['settings', ...i.path] }));
      }
      if (!parsedEnvelope.success || !settings) {
        span.setAttribute('result', 'validation_failed');
        throw new ApiError(400, 'validation_failed', issues);
      }
      const { tableId, gameType } = parsedEnvelope.data;
      // the chain bank's chips are tokens on chain: its tables are real money
      const moneyKind = deps.bank === 'chain' ? 'real' : parsedEnvelope.data.moneyKind;
      const mode = settings.mode === 'sng' ? 'sng' : 'cash';
      span.setAttribute('settings.max_players', Number(mode === 'sng' ? settings.seats : settings.maxPlayers));
      if (moneyKind === 'real' && !(await realMoneyOn(pool))) {
        span.setAttribute('result', 'real_money_disabled');
        throw new ApiError(403, 'real_money_disabled');
      }
      const { rows } = await insertTable(pool, deps, {
        tableId, gameType, settings, moneyKind, sid: playerSession(res), mode, kind: settings.kind ?? 'open',
      }).catch((err: { code?: string }) => {
        if (refusedWith(err, 'game', 'table_limit_reached')) span.setAttribute('result', 'table_limit_reached');
        throw err;
      });
      if (rows.length === 0) {
        span.setAttribute('result', 'replay');
        throw new ApiError(409, 'table_exists');
      }
      span.setAttribute('result', 'created');
      log.info({ tableId, gameType, mode, moneyKind, userId }, 'table created');
      res.json({ tableId, gameType, status: 'active' });
    });
  });
}
