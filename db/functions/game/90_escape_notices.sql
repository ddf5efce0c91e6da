-- What an escape tells the players it unseated (issue 32, "an escape tells seated players"): the game's
-- room, seeing its seats closed (the escape's game_seats notice), reads this and sends each player
-- connected to the table a `table_escaped` message naming their custody entry. A clean escape gives
-- each position with chips its own FREE entry; a divergent one a single hold (needs_reconciliation,
-- no owner yet), named to every player whose position the escape closed. No row when the table was
-- not escaped, or for the given users it did not unseat.
create or replace function game.escape_notices(p_table_id text, p_user_ids uuid[])
  returns table (user_id uuid, escape_id bigint, outcome text, entry_id bigint, amount bigint, status text)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select p.user_id, x.id, x.outcome, c.id, c.amount / cage_private.base_units(), c.status
    from cage.table_escapes x
    join game.table_players p on p.table_id = x.table_id and p.closing_ref_id = x.ref_id and p.user_id = any(p_user_ids)
    join cage.custody_entries c on c.escape_id = x.id and (c.user_id = p.user_id and c.player_id = p.id or c.user_id is null)
   where x.table_id = p_table_id
   order by p.user_id, c.id
$$;
