// The link check of the audit of causes (issue 31): every link of a position's chain after its mark
// (cage.cause_audit_links) follows the one before it (stack before + delta = stack), a `hand` link
// names a hand of the position's table that has a history (a stack moved under a hand id nothing
// recorded, as game.finish_hand writes, is named: its record is what the hand check reads), and a
// position's last link is its stored stack. Buy-ins, top-ups and settlements are links too, so a
// stack between two hands is explained by the links between them; their amounts are the cage's
// sums (escrow = live stacks, cage.audit()).
import type pg from 'pg';
import type { AuditCheck, Violation } from './types.ts';

interface LinkRow {
  player_id: string; table_id: string; mark_seq: number | null; mark_stack: string | null; seq: number; event: string;
  delta: string; stack: string; ref_id: string | null; hand_table: string | null; hand_status: string | null;
  chip_balance: string; chain_length: number; position_status: string; hand_number: string | null;
}

export const stackLinks: AuditCheck = {
  name: 'stack_links',
  snapshot: true,
  async run(client: pg.ClientBase, scope) {
    const { rows } = await client.query<LinkRow>('select * from cage.cause_audit_links($1, $2)', [scope.mode === 'full', scope.limit]);
    const violations: Violation[] = [];
    const last = new Map<string, { seq: number; stack: bigint; recorded: string; hand: string | null }>();
    const dirtyPositions = new Set<string>();
    for (const row of rows) {
      // int8 columns arrive as bigint or text, by the pool: one shape for the details and the marks
      const l = { ...row, player_id: String(row.player_id), delta: String(row.delta), stack: String(row.stack), chip_balance: String(row.chip_balance) };
      const found = (subject: string, detail: Record<string, unknown>) => {
        scope.covered.dirty.add(l.table_id);
        dirtyPositions.add(l.player_id);
        violations.push({ invariant: subject.startsWith('hand:') ? 'hand_cause' : 'stack_link', subject, detail: { position: l.player_id, seq: l.seq, event: l.event, ...detail } });
      };
      const prev = last.get(l.player_id) ?? (l.mark_seq === null ? { seq: 0, stack: 0n } : { seq: l.mark_seq, stack: BigInt(l.mark_stack!) });
      const after = prev.stack + BigInt(l.delta);
      // a closing link (the whole stack out) is written by some paths before the stack is zeroed: its
      // `stack` is then the stack it closed
      const closing = after === 0n && BigInt(l.stack) === prev.stack;
      if (prev.seq === l.seq - 1 && after !== BigInt(l.stack) && !closing) {
        found(`position:${l.player_id}`, { problem: 'the link does not follow the one before it', before: prev.stack.toString(), delta: l.delta, stack: l.stack });
      }
      if (l.event === 'hand' && (!l.hand_table || l.hand_table !== l.table_id || l.hand_status !== 'finished')) {
        found(`hand:${l.ref_id}`, { problem: l.hand_table ? 'a stack changed under a hand that is not a finished hand of its table' : 'a stack changed under a hand that has no history' });
      }
      if (l.seq === l.chain_length && l.position_status !== 'closed' && BigInt(l.stack) !== BigInt(l.chip_balance)) {
        found(`position:${l.player_id}`, { problem: 'the stored stack is not the one its chain ends with', chain: l.stack, stored: l.chip_balance });
      }
      // the hand of the latest hand link read: the next run reads the table's hands from there
      const hand = l.event === 'hand' && l.hand_number !== null ? String(l.hand_number) : (last.get(l.player_id)?.hand ?? null);
      last.set(l.player_id, { seq: l.seq, stack: closing ? 0n : BigInt(l.stack), recorded: l.stack, hand });
    }
    scope.covered.links += rows.length;
    for (const [player, p] of last) if (!dirtyPositions.has(player)) scope.covered.positions.push({ player_id: player, seq: p.seq, stack: p.recorded, hand_number: p.hand });
    return violations;
  },
};
