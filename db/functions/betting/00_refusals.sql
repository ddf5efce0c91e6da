-- Business refusals of the betting service: the code as the message, its SQLSTATE (class BT) from
-- the refusal registry (db/refusals.json); server/http/errors.ts maps it to its HTTP status.
create or replace function betting_private.refuse(p_code text, p_detail text default null) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_state text;
begin
  select r.sqlstate into v_state from poker_refusals.codes r where r.domain = 'betting' and r.code = p_code;
  if v_state is null then
    raise exception using errcode = 'XX000', message = format('unregistered betting refusal %s', p_code), detail = coalesce(p_detail, '');
  end if;
  raise exception using errcode = v_state, message = p_code, detail = coalesce(p_detail, '');
end;
$$;
