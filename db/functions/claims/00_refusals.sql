-- Business refusals of the claim board: one SQLSTATE each (class CL), the code as the message.
-- server/http/errors.ts maps each SQLSTATE to its HTTP status.
create or replace function claims_private.refuse(p_code text, p_detail text default null) returns void
  language plpgsql volatile
  set search_path = pg_catalog
as $$
begin
  raise exception using
    errcode = case p_code
      when 'kind_cadence_immutable' then 'CLKCI'
      when 'invalid_amount' then 'CLIAM'
      when 'section_not_found' then 'CLSNF'
      when 'section_exists' then 'CLSEX'
      when 'invalid_section' then 'CLSEC'
      when 'invalid_environment' then 'CLENV'
      when 'claim_board_disabled' then 'CLOFF'
      when 'invalid_condition' then 'CLCND'
      when 'invalid_claim' then 'CLCLM'
      when 'idempotency_key_reused' then 'CLIKR'
      when 'user_not_found' then 'CLUNF'
      when 'claim_not_begun' then 'CLNBG'
      when 'already_claimed' then 'CLACL'
      when 'section_not_lit' then 'CLLCK'
      when 'claim_amount_mismatch' then 'CLAMM'
      when 'grant_not_found' then 'CLGNF'
      when 'admin_required' then 'CLADM'
      else 'CLXXX'
    end,
    message = p_code, detail = coalesce(p_detail, '');
end;
$$;

-- A concrete deployment environment, or a refusal.
create or replace function claims_private.deployment(p_environment text) returns text
  language plpgsql immutable
  set search_path = pg_catalog
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
  set search_path = pg_catalog
as $$
  select to_char(p_at at time zone 'UTC', 'IYYY-"W"IW')
$$;
