-- One intent model (issue 32). Every pending money step is an intent: a row of one of the intent
-- tables, read here in one status vocabulary (the spec's words for deposit intents: pending,
-- submitted, confirmed, failed; and compensated, for a step undone by its compensation):
--   kind                      table                        the table's own status words
--   cage_deposit              cage.deposit_intents         pending confirmed failed
--   cage_withdrawal           cage.withdraw_intents        (settled_at) unsettled settled
--   cage_payout               cage.payout_intents          (timestamps) pending submitted confirmed failed; key table:position
--   gas_withdrawal            cage.gas_withdrawals         reserved delivered refunded
--   bet_stake                 cage.bet_stakes              pending confirmed compensated unbet
--   chain_deposit             bank.deposit_intents         pending submitted confirmed failed
--   chain_withdrawal          bank.withdraw_intents        pending submitted confirmed failed
--   chain_tournament_payment  bank.tournament_payments     pending submitted confirmed failed
--   vault_refund              bank.vault_refunds           pending submitted confirmed
--   claim                     claims.claim_intents         open claimed abandoned (written and closed in the claim's one
--                                                          transaction since issue 33; an open one is a pre-33 claim's)
-- Each row says its next step (null once nothing is left to do), its deadline (when a reconciler
-- takes it up), and, from cage.intent_attempts (migration 000049), the reconcilers' attempts: how
-- many, the last one, when it is due again, and since when and why it is stuck (the last failure).
-- The routes keep answering in their own words (the spec's): this is the operators' reading, and
-- the reconcilers' (server/intents/): cage.due_intents hands each its due rows, and
-- cage.record_intent_attempt records each step's success or failure.

-- The one status vocabulary.
create or replace function cage.intent_statuses() returns text[]
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$ select array['pending', 'submitted', 'confirmed', 'failed', 'compensated'] $$;

-- A table's own status word in the one vocabulary (null: a word this mapping does not know; the
-- test of the view fails on it). Pure, as the other functions cage.intents calls (its readers
-- execute them: the admin role).
create or replace function cage.intent_status(p_kind text, p_raw text) returns text
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select case
    when p_kind = 'cage_withdrawal' then case p_raw when 'unsettled' then 'submitted' when 'settled' then 'confirmed' end
    when p_kind = 'gas_withdrawal' then case p_raw when 'reserved' then 'pending' when 'delivered' then 'confirmed' when 'refunded' then 'compensated' end
    when p_kind = 'bet_stake' and p_raw = 'unbet' then 'compensated'
    when p_kind = 'claim' then case p_raw when 'open' then 'pending' when 'claimed' then 'confirmed' when 'abandoned' then 'failed' end
    when p_raw = any (cage.intent_statuses()) then p_raw
  end
$$;

-- How long an open intent is left to its request before a reconciler takes it up (the default; a
-- reconciler may name its own, as the cash reconciler does from GAME_CALL_TIMEOUT_MS).
create or replace function cage.intent_grace(p_kind text) returns interval
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select case p_kind
    when 'gas_withdrawal' then interval '60 seconds'
    when 'claim' then interval '60 seconds'
    else interval '30 seconds'  -- the spec's payout repost; the cash and chain reconcilers' default period
  end
$$;

-- The wait before the next attempt after the n-th failure in a row: 1, 2, 4 ... seconds, at most 5 minutes.
create or replace function cage_private.intent_backoff(p_failures integer) returns interval
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select make_interval(secs => least(300, power(2, least(greatest(p_failures, 1) - 1, 16))))
$$;

drop view if exists cage.intents;
drop view if exists cage_private.intent_rows;

-- Every intent row in one shape (the owner's: cage.intents shows it to an operator, cage.due_intents
-- hands it to the reconcilers). `open`: a next step is left (the branch's plain predicate, the one its
-- table's partial index is on); `since`: when its current state began, what its deadline counts from.
create view cage_private.intent_rows as
  select 'cage_deposit'::text as kind, d.ref_id as intent_key, d.status as raw_status, d.amount, d.user_id, d.table_id,
         case when d.status = 'pending' then 'ask the game to cancel the credit; confirm or compensate' end as next_step,
         d.status = 'pending' as open, d.updated_at as since, d.error as row_error, case when d.status = 'failed' then d.updated_at end as row_failed_at, d.created_at
    from cage.deposit_intents d
  union all
  select 'cage_withdrawal', w.ledger_ref_id, case when w.settled_at is null then 'unsettled' else 'settled' end, w.amount, w.user_id, w.table_id,
         case when w.settled_at is null then 'deliver the settlement to the game' end,
         w.settled_at is null, w.created_at, null, null, w.created_at
    from cage.withdraw_intents w
  union all
  select 'cage_payout', p.table_id || ':' || p.position,
         case when p.confirmed_at is not null then 'confirmed' when p.failed_at is not null then 'failed'
              when p.submitted_at is not null then 'submitted' else 'pending' end,
         p.amount, p.user_id, p.table_id,
         case when p.confirmed_at is null then format('pay place %s through its bank (%s)', p.position, t.bank) end,
         p.confirmed_at is null, p.created_at, p.error, p.failed_at, p.created_at
    from cage.payout_intents p join game.tables t on t.table_id = p.table_id
  union all
  select 'gas_withdrawal', g.ref_id, g.status, g.chips, g.user_id, null, case when g.status = 'reserved' then 'refund to its tank unless delivered' end,
         g.status = 'reserved', g.created_at, g.error, null, g.created_at
    from cage.gas_withdrawals g
  union all
  select 'bet_stake', s.ref_id, s.status, s.amount, s.user_id, null,
         case when s.status = 'pending' then 'tell the betting service, or compensate' end,
         s.status = 'pending', s.updated_at, s.error, null, s.created_at
    from cage.bet_stakes s
  union all
  select 'chain_deposit', d.idempotency_key, d.status, d.amount, d.user_id, d.table_id,
         case when d.status in ('pending', 'submitted') then 'read its receipt (failed if the chain never took it)'
              when d.status = 'confirmed' and d.credited_at is null then 'credit the seat' end,
         d.status in ('pending', 'submitted') or (d.status = 'confirmed' and d.credited_at is null), d.updated_at, d.error, case when d.status = 'failed' then d.updated_at end, d.created_at
    from bank.deposit_intents d
  union all
  select 'chain_withdrawal', w.idempotency_key, w.status, w.amount, w.user_id, w.table_id,
         case when w.status in ('pending', 'submitted') then 'pay, or read its receipt'
              when w.status = 'confirmed' and w.settled_at is null then 'deliver the settlement to the game' end,
         w.status in ('pending', 'submitted') or (w.status = 'confirmed' and w.settled_at is null), w.updated_at, w.error, case when w.status = 'failed' then w.updated_at end, w.created_at
    from bank.withdraw_intents w
  union all
  select 'chain_tournament_payment', t.payment_key, t.status, t.amount, t.user_id, t.table_id,
         case when t.status <> 'confirmed' then format('pay the %s on chain', t.kind) end,
         t.status <> 'confirmed', t.updated_at, t.error, t.failed_at, t.created_at
    from bank.tournament_payments t
  union all
  select 'vault_refund', r.refund_key, r.status, (r.base_units / (cage.chip_units() ->> 'baseUnitsPerChip')::numeric)::bigint, null, null,
         case when r.status <> 'confirmed' then 'refund the deposit to the wallet it came from' end,
         r.status <> 'confirmed', r.updated_at, r.error, null, r.created_at
    from bank.vault_refunds r
  union all
  select 'claim', c.claim_id, c.status, c.amount, c.user_id, null,
         case when c.status = 'open' then 'an operator: its grant minted, its claim no longer due (the next claim of it takes it up)' end,
         c.status = 'open', c.opened_at, null, null, c.opened_at
    from claims.claim_intents c;

-- The operators' reading (the admin GraphQL's allIntents, `npm run ops -- intents`): every intent in
-- the one vocabulary with its next step, deadline and attempts; stuck_since and stuck_reason are the
-- failure of an open intent (the reconcilers' last failure in a row, else the row's own). An operator
-- only: a request without a live admin session reads no row.
create view cage.intents with (security_barrier) as
  select r.kind, r.intent_key, cage.intent_status(r.kind, r.raw_status) as status, r.raw_status,
         r.amount, r.user_id, r.table_id, r.next_step, r.open,
         r.since + cage.intent_grace(r.kind) as deadline,
         coalesce(a.attempts, 0) as attempts, a.last_attempt_at, a.next_attempt_at,
         case when not r.open then null when a.stuck_since is not null then a.stuck_since else r.row_failed_at end as stuck_since,
         case when not r.open then null when a.stuck_since is not null then a.last_error
              when r.row_failed_at is not null then r.row_error end as stuck_reason,
         r.created_at
    from cage_private.intent_rows r
    left join cage.intent_attempts a on a.kind = r.kind and a.intent_key = r.intent_key
   where (select auth.current_admin()) is not null;
comment on view cage.intents is 'Every pending money step as one intent (issue 32): kind, key, status in one vocabulary, next step, deadline, attempts, stuck since and why. Operators only.';

-- A reconciler's due intents of one kind: open, past their deadline (p_grace_seconds, else the kind's
-- default), and not backing off after a failure. Keys only: the step reads its own row.
create or replace function cage.due_intents(p_kind text, p_grace_seconds integer, p_limit integer)
  returns table (intent_key text, status text, attempts integer, table_id text)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select r.intent_key, cage.intent_status(r.kind, r.raw_status), coalesce(a.attempts, 0), r.table_id
    from cage_private.intent_rows r
    left join cage.intent_attempts a on a.kind = r.kind and a.intent_key = r.intent_key
   where r.kind = p_kind and r.open
     -- (greatest() skips a null: the kind's default is taken for a null grace explicitly)
     and r.since < now() - case when p_grace_seconds is null then cage.intent_grace(p_kind)
                                else make_interval(secs => greatest(p_grace_seconds, 0)) end
     and (a.next_attempt_at is null or a.next_attempt_at <= now())
   order by r.since
   limit least(greatest(coalesce(p_limit, 100), 1), 1000)
$$;

-- A reconciler's step on one intent, recorded: p_error null is a success (the failure cleared),
-- else the failure (its time, why, since when in a row, and the back-off before the next attempt).
-- Only an existing intent's; it moves no chip and decides nothing about one: it is what operators
-- read and when the reconciler tries again (at most 5 minutes on).
create or replace function cage.record_intent_attempt(p_kind text, p_key text, p_error text)
  returns table (attempts integer, stuck_since timestamptz, next_attempt_at timestamptz)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
  v_error text := left(nullif(btrim(p_error), ''), 300);
begin
  if not exists (select from cage_private.intent_rows r where r.kind = p_kind and r.intent_key = p_key) then
    perform cage_private.refuse('intent_not_found', format('no %s intent %s', p_kind, p_key));
  end if;
  return query
  insert into cage.intent_attempts as a (kind, intent_key, attempts, last_attempt_at, last_error, stuck_since, next_attempt_at)
  values (p_kind, p_key, 1, now(), v_error, case when v_error is not null then now() end,
          case when v_error is not null then now() + cage_private.intent_backoff(1) end)
  on conflict (kind, intent_key) do update
     set attempts = a.attempts + 1, last_attempt_at = now(), last_error = excluded.last_error,
         stuck_since = case when excluded.last_error is null then null else coalesce(a.stuck_since, now()) end,
         next_attempt_at = case when excluded.last_error is null then null
                                else now() + cage_private.intent_backoff(case when a.stuck_since is null then 1 else a.attempts + 1 end) end
  returning a.attempts, a.stuck_since, a.next_attempt_at;
end;
$$;
