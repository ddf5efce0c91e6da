-- Bets, unbets and claim quotes of the betting service. The service's login proves nothing by
-- itself: a bet is the record of a cage stake (every field read from cage.bet_stakes, which only the
-- cage's bet_stake debit writes), an unbet needs the bettor's token grant (sid), and a quote is what
-- the market's settlement recorded.

-- The market a bet goes into, locked for share (a market is closed under its lock), refused unless
-- the tournament is taking bets now (read under the table's lock: a hand's end cannot place a player
-- between this check and the commit).
create or replace function betting_private.open_market(p_market_id text) returns betting.markets
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_market betting.markets;
begin
  select * into v_market from betting.markets m where m.market_id = p_market_id for share;
  if v_market.market_id is null then
    perform betting_private.refuse('market_not_found', p_market_id);
  end if;
  perform from game.tables t where t.table_id = v_market.table_id for share;
  if v_market.status <> 'open' or not betting_private.taking_bets(v_market.table_id) then
    perform betting_private.refuse('market_closed', format('market %s is %s', p_market_id, v_market.status));
  end if;
  return v_market;
end;
$$;

-- The notify of a stake: records the bet of the cage's stake p_stake_ref. Refused unless the stake
-- is pending (stake_not_pending: it was compensated, or is already settled) or when the market no
-- longer takes bets (market_closed: the cage then compensates the debit). The stake row is locked
-- for update, so this and the cage's resolution of the stake (cage.resolve_bet_stake) cannot both
-- win: either the bet is recorded first and the stake is confirmed, or the stake is compensated
-- first and this is refused. A replay returns the bet as recorded.
create or replace function betting.record_bet(p_stake_ref text)
  returns table (stake_ref text, market_id text, user_id uuid, runner_user_id uuid, amount bigint, replayed boolean)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_stake cage.bet_stakes;
  v_bet betting.bets;
  v_market betting.markets;
begin
  select * into v_stake from cage.bet_stakes s where s.ref_id = p_stake_ref for update;
  if v_stake.ref_id is null then
    perform betting_private.refuse('stake_not_found', 'no cage stake of this ref');
  end if;
  select * into v_bet from betting.bets b where b.stake_ref = p_stake_ref;
  if v_bet.stake_ref is not null then
    return query select v_bet.stake_ref, v_bet.market_id, v_bet.user_id, v_bet.runner_user_id, v_bet.amount, true;
    return;
  end if;
  if v_stake.status <> 'pending' then
    perform betting_private.refuse('stake_not_pending', format('the stake is %s', v_stake.status));
  end if;
  v_market := betting_private.open_market(v_stake.market_id);
  if not v_stake.runner_user_id = any(v_market.runners) or v_stake.money_kind <> v_market.money_kind then
    perform betting_private.refuse('invalid_runner', 'the stake backs no runner of this market');
  end if;
  insert into betting.bets (stake_ref, market_id, user_id, runner_user_id, amount)
  values (v_stake.ref_id, v_stake.market_id, v_stake.user_id, v_stake.runner_user_id, v_stake.amount)
  returning * into v_bet;
  return query select v_bet.stake_ref, v_bet.market_id, v_bet.user_id, v_bet.runner_user_id, v_bet.amount, false;
end;
$$;

-- An unbet: the bettor of the token grant p_sid takes their bet back while its market takes bets.
-- The bet leaves the pool here (the service's ledger first); the cage credits the stake back after
-- (cage.credit_unbet, backed by this row). A replay answers the bet as it stands.
create or replace function betting.remove_bet(p_sid uuid, p_stake_ref text)
  returns table (stake_ref text, market_id text, amount bigint, replayed boolean)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_user uuid := auth_private.user_of_sid(p_sid);
  v_bet betting.bets;
begin
  select * into v_bet from betting.bets b where b.stake_ref = p_stake_ref;
  if v_bet.stake_ref is null or v_bet.user_id <> v_user then
    perform betting_private.refuse('bet_not_found');
  end if;
  if v_bet.status = 'unbet' then
    return query select v_bet.stake_ref, v_bet.market_id, v_bet.amount, true;
    return;
  end if;
  perform betting_private.open_market(v_bet.market_id);
  update betting.bets b set status = 'unbet', unbet_at = now()
   where b.stake_ref = p_stake_ref and b.status = 'active'
  returning b.* into v_bet;
  if v_bet.stake_ref is null then
    -- a twin took it back meanwhile
    return query select b.stake_ref, b.market_id, b.amount, true from betting.bets b where b.stake_ref = p_stake_ref;
    return;
  end if;
  return query select v_bet.stake_ref, v_bet.market_id, v_bet.amount, false;
end;
$$;

-- What the bettor of the token grant p_sid may claim from market p_market_id: the market is brought
-- up to date first (on-demand reconciliation), then its recorded payout is read. Refused while the
-- market is not settled or void (market_not_settled), or when nothing is owed (nothing_to_claim).
create or replace function betting.claim_quote(p_sid uuid, p_market_id text)
  returns table (market_id text, user_id uuid, amount bigint, market_status text)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_user uuid := auth_private.user_of_sid(p_sid);
  v_market betting.markets;
  v_amount bigint;
begin
  select * into v_market from betting.markets m where m.market_id = p_market_id;
  if v_market.market_id is null then
    perform betting_private.refuse('market_not_found', p_market_id);
  end if;
  v_market := betting.sync_market(v_market.table_id);
  if v_market.status not in ('settled', 'void') then
    perform betting_private.refuse('market_not_settled', format('market %s is %s', p_market_id, v_market.status));
  end if;
  select p.amount into v_amount from betting.payouts p where p.market_id = p_market_id and p.user_id = v_user;
  if v_amount is null then
    perform betting_private.refuse('nothing_to_claim');
  end if;
  return query select v_market.market_id, v_user, v_amount, v_market.status;
end;
$$;
