// The operators' switches as the contract reads them (cage.switches, set through POST
// /api/operator/switches and recorded with the operator; cage.switch_states() is granted to both
// banks' logins). The SQL that moves real money checks the real_money switch itself; the routes of
// both banks read it first only to refuse before any other work (a table row, a deposit).
import type pg from 'pg';

export async function realMoneyOn(pool: pg.Pool): Promise<boolean> {
  const { rows } = await pool.query<{ enabled: boolean }>("select enabled from cage.switch_states() where name = 'real_money'");
  return rows[0]?.enabled === true;
}
