-- Business refusals of the claim board (class CL): poker_refusals.refuse (db/functions/00_refusals.sql)
-- with the claims domain.
create or replace function claims_private.refuse(p_code text, p_detail text default null) returns void
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$ select poker_refusals.refuse('claims', p_code, p_detail) $$;

-- A concrete deployment environment, or a refusal.
create or replace function claims_private.deployment(p_environment text) returns text
  language plpgsql immutable
  set search_path = pg_catalog, pg_temp
as $$
begin
  if p_environment is null or p_environment not in ('local', 'staging', 'production') then
    perform claims_private.refuse('invalid_environment', 'local, staging or production');
  end if;
  return p_environment;
end;
$$;

-- The ISO-8601 week of an instant, in UTC: `YYYY-Www` (ISO year, so 2026-12-28 is 2026-W53 and
-- 2027-01-04 is 2027-W01).
create or replace function claims.iso_week(p_at timestamptz) returns text
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select to_char(p_at at time zone 'UTC', 'IYYY-"W"IW')
$$;
