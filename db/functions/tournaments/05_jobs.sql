-- The Sit-and-Go's graphile-worker jobs. Each job kind's task name and job key are spelled once in
-- the SQL: here, except the blind timer's task, which game_private.arm_blind_timer queues in
-- 10_lifecycle.sql beside the level interval it reads. Every place that queues, re-arms or cancels a
-- job calls these. A key names one job per table (per reserved seat, per paid place), so queueing it
-- again replaces it. A payout unconfirmed after its first job is posted again by the payout
-- reconciler (tasks/tournament_timers.ts, server/intents/), not queued again.

-- The key of a table's lifecycle job: `tournament:{tableId}:{kind}`, kind start, blinds or settle.
create or replace function game_private.tournament_job_key(p_table_id text, p_kind text) returns text
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select format('tournament:%s:%s', p_table_id, p_kind)
$$;

-- starting -> playing when the 3 s grace has elapsed (tournament_start).
create or replace function game_private.schedule_tournament_start(p_table_id text, p_run_at timestamptz) returns void
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  select graphile_worker.add_job('tournament_start', json_build_object('tableId', p_table_id),
    run_at => p_run_at, job_key => game_private.tournament_job_key(p_table_id, 'start'), max_attempts => 1000);
$$;

-- An ended tournament's blinds stop.
create or replace function game_private.disarm_blind_timer(p_table_id text) returns void
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  select graphile_worker.remove_job(game_private.tournament_job_key(p_table_id, 'blinds'));
$$;

-- ended -> settling (tournament_settle).
create or replace function game_private.schedule_tournament_settle(p_table_id text) returns void
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  select graphile_worker.add_job('tournament_settle', json_build_object('tableId', p_table_id),
    job_key => game_private.tournament_job_key(p_table_id, 'settle'), max_attempts => 1000);
$$;

-- The key of a reserved seat's expiry: `tournament_reserve:{playerId}`.
create or replace function game_private.reserve_expiry_job_key(p_player_id bigint) returns text
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select format('tournament_reserve:%s', p_player_id)
$$;

-- A reserved seat is released when its hold runs out (tournament_reserve_expiry).
create or replace function game_private.schedule_reserve_expiry(p_table_id text, p_player_id bigint, p_run_at timestamptz)
  returns void
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  select graphile_worker.add_job('tournament_reserve_expiry',
    json_build_object('tableId', p_table_id, 'playerId', p_player_id::text),
    run_at => p_run_at, job_key => game_private.reserve_expiry_job_key(p_player_id), max_attempts => 25);
$$;

-- The seat was paid or released: its expiry has nothing left to do.
create or replace function game_private.cancel_reserve_expiry(p_player_id bigint) returns void
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  select graphile_worker.remove_job(game_private.reserve_expiry_job_key(p_player_id));
$$;

-- The key of a place's payout job: its ledger ref, cage.payout_ref.
create or replace function game_private.payout_job_key(p_table_id text, p_position integer) returns text
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select cage.payout_ref(p_table_id, p_position)
$$;

-- A place's payout, posted by the worker (tournament_payout).
create or replace function game_private.schedule_tournament_payout(p_table_id text, p_position integer, p_amount bigint, p_bank text)
  returns void
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  select graphile_worker.add_job('tournament_payout',
    json_build_object('tableId', p_table_id, 'position', p_position, 'amount', p_amount::text, 'bank', p_bank),
    job_key => game_private.payout_job_key(p_table_id, p_position), max_attempts => 1000);
$$;
