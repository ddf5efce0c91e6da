-- The claim board of a user, conditions met, and the claim itself (spec: Claim transaction order).
-- A claim is ONE transaction (issue 33), claims.credit_claim: 1 re-read the kill switch and the live
-- section, 2 the period, 3-4 the ledger and claimability (judged again under the user's row lock),
-- 5 the recipient wallet and the cage's `grant` movement (replay-once on the claim id), 6 the ledger
-- row, the section claimed, the claim intent closed. One intent per claim and the ledger's unique
-- claim_id (and unique user/section/period) make a second credit impossible whatever the caller
-- does; the journal's replay-once on the claim id makes a second mint impossible.

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

-- Whether a condition the platform itself knows holds for a user, read from the state that makes it
-- true (so a forged report, or a forged job naming another user, lights nothing): a linked Solana
-- wallet (auth), an agent of theirs with a published version, two versions, a seat it played, a
-- decision they flagged (game). Null for a key the platform does not know (an operator's own
-- condition, reported by a service with the service key).
create or replace function claims_private.condition_holds(p_user_id uuid, p_condition_key text) returns boolean
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select case p_condition_key
    when 'wallet_linked' then exists (select from auth.wallets w where w.user_id = p_user_id and w.chain = 'solana')
    when 'agent_version_published' then exists (
      select from game.agent_versions v join game.agents a on a.id = v.agent_id where a.owner_user_id = p_user_id)
    when 'agent_version_republished' then exists (
      select from game.agent_versions v join game.agents a on a.id = v.agent_id where a.owner_user_id = p_user_id
       group by v.agent_id having count(*) >= 2)
    when 'agent_seated' then exists (
      select from game.table_players p join game.agents a on a.id = p.agent_id where a.owner_user_id = p_user_id)
    when 'hand_flagged' then exists (select from game.agent_flags f where f.flagged_by = p_user_id)
  end
$$;

-- The users for whom a known condition holds now (claims_private.condition_holds, set-wise).
create or replace function claims_private.condition_holders(p_condition_key text) returns setof uuid
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select w.user_id from auth.wallets w where p_condition_key = 'wallet_linked' and w.chain = 'solana'
  union
  select a.owner_user_id from game.agent_versions v join game.agents a on a.id = v.agent_id where p_condition_key = 'agent_version_published'
  union
  select a.owner_user_id from game.agent_versions v join game.agents a on a.id = v.agent_id
   where p_condition_key = 'agent_version_republished' group by a.owner_user_id, v.agent_id having count(*) >= 2
  union
  select a.owner_user_id from game.table_players p join game.agents a on a.id = p.agent_id where p_condition_key = 'agent_seated'
  union
  select f.flagged_by from game.agent_flags f where p_condition_key = 'hand_flagged'
$$;

-- When the board is switched on: every condition that follows from state is evaluated for everyone
-- it holds for (a user who linked a wallet while the board was off gets connect_wallet lit).
-- Returns the sections lit.
create or replace function claims_private.light_from_state(p_environment text) returns integer
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_lit integer;
begin
  with bound as (
    select s.key, s.condition_key from claims.resolved_sections(p_environment) s
     where s.kind = 'unlock' and s.condition_key in ('wallet_linked', 'agent_version_published', 'agent_version_republished', 'agent_seated', 'hand_flagged')
  ),
  lit as (
    insert into claims.user_claim_sections as u (user_id, section_key, state, lit_at)
    select h.holder, b.key, 'lit', now()
      from bound b cross join lateral claims_private.condition_holders(b.condition_key) h (holder)
    on conflict (user_id, section_key) do update set state = 'lit', lit_at = now() where u.state = 'locked'
    returning 1
  )
  select count(*) into v_lit from lit;
  return v_lit;
end;
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
  -- a condition the platform knows must hold in its state (a forged report lights nothing)
  if claims_private.condition_holds(p_user_id, p_condition_key) is false then
    perform claims_private.refuse('condition_not_met', format('%s does not hold for this user', p_condition_key));
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

-- Whether user p_user may claim section p_section in period p_period as the rows stand (the spec's
-- steps 3 and 4): null when it may, else the outcome ('already_claimed' or 'locked'). An unlock pays
-- once ever (any ledger row of the key blocks it, even after a delete-and-recreate that changed its
-- cadence); the baseline once per period.
create or replace function claims_private.claim_refusal(p_user uuid, p_section claims.claim_sections, p_period text)
  returns text
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select case
    when exists (select from claims.claim_ledger l
                  where l.user_id = p_user and l.section_key = p_section.key
                    and (p_section.kind = 'unlock' or l.period = p_period)) then 'already_claimed'
    when p_section.kind = 'unlock' and (select u.state from claims.user_claim_sections u
                                          where u.user_id = p_user and u.section_key = p_section.key) is distinct from 'lit' then 'locked'
    when p_section.kind = 'baseline' and exists (select from claims.user_claim_sections u
                                                  where u.user_id = p_user and u.section_key = p_section.key and u.period = p_period) then 'already_claimed'
  end
$$;

-- The grant of a claim (issue 33): the cage's `grant` movement, replay-once on the claim id, with the
-- memo the cage's own grant writes (recipient, section_key, period, user_id: cage.grant_records and
-- the audit read it). A grant already under this claim id (a three-step claim's, whose ledger row
-- never came) is this claim's when it is to this user for this section and period: nothing more is
-- minted, and the claim pays what it minted. Returns the amount paid.
create or replace function claims_private.post_claim_grant(p_intent claims.claim_intents) returns bigint
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_grant cage.cage_entries;
begin
  if p_intent.amount <= 0 then
    return p_intent.amount;
  end if;
  select * into v_grant from cage.cage_entries e where e.ref_id = p_intent.claim_id;
  if v_grant.id is null then
    perform cage.post_movement(p_intent.claim_id, 'grant', 'play',
      array[cage.ensure_account('grant_source', null, null, 'play'), cage.ensure_account('user', p_intent.user_id, null, 'play')],
      array[-p_intent.amount, p_intent.amount],
      jsonb_build_object('recipient', p_intent.recipient, 'section_key', p_intent.section_key, 'period', p_intent.period, 'user_id', p_intent.user_id));
    return p_intent.amount;
  end if;
  if v_grant.kind <> 'grant' or (v_grant.memo ->> 'user_id') is distinct from p_intent.user_id::text
     or coalesce(v_grant.memo ->> 'section_key', p_intent.section_key) <> p_intent.section_key
     or coalesce(v_grant.memo ->> 'period', p_intent.period) <> p_intent.period then
    perform claims_private.refuse('grant_not_found', format('entry %s is not this claim''s grant', p_intent.claim_id));
  end if;
  update claims.claim_intents i set amount = v_grant.amounts[2], recipient = coalesce(v_grant.memo ->> 'recipient', i.recipient)
   where i.claim_id = p_intent.claim_id;
  return v_grant.amounts[2];
end;
$$;

-- A claim, credited in ONE transaction (issue 33; the spec's claim transaction order, all six steps):
-- the player is the user of the access JWT's live grant p_sid (never an id the caller names);
-- 1 the kill switch and the live section, 2 the period and its claim id (p_claim_ids as for
-- open_claim), 3-4 claimable (judged first without a lock, so a refusal writes nothing, then again
-- under the user's row lock, or the intent's unique key for a first claim), 5 the recipient (the
-- user's first linked Solana wallet) and the cage's grant movement, 6 the ledger row, the section
-- claimed, the claim intent written closed. A twin waits on the user's row or on the intent's
-- unique key and then answers already_claimed. Nothing is ever left half-done: the game makes no
-- call to the cage, and a failure rolls the whole claim back (retryable).
-- outcome: 'disabled', 'forged' (no such live section), 'already_claimed', 'locked', 'no_wallet',
-- or 'credited' with the amount paid, the period, the claim id and the grant's transaction (the
-- journal entry's ref id, the claim id; null for a zero-amount section).
-- The clock a claim is judged at: the database's own, except under the test harness (the
-- test_seeds switch, which the migrator turns on only when ENABLE_TEST_AUTH is permitted, in
-- development or test), where the harness's x-test-clock may name another instant. The game login
-- never chooses the period of a claim in production: next week's baseline is not claimable now.
create or replace function claims_private.claim_clock(p_now timestamptz) returns timestamptz
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select case when p_now is not null and cage_private.switch_on('test_seeds') then p_now else now() end
$$;

create or replace function claims.credit_claim(p_environment text, p_sid uuid, p_section_key text, p_now timestamptz, p_claim_ids jsonb)
  returns table (outcome text, amount bigint, period text, kind text, claim_id text, grant_tx text)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_user uuid := auth_private.user_of_sid(p_sid);
  v_now timestamptz := claims_private.claim_clock(p_now);
  v_section claims.claim_sections;
  v_period text;
  v_refusal text;
  v_recipient text;
  v_id text;
  v_intent claims.claim_intents;
  v_amount bigint;
begin
  if p_now is null then
    perform claims_private.refuse('invalid_claim', 'a user and a clock');
  end if;
  if not (select b.claim_board_enabled from claims.board_settings(p_environment) b) then
    return query select 'disabled'::text, null::bigint, null::text, null::text, null::text, null::text;
    return;
  end if;
  select * into v_section from claims.resolved_sections(p_environment) s where s.key = p_section_key;
  if v_section.id is null then
    return query select 'forged'::text, null::bigint, null::text, null::text, null::text, null::text;
    return;
  end if;
  v_period := claims_private.period_of(v_section.cadence, v_now);
  v_refusal := claims_private.claim_refusal(v_user, v_section, v_period);
  if v_refusal is null then
    select w.address into v_recipient from auth.wallets w
     where w.user_id = v_user and w.chain = 'solana' order by w.created_at, w.id limit 1;
    v_refusal := case when v_recipient is null then 'no_wallet' end;
  end if;
  if v_refusal is null then
    -- claimable as read: now under the user's row lock (when the row exists), judged again
    perform from claims.user_claim_sections u where u.user_id = v_user and u.section_key = v_section.key for update;
    v_refusal := claims_private.claim_refusal(v_user, v_section, v_period);
  end if;
  if v_refusal is not null then
    return query select v_refusal, v_section.amount, v_period, v_section.kind, null::text, null::text;
    return;
  end if;
  v_id := case when jsonb_typeof(p_claim_ids) = 'object' then p_claim_ids ->> v_period end;
  if v_id is null or v_id !~ '^0x[0-9a-f]{64}$' then
    perform claims_private.refuse('invalid_claim', format('a claim id (0x + 64 hex) for period %s', v_period));
  end if;
  v_intent := claims_private.take_claim_intent(v_id, v_user, v_section, v_period, v_recipient);
  if v_intent.claim_id is null then
    return query select 'already_claimed'::text, v_section.amount, v_period, v_section.kind, null::text, null::text;
    return;
  end if;
  v_amount := claims_private.post_claim_grant(v_intent);
  insert into claims.claim_ledger (user_id, section_key, period, amount, claim_id, grant_tx)
  values (v_user, v_section.key, v_period, v_amount, v_intent.claim_id, case when v_amount > 0 then v_intent.claim_id end);
  insert into claims.user_claim_sections as u (user_id, section_key, state, claimed_at, period, claim_id)
  values (v_user, v_section.key, 'claimed', now(), v_period, v_intent.claim_id)
  on conflict (user_id, section_key) do update set state = 'claimed', claimed_at = now(), period = excluded.period, claim_id = excluded.claim_id;
  return query select 'credited'::text, v_amount, v_period, v_section.kind, v_intent.claim_id, case when v_amount > 0 then v_intent.claim_id end;
end;
$$;

-- The claim intent of a claim being credited (claims.credit_claim), written closed ('claimed') in
-- the claim's transaction: a new one, or one an earlier version's three-step claim left open or
-- abandoned, taken up (its amount and recipient the claim's now, unless its grant minted:
-- claims_private.post_claim_grant then pays what it minted). Returns nulls when a twin already
-- credited this claim (the insert waited on the intent's unique key until the twin committed).
create or replace function claims_private.take_claim_intent(
  p_claim_id text, p_user uuid, p_section claims.claim_sections, p_period text, p_recipient text
) returns claims.claim_intents
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_intent claims.claim_intents;
begin
  insert into claims.claim_intents (claim_id, user_id, section_key, period, amount, kind, recipient, status, closed_at)
  values (p_claim_id, p_user, p_section.key, p_period, p_section.amount, p_section.kind, p_recipient, 'claimed', now())
  on conflict do nothing
  returning * into v_intent;
  if v_intent.claim_id is not null then
    return v_intent;
  end if;
  select * into v_intent from claims.claim_intents i
   where i.user_id = p_user and i.section_key = p_section.key and i.period = p_period for update;
  if v_intent.claim_id is null then
    perform claims_private.refuse('invalid_claim', format('claim id %s belongs to another claim', p_claim_id));
  end if;
  if v_intent.status = 'claimed' then
    return null;
  end if;
  update claims.claim_intents i
     set status = 'claimed', opened_at = now(), closed_at = now(), amount = p_section.amount, kind = p_section.kind, recipient = p_recipient
   where i.claim_id = v_intent.claim_id
  returning i.* into v_intent;
  return v_intent;
end;
$$;

-- How long a claim may take from its intent to its ledger row. Since issue 33 both commit in one
-- transaction, so no grant of a new claim is ever without its row; the window stays for the audit's
-- young grants (cage_private.audit_checkpoint) and for grants made before it.
create or replace function claims_private.claim_timeout() returns interval
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select interval '60 seconds'
$$;

-- When the audit names a grant whose claim never completed: past the claim's timeout and four
-- minutes (the margin the lost-claim reconciler had before issue 33).
create or replace function claims_private.claim_report_after() returns interval
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select claims_private.claim_timeout() + interval '4 minutes'
$$;
