-- The cage's legs of a bet (spec: "Cage -> Betting"; docs/architecture.md, "A bet"). Betting has one
-- boundary (issue 32): each step is ONE transaction across the cage and betting schemas, so no money
-- leg commits without its betting leg and nothing is left for a compensation or a reconciler. The
-- betting account (one per money kind) holds every stake not yet returned or paid out:
--   stake    cage.open_bet_stake: the bet_stake debit (user -> betting) and the bet it records
--            (betting.bets), together; the spec's "notify" is the bet's insert, and a notify that
--            fails (the market closed under its lock) rolls the debit back with it;
--   unbet    betting.remove_bet (db/functions/betting/20_bets.sql): the bet leaves the pool and the
--            stake is credited back (bet_refund), together, whichever login calls it;
--   claim    cage.claim_bet_payout: brings the market up to date (betting.sync_market: the betting
--            service's own computation, after the audit mark of the tournament's hands), then
--            bet_payout, betting -> user, ref `bet-claim:{marketId}:{userId}`, of the amount recorded
--            for the bettor (betting.payouts), once.

-- Opens a stake for the player of the token grant p_sid: the market must take bets now (its row and
-- its table locked for share: a market closes, and a hand's end places a player, under those locks),
-- the runner be one of its players and the bettor none of them. The debit and the bet are written
-- here, together; the stake is confirmed when this commits. Too little on the cage balance is refused
-- (insufficient_cage_balance) and nothing is written. Replay-once per (user, idempotency key): a twin
-- waits on the stake's key until the first commits, then replays it; the same key with another
-- market, runner or amount is idempotency_key_reused.
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
    v_market := cage_private.market_taking_bets(p_market_id, p_runner_user_id, v_user);
    insert into cage.bet_stakes as s (ref_id, idempotency_key, user_id, market_id, runner_user_id, amount, money_kind, status)
    values (v_ref, p_idempotency_key, v_user, p_market_id, p_runner_user_id, p_amount, v_market.money_kind, 'confirmed')
    on conflict on constraint bet_stakes_pkey do nothing
    returning s.* into v_stake;
    if v_stake.ref_id is not null then
      perform cage.post_movement(v_ref, 'bet_stake', v_market.money_kind::text,
        array[cage.ensure_account('user', v_user, null, v_market.money_kind::text),
              cage.ensure_account('betting', null, null, v_market.money_kind::text)],
        array[-p_amount, p_amount],
        jsonb_build_object('market_id', p_market_id, 'runner_user_id', p_runner_user_id, 'user_id', v_user));
      insert into betting.bets (stake_ref, market_id, user_id, runner_user_id, amount)
      values (v_ref, p_market_id, v_user, p_runner_user_id, p_amount);
      return query select v_stake.ref_id, v_stake.status, v_stake.error, v_stake.market_id, v_stake.runner_user_id,
                          v_stake.amount, v_stake.money_kind::text, false, v_stake.created_at;
      return;
    end if;
    -- a concurrent twin opened it first (this insert waited for its commit)
    select * into v_stake from cage.bet_stakes s where s.ref_id = v_ref;
  end if;
  if v_stake.market_id <> p_market_id or v_stake.runner_user_id <> p_runner_user_id or v_stake.amount <> p_amount then
    perform cage_private.refuse('idempotency_key_reused', 'this idempotency key was used for another stake');
  end if;
  return query select v_stake.ref_id, v_stake.status, v_stake.error, v_stake.market_id, v_stake.runner_user_id,
                      v_stake.amount, v_stake.money_kind::text, true, v_stake.created_at;
end;
$$;

-- The market p_market_id as a stake needs it: it exists (market_not_found), takes bets now
-- (market_closed: read under the market row's and its table's share locks, so neither a close nor a
-- hand's end lands between this check and the commit), p_runner is one of its players
-- (runner_not_found), the bettor none of them (bettor_is_player), and its money kind is enabled.
create or replace function cage_private.market_taking_bets(p_market_id text, p_runner uuid, p_bettor uuid) returns betting.markets
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_market betting.markets;
begin
  select * into v_market from betting.markets m where m.market_id = p_market_id for share;
  if v_market.market_id is null then
    perform cage_private.refuse('market_not_found', p_market_id);
  end if;
  perform from game.tables t where t.table_id = v_market.table_id for share;
  if v_market.status <> 'open' or not betting_private.taking_bets(v_market.table_id) then
    perform cage_private.refuse('market_closed', format('market %s takes no bets', p_market_id));
  end if;
  if not p_runner = any(v_market.runners) then
    perform cage_private.refuse('runner_not_found', 'the runner is not a player of this tournament');
  end if;
  if p_bettor = any(v_market.runners) then
    perform cage_private.refuse('bettor_is_player', 'a player bets on no market of their own tournament');
  end if;
  perform cage_private.require_real_money(v_market.money_kind::text);
  return v_market;
end;
$$;

-- A claim of the player of the token grant p_sid on market p_market_id: the market is brought up to
-- date first, then the amount is the one its settlement recorded for them (betting.payouts), never
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
  -- the betting service's own computation, in this transaction: the market brought up to date (it
  -- settles only once the audit of the tournament's hands covered them all)
  v_market := betting.sync_market(v_market.table_id);
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
