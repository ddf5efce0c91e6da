-- Business refusals of the chain bank: the code as the message, its SQLSTATE (class BK) from
-- the refusal registry (db/refusals.json); server/http/errors.ts maps it to its HTTP status.
create or replace function bank_private.refuse(p_code text, p_detail text default null) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_state text;
begin
  select r.sqlstate into v_state from poker_refusals.codes r where r.domain = 'bank' and r.code = p_code;
  if v_state is null then
    raise exception using errcode = 'XX000', message = format('unregistered bank refusal %s', p_code), detail = coalesce(p_detail, '');
  end if;
  raise exception using errcode = v_state, message = p_code, detail = coalesce(p_detail, '');
end;
$$;
