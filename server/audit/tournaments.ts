// The tournament check of the audit of causes (issue 31): at a tournament whose stacks the hands
// decide (playing, ended, settling), every entry's stack now is the one the table's last hand ended
// with, as the hand check followed them (or, before any hand, the starting stack). A stack written by
// no hand (a hand end that stored no history, a direct write) is named, and the table's mark does not
// move, so its payouts and its betting market wait. A table the check finds clean gets its mark even
// before its first hand (cage_private.hands_audited reads it).
import type { AuditCheck, Violation } from './types.ts';

interface TournamentRow {
  table_id: string; starting_stack: string | null; mark_number: string | null; mark_hash: string | null;
  mark_stacks: Record<string, string>; last_hand: string | null; now_stacks: Record<string, string>;
}

export const tournamentStacks: AuditCheck = {
  name: 'tournament_stacks',
  snapshot: true,
  async run(client, scope) {
    const { rows } = await client.query<TournamentRow>('select * from cage.cause_audit_tournaments($1)', [scope.mode === 'full']);
    const violations: Violation[] = [];
    for (const t of rows) {
      const read = scope.covered.tables.find((c) => c.table_id === t.table_id);
      const last = t.last_hand === null ? -1 : Number(t.last_hand);
      const through = read ? read.hand_number : t.mark_number === null ? -1 : Number(t.mark_number);
      if (through < last) continue; // hands left for the next run
      const ended = read ? read.stacks : t.mark_stacks;
      for (const [position, stack] of Object.entries(t.now_stacks)) {
        const expected = ended[position] ?? t.starting_stack;
        if (expected === null || expected === undefined || BigInt(expected) !== BigInt(stack)) {
          scope.covered.dirty.add(t.table_id);
          violations.push({ invariant: 'hand_cause', subject: `table:${t.table_id}`, detail: { problem: 'a tournament stack no hand ended with', position, stored: stack, expected: expected ?? null } });
        }
      }
      if (!read) scope.covered.tables.push({ table_id: t.table_id, hand_number: last, record_hash: t.mark_hash, stacks: ended });
    }
    return violations;
  },
};
