-- Betting has one boundary (issue 32): a stake is one SQL transaction across the cage and betting
-- schemas (cage.open_bet_stake writes the bet_stake debit and the bet together), an unbet too
-- (betting.remove_bet removes the bet and credits the stake back), and a claim brings its market up
-- to date itself. Nothing is left half-written between two processes, so what only mended that hop
-- goes: the compensation (cage.resolve_bet_stake), the unbet's separate credit (cage.credit_unbet)
-- and the stake reconciler's reads (cage.pending_bet_stakes, cage.uncredited_unbets, its job).
--
-- What an earlier version may have left half-way is finished here, once, the way the reconciler
-- would have: a pending stake with its bet is confirmed, one without is compensated (bet_refund,
-- ref `{stake ref}:compensation`); a bet taken back whose stake was never credited is credited
-- (bet_refund, ref `bet-unbet:{stake ref}`). A fresh database has none of them.
do $$
declare
  r record;
begin
  for r in select s.*, b.stake_ref as bet, b.status as bet_status from cage.bet_stakes s
             left join betting.bets b on b.stake_ref = s.ref_id
            where s.status = 'pending' or (s.status = 'confirmed' and b.status = 'unbet')
            order by s.created_at
  loop
    if r.bet is null then
      perform cage.post_movement(r.ref_id || ':compensation', 'bet_refund', r.money_kind::text,
        array[cage.ensure_account('betting', null, null, r.money_kind::text), cage.ensure_account('user', r.user_id, null, r.money_kind::text)],
        array[-r.amount, r.amount],
        jsonb_build_object('compensates', r.ref_id, 'market_id', r.market_id, 'user_id', r.user_id));
      update cage.bet_stakes set status = 'compensated', error = 'notify_unknown', refund_ref_id = r.ref_id || ':compensation', updated_at = now()
       where ref_id = r.ref_id;
    elsif r.bet_status = 'unbet' then
      perform cage.post_movement('bet-unbet:' || r.ref_id, 'bet_refund', r.money_kind::text,
        array[cage.ensure_account('betting', null, null, r.money_kind::text), cage.ensure_account('user', r.user_id, null, r.money_kind::text)],
        array[-r.amount, r.amount],
        jsonb_build_object('unbet', r.ref_id, 'market_id', r.market_id, 'user_id', r.user_id));
      update cage.bet_stakes set status = 'unbet', refund_ref_id = 'bet-unbet:' || r.ref_id, updated_at = now()
       where ref_id = r.ref_id;
    else
      update cage.bet_stakes set status = 'confirmed', updated_at = now() where ref_id = r.ref_id;
    end if;
  end loop;
end;
$$;

drop function if exists cage.resolve_bet_stake(text, text);
drop function if exists cage.credit_unbet(text);
drop function if exists cage.pending_bet_stakes(integer, integer);
drop function if exists cage.uncredited_unbets(integer, integer);
-- remove_bet now returns the refund's ref and money kind too (it credits the stake back itself)
drop function if exists betting.remove_bet(uuid, text);

-- the stake reconciler's job goes with it (graphile-worker's schema exists once a worker ran)
do $$
begin
  if to_regclass('graphile_worker._private_jobs') is not null then
    execute $q$delete from graphile_worker._private_jobs j using graphile_worker._private_tasks t
                where j.task_id = t.id and t.identifier = 'betting_reconcile_stakes' and j.locked_at is null$q$;
  end if;
end;
$$;

-- a stake is never pending again (its debit and its bet commit together): the table says so too
alter table cage.bet_stakes alter column status set default 'confirmed';
alter table cage.bet_stakes add constraint bet_stakes_never_pending check (status <> 'pending');
comment on table cage.bet_stakes is 'Bet stakes on the cage (bet_stake debits), each written with its bet (betting.bets) in one transaction by cage.open_bet_stake; unbet by betting.remove_bet. pending and compensated are states of stakes taken before issue 32.';
