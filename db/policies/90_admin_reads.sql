-- The admin GraphQL reads as an operator (issue 18): every policy that shows poker_admin rows is
-- replaced by one that shows them only while the request carries a live admin session
-- (auth.current_admin(), from the `poker.admin_sid` setting the GraphQL role sets from the sid of
-- the operator's verified access JWT). The other roles of a shared policy keep it. Runs last, over
-- the policies the files before it made, so a new table's admin policy is covered by adding it there.
grant usage on schema auth to poker_admin;
grant execute on function auth.current_admin() to poker_admin;
do $$
declare
  r record;
  v_others text;
begin
  for r in
    select p.schemaname, p.tablename, p.policyname, array_remove(p.roles::text[], 'poker_admin') as others
      from pg_catalog.pg_policies p
     where p.schemaname in ('cage', 'game', 'claims', 'auth', 'bank') and 'poker_admin' = any (p.roles::text[])
       and p.policyname not like '%\_admin\_read'
  loop
    if cardinality(r.others) = 0 then
      execute format('drop policy %I on %I.%I', r.policyname, r.schemaname, r.tablename);
    else
      select string_agg(quote_ident(o), ', ') into v_others from unnest(r.others) o;
      execute format('alter policy %I on %I.%I to %s', r.policyname, r.schemaname, r.tablename, v_others);
    end if;
    execute format('drop policy if exists %I on %I.%I', r.tablename || '_admin_read', r.schemaname, r.tablename);
    execute format('create policy %I on %I.%I for select to poker_admin using ((select auth.current_admin()) is not null)',
                   r.tablename || '_admin_read', r.schemaname, r.tablename);
  end loop;
end;
$$;
