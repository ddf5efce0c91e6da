-- Money into and out of the cage: play-chip grants (the claim board), real-chip purchases and
-- redemptions (operator routes), and custody claims. Each is one movement, replay-once on its ref.

-- A replay of ref p_ref_id, if it exists: refused when it was for another movement (another kind,
-- amount, or memo fields, e.g. a grant's recipient).
create or replace function cage_private.existing_entry(p_ref_id text, p_kind text, p_amount bigint, p_memo_match jsonb default '{}')
  returns cage.cage_entries
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_entry cage.cage_entries;
begin
  select * into v_entry from cage.cage_entries e where e.ref_id = p_ref_id;
  if v_entry.id is not null
     and (v_entry.kind::text <> p_kind or (select max(abs(x)) from unnest(v_entry.amounts) x) <> p_amount
          or not v_entry.memo @> coalesce(p_memo_match, '{}')) then
    perform cage_private.refuse('ref_id_conflict', format('ref_id %s was used for another movement', p_ref_id));
  end if;
  return v_entry;
end;
$$;

-- Play chips to the owner of the linked Solana wallet p_recipient; ref id = the claim id. A replay
-- returns status 'replayed' (the route answers { idempotent: true }) and mints nothing. A new grant
-- is made only for the claim that backs it: an open claim intent of this claim id, of this amount,
-- whose user owns the recipient wallet, and of the section and period named when they are
-- (grant_not_backed otherwise): the service key alone mints nothing. Since issue 33 a claim posts
-- its own grant in its one transaction (claims.credit_claim, the same kind and memo as here) and
-- leaves no intent open, so this route answers replays and refuses the rest. The claim's section
-- and period are kept in the entry's memo, so the claim's ledger row can be checked against its
-- grant (the audit).
create or replace function cage.grant_play_chips(
  p_recipient text, p_amount bigint, p_claim_id text, p_section_key text default null, p_period text default null
) returns table (user_id uuid, amount bigint, ref_id text, status text)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_entry cage.cage_entries;
  v_user uuid;
  v_result record;
  v_match jsonb;
  v_intent claims.claim_intents;
begin
  if p_claim_id is null or length(p_claim_id) not between 1 and 200 or p_recipient is null or length(p_recipient) not between 1 and 128
     or (p_section_key is null) <> (p_period is null) or length(p_section_key) > 64 or length(p_period) > 16 then
    perform cage_private.refuse('bad_request', 'recipient (1..128 chars), claimId (1..200 chars), and sectionKey with period or neither');
  end if;
  if p_amount is null or p_amount <= 0 or p_amount > cage_private.max_amount() then
    perform cage_private.refuse('invalid_amount', 'a positive whole number of chips');
  end if;
  v_match := jsonb_build_object('recipient', p_recipient)
    || case when p_section_key is null then '{}'::jsonb else jsonb_build_object('section_key', p_section_key, 'period', p_period) end;
  v_entry := cage_private.existing_entry(p_claim_id, 'grant', p_amount, v_match);
  if v_entry.id is not null then
    return query select (v_entry.memo ->> 'user_id')::uuid, p_amount, p_claim_id, 'replayed'::text;
    return;
  end if;
  select w.user_id into v_user from auth.wallets w where w.chain = 'solana' and w.address = p_recipient;
  if v_user is null then
    perform cage_private.refuse('recipient_not_found', 'no account has linked this wallet');
  end if;
  -- the claim behind it, held (for share) so the lost-claim reconciler cannot abandon it meanwhile
  select * into v_intent from claims.claim_intents i where i.claim_id = p_claim_id for share;
  if v_intent.status = 'claimed' then
    -- a twin request of the same claim granted and finished it while this one waited for the
    -- intent (its grant committed after the look above): this grant is that one, replayed
    v_entry := cage_private.existing_entry(p_claim_id, 'grant', p_amount, v_match);
    if v_entry.id is not null then
      return query select (v_entry.memo ->> 'user_id')::uuid, p_amount, p_claim_id, 'replayed'::text;
      return;
    end if;
  end if;
  if v_intent.claim_id is null or v_intent.status <> 'open' or v_intent.amount <> p_amount or v_intent.user_id <> v_user
     or v_intent.recipient is distinct from p_recipient
     or (p_section_key is not null and (p_section_key <> v_intent.section_key or p_period <> v_intent.period)) then
    perform cage_private.refuse('grant_not_backed', 'no open claim of this claim id, amount and recipient');
  end if;
  v_match := jsonb_build_object('recipient', p_recipient, 'section_key', v_intent.section_key, 'period', v_intent.period);
  select * into v_result from cage.post_movement(p_claim_id, 'grant', 'play',
    array[cage.ensure_account('grant_source', null, null, 'play'), cage.ensure_account('user', v_user, null, 'play')],
    array[-p_amount, p_amount], v_match || jsonb_build_object('user_id', v_user));
  if v_result.status = 'replayed' then
    -- a twin under this claim id posted it after our look above: post_movement compared the legs
    -- only, so it is our grant only if it went to this recipient (and claim) too (else
    -- ref_id_conflict, as when the look had found it)
    perform cage_private.existing_entry(p_claim_id, 'grant', p_amount, v_match);
  end if;
  return query select v_user, p_amount, p_claim_id, v_result.status::text;
end;
$$;

-- The user id, refused unless it is a known account.
create or replace function cage_private.known_user(p_user_id uuid) returns uuid
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
begin
  if p_user_id is null or not exists (select from auth.users u where u.id = p_user_id) then
    perform cage_private.refuse('user_not_found');
  end if;
  return p_user_id;
end;
$$;

-- Whether an operator switch is on (cage.switches; a missing row is off).
create or replace function cage_private.switch_on(p_name text) returns boolean
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select coalesce((select s.enabled from cage.switches s where s.name = p_name), false)
$$;

-- Real chips come in only while the operators' real_money switch is on (real_money_disabled).
create or replace function cage_private.require_real_money(p_money_kind text) returns void
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
begin
  if p_money_kind = 'real' and not cage_private.switch_on('real_money') then
    perform cage_private.refuse('real_money_disabled', 'real money is switched off by the operators');
  end if;
end;
$$;

-- An operator sets a switch (p_sid: their live admin session); recorded in cage.operator_acts with
-- the change, in its transaction. Setting a switch to what it is records nothing and answers it.
create or replace function cage.set_switch(p_sid uuid, p_name text, p_enabled boolean)
  returns table (name text, enabled boolean, updated_at timestamptz, changed boolean)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_admin uuid := auth_private.admin_of_session(p_sid);
  v_row cage.switches;
begin
  if p_name is null or p_name not in ('real_money') or p_enabled is null then
    perform cage_private.refuse('bad_request', 'a known switch (real_money) and enabled true or false');
  end if;
  insert into cage.switches (name, enabled, updated_by) values (p_name, not p_enabled, null)
  on conflict (name) do nothing;
  select * into v_row from cage.switches s where s.name = p_name for update;
  if v_row.enabled = p_enabled then
    return query select v_row.name, v_row.enabled, v_row.updated_at, false;
    return;
  end if;
  update cage.switches s set enabled = p_enabled, updated_at = now(), updated_by = v_admin
   where s.name = p_name returning s.* into v_row;
  insert into cage.operator_acts (admin_id, act, ref_id, change)
  values (v_admin, 'switch', format('switch:%s:%s', p_name, gen_random_uuid()), jsonb_build_object('switch', p_name, 'enabled', p_enabled));
  return query select v_row.name, v_row.enabled, v_row.updated_at, true;
end;
$$;

-- The operators' switches, as they stand (a missing row is off).
create or replace function cage.switch_states()
  returns table (name text, enabled boolean, updated_at timestamptz)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select n.name, coalesce(s.enabled, false), s.updated_at
    from (values ('real_money')) n (name)
    left join cage.switches s on s.name = n.name
$$;

-- Chips bought from outside (an operator's payment reference is the ref): outside -> user.
-- p_direction 'purchase' brings chips in; 'redemption' takes them out (user -> outside), refused
-- with insufficient_cage_balance beyond the balance. The operator (the admin of the live session
-- p_sid, from their access JWT) is recorded with the entry, in its transaction; a replay records nothing new.
create or replace function cage.exchange_chips(
  p_direction text, p_user_id uuid, p_amount bigint, p_external_ref text, p_money_kind text, p_sid uuid
) returns table (ref_id text, status text, balance bigint)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_admin uuid := auth_private.admin_of_session(p_sid);
  v_ref text;
  v_user_account bigint;
  v_outside bigint;
  v_result record;
begin
  if p_direction is null or p_direction not in ('purchase', 'redemption')
     or p_external_ref is null or p_external_ref !~ '^[\x21-\x7e]{1,128}$'
     or p_money_kind is null or not pg_input_is_valid(p_money_kind, 'cage.money_kind') then
    perform cage_private.refuse('bad_request', 'externalRef: 1..128 printable characters; moneyKind play or real');
  end if;
  if p_amount is null or p_amount <= 0 or p_amount > cage_private.max_amount() then
    perform cage_private.refuse('invalid_amount', 'a positive whole number of chips');
  end if;
  v_ref := p_direction || ':' || p_external_ref;
  -- switched off, real money may still leave (a redemption), never come in; a replay answers
  if cage_private.existing_entry(v_ref, p_direction, p_amount, jsonb_build_object('user_id', p_user_id)) is null and p_direction = 'purchase' then
    perform cage_private.require_real_money(p_money_kind);
  end if;
  perform cage_private.known_user(p_user_id);
  v_user_account := cage.ensure_account('user', p_user_id, null, p_money_kind);
  v_outside := cage.ensure_account('outside', null, null, p_money_kind);
  select * into v_result from cage.post_movement(v_ref, p_direction, p_money_kind,
    array[v_outside, v_user_account],
    case p_direction when 'purchase' then array[-p_amount, p_amount] else array[p_amount, -p_amount] end,
    jsonb_build_object('external_ref', p_external_ref, 'user_id', p_user_id, 'admin_id', v_admin));
  if v_result.status = 'created' then
    insert into cage.operator_acts (admin_id, act, ref_id) values (v_admin, p_direction, v_ref);
  end if;
  return query select v_ref, v_result.status::text, (select a.balance from cage.cage_accounts a where a.id = v_user_account);
end;
$$;

-- A manual correction of the books by an operator: one balanced adjustment between existing
-- accounts, recorded with the operator and the reason in its transaction (cage.operator_acts, listed
-- by cage.manual_corrections). The only way a service role can post an arbitrary movement, and
-- only for a named operator. Replay-once on the ref: the same ref again with the same legs returns
-- 'replayed'; with other legs ref_id_conflict.
create or replace function cage.correct_books(
  p_sid uuid, p_ref text, p_money_kind text, p_accounts bigint[], p_amounts bigint[], p_reason text
) returns table (ref_id text, entry_id bigint, status text)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_admin uuid := auth_private.admin_of_session(p_sid);
  v_ref text;
  v_result record;
begin
  if p_ref is null or p_ref !~ '^[\x21-\x7e]{1,128}$' or p_reason is null or length(btrim(p_reason)) = 0 or length(p_reason) > 500 then
    perform cage_private.refuse('bad_request', 'ref: 1..128 printable characters; a reason of 1..500 characters');
  end if;
  v_ref := 'correction:' || p_ref;
  select * into v_result from cage.post_movement(v_ref, 'adjustment', p_money_kind, p_accounts, p_amounts,
    jsonb_build_object('admin_id', v_admin, 'reason', p_reason));
  if v_result.status = 'created' then
    insert into cage.operator_acts (admin_id, act, ref_id, reason) values (v_admin, 'correction', v_ref, p_reason);
  end if;
  return query select v_ref, v_result.entry_id, v_result.status::text;
end;
$$;

-- A FREE custody entry claimed by its owner: custody -> the owner's cage balance (custody_claim),
-- replay-once on the entry (a second claim returns the first).
create or replace function cage.claim_custody(p_sid uuid, p_entry_id bigint)
  returns table (entry_id bigint, ref_id text, amount bigint, money_kind text, table_id text, replayed boolean)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  -- the player: the user of the access JWT's live grant (never an id the caller names)
  v_user uuid := auth_private.user_of_sid(p_sid);
  v_entry cage.custody_entries;
  v_ref text;
  v_chips bigint;
begin
  select * into v_entry from cage.custody_entries c where c.id = p_entry_id for update;
  if v_entry.id is null or v_entry.user_id is distinct from v_user then
    perform cage_private.refuse('custody_entry_not_found');
  end if;
  v_chips := v_entry.amount / cage_private.base_units();
  if v_entry.status = 'claimed' then
    return query select v_entry.id, v_entry.claim_ref_id, v_chips, v_entry.money_kind::text, v_entry.table_id, true;
    return;
  end if;
  if v_entry.status <> 'free' then
    perform cage_private.refuse('custody_not_claimable', format('entry is %s', v_entry.status));
  end if;
  v_ref := 'custody-claim:' || v_entry.ref_id;
  perform cage.post_movement(v_ref, 'custody_claim', v_entry.money_kind::text,
    array[cage.ensure_account('custody', null, null, v_entry.money_kind::text),
          cage.ensure_account('user', v_user, null, v_entry.money_kind::text)],
    array[-v_chips, v_chips], jsonb_build_object('custody_entry', v_entry.id, 'table_id', v_entry.table_id));
  update cage.custody_entries c set status = 'claimed', claim_ref_id = v_ref, claimed_at = now() where c.id = v_entry.id;
  return query select v_entry.id, v_ref, v_chips, v_entry.money_kind::text, v_entry.table_id, false;
end;
$$;
