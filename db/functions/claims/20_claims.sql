-- The claim board of a user, conditions met, and the claim itself. The claim is one database
-- transaction held by the game role around the grant (spec: Claim transaction order):
--   claims.begin_claim   1 re-read the kill switch and the live section, 2 the period,
--                        3 lock the user's row and look for a ledger row, 4 re-verify claimability;
--   (the role)           5 resolve the wallet and POST the grant (replay-once on the claim id);
--   claims.finish_claim  6 write the ledger row and mark the section claimed.
-- The row lock serialises claims of one section by one user; the ledger's unique claim_id (and
-- unique user/section/period) makes a second credit impossible whatever the caller does; the
-- bank's replay-once on the claim id makes a second mint impossible.

-- The period a claim of this section falls in at p_now.
create or replace function claims_private.period_of(p_cadence text, p_now timestamptz) returns text
  language sql immutable
  set search_path = pg_catalog, pg_temp
as $$
  select case p_cadence when 'weekly' then claims.iso_week(p_now) else 'once' end
$$;

-- The caller's board: every live section with its state and whether it can be claimed at p_now.
create or replace function claims.board(p_environment text, p_user_id uuid, p_now timestamptz)
  returns table (key text, kind text, cadence text, amount bigint, "order" integer, condition_key text,
                 state text, claimable boolean, lit_at timestamptz, claimed_at timestamptz, period text)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select s.key, s.kind, s.cadence, s.amount, s."order", s.condition_key,
         case
           when s.kind = 'baseline' then case when c.claimable then 'lit' else 'claimed' end
           else coalesce(u.state, 'locked')
         end,
         c.claimable, u.lit_at, u.claimed_at, claims_private.period_of(s.cadence, p_now)
    from claims.resolved_sections(p_environment) s
    left join claims.user_claim_sections u on u.user_id = p_user_id and u.section_key = s.key
    cross join lateral (
      select case
               when s.kind = 'baseline' then u.user_id is null or u.period is distinct from claims_private.period_of(s.cadence, p_now)
               else coalesce(u.state = 'lit', false)
             end
             -- an unlock pays once ever: any ledger row of the key blocks it, whatever its period
             and not exists (select from claims.claim_ledger l
                              where l.user_id = p_user_id and l.section_key = s.key
                                and (s.kind = 'unlock' or l.period = claims_private.period_of(s.cadence, p_now))) as claimable
    ) c
   order by (s.kind = 'baseline') desc, s."order", s.key
$$;

-- A condition met for a user: every live, enabled unlock section bound to the key becomes lit
-- (locked -> lit, lit_at set); lit or claimed sections are unchanged. Idempotent; a replayed
-- idempotency key lights nothing new (it reports the sections as they stand), and the same key
-- for another user or condition is refused. Refused while the board is off.
create or replace function claims.mark_condition_met(
  p_environment text, p_user_id uuid, p_condition_key text, p_idempotency_key text
) returns table (section_key text, state text, newly_lit boolean, replayed boolean)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_replayed boolean := false;
  v_event claims.condition_events;
begin
  if p_user_id is null or p_condition_key is null or p_condition_key !~ '^[a-z0-9][a-z0-9_.:-]{0,63}$' then
    perform claims_private.refuse('invalid_condition', 'a user id and a condition key');
  end if;
  if not (select b.claim_board_enabled from claims.board_settings(p_environment) b) then
    perform claims_private.refuse('claim_board_disabled');
  end if;
  if p_idempotency_key is not null then
    if length(p_idempotency_key) not between 1 and 200 then
      perform claims_private.refuse('invalid_condition', 'idempotency key 1..200 characters');
    end if;
    insert into claims.condition_events (idempotency_key, user_id, condition_key)
    values (p_idempotency_key, p_user_id, p_condition_key)
    on conflict (idempotency_key) do nothing;
    v_replayed := not found;
    if v_replayed then
      select * into v_event from claims.condition_events e where e.idempotency_key = p_idempotency_key;
      if v_event.user_id <> p_user_id or v_event.condition_key <> p_condition_key then
        perform claims_private.refuse('idempotency_key_reused', 'this idempotency key was used for another user or condition');
      end if;
      return query
      select s.key, coalesce(u.state, 'locked'), false, true
        from claims.resolved_sections(p_environment) s
        left join claims.user_claim_sections u on u.user_id = p_user_id and u.section_key = s.key
       where s.kind = 'unlock' and s.condition_key = p_condition_key
       order by s.key;
      return;
    end if;
  end if;
  -- the outer select sees the rows as they were before `lit` (one snapshot for the statement):
  -- a section it lit is 'lit', whatever its old row said
  return query
  with bound as (
    select s.key from claims.resolved_sections(p_environment) s
     where s.kind = 'unlock' and s.condition_key = p_condition_key
  ),
  lit as (
    insert into claims.user_claim_sections as u (user_id, section_key, state, lit_at)
    select p_user_id, b.key, 'lit', now() from bound b
    on conflict (user_id, section_key) do update set state = 'lit', lit_at = now()
      where u.state = 'locked'
    returning u.section_key
  )
  select b.key, case when l.section_key is not null then 'lit' else coalesce(u.state, 'lit') end, (l.section_key is not null), v_replayed
    from bound b
    left join lit l on l.section_key = b.key
    left join claims.user_claim_sections u on u.user_id = p_user_id and u.section_key = b.key
   order by b.key;
end;
$$;

-- Steps 1 to 4 of a claim, in the caller's transaction (which it keeps open through the grant).
-- outcome: 'disabled' (kill switch off), 'forged' (no such live section), 'already_claimed',
-- 'locked', or 'proceed' with the amount and period to grant; the user's row is then locked.
create or replace function claims.begin_claim(p_environment text, p_user_id uuid, p_section_key text, p_now timestamptz)
  returns table (outcome text, amount bigint, period text, kind text)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_section claims.claim_sections;
  v_period text;
  v_row claims.user_claim_sections;
begin
  if p_user_id is null or p_now is null then
    perform claims_private.refuse('invalid_claim', 'a user and a clock');
  end if;
  -- 1. the kill switch and the live section, read now
  if not (select b.claim_board_enabled from claims.board_settings(p_environment) b) then
    return query select 'disabled'::text, null::bigint, null::text, null::text;
    return;
  end if;
  select * into v_section from claims.resolved_sections(p_environment) s where s.key = p_section_key;
  if v_section.id is null then
    return query select 'forged'::text, null::bigint, null::text, null::text;
    return;
  end if;
  -- 2. the period (and so the claim id the caller derives from it)
  v_period := claims_private.period_of(v_section.cadence, p_now);
  -- 3. the user's row, locked (created locked when missing), then the ledger: the claim of this
  --    period, or for an unlock any claim of the key ever (it pays once, even after a
  --    delete-and-recreate that changed its cadence)
  insert into claims.user_claim_sections (user_id, section_key) values (p_user_id, v_section.key)
  on conflict (user_id, section_key) do nothing;
  select * into v_row from claims.user_claim_sections u
   where u.user_id = p_user_id and u.section_key = v_section.key for update;
  if exists (select from claims.claim_ledger l
              where l.user_id = p_user_id and l.section_key = v_section.key
                and (v_section.kind = 'unlock' or l.period = v_period)) then
    return query select 'already_claimed'::text, v_section.amount, v_period, v_section.kind;
    return;
  end if;
  -- 4. claimable: an unlock must be lit; the baseline unclaimed in this period
  if v_section.kind = 'unlock' and v_row.state <> 'lit' then
    return query select 'locked'::text, v_section.amount, v_period, v_section.kind;
    return;
  end if;
  if v_section.kind = 'baseline' and v_row.period is not distinct from v_period then
    return query select 'already_claimed'::text, v_section.amount, v_period, v_section.kind;
    return;
  end if;
  -- what this transaction began: finish_claim finishes only this (its own transaction's begin)
  delete from claims_private.claim_begins b where b.user_id = p_user_id and b.section_key = v_section.key
     and b.xact_id <> pg_current_xact_id();
  insert into claims_private.claim_begins (xact_id, user_id, section_key, period, amount, kind)
  values (pg_current_xact_id(), p_user_id, v_section.key, v_period, v_section.amount, v_section.kind)
  on conflict (xact_id, user_id, section_key) do update set period = excluded.period, amount = excluded.amount, kind = excluded.kind;
  return query select 'proceed'::text, v_section.amount, v_period, v_section.kind;
end;
$$;

-- Step 6: the grant minted (or had minted: a replay); the ledger row and the claimed state.
-- Claim-once is this function's alone, whatever its caller sends. It refuses unless:
--   * begin_claim began this claim (user, section) in this very transaction (so the user's row is
--     locked by it) and computed this period (claim_not_begun);
--   * the section is still claimable: an unlock lit and never paid, a baseline unpaid in this
--     period (already_claimed, section_not_lit);
--   * the amount is the one begin_claim read, or, when the cage has already minted a grant for this
--     claim id (a retry after a lost answer), the amount that grant minted (claim_amount_mismatch);
--   * a non-zero amount has its grant: a cage grant under this claim id to this user, for this
--     section and period, of this amount (grant_not_found).
create or replace function claims.finish_claim(
  p_user_id uuid, p_section_key text, p_period text, p_amount bigint, p_claim_id text, p_grant_tx text
) returns claims.claim_ledger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_begin claims_private.claim_begins;
  v_row claims.user_claim_sections;
  v_grant cage.cage_entries;
  v_entry claims.claim_ledger;
begin
  if p_claim_id is null or p_claim_id !~ '^0x[0-9a-f]{64}$' or p_amount is null or p_amount < 0 or p_period is null then
    perform claims_private.refuse('invalid_claim', 'claim id 0x + 64 hex, amount, period');
  end if;
  select * into v_begin from claims_private.claim_begins b
   where b.xact_id = pg_current_xact_id() and b.user_id = p_user_id and b.section_key = p_section_key;
  if v_begin.xact_id is null then
    perform claims_private.refuse('claim_not_begun', 'begin_claim this section for this user in this transaction first');
  end if;
  if v_begin.period <> p_period then
    perform claims_private.refuse('claim_not_begun', format('this claim was begun for period %s', v_begin.period));
  end if;
  -- locked by begin_claim in this transaction
  select * into v_row from claims.user_claim_sections u where u.user_id = p_user_id and u.section_key = p_section_key;
  if exists (select from claims.claim_ledger l
              where l.user_id = p_user_id and l.section_key = p_section_key
                and (v_begin.kind = 'unlock' or l.period = p_period)) then
    perform claims_private.refuse('already_claimed');
  end if;
  if v_begin.kind = 'unlock' and v_row.state is distinct from 'lit' then
    perform claims_private.refuse('section_not_lit');
  end if;
  if v_begin.kind = 'baseline' and v_row.period is not distinct from p_period then
    perform claims_private.refuse('already_claimed');
  end if;

  select * into v_grant from cage.cage_entries e where e.ref_id = p_claim_id and e.kind = 'grant';
  if v_grant.id is not null then
    if (v_grant.memo ->> 'user_id') is distinct from p_user_id::text
       or coalesce(v_grant.memo ->> 'section_key', p_section_key) <> p_section_key
       or coalesce(v_grant.memo ->> 'period', p_period) <> p_period then
      perform claims_private.refuse('grant_not_found', format('grant %s is not this claim''s', p_claim_id));
    end if;
    if v_grant.amounts[2] <> p_amount then
      perform claims_private.refuse('claim_amount_mismatch', format('grant %s minted %s', p_claim_id, v_grant.amounts[2]));
    end if;
  else
    if p_amount <> v_begin.amount then
      perform claims_private.refuse('claim_amount_mismatch', format('the section pays %s', v_begin.amount));
    end if;
    if p_amount > 0 then
      perform claims_private.refuse('grant_not_found', format('no grant under %s', p_claim_id));
    end if;
  end if;

  insert into claims.claim_ledger (user_id, section_key, period, amount, claim_id, grant_tx)
  values (p_user_id, p_section_key, p_period, p_amount, p_claim_id, left(p_grant_tx, 200))
  returning * into v_entry;
  update claims.user_claim_sections u
     set state = 'claimed', claimed_at = now(), period = p_period, claim_id = p_claim_id
   where u.user_id = p_user_id and u.section_key = p_section_key;
  delete from claims_private.claim_begins b
   where b.xact_id = pg_current_xact_id() and b.user_id = p_user_id and b.section_key = p_section_key;
  return v_entry;
end;
$$;

-- How long a claim may take between its grant and its ledger row (the claim's transaction holds the
-- wallet read and the grant, each bounded by the game's call timeout). A grant older than this
-- without its claim row lost its finish (the process died between the two); the reconciler then
-- completes it from the grant.
create or replace function claims_private.claim_timeout() returns interval
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select interval '60 seconds'
$$;

-- When the audit names a grant without its claim row: past the claim's timeout and four reconciler
-- runs (the worker completes lost claims every minute).
create or replace function claims_private.claim_report_after() returns interval
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select claims_private.claim_timeout() + interval '4 minutes'
$$;

-- Completes claims whose grant minted but whose ledger row never came (the game died between the
-- two): for each claim-board grant (its memo names the section and period) older than the claim
-- timeout and without a claim row, the row is written from the grant and the section marked
-- claimed, when the claim was still due (an unlock lit and unpaid, a baseline unpaid in that
-- period). A grant that was not due stays incomplete, and the audit names it. Returns what it did.
create or replace function claims.complete_lost_claims(p_limit integer)
  returns table (claim_id text, user_id uuid, section_key text, period text, amount bigint, completed boolean)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_grant record;
  v_row claims.user_claim_sections;
  v_kind text;
  v_due boolean;
begin
  for v_grant in
    select e.ref_id, (e.memo ->> 'user_id')::uuid as user_id, e.memo ->> 'section_key' as section_key,
           e.memo ->> 'period' as period, e.amounts[2] as amount
      from cage.cage_entries e
     where e.kind = 'grant' and e.memo ? 'section_key' and e.memo ? 'period' and e.memo ? 'user_id'
       and e.created_at < now() - claims_private.claim_timeout()
       and not exists (select from claims.claim_ledger l where l.claim_id = e.ref_id)
     order by e.created_at
     limit greatest(coalesce(p_limit, 0), 0)
  loop
    insert into claims.user_claim_sections (user_id, section_key) values (v_grant.user_id, v_grant.section_key)
    on conflict (user_id, section_key) do nothing;
    select * into v_row from claims.user_claim_sections u
     where u.user_id = v_grant.user_id and u.section_key = v_grant.section_key for update;
    select s.kind into v_kind from claims.claim_sections s where s.key = v_grant.section_key limit 1;
    v_due := v_kind is not null
      and not exists (select from claims.claim_ledger l
                       where l.user_id = v_grant.user_id and l.section_key = v_grant.section_key
                         and (v_kind = 'unlock' or l.period = v_grant.period))
      and case v_kind when 'unlock' then v_row.state = 'lit' else v_row.period is distinct from v_grant.period end;
    if v_due then
      insert into claims.claim_ledger (user_id, section_key, period, amount, claim_id, grant_tx)
      values (v_grant.user_id, v_grant.section_key, v_grant.period, v_grant.amount, v_grant.ref_id, v_grant.ref_id);
      update claims.user_claim_sections u
         set state = 'claimed', claimed_at = now(), period = v_grant.period, claim_id = v_grant.ref_id
       where u.user_id = v_grant.user_id and u.section_key = v_grant.section_key;
    end if;
    return query select v_grant.ref_id, v_grant.user_id, v_grant.section_key, v_grant.period, v_grant.amount, v_due;
  end loop;
end;
$$;
