// The dealer's boundary writer (group-commit.ts): a deal or a hand end alone is its own statement
// (game.deal_hand, game.end_hand); a batch of them is ONE call of game.write_boundaries, its
// arguments one array per argument of the two, so the batch costs one round trip to Postgres
// whatever its size (issue 33: the batch's statements, a round trip each plus begin and commit,
// made the process's boundaries wait on each other under load).
import type pg from 'pg';
import type { Boundary, BoundaryWriter } from './group-commit.ts';

/** game.end_hand's arguments in order (15), or game.deal_hand's (5); the agents (the end's 9th) a list of ids. */
export interface DealerBoundary extends Boundary {
  args: unknown[];
}

const END = 'select game.end_hand($1, $2, $3, $4::jsonb, $5, $6, $7::bytea, $8::jsonb, $9::uuid[], $10::timestamptz, $11, $12::jsonb, $13, $14, $15) as answer';
const DEAL = 'select coalesce(jsonb_agg(to_jsonb(s)), \'[]\'::jsonb) as answer from game.deal_hand($1, $2, $3, $4::jsonb, $5::jsonb) s';
const END_ARGS = 15;
const DEAL_ARGS = 5;
const BATCH = `select kind, ord, answer from game.write_boundaries(${Array.from({ length: END_ARGS + DEAL_ARGS }, (_, i) => `$${i + 1}`).join(', ')})`;
const AGENTS = 8; // the end's agents: a uuid[] literal inside the batch's text[]

/** One array per argument: the i-th holds every boundary's i-th argument. */
function columns(rows: unknown[][], width: number): unknown[][] {
  return Array.from({ length: width }, (_, i) => rows.map((r) => r[i] ?? null));
}

/** Each boundary's answer: an end's (game.end_hand's jsonb), a deal's seats (game.deal_hand's rows). */
export function dealerWriter(pool: pg.Pool): BoundaryWriter<DealerBoundary, unknown> {
  return {
    async alone(b) {
      const { rows } = await pool.query<{ answer: unknown }>({ name: `game.boundary.${b.kind}`, text: b.kind === 'end' ? END : DEAL, values: b.args });
      return rows[0]!.answer;
    },
    async together(batch) {
      const ends = batch.filter((b) => b.kind === 'end').map((b) => b.args.map((a, i) => (i === AGENTS ? `{${(a as string[]).join(',')}}` : a)));
      const deals = batch.filter((b) => b.kind === 'deal').map((b) => b.args);
      const { rows } = await pool.query<{ kind: 'end' | 'deal'; ord: number; answer: unknown }>({
        name: 'game.write_boundaries', text: BATCH, values: [...columns(ends, END_ARGS), ...columns(deals, DEAL_ARGS)],
      });
      const answers = { end: [] as unknown[], deal: [] as unknown[] };
      for (const r of rows) answers[r.kind][r.ord - 1] = r.answer;
      const next = { end: 0, deal: 0 };
      return batch.map((b) => answers[b.kind][next[b.kind]++]);
    },
  };
}
