// The agent conditions are on the game role itself (the spec's in-process call): each is met in the
// same transaction as the publish or flag that makes it true. Shown by a fault at commit: a check
// on the claim board's rows that fails only when the transaction commits rolls back the publish with
// its condition (before, the publish committed on its own and the condition was a separate call).
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { call, startMoneyPlatform } from '../helpers/money.ts';

let db: TestDatabase;
let m: Awaited<ReturnType<typeof startMoneyPlatform>>;

beforeAll(async () => {
  db = await createTestDatabase();
  m = await startMoneyPlatform(db);
  const on = await call(`${m.game}/admin/claim-settings`, { method: 'PATCH', headers: (await m.operator()).auth, body: { claimBoardEnabled: true } });
  expect(on.status).toBe(200);
});
afterAll(async () => {
  await m?.platform.stop();
  await db?.drop();
});

/** A fault that fires at commit for one user's claim-board rows (a deferred constraint trigger). */
async function failCommitsOf(userId: string) {
  await db.owner.query(`
    create or replace function public.test_fail_at_commit() returns trigger language plpgsql as $$
    begin
      if new.user_id::text = '${userId}' then
        raise exception 'injected commit failure';
      end if;
      return new;
    end $$`);
  await db.owner.query('drop trigger if exists test_fail_at_commit on claims.user_claim_sections');
  await db.owner.query(`create constraint trigger test_fail_at_commit after insert or update on claims.user_claim_sections
    deferrable initially deferred for each row execute function public.test_fail_at_commit()`);
}

test('a publish whose transaction fails at commit lights nothing and publishes nothing; without the fault both land', async () => {
  const p = await m.player(0);
  const agent = await call(`${m.game}/api/agents`, { headers: p.auth, body: { name: 'atomic-bot' } });
  const agentId = agent.body.agentId as string;
  await failCommitsOf(p.userId);
  try {
    const failed = await call(`${m.game}/api/agents/${agentId}/versions`, { headers: p.auth, body: {} });
    expect(failed.status).toBe(500);
    expect((await db.owner.query('select count(*)::int as n from game.agent_versions where agent_id = $1', [agentId])).rows[0].n).toBe(0);
    expect((await db.owner.query("select state from claims.user_claim_sections where user_id = $1 and section_key = 'build_agent'", [p.userId])).rows).toEqual([]);
  } finally {
    await db.owner.query('drop trigger if exists test_fail_at_commit on claims.user_claim_sections');
  }
  const published = await call(`${m.game}/api/agents/${agentId}/versions`, { headers: p.auth, body: {} });
  expect(published).toMatchObject({ status: 201, body: { version: 1, event: 'agent_version_published' } });
  const state = await call(`${m.game}/claim-board/state`, { headers: p.auth });
  expect(state.body.sections.find((s: { key: string }) => s.key === 'build_agent')).toMatchObject({ state: 'lit', claimable: true });
});
