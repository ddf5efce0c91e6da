// Hand boundaries: what the dealer calls between hands. A hand holds its table (seat funding and
// stand-up answer 409 hand_in_progress); its end writes the new stacks and the rake in one
// transaction (game.finish_hand), then every position left with no chips is settled as a bust by
// the cage (an explicit zero bust_close row and receipt), best effort: a bust the cage did not
// take is settled when the player's seat is next touched (its stand-up shows a zero stack).
import type pg from 'pg';
import type { Logger } from 'pino';
import type { ServiceClient } from '../http/service-client.ts';

export interface HandEnd {
  busted: { playerId: string; userId: string; settled: boolean }[];
}

export function createHands(deps: { pool: pg.Pool; bank: ServiceClient; log: Logger }) {
  const { pool, bank, log } = deps;
  return {
    async begin(tableId: string, handId: string): Promise<void> {
      await pool.query('select game.begin_hand($1, $2)', [tableId, handId]);
    },
    async finish(tableId: string, handId: string, stacks: Record<string, bigint>, rake: bigint): Promise<HandEnd> {
      const { rows } = await pool.query<{ player_id: bigint; user_id: string }>(
        'select player_id, user_id from game.finish_hand($1, $2, $3::jsonb, $4)',
        [tableId, handId, JSON.stringify(Object.fromEntries(Object.entries(stacks).map(([k, v]) => [k, Number(v)]))), rake.toString()],
      );
      const busted: HandEnd['busted'] = [];
      for (const r of rows) {
        const answer = await bank.post('/internal/bust', { tableId, userId: r.user_id });
        if (!answer.ok) log.warn({ tableId, userId: r.user_id, status: answer.status, error: answer.body.error }, 'bust not settled by the cage yet');
        busted.push({ playerId: r.player_id.toString(), userId: r.user_id, settled: answer.ok });
      }
      return { busted };
    },
  };
}
