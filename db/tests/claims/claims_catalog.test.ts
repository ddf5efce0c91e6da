// The claim board catalog: environment resolution (the `all` row, concrete overrides, disabled rows
// hiding a key in one environment), the fail-closed game settings, the operator's edits (create,
// patch, delete; kind and cadence immutable, amounts validated), the ISO-week period key, and the
// grants. Called as the game role, which serves the operator's routes; the owner only where a test
// proves that a rule holds for every role.
import type pg from 'pg';
import { fixtureOperator } from '../../../test/helpers/cage.ts';
import { createTestDatabase, type TestDatabase, waitForLockWait } from '../../../test/helpers/db.ts';

let db: TestDatabase;
let admin: string;
let game: pg.Pool;
beforeAll(async () => {
  db = await createTestDatabase();
  admin = await fixtureOperator(db.owner);
  game = db.pool('poker_game');
});
afterAll(async () => {
  await db.drop();
});

const ENVIRONMENTS = ['local', 'staging', 'production'] as const;
let seq = 0;
const newKey = (prefix = 'sec') => `${prefix}_${process.pid}_${++seq}`;

interface Section {
  environment: string; key: string; condition_key: string | null; kind: string; amount: bigint; order: number;
  enabled: boolean; cadence: string;
}
const shape = (r: Section) => ({
  environment: r.environment, key: r.key, condition_key: r.condition_key, kind: r.kind, amount: r.amount, order: r.order,
  enabled: r.enabled, cadence: r.cadence,
});

const resolved = async (env: string) =>
  (await game.query<Section>('select * from claims.resolved_sections($1)', [env])).rows.map(shape);
const resolvedKeys = async (env: string) => (await resolved(env)).map((s) => s.key);
const createSection = async (env: string, section: unknown) =>
  (await game.query<Section>('select * from claims.create_section($1, $2, $3)', [admin, env, section === undefined ? null : JSON.stringify(section)])).rows[0]!;
const patchSection = async (env: string, key: string | null, patch: unknown) =>
  (await game.query<Section>('select * from claims.patch_section($1, $2, $3, $4)', [admin, env, key, patch === undefined ? null : JSON.stringify(patch)])).rows[0]!;
const deleteSection = async (env: string, key: string) =>
  (await game.query<Section>('select * from claims.delete_section($1, $2, $3)', [admin, env, key])).rows[0]!;
const rowsOf = async (key: string) =>
  (await db.owner.query<Section>('select * from claims.claim_sections where key = $1 order by environment', [key])).rows.map(shape);

const SEEDED = [
  { key: 'weekly_baseline', condition_key: null, kind: 'baseline', amount: 500n, order: 0, cadence: 'weekly' },
  { key: 'connect_wallet', condition_key: 'wallet_linked', kind: 'unlock', amount: 500n, order: 1, cadence: 'once' },
  { key: 'build_agent', condition_key: 'agent_version_published', kind: 'unlock', amount: 500n, order: 2, cadence: 'once' },
  { key: 'seat_agent', condition_key: 'agent_seated', kind: 'unlock', amount: 1000n, order: 3, cadence: 'once' },
  { key: 'inspect_decision', condition_key: 'hand_flagged', kind: 'unlock', amount: 1000n, order: 4, cadence: 'once' },
  { key: 'tune_republish', condition_key: 'agent_version_republished', kind: 'unlock', amount: 2500n, order: 5, cadence: 'once' },
].map((s) => ({ environment: 'all', enabled: true, ...s }));

const unlock = (key: string, extra: Record<string, unknown> = {}) =>
  ({ key, kind: 'unlock', cadence: 'once', conditionKey: 'test_condition', amount: 100, order: 50, ...extra });

describe('resolved_sections', () => {
  test.each(ENVIRONMENTS)('the seeded `all` rows, baseline first then by order, in %s', async (env) => {
    expect(await resolved(env)).toEqual(SEEDED);
  });

  test('a concrete-environment row overrides the `all` row (amount, order) in that environment only', async () => {
    const row = await createSection('staging', {
      key: 'seat_agent', kind: 'unlock', cadence: 'once', conditionKey: 'agent_seated', amount: 1200, order: 9,
    });
    expect(shape(row)).toEqual({ ...SEEDED[3], environment: 'staging', amount: 1200n, order: 9 });
    try {
      const staging = await resolved('staging');
      expect(staging.map((s) => s.key)).toEqual(['weekly_baseline', 'connect_wallet', 'build_agent', 'inspect_decision', 'tune_republish', 'seat_agent']);
      expect(staging.find((s) => s.key === 'seat_agent')).toMatchObject({ environment: 'staging', amount: 1200n, order: 9 });
      expect(await resolved('local')).toEqual(SEEDED);
      expect(await resolved('production')).toEqual(SEEDED);
    } finally {
      await deleteSection('staging', 'seat_agent');
    }
    expect(await resolved('staging')).toEqual(SEEDED);
  });

  test('an enabled=false concrete row hides the key in that environment only', async () => {
    const row = await patchSection('production', 'inspect_decision', { enabled: false });
    expect(shape(row)).toEqual({ ...SEEDED[4], environment: 'production', enabled: false });
    try {
      expect(await resolvedKeys('production')).toEqual(['weekly_baseline', 'connect_wallet', 'build_agent', 'seat_agent', 'tune_republish']);
      expect(await resolved('local')).toEqual(SEEDED);
      expect(await resolved('staging')).toEqual(SEEDED);
      // the `all` row itself is untouched
      expect(await rowsOf('inspect_decision')).toEqual([SEEDED[4], { ...SEEDED[4], environment: 'production', enabled: false }]);
    } finally {
      await deleteSection('production', 'inspect_decision');
    }
    expect(await resolved('production')).toEqual(SEEDED);
  });

  test('a disabled `all` row is hidden everywhere unless a concrete row enables it there', async () => {
    const key = newKey();
    await createSection('all', unlock(key, { enabled: false }));
    for (const env of ENVIRONMENTS) expect(await resolvedKeys(env)).not.toContain(key);
    await patchSection('local', key, { enabled: true });
    expect(await resolvedKeys('local')).toContain(key);
    expect(await resolvedKeys('staging')).not.toContain(key);
    await deleteSection('local', key);
    await deleteSection('all', key);
  });

  test('the baseline comes first, then unlocks by order (ties by key), whatever the order numbers', async () => {
    const early = newKey('a_early');
    const late = newKey('z_late');
    const tie = newKey('b_tie');
    await createSection('all', unlock(late, { order: 100 }));
    await createSection('all', unlock(early, { order: -5 }));
    await createSection('all', unlock(tie, { order: 3 }));
    // the baseline pushed behind everything by its order number still leads
    await patchSection('local', 'weekly_baseline', { order: 1000 });
    try {
      expect(await resolvedKeys('local')).toEqual([
        'weekly_baseline', early, 'connect_wallet', 'build_agent', tie, 'seat_agent', 'inspect_decision', 'tune_republish', late,
      ]);
      const board = await game.query('select key from claims.board($1, gen_random_uuid(), now())', ['local']);
      expect(board.rows.map((r) => r.key)).toEqual(await resolvedKeys('local'));
    } finally {
      await deleteSection('local', 'weekly_baseline');
      for (const k of [early, late, tie]) await deleteSection('all', k);
    }
    expect(await resolved('local')).toEqual(SEEDED);
  });

  test.each([['all'], ['bogus'], ['LOCAL'], [null]])('environment %p is refused (invalid_environment)', async (env) => {
    await expect(game.query('select * from claims.resolved_sections($1)', [env]))
      .rejects.toMatchObject({ code: 'CLENV', message: 'invalid_environment' });
    await expect(game.query('select * from claims.board($1, gen_random_uuid(), now())', [env]))
      .rejects.toMatchObject({ code: 'CLENV', message: 'invalid_environment' });
  });
});

describe('game settings', () => {
  const settings = async (env: string | null) => (await game.query('select * from claims.board_settings($1)', [env])).rows;
  const set = async (env: string | null, board: boolean | null, gate: boolean | null) =>
    (await game.query('select * from claims.set_board_settings($1, $2, $3, $4)', [admin, env, board, gate])).rows;

  test.each(ENVIRONMENTS)('fail closed in %s when never set: the board off, the gate on', async (env) => {
    expect(await settings(env)).toEqual([{ claim_board_enabled: false, play_transfer_gate_enabled: true }]);
  });

  test('set per environment; a null leaves a setting as it is; other environments keep their defaults', async () => {
    expect(await set('staging', true, null)).toEqual([{ claim_board_enabled: true, play_transfer_gate_enabled: true }]);
    expect(await set('staging', null, false)).toEqual([{ claim_board_enabled: true, play_transfer_gate_enabled: false }]);
    expect(await set('staging', null, null)).toEqual([{ claim_board_enabled: true, play_transfer_gate_enabled: false }]);
    expect(await settings('staging')).toEqual([{ claim_board_enabled: true, play_transfer_gate_enabled: false }]);
    expect(await settings('local')).toEqual([{ claim_board_enabled: false, play_transfer_gate_enabled: true }]);
    expect(await settings('production')).toEqual([{ claim_board_enabled: false, play_transfer_gate_enabled: true }]);
    // a first write of one setting leaves the other at its fail-closed default
    expect(await set('production', null, false)).toEqual([{ claim_board_enabled: false, play_transfer_gate_enabled: false }]);
    expect(await set('production', true, true)).toEqual([{ claim_board_enabled: true, play_transfer_gate_enabled: true }]);
    expect(await set('staging', false, true)).toEqual([{ claim_board_enabled: false, play_transfer_gate_enabled: true }]);
    await set('production', false, null);
  });

  test.each([['all'], ['bogus'], [null]])('environment %p is refused', async (env) => {
    await expect(settings(env)).rejects.toMatchObject({ code: 'CLENV', message: 'invalid_environment' });
    await expect(set(env, true, true)).rejects.toMatchObject({ code: 'CLENV', message: 'invalid_environment' });
  });
});

describe('create_section', () => {
  test('creates a row with the given fields and the defaults (enabled, order 0, amount 0)', async () => {
    const key = newKey();
    expect(shape(await createSection('all', { key, kind: 'unlock', cadence: 'once', conditionKey: 'c1' }))).toEqual({
      environment: 'all', key, condition_key: 'c1', kind: 'unlock', amount: 0n, order: 0, enabled: true, cadence: 'once',
    });
    const other = newKey();
    expect(shape(await createSection('local', unlock(other, { amount: 1e3, order: 7, enabled: false })))).toEqual({
      environment: 'local', key: other, condition_key: 'test_condition', kind: 'unlock', amount: 1000n, order: 7, enabled: false, cadence: 'once',
    });
    const weekly = newKey();
    expect(shape(await createSection('all', { key: weekly, kind: 'baseline', cadence: 'weekly', amount: 250 }))).toMatchObject({
      kind: 'baseline', cadence: 'weekly', condition_key: null, amount: 250n,
    });
    await deleteSection('all', key);
    await deleteSection('local', other);
    await deleteSection('all', weekly);
  });

  test('an existing (environment, key) is refused with section_exists and left as it was', async () => {
    await expect(createSection('all', unlock('connect_wallet', { conditionKey: 'wallet_linked', amount: 9 })))
      .rejects.toMatchObject({ code: 'CLSEX', message: 'section_exists' });
    expect(await rowsOf('connect_wallet')).toEqual([SEEDED[1]]);
  });

  test('a row for an existing key with another kind or cadence is refused in any environment (kind_cadence_immutable)', async () => {
    for (const [env, section] of [
      ['local', { key: 'connect_wallet', kind: 'unlock', cadence: 'weekly', conditionKey: 'wallet_linked' }],
      ['staging', { key: 'weekly_baseline', kind: 'unlock', cadence: 'weekly', conditionKey: 'x' }],
      ['production', { key: 'weekly_baseline', kind: 'baseline', cadence: 'once' }],
    ] as const) {
      await expect(createSection(env, section)).rejects.toMatchObject({ code: 'CLKCI', message: 'kind_cadence_immutable' });
    }
    // the same holds for the owner, below the functions
    await expect(db.owner.query(
      "insert into claims.claim_sections (environment, key, condition_key, kind, amount, cadence) values ('local', 'seat_agent', 'agent_seated', 'unlock', 1, 'weekly')",
    )).rejects.toMatchObject({ code: 'CLKCI', message: 'kind_cadence_immutable' });
    expect(await rowsOf('connect_wallet')).toEqual([SEEDED[1]]);
    expect(await rowsOf('weekly_baseline')).toEqual([SEEDED[0]]);
    expect(await rowsOf('seat_agent')).toEqual([SEEDED[3]]);
  });

  test.each([
    ['no section', undefined],
    ['an array', [1]],
    ['a string', 'x'],
    ['no key', { kind: 'unlock', cadence: 'once', conditionKey: 'c' }],
    ['a numeric key', { key: 5, kind: 'unlock', cadence: 'once', conditionKey: 'c' }],
    ['a key with a space', { key: 'bad key', kind: 'unlock', cadence: 'once', conditionKey: 'c' }],
    ['an uppercase key', { key: 'Bad', kind: 'unlock', cadence: 'once', conditionKey: 'c' }],
    ['a key of 65 characters', { key: 'k'.repeat(65), kind: 'unlock', cadence: 'once', conditionKey: 'c' }],
    ['no kind', { key: 'ok_key', cadence: 'once', conditionKey: 'c' }],
    ['an unknown kind', { key: 'ok_key', kind: 'bonus', cadence: 'once', conditionKey: 'c' }],
    ['no cadence', { key: 'ok_key', kind: 'unlock', conditionKey: 'c' }],
    ['an unknown cadence', { key: 'ok_key', kind: 'unlock', cadence: 'daily', conditionKey: 'c' }],
    ['an unlock without a condition', { key: 'ok_key', kind: 'unlock', cadence: 'once' }],
    ['a baseline with a condition', { key: 'ok_key', kind: 'baseline', cadence: 'weekly', conditionKey: 'c' }],
    ['a condition key with a space', { key: 'ok_key', kind: 'unlock', cadence: 'once', conditionKey: 'a b' }],
    ['a numeric condition key', { key: 'ok_key', kind: 'unlock', cadence: 'once', conditionKey: 5 }],
    ['a fractional order', { key: 'ok_key', kind: 'unlock', cadence: 'once', conditionKey: 'c', order: 1.5 }],
    ['a string order', { key: 'ok_key', kind: 'unlock', cadence: 'once', conditionKey: 'c', order: '3' }],
    ['an order beyond integer', { key: 'ok_key', kind: 'unlock', cadence: 'once', conditionKey: 'c', order: 1e10 }],
    ['a string enabled', { key: 'ok_key', kind: 'unlock', cadence: 'once', conditionKey: 'c', enabled: 'yes' }],
    ['a numeric enabled', { key: 'ok_key', kind: 'unlock', cadence: 'once', conditionKey: 'c', enabled: 1 }],
  ])('%s is refused (invalid_section)', async (_what, section) => {
    await expect(createSection('all', section)).rejects.toMatchObject({ code: 'CLSEC', message: 'invalid_section' });
    expect(await rowsOf('ok_key')).toEqual([]);
  });

  test.each([
    ['negative', -1], ['fractional', 1.5], ['a string', '500'], ['null', null], ['a boolean', true], ['beyond 2^53 - 1', 9007199254740992],
  ])('a %s amount is refused (invalid_amount)', async (_what, amount) => {
    const key = newKey();
    await expect(createSection('all', unlock(key, { amount }))).rejects.toMatchObject({ code: 'CLIAM', message: 'invalid_amount' });
    expect(await rowsOf(key)).toEqual([]);
  });

  test.each([['bogus'], [null]])('environment %p is refused', async (env) => {
    await expect(createSection(env as string, unlock(newKey()))).rejects.toMatchObject({ code: 'CLENV', message: 'invalid_environment' });
  });
});

describe('patch_section', () => {
  test('edits amount, conditionKey, order and enabled of a row; the untouched fields stay', async () => {
    const key = newKey();
    const created = await createSection('all', unlock(key));
    const { rows: [before] } = await db.owner.query('select updated_at from claims.claim_sections where key = $1', [key]);
    expect(shape(await patchSection('all', key, { amount: 750 }))).toEqual({ ...shape(created), amount: 750n });
    expect(shape(await patchSection('all', key, { conditionKey: 'other_condition', order: 12 })))
      .toEqual({ ...shape(created), amount: 750n, condition_key: 'other_condition', order: 12 });
    expect(shape(await patchSection('all', key, { enabled: false, kind: 'unlock', cadence: 'once' })))
      .toEqual({ ...shape(created), amount: 750n, condition_key: 'other_condition', order: 12, enabled: false });
    expect(await rowsOf(key)).toEqual([{ ...shape(created), amount: 750n, condition_key: 'other_condition', order: 12, enabled: false }]);
    const { rows: [after] } = await db.owner.query('select updated_at from claims.claim_sections where key = $1', [key]);
    expect(after.updated_at.getTime()).toBeGreaterThanOrEqual(before.updated_at.getTime());
    await deleteSection('all', key);
  });

  test('a change of kind or cadence is refused (kind_cadence_immutable), even as the owner updating directly', async () => {
    for (const patch of [{ kind: 'baseline' }, { cadence: 'weekly' }, { kind: 'unlock', cadence: 'weekly' }, { kind: null }, { amount: 1, cadence: 'daily' }]) {
      await expect(patchSection('all', 'build_agent', patch)).rejects.toMatchObject({ code: 'CLKCI', message: 'kind_cadence_immutable' });
    }
    // and in a concrete environment where only the `all` row exists (no override is created)
    await expect(patchSection('local', 'build_agent', { cadence: 'weekly' })).rejects.toMatchObject({ code: 'CLKCI' });
    for (const sql of [
      "update claims.claim_sections set kind = 'baseline', condition_key = null where key = 'build_agent'",
      "update claims.claim_sections set cadence = 'weekly' where key = 'build_agent'",
      "update claims.claim_sections set cadence = 'once' where key = 'weekly_baseline'",
      "update claims.claim_sections set environment = 'local' where key = 'build_agent'",
      "update claims.claim_sections set key = 'build_agent_2' where key = 'build_agent'",
    ]) {
      await expect(db.owner.query(sql)).rejects.toMatchObject({ code: 'CLKCI', message: 'kind_cadence_immutable' });
    }
    expect(await rowsOf('build_agent')).toEqual([SEEDED[2]]);
    expect(await rowsOf('weekly_baseline')).toEqual([SEEDED[0]]);
  });

  test('a concrete-environment patch where only the `all` row exists creates the override from it', async () => {
    const key = newKey();
    const base = shape(await createSection('all', unlock(key, { amount: 300, order: 20 })));
    expect(shape(await patchSection('staging', key, { amount: 900 }))).toEqual({ ...base, environment: 'staging', amount: 900n });
    expect(await rowsOf(key)).toEqual([base, { ...base, environment: 'staging', amount: 900n }]);
    // a second patch edits the override; the `all` row keeps its values
    expect(shape(await patchSection('staging', key, { order: 1 }))).toEqual({ ...base, environment: 'staging', amount: 900n, order: 1 });
    expect(await rowsOf(key)).toEqual([base, { ...base, environment: 'staging', amount: 900n, order: 1 }]);
    expect((await resolved('staging')).find((s) => s.key === key)).toMatchObject({ amount: 900n, order: 1 });
    expect((await resolved('local')).find((s) => s.key === key)).toMatchObject({ amount: 300n, order: 20 });
    await deleteSection('staging', key);
    await deleteSection('all', key);
  });

  test('an unknown key is refused (section_not_found), in `all` and in a concrete environment', async () => {
    for (const env of ['all', 'local']) {
      await expect(patchSection(env, 'no_such_key', { amount: 1 })).rejects.toMatchObject({ code: 'CLSNF', message: 'section_not_found' });
    }
    await expect(patchSection('all', null, { amount: 1 })).rejects.toMatchObject({ code: 'CLSNF' });
    // a key that exists only in another concrete environment is not found here either
    const key = newKey();
    await createSection('staging', unlock(key));
    await expect(patchSection('production', key, { amount: 1 })).rejects.toMatchObject({ code: 'CLSNF' });
    await deleteSection('staging', key);
    expect(await rowsOf('no_such_key')).toEqual([]);
  });

  test.each([
    ['negative', -1], ['fractional', 2.5], ['a string', '500'], ['null', null], ['beyond 2^53 - 1', 2 ** 53],
  ])('a %s amount is refused (invalid_amount)', async (_what, amount) => {
    await expect(patchSection('all', 'seat_agent', { amount })).rejects.toMatchObject({ code: 'CLIAM', message: 'invalid_amount' });
    await expect(patchSection('local', 'seat_agent', { amount })).rejects.toMatchObject({ code: 'CLIAM' });
    expect(await rowsOf('seat_agent')).toEqual([SEEDED[3]]);
  });

  test.each([
    ['no patch', undefined],
    ['an array', []],
    ['a string order', { order: '1' }],
    ['a fractional order', { order: 1.5 }],
    ['an order beyond integer', { order: 1e10 }],
    ['a string enabled', { enabled: 'false' }],
    ['a null condition on an unlock', { conditionKey: null }],
    ['a condition key with a space', { conditionKey: 'a b' }],
    ['a numeric condition key', { conditionKey: 7 }],
  ])('%s is refused (invalid_section)', async (_what, patch) => {
    await expect(patchSection('all', 'seat_agent', patch)).rejects.toMatchObject({ code: 'CLSEC', message: 'invalid_section' });
    expect(await rowsOf('seat_agent')).toEqual([SEEDED[3]]);
  });

  test('a condition on the baseline is refused', async () => {
    await expect(patchSection('all', 'weekly_baseline', { conditionKey: 'x' })).rejects.toMatchObject({ code: 'CLSEC' });
    expect(await rowsOf('weekly_baseline')).toEqual([SEEDED[0]]);
  });

  test.each([['bogus'], [null]])('environment %p is refused', async (env) => {
    await expect(patchSection(env as string, 'seat_agent', { amount: 1 })).rejects.toMatchObject({ code: 'CLENV' });
  });
});

describe('delete_section', () => {
  test('deletes the row of one environment only, and returns it', async () => {
    const key = newKey();
    await createSection('all', unlock(key));
    await patchSection('local', key, { amount: 5 });
    expect(shape(await deleteSection('local', key))).toMatchObject({ environment: 'local', key, amount: 5n });
    expect(await rowsOf(key)).toEqual([expect.objectContaining({ environment: 'all', amount: 100n })]);
    expect((await resolved('local')).find((s) => s.key === key)).toMatchObject({ environment: 'all', amount: 100n });
    await deleteSection('all', key);
    expect(await rowsOf(key)).toEqual([]);
    for (const env of ENVIRONMENTS) expect(await resolvedKeys(env)).not.toContain(key);
  });

  test('a missing row is refused (section_not_found); an invalid environment (invalid_environment)', async () => {
    await expect(deleteSection('all', 'no_such_key')).rejects.toMatchObject({ code: 'CLSNF', message: 'section_not_found' });
    // the `all` row exists, but there is no local row to delete
    await expect(deleteSection('local', 'connect_wallet')).rejects.toMatchObject({ code: 'CLSNF' });
    await expect(deleteSection('bogus', 'connect_wallet')).rejects.toMatchObject({ code: 'CLENV', message: 'invalid_environment' });
    expect(await rowsOf('connect_wallet')).toEqual([SEEDED[1]]);
  });

  test('a key deleted everywhere can be created again (with any kind: the key no longer exists)', async () => {
    const key = newKey();
    await createSection('all', unlock(key));
    await deleteSection('all', key);
    expect(shape(await createSection('all', unlock(key, { amount: 42 })))).toMatchObject({ key, amount: 42n });
    await deleteSection('all', key);
  });
});

describe('concurrency', () => {
  /** Resolves once a game-role query waits on a lock, or once `call` has settled (it did not wait). */
  async function waitForLockWaitOrSettled(call: Promise<unknown>) {
    let settled = false;
    void call.finally(() => { settled = true; });
    await waitForLockWait(db.owner, 'poker_game', { settled: () => settled });
  }

  /** Runs `first` in a transaction, then `second` on the pool while it is open; commits; returns the second's outcome. */
  async function whileOpen(first: (c: pg.PoolClient) => Promise<unknown>, second: () => Promise<unknown>) {
    const holder = await game.connect();
    try {
      await holder.query('begin');
      await first(holder);
      const outcome = second().catch((err: unknown) => err);
      await waitForLockWaitOrSettled(outcome);
      await holder.query('commit');
      return await outcome;
    } finally {
      await holder.query('rollback').catch(() => undefined);
      holder.release();
    }
  }

  test('two first patches of one key in one environment: both edits land on one override (no unique violation)', async () => {
    const key = newKey();
    const base = shape(await createSection('all', unlock(key, { amount: 300, order: 20 })));
    // the second patch looks for the staging row before the first one's override commits
    const second = await whileOpen(
      (c) => c.query('select * from claims.patch_section($1, $2, $3, $4)', [admin, 'staging', key, JSON.stringify({ amount: 900 })]),
      () => patchSection('staging', key, { order: 3 }));
    expect(second).toMatchObject({ environment: 'staging', key, amount: 900n, order: 3 });
    expect(await rowsOf(key)).toEqual([base, { ...base, environment: 'staging', amount: 900n, order: 3 }]);
    await deleteSection('staging', key);
    await deleteSection('all', key);
  });

  test('one new key created at once in two environments with different kinds: the second is kind_cadence_immutable', async () => {
    const key = newKey();
    const second = await whileOpen(
      (c) => c.query('select * from claims.create_section($1, $2, $3)', [admin, 'local', JSON.stringify(unlock(key))]),
      () => createSection('staging', { key, kind: 'baseline', cadence: 'weekly', amount: 50 }));
    expect(second).toMatchObject({ code: 'CLKCI', message: 'kind_cadence_immutable' });
    expect(await rowsOf(key)).toEqual([expect.objectContaining({ environment: 'local', kind: 'unlock', cadence: 'once' })]);
    // the same kind and cadence in another environment at once is fine
    const same = await whileOpen(
      (c) => c.query('select * from claims.create_section($1, $2, $3)', [admin, 'production', JSON.stringify(unlock(key))]),
      () => createSection('staging', unlock(key, { amount: 7 })));
    expect(same).toMatchObject({ environment: 'staging', key, kind: 'unlock', amount: 7n });
    for (const env of ['local', 'staging', 'production']) await deleteSection(env, key);
    expect(await rowsOf(key)).toEqual([]);
  });
});

describe('iso_week', () => {
  const week = async (at: string) => (await game.query('select claims.iso_week($1) as w', [at])).rows[0].w as string;

  test.each([
    ['2026-12-27T12:00:00Z', '2026-W52'],
    ['2026-12-28T00:00:00Z', '2026-W53'],
    ['2026-12-31T12:00:00Z', '2026-W53'],
    ['2027-01-01T00:00:00Z', '2026-W53'],
    ['2027-01-03T12:00:00Z', '2026-W53'],
    ['2027-01-03T23:59:59Z', '2026-W53'],
    ['2027-01-04T00:00:00Z', '2027-W01'],
    ['2020-12-31T12:00:00Z', '2020-W53'],
    ['2021-01-03T12:00:00Z', '2020-W53'],
    ['2021-01-04T00:00:00Z', '2021-W01'],
    ['2024-12-30T00:00:00Z', '2025-W01'],
    ['2026-01-05T00:00:00Z', '2026-W02'],
  ])('%s is %s', async (at, expected) => {
    expect(await week(at)).toBe(expected);
  });

  test('the week is the UTC week, whatever the offset the instant is written in or the session time zone', async () => {
    expect(await week('2027-01-04T01:00:00+02:00')).toBe('2026-W53'); // 2027-01-03T23:00Z
    expect(await week('2027-01-03T20:00:00-05:00')).toBe('2027-W01'); // 2027-01-04T01:00Z
    const c = await game.connect();
    try {
      await c.query("set time zone 'Pacific/Kiritimati'");
      expect((await c.query("select claims.iso_week('2027-01-03T23:59:59Z') as w")).rows[0].w).toBe('2026-W53');
      await c.query("set time zone 'America/Los_Angeles'");
      expect((await c.query("select claims.iso_week('2027-01-04T00:00:00Z') as w")).rows[0].w).toBe('2027-W01');
    } finally {
      await c.query('reset time zone');
      c.release();
    }
  });
});

describe('grants', () => {
  const CALLS = [
    ["select * from claims.resolved_sections('local')"],
    ["select * from claims.board_settings('local')"],
    ["select * from claims.set_board_settings(gen_random_uuid(), 'local', true, true)"],
    ["select * from claims.create_section(gen_random_uuid(), 'all', '{}')"],
    ["select * from claims.patch_section(gen_random_uuid(), 'all', 'connect_wallet', '{}')"],
    ["select * from claims.delete_section(gen_random_uuid(), 'all', 'connect_wallet')"],
    ["select * from claims.board('local', gen_random_uuid(), now())"],
    ["select * from claims.mark_condition_met('local', gen_random_uuid(), 'wallet_linked', 'k')"],
    ["select * from claims.credit_claim('local', gen_random_uuid(), 'weekly_baseline', now(), '{}')"],
    ["select claims.iso_week(now())"],
    ["select * from game.create_agent(gen_random_uuid(), 'bot')"],
    ["select * from game.publish_agent_version(gen_random_uuid(), gen_random_uuid(), null)"],
    ["select * from game.flag_agent_decision(gen_random_uuid(), gen_random_uuid(), null, null)"],
  ];

  test.each(['poker_cage', 'poker_auth', 'poker_worker', 'poker_admin', 'poker_anonymous'] as const)(
    'role %s cannot call the claims functions', async (role) => {
      const pool = db.pool(role, 1);
      for (const [sql] of CALLS) await expect(pool.query(sql!)).rejects.toMatchObject({ code: '42501' });
    },
  );

  test.each(['poker_cage', 'poker_game', 'poker_auth', 'poker_worker', 'poker_admin', 'poker_anonymous'] as const)(
    'role %s cannot write the claims tables directly',
    async (role) => {
      const pool = db.pool(role, 1);
      for (const sql of [
        "insert into claims.claim_sections (key, condition_key, kind, amount, cadence) values ('direct', 'c', 'unlock', 1, 'once')",
        'update claims.claim_sections set amount = amount + 1',
        'delete from claims.claim_sections',
        "insert into claims.settings (environment, claim_board_enabled) values ('local', true)",
        'update claims.settings set claim_board_enabled = true',
        "insert into claims.user_claim_sections (user_id, section_key, state) values (gen_random_uuid(), 'connect_wallet', 'lit')",
        "update claims.user_claim_sections set state = 'lit'",
        'delete from claims.user_claim_sections',
        `insert into claims.claim_ledger (user_id, section_key, period, amount, claim_id) values (gen_random_uuid(), 'x', 'once', 1, '0x${'b'.repeat(64)}')`,
        'delete from claims.claim_ledger',
        "insert into claims.condition_events (idempotency_key, user_id, condition_key) values ('k', gen_random_uuid(), 'c')",
        'delete from claims.condition_events',
        "insert into game.agents (owner_user_id, name) values (gen_random_uuid(), 'direct')",
        'update game.agents set name = name',
        "insert into game.agent_versions (agent_id, version) values (gen_random_uuid(), 1)",
        "insert into game.agent_flags (agent_id, version, flagged_by) values (gen_random_uuid(), 1, gen_random_uuid())",
      ]) {
        await expect(pool.query(sql)).rejects.toMatchObject({ code: '42501' });
      }
    },
  );

  test('no service role reaches the private half of the claims schema (nor the agent helper)', async () => {
    for (const role of ['poker_game', 'poker_cage', 'poker_admin'] as const) {
      const pool = db.pool(role, 1);
      await expect(pool.query("select claims_private.period_of('weekly', now())")).rejects.toMatchObject({ code: '42501' });
      await expect(pool.query("select claims_private.refuse('invalid_claim')")).rejects.toMatchObject({ code: '42501' });
      await expect(pool.query('select game_private.owned_agent(gen_random_uuid(), gen_random_uuid())')).rejects.toMatchObject({ code: '42501' });
    }
  });

  test('the game role reads the catalog; the admin reads it too as an operator\'s live session; the anonymous role sees no row', async () => {
    expect((await game.query('select count(*)::int as n from claims.claim_sections')).rows[0].n).toBeGreaterThanOrEqual(6);
    // the admin reads as an operator's live session (the admin GraphQL sets its handle), else nothing
    const adminPool = db.pool('poker_admin', 1);
    expect((await adminPool.query('select count(*)::int as n from claims.claim_sections')).rows[0].n).toBe(0);
    const client = await adminPool.connect();
    try {
      await client.query('begin');
      await client.query("select set_config('poker.admin_sid', $1, true)", [admin]);
      expect((await client.query('select count(*)::int as n from claims.claim_sections')).rows[0].n).toBeGreaterThanOrEqual(6);
      await client.query('rollback');
    } finally {
      client.release();
    }
    expect((await db.pool('poker_anonymous', 1).query('select count(*)::int as n from claims.claim_sections')).rows[0].n).toBe(0);
  });
});
