-- The job queue's guards (issue 31, class 6). graphile-worker's own tables are written by the worker
-- login (poker_worker) with graphile-worker's SQL: taking a job (a lock and an attempt), completing it
-- (a delete), failing it (an error, a back-off), returning it, clearing stale locks, queueing jobs
-- (add_job, add_jobs: an insert, or a replace by job key), marking a crontab tick. These triggers hold
-- every other write of a login that is not the tables' owner (the owner's own functions queue jobs as
-- the owner, and graphile-worker's migrations run as the owner): a job's task, named queue and key
-- are the queuer's, its payload, priority, flags and attempt budget too (a replace by key refreshes
-- only its schedule: the payload queued first stands), a job is never locked or put off beyond what
-- graphile-worker itself does, and a crontab's mark never runs ahead of the clock. Tasks cannot be
-- renamed or deleted at all (db/policies/20_worker.sql grants no UPDATE or DELETE on them).

-- The triggers run as the writer (security invoker: whether the writer is the tables' owner is the
-- question), so they call nothing of cage_private and raise their refusal's registered SQLSTATE
-- (db/refusals.json: cage job_rewrite_refused) directly.
-- BEFORE UPDATE on graphile_worker._private_jobs.
create or replace function cage_private.guard_job_update() returns trigger
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  if pg_has_role(current_user, (select c.relowner from pg_class c where c.oid = TG_RELID), 'usage') then
    return new;
  end if;
  if new.task_id is distinct from old.task_id or new.job_queue_id is distinct from old.job_queue_id then
    raise exception using errcode = 'CGJRW', message = 'job_rewrite_refused', detail = 'a job''s task and queue are its queuer''s';
  end if;
  -- add_jobs clears the key of a job that is running or spent when the key is queued again
  if new.key is distinct from old.key and not (new.key is null and (old.locked_at is not null or old.attempts >= old.max_attempts)) then
    raise exception using errcode = 'CGJRW', message = 'job_rewrite_refused', detail = 'a job''s key is its queuer''s';
  end if;
  -- graphile-worker backs a failure off by at most e^10 s (about 6 hours); a replace by key runs it now or soon
  if new.run_at > greatest(old.run_at, now()) + interval '1 day' then
    raise exception using errcode = 'CGJRW', message = 'job_rewrite_refused', detail = 'a job is put off by at most a day';
  end if;
  -- a job is locked now (its lock goes stale after 4 hours and is cleared), never in the future
  if new.locked_at is distinct from old.locked_at and new.locked_at > now() + interval '1 minute' then
    raise exception using errcode = 'CGJRW', message = 'job_rewrite_refused', detail = 'a job is locked at the present time';
  end if;
  -- the payload is the queuer's: a replace by key keeps it (graphile-worker's fail keeps it too)
  new.payload := old.payload;
  new.priority := old.priority;
  new.flags := old.flags;
  new.max_attempts := old.max_attempts;
  return new;
end;
$$;

-- BEFORE INSERT OR UPDATE on graphile_worker._private_known_crontabs: a tick is marked when it is run,
-- never ahead of the clock (a mark in the future would skip every tick until then).
create or replace function cage_private.guard_crontab_mark() returns trigger
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  if pg_has_role(current_user, (select c.relowner from pg_class c where c.oid = TG_RELID), 'usage') then
    return new;
  end if;
  if new.last_execution > now() + interval '5 seconds' or new.known_since > now() + interval '5 seconds' then
    raise exception using errcode = 'CGJRW', message = 'job_rewrite_refused', detail = 'a crontab tick is marked when it runs, not ahead of the clock';
  end if;
  return new;
end;
$$;
