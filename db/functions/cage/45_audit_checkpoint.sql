-- The periodic audit (issue 22): the invariants of cage.audit() (40_audit.sql), reading of the journal
-- only what was written since the last clean run, its checkpoint (cage_private.audit_checkpoint,
-- migration 000034). The full audit stays the operator's, on demand.
--
-- What the checkpoint holds: the last entry id it covers, and, as of that entry, each account's sum
-- and count of postings (audit_account_marks) and each money kind's sum (audit_kind_marks). A run
--   1. takes the checkpoint row (one run at a time);
--   2. waits until every entry id drawn so far is settled (cage_private.settled_entry_id, below):
--      ids are drawn before their transaction commits, so a later id may be visible while an
--      earlier one is still being written; a checkpoint past it would skip it for ever;
--   3. in one statement (one snapshot) checks the postings and entries after the checkpoint: every
--      new entry balances, matches its postings and has its provenance; every bounded account's
--      projection equals its mark plus its postings since (so a projection changed without a
--      posting is found too: the accounts are the current state, one row each, not the history);
--      each money kind sums to zero; and the books of the other domains (cage_private.audit_books);
--   4. when nothing was found, adds the settled entries' postings to the marks and moves the
--      checkpoint to the settled id, in the same transaction. A violation is reported in the rows
--      the full audit gives it, and the checkpoint stays, so the next run reports it again.
-- The postings themselves pay nothing for this: no running total is kept by the posting functions
-- (a total per kind would be one row every posting updates: the hot row the unbounded accounts
-- avoid, 000001). The run pays the minute's postings, the accounts and the other domains' records.
--
-- What it does not re-read: history. A posting written, bypassing the posting functions, under an
-- entry the checkpoint covers is the full audit's to find. What it still reads whole: the other
-- domains' books (cage_private.audit_books), as the full audit does. Those records (tables, seats,
-- intents, receipts, claims, stakes, holds) grow with play rather than with the journal; the rake
-- rows, one per raked hand, are the ones that grow fastest, and would be the next to take a mark.

-- The highest entry id below which every id drawn so far belongs to a transaction that has ended
-- (committed or rolled back), waiting for the transactions that may still write one. Every
-- transaction that draws an id holds the identity sequence's lock from the draw until it ends
-- (nextval takes RowExclusiveLock on the sequence for the transaction): the ones holding it now,
-- after the last drawn id was read, are all that may still write an id up to it. New transactions
-- are not waited for, and no writer waits for this. The sequence must hand ids out one at a time
-- (no per-session cache, which would let a session write a lower id later).
create or replace function cage_private.settled_entry_id(p_timeout interval)
  returns bigint
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_seq regclass := pg_get_serial_sequence('cage.cage_entries', 'id')::regclass;
  v_last bigint;
  v_holders text[];
  v_deadline timestamptz := clock_timestamp() + p_timeout;
begin
  if (select s.seqcache from pg_sequence s where s.seqrelid = v_seq) <> 1 then
    raise exception using errcode = '55000', message = 'audit_sequence_cached',
      detail = 'the entries'' id sequence must have cache 1 for the periodic audit to know which ids are settled';
  end if;
  v_last := coalesce(pg_sequence_last_value(v_seq), 0);
  select array_agg(l.virtualtransaction) into v_holders
    from pg_locks l
   where l.locktype = 'relation' and l.relation = v_seq and l.granted and l.pid <> pg_backend_pid();
  while v_holders is not null
        and exists (select from pg_locks l where l.locktype = 'relation' and l.relation = v_seq
                      and l.virtualtransaction = any (v_holders)) loop
    if clock_timestamp() > v_deadline then
      raise exception using errcode = '55P03', message = 'audit_wait_timeout',
        detail = format('transactions holding entry ids ran longer than %s', p_timeout);
    end if;
    perform pg_sleep(0.002);
  end loop;
  return v_last;
end;
$$;

-- Invariants 1, 2, 3 and 5 of cage.audit(), reading the postings of the entries after p_after and
-- every bounded account against its mark; same rows as the full audit for what they find.
create or replace function cage_private.journal_since(p_after bigint)
  returns table (invariant text, subject text, detail jsonb)
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_custom_plan
as $$
begin
  return query
  with new_rows as materialized (
    select l.id, l.entry_id, l.account_id, l.money_kind, l.kind, l.ref_id, l.amount
      from cage.cage_ledger l
     where l.entry_id > p_after
  ),
  sums as (
    select r.account_id, sum(r.amount) as total, count(*) as n from new_rows r group by r.account_id
  ),
  books as (
    select a.id, a.balance, a.version, a.account_type,
           coalesce(m.journal, 0) + coalesce(s.total, 0) as journal, coalesce(m.postings, 0) + coalesce(s.n, 0) as postings
      from cage.cage_accounts a
      left join cage_private.audit_account_marks m on m.account_id = a.id
      left join sums s on s.account_id = a.id
     where a.bounded
  ),
  -- each new posting with its entry, found by one index probe (lateral: never a scan of the entries,
  -- which a hash join would choose as the journal grows)
  with_entry as materialized (
    select r.id, r.entry_id, r.amount, e.id is not null as has_entry,
           (r.money_kind <> e.money_kind or r.kind <> e.kind or r.ref_id <> e.ref_id) as mismatched
      from new_rows r
      left join lateral (select e.id, e.money_kind, e.kind, e.ref_id from cage.cage_entries e where e.id = r.entry_id) e on true
  ),
  entry_sums as (
    select w.entry_id, sum(w.amount) as total, count(*) as n, count(*) filter (where w.mismatched) as mismatched
      from with_entry w
     where w.has_entry
     group by w.entry_id
  )
  -- 1. per account: the projection equals the journal (its mark plus the postings since)
  select 'account_balance', 'account:' || b.id,
         jsonb_build_object('balance', b.balance, 'journal', b.journal, 'version', b.version, 'postings', b.postings)
    from books b
   where b.balance <> b.journal or b.version <> b.postings
  union all
  select 'account_balance', 'posting:' || r.id,
         jsonb_build_object('account', r.account_id, 'money_kind', r.money_kind, 'problem', 'no such account of this money kind')
    from new_rows r
   where not exists (select from cage.cage_accounts a where a.id = r.account_id and a.money_kind = r.money_kind)
  union all
  -- 2. per transaction
  select 'transaction_balance', 'entry:' || e.id,
         jsonb_build_object('ref_id', e.ref_id, 'sum', coalesce(es.total, 0), 'postings', coalesce(es.n, 0),
                            'legs', cardinality(e.accounts), 'mismatched', coalesce(es.mismatched, 0))
    from cage.cage_entries e
    left join entry_sums es on es.entry_id = e.id
   where e.id > p_after
     and (coalesce(es.total, 0) <> 0
          or coalesce(es.n, 0) <> cardinality(e.accounts)
          or coalesce(es.mismatched, 0) > 0
          or (select sum(x) from unnest(e.amounts) x) <> 0)
  union all
  select 'transaction_balance', 'posting:' || w.id,
         jsonb_build_object('entry', w.entry_id, 'problem', 'posting without its entry')
    from with_entry w
   where not w.has_entry
  union all
  select 'transaction_balance', 'money_kind:' || k.money_kind,
         jsonb_build_object('sum', k.total)
    from (select coalesce(m.money_kind, n.money_kind) as money_kind, coalesce(m.journal, 0) + coalesce(n.total, 0) as total
            from cage_private.audit_kind_marks m
            full join (select r.money_kind, sum(r.amount) as total from new_rows r group by r.money_kind) n
              on n.money_kind = m.money_kind) k
   where k.total <> 0
  union all
  -- 3. no bounded balance below zero
  select 'non_negative', 'account:' || b.id,
         jsonb_build_object('balance', b.balance, 'journal', b.journal, 'account_type', b.account_type)
    from books b
   where b.balance < 0 or b.journal < 0
  union all
  -- 5. replay-once, among the new postings (a new posting under another entry's ref_id is also
  --    named by 2, as mismatched)
  select 'replay_once', 'ref_id:' || r.ref_id,
         jsonb_build_object('entries', count(distinct r.entry_id))
    from new_rows r
   group by r.ref_id
  having count(distinct r.entry_id) > 1;
end;
$$;

-- Adds the postings of the entries in (p_after, p_upto] to the marks and moves the checkpoint to
-- p_upto. Called only after a clean run, in its transaction.
create or replace function cage_private.advance_audit_checkpoint(p_after bigint, p_upto bigint, p_young bigint[])
  returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_postings bigint;
begin
  with w as materialized (
    select l.account_id, l.money_kind, sum(l.amount) as total, count(*) as n
      from cage.cage_ledger l
     where l.entry_id > p_after and l.entry_id <= p_upto
     group by l.account_id, l.money_kind
  ),
  accounts as (
    insert into cage_private.audit_account_marks as m (account_id, journal, postings)
    select w.account_id, w.total, w.n from w
    on conflict (account_id) do update
      set journal = m.journal + excluded.journal, postings = m.postings + excluded.postings
  ),
  kinds as (
    insert into cage_private.audit_kind_marks as m (money_kind, journal)
    select w.money_kind, sum(w.total) from w group by w.money_kind
    on conflict (money_kind) do update set journal = m.journal + excluded.journal
  )
  select coalesce(sum(w.n), 0) into v_postings from w;
  update cage_private.audit_checkpoint
     set entry_id = p_upto, young_grants = coalesce(p_young, '{}'), checked_at = now(),
         entries_read = (select count(*) from cage.cage_entries e where e.id > p_after and e.id <= p_upto),
         postings_read = v_postings;
end;
$$;

-- The periodic audit: violations in the rows of cage.audit(); empty = the books hold, and the
-- checkpoint moved. Runs in a READ COMMITTED transaction of its own (the worker's autocommit call):
-- its step 3 needs a snapshot taken after the wait of step 2.
create or replace function cage.audit_since_checkpoint()
  returns table (invariant text, subject text, detail jsonb)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
  -- its statements read a minute of postings; the planner's costs follow the tables' sizes, and
  -- past jit_above_cost it would compile them (a fixed cost, larger than the run) as the journal grows
  set jit = off
as $$
declare
  v_cp cage_private.audit_checkpoint;
  v_upto bigint;
  v_found jsonb;
  v_young bigint[];
begin
  if current_setting('transaction_isolation') <> 'read committed' then
    raise exception using errcode = '55000', message = 'audit_needs_read_committed',
      detail = 'the periodic audit takes its snapshot after waiting for the entries in flight';
  end if;
  select * into strict v_cp from cage_private.audit_checkpoint for update;
  v_upto := greatest(cage_private.settled_entry_id(interval '10 seconds'), v_cp.entry_id);

  -- one statement: one snapshot, taken after the wait
  select coalesce(jsonb_agg(jsonb_build_object('invariant', v.invariant, 'subject', v.subject, 'detail', v.detail)), '[]')
    into v_found
    from (select * from cage_private.journal_since(v_cp.entry_id)
          union all
          select * from cage_private.entry_provenance(v_cp.entry_id, 9223372036854775807, v_cp.young_grants)
          union all
          select * from cage_private.audit_books()) v;

  if jsonb_array_length(v_found) > 0 then
    return query select x.invariant, x.subject, x.detail from jsonb_to_recordset(v_found) x (invariant text, subject text, detail jsonb);
    return;
  end if;
  -- grants whose claim row is not due yet are judged by a later run (entry_provenance's grant check)
  select array_agg(distinct e.id order by e.id) into v_young
    from (select g.id, g.kind, g.created_at from cage.cage_entries g where g.id > v_cp.entry_id and g.id <= v_upto
          union all
          select g.id, g.kind, g.created_at from cage.cage_entries g where g.id = any (v_cp.young_grants)) e
   where e.kind = 'grant' and e.created_at >= now() - claims_private.claim_report_after();
  perform cage_private.advance_audit_checkpoint(v_cp.entry_id, v_upto, v_young);
end;
$$;
