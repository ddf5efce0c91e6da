-- Each rule once (issue 22): the tournament lifecycle states, in their order, are this function's,
-- and the table's checks read it. It is defined here rather than in db/functions because the checks
-- below depend on it and a migration runs before the repeatable files are applied; nothing else
-- defines it. game.tournament_rules() (db/functions/game/07_tournament_rules.sql) hands it to
-- TypeScript (server/tournaments/rules.generated.ts, checked by test/tournament-rules.test.ts).
create or replace function game_private.lifecycle_states() returns text[]
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select array['registering', 'starting', 'playing', 'ended', 'settling', 'closed']
$$;

alter table game.tables drop constraint tables_tournament_state;
alter table game.tables add constraint tables_tournament_state
  check (tournament_state is null or tournament_state = any (game_private.lifecycle_states()));
-- what a room announced is a lifecycle state too (game.record_tournament_announced refuses others)
alter table game.tables add constraint tables_announced_state
  check (announced_state is null or announced_state = any (game_private.lifecycle_states()));

-- the places' amounts moved to game_private.sng_place_amounts (db/functions/game/07_tournament_rules.sql)
drop function if exists cage_private.place_amounts(jsonb, bigint);
