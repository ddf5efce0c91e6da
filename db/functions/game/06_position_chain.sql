-- A position's hash chain: its genesis and the link every chip move of the position appends
-- (the receipts bind its head).

-- The first hash of a position's chain: binds the table, the user and the position id.
create or replace function game_private.chain_genesis(p_table_id text, p_user_id uuid, p_player_id bigint) returns text
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select encode(sha256(convert_to(format('position:%s:%s:%s', p_table_id, p_user_id, p_player_id), 'UTF8')), 'hex')
$$;

-- The hash of a position's link: sha256(prev|seq|event|delta|stack|ref), stack being the position's
-- chips after the move. The one definition every link uses (one at a time or a hand's end at once).
create or replace function game_private.link_hash(p_prev text, p_seq bigint, p_event text, p_delta bigint, p_stack bigint, p_ref_id text)
  returns text
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select encode(sha256(convert_to(format('%s|%s|%s|%s|%s|%s', p_prev, p_seq, p_event, p_delta, p_stack, coalesce(p_ref_id, '')), 'UTF8')), 'hex')
$$;

-- Appends one link to a position's chain and moves its head.
create or replace function game_private.extend_chain(p_player_id bigint, p_event text, p_delta bigint, p_ref_id text)
  returns text
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_player game.table_players;
  v_hash text;
begin
  select * into strict v_player from game.table_players where id = p_player_id;
  v_hash := game_private.link_hash(v_player.history_hash, v_player.chain_length + 1, p_event, p_delta, v_player.chip_balance, p_ref_id);
  insert into game.position_links (player_id, seq, event, delta, stack, ref_id, prev_hash, hash)
  values (p_player_id, v_player.chain_length + 1, p_event, p_delta, v_player.chip_balance, p_ref_id, v_player.history_hash, v_hash);
  update game.table_players set history_hash = v_hash, chain_length = chain_length + 1 where id = p_player_id;
  return v_hash;
end;
$$;

-- A position's whole chain, from both places its links are kept: game_private.position_chain
-- (db/functions/00_position_chain.sql).
