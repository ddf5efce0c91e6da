-- Posts one balanced movement: all postings or none.
--
-- Order matters:
--   1. refuse malformed input before touching a row;
--   2. claim the ref_id through its unique index (a concurrent twin waits here, then sees ours);
--      on conflict, re-read and compare: same money fields = 'replayed' (nothing posted),
--      different = ref_id_conflict;
--   3. lock the bounded accounts FOR NO KEY UPDATE in id order (the global lock order: no deadlock
--      between opposite transfers); unbounded system accounts are never locked or updated, so a hot
--      grant source or house does not serialise the ledger;
--   4. refuse an overdraft before writing (the CHECK balance >= 0 stays as the last guard);
--   5. update the projection and append the postings in one statement.
-- Any refusal raises, so the claimed ref_id rolls back with the rest.
create or replace function cage.post_movement(
  p_ref_id text,
  p_kind text,
  p_money_kind text,
  p_accounts bigint[],
  p_amounts bigint[],
  p_memo jsonb default '{}'
) returns table (entry_id bigint, status text, created_at timestamptz)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_problem text;
  v_entry cage.cage_entries;
  v_n int := cardinality(p_accounts);
  v_bounded int;
  v_wrong_kind int;
  v_short_type cage.account_type;
  v_short_id bigint;
  v_unbounded int;
begin
  v_problem := cage_private.movement_problem(p_ref_id, p_kind, p_money_kind, p_accounts, p_amounts, p_memo);
  if v_problem is not null then
    perform cage_private.refuse(v_problem);
  end if;

  insert into cage.cage_entries as e (ref_id, kind, money_kind, accounts, amounts, memo)
  values (p_ref_id, p_kind::cage.movement_kind, p_money_kind::cage.money_kind, p_accounts, p_amounts, coalesce(p_memo, '{}'))
  on conflict (ref_id) do nothing
  returning e.* into v_entry;

  if v_entry.id is null then
    select e.* into v_entry from cage.cage_entries e where e.ref_id = p_ref_id;
    if v_entry.id is null then
      -- Claimed by a transaction this snapshot cannot see (REPEATABLE READ caller): retry.
      raise exception using errcode = '40001', message = 'ref_id claimed concurrently; retry';
    end if;
    if v_entry.kind::text <> p_kind or v_entry.money_kind::text <> p_money_kind
       or v_entry.accounts <> p_accounts or v_entry.amounts <> p_amounts then
      perform cage_private.refuse('ref_id_conflict',
        format('ref_id %s was posted with different fields (entry %s)', p_ref_id, v_entry.id));
    end if;
    return query select v_entry.id, 'replayed'::text, v_entry.created_at;
    return;
  end if;

  with locked as (
    select a.id, a.balance, a.money_kind, a.account_type
      from cage.cage_accounts a
     where a.id = any (p_accounts) and a.bounded
     order by a.id
       for no key update
  )
  select count(*),
         count(*) filter (where l.money_kind <> v_entry.money_kind),
         (array_agg(l.account_type order by l.id) filter (where l.balance + u.amount < 0))[1],
         (array_agg(l.id order by l.id) filter (where l.balance + u.amount < 0))[1]
    into v_bounded, v_wrong_kind, v_short_type, v_short_id
    from locked l
    join unnest(p_accounts, p_amounts) as u (id, amount) on u.id = l.id;

  if v_bounded < v_n then
    select count(*) filter (where a.money_kind = v_entry.money_kind),
           count(*) filter (where a.money_kind <> v_entry.money_kind)
      into v_unbounded, v_wrong_kind
      from cage.cage_accounts a
     where a.id = any (p_accounts) and not a.bounded;
    if v_bounded + v_unbounded + v_wrong_kind < v_n then
      perform cage_private.refuse('account_not_found',
        format('accounts %s: not every one exists', p_accounts));
    end if;
  end if;
  if v_wrong_kind > 0 then
    perform cage_private.refuse('money_kind_mismatch',
      format('movement is %s; accounts %s include another money kind', p_money_kind, p_accounts));
  end if;
  if v_short_id is not null then
    perform cage_private.refuse(
      case when v_short_type = 'user' then 'insufficient_cage_balance' else 'account_shortfall' end,
      format('account %s (%s) would go below zero', v_short_id, v_short_type));
  end if;

  with upd as (
    update cage.cage_accounts a
       set balance = a.balance + u.amount,
           version = a.version + 1
      from unnest(p_accounts, p_amounts) as u (id, amount)
     where a.id = u.id and a.bounded
    returning a.id, a.balance, a.version
  )
  insert into cage.cage_ledger (entry_id, account_id, money_kind, kind, ref_id, amount, balance_after, account_version, created_at)
  select v_entry.id, u.id, v_entry.money_kind, v_entry.kind, p_ref_id, u.amount, upd.balance, upd.version, v_entry.created_at
    from unnest(p_accounts, p_amounts) with ordinality as u (id, amount, n)
    left join upd on upd.id = u.id
   order by u.n;

  return query select v_entry.id, 'created'::text, v_entry.created_at;
end;
$$;
