-- Test seeds (issue 19, the spec's `/internal/test/*` seeds): play chips a player gives themself on
-- a platform running under the test harness, recorded here so the audit can tell them from claims'
-- grants. The `test_seeds` switch (cage.switches) is set by the migrator from the configuration
-- (on only while the test harness is permitted); no operator route sets it.
create table cage.test_seeds (
  ref_id text primary key,
  user_id uuid not null,
  amount bigint not null,
  created_at timestamptz not null default now(),
  constraint test_seeds_amount check (amount > 0 and amount <= 1000000),
  constraint test_seeds_ref check (ref_id ~ '^test-seed:[0-9a-f-]{36}:[\x21-\x7e]{1,128}$')
);
comment on table cage.test_seeds is 'Play chips seeded by players under the test harness (cage.seed_test_chips); the provenance of their grant entries.';
alter table cage.test_seeds enable row level security;

alter table cage.switches drop constraint switches_name;
alter table cage.switches add constraint switches_name check (name in ('real_money', 'test_seeds'));
comment on table cage.switches is 'Switches: real_money (seeded once from the environment by the migrator, then set only by operators through cage.set_switch); test_seeds (set by the migrator from the configuration on every start).';
