-- Wallets: ownership, the link nonce, and the one-primary rule. Every function locks the user's row
-- first, so one user's wallet changes are serialised and "first wallet becomes primary" cannot race.

create or replace function auth_private.valid_wallet_address(p_address text, p_chain auth.wallet_chain, p_chain_id integer)
  returns boolean
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select case p_chain
    when 'evm' then p_address ~ '^0x[0-9a-fA-F]{40}$' and p_chain_id > 0
    -- base58, 32..44 characters: a Solana public key
    when 'solana' then p_address ~ '^[1-9A-HJ-NP-Za-km-z]{32,44}$' and p_chain_id = 0
    else false
  end
$$;

-- One-time nonce for a link, owned by the user who asked: a new request of the same user for the
-- same identifier replaces that user's nonce, never another user's (issue 10: griefing, hijack).
-- A user holds at most 16 live nonces; older and expired ones go, so nobody grows the table.
create or replace function auth.issue_nonce(p_identifier text, p_user_id uuid, p_value text, p_ttl_seconds integer)
  returns timestamptz
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_expires timestamptz;
begin
  if p_identifier is null or length(p_identifier) not between 1 and 200 or p_value is null
     or length(p_value) not between 8 and 128 or p_ttl_seconds is null or p_ttl_seconds not between 1 and 86400 then
    perform auth_private.refuse('invalid_nonce_request', 'identifier 1..200 chars, value 8..128 chars, ttl 1..86400 s');
  end if;
  perform auth_private.lock_user(p_user_id);
  insert into auth_private.verifications as v (identifier, requested_by, value, expires_at)
  values (p_identifier, p_user_id, p_value, now() + make_interval(secs => p_ttl_seconds))
  on conflict (identifier, requested_by) do update set value = excluded.value, expires_at = excluded.expires_at, created_at = now()
  returning v.expires_at into v_expires;
  delete from auth_private.verifications v
   where v.requested_by = p_user_id
     and v.identifier not in (select k.identifier from auth_private.verifications k
                               where k.requested_by = p_user_id and k.expires_at > now()
                               order by k.created_at desc limit 16);
  return v_expires;
end;
$$;

-- Takes the caller's own nonce: one statement, so of two concurrent links with one nonce exactly
-- one gets it; another user's nonce for the same wallet is neither seen nor taken.
-- Missing or expired: 'no nonce' (an expired one is removed too).
create or replace function auth.consume_nonce(p_identifier text, p_user_id uuid) returns text
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_value text;
  v_expires timestamptz;
begin
  delete from auth_private.verifications v where v.identifier = p_identifier and v.requested_by = p_user_id
  returning v.value, v.expires_at into v_value, v_expires;
  if v_value is null or v_expires <= now() then
    perform auth_private.refuse('no nonce', 'no live nonce of this user for this wallet and chain');
  end if;
  return v_value;
end;
$$;

create or replace function auth_private.lock_user(p_user_id uuid) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  perform from auth.users u where u.id = p_user_id for no key update;
  if not found then
    perform auth_private.refuse('wallet_not_found', 'no such user');
  end if;
end;
$$;

-- Links a wallet whose signature the caller verified. Spec order from step 6: another user's
-- wallet is refused (sybil); the user's own is `already_linked`; the user's first wallet is primary.
create or replace function auth.link_wallet(p_user_id uuid, p_address text, p_chain text, p_chain_id integer)
  returns table (address text, chain_id integer, is_primary boolean, already_linked boolean)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_chain auth.wallet_chain;
  v_existing auth.wallets;
  v_wallet auth.wallets;
begin
  if p_chain is null or not pg_input_is_valid(p_chain, 'auth.wallet_chain') then
    perform auth_private.refuse('invalid walletAddress', format('unknown chain %L', p_chain));
  end if;
  v_chain := p_chain::auth.wallet_chain;
  if p_address is null or not auth_private.valid_wallet_address(p_address, v_chain, p_chain_id) then
    perform auth_private.refuse('invalid walletAddress');
  end if;
  perform auth_private.lock_user(p_user_id);

  for attempt in 1 .. 2 loop
    select w.* into v_existing from auth.wallets w
     where w.chain = v_chain
       and case when v_chain = 'evm' then lower(w.address) = lower(p_address) else w.address = p_address end;
    if v_existing.id is not null then
      if v_existing.user_id <> p_user_id then
        perform auth_private.refuse('wallet already linked to another account');
      end if;
      return query select v_existing.address, v_existing.chain_id, v_existing.is_primary, true;
      return;
    end if;
    if v_chain = 'evm' then
      insert into auth.wallets as w (user_id, address, chain, chain_id, is_primary)
      values (p_user_id, p_address, v_chain, p_chain_id,
              not exists (select from auth.wallets o where o.user_id = p_user_id))
      on conflict (lower(address)) where chain = 'evm' do nothing
      returning w.* into v_wallet;
    else
      insert into auth.wallets as w (user_id, address, chain, chain_id, is_primary)
      values (p_user_id, p_address, v_chain, p_chain_id,
              not exists (select from auth.wallets o where o.user_id = p_user_id))
      on conflict (address) where chain = 'solana' do nothing
      returning w.* into v_wallet;
    end if;
    if v_wallet.id is not null then
      if v_chain <> 'evm' then
        -- The claim board's `wallet_linked` condition (spec: "a non-EVM wallet is linked") crosses
        -- roles (auth -> game): queued in this transaction, so a link that commits always reaches the
        -- game and a link that rolls back never does. The worker delivers it (tasks/deliver_condition.ts)
        -- and retries until the game role takes it; the game's idempotency key makes a redelivery a no-op.
        perform graphile_worker.add_job('deliver_condition',
          json_build_object('userId', p_user_id, 'conditionKey', 'wallet_linked',
                            'idempotencyKey', format('wallet_linked:%s:%s', p_user_id, v_wallet.address)),
          max_attempts => 1000);
      end if;
      return query select v_wallet.address, v_wallet.chain_id, v_wallet.is_primary, false;
      return;
    end if;
    -- another user linked it between our look and our insert: look again (now it is visible)
  end loop;
  perform auth_private.refuse('wallet already linked to another account');
end;
$$;

-- The wallet of this user with this address (EVM case-insensitively, non-EVM verbatim).
create or replace function auth_private.own_wallet(p_user_id uuid, p_address text) returns auth.wallets
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select w.* from auth.wallets w
   where w.user_id = p_user_id
     and ((w.chain = 'evm' and lower(w.address) = lower(p_address)) or (w.chain <> 'evm' and w.address = p_address))
   limit 1
$$;

create or replace function auth.set_primary_wallet(p_user_id uuid, p_address text)
  returns table (address text, already_primary boolean)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_wallet auth.wallets;
begin
  perform auth_private.lock_user(p_user_id);
  v_wallet := auth_private.own_wallet(p_user_id, p_address);
  if v_wallet.id is null then
    perform auth_private.refuse('wallet_not_found');
  end if;
  if v_wallet.is_primary then
    return query select v_wallet.address, true;
    return;
  end if;
  -- two statements (a unique index is checked row by row); the one-primary rule is checked at commit
  update auth.wallets w set is_primary = false where w.user_id = p_user_id and w.is_primary;
  update auth.wallets w set is_primary = true where w.id = v_wallet.id;
  return query select v_wallet.address, false;
end;
$$;

-- Unlinks; if it was the primary and others remain, the most recently created one becomes primary.
create or replace function auth.unlink_wallet(p_user_id uuid, p_address text)
  returns table (address text, was_primary boolean, new_primary text)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_wallet auth.wallets;
  v_next auth.wallets;
begin
  perform auth_private.lock_user(p_user_id);
  v_wallet := auth_private.own_wallet(p_user_id, p_address);
  if v_wallet.id is null then
    perform auth_private.refuse('wallet_not_found');
  end if;
  delete from auth.wallets w where w.id = v_wallet.id;
  if v_wallet.is_primary then
    select w.* into v_next from auth.wallets w where w.user_id = p_user_id order by w.created_at desc, w.id desc limit 1;
    if v_next.id is not null then
      update auth.wallets w set is_primary = true where w.id = v_next.id;
    end if;
  end if;
  return query select v_wallet.address, v_wallet.is_primary,
    coalesce(v_next.address, (select w.address from auth.wallets w where w.user_id = p_user_id and w.is_primary));
end;
$$;
