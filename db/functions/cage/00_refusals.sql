-- Business refusals of the cage: one SQLSTATE each (class CG), the spec's code as the message.
-- server/http/errors.ts maps each SQLSTATE to its HTTP status.
create or replace function cage_private.refusal_state(p_code text) returns text
  language sql immutable parallel safe
  set search_path = pg_catalog
as $$
  select case p_code
    when 'invalid_ref_id' then 'CGRID'
    when 'unknown_movement_kind' then 'CGKND'
    when 'unknown_money_kind' then 'CGMKD'
    when 'unknown_account_type' then 'CGATY'
    when 'invalid_account' then 'CGACS'
    when 'invalid_postings' then 'CGLEG'
    when 'amount_out_of_range' then 'CGAMT'
    when 'invalid_amount' then 'CGIAM'
    when 'unbalanced_movement' then 'CGUNB'
    when 'invalid_memo' then 'CGMEM'
    when 'invalid_batch' then 'CGBAT'
    when 'account_not_found' then 'CGACC'
    when 'money_kind_mismatch' then 'CGMKM'
    when 'ref_id_conflict' then 'CGREF'
    when 'insufficient_cage_balance' then 'CGNSF'
    when 'account_shortfall' then 'CGSHF'
    when 'invalid_receipt' then 'CGRCP'
    when 'receipt_conflict' then 'CGRCC'
    when 'invalid_table_books' then 'CGBOK'
    when 'table_not_found' then 'CGTNF'
    when 'table_frozen' then 'CGFRZ'
    when 'idempotency_key_reused' then 'CGIKR'
    when 'bad_request' then 'CGBRQ'
    when 'buy_in_out_of_range' then 'CGBUY'
    when 'user_not_found' then 'CGUNF'
    when 'recipient_not_found' then 'CGRNF'
    when 'deposit_not_found' then 'CGDNF'
    when 'seat_already_settled' then 'CGSAS'
    when 'custody_entry_not_found' then 'CGCNF'
    when 'custody_not_claimable' then 'CGCNC'
    when 'nothing_to_withdraw' then 'CGNTW'
    when 'invalid_seat_index' then 'CGSEA'
    when 'rake_books_diverge' then 'CGRBD'
    when 'admin_required' then 'CGADM'
    else 'CGXXX'
  end
$$;

create or replace function cage_private.refuse(p_code text, p_detail text default null) returns void
  language plpgsql volatile
  set search_path = pg_catalog
as $$
begin
  raise exception using errcode = cage_private.refusal_state(p_code), message = p_code, detail = coalesce(p_detail, '');
end;
$$;

-- The largest amount one posting may carry: 2^53 - 1, so every amount stays exact in a JSON number.
create or replace function cage_private.max_amount() returns bigint
  language sql immutable parallel safe
  set search_path = pg_catalog
as $$ select 9007199254740991::bigint $$;

-- What is wrong with a movement before any row is read, or null. Shared by the single and batch forms.
create or replace function cage_private.movement_problem(
  p_ref_id text, p_kind text, p_money_kind text, p_accounts bigint[], p_amounts bigint[], p_memo jsonb
) returns text
  language sql stable parallel safe
  set search_path = pg_catalog
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
