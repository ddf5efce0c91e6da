-- Bets, unbets and claim quotes of the betting service. The service's login proves nothing by
-- itself: a bet is written only with its cage stake's bet_stake debit (cage.open_bet_stake, one
-- transaction), an unbet needs the bettor's token grant (sid) and credits the stake back in its own
-- transaction, and a quote is what the market's settlement recorded.

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

-- The bet of the cage's stake p_stake_ref, as the stake recorded it (POST /internal/bets, kept for
-- the betting service's callers): a stake and its bet are written in one transaction
-- (cage.open_bet_stake, issue 32), so there is nothing left to record; this answers the bet
-- (replayed), refuses an unknown stake (stake_not_found) and a stake compensated before issue 32,
-- which has no bet (stake_not_pending). Reads only.
create or replace function betting.record_bet(p_stake_ref text)
  returns table (stake_ref text, market_id text, user_id uuid, runner_user_id uuid, amount bigint, replayed boolean)
  language plpgsql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_stake cage.bet_stakes;
  v_bet betting.bets;
begin
  select * into v_stake from cage.bet_stakes s where s.ref_id = p_stake_ref;
  if v_stake.ref_id is null then
    perform betting_private.refuse('stake_not_found', 'no cage stake of this ref');
  end if;
  select * into v_bet from betting.bets b where b.stake_ref = p_stake_ref;
  if v_bet.stake_ref is null then
    perform betting_private.refuse('stake_not_pending', format('the stake is %s', v_stake.status));
  end if;
  return query select v_bet.stake_ref, v_bet.market_id, v_bet.user_id, v_bet.runner_user_id, v_bet.amount, true;
end;
$$;

-- An unbet: the bettor of the token grant p_sid takes their bet back while its market takes bets.
-- One transaction across the two schemas (issue 32), whichever login calls it (the cage's
-- /api/betting/unbet, the betting service's /internal/unbets): the bet leaves the pool first, then
-- the stake is credited back (bet_refund, betting -> user, ref `bet-unbet:{stake ref}`), under the
-- stake row's lock. A replay answers the unbet as it stands and moves nothing.
create or replace function betting.remove_bet(p_sid uuid, p_stake_ref text)
  returns table (stake_ref text, market_id text, amount bigint, replayed boolean, refund_ref_id text, money_kind text)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_user uuid := auth_private.user_of_sid(p_sid);
  v_stake cage.bet_stakes;
  v_bet betting.bets;
begin
  select * into v_stake from cage.bet_stakes s where s.ref_id = p_stake_ref for update;
  select * into v_bet from betting.bets b where b.stake_ref = p_stake_ref for update;
  if v_stake.ref_id is null or v_bet.stake_ref is null or v_stake.user_id <> v_user then
    perform betting_private.refuse('bet_not_found');
  end if;
  if v_stake.status = 'unbet' then
    return query select v_bet.stake_ref, v_bet.market_id, v_bet.amount, true, v_stake.refund_ref_id, v_stake.money_kind::text;
    return;
  end if;
  perform betting_private.open_market(v_bet.market_id);
  update betting.bets b set status = 'unbet', unbet_at = now() where b.stake_ref = p_stake_ref;
  perform cage.post_movement('bet-unbet:' || p_stake_ref, 'bet_refund', v_stake.money_kind::text,
    array[cage.ensure_account('betting', null, null, v_stake.money_kind::text),
          cage.ensure_account('user', v_stake.user_id, null, v_stake.money_kind::text)],
    array[-v_stake.amount, v_stake.amount],
    jsonb_build_object('unbet', p_stake_ref, 'market_id', v_stake.market_id, 'user_id', v_stake.user_id));
  update cage.bet_stakes s set status = 'unbet', refund_ref_id = 'bet-unbet:' || p_stake_ref, updated_at = now()
   where s.ref_id = p_stake_ref returning s.* into v_stake;
  return query select v_bet.stake_ref, v_bet.market_id, v_bet.amount, false, v_stake.refund_ref_id, v_stake.money_kind::text;
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
