-- The cage's legs of a bet (spec: "Cage -> Betting"; docs/architecture.md, "A bet"). The betting
-- account (one per money kind) holds every stake not yet returned or paid out:
--   stake    cage.open_bet_stake: bet_stake, user -> betting, in the caller's request, before the
--            betting service is notified (server/cage/betting.ts); then cage.resolve_bet_stake
--            confirms it (the service recorded the bet) or compensates it (bet_refund back);
--   unbet    the betting service removes the bet first (betting.remove_bet, the bettor's grant),
--            then cage.credit_unbet credits the stake back (bet_refund), backed by that row;
--   claim    cage.claim_bet_payout: bet_payout, betting -> user, ref `bet-claim:{marketId}:{userId}`,
--            of the amount the betting service recorded for the bettor (betting.payouts), once.

-- Opens a stake for the player of the token grant p_sid: the market must take bets now, the runner
-- be one of its players and the bettor none of them. The debit is posted here; a stake with too
-- little on the cage balance is refused (insufficient_cage_balance) and nothing is written.
-- Replay-once per (user, idempotency key): the same key returns the stake as it stands (replayed),
-- with another market, runner or amount idempotency_key_reused.
create or replace function cage.open_bet_stake(
  p_sid uuid, p_idempotency_key text, p_market_id text, p_runner_user_id uuid, p_amount bigint
) returns table (ref_id text, status text, error text, market_id text, runner_user_id uuid, amount bigint,
                 money_kind text, replayed boolean, created_at timestamptz)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_user uuid := auth_private.user_of_sid(p_sid);
  v_ref text;
  v_stake cage.bet_stakes;
  v_market betting.markets;
begin
  if p_idempotency_key is null or p_idempotency_key !~ '^[\x21-\x7e]{1,128}$'
     or p_market_id is null or length(p_market_id) not between 1 and 80 or p_runner_user_id is null then
    perform cage_private.refuse('bad_request', 'idempotency key: 1..128 printable characters; a market id and a runner');
  end if;
  if p_amount is null or p_amount <= 0 or p_amount > cage_private.max_amount() then
    perform cage_private.refuse('invalid_amount', 'a positive whole number of chips');
  end if;
  v_ref := format('bet-stake:%s:%s', v_user, p_idempotency_key);
  select * into v_stake from cage.bet_stakes s where s.ref_id = v_ref;
  if v_stake.ref_id is null then
    select * into v_market from betting.markets m where m.market_id = p_market_id;
    if v_market.market_id is null then
      perform cage_private.refuse('market_not_found', p_market_id);
    end if;
    if v_market.status <> 'open' or not betting_private.taking_bets(v_market.table_id) then
      perform cage_private.refuse('market_closed', format('market %s takes no bets', p_market_id));
    end if;
    if not p_runner_user_id = any(v_market.runners) then
      perform cage_private.refuse('runner_not_found', 'the runner is not a player of this tournament');
    end if;
    if v_user = any(v_market.runners) then
      perform cage_private.refuse('bettor_is_player', 'a player bets on no market of their own tournament');
    end if;
    perform cage_private.require_real_money(v_market.money_kind::text);
    insert into cage.bet_stakes as s (ref_id, idempotency_key, user_id, market_id, runner_user_id, amount, money_kind)
    values (v_ref, p_idempotency_key, v_user, p_market_id, p_runner_user_id, p_amount, v_market.money_kind)
    on conflict on constraint bet_stakes_pkey do nothing
    returning s.* into v_stake;
    if v_stake.ref_id is not null then
      perform cage.post_movement(v_ref, 'bet_stake', v_market.money_kind::text,
        array[cage.ensure_account('user', v_user, null, v_market.money_kind::text),
              cage.ensure_account('betting', null, null, v_market.money_kind::text)],
        array[-p_amount, p_amount],
        jsonb_build_object('market_id', p_market_id, 'runner_user_id', p_runner_user_id, 'user_id', v_user));
      return query select v_stake.ref_id, v_stake.status, v_stake.error, v_stake.market_id, v_stake.runner_user_id,
                          v_stake.amount, v_stake.money_kind::text, false, v_stake.created_at;
      return;
    end if;
    -- a concurrent twin opened it first
    select * into v_stake from cage.bet_stakes s where s.ref_id = v_ref;
  end if;
  if v_stake.market_id <> p_market_id or v_stake.runner_user_id <> p_runner_user_id or v_stake.amount <> p_amount then
    perform cage_private.refuse('idempotency_key_reused', 'this idempotency key was used for another stake');
  end if;
  return query select v_stake.ref_id, v_stake.status, v_stake.error, v_stake.market_id, v_stake.runner_user_id,
                      v_stake.amount, v_stake.money_kind::text, true, v_stake.created_at;
end;
$$;

-- Settles a pending stake by what the betting service holds, under the stake row's lock (which the
-- service's betting.record_bet takes too): its bet recorded, the stake is confirmed; none, the debit
-- is compensated (bet_refund, betting -> user, ref `{stake ref}:compensation`) and the late notify
-- is refused. Whoever calls (the stake's request after its notify, or the reconciler) cannot make a
-- stake without its bet or a bet without its stake. A settled stake is returned as it stands.
create or replace function cage.resolve_bet_stake(p_ref_id text, p_error text)
  returns table (ref_id text, status text, error text, refund_ref_id text)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_stake cage.bet_stakes;
  v_refund text;
begin
  select * into v_stake from cage.bet_stakes s where s.ref_id = p_ref_id for update;
  if v_stake.ref_id is null then
    perform cage_private.refuse('stake_not_found', p_ref_id);
  end if;
  if v_stake.status = 'pending' then
    if exists (select from betting.bets b where b.stake_ref = p_ref_id) then
      update cage.bet_stakes s set status = 'confirmed', updated_at = now() where s.ref_id = p_ref_id returning s.* into v_stake;
    else
      v_refund := p_ref_id || ':compensation';
      perform cage.post_movement(v_refund, 'bet_refund', v_stake.money_kind::text,
        array[cage.ensure_account('betting', null, null, v_stake.money_kind::text),
              cage.ensure_account('user', v_stake.user_id, null, v_stake.money_kind::text)],
        array[-v_stake.amount, v_stake.amount],
        jsonb_build_object('compensates', p_ref_id, 'market_id', v_stake.market_id, 'user_id', v_stake.user_id));
      update cage.bet_stakes s
         set status = 'compensated', error = left(coalesce(p_error, 'notify_failed'), 100), refund_ref_id = v_refund, updated_at = now()
       where s.ref_id = p_ref_id returning s.* into v_stake;
    end if;
  end if;
  return query select v_stake.ref_id, v_stake.status, v_stake.error, v_stake.refund_ref_id;
end;
$$;

-- An unbet's credit: the stake back to its bettor (bet_refund, betting -> user, ref
-- `bet-unbet:{stake ref}`), only for a bet the betting service removed (betting.remove_bet, which
-- takes the bettor's grant): the credit is backed by the row it reverses. Once; a replay returns it.
create or replace function cage.credit_unbet(p_stake_ref text)
  returns table (ref_id text, refund_ref_id text, amount bigint, money_kind text, replayed boolean)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_stake cage.bet_stakes;
  v_refund text;
begin
  select * into v_stake from cage.bet_stakes s where s.ref_id = p_stake_ref for update;
  if v_stake.ref_id is null then
    perform cage_private.refuse('stake_not_found', p_stake_ref);
  end if;
  if v_stake.status = 'unbet' then
    return query select v_stake.ref_id, v_stake.refund_ref_id, v_stake.amount, v_stake.money_kind::text, true;
    return;
  end if;
  if v_stake.status not in ('pending', 'confirmed')
     or not exists (select from betting.bets b where b.stake_ref = p_stake_ref and b.status = 'unbet'
                     and b.user_id = v_stake.user_id and b.amount = v_stake.amount) then
    perform cage_private.refuse('unbet_not_backed', 'the betting service has not taken this bet back');
  end if;
  v_refund := 'bet-unbet:' || p_stake_ref;
  perform cage.post_movement(v_refund, 'bet_refund', v_stake.money_kind::text,
    array[cage.ensure_account('betting', null, null, v_stake.money_kind::text),
          cage.ensure_account('user', v_stake.user_id, null, v_stake.money_kind::text)],
    array[-v_stake.amount, v_stake.amount],
    jsonb_build_object('unbet', p_stake_ref, 'market_id', v_stake.market_id, 'user_id', v_stake.user_id));
  update cage.bet_stakes s set status = 'unbet', refund_ref_id = v_refund, updated_at = now()
   where s.ref_id = p_stake_ref returning s.* into v_stake;
  return query select v_stake.ref_id, v_refund, v_stake.amount, v_stake.money_kind::text, false;
end;
$$;

-- A claim of the player of the token grant p_sid on market p_market_id: the amount is the one the
-- betting service recorded for them when the market settled or was voided (betting.payouts), never
-- an argument. Credited once (bet_payout, betting -> user, ref `bet-claim:{marketId}:{userId}`); the
-- payout row is locked first, so concurrent claims serialise and the later ones replay.
create or replace function cage.claim_bet_payout(p_sid uuid, p_market_id text)
  returns table (ref_id text, market_id text, amount bigint, money_kind text, replayed boolean)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_user uuid := auth_private.user_of_sid(p_sid);
  v_market betting.markets;
  v_amount bigint;
  v_ref text;
  v_entry cage.cage_entries;
begin
  select * into v_market from betting.markets m where m.market_id = p_market_id;
  if v_market.market_id is null then
    perform cage_private.refuse('market_not_found', p_market_id);
  end if;
  if v_market.status not in ('settled', 'void') then
    perform cage_private.refuse('market_not_settled', format('market %s is %s', p_market_id, v_market.status));
  end if;
  select p.amount into v_amount from betting.payouts p where p.market_id = p_market_id and p.user_id = v_user for update;
  if v_amount is null then
    perform cage_private.refuse('nothing_to_claim');
  end if;
  v_ref := cage.bet_claim_ref(p_market_id, v_user);
  v_entry := cage_private.existing_entry(v_ref, 'bet_payout', v_amount, jsonb_build_object('user_id', v_user));
  if v_entry.id is not null then
    return query select v_ref, p_market_id, v_amount, v_market.money_kind::text, true;
    return;
  end if;
  perform cage.post_movement(v_ref, 'bet_payout', v_market.money_kind::text,
    array[cage.ensure_account('betting', null, null, v_market.money_kind::text),
          cage.ensure_account('user', v_user, null, v_market.money_kind::text)],
    array[-v_amount, v_amount],
    jsonb_build_object('market_id', p_market_id, 'user_id', v_user));
  return query select v_ref, p_market_id, v_amount, v_market.money_kind::text, false;
end;
$$;

-- Stakes whose notify outcome is unknown (pending for more than p_seconds), for the reconciler.
create or replace function cage.pending_bet_stakes(p_seconds integer, p_limit integer)
  returns table (ref_id text, user_id uuid, market_id text, amount bigint, created_at timestamptz)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select s.ref_id, s.user_id, s.market_id, s.amount, s.created_at from cage.bet_stakes s
   where s.status = 'pending' and s.created_at < now() - make_interval(secs => greatest(coalesce(p_seconds, 0), 0))
   order by s.created_at limit least(greatest(coalesce(p_limit, 100), 1), 1000)
$$;

-- Unbets the betting service made whose credit never came (the cage stopped between the two), for
-- the reconciler: it credits them (cage.credit_unbet).
create or replace function cage.uncredited_unbets(p_seconds integer, p_limit integer)
  returns table (ref_id text)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select s.ref_id from cage.bet_stakes s join betting.bets b on b.stake_ref = s.ref_id
   where s.status in ('pending', 'confirmed') and b.status = 'unbet'
     and b.unbet_at < now() - make_interval(secs => greatest(coalesce(p_seconds, 0), 0))
   order by b.unbet_at limit least(greatest(coalesce(p_limit, 100), 1), 1000)
$$;
