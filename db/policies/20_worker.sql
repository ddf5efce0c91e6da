-- graphile-worker's own schema: the worker role runs jobs. graphile-worker turns row-level security
-- on for its private tables (owner only), so the worker role gets its grants and a policy on each.
-- graphile-worker creates its functions executable by PUBLIC: only the worker role may run them
revoke execute on all functions in schema graphile_worker from public;
grant usage on schema graphile_worker to poker_worker;
grant select, insert, update, delete on all tables in schema graphile_worker to poker_worker;
grant usage, select, update on all sequences in schema graphile_worker to poker_worker;
grant execute on all functions in schema graphile_worker to poker_worker;
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
