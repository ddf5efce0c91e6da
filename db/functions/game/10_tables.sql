-- Creates a table record (the bank's POST /api/tables), cash or Sit-and-Go (p_mode), of a kind. The settings arrive parsed and validated by
-- the route (zod, per game type); this function guards the record's shape and refuses nothing else:
-- a duplicate table id inserts nothing and returns no row (the route answers 409 table_exists).
-- With p_limit, a creator may have made at most p_limit tables in the last p_window_seconds
-- (table_limit_reached): counted under a per-creator transaction lock, so concurrent calls from
-- any number of cage processes cannot pass it together. A replayed id is not a new table.
create or replace function game.create_table(
  p_table_id text, p_game_type text, p_settings jsonb, p_money_kind text, p_creator_sid uuid,
  p_limit integer default null, p_window_seconds integer default null,
  p_mode text default 'cash', p_kind text default 'open'
) returns setof game.tables
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  -- the creator: the player of the access JWT's grant (none for a table the platform makes itself)
  p_created_by uuid := case when p_creator_sid is null then null else auth_private.user_of_sid(p_creator_sid) end;
begin
  if p_table_id is null or p_table_id !~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$'
     or p_game_type is null or p_game_type not in ('poker', 'arena')
     or p_settings is null or jsonb_typeof(p_settings) <> 'object'
     or p_money_kind is null or not pg_input_is_valid(p_money_kind, 'cage.money_kind')
     or p_mode is null or p_mode not in ('cash', 'sng') or (p_mode = 'sng' and p_game_type <> 'poker')
     or p_kind is null or p_kind not in ('open', 'human_only', 'agent', 'copilot') then
    perform game_private.refuse('invalid_table', 'table id, game type, settings object, money kind, mode (sng: poker) and kind');
  end if;
  -- a real-money table only while the operators' real_money switch is on
  perform cage_private.require_real_money(p_money_kind);
  if p_limit is not null and p_created_by is not null then
    perform game_private.check_creation_limit(p_table_id, p_created_by, p_limit, p_window_seconds);
  end if;
  return query
  -- a tournament is born registering (spec: Tournament lifecycle)
  insert into game.tables as t (table_id, game_type, settings, money_kind, created_by, mode, kind, tournament_state)
  values (p_table_id, p_game_type, p_settings, p_money_kind::cage.money_kind, p_created_by, p_mode, p_kind,
          case when p_mode = 'sng' then 'registering' end)
  on conflict (table_id) do nothing
  returning t.*;
end;
$$;

-- 1. the creator's lock first (held to commit): the count and the insert are one step for them;
-- 2. an existing id is the insert's to answer (409 table_exists), never a 429.
create or replace function game_private.check_creation_limit(
  p_table_id text, p_created_by uuid, p_limit integer, p_window_seconds integer
) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  perform pg_advisory_xact_lock(hashtextextended('game.create_table:' || p_created_by::text, 0));
  if exists (select 1 from game.tables where table_id = p_table_id) then
    return;
  end if;
  if (select count(*) from game.tables
       where created_by = p_created_by
         and created_at > now() - make_interval(secs => coalesce(p_window_seconds, 3600))) >= p_limit then
    perform game_private.refuse('table_limit_reached', format('at most %s tables per %s s', p_limit, coalesce(p_window_seconds, 3600)));
  end if;
end;
$$;

-- Freezes or thaws a table: an operator act (a live admin session; recorded in
-- game.table_status_acts). A frozen table refuses deposits and withdrawals.
create or replace function game.set_table_status(p_sid uuid, p_table_id text, p_status text) returns game.tables
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_admin uuid := auth_private.admin_of_session(p_sid);
  v_table game.tables;
begin
  if p_status is null or p_status not in ('active', 'frozen') then
    perform game_private.refuse('invalid_table', 'status is active or frozen');
  end if;
  update game.tables set status = p_status where table_id = p_table_id returning * into v_table;
  if v_table.table_id is null then
    perform game_private.refuse('table_not_found', format('table %s', p_table_id));
  end if;
  insert into game.table_status_acts (table_id, status, admin_id) values (p_table_id, p_status, v_admin);
  return v_table;
end;
$$;
