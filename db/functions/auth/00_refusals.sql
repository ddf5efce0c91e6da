-- Business refusals of the auth service: the spec's code (or the spec's exact error text) as the
-- message, its SQLSTATE (class AU) from the refusal registry (db/refusals.json, loaded into
-- poker_refusals.codes); server/http/errors.ts maps it to its HTTP status from the same file.
create or replace function auth_private.refuse(p_code text, p_detail text default null) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_state text;
begin
  select r.sqlstate into v_state from poker_refusals.codes r where r.domain = 'auth' and r.code = p_code;
  if v_state is null then
    -- a refusal missing from the registry is a bug, never a client's 4xx
    raise exception using errcode = 'XX000', message = format('unregistered auth refusal %s', p_code), detail = coalesce(p_detail, '');
  end if;
  raise exception using errcode = v_state, message = p_code, detail = coalesce(p_detail, '');
end;
$$;
