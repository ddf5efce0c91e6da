-- Business refusals of the chain bank (class BK): poker_refusals.refuse (db/functions/00_refusals.sql)
-- with the bank domain.
create or replace function bank_private.refuse(p_code text, p_detail text default null) returns void
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$ select poker_refusals.refuse('bank', p_code, p_detail) $$;
