-- The betting service's markets (docs/architecture.md, "A bet"). A market is `sng:{tableId}`: who
-- finishes first in that Sit-and-Go. Everything about it is derived from the tournament's own rows
-- (game.tables, game.table_players), never from a request:
--   open     the tournament plays and nobody has left the field yet;
--   closed   the first elimination happened (or the tournament stopped playing);
--   settled  the final standings name one winner and somebody backed them: the pool is shared by the
--            winner's backers pro rata (floor each, the remaining chips one each to the biggest
--            winning stakes first), no house cut;
--   void     the tournament was force-ended, the standings name no single winner, or nobody backed
--            the winner (no bets at all included): every bettor is owed their stakes back.
-- betting.sync_market moves a market along as the tournament's state allows, at most once per step;
-- the betting role calls it on a timer (the sweep) and before every read or write of a market.

-- The tournament as the markets see it. The field is the paid entries that played (their positions
-- are closed by the settlement under `tournament:{tableId}`). A force-end places every live seat
-- (game.tournament_force_end) and leaves their tournament chips where they were; a played-out end
-- leaves all the chips with the winner. So: forced = the tournament ended with more than one stack.
create or replace function betting_private.tournament_of(p_table_id text)
  returns table (table_id text, money_kind cage.money_kind, state text, play_started boolean, runners uuid[],
                 anyone_out boolean, forced boolean, winners uuid[])
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select t.table_id, t.money_kind, t.tournament_state, t.play_started_at is not null,
         coalesce(array_agg(p.user_id order by p.seat_index) filter (where p.id is not null), '{}'),
         coalesce(bool_or(p.elimination_order is not null), false),
         t.tournament_state in ('ended', 'settling', 'closed') and count(p.id) filter (where p.tournament_stack > 0) > 1,
         coalesce(array_agg(p.user_id order by p.user_id) filter (where p.tie_place = 1), '{}')
    from game.tables t
    left join game.table_players p
      on p.table_id = t.table_id and p.entry_state = 'paid'
     and (p.status <> 'closed' or p.closing_ref_id = cage.tournament_ref(t.table_id))
   where t.table_id = p_table_id and t.mode = 'sng'
   group by t.table_id
$$;

-- Whether bets may be taken on (or taken back from) the tournament now: it plays, nobody is out.
create or replace function betting_private.taking_bets(p_table_id text) returns boolean
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select coalesce((select v.state = 'playing' and not v.anyone_out from betting_private.tournament_of(p_table_id) v), false)
$$;

-- Moves the market of a tournament along (opens it once the tournament plays, closes it at the first
-- elimination, settles or voids it once the standings are final) and returns it as it stands; null
-- when there is no market yet and none to open. Idempotent: each step happens once, under the
-- market row's lock (bets and unbets take it for share, so none lands in a market being closed).
create or replace function betting.sync_market(p_table_id text) returns betting.markets
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_t record;
  v_market betting.markets;
  v_pool bigint;
  v_winning bigint;
  v_reason text;
begin
  if p_table_id is null or length(p_table_id) not between 1 and 64 then
    perform betting_private.refuse('bad_request', 'a table id of 1..64 characters');
  end if;
  select * into v_t from betting_private.tournament_of(p_table_id);
  if v_t.table_id is null then
    return null;
  end if;
  select * into v_market from betting.markets m where m.table_id = p_table_id for update;
  if v_market.market_id is null then
    if not v_t.play_started then
      return null;
    end if;
    insert into betting.markets as m (market_id, table_id, money_kind, runners)
    values (format('sng:%s', p_table_id), p_table_id, v_t.money_kind, v_t.runners)
    on conflict (table_id) do nothing;
    select * into v_market from betting.markets m where m.table_id = p_table_id for update;
  end if;
  if v_market.status = 'open' and not (v_t.state = 'playing' and not v_t.anyone_out) then
    update betting.markets m set status = 'closed', closed_at = now() where m.market_id = v_market.market_id
    returning m.* into v_market;
  end if;
  if v_market.status <> 'closed' or v_t.state not in ('ended', 'settling', 'closed') then
    return v_market;
  end if;
  -- the winner was decided by hands: the market settles once the audit of causes has covered every
  -- one of them (issue 31); the sweep comes back
  if not v_t.forced and not cage_private.hands_audited(p_table_id) then
    return v_market;
  end if;

  -- the standings are final: settle or void
  select coalesce(sum(b.amount), 0), coalesce(sum(b.amount) filter (where cardinality(v_t.winners) = 1 and b.runner_user_id = v_t.winners[1]), 0)
    into v_pool, v_winning
    from betting.bets b where b.market_id = v_market.market_id and b.status = 'active';
  v_reason := case when v_t.forced then 'force_ended'
                   when cardinality(v_t.winners) <> 1 then 'no_single_winner'
                   when v_winning = 0 then 'nobody_backed_the_winner' end;
  if v_reason is not null then
    insert into betting.payouts (market_id, user_id, amount)
    select v_market.market_id, b.user_id, sum(b.amount)
      from betting.bets b where b.market_id = v_market.market_id and b.status = 'active'
     group by b.user_id;
    update betting.markets m set status = 'void', void_reason = v_reason, settled_at = now()
     where m.market_id = v_market.market_id returning m.* into v_market;
    return v_market;
  end if;
  -- each backer of the winner: floor(pool x stake / winning stakes); the chips the floors leave go
  -- one each to the biggest winning stakes (then the lowest user id): the pool is paid out exactly
  insert into betting.payouts (market_id, user_id, amount)
  select v_market.market_id, w.user_id,
         w.share + case when w.rank <= v_pool - sum(w.share) over () then 1 else 0 end
    from (select s.user_id, floor(v_pool::numeric * s.staked / v_winning)::bigint as share, s.staked,
                 row_number() over (order by s.staked desc, s.user_id) as rank
            from (select b.user_id, sum(b.amount) as staked from betting.bets b
                   where b.market_id = v_market.market_id and b.status = 'active' and b.runner_user_id = v_t.winners[1]
                   group by b.user_id) s) w;
  update betting.markets m set status = 'settled', winner_user_id = v_t.winners[1], settled_at = now()
   where m.market_id = v_market.market_id returning m.* into v_market;
  return v_market;
end;
$$;

-- The sweep: every tournament whose market may have a step to take (none yet but playing, or one
-- still open or closed). Returns how many markets it looked at.
create or replace function betting.sweep_markets(p_limit integer) returns integer
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_n integer := 0;
  r record;
begin
  for r in
    select t.table_id from game.tables t
     where t.mode = 'sng' and t.play_started_at is not null
       and not exists (select from betting.markets m where m.table_id = t.table_id and m.status in ('settled', 'void'))
     order by t.play_started_at
     limit least(greatest(coalesce(p_limit, 100), 1), 1000)
  loop
    perform betting.sync_market(r.table_id);
    v_n := v_n + 1;
  end loop;
  return v_n;
end;
$$;
