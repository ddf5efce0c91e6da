-- Business refusals of the auth service (class AU; the spec's code or its exact error text):
-- poker_refusals.refuse (db/functions/00_refusals.sql) with the auth domain.
create or replace function auth_private.refuse(p_code text, p_detail text default null) returns void
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$ select poker_refusals.refuse('auth', p_code, p_detail) $$;
