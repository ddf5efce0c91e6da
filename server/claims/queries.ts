// The claim board's reads (issue 32: reads through views): the rows TypeScript reads of the board's
// catalog, through claims.section_records (db/migrations/000051_reads_through_views.sql), typed here;
// the board and the live sections are the claims functions (claims.board, claims.resolved_sections).
import type pg from 'pg';

type Db = Pick<pg.ClientBase, 'query'>;

/** A board section as written for one environment. */
export interface SectionRecord {
  environment: string; key: string; kind: string; cadence: string; amount: bigint; order: number;
  condition_key: string | null; enabled: boolean; updated_at: Date;
}

/** Every section of every environment, by key then environment. */
export async function sectionRecords(db: Db): Promise<SectionRecord[]> {
  const { rows } = await db.query<SectionRecord>(
    `select s.environment, s.key, s.kind, s.cadence, s.amount, s."order", s.condition_key, s.enabled, s.updated_at
       from claims.section_records s order by s.key, s.environment`,
  );
  return rows;
}
