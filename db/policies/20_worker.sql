-- graphile-worker's own schema: the worker login (poker_worker) runs jobs with exactly the statements
-- graphile-worker 0.18 issues (node_modules/graphile-worker/dist/sql/*.js, taskIdentifiers.js,
-- cron.js, helpers.js, migrate.js), and nothing more (issue 31, class 6):
--   migrations        SELECT (the startup check; graphile-worker's migrations run as the owner, in
--                     server/db/migrate.ts, never as the worker login)
--   _private_tasks    SELECT, INSERT (the identifiers it runs): no UPDATE, no DELETE, so no task is
--                     renamed (its jobs parked) or deleted
--   _private_job_queues SELECT, INSERT, UPDATE (locked_by, locked_at)
--   _private_jobs     SELECT, INSERT (add_job), UPDATE (take, fail, return, replace by key), DELETE
--                     (complete); cage_private.guard_job_update holds a job's task, queue, key and
--                     payload to its queuer's, and its locks and back-offs to graphile-worker's own
--   _private_known_crontabs SELECT, INSERT, UPDATE (last_execution), never ahead of the clock
--                     (cage_private.guard_crontab_mark)
--   functions         add_job and add_jobs only (not remove_job, reschedule_jobs, complete_jobs,
--                     permanently_fail_jobs, force_unlock_workers: the worker calls none of them)
-- graphile-worker turns row-level security on for its private tables (owner only), so the worker
-- role gets a policy on each as well.
revoke all on all tables in schema graphile_worker from public, poker_worker;
revoke all on all sequences in schema graphile_worker from public, poker_worker;
revoke execute on all functions in schema graphile_worker from public, poker_worker;
grant usage on schema graphile_worker to poker_worker;
grant select on graphile_worker.migrations to poker_worker;
grant select, insert on graphile_worker._private_tasks to poker_worker;
grant select, insert on graphile_worker._private_job_queues to poker_worker;
grant update (locked_by, locked_at) on graphile_worker._private_job_queues to poker_worker;
grant select, insert, update, delete on graphile_worker._private_jobs to poker_worker;
grant select, insert on graphile_worker._private_known_crontabs to poker_worker;
grant update (last_execution) on graphile_worker._private_known_crontabs to poker_worker;
grant usage on all sequences in schema graphile_worker to poker_worker;
grant execute on function graphile_worker.add_job, graphile_worker.add_jobs to poker_worker;
do $$
declare
  t record;
begin
  for t in
    select c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = 'graphile_worker' and c.relkind = 'r' and c.relrowsecurity
  loop
    execute format('drop policy if exists poker_worker_all on graphile_worker.%I', t.relname);
    execute format('create policy poker_worker_all on graphile_worker.%I for all to poker_worker using (true) with check (true)', t.relname);
  end loop;
end;
$$;

drop trigger if exists _050_poker_guard_update on graphile_worker._private_jobs;
create trigger _050_poker_guard_update before update on graphile_worker._private_jobs
  for each row execute function cage_private.guard_job_update();
drop trigger if exists _050_poker_guard_mark on graphile_worker._private_known_crontabs;
create trigger _050_poker_guard_mark before insert or update on graphile_worker._private_known_crontabs
  for each row execute function cage_private.guard_crontab_mark();
