-- What an escape tells the players it unseated (issue 32, "an escape tells seated players"): the game's
-- room, seeing its seats closed (the escape's game_seats notice), reads this and sends each player
-- connected to the table a `table_escaped` message naming their custody entry. A clean escape gives
-- each position with chips its own FREE entry; a divergent one a single hold (needs_reconciliation,
-- no owner yet), named to every player whose position the escape closed. No row when the table was
-- not escaped, or for the given users it did not unseat.
create or replace function game.escape_notices(p_table_id text, p_user_ids uuid[])
  returns table (user_id uuid, escape_id bigint, outcome text, entry_id bigint, amount bigint, status text)
  language plpgsql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_escape cage.table_escapes;
begin
  -- a room asks whenever seats vanish (every bust does that): a table never escaped answers from
  -- its one index probe, never by reading the table's positions, which grow with every bust
  -- (issue 33: this read was a scan of every position ever seated, growing through a long run)
  select * into v_escape from cage.table_escapes x where x.table_id = p_table_id;
  if not found then
    return;
  end if;
  return query
  select p.user_id, v_escape.id, v_escape.outcome, c.id, c.amount / cage_private.base_units(), c.status
    from game.table_players p
    join cage.custody_entries c on c.escape_id = v_escape.id and (c.user_id = p.user_id and c.player_id = p.id or c.user_id is null)
   where p.table_id = p_table_id and p.closing_ref_id = v_escape.ref_id and p.user_id = any(p_user_ids)
   order by p.user_id, c.id;
end;
$$;
