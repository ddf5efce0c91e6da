-- The account with this identity, or null. Written as index conditions (`=` and `is null`, never
-- `is not distinct from`, which no index can serve), so a lookup is one index probe, not a scan.
create or replace function cage_private.find_account(
  p_account_type cage.account_type, p_user_id uuid, p_scope text, p_money_kind cage.money_kind
) returns bigint
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
begin
  if p_user_id is not null then
    return (select a.id from cage.cage_accounts a
             where a.account_type = p_account_type and a.user_id = p_user_id and a.money_kind = p_money_kind
               and a.scope is null);
  elsif p_scope is not null then
    return (select a.id from cage.cage_accounts a
             where a.account_type = p_account_type and a.user_id is null and a.scope = p_scope and a.money_kind = p_money_kind);
  end if;
  return (select a.id from cage.cage_accounts a
           where a.account_type = p_account_type and a.user_id is null and a.scope is null and a.money_kind = p_money_kind);
end;
$$;

-- Accounts exist before any posting locks them (a lock on a missing row locks nothing).
-- ensure_account is idempotent and race-safe: concurrent callers get the same id.
create or replace function cage.ensure_account(
  p_account_type text, p_user_id uuid, p_scope text, p_money_kind text
) returns bigint
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_id bigint;
begin
  if p_account_type is null or not (pg_input_is_valid(p_account_type, 'cage.account_type')) then
    perform cage_private.refuse('unknown_account_type', format('account type %L', p_account_type));
  end if;
  if p_money_kind is null or not (pg_input_is_valid(p_money_kind, 'cage.money_kind')) then
    perform cage_private.refuse('unknown_money_kind', format('money kind %L', p_money_kind));
  end if;
  if (p_account_type = 'user') <> (p_user_id is not null)
     or (p_account_type = 'user' and p_scope is not null)
     or (p_account_type in ('table_escrow', 'tournament_pool') and p_scope is null)
     or (p_scope is not null and length(p_scope) not between 1 and 128) then
    perform cage_private.refuse('invalid_account',
      'user accounts need a user id and no scope; table_escrow and tournament_pool need a scope (the table id)');
  end if;

  v_id := cage_private.find_account(p_account_type::cage.account_type, p_user_id, p_scope, p_money_kind::cage.money_kind);
  if v_id is not null then
    return v_id;
  end if;
  insert into cage.cage_accounts (account_type, user_id, scope, money_kind)
  values (p_account_type::cage.account_type, p_user_id, p_scope, p_money_kind::cage.money_kind)
  on conflict on constraint cage_accounts_identity do nothing
  returning id into v_id;
  if v_id is null then
    v_id := cage_private.find_account(p_account_type::cage.account_type, p_user_id, p_scope, p_money_kind::cage.money_kind);
  end if;
  return v_id;
end;
$$;

-- Balances for every account: the kept projection for bounded accounts, the journal sum for the
-- unbounded system accounts (outside world, grant source, house), which are never kept on a row.
create or replace view cage.account_balances
  with (security_invoker = true)
as
select a.id,
       a.account_type,
       a.user_id,
       a.scope,
       a.money_kind,
       a.bounded,
       case when a.bounded then a.balance
            else coalesce((select sum(l.amount) from cage.cage_ledger l where l.account_id = a.id), 0)::bigint
       end as balance,
       a.version,
       a.created_at
  from cage.cage_accounts a;
comment on view cage.account_balances is 'Every account with its balance (derived from the journal for unbounded system accounts).';
