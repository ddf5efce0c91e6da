-- Posts one balanced movement: all postings or none.
--
-- Order matters:
--   1. refuse malformed input before touching a row;
--   2. claim the ref_id through its unique index (a concurrent twin waits here, then sees ours);
--      on conflict, re-read and compare: same money fields = 'replayed' (nothing posted),
--      different = ref_id_conflict;
--   3. lock the bounded accounts FOR NO KEY UPDATE in id order (the global lock order: ref_ids
--      first, then accounts by id, as cage.post_movements takes them too: no deadlock between
--      opposite transfers, nor between a posting and a batch that share a ref_id or an account);
--      unbounded system accounts are never locked or updated, so a hot grant source or house does
--      not serialise the ledger;
--   4. refuse a missing account, a money kind mismatch (bounded or unbounded account) and an
--      overdraft before writing (the CHECK balance >= 0 stays as the last guard);
--   5. update the projection and append the postings.
-- Any refusal raises, so the claimed ref_id rolls back with the rest.
--
-- Cost (bench/ledger.ts): this runs once per posting, so it is kept to four statements with plans
-- cached for the session (plan_cache_mode: the default would re-plan every call, because a custom
-- plan for `= any (p_accounts)` always looks cheaper than the generic one; enable_seqscan: that
-- generic plan must read by key whatever the table's size when it was made), and the common movement
-- (two legs, valid fields) is recognised by one expression instead of a call to movement_problem.
-- Long because: it is the one posting path, run once per posting; its steps share the claimed entry
-- and the locked balances, and a helper per step would add a call per posting to the hottest path.
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
  set plan_cache_mode = force_generic_plan
  -- by key only: its generic plan locked and updated the two accounts through a sequential scan of
  -- every account when it was made on a small table, and still at 3,000 accounts, analyzed
  -- (db/tests/game/by_key_plans.test.ts)
  set enable_seqscan = off
as $$
declare
  v_problem text;
  v_entry cage.cage_entries;
  v_n int := cardinality(p_accounts);
  -- the locked bounded accounts (same positions in each array)
  v_ids bigint[];
  v_bal bigint[];
  v_ver bigint[];
  v_kinds cage.money_kind[];
  v_types cage.account_type[];
  v_bounded int;
  v_unbounded int := 0;
  v_wrong_kind int := 0;
  v_short_id bigint;
  v_short_type cage.account_type;
  -- per leg (p_accounts order): the bounded account's balance and version after this posting
  v_leg_bal bigint[];
  v_leg_ver bigint[];
  -- per locked account (v_ids order): its amount in this movement
  v_delta bigint[];
  v_i int;
  v_pos int;
begin
  -- 1. The fast path: a two-leg movement whose every field is valid. It implies that
  --    movement_problem() returns null; anything else (or null) asks movement_problem for the code.
  if not coalesce(
       length(p_ref_id) between 1 and 200
       and pg_input_is_valid(p_kind, 'cage.movement_kind')
       and pg_input_is_valid(p_money_kind, 'cage.money_kind')
       and (p_memo is null or (jsonb_typeof(p_memo) = 'object' and length(p_memo::text) <= 4096))
       and cardinality(p_accounts) = 2 and cardinality(p_amounts) = 2
       and p_accounts[1] <> p_accounts[2]
       and p_amounts[1] between -cage_private.max_amount() and cage_private.max_amount()
       and p_amounts[2] between -cage_private.max_amount() and cage_private.max_amount()
       and p_amounts[1] + p_amounts[2] = 0,
       false) then
    v_problem := cage_private.movement_problem(p_ref_id, p_kind, p_money_kind, p_accounts, p_amounts, p_memo);
    if v_problem is not null then
      perform cage_private.refuse(v_problem);
    end if;
  end if;

  -- 2. claim the ref_id
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
    entry_id := v_entry.id;
    status := 'replayed';
    created_at := v_entry.created_at;
    return next;
    return;
  end if;

  -- 3. lock the bounded accounts in id order (LockRows sits above the sort: rows are locked in it)
  select array_agg(l.id), array_agg(l.balance), array_agg(l.version), array_agg(l.money_kind), array_agg(l.account_type)
    into v_ids, v_bal, v_ver, v_kinds, v_types
    from (
      select a.id, a.balance, a.version, a.money_kind, a.account_type
        from cage.cage_accounts a
       where a.id = any (p_accounts) and a.bounded
       order by a.id
         for no key update
    ) l;
  v_bounded := coalesce(cardinality(v_ids), 0);

  -- 4. refusals, before any write
  if v_bounded < v_n then
    -- some legs are unbounded system accounts (or missing): they exist and are never locked
    select count(*), count(*) filter (where a.money_kind <> v_entry.money_kind)
      into v_unbounded, v_wrong_kind
      from cage.cage_accounts a
     where a.id = any (p_accounts) and not a.bounded;
    if v_bounded + v_unbounded < v_n then
      perform cage_private.refuse('account_not_found',
        format('accounts %s: not every one exists', p_accounts));
    end if;
  end if;
  if v_bounded > 0 then
    -- bounded accounts of another money kind count too
    v_wrong_kind := v_wrong_kind + cardinality(array_remove(v_kinds, v_entry.money_kind));
  end if;
  if v_wrong_kind > 0 then
    perform cage_private.refuse('money_kind_mismatch',
      format('movement is %s; accounts %s include another money kind', p_money_kind, p_accounts));
  end if;

  v_leg_bal := array_fill(null::bigint, array[v_n]);
  v_leg_ver := array_fill(null::bigint, array[v_n]);
  v_delta := array_fill(null::bigint, array[v_bounded]);
  for v_i in 1 .. v_bounded loop
    v_pos := array_position(p_accounts, v_ids[v_i]);
    v_delta[v_i] := p_amounts[v_pos];
    v_leg_bal[v_pos] := v_bal[v_i] + p_amounts[v_pos];
    v_leg_ver[v_pos] := v_ver[v_i] + 1;
    if v_leg_bal[v_pos] < 0 and (v_short_id is null or v_ids[v_i] < v_short_id) then
      v_short_id := v_ids[v_i]; -- the lowest id that would go below zero
      v_short_type := v_types[v_i];
    end if;
  end loop;
  if v_short_id is not null then
    perform cage_private.refuse(
      case when v_short_type = 'user' then 'insufficient_cage_balance' else 'account_shortfall' end,
      format('account %s (%s) would go below zero', v_short_id, v_short_type));
  end if;

  -- 5. the projection, then the postings in leg order. The rows are locked, so the balances and
  --    versions computed above from the locked read are the ones the update produces.
  if v_bounded > 0 then
    -- by key (`= any`): joined to unnest(), the generic plan hashed a scan of every account, a
    -- cost that grew with the users (issue 33); v_ids are distinct (one locked row each)
    update cage.cage_accounts a
       set balance = a.balance + v_delta[array_position(v_ids, a.id)], version = a.version + 1
     where a.id = any(v_ids);
  end if;
  insert into cage.cage_ledger (entry_id, account_id, money_kind, kind, ref_id, amount, balance_after, account_version, created_at)
  select v_entry.id, u.id, v_entry.money_kind, v_entry.kind, p_ref_id, u.amount, u.balance_after, u.version, v_entry.created_at
    from unnest(p_accounts, p_amounts, v_leg_bal, v_leg_ver) with ordinality as u (id, amount, balance_after, version, n)
   order by u.n;

  entry_id := v_entry.id;
  status := 'created';
  created_at := v_entry.created_at;
  return next;
end;
$$;
