-- The cage's escape and custody paths (issue 19, part 1; the routes: server/cage/custody.ts):
--   escape     an operator empties a cash table that cannot go on. Clean books (the escrow is what
--              the table owes: cage_private.table_books, the audit's own terms) give one FREE
--              custody entry per player with chips and the rake to the house; divergent books give
--              ONE hold (needs_reconciliation) of the whole escrow, carrying a per-player ledger.
--              Either way the positions are closed (their chains end with an `escape` link), the
--              dealer's lease is fenced, the table is frozen for good and its escrow is zero;
--   reconcile  an operator splits a hold into FREE entries: pro rata to the ledger's weights, or a
--              custom split whose sum is exactly the pool;
--   dispute    an operator marks a FREE entry DISPUTED: its owner cannot claim it;
--   release    the arbiter's detached ed25519 signature over the canonical release message (checked
--              by the cage process: SQL has no ed25519) makes it FREE again; SQL binds the release
--              to the open dispute it ends and records it once.
-- Amounts of custody entries are base units (chips x 10^6); the answers give chips and base units.

-- The base units of one chip in custody: cage_private.base_units() (db/functions/00_units.sql).

-- The per-player ledger of a table's open positions (the ones its escrow owes), for a hold: what
-- each bought in, topped up, had reverted and won or lost in hands (its chain's links), its stack,
-- and what its chain head says. The chain is recomputed here as game_private.extend_chain makes it
-- (sha256 of prev|seq|event|delta|stack|ref from the genesis): `chainStack` is the stack of the
-- head's link, and `weight`, the pro-rata basis, is that stack when the chain verifies (0 else).
create or replace function cage_private.position_ledger(p_table_id text) returns jsonb
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
-- plpgsql, not sql: the body calls the game domain's functions, which are created after this file
begin
  return (
  select coalesce(jsonb_agg(jsonb_build_object(
           'userId', p.user_id, 'positionId', p.player_id::text, 'seatIndex', p.seat_index, 'status', p.status,
           'boughtIn', k.bought_in, 'toppedUp', k.topped_up, 'reverted', k.reverted, 'handsNet', k.hands,
           'stack', p.chip_balance, 'chainHead', p.history_hash, 'chainLength', p.chain_length,
           'chainStack', k.last_stack, 'chainVerified', k.verified,
           'weight', case when k.verified then k.last_stack else 0 end)
         order by p.player_id), '[]'::jsonb)
    from cage_private.owed_positions p
    cross join lateral (
      select coalesce(sum(l.delta) filter (where l.event = 'buy_in'), 0) as bought_in,
             coalesce(sum(l.delta) filter (where l.event = 'top_up'), 0) as topped_up,
             coalesce(-(sum(l.delta) filter (where l.event = 'reverted')), 0) as reverted,
             coalesce(sum(l.delta) filter (where l.event = 'hand'), 0) as hands,
             coalesce((array_agg(l.stack order by l.seq desc))[1], 0) as last_stack,
             count(*) = p.chain_length and coalesce(bool_and(l.ok), true)
               and coalesce((array_agg(l.hash order by l.seq desc))[1], game_private.chain_genesis(p.table_id, p.user_id, p.player_id))
                   = p.history_hash as verified
        from (select x.*,
                     x.seq = row_number() over w
                     and x.prev_hash = coalesce(lag(x.hash) over w, game_private.chain_genesis(p.table_id, p.user_id, p.player_id))
                     and x.hash = game_private.link_hash(x.prev_hash, x.seq, x.event, x.delta, x.stack, x.ref_id) as ok
                -- the whole chain, from both places its links are kept (a hand's links in its row)
                from game_private.position_chain(p.player_id, 0, null) x
              window w as (order by x.seq)) l
    ) k
   where p.table_id = p_table_id);
end;
$$;

-- An escape as its route answers it, the first time and on every replay alike (built from the rows,
-- which never change).
create or replace function cage_private.escape_answer(p_escape_id bigint) returns jsonb
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select jsonb_build_object(
           'escapeId', x.id::text, 'tableId', x.table_id, 'moneyKind', x.money_kind, 'outcome', x.outcome, 'status', 'frozen',
           'refId', x.ref_id, 'reason', x.reason, 'adminId', x.admin_id,
           'escrow', x.escrow, 'liveStacks', x.live_stacks, 'unreconciledRake', x.unreconciled_rake, 'reconciledRake', x.reconciled_rake,
           'toCustody', x.to_custody, 'toHouse', x.to_house,
           'entries', coalesce((select jsonb_agg(jsonb_build_object('entryId', c.id::text, 'userId', c.user_id, 'positionId', c.player_id::text,
                                                                   'amount', c.amount / cage_private.base_units(), 'baseUnits', c.amount::text)
                                                 order by c.id)
                                  from cage.custody_entries c where c.escape_id = x.id and c.user_id is not null), '[]'::jsonb),
           'hold', (select jsonb_build_object('entryId', c.id::text, 'status', 'needs_reconciliation', 'amount', c.amount / cage_private.base_units(),
                                              'baseUnits', c.amount::text, 'ledger', c.ledger)
                      from cage.custody_entries c where c.escape_id = x.id and c.user_id is null),
           'settledDeposits', to_jsonb(x.settled_deposits),
           'fence', jsonb_build_object('epoch', x.fenced_epoch, 'abandonedHand', x.abandoned_hand),
           'createdAt', x.created_at)
    from cage.table_escapes x
   where x.id = p_escape_id
$$;

-- Escapes a cash table (POST /escape/:tableId): the operator (p_sid: their live admin session) empties
-- it into custody, for the reason given. Escaping an escaped table replays the first answer
-- (replayed = true), whatever the reason now; a tournament table is refused (not_a_cash_table: its
-- money leaves by payouts and refunds); a hand being dealt by a live game process is refused
-- (hand_in_progress: ask again between hands, or once that process is gone).
--
-- Order matters:
--   1. the table row, locked (every seat change and hand boundary takes it first, so none of them
--      interleaves; two escapes of one table run one after the other and the second replays);
--   2. the dealer fenced: the lease's tenure ends (its epoch moves on, its holder goes), so whatever
--      the old holder sends at a hand boundary is refused (lease_lost); a hand its gone holder left
--      is abandoned (the stacks of its start stand);
--   3. deposits in flight settled as the reconciler settles them (cage.fail_deposit): reversed to
--      the depositor, or confirmed when the game holds the credit (the chips are on a seat);
--   4. the escrow locked, then the books read (cage_private.table_books, as the audit reads them):
--      no settlement or buy-in of this table moves the escrow between the two;
--   5. the escrow emptied: clean books give a FREE entry per position with chips and the rake to the
--      house, divergent ones one hold of all of it with the per-player ledger (read before 6);
--   6. the positions closed, each chain ended with an `escape` link; the table frozen (for good:
--      tg_tables__escaped_stays_frozen), the room told; the act recorded with the operator.
-- Long because: the six steps above run in that order under the table's lock; each is short, and
-- split into functions the order would no longer be read in one place.
create or replace function cage.escape_table(p_sid uuid, p_table_id text, p_reason text)
  returns table (answer jsonb, replayed boolean)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_admin uuid := auth_private.admin_of_session(p_sid);
  v_table game.tables;
  v_lease game.table_leases;
  v_escape cage.table_escapes;
  v_hand text;
  v_epoch bigint;
  v_settled text[] := '{}';
  v_deposit text;
  v_escrow_account bigint;
  v_escrow bigint;
  v_books record;
  v_clean boolean;
  v_rake bigint;
  v_ref text;
  v_kind text;
  v_memo jsonb;
  v_position record;
begin
  if p_table_id is null or length(p_table_id) not between 1 and 128
     or p_reason is null or length(btrim(p_reason)) = 0 or length(p_reason) > 500 then
    perform cage_private.refuse('bad_request', 'a table id and a reason of 1..500 characters');
  end if;
  -- 1. the table
  select * into v_table from game.tables t where t.table_id = p_table_id for update;
  if v_table.table_id is null then
    perform cage_private.refuse('table_not_found', format('table %s', p_table_id));
  end if;
  select * into v_escape from cage.table_escapes e where e.table_id = p_table_id;
  if v_escape.id is not null then
    return query select cage_private.escape_answer(v_escape.id), true;
    return;
  end if;
  if v_table.mode <> 'cash' then
    perform cage_private.refuse('not_a_cash_table', 'a tournament''s money leaves by its payouts or refunds');
  end if;
  v_kind := v_table.money_kind::text;

  -- 2. the dealer
  select * into v_lease from game.table_leases l where l.table_id = p_table_id for update;
  if v_table.current_hand_id is not null and v_lease.table_id is not null and game_private.lease_live(v_lease) then
    perform cage_private.refuse('hand_in_progress', format('hand %s is being dealt by a live game process', v_table.current_hand_id));
  end if;
  if v_lease.table_id is not null then
    v_hand := game_private.end_tenure(p_table_id);
    select l.epoch into v_epoch from game.table_leases l where l.table_id = p_table_id;
  elsif v_table.current_hand_id is not null then
    -- a hand under no lease (none can begin now): abandoned the same way
    perform game_private.abandon_current_hand(v_table);
    v_hand := v_table.current_hand_id;
  end if;

  -- 3. deposits in flight
  for v_deposit in select d.ref_id from cage.deposit_intents d
                    where d.table_id = p_table_id and d.status = 'pending' order by d.ref_id loop
    perform cage.fail_deposit(v_deposit, 'table_escaped');
    v_settled := v_settled || v_deposit;
  end loop;

  -- 4. the books, under the escrow's lock
  v_escrow_account := cage.ensure_account('table_escrow', null, p_table_id, v_kind);
  select a.balance into v_escrow from cage.cage_accounts a where a.id = v_escrow_account for no key update;
  select * into v_books from cage_private.table_books b where b.table_id = p_table_id;
  v_clean := v_escrow = v_books.owed;
  v_rake := v_books.unreconciled_rake + v_books.reconciled_rake;
  if v_escrow > 9223372036854775807 / cage_private.base_units() then
    perform cage_private.refuse('amount_out_of_range', 'custody holds base units (chips x 10^6) in a bigint');
  end if;

  -- 5. the escrow emptied
  v_ref := 'escape:' || p_table_id;
  insert into cage.table_escapes as x (table_id, money_kind, admin_id, reason, outcome, ref_id, escrow, live_stacks,
                                       unreconciled_rake, reconciled_rake, to_custody, to_house, settled_deposits, fenced_epoch, abandoned_hand)
  values (p_table_id, v_table.money_kind, v_admin, p_reason, case when v_clean then 'clean' else 'divergent' end, v_ref, v_escrow,
          v_books.live_stacks, v_books.unreconciled_rake, v_books.reconciled_rake,
          case when v_clean then v_books.live_stacks else v_escrow end, case when v_clean then v_rake else 0 end,
          v_settled, v_epoch, v_hand)
  returning x.* into v_escape;
  v_memo := jsonb_build_object('table_id', p_table_id, 'escape_id', v_escape.id, 'outcome', v_escape.outcome);
  if v_clean then
    insert into cage.custody_entries (ref_id, user_id, table_id, money_kind, amount, source_ref_id, player_id, escape_id)
    select v_ref || ':' || p.player_id, p.user_id, p_table_id, v_table.money_kind, p.chip_balance * cage_private.base_units(), v_ref,
           p.player_id, v_escape.id
      from cage_private.owed_positions p
     where p.table_id = p_table_id and p.chip_balance > 0
     order by p.player_id;
    perform cage.post_movement(v_ref, 'table_escape', v_kind,
      array[v_escrow_account, cage.ensure_account('custody', null, null, v_kind)]
        || case when v_rake > 0 then array[cage.ensure_account('house', null, null, v_kind)] else '{}'::bigint[] end,
      array[-v_escrow, v_books.live_stacks] || case when v_rake > 0 then array[v_rake] else '{}'::bigint[] end,
      v_memo);
  else
    insert into cage.custody_entries (ref_id, user_id, table_id, money_kind, amount, status, source_ref_id, escape_id, ledger)
    values (v_ref || ':hold', null, p_table_id, v_table.money_kind, v_escrow * cage_private.base_units(), 'needs_reconciliation', v_ref,
            v_escape.id, cage_private.position_ledger(p_table_id));
    perform cage.post_movement(v_ref, 'table_escape', v_kind,
      array[v_escrow_account, cage.ensure_account('custody', null, null, v_kind)], array[-v_escrow, v_escrow], v_memo);
  end if;

  -- 6. the positions, the table, the record
  for v_position in select p.player_id, p.chip_balance from cage_private.owed_positions p
                     where p.table_id = p_table_id order by p.player_id loop
    -- closed as every position closes (its stack to zero, its last hand, the chain's `escape` link)
    perform game_private.close_position(p, v_ref, 'escape') from game.table_players p where p.id = v_position.player_id;
  end loop;
  update game.tables t set status = 'frozen' where t.table_id = p_table_id;
  perform game_private.seats_changed(p_table_id);
  insert into cage.operator_acts (admin_id, act, ref_id, reason, change)
  values (v_admin, 'escape', v_ref, p_reason, v_memo);
  return query select cage_private.escape_answer(v_escape.id), false;
end;
$$;

-- A hold's pool split pro rata to its ledger's weights, in whole chips: each user gets
-- floor(pool x weight / total weight), and the chips left (fewer than the users) go one each by
-- largest remainder, ties broken by the larger weight, then by the user id (text order). Users
-- whose share is 0 get nothing. No row when no weight is positive.
create or replace function cage_private.pro_rata_split(p_pool bigint, p_ledger jsonb)
  returns table (user_id uuid, amount bigint)
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  with w as (
    select (e ->> 'userId')::uuid as user_id, sum((e ->> 'weight')::numeric) as weight
      from jsonb_array_elements(p_ledger) e
     group by 1
    having sum((e ->> 'weight')::numeric) > 0
  ),
  s as (
    select w.user_id, w.weight, floor(p_pool::numeric * w.weight / t.total) as base, mod(p_pool::numeric * w.weight, t.total) as remainder
      from w cross join (select sum(w2.weight) as total from w w2) t
  ),
  r as (
    select s.user_id, s.base,
           row_number() over (order by s.remainder desc, s.weight desc, s.user_id::text) as rank,
           p_pool - sum(s.base) over () as left_over
      from s
  )
  select r.user_id, (r.base + case when r.rank <= r.left_over then 1 else 0 end)::bigint
    from r
   where r.base + case when r.rank <= r.left_over then 1 else 0 end > 0
   order by r.user_id
$$;

-- An operator's custom split, checked and normalised (by user): an array of 1..100 objects
-- { userId, amount } with distinct users and positive whole chips (invalid_split otherwise).
create or replace function cage_private.custom_split(p_split jsonb)
  returns table (user_id uuid, amount bigint)
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
begin
  if p_split is null or jsonb_typeof(p_split) <> 'array' or jsonb_array_length(p_split) not between 1 and 100
     or exists (select from jsonb_array_elements(p_split) e
                 where case when jsonb_typeof(e) <> 'object' then true
                            when (select count(*) from jsonb_object_keys(e)) <> 2 then true
                            when jsonb_typeof(e -> 'userId') is distinct from 'string' or jsonb_typeof(e -> 'amount') is distinct from 'number' then true
                            when not pg_input_is_valid(e ->> 'userId', 'uuid') then true
                            else (e ->> 'amount')::numeric <= 0 or (e ->> 'amount')::numeric > cage_private.max_amount()
                                 or (e ->> 'amount')::numeric <> trunc((e ->> 'amount')::numeric)
                       end) then
    perform cage_private.refuse('invalid_split', 'an array of 1..100 { userId, amount }: positive whole chips');
  end if;
  if (select count(distinct (e ->> 'userId')::uuid) from jsonb_array_elements(p_split) e) <> jsonb_array_length(p_split) then
    perform cage_private.refuse('invalid_split', 'each user once');
  end if;
  return query select (e ->> 'userId')::uuid, (e ->> 'amount')::numeric::bigint from jsonb_array_elements(p_split) e order by 1;
end;
$$;

-- A hold's reconciliation as its route answers it (first and replayed alike).
create or replace function cage_private.reconcile_answer(p_hold_id bigint) returns jsonb
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select jsonb_build_object(
           'holdId', h.id::text, 'tableId', h.table_id, 'moneyKind', h.money_kind, 'status', h.status,
           'pool', h.amount / cage_private.base_units(), 'baseUnits', h.amount::text,
           'mode', a.change ->> 'mode', 'reason', a.reason, 'adminId', a.admin_id, 'reconciledAt', a.created_at,
           'entries', coalesce((select jsonb_agg(jsonb_build_object('entryId', c.id::text, 'userId', c.user_id, 'positionId', c.player_id::text,
                                                                   'amount', c.amount / cage_private.base_units(), 'baseUnits', c.amount::text)
                                                 order by c.id)
                                  from cage.custody_entries c where c.hold_id = h.id), '[]'::jsonb))
    from cage.custody_entries h
    left join cage.operator_acts a on a.ref_id = 'custody-reconcile:' || h.id and a.act = 'custody_reconcile'
   where h.id = p_hold_id
$$;

-- Splits a hold needing reconciliation into FREE entries (POST /admin/custody/reconcile), by the
-- operator of the live session p_sid, for a reason: p_mode 'pro_rata' (p_split null) by the hold's
-- ledger (cage_private.pro_rata_split; no_pro_rata_basis when no weight is positive), or 'custom'
-- (p_split: [{ userId, amount }]) whose sum must be the pool exactly (split_sum_mismatch); a custom
-- split names users of the ledger or known accounts (user_not_found). No chip moves: the pool is in
-- the custody account already; the hold becomes its entries. The same request again replays the
-- first answer; another one for a reconciled hold is hold_already_reconciled.
create or replace function cage.reconcile_custody_hold(p_sid uuid, p_hold_id bigint, p_mode text, p_split jsonb, p_reason text)
  returns table (answer jsonb, replayed boolean)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_admin uuid := auth_private.admin_of_session(p_sid);
  v_hold cage.custody_entries;
  v_request jsonb;
  v_done jsonb;
  v_pool bigint;
  v_sum numeric;
begin
  if p_mode is null or p_mode not in ('pro_rata', 'custom') or (p_mode = 'pro_rata') <> (p_split is null)
     or p_reason is null or length(btrim(p_reason)) = 0 or length(p_reason) > 500 then
    perform cage_private.refuse('bad_request', 'mode pro_rata (no split) or custom (with a split), and a reason of 1..500 characters');
  end if;
  select * into v_hold from cage.custody_entries c where c.id = p_hold_id for update;
  if v_hold.id is null or v_hold.user_id is not null then
    perform cage_private.refuse('custody_hold_not_found', format('no hold %s', p_hold_id));
  end if;
  if p_mode = 'custom' then
    select jsonb_agg(jsonb_build_object('userId', s.user_id, 'amount', s.amount) order by s.user_id), sum(s.amount)
      into v_request, v_sum
      from cage_private.custom_split(p_split) s;
  end if;
  if v_hold.status = 'reconciled' then
    select a.change into v_done from cage.operator_acts a where a.ref_id = 'custody-reconcile:' || v_hold.id and a.act = 'custody_reconcile';
    if v_done ->> 'mode' = p_mode and (v_done -> 'split') = coalesce(v_request, 'null'::jsonb) then
      return query select cage_private.reconcile_answer(v_hold.id), true;
      return;
    end if;
    perform cage_private.refuse('hold_already_reconciled', format('hold %s was reconciled by another split', v_hold.id));
  end if;

  v_pool := v_hold.amount / cage_private.base_units();
  if p_mode = 'custom' then
    if v_sum <> v_pool then
      perform cage_private.refuse('split_sum_mismatch', format('the split sums to %s chips; the pool is %s', v_sum, v_pool));
    end if;
    if exists (select from jsonb_array_elements(v_request) s
                where not exists (select from auth.users u where u.id = (s ->> 'userId')::uuid)
                  and not exists (select from jsonb_array_elements(v_hold.ledger) e where e ->> 'userId' = s ->> 'userId')) then
      perform cage_private.refuse('user_not_found', 'a custom split names users of the hold''s ledger or known accounts');
    end if;
    insert into cage.custody_entries (ref_id, user_id, table_id, money_kind, amount, source_ref_id, player_id, hold_id)
    select format('custody-reconcile:%s:%s', v_hold.id, s ->> 'userId'), (s ->> 'userId')::uuid, v_hold.table_id, v_hold.money_kind,
           (s ->> 'amount')::bigint * cage_private.base_units(), v_hold.ref_id,
           (select (e ->> 'positionId')::bigint from jsonb_array_elements(v_hold.ledger) e where e ->> 'userId' = s ->> 'userId' limit 1),
           v_hold.id
      from jsonb_array_elements(v_request) s;
  else
    if v_pool > 0 and not exists (select from cage_private.pro_rata_split(v_pool, v_hold.ledger)) then
      perform cage_private.refuse('no_pro_rata_basis', 'no position of the hold''s ledger has a verified chain with chips: split it by hand (custom)');
    end if;
    insert into cage.custody_entries (ref_id, user_id, table_id, money_kind, amount, source_ref_id, player_id, hold_id)
    select format('custody-reconcile:%s:%s', v_hold.id, s.user_id), s.user_id, v_hold.table_id, v_hold.money_kind,
           s.amount * cage_private.base_units(), v_hold.ref_id,
           (select (e ->> 'positionId')::bigint from jsonb_array_elements(v_hold.ledger) e where (e ->> 'userId')::uuid = s.user_id limit 1),
           v_hold.id
      from cage_private.pro_rata_split(v_pool, v_hold.ledger) s;
  end if;
  update cage.custody_entries c set status = 'reconciled' where c.id = v_hold.id;
  insert into cage.operator_acts (admin_id, act, ref_id, reason, change)
  values (v_admin, 'custody_reconcile', 'custody-reconcile:' || v_hold.id, p_reason,
          jsonb_build_object('hold_id', v_hold.id, 'table_id', v_hold.table_id, 'mode', p_mode, 'split', v_request));
  return query select cage_private.reconcile_answer(v_hold.id), false;
end;
$$;

-- The canonical release message of a dispute: what the arbiter signs (detached ed25519 over its
-- UTF-8 bytes), eight lines joined by "\n", no trailing newline:
--   poker-platform custody release v1
--   action: release the disputed custody entry to FREE, claimable by its owner
--   entry: <entry id>
--   owner: <owner user id>
--   amount: <base units> base units (<chips> chips)
--   money-kind: <play|real>
--   dispute: <dispute id>
--   nonce: <the dispute's nonce, 32 hex>
-- The dispute's id and nonce make it this dispute's alone: a signature releases it once, never a
-- later dispute of the same entry.
create or replace function cage_private.release_message(p_dispute_id bigint) returns text
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select concat_ws(E'\n',
           'poker-platform custody release v1',
           'action: release the disputed custody entry to FREE, claimable by its owner',
           'entry: ' || c.id,
           'owner: ' || c.user_id,
           format('amount: %s base units (%s chips)', c.amount, c.amount / cage_private.base_units()),
           'money-kind: ' || c.money_kind,
           'dispute: ' || d.id,
           'nonce: ' || d.nonce)
    from cage.custody_disputes d
    join cage.custody_entries c on c.id = d.entry_id
   where d.id = p_dispute_id
$$;

-- A dispute as the routes answer it: the entry, who opened it and why, and the message to sign.
create or replace function cage_private.dispute_answer(p_dispute_id bigint) returns jsonb
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select jsonb_build_object(
           'disputeId', d.id::text, 'entryId', c.id::text, 'userId', c.user_id, 'tableId', c.table_id, 'moneyKind', c.money_kind,
           'amount', c.amount / cage_private.base_units(), 'baseUnits', c.amount::text, 'status', c.status,
           'reason', d.reason, 'adminId', d.admin_id, 'openedAt', d.created_at, 'releasedAt', d.released_at,
           'releaseMessage', cage_private.release_message(d.id))
    from cage.custody_disputes d
    join cage.custody_entries c on c.id = d.entry_id
   where d.id = p_dispute_id
$$;

-- Marks a FREE entry DISPUTED (POST /admin/custody/dispute), by the operator of the live session
-- p_sid, for a reason: its owner cannot claim it until the arbiter releases it. Disputing a
-- disputed entry replays its open dispute; a claimed entry or a hold is not disputable.
create or replace function cage.dispute_custody(p_sid uuid, p_entry_id bigint, p_reason text)
  returns table (answer jsonb, replayed boolean)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_admin uuid := auth_private.admin_of_session(p_sid);
  v_entry cage.custody_entries;
  v_dispute bigint;
begin
  if p_reason is null or length(btrim(p_reason)) = 0 or length(p_reason) > 500 then
    perform cage_private.refuse('bad_request', 'a reason of 1..500 characters');
  end if;
  -- the entry's lock orders this against a claim: the one that comes second sees the other's status
  select * into v_entry from cage.custody_entries c where c.id = p_entry_id for update;
  if v_entry.id is null then
    perform cage_private.refuse('custody_entry_not_found');
  end if;
  if v_entry.status = 'disputed' then
    select d.id into v_dispute from cage.custody_disputes d where d.entry_id = v_entry.id and d.released_at is null;
    return query select cage_private.dispute_answer(v_dispute), true;
    return;
  end if;
  if v_entry.status <> 'free' then
    perform cage_private.refuse('custody_not_disputable',
      format('entry %s is %s: only a FREE entry is disputed (a hold is reconciled)', v_entry.id, v_entry.status));
  end if;
  insert into cage.custody_disputes as d (entry_id, admin_id, reason) values (v_entry.id, v_admin, p_reason)
  returning d.id into v_dispute;
  update cage.custody_entries c set status = 'disputed' where c.id = v_entry.id;
  insert into cage.operator_acts (admin_id, act, ref_id, reason, change)
  values (v_admin, 'custody_dispute', 'custody-dispute:' || v_dispute, p_reason,
          jsonb_build_object('entry_id', v_entry.id, 'dispute_id', v_dispute, 'user_id', v_entry.user_id, 'amount', v_entry.amount));
  return query select cage_private.dispute_answer(v_dispute), false;
end;
$$;

-- The dispute p_dispute_id of entry p_entry_id, still open, or a refusal (custody_entry_not_found,
-- dispute_not_found, custody_already_released). Locks nothing.
create or replace function cage_private.open_dispute(p_entry_id bigint, p_dispute_id bigint) returns cage.custody_disputes
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_dispute cage.custody_disputes;
begin
  if not exists (select from cage.custody_entries c where c.id = p_entry_id and c.user_id is not null) then
    perform cage_private.refuse('custody_entry_not_found');
  end if;
  select * into v_dispute from cage.custody_disputes d where d.id = p_dispute_id and d.entry_id = p_entry_id;
  if v_dispute.id is null then
    perform cage_private.refuse('dispute_not_found', format('entry %s has no dispute %s', p_entry_id, p_dispute_id));
  end if;
  if v_dispute.released_at is not null then
    perform cage_private.refuse('custody_already_released', format('dispute %s was released at %s', v_dispute.id, v_dispute.released_at));
  end if;
  return v_dispute;
end;
$$;

-- The message the arbiter must have signed to release this open dispute (the release route
-- verifies the signature over it before it calls cage.release_custody).
create or replace function cage.custody_release_message(p_entry_id bigint, p_dispute_id bigint) returns text
  language plpgsql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  return cage_private.release_message((cage_private.open_dispute(p_entry_id, p_dispute_id)).id);
end;
$$;

-- Records the arbiter's release of a DISPUTED entry (POST /admin/custody/release). The cage process
-- verified the detached signature (p_signature, by p_public_key) over p_message before calling, but
-- SQL cannot check ed25519, so the release frees nothing yet: p_public_key must be an active pinned
-- arbiter key (key_not_pinned), the dispute the entry's open one and p_message its canonical release
-- message (release_message_mismatch); the release is recorded pending, and the entry stays DISPUTED
-- until the worker has verified the signature (cage.verify_custody_release). One pending release per
-- dispute (custody_release_pending); a released dispute refuses another (custody_already_released).
-- Moves no chip.
create or replace function cage.release_custody(
  p_entry_id bigint, p_dispute_id bigint, p_message text, p_signature bytea, p_public_key bytea
) returns table (answer jsonb)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_dispute cage.custody_disputes;
  v_release bigint;
begin
  if p_entry_id is null or p_dispute_id is null or p_message is null or p_signature is null or length(p_signature) <> 64
     or p_public_key is null or length(p_public_key) <> 32 then
    perform cage_private.refuse('bad_request', 'entry, dispute, message, a 64-byte signature and a 32-byte key');
  end if;
  -- the entry's lock orders this against a concurrent release or claim; the dispute's, against a twin
  perform from cage.custody_entries c where c.id = p_entry_id for update;
  perform from cage.custody_disputes d where d.id = p_dispute_id for update;
  v_dispute := cage_private.open_dispute(p_entry_id, p_dispute_id);
  if p_message is distinct from cage_private.release_message(v_dispute.id) then
    perform cage_private.refuse('release_message_mismatch', 'the message is not this dispute''s release message');
  end if;
  if not cage_private.key_is_active('arbiter', p_public_key) then
    perform cage_private.refuse('key_not_pinned', 'the release is not under the pinned, active arbiter key');
  end if;
  if exists (select from cage.custody_releases r where r.dispute_id = v_dispute.id
              and not exists (select from cage.custody_release_verdicts v where v.release_id = r.id)) then
    perform cage_private.refuse('custody_release_pending', format('dispute %s has a release awaiting verification', v_dispute.id));
  end if;
  insert into cage.custody_releases as r (dispute_id, entry_id, message, signature, public_key)
  values (v_dispute.id, p_entry_id, p_message, p_signature, p_public_key)
  returning r.id into v_release;
  return query select cage_private.dispute_answer(v_dispute.id) || jsonb_build_object('releaseId', v_release::text, 'verification', 'pending');
end;
$$;

-- The worker's verdict on a pending release (server/cage/custody.ts, verifyPendingReleases): it
-- checked the signature against the release's key, which must be a pinned arbiter key. Valid: the
-- dispute is released and the entry FREE, claimable by its owner. Forged: the verdict is recorded,
-- the entry stays DISPUTED and the audit names the release (releaseViolations). A release has one
-- verdict (custody_already_released on a second).
create or replace function cage.verify_custody_release(p_release_id bigint, p_valid boolean)
  returns table (release_id bigint, entry_id bigint, dispute_id bigint, valid boolean)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_release cage.custody_releases;
begin
  select * into v_release from cage.custody_releases r where r.id = p_release_id;
  if v_release.id is null or p_valid is null then
    perform cage_private.refuse('release_not_found', format('no release %s', p_release_id));
  end if;
  -- the same order as the release: the entry, then the dispute
  perform from cage.custody_entries c where c.id = v_release.entry_id for update;
  perform from cage.custody_disputes d where d.id = v_release.dispute_id for update;
  if exists (select from cage.custody_release_verdicts v where v.release_id = v_release.id) then
    perform cage_private.refuse('custody_already_released', format('release %s has its verdict', v_release.id));
  end if;
  if p_valid and not exists (select from cage_private.pinned_keys k where k.purpose = 'arbiter' and k.public_key = v_release.public_key) then
    perform cage_private.refuse('key_not_pinned', 'the release''s key is not a pinned arbiter key');
  end if;
  insert into cage.custody_release_verdicts (release_id, valid) values (v_release.id, p_valid);
  if p_valid then
    update cage.custody_disputes d set released_at = now() where d.id = v_release.dispute_id;
    update cage.custody_entries c set status = 'free' where c.id = v_release.entry_id;
  end if;
  return query select v_release.id, v_release.entry_id, v_release.dispute_id, p_valid;
end;
$$;

-- A custody entry or hold as the operators' list shows it: owner, amount, status, where it came
-- from; a DISPUTED entry with its open dispute (and release message); a hold with its ledger and,
-- once reconciled, its split.
create or replace function cage_private.custody_item(p_entry cage.custody_entries) returns jsonb
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select jsonb_build_object(
           'entryId', p_entry.id::text, 'kind', case when p_entry.user_id is null then 'hold' else 'entry' end,
           'userId', p_entry.user_id, 'tableId', p_entry.table_id, 'moneyKind', p_entry.money_kind,
           'amount', p_entry.amount / cage_private.base_units(), 'baseUnits', p_entry.amount::text, 'status', p_entry.status,
           'source', case when p_entry.hold_id is not null then 'reconciliation' when p_entry.escape_id is not null then 'escape'
                          else 'forced_withdrawal' end,
           'positionId', coalesce(p_entry.player_id, (select w.player_id from cage.withdraw_intents w where w.custody_entry_id = p_entry.id))::text,
           'escapeId', p_entry.escape_id::text, 'holdId', p_entry.hold_id::text,
           'createdAt', p_entry.created_at, 'claimedAt', p_entry.claimed_at, 'claimTxHash', p_entry.claim_ref_id)
      || case when p_entry.status = 'disputed'
              then jsonb_build_object('dispute', (select cage_private.dispute_answer(d.id) from cage.custody_disputes d
                                                    where d.entry_id = p_entry.id and d.released_at is null))
              else '{}'::jsonb end
      || case when p_entry.user_id is null
              then jsonb_build_object('ledger', p_entry.ledger,
                                      'split', (select coalesce(jsonb_agg(jsonb_build_object('entryId', c.id::text, 'userId', c.user_id,
                                                                                             'amount', c.amount / cage_private.base_units(),
                                                                                             'status', c.status) order by c.id), '[]'::jsonb)
                                                  from cage.custody_entries c where c.hold_id = p_entry.id))
              else '{}'::jsonb end
$$;

-- The operators' list of custody (GET /admin/custody/holds), newest first: filtered by statuses,
-- table and user (a user's entries, and the holds whose ledger names them), p_limit (1..200) at a
-- time below the cursor p_before (an entry id). The operator's session must be live.
create or replace function cage.custody_holdings(
  p_sid uuid, p_statuses text[], p_table_id text, p_user_id uuid, p_before bigint, p_limit integer
) returns table (entry_id bigint, item jsonb)
  language plpgsql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  perform auth_private.admin_of_session(p_sid);
  if p_limit is null or p_limit not between 1 and 200
     or (p_statuses is not null and (cardinality(p_statuses) = 0 or array_position(p_statuses, null) is not null
         or not p_statuses <@ array['free', 'claimed', 'disputed', 'needs_reconciliation', 'reconciled'])) then
    perform cage_private.refuse('bad_request', 'limit 1..200; statuses among free, claimed, disputed, needs_reconciliation, reconciled');
  end if;
  return query
    select c.id, cage_private.custody_item(c)
      from cage.custody_entries c
     where (p_statuses is null or c.status = any (p_statuses))
       and (p_table_id is null or c.table_id = p_table_id)
       and (p_user_id is null or c.user_id = p_user_id
            or (c.user_id is null and c.ledger @> jsonb_build_array(jsonb_build_object('userId', p_user_id))))
       and (p_before is null or c.id < p_before)
     order by c.id desc
     limit p_limit;
end;
$$;
