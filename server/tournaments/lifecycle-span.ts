// The span `tournament.lifecycle` (spec: Events, telemetry): one root span per tournament, opened at
// the starting move by the game process that runs the table, with the configuration attributes;
// a `state_transition` event on each move; on close the duration, the payouts actually made and the
// auto-fold count. A process that stops (or loses the table) ends its span with the state reached;
// the process that takes the table over opens a continuation span linked to it (its ids are kept on
// the table row). Telemetry never stops a tournament: every step here swallows its own failure.
import { context, type Link, type Span } from '@opentelemetry/api';
import type pg from 'pg';
import type { Logger } from 'pino';
import { tracer } from '../telemetry/index.ts';
import { storedSng } from './lifecycle.ts';

interface Open {
  span: Span;
  state: string;
}

export class TournamentSpans {
  private readonly open = new Map<string, Open>();
  private readonly pool: pg.Pool;
  private readonly log: Logger;

  constructor(deps: { pool: pg.Pool; log: Logger }) {
    this.pool = deps.pool;
    this.log = deps.log;
  }

  /** A lifecycle move this process's room of the table announced. */
  async observe(tableId: string, state: string): Promise<void> {
    try {
      let open = this.open.get(tableId);
      if (!open) open = await this.start(tableId, state);
      if (!open) return;
      open.span.addEvent('state_transition', { 'tournament.from': open.state, 'tournament.to': state });
      open.state = state;
      if (state === 'closed') await this.close(tableId, open);
    } catch (err) {
      this.log.warn({ err: (err as Error).message, tableId }, 'tournament span not recorded');
    }
  }

  /** The room stops here (a restart, a lost lease): its span ends with the state reached. */
  suspend(tableId: string): void {
    const open = this.open.get(tableId);
    if (!open) return;
    this.open.delete(tableId);
    try {
      open.span.setAttributes({ 'tournament.state_reached': open.state, 'tournament.suspended': true });
      open.span.end();
    } catch (err) {
      this.log.warn({ err: (err as Error).message, tableId }, 'tournament span not ended');
    }
  }

  /** Opens the root span (at starting), or a continuation linked to the one a stopped process left. */
  private async start(tableId: string, state: string): Promise<Open | undefined> {
    const { rows } = await this.pool.query<{ settings: Record<string, unknown>; lifecycle_trace: { traceId?: string; spanId?: string } | null; tournament_state: string }>(
      'select settings, lifecycle_trace, tournament_state from game.tournaments where table_id = $1', [tableId],
    );
    const row = rows[0];
    if (!row) return undefined;
    const previous = row.lifecycle_trace;
    if (state !== 'starting' && !previous) return undefined; // not ours to begin: nothing was started
    const s = storedSng(row.settings);
    const links: Link[] = previous?.traceId && previous.spanId
      ? [{ context: { traceId: previous.traceId, spanId: previous.spanId, traceFlags: 1 } }] : [];
    const span = tracer().startSpan('tournament.lifecycle', {
      root: true, links,
      attributes: {
        'tournament.table_id': tableId, 'tournament.seats': s.seats, 'tournament.entry_fee': s.entryFee,
        'tournament.starting_stack': s.startingStack, 'tournament.level_duration_seconds': s.levelDurationSeconds,
        'tournament.action_timeout_seconds': s.actionTimeoutSeconds,
        'tournament.prize_structure_summary': s.prizeStructure.map((p) => `${p.position}:${p.percent}`).join(','),
        ...(links.length ? { 'tournament.continued': true, 'tournament.continued_from_state': row.tournament_state } : {}),
      },
    }, context.active());
    const ctx = span.spanContext();
    await this.pool.query('select game.set_tournament_trace($1, $2)', [tableId, JSON.stringify({ traceId: ctx.traceId, spanId: ctx.spanId })]);
    const open = { span, state: links.length ? row.tournament_state : 'registering' };
    this.open.set(tableId, open);
    return open;
  }

  private async close(tableId: string, open: Open): Promise<void> {
    this.open.delete(tableId);
    const { rows } = await this.pool.query<{ ms: number; auto_fold_count: number; payouts: string }>(
      `select (extract(epoch from (t.closed_at - t.starts_at)) * 1000)::bigint::int as ms, t.auto_fold_count,
              (select coalesce(string_agg(p.position || ':' || p.amount, ',' order by p.position), '') from game.tournament_payouts(t.table_id) p
                where p.confirmed_at is not null) as payouts
         from game.tournaments t where t.table_id = $1`,
      [tableId],
    );
    const r = rows[0];
    open.span.setAttributes({
      'tournament.duration_ms': r?.ms ?? 0, 'tournament.actual_payouts': r?.payouts ?? '', 'tournament.auto_fold_count': r?.auto_fold_count ?? 0,
    });
    open.span.end();
  }
}
