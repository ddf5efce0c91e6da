-- The claim board of a user, conditions met, and the claim itself (spec: Claim transaction order),
-- in short transactions, none held across the HTTP calls:
--   claims.open_claim    1 re-read the kill switch and the live section, 2 the period,
--                        3 lock the user's row and look for a ledger row, 4 re-verify claimability,
--                        and open the claim intent (claim id, user, section, period, amount);
--   (the role)           5 resolve the wallet and POST the grant, which the cage makes only for an
--                        open intent of that claim id, amount and recipient (grant_not_backed);
--   claims.finish_claim  6 write the ledger row, mark the section claimed, close the intent.
-- One intent per claim and the ledger's unique claim_id (and unique user/section/period) make a
-- second credit impossible whatever the caller does; the bank's replay-once on the claim id and
-- its intent check make a second mint impossible.

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

-- Steps 1 to 4 of a claim, in a short transaction of their own, and the claim intent they open.
-- outcome: 'disabled' (kill switch off), 'forged' (no such live section), 'already_claimed',
-- 'locked', 'no_wallet' (no linked Solana wallet), or 'proceed' with the amount, the period, the
-- claim id to grant under and the recipient wallet. The user's row
-- (when it exists) is locked while the claim is judged; nothing but the intent is written.
-- p_claim_ids maps a period to its claim id (keccak256 of `userId:sectionKey:period`, which the game
-- computes for each period the claim could fall in); the one of the period computed here is taken.
-- One intent per claim (user, section, period): a claim already in flight (a retry, a twin) answers
-- with the open intent, whatever claim id it names, so no second grant can be backed; an intent the
-- reconciler abandoned (no grant came) is opened again.
create or replace function claims.open_claim(p_environment text, p_sid uuid, p_section_key text, p_now timestamptz, p_claim_ids jsonb)
  returns table (outcome text, amount bigint, period text, kind text, claim_id text, recipient text)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  -- the player: the user of the access JWT's live grant (never an id the caller names)
  v_user uuid := auth_private.user_of_sid(p_sid);
  v_section claims.claim_sections;
  v_period text;
  v_row claims.user_claim_sections;
  v_id text;
  v_intent claims.claim_intents;
  v_recipient text;
begin
  if v_user is null or p_now is null then
    perform claims_private.refuse('invalid_claim', 'a user and a clock');
  end if;
  -- 1. the kill switch and the live section, read now
  if not (select b.claim_board_enabled from claims.board_settings(p_environment) b) then
    return query select 'disabled'::text, null::bigint, null::text, null::text, null::text, null::text;
    return;
  end if;
  select * into v_section from claims.resolved_sections(p_environment) s where s.key = p_section_key;
  if v_section.id is null then
    return query select 'forged'::text, null::bigint, null::text, null::text, null::text, null::text;
    return;
  end if;
  -- 2. the period, and the claim id of it
  v_period := claims_private.period_of(v_section.cadence, p_now);
  -- 3. the user's row, locked when it exists (a claim writes nothing until it proceeds: a missing
  --    row is a locked unlock or an unclaimed baseline, and the one intent per claim below is what
  --    makes two first claims one), then the ledger: the claim of this period, or for an unlock any
  --    claim of the key ever (it pays once, even after a delete-and-recreate that changed its cadence)
  select * into v_row from claims.user_claim_sections u
   where u.user_id = v_user and u.section_key = v_section.key for update;
  if exists (select from claims.claim_ledger l
              where l.user_id = v_user and l.section_key = v_section.key
                and (v_section.kind = 'unlock' or l.period = v_period)) then
    return query select 'already_claimed'::text, v_section.amount, v_period, v_section.kind, null::text, null::text;
    return;
  end if;
  -- 4. claimable: an unlock must be lit; the baseline unclaimed in this period
  if v_section.kind = 'unlock' and v_row.state is distinct from 'lit' then
    return query select 'locked'::text, v_section.amount, v_period, v_section.kind, null::text, null::text;
    return;
  end if;
  if v_section.kind = 'baseline' and v_row.period is not distinct from v_period then
    return query select 'already_claimed'::text, v_section.amount, v_period, v_section.kind, null::text, null::text;
    return;
  end if;
  -- 5a. the recipient: the user's first linked Solana wallet (read here, with the claim, from the
  --     identity tables this definer function may read; no wallet: nothing is opened)
  select w.address into v_recipient from auth.wallets w
   where w.user_id = v_user and w.chain = 'solana' order by w.created_at, w.id limit 1;
  if v_recipient is null then
    return query select 'no_wallet'::text, v_section.amount, v_period, v_section.kind, null::text, null::text;
    return;
  end if;
  -- the intent: this claim's, once
  v_id := case when jsonb_typeof(p_claim_ids) = 'object' then p_claim_ids ->> v_period end;
  if v_id is null or v_id !~ '^0x[0-9a-f]{64}$' then
    perform claims_private.refuse('invalid_claim', format('a claim id (0x + 64 hex) for period %s', v_period));
  end if;
  insert into claims.claim_intents (claim_id, user_id, section_key, period, amount, kind, recipient)
  values (v_id, v_user, v_section.key, v_period, v_section.amount, v_section.kind, v_recipient)
  on conflict do nothing;
  select * into v_intent from claims.claim_intents i
   where i.user_id = v_user and i.section_key = v_section.key and i.period = v_period;
  if v_intent.claim_id is null then
    perform claims_private.refuse('invalid_claim', format('claim id %s belongs to another claim', v_id));
  end if;
  if v_intent.status = 'abandoned' then
    update claims.claim_intents i
       set status = 'open', opened_at = now(), closed_at = null, amount = v_section.amount, kind = v_section.kind, recipient = v_recipient
     where i.claim_id = v_intent.claim_id returning i.* into v_intent;
  elsif v_intent.status = 'open' and v_intent.recipient is distinct from v_recipient
        and not exists (select from cage.cage_entries e where e.ref_id = v_intent.claim_id) then
    -- the wallet changed before any grant: the intent pays the wallet linked now
    update claims.claim_intents i set recipient = v_recipient where i.claim_id = v_intent.claim_id returning i.* into v_intent;
  elsif v_intent.status = 'claimed' then
    return query select 'already_claimed'::text, v_intent.amount, v_period, v_intent.kind, v_intent.claim_id, v_intent.recipient;
    return;
  end if;
  return query select 'proceed'::text, v_intent.amount, v_period, v_intent.kind, v_intent.claim_id, v_intent.recipient;
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
create or replace function claims.credit_claim(p_environment text, p_sid uuid, p_section_key text, p_now timestamptz, p_claim_ids jsonb)
  returns table (outcome text, amount bigint, period text, claim_id text, grant_tx text)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_user uuid := auth_private.user_of_sid(p_sid);
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
    return query select 'disabled'::text, null::bigint, null::text, null::text, null::text;
    return;
  end if;
  select * into v_section from claims.resolved_sections(p_environment) s where s.key = p_section_key;
  if v_section.id is null then
    return query select 'forged'::text, null::bigint, null::text, null::text, null::text;
    return;
  end if;
  v_period := claims_private.period_of(v_section.cadence, p_now);
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
    return query select v_refusal, v_section.amount, v_period, null::text, null::text;
    return;
  end if;
  v_id := case when jsonb_typeof(p_claim_ids) = 'object' then p_claim_ids ->> v_period end;
  if v_id is null or v_id !~ '^0x[0-9a-f]{64}$' then
    perform claims_private.refuse('invalid_claim', format('a claim id (0x + 64 hex) for period %s', v_period));
  end if;
  v_intent := claims_private.take_claim_intent(v_id, v_user, v_section, v_period, v_recipient);
  if v_intent.status = 'claimed' then
    return query select 'already_claimed'::text, v_intent.amount, v_period, null::text, null::text;
    return;
  end if;
  v_amount := claims_private.post_claim_grant(v_intent);
  insert into claims.claim_ledger (user_id, section_key, period, amount, claim_id, grant_tx)
  values (v_user, v_section.key, v_period, v_amount, v_intent.claim_id, case when v_amount > 0 then v_intent.claim_id end);
  insert into claims.user_claim_sections as u (user_id, section_key, state, claimed_at, period, claim_id)
  values (v_user, v_section.key, 'claimed', now(), v_period, v_intent.claim_id)
  on conflict (user_id, section_key) do update set state = 'claimed', claimed_at = now(), period = excluded.period, claim_id = excluded.claim_id;
  update claims.claim_intents i set status = 'claimed', closed_at = now() where i.claim_id = v_intent.claim_id;
  return query select 'credited'::text, v_amount, v_period, v_intent.claim_id, case when v_amount > 0 then v_intent.claim_id end;
end;
$$;

-- The claim intent of a claim being credited (claims.credit_claim): written here, in the claim's
-- transaction, and closed by it. Returns it with status 'claimed' when a twin already credited this
-- claim (the insert waited on the intent's unique key until the twin committed), else with status
-- 'open' for the caller to close: a new one, or one a three-step claim (claims.open_claim) left open
-- or the reconciler abandoned, taken up (its amount and recipient the claim's now, unless its grant
-- minted: claims_private.post_claim_grant then pays what it minted).
create or replace function claims_private.take_claim_intent(
  p_claim_id text, p_user uuid, p_section claims.claim_sections, p_period text, p_recipient text
) returns claims.claim_intents
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_intent claims.claim_intents;
begin
  insert into claims.claim_intents (claim_id, user_id, section_key, period, amount, kind, recipient)
  values (p_claim_id, p_user, p_section.key, p_period, p_section.amount, p_section.kind, p_recipient)
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
    return v_intent;
  end if;
  update claims.claim_intents i
     set status = 'open', opened_at = now(), closed_at = null, amount = p_section.amount, kind = p_section.kind, recipient = p_recipient
   where i.claim_id = v_intent.claim_id
  returning i.* into v_intent;
  return v_intent;
end;
$$;

-- Step 6: the grant minted (or had minted: a replay); the ledger row, the claimed state, and the
-- intent closed. Claim-once is this function's alone, whatever its caller sends. It refuses unless:
--   * an open claim intent names this claim id, user, section and period (claim_not_begun);
--   * the section is still claimable: an unlock lit and never paid, a baseline unpaid in this
--     period (already_claimed, section_not_lit);
--   * the amount is the intent's, or, when the cage has already minted a grant for this claim id,
--     the amount that grant minted (claim_amount_mismatch);
--   * a non-zero amount has its grant: a cage grant under this claim id to this user, for this
--     section and period, of this amount (grant_not_found).
-- The intent's row lock serialises twins: the second finds it claimed (already_claimed).
create or replace function claims.finish_claim(
  p_user_id uuid, p_section_key text, p_period text, p_amount bigint, p_claim_id text, p_grant_tx text
) returns claims.claim_ledger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_intent claims.claim_intents;
  v_row claims.user_claim_sections;
  v_grant cage.cage_entries;
  v_entry claims.claim_ledger;
begin
  if p_claim_id is null or p_claim_id !~ '^0x[0-9a-f]{64}$' or p_amount is null or p_amount < 0 or p_period is null then
    perform claims_private.refuse('invalid_claim', 'claim id 0x + 64 hex, amount, period');
  end if;
  select * into v_intent from claims.claim_intents i where i.claim_id = p_claim_id for update;
  if v_intent.claim_id is null or v_intent.user_id is distinct from p_user_id
     or v_intent.section_key is distinct from p_section_key or v_intent.period is distinct from p_period then
    perform claims_private.refuse('claim_not_begun', 'no claim intent of this claim id for this user, section and period (claims.open_claim)');
  end if;
  if v_intent.status = 'claimed' then
    perform claims_private.refuse('already_claimed');
  end if;
  if v_intent.status <> 'open' then
    perform claims_private.refuse('claim_not_begun', format('the claim intent is %s', v_intent.status));
  end if;
  insert into claims.user_claim_sections (user_id, section_key) values (p_user_id, p_section_key)
  on conflict (user_id, section_key) do nothing;
  select * into v_row from claims.user_claim_sections u where u.user_id = p_user_id and u.section_key = p_section_key for update;
  if exists (select from claims.claim_ledger l
              where l.user_id = p_user_id and l.section_key = p_section_key
                and (v_intent.kind = 'unlock' or l.period = p_period)) then
    perform claims_private.refuse('already_claimed');
  end if;
  if v_intent.kind = 'unlock' and v_row.state is distinct from 'lit' then
    perform claims_private.refuse('section_not_lit');
  end if;
  if v_intent.kind = 'baseline' and v_row.period is not distinct from p_period then
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
    if p_amount <> v_intent.amount then
      perform claims_private.refuse('claim_amount_mismatch', format('the claim pays %s', v_intent.amount));
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
  update claims.claim_intents i set status = 'claimed', closed_at = now() where i.claim_id = p_claim_id;
  return v_entry;
end;
$$;

-- How long a claim may take from its intent to its ledger row (the wallet read and the grant between
-- them are each bounded by the game's call timeout). An intent open longer than this lost its
-- claim's process; the reconciler then completes it from its grant, or abandons it when none came.
create or replace function claims_private.claim_timeout() returns interval
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select interval '60 seconds'
$$;

-- When the audit names a grant whose claim never completed: past the claim's timeout and four
-- reconciler runs (the worker completes lost claims every minute).
create or replace function claims_private.claim_report_after() returns interval
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select claims_private.claim_timeout() + interval '4 minutes'
$$;

-- Finishes claims whose process died between the grant and the ledger row: for each claim intent
-- open longer than the claim timeout, the grant under its claim id (to its user, of its amount)
-- completes it (the ledger row, the claimed state, the intent closed) when the claim is still due;
-- an intent with no grant is abandoned (nothing was minted; the user may claim again). Only grants
-- an intent backs are completed: a grant the reconciler cannot match is never turned into a claim,
-- and the audit names it at once. Returns what it did.
create or replace function claims.complete_lost_claims(p_limit integer)
  returns table (claim_id text, user_id uuid, section_key text, period text, amount bigint, completed boolean, outcome text)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_intent claims.claim_intents;
  v_grant cage.cage_entries;
  v_row claims.user_claim_sections;
  v_due boolean;
begin
  for v_intent in
    select * from claims.claim_intents i
     where i.status = 'open' and i.opened_at < now() - claims_private.claim_timeout()
     order by i.opened_at
     limit greatest(coalesce(p_limit, 0), 0)
     for update skip locked
  loop
    select * into v_grant from cage.cage_entries e
     where e.ref_id = v_intent.claim_id and e.kind = 'grant'
       and e.memo ->> 'user_id' = v_intent.user_id::text and e.amounts[2] = v_intent.amount;
    if v_grant.id is null then
      update claims.claim_intents i set status = 'abandoned', closed_at = now() where i.claim_id = v_intent.claim_id;
      return query select v_intent.claim_id, v_intent.user_id, v_intent.section_key, v_intent.period, v_intent.amount, false, 'abandoned'::text;
      continue;
    end if;
    insert into claims.user_claim_sections (user_id, section_key) values (v_intent.user_id, v_intent.section_key)
    on conflict (user_id, section_key) do nothing;
    select * into v_row from claims.user_claim_sections u
     where u.user_id = v_intent.user_id and u.section_key = v_intent.section_key for update;
    v_due := not exists (select from claims.claim_ledger l
                          where l.user_id = v_intent.user_id and l.section_key = v_intent.section_key
                            and (v_intent.kind = 'unlock' or l.period = v_intent.period))
      and case v_intent.kind when 'unlock' then v_row.state = 'lit' else v_row.period is distinct from v_intent.period end;
    if v_due then
      insert into claims.claim_ledger (user_id, section_key, period, amount, claim_id, grant_tx)
      values (v_intent.user_id, v_intent.section_key, v_intent.period, v_intent.amount, v_intent.claim_id, v_intent.claim_id);
      update claims.user_claim_sections u
         set state = 'claimed', claimed_at = now(), period = v_intent.period, claim_id = v_intent.claim_id
       where u.user_id = v_intent.user_id and u.section_key = v_intent.section_key;
      update claims.claim_intents i set status = 'claimed', closed_at = now() where i.claim_id = v_intent.claim_id;
    end if;
    return query select v_intent.claim_id, v_intent.user_id, v_intent.section_key, v_intent.period, v_intent.amount, v_due,
                        case when v_due then 'completed' else 'not_due' end;
  end loop;
end;
$$;
