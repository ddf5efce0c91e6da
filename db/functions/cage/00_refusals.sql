-- Business refusals of the cage (class CG): poker_refusals.refuse (db/functions/00_refusals.sql)
-- with the cage's domain.
create or replace function cage_private.refuse(p_code text, p_detail text default null) returns void
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$ select poker_refusals.refuse('cage', p_code, p_detail) $$;

-- The largest amount one posting may carry: 2^53 - 1, so every amount stays exact in a JSON number.
create or replace function cage_private.max_amount() returns bigint
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$ select 9007199254740991::bigint $$;

-- What is wrong with a movement before any row is read, or null. Shared by the single and batch forms.
create or replace function cage_private.movement_problem(
  p_ref_id text, p_kind text, p_money_kind text, p_accounts bigint[], p_amounts bigint[], p_memo jsonb
) returns text
  language sql stable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select case
    when p_ref_id is null or length(p_ref_id) not between 1 and 200 then 'invalid_ref_id'
    when p_kind is null or not (pg_input_is_valid(p_kind, 'cage.movement_kind')) then 'unknown_movement_kind'
    when p_money_kind is null or not (pg_input_is_valid(p_money_kind, 'cage.money_kind')) then 'unknown_money_kind'
    when p_memo is not null and (jsonb_typeof(p_memo) <> 'object' or length(p_memo::text) > 4096) then 'invalid_memo'
    when p_accounts is null or p_amounts is null
      or cardinality(p_accounts) <> cardinality(p_amounts)
      or cardinality(p_accounts) not between 2 and 64
      or array_position(p_accounts, null) is not null
      or array_position(p_amounts, null) is not null
      or (select count(distinct a) from unnest(p_accounts) a) <> cardinality(p_accounts) then 'invalid_postings'
    when exists (select from unnest(p_amounts) x where x > cage_private.max_amount() or x < -cage_private.max_amount())
      then 'amount_out_of_range'
    when (select sum(x) from unnest(p_amounts) x) <> 0 then 'unbalanced_movement'
  end
$$;
