-- A bust settles in the hand's end (issue 32): on a chain-bank table the busted position is closed
-- in game.end_hand's transaction (game_private.close_busts) with the chain bank's bust settlement,
-- which pays nothing: a `bust` withdraw intent, confirmed and settled at once (the same row
-- bank.open_withdrawal wrote for a bust, and game.settle_seat then closed on), no chain transaction.
-- Its deployment: the one that holds the position's chips (its last confirmed deposit at this
-- table), else the active one.

-- Closes a busted position of a chain-bank table (seated, no chips; the caller holds the table's
-- lock). False when no deployment can own the row (a seat funded outside the bank): the position
-- is then left seated, as it was before busts settled in the hand's end.
create or replace function bank_private.close_bust(p_player game.table_players) returns boolean
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_key text := cage_private.bust_key(p_player.user_id, p_player.table_id, p_player.history_hash);
  v_deployment bigint;
begin
  select coalesce(
    (select d.deployment_id from bank.deposit_intents d
      where d.user_id = p_player.user_id and d.table_id = p_player.table_id and d.status = 'confirmed'
      order by d.created_at desc limit 1),
    (select d.id from bank.deployments d where d.active)) into v_deployment;
  if v_deployment is null then
    return false;
  end if;
  insert into bank.withdraw_intents as w (idempotency_key, deployment_id, user_id, table_id, player_id, amount, history_hash,
                                          forced, settlement, status, settled_at)
  values (v_key, v_deployment, p_player.user_id, p_player.table_id, p_player.id, 0, p_player.history_hash,
          false, 'bust', 'confirmed', now())
  on conflict do nothing;
  if found then
    perform game_private.close_position(p_player, v_key, 'bust');
  end if;
  return true;
end;
$$;
