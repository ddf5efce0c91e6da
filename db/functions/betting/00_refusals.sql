-- Business refusals of the betting service (class BT): poker_refusals.refuse
-- (db/functions/00_refusals.sql) with the betting domain.
create or replace function betting_private.refuse(p_code text, p_detail text default null) returns void
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$ select poker_refusals.refuse('betting', p_code, p_detail) $$;
