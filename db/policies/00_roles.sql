-- Database roles, one per service role (cluster-wide, so created only when missing). The service
-- roles poker_cage, poker_auth, poker_game, poker_worker, poker_betting and poker_bank are each a service's own LOGIN; the
-- admin GraphQL logs in as poker_graphql, which holds no grant of its own and may only switch
-- (SET ROLE, per request) to poker_anonymous or poker_admin. They are created NOLOGIN here; the
-- migrator makes the logins LOGIN with their passwords (server/db/roles.ts), and the owner login
-- is the migrator's alone. NOINHERIT: a login has only the grants of the role it is in.
do $$
declare
  r text;
begin
  foreach r in array array['poker_cage', 'poker_auth', 'poker_game', 'poker_worker', 'poker_betting', 'poker_bank', 'poker_admin', 'poker_anonymous', 'poker_graphql'] loop
    if not exists (select from pg_roles where rolname = r) then
      execute format('create role %I nologin noinherit', r);
    end if;
    -- The owner must be able to switch to each role; a superuser owner already can.
    if not (select rolsuper from pg_roles where rolname = current_user)
       and not pg_has_role(current_user, r, 'member') then
      execute format('grant %I to %I', r, current_user);
    end if;
  end loop;
  -- the admin GraphQL's login: it starts as poker_anonymous and a request with the key switches to
  -- poker_admin; it may become nothing else
  if not pg_has_role('poker_graphql', 'poker_anonymous', 'member') then
    grant poker_anonymous to poker_graphql;
  end if;
  if not pg_has_role('poker_graphql', 'poker_admin', 'member') then
    grant poker_admin to poker_graphql;
  end if;
end;
$$;
