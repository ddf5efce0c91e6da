// The operators' switches (cage.switches, set through POST /api/operator/switches and recorded with
// the operator). The SQL that moves real money checks the real_money switch itself; routes read it
// first only to refuse before any other work (a tournament's held seat, a table row).
import type pg from 'pg';

export async function realMoneyOn(pool: pg.Pool): Promise<boolean> {
  const { rows } = await pool.query<{ enabled: boolean }>("select enabled from cage.switch_states() where name = 'real_money'");
  return rows[0]?.enabled === true;
}
