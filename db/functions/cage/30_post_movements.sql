-- A JSON array of integers as bigint[]; null when it is not one. Integers too long for bigint come
-- back as +/- bigint max so the caller refuses them as out of range rather than failing the batch.
create or replace function cage_private.json_bigints(p jsonb) returns bigint[]
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select case
    when jsonb_typeof(p) <> 'array' then null
    when exists (select from jsonb_array_elements_text(p) v where v is null or v !~ '^-?[0-9]+$') then null
    else array(
      select case
               when length(ltrim(v, '-')) <= 18 then v::bigint
               when v like '-%' then -9223372036854775807
               else 9223372036854775807
             end
        from jsonb_array_elements_text(p) with ordinality t (v, o)
       order by o)
  end
$$;

-- The sequential overdraft pass of the batch form, run only when some running balance would go
-- below zero: the movements in batch order, each refused if one of its bounded legs would take its
-- account below zero, each accepted one spending or crediting what it moves for the ones after it.
-- p_ids (ascending), p_bal and p_types describe the bounded accounts; items with a code already are
-- skipped. Returns the refusal code of each item that overdraws (null for the others).
create or replace function cage_private.batch_shortfalls(
  p_items cage_private.batch_item[], p_ids bigint[], p_bal bigint[], p_types cage.account_type[]
) returns text[]
  language plpgsql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_codes text[] := array_fill(null::text, array[cardinality(p_items)]);
  v_item cage_private.batch_item;
  v_short text;
  v_k int;
  v_pos int;
  v_at int;
begin
  for v_k in 1 .. cardinality(p_items) loop
    v_item := p_items[v_k];
    continue when v_item.code is not null;
    v_short := null;
    for v_pos in 1 .. cardinality(v_item.accounts) loop
      v_at := array_position(p_ids, v_item.accounts[v_pos]);
      if v_at is not null and p_bal[v_at] + v_item.amounts[v_pos] < 0 then
        v_short := case when p_types[v_at] = 'user' then 'insufficient_cage_balance' else 'account_shortfall' end;
        exit;
      end if;
    end loop;
    if v_short is not null then
      v_codes[v_k] := v_short;
    else
      for v_pos in 1 .. cardinality(v_item.accounts) loop
        v_at := array_position(p_ids, v_item.accounts[v_pos]);
        if v_at is not null then
          p_bal[v_at] := p_bal[v_at] + v_item.amounts[v_pos];
        end if;
      end loop;
    end if;
  end loop;
  return v_codes;
end;
$$;

-- The batch form, as TigerBeetle does it: many movements in one call and one transaction, each with
-- its own ref_id and its own result: 'created', 'replayed' (nothing posted; the original entry), or
-- 'refused' with a code. A refused movement posts nothing and does not stop the others. Movements
-- apply in array order, so a later one may spend what an earlier one credited. A later duplicate of a
-- ref_id in the same batch is a replay of the first: it gets the first's result.
--
-- Item: { "refId", "kind", "moneyKind", "accounts": [id...], "amounts": [int or string...], "memo"? }
--
-- Steps, each one statement over the whole batch: parse; classify replays; check accounts; judge
-- overdrafts on the balances as committed (a sequential pass only when one exists); claim the
-- ref_ids of the accepted movements; lock every bounded account in id order and check that the
-- judgement holds on the locked balances; update the projection and append the postings.
--
-- Lock order: the same as cage.post_movement's, the global one: ref_ids first (in ref_id order, so
-- two batches sharing ref_ids do not claim them in opposite orders), then the bounded accounts in id
-- order. Claimed after the accounts were locked, a ref_id that a single posting had claimed and
-- whose accounts it was about to lock closed a cycle: the single waits for an account the batch
-- holds, the batch for the single's ref_id (40P01). A ref_id is claimed by inserting its entry, and
-- an entry cannot be taken back without rolling back the batch, so the overdrafts are judged before
-- the claim, on the committed balances, and checked again once the accounts are locked: if a
-- concurrent posting changed a balance so that one movement's outcome would change, the whole batch
-- raises 40001 and the caller retries it, as when a ref_id is claimed concurrently. An outcome that
-- does not change costs nothing more than the check.
--
-- Cost: every step is linear in the batch (index lookups, sorts and window functions; no join of
-- the batch with itself), so the plans are safe to cache: the statements are planned once per
-- session (plan_cache_mode), not once per call.
-- Long because: each step is one statement over the whole batch, reading the arrays the steps
-- before it built; helpers would pass the batch between calls and hide the one lock order.
create or replace function cage.post_movements(p_items jsonb)
  returns table (idx int, ref_id text, status text, code text, entry_id bigint)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_generic_plan
as $$
declare
  v_items cage_private.batch_item[];
  v_pending int;
  v_inserted int;
  v_negative int;
  v_changed int;
  v_ids bigint[];
  v_bal bigint[];
  v_locked_bal bigint[];
  v_low bigint[];
  v_types cage.account_type[];
  v_judged cage_private.batch_item[];
  v_codes text[];
  v_k int;
  v_kinds text[] := enum_range(null::cage.movement_kind)::text[];
  v_money_kinds text[] := enum_range(null::cage.money_kind)::text[];
  v_entry_ids regclass := pg_get_serial_sequence('cage.cage_entries', 'id')::regclass;
begin
  if p_items is null or jsonb_typeof(p_items) <> 'array' or jsonb_array_length(p_items) not between 1 and 10000 then
    perform cage_private.refuse('invalid_batch', 'items must be a JSON array of 1..10000 movements');
  end if;

  -- 1. parse, and refuse what is malformed. The common item (two legs given as integers of up to 18
  --    digits; known kinds; an object memo; distinct accounts; amounts in range that sum to zero) is
  --    recognised inline; any other goes through json_bigints and movement_problem, which give the
  --    exact arrays and refusal code.
  select array_agg(row(p.i, p.ref, p.kind, p.mk, p.accs, p.amts, p.memo,
           case
             when jsonb_typeof(p.item) <> 'object' then 'invalid_postings'
             when p.ref is null or length(p.ref) not between 1 and 200 then 'invalid_ref_id'
             when p.accs is null then 'invalid_postings'
             when p.amts is null then 'invalid_amount'
             when p.kind = any (v_kinds) and p.mk = any (v_money_kinds)
                  and jsonb_typeof(p.memo) = 'object' and length(p.memo::text) <= 4096
                  and cardinality(p.accs) = 2 and cardinality(p.amts) = 2
                  and p.accs[1] <> p.accs[2]
                  and p.amts[1] between -cage_private.max_amount() and cage_private.max_amount()
                  and p.amts[2] between -cage_private.max_amount() and cage_private.max_amount()
                  and p.amts[1] + p.amts[2] = 0
               then null
             else cage_private.movement_problem(p.ref, p.kind, p.mk, p.accs, p.amts, p.memo)
           end, null, null)::cage_private.batch_item order by p.i)
    into v_items
    from (
      select e.o::int as i, e.item,
             e.item ->> 'refId' as ref, e.item ->> 'kind' as kind, e.item ->> 'moneyKind' as mk,
             coalesce(e.item -> 'memo', '{}') as memo,
             case when jsonb_typeof(e.item -> 'accounts') = 'array' and jsonb_array_length(e.item -> 'accounts') = 2
                       and (e.item -> 'accounts' ->> 0) ~ '^-?[0-9]{1,18}$'
                       and (e.item -> 'accounts' ->> 1) ~ '^-?[0-9]{1,18}$'
                  then array[(e.item -> 'accounts' ->> 0)::bigint, (e.item -> 'accounts' ->> 1)::bigint]
                  else cage_private.json_bigints(e.item -> 'accounts')
             end as accs,
             case when jsonb_typeof(e.item -> 'amounts') = 'array' and jsonb_array_length(e.item -> 'amounts') = 2
                       and (e.item -> 'amounts' ->> 0) ~ '^-?[0-9]{1,18}$'
                       and (e.item -> 'amounts' ->> 1) ~ '^-?[0-9]{1,18}$'
                  then array[(e.item -> 'amounts' ->> 0)::bigint, (e.item -> 'amounts' ->> 1)::bigint]
                  else cage_private.json_bigints(e.item -> 'amounts')
             end as amts
        from jsonb_array_elements(p_items) with ordinality as e (item, o)
      offset 0 -- a fence: each item's arrays are built once, not once for every reference above
    ) p;

  -- 2. replays: of an entry already in the journal, or of the first well-formed item of this batch
  --    with the same ref_id (a window over the batch sorted by ref_id, not a search per item)
  select array_agg(row(it.i, it.ref_id, it.kind, it.money_kind, it.accounts, it.amounts, it.memo,
           case
             when it.code is not null then it.code
             when e.id is not null then
               case when e.kind::text = it.kind and e.money_kind::text = it.money_kind
                         and e.accounts = it.accounts and e.amounts = it.amounts
                    then 'replayed' else 'ref_id_conflict' end
             when it.first_i < it.i then
               case when it.first_kind = it.kind and it.first_money_kind = it.money_kind
                         and it.first_accounts = it.accounts and it.first_amounts = it.amounts
                    then 'replayed' else 'ref_id_conflict' end
           end,
           e.id, case when it.code is null and e.id is null and it.first_i < it.i then it.first_i end
         )::cage_private.batch_item order by it.i)
    into v_items
    from (
      select x.*,
             first_value(x.i) over w as first_i,
             first_value(x.kind) over w as first_kind,
             first_value(x.money_kind) over w as first_money_kind,
             first_value(x.accounts) over w as first_accounts,
             first_value(x.amounts) over w as first_amounts
        from unnest(v_items) x
      window w as (partition by x.code is null, x.ref_id order by x.i)
    ) it
    left join cage.cage_entries e on it.code is null and e.ref_id = it.ref_id;

  -- 3. accounts: every one exists and holds this movement's money kind
  select array_agg(row(it.i, it.ref_id, it.kind, it.money_kind, it.accounts, it.amounts, it.memo,
           coalesce(it.code, c.problem), it.entry_id, it.replay_of)::cage_private.batch_item order by it.i)
    into v_items
    from unnest(v_items) it
    left join lateral (
      select case
               when count(a.id) < count(*) then 'account_not_found'
               when count(*) filter (where a.money_kind::text <> it.money_kind) > 0 then 'money_kind_mismatch'
             end as problem
        from unnest(it.accounts) u (acc)
        left join cage.cage_accounts a on a.id = u.acc
       where it.code is null
    ) c on true;

  select count(*) into v_pending from unnest(v_items) it where it.code is null;

  if v_pending > 0 then
    -- 4. overdrafts, judged on the balances as committed (no lock yet: see the lock order above).
    --    Per bounded account: its balance and the lowest running sum of the pending movements' amounts
    --    on it, in batch order; one goes below zero when balance + low < 0.
    select array_agg(a.id order by a.id), array_agg(a.balance order by a.id), array_agg(a.account_type order by a.id),
           array_agg(m.low order by a.id), count(*) filter (where a.balance + m.low < 0)
      into v_ids, v_bal, v_types, v_low, v_negative
      from (
        select r.acc, min(r.running) as low
          from (
            select u.acc, sum(u.amt) over (partition by u.acc order by it.i rows unbounded preceding) as running
              from unnest(v_items) it
             cross join unnest(it.accounts, it.amounts) u (acc, amt)
             where it.code is null
          ) r
         group by r.acc
      ) m
      join cage.cage_accounts a on a.id = m.acc and a.bounded;

    if v_negative > 0 then
      -- the sequential pass, on these balances (the rare path)
      v_judged := v_items;
      v_codes := cage_private.batch_shortfalls(v_items, v_ids, v_bal, v_types);
      for v_k in 1 .. cardinality(v_items) loop
        if v_codes[v_k] is not null then
          v_items[v_k].code := v_codes[v_k];
        end if;
      end loop;
    end if;

    -- 5. claim the ref_ids of the accepted movements, in ref_id order. Their entry ids are drawn from
    --    the entries' own identity sequence first, in batch order, so no statement has to match rows
    --    back by ref_id.
    select array_agg(row(it.i, it.ref_id, it.kind, it.money_kind, it.accounts, it.amounts, it.memo,
             it.code, case when it.code is null then nextval(v_entry_ids) else it.entry_id end,
             it.replay_of)::cage_private.batch_item order by it.i)
      into v_items
      from unnest(v_items) it;

    insert into cage.cage_entries as e (id, ref_id, kind, money_kind, accounts, amounts, memo)
    overriding system value
    select it.entry_id, it.ref_id, it.kind::cage.movement_kind, it.money_kind::cage.money_kind, it.accounts, it.amounts, it.memo
      from unnest(v_items) it
     where it.code is null
     order by it.ref_id collate "C"
    on conflict on constraint cage_entries_ref_id_unique do nothing;
    get diagnostics v_inserted = row_count;

    if v_inserted < (select count(*) from unnest(v_items) it where it.code is null) then
      -- Another transaction claimed one of these ref_ids after step 2 looked: retry the whole batch.
      raise exception using errcode = '40001', message = 'ref_id claimed concurrently; retry';
    end if;

    -- 6. lock every bounded account the pending movements touch (those judged refused too: their
    --    refusal stands on the locked balances), in the global (id) order; LockRows sits above the
    --    sort, so rows are locked in it. Then check the judgement of step 4 on the locked balances.
    select array_agg(s.balance order by s.id), count(*) filter (where s.balance + s.low < 0),
           count(*) filter (where s.balance <> s.seen)
      into v_locked_bal, v_negative, v_changed
      from (
        select a.id, a.balance, l.low, l.seen
          from unnest(v_ids, v_low, v_bal) l (id, low, seen)
          join cage.cage_accounts a on a.id = l.id
         order by a.id
           for no key update of a
      ) s;

    if v_judged is null then
      -- every pending movement was accepted: that holds while no running balance goes below zero
      -- (low sums every pending movement, so this check stands only when none was refused)
      if v_negative > 0 then
        raise exception using errcode = '40001', message = 'balances changed concurrently; retry';
      end if;
    elsif v_changed > 0
          -- some were refused: the same pass on the locked balances must refuse the same ones
          and cage_private.batch_shortfalls(v_judged, v_ids, v_locked_bal, v_types) is distinct from v_codes then
      raise exception using errcode = '40001', message = 'balances changed concurrently; retry';
    end if;

    -- 7. projection and postings
    with legs as (
      select it.i, it.entry_id, it.kind, it.money_kind, it.ref_id, u.acc, u.amt, u.o
        from unnest(v_items) it, unnest(it.accounts, it.amounts) with ordinality u (acc, amt, o)
       where it.code is null
    ),
    run as (
      select legs.*,
             a.id is not null as bounded,
             a.balance + sum(legs.amt) over w as balance_after,
             a.version + row_number() over w as version_after
        from legs
        left join cage.cage_accounts a on a.id = legs.acc and a.bounded
      window w as (partition by legs.acc order by legs.i rows unbounded preceding)
    ),
    upd as (
      update cage.cage_accounts a
         set balance = last.balance_after, version = last.version_after
        from (select distinct on (run.acc) run.acc, run.balance_after, run.version_after
                from run where run.bounded order by run.acc, run.i desc) last
       where a.id = last.acc
    )
    insert into cage.cage_ledger (entry_id, account_id, money_kind, kind, ref_id, amount, balance_after, account_version)
    select run.entry_id, run.acc, run.money_kind::cage.money_kind, run.kind::cage.movement_kind, run.ref_id, run.amt,
           case when run.bounded then run.balance_after end,
           case when run.bounded then run.version_after end
      from run
     order by run.i, run.o;
  end if;

  return query
    select it.i,
           it.ref_id,
           case
             when it.replay_of is not null and first.code is not null and first.code <> 'replayed' then 'refused'
             when it.code is null or it.code = 'replayed' then case when it.code is null then 'created' else 'replayed' end
             else 'refused'
           end,
           case
             when it.replay_of is not null and first.code is not null and first.code <> 'replayed' then first.code
             when it.code is null or it.code = 'replayed' then null
             else it.code
           end,
           coalesce(it.entry_id, first.entry_id)
      from unnest(v_items) it
      -- the first item of a replayed ref_id (rare): looked up only for the items that replay one
      left join lateral (
        select f.code, f.entry_id from unnest(v_items) f where it.replay_of is not null and f.i = it.replay_of
      ) first on true
     order by it.i;
end;
$$;
