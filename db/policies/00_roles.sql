-- Database roles, one per service role (cluster-wide, so created only when missing). They are
-- NOLOGIN: each service connects as the owner's login and switches to its role at connection start
-- (server/db/pools.ts), so a bug in one service runs with that service's rights only.
do $$
declare
  r text;
begin
  foreach r in array array['poker_cage', 'poker_auth', 'poker_game', 'poker_worker', 'poker_admin', 'poker_anonymous'] loop
    if not exists (select from pg_roles where rolname = r) then
      execute format('create role %I nologin noinherit', r);
    end if;
    -- The owner must be able to switch to each role; a superuser owner already can.
    if not (select rolsuper from pg_roles where rolname = current_user)
       and not pg_has_role(current_user, r, 'member') then
      execute format('grant %I to %I', r, current_user);
    end if;
  end loop;
end;
$$;
