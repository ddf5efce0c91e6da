-- Money into and out of the cage: play-chip grants (the claim board), real-chip purchases and
-- redemptions (operator routes), and custody claims. Each is one movement, replay-once on its ref.

-- A replay of ref p_ref_id, if it exists: refused when it was for another movement (another kind,
-- amount, or memo fields, e.g. a grant's recipient).
drop function if exists cage_private.existing_entry(text, text, bigint);
create or replace function cage_private.existing_entry(p_ref_id text, p_kind text, p_amount bigint, p_memo_match jsonb default '{}')
  returns cage.cage_entries
  language plpgsql stable
  set search_path = pg_catalog
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
-- returns status 'replayed' (the route answers { idempotent: true }) and mints nothing.
create or replace function cage.grant_play_chips(p_recipient text, p_amount bigint, p_claim_id text)
  returns table (user_id uuid, amount bigint, ref_id text, status text)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_entry cage.cage_entries;
  v_user uuid;
  v_result record;
begin
  if p_claim_id is null or length(p_claim_id) not between 1 and 200 or p_recipient is null or length(p_recipient) not between 1 and 128 then
    perform cage_private.refuse('bad_request', 'recipient (1..128 chars) and claimId (1..200 chars)');
  end if;
  if p_amount is null or p_amount <= 0 or p_amount > cage_private.max_amount() then
    perform cage_private.refuse('invalid_amount', 'a positive whole number of chips');
  end if;
  v_entry := cage_private.existing_entry(p_claim_id, 'grant', p_amount, jsonb_build_object('recipient', p_recipient));
  if v_entry.id is not null then
    return query select (v_entry.memo ->> 'user_id')::uuid, p_amount, p_claim_id, 'replayed'::text;
    return;
  end if;
  select w.user_id into v_user from auth.wallets w where w.chain = 'solana' and w.address = p_recipient;
  if v_user is null then
    perform cage_private.refuse('recipient_not_found', 'no account has linked this wallet');
  end if;
  select * into v_result from cage.post_movement(p_claim_id, 'grant', 'play',
    array[cage.ensure_account('grant_source', null, null, 'play'), cage.ensure_account('user', v_user, null, 'play')],
    array[-p_amount, p_amount], jsonb_build_object('recipient', p_recipient, 'user_id', v_user));
  if v_result.status = 'replayed' then
    -- a twin under this claim id posted it after our look above: post_movement compared the legs
    -- only, so it is our grant only if it went to this recipient too (else ref_id_conflict, as when
    -- the look had found it)
    perform cage_private.existing_entry(p_claim_id, 'grant', p_amount, jsonb_build_object('recipient', p_recipient));
  end if;
  return query select v_user, p_amount, p_claim_id, v_result.status::text;
end;
$$;

-- The user id, refused unless it is a known account.
create or replace function cage_private.known_user(p_user_id uuid) returns uuid
  language plpgsql stable
  set search_path = pg_catalog
as $$
begin
  if p_user_id is null or not exists (select from auth.users u where u.id = p_user_id) then
    perform cage_private.refuse('user_not_found');
  end if;
  return p_user_id;
end;
$$;

-- Chips bought from outside (an operator's payment reference is the ref): outside -> user.
-- p_direction 'purchase' brings chips in; 'redemption' takes them out (user -> outside), refused
-- with insufficient_cage_balance beyond the balance.
create or replace function cage.exchange_chips(
  p_direction text, p_user_id uuid, p_amount bigint, p_external_ref text, p_money_kind text
) returns table (ref_id text, status text, balance bigint)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
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
  perform cage_private.existing_entry(v_ref, p_direction, p_amount, jsonb_build_object('user_id', p_user_id));
  perform cage_private.known_user(p_user_id);
  v_user_account := cage.ensure_account('user', p_user_id, null, p_money_kind);
  v_outside := cage.ensure_account('outside', null, null, p_money_kind);
  select * into v_result from cage.post_movement(v_ref, p_direction, p_money_kind,
    array[v_outside, v_user_account],
    case p_direction when 'purchase' then array[-p_amount, p_amount] else array[p_amount, -p_amount] end,
    jsonb_build_object('external_ref', p_external_ref, 'user_id', p_user_id));
  return query select v_ref, v_result.status::text, (select a.balance from cage.cage_accounts a where a.id = v_user_account);
end;
$$;

-- A FREE custody entry claimed by its owner: custody -> the owner's cage balance (custody_claim),
-- replay-once on the entry (a second claim returns the first).
create or replace function cage.claim_custody(p_user_id uuid, p_entry_id bigint)
  returns table (entry_id bigint, ref_id text, amount bigint, money_kind text, table_id text, replayed boolean)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_entry cage.custody_entries;
  v_ref text;
  v_chips bigint;
begin
  select * into v_entry from cage.custody_entries c where c.id = p_entry_id for update;
  if v_entry.id is null or v_entry.user_id is distinct from p_user_id then
    perform cage_private.refuse('custody_entry_not_found');
  end if;
  v_chips := v_entry.amount / 1000000;
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
          cage.ensure_account('user', p_user_id, null, v_entry.money_kind::text)],
    array[-v_chips, v_chips], jsonb_build_object('custody_entry', v_entry.id, 'table_id', v_entry.table_id));
  update cage.custody_entries c set status = 'claimed', claim_ref_id = v_ref, claimed_at = now() where c.id = v_entry.id;
  return query select v_entry.id, v_ref, v_chips, v_entry.money_kind::text, v_entry.table_id, false;
end;
$$;
