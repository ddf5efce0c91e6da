-- The one refuse() of every domain. A business refusal raises the spec's code as the message with
-- its SQLSTATE from the refusal registry (db/refusals.json, loaded into poker_refusals.codes by the
-- migrator); server/http/errors.ts maps it to its HTTP status from the same file. Each domain's
-- `<domain>_private.refuse(p_code, p_detail)` is a one-line wrapper naming its domain. This file
-- sorts before the domain folders, so the wrappers find it when they are created.
create or replace function poker_refusals.refuse(p_domain text, p_code text, p_detail text default null) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_state text;
begin
  select r.sqlstate into v_state from poker_refusals.codes r where r.domain = p_domain and r.code = p_code;
  if v_state is null then
    -- a refusal missing from the registry is a bug, never a client's 4xx
    raise exception using errcode = 'XX000', message = format('unregistered %s refusal %s', p_domain, p_code), detail = coalesce(p_detail, '');
  end if;
  raise exception using errcode = v_state, message = p_code, detail = coalesce(p_detail, '');
end;
$$;
