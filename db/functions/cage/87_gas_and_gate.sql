-- Gas tanks (spec: Cage -> Gas) and the play-chip transfer gate (spec: "Playchip transfer gate").
-- The tables are in db/migrations/000028_gas_and_play_gate.sql, which says how both work.

-- A user's gas tank of a money kind (scope: the user's id), or the outbound account withdrawals
-- are reserved in (scope 'outbound').
create or replace function cage_private.gas_tank(p_scope text, p_money_kind text) returns bigint
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  select cage.ensure_account('gas_tank', null, p_scope, p_money_kind)
$$;

-- The gas routes' arguments: a caller's idempotency key and a whole number of chips of a known kind.
create or replace function cage_private.check_gas_request(p_key text, p_chips bigint, p_money_kind text) returns void
  language plpgsql immutable
  set search_path = pg_catalog, pg_temp
as $$
begin
  if p_key is null or p_key !~ '^[\x21-\x7e]{1,128}$' or p_money_kind is null or p_money_kind not in ('play', 'real') then
    perform cage_private.refuse('bad_request', 'idempotency key: 1..128 printable characters; moneyKind play or real');
  end if;
  if p_chips is null or p_chips <= 0 or p_chips > cage_private.max_amount() then
    perform cage_private.refuse('invalid_amount', 'a positive whole number of chips (micro-units / 10^6)');
  end if;
end;
$$;

-- Chips from the caller's cage balance into their gas tank (gas_deposit), replay-once on
-- (user, key). The caller is the user of the access JWT's live grant (p_sid).
create or replace function cage.gas_deposit(p_sid uuid, p_key text, p_chips bigint, p_money_kind text)
  returns table (ref_id text, status text, tank bigint, balance bigint)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_user uuid := auth_private.user_of_sid(p_sid);
  v_ref text;
  v_account bigint;
  v_tank bigint;
  v_result record;
begin
  perform cage_private.check_gas_request(p_key, p_chips, p_money_kind);
  v_ref := format('gas-deposit:%s:%s', v_user, p_key);
  v_account := cage.ensure_account('user', v_user, null, p_money_kind);
  v_tank := cage_private.gas_tank(v_user::text, p_money_kind);
  select * into v_result from cage.post_movement(v_ref, 'gas_deposit', p_money_kind,
    array[v_account, v_tank], array[-p_chips, p_chips], jsonb_build_object('user_id', v_user));
  return query select v_ref, v_result.status::text,
    (select a.balance from cage.cage_accounts a where a.id = v_tank),
    (select a.balance from cage.cage_accounts a where a.id = v_account);
end;
$$;

-- A gas withdrawal, step 1: the chips reserved out of the caller's tank (tank -> outbound), so no
-- concurrent spend can take them and the tank never goes below zero (insufficient_gas). Replay-once
-- on (user, key): the same key again answers the withdrawal as it stands.
create or replace function cage.reserve_gas_withdrawal(p_sid uuid, p_key text, p_chips bigint, p_money_kind text)
  returns table (ref_id text, status text, chips bigint, money_kind text, error text, replayed boolean)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_user uuid := auth_private.user_of_sid(p_sid);
  v_ref text;
  v_row cage.gas_withdrawals;
begin
  perform cage_private.check_gas_request(p_key, p_chips, p_money_kind);
  v_ref := format('gas-withdraw:%s:%s', v_user, p_key);
  insert into cage.gas_withdrawals as w (ref_id, user_id, money_kind, chips)
  values (v_ref, v_user, p_money_kind::cage.money_kind, p_chips)
  on conflict on constraint gas_withdrawals_pkey do nothing
  returning w.* into v_row;
  if v_row.ref_id is null then
    select * into v_row from cage.gas_withdrawals w where w.ref_id = v_ref;
    if v_row.chips <> p_chips or v_row.money_kind::text <> p_money_kind then
      perform cage_private.refuse('ref_id_conflict', format('gas withdrawal %s was asked for %s %s chips', p_key, v_row.chips, v_row.money_kind));
    end if;
    return query select v_row.ref_id, v_row.status, v_row.chips, v_row.money_kind::text, v_row.error, true;
    return;
  end if;
  begin
    perform cage.post_movement(v_ref || ':reserve', 'gas_withdraw', p_money_kind,
      array[cage_private.gas_tank(v_user::text, p_money_kind), cage_private.gas_tank('outbound', p_money_kind)],
      array[-p_chips, p_chips], jsonb_build_object('user_id', v_user, 'step', 'reserve'));
  exception when sqlstate 'CGSHF' then
    perform cage_private.refuse('insufficient_gas', format('the %s gas tank holds less than %s chips', p_money_kind, p_chips));
  end;
  return query select v_row.ref_id, v_row.status, v_row.chips, v_row.money_kind::text, v_row.error, false;
end;
$$;

-- Step 2 of a withdrawal, either way: 'deliver' moves the reserved chips to the owner's cage balance
-- (outbound -> user); 'refund' (the delivery failed) moves them back to the tank they came from
-- (outbound -> tank), with the reason. Everything comes from the reservation's row: nothing but its
-- ref is taken from the caller. Only a reservation still reserved moves; a finished one answers as
-- it stands (replayed).
create or replace function cage_private.finish_gas_withdrawal(p_ref_id text, p_step text, p_error text)
  returns table (ref_id text, status text, chips bigint, money_kind text, error text, replayed boolean)
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_row cage.gas_withdrawals;
  v_kind text;
begin
  select * into v_row from cage.gas_withdrawals w where w.ref_id = p_ref_id for update;
  if v_row.ref_id is null then
    perform cage_private.refuse('gas_withdrawal_not_found');
  end if;
  if v_row.status <> 'reserved' then
    return query select v_row.ref_id, v_row.status, v_row.chips, v_row.money_kind::text, v_row.error, true;
    return;
  end if;
  v_kind := v_row.money_kind::text;
  perform cage.post_movement(v_row.ref_id || ':' || p_step, 'gas_withdraw', v_kind,
    array[cage_private.gas_tank('outbound', v_kind),
          case p_step when 'deliver' then cage.ensure_account('user', v_row.user_id, null, v_kind)
                      else cage_private.gas_tank(v_row.user_id::text, v_kind) end],
    array[-v_row.chips, v_row.chips], jsonb_build_object('user_id', v_row.user_id, 'step', p_step));
  update cage.gas_withdrawals w
     set status = case p_step when 'deliver' then 'delivered' else 'refunded' end,
         error = case p_step when 'deliver' then null else left(coalesce(p_error, 'failed'), 200) end,
         updated_at = now()
   where w.ref_id = v_row.ref_id
  returning w.* into v_row;
  return query select v_row.ref_id, v_row.status, v_row.chips, v_row.money_kind::text, v_row.error, false;
end;
$$;

-- The delivery waits at most lock_timeout for the owner's account (a move holding it): past that it
-- fails, and the caller refunds.
create or replace function cage.deliver_gas_withdrawal(p_ref_id text)
  returns table (ref_id text, status text, chips bigint, money_kind text, error text, replayed boolean)
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
  set lock_timeout = '2s'
as $$
  select * from cage_private.finish_gas_withdrawal(p_ref_id, 'deliver', null)
$$;

create or replace function cage.refund_gas_withdrawal(p_ref_id text, p_error text)
  returns table (ref_id text, status text, chips bigint, money_kind text, error text, replayed boolean)
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
  select * from cage_private.finish_gas_withdrawal(p_ref_id, 'refund', p_error)
$$;

-- Reservations older than their grace whose delivery never came (a cage that stopped mid-request)
-- are `gas_withdrawal` intents (cage.intents, 96_intents.sql): the worker's reconciler refunds them.

-- ---- the play-chip transfer gate --------------------------------------------------------------

-- Whether the gate is on for this deployment (the claim board's setting of cage.deployment's environment).
create or replace function cage_private.play_gate_on() returns boolean
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
begin
  return coalesce((select b.play_transfer_gate_enabled
                     from claims.board_settings(coalesce((select d.environment from cage.deployment d), 'local')) b), true);
end;
$$;

-- On every play-chip movement (an AFTER INSERT trigger on cage_entries, so cage.post_movement and
-- cage.post_movements alike): a frozen user account the move touches is wrapped (gate on: thawed,
-- moved, refrozen in this transaction, counted) or thawed for good (gate off); after a grant or a
-- payout, with the gate on, its recipients are frozen.
create or replace function cage_private.tg_play_gate() returns trigger
  language plpgsql
  set search_path = pg_catalog, pg_temp
  -- by key only: it runs at every posting, and its gate rows are one per frozen account
  -- (db/tests/game/by_key_plans.test.ts)
  set enable_seqscan = off
as $$
declare
  v_on boolean;
  r record;
begin
  -- nothing to do (issue 33: the sits and busts of play money, most of the trigger's runs): no play
  -- entry of this statement is a grant or a payout (which freeze their recipients), and none of
  -- their accounts has a gate row (which is all the statements below would lock or change)
  if not exists (select from new_entries n where n.money_kind = 'play' and n.kind in ('grant', 'tournament_payout', 'bet_payout'))
     and not exists (select from cage.play_gate_accounts g
                      where g.account_id in (select u.acc from new_entries n cross join unnest(n.accounts) u (acc) where n.money_kind = 'play')) then
    return null;
  end if;
  v_on := cage_private.play_gate_on();
  -- the gate rows this statement's entries touch, locked first and in account order: a batch's
  -- entries are inserted in ref order, and two batches locking the same rows each in its own order
  -- deadlocked (the accounts themselves are locked in id order by the posting functions, likewise)
  perform 1 from cage.play_gate_accounts g
   where g.account_id in (select u.acc from new_entries n cross join unnest(n.accounts) u (acc) where n.money_kind = 'play')
   order by g.account_id
   for update;
  for r in select n.ref_id, n.kind, n.accounts, n.amounts from new_entries n where n.money_kind = 'play' order by n.id loop
    update cage.play_gate_accounts g
       set wraps = g.wraps + case when v_on then 1 else 0 end,
           frozen = v_on,
           thawed_at = case when v_on then g.thawed_at else now() end,
           last_ref_id = r.ref_id, updated_at = now()
     where g.account_id = any (r.accounts) and g.frozen;
    if v_on and r.kind in ('grant', 'tournament_payout', 'bet_payout') then
      insert into cage.play_gate_accounts as g (account_id, frozen, frozen_at, last_ref_id)
      select u.id, true, now(), r.ref_id
        from unnest(r.accounts, r.amounts) as u (id, amount)
        join cage.cage_accounts a on a.id = u.id and a.account_type = 'user'
       where u.amount > 0
       order by u.id
      on conflict (account_id) do update
        set frozen = true, frozen_at = case when g.frozen then g.frozen_at else now() end,
            last_ref_id = excluded.last_ref_id, updated_at = now();
    end if;
  end loop;
  return null;
end;
$$;

-- One run per statement (a batch of entries), over the entries it inserted, in entry order.
drop trigger if exists tg_cage_entries__play_gate on cage.cage_entries;
create trigger tg_cage_entries__play_gate
  after insert on cage.cage_entries
  referencing new table as new_entries
  for each statement
  execute function cage_private.tg_play_gate();

-- PlayGateSet: the lever flipped (called by claims.set_board_settings in its transaction).
create or replace function cage_private.record_play_gate_set(p_environment text, p_enabled boolean, p_previous boolean, p_admin uuid)
  returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  insert into cage.gate_events (event, payload)
  values ('PlayGateSet', jsonb_build_object(
    'environment', p_environment, 'enabled', p_enabled, 'previous', p_previous, 'adminId', p_admin,
    'appliesHere', p_environment = coalesce((select d.environment from cage.deployment d), 'local'),
    'frozenAccounts', (select count(*) from cage.play_gate_accounts g where g.frozen),
    'at', now()));
end;
$$;

-- The gate as it stands: the lever, this deployment's environment, the frozen accounts, the last flip.
create or replace function cage.play_gate_state()
  returns table (environment text, enabled boolean, frozen_accounts bigint, last_event jsonb)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select coalesce((select d.environment from cage.deployment d), 'local'), cage_private.play_gate_on(),
         (select count(*) from cage.play_gate_accounts g where g.frozen),
         (select e.payload from cage.gate_events e order by e.id desc limit 1)
$$;

-- ---- test seeds ---------------------------------------------------------------------------------

-- Play chips the caller gives themself (grant_source -> their play balance, recorded in
-- cage.test_seeds), only while the `test_seeds` switch is on: the migrator sets it from the
-- configuration, on only under the test harness; no operator route can. Replay-once on (user, key).
create or replace function cage.seed_test_chips(p_sid uuid, p_key text, p_amount bigint)
  returns table (ref_id text, status text, balance bigint)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_user uuid := auth_private.user_of_sid(p_sid);
  v_ref text;
  v_account bigint;
  v_result record;
begin
  if not cage_private.switch_on('test_seeds') then
    perform cage_private.refuse('test_seeds_disabled', 'test seeds exist only under the test harness');
  end if;
  if p_key is null or p_key !~ '^[\x21-\x7e]{1,128}$' then
    perform cage_private.refuse('bad_request', 'idempotency key: 1..128 printable characters');
  end if;
  if p_amount is null or p_amount <= 0 or p_amount > 1000000 then
    perform cage_private.refuse('invalid_amount', '1..1000000 play chips');
  end if;
  v_ref := format('test-seed:%s:%s', v_user, p_key);
  insert into cage.test_seeds (ref_id, user_id, amount) values (v_ref, v_user, p_amount) on conflict do nothing;
  v_account := cage.ensure_account('user', v_user, null, 'play');
  select * into v_result from cage.post_movement(v_ref, 'grant', 'play',
    array[cage.ensure_account('grant_source', null, null, 'play'), v_account], array[-p_amount, p_amount],
    jsonb_build_object('user_id', v_user, 'test_seed', true));
  return query select v_ref, v_result.status::text, (select a.balance from cage.cage_accounts a where a.id = v_account);
end;
$$;
