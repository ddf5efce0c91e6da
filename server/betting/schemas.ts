// The betting domain's wire schemas, stated once (issue 32: the cage's player routes and the betting
// service's routes used two `stakeRef` schemas that disagreed). A stake's ref is what SQL makes of
// the bettor and their key (cage.open_bet_stake: `bet-stake:{userId}:{key}`); anything else is a
// 400 bad_request on both sides, never a lookup.
import { z } from 'zod';
import { ApiError, zodIssues } from '../http/errors.ts';
import { UUID } from '../http/jwt.ts';

export const marketId = z.string().min(1).max(80);
export const stakeRef = z.string().regex(/^bet-stake:[0-9a-f-]{36}:[\x21-\x7e]{1,128}$/, 'a stake ref (bet-stake:{userId}:{key})');
/** The bettor's token grant, where the betting service acts for the bettor. */
export const sid = z.string().regex(UUID, 'the bettor\'s token grant (sid)');

export function parse<T>(schema: z.ZodType<T>, value: unknown): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new ApiError(400, 'bad_request', zodIssues(parsed.error));
  return parsed.data;
}
