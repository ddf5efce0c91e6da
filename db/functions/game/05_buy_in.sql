-- The buy-in rule of a cash seat: the settings read as chips, and what is wrong with a sit or a
-- top-up (shared by the cage's pre-check and the game's authoritative check).

-- The settings value as a bigint, or null.
create or replace function game_private.setting_bigint(p_settings jsonb, p_key text) returns bigint
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select case when jsonb_typeof(p_settings -> p_key) = 'number' then (p_settings ->> p_key)::numeric::bigint end
$$;

-- What is wrong with putting p_amount on a seat that holds p_stack (0 for a new seat), or null:
-- a first sit must be within [minBuyIn, maxBuyIn], a top-up may not take the stack above maxBuyIn.
-- Shared by the cage's pre-check (cage.open_deposit) and the game's authoritative check.
create or replace function game_private.buy_in_problem(p_settings jsonb, p_stack bigint, p_new_seat boolean, p_amount bigint)
  returns text
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select case
    when p_amount is null or p_amount <= 0 then 'buy_in_out_of_range'
    when p_new_seat and p_amount < coalesce(game_private.setting_bigint(p_settings, 'minBuyIn'), 1) then 'buy_in_out_of_range'
    when p_stack + p_amount > coalesce(game_private.setting_bigint(p_settings, 'maxBuyIn'), 9007199254740991) then 'buy_in_out_of_range'
  end
$$;
