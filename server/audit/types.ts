// The audit's shapes (issue 31, "An audit of causes"): a check is a name and a run over a connection
// the caller holds; what it finds is a list of violations in the shape cage.audit() answers (and
// server/cage/custody.ts unverifiedReleases), so every check's findings read alike.
import type pg from 'pg';

export interface Violation {
  invariant: string;
  subject: string;
  detail: Record<string, unknown>;
}

/**
 * How a run reads: `periodic`, the worker's job (from the marks; moves them when clean); `read`, an
 * operator's `npm run ops -- audit` (from the marks, moving nothing); `full`, from the start (nothing
 * moved either).
 */
export type AuditMode = 'periodic' | 'read' | 'full';

/** What a check reads with, and where the hand check leaves what it covered (for the marks). */
export interface AuditScope {
  mode: AuditMode;
  /** At most this many hands and links per run (the rest: the next run, from the marks it left). */
  limit: number;
  covered: Covered;
}

export interface Covered {
  hands: number;
  links: number;
  tables: { table_id: string; hand_number: number; record_hash: string | null; stacks: Record<string, string> }[];
  /** hand_number: the hand the position's last hand link read is in (its row carries it), null when none was read. */
  positions: { player_id: string; seq: number; stack: string; hand_number: string | null }[];
  /** Tables where a check found a violation: their marks stay (their payouts wait), the others' move. */
  dirty: Set<string>;
  /** Time spent reading hands from the database (ms), of the hand check's total. */
  readMs?: number;
}

export interface AuditCheck {
  name: string;
  /** Runs with the other snapshot checks in one REPEATABLE READ READ ONLY transaction (what they read agrees). */
  snapshot?: boolean;
  run(client: pg.ClientBase, scope: AuditScope): Promise<Violation[]>;
}
