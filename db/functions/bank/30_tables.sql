-- A table of the chain bank (POST /api/tables on the chain-bank role): created as the cage creates
-- its tables (game.create_table: the creator from the token grant, the creation limit, a
-- tournament born registering), in real money (chips on chain), and marked as the chain bank's, so
-- only the chain bank funds and settles it. An existing id inserts nothing (409 table_exists).
create or replace function bank.create_table(
  p_table_id text, p_game_type text, p_settings jsonb, p_creator_sid uuid,
  p_limit integer, p_window_seconds integer, p_mode text, p_kind text
) returns setof game.tables
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_row game.tables;
begin
  perform bank_private.active_deployment();
  select * into v_row from game.create_table(p_table_id, p_game_type, p_settings, 'real', p_creator_sid, p_limit, p_window_seconds, p_mode, p_kind);
  if v_row.table_id is null then
    return;
  end if;
  return query update game.tables t set bank = 'chain' where t.table_id = v_row.table_id returning t.*;
end;
$$;
