-- Business refusals of the game side (class GM): poker_refusals.refuse (db/functions/00_refusals.sql)
-- with the game domain.
create or replace function game_private.refuse(p_code text, p_detail text default null) returns void
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$ select poker_refusals.refuse('game', p_code, p_detail) $$;
