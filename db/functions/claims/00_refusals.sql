-- Business refusals of the claim board: the code as the message, its SQLSTATE (class CL) from the
-- refusal registry (db/refusals.json, loaded into poker_refusals.codes); server/http/errors.ts maps
-- it to its HTTP status from the same file.
create or replace function claims_private.refuse(p_code text, p_detail text default null) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_state text;
begin
  select r.sqlstate into v_state from poker_refusals.codes r where r.domain = 'claims' and r.code = p_code;
  if v_state is null then
    -- a refusal missing from the registry is a bug, never a client's 4xx
    raise exception using errcode = 'XX000', message = format('unregistered claims refusal %s', p_code), detail = coalesce(p_detail, '');
  end if;
  raise exception using errcode = v_state, message = p_code, detail = coalesce(p_detail, '');
end;
$$;

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
