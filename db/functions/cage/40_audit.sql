-- What a cash table's escrow owes (invariant 4), said once: the audit checks every table against it
-- and an escape (85_custody.sql) reads one table's books from it, under the escrow's lock.
--   owed_positions  the positions the escrow still owes: open (not closed) and not yet settled by
--                   the cage (a settled one's chips left the escrow with its settlement);
--   table_books     per cash table: their stacks, the deposits whose buy-in is posted but whose seat
--                   is not funded yet (nor reversed), the rake taken (reconciled or not: a
--                   reconciliation claims the house rows without moving chips), and `owed`, their
--                   sum. An escaped table's rake left with its escape (to the house, or into the
--                   hold with the rest of a divergent escrow), so it owes only its stacks (none,
--                   its positions closed) and deposits still in flight.
create or replace view cage_private.owed_positions as
  select p.id as player_id, p.table_id, p.user_id, p.seat_index, p.status, p.chip_balance, p.history_hash, p.chain_length
    from game.table_players p
   where p.status <> 'closed'
     and not exists (select from cage.withdraw_intents w where w.player_id = p.id);

create or replace view cage_private.table_books as
  select b.table_id, b.money_kind, b.live_stacks, b.in_flight, b.unreconciled_rake, b.reconciled_rake, b.escaped,
         b.live_stacks + b.in_flight + case when b.escaped then 0 else b.unreconciled_rake + b.reconciled_rake end as owed
    from (
      select t.table_id, t.money_kind, t.unreconciled_rake, t.reconciled_rake,
             (select coalesce(sum(p.chip_balance), 0) from cage_private.owed_positions p where p.table_id = t.table_id)::bigint as live_stacks,
             (select coalesce(sum(d.amount), 0) from cage.deposit_intents d
               where d.table_id = t.table_id and d.status = 'pending'
                 and not exists (select from game.seat_credits c where c.credit_key = d.ref_id and c.status = 'credited'))::bigint as in_flight,
             exists (select from cage.table_escapes e where e.table_id = t.table_id) as escaped
        from game.tables t
       where t.mode = 'cash' -- a tournament's money is its pool (7)
         and t.bank = 'cage' -- a chain-bank table's money is in its vault, on chain
    ) b;

-- The books of escapes and custody (issue 19), one row per violation, read by the audit in its
-- snapshot (a stable function sees the snapshot of the query that calls it):
--   - an escaped table is frozen, and its escape is the journal entry it names, of the operator act
--     that made it, whose custody entries are what it moved to custody;
--   - a hold needing reconciliation has been split into nothing yet; a reconciled hold's FREE
--     entries sum to its pool, and its reconciliation is an operator's recorded act; only a hold is
--     split;
--   - a DISPUTED entry has exactly one open dispute and a FREE one none; every dispute is an
--     operator's recorded act; a dispute is released exactly when its release is recorded;
--   - every custody entry comes from a forced withdrawal's settlement, an escape or a hold.
create or replace function cage_private.custody_violations()
  returns table (invariant text, subject text, detail jsonb)
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select 'table_escrow', 'escape:' || x.id,
         jsonb_build_object('table_id', x.table_id, 'status', t.status, 'to_custody', x.to_custody, 'custody_entries', coalesce(s.total, 0) / cage_private.base_units(),
                            'entry', e.id is not null, 'operator_act', a.id is not null,
                            'problem', 'an escape is a frozen table, its journal entry, its operator act and the custody entries it wrote')
    from cage.table_escapes x
    join game.tables t on t.table_id = x.table_id
    left join (select c.escape_id, sum(c.amount) as total from cage.custody_entries c where c.escape_id is not null group by c.escape_id) s
      on s.escape_id = x.id
    left join cage.cage_entries e on e.ref_id = x.ref_id and e.kind = 'table_escape'
    left join cage.operator_acts a on a.ref_id = x.ref_id and a.act = 'escape'
   where t.status <> 'frozen' or coalesce(s.total, 0) <> x.to_custody * cage_private.base_units() or e.id is null or a.id is null
  union all
  select 'provenance', 'entry:' || e.id,
         jsonb_build_object('ref_id', e.ref_id, 'kind', e.kind, 'problem', 'escape movement without its escape')
    from cage.cage_entries e
   where e.kind = 'table_escape' and not exists (select from cage.table_escapes x where x.ref_id = e.ref_id)
  union all
  select 'custody', 'hold:' || h.id,
         jsonb_build_object('status', h.status, 'pool', h.amount, 'split', coalesce(s.total, 0), 'entries', coalesce(s.n, 0),
                            'operator_act', exists (select from cage.operator_acts a where a.ref_id = 'custody-reconcile:' || h.id and a.act = 'custody_reconcile'),
                            'problem', 'a reconciled hold is split into FREE entries summing to its pool, by an operator''s act; an open one into nothing')
    from cage.custody_entries h
    left join (select c.hold_id, sum(c.amount) as total, count(*) as n from cage.custody_entries c where c.hold_id is not null group by c.hold_id) s
      on s.hold_id = h.id
   where h.user_id is null
     and case h.status
           when 'reconciled' then coalesce(s.total, 0) <> h.amount
                                  or not exists (select from cage.operator_acts a where a.ref_id = 'custody-reconcile:' || h.id and a.act = 'custody_reconcile')
           else coalesce(s.n, 0) > 0
         end
  union all
  select 'custody', 'custody_entry:' || c.id,
         jsonb_build_object('status', c.status, 'hold_id', c.hold_id, 'open_disputes', d.open,
                            'problem', case when c.hold_id is not null and not exists (select from cage.custody_entries h where h.id = c.hold_id and h.user_id is null)
                                            then 'split from something that is not a hold'
                                            else 'a DISPUTED entry has exactly one open dispute, any other none' end)
    from cage.custody_entries c
    cross join lateral (select count(*) as open from cage.custody_disputes d where d.entry_id = c.id and d.released_at is null) d
   where (c.status = 'disputed') <> (d.open = 1) or d.open > 1
      or (c.hold_id is not null and not exists (select from cage.custody_entries h where h.id = c.hold_id and h.user_id is null))
  union all
  select 'custody', 'dispute:' || d.id,
         jsonb_build_object('entry_id', d.entry_id, 'released_at', d.released_at,
                            'releases', (select count(*) from cage.custody_releases r where r.dispute_id = d.id),
                            'operator_act', exists (select from cage.operator_acts a where a.ref_id = 'custody-dispute:' || d.id and a.act = 'custody_dispute'),
                            'problem', 'a dispute is an operator''s act, released exactly when an arbiter''s release is recorded and verified')
    from cage.custody_disputes d
   where (d.released_at is not null) <> exists (select from cage.custody_releases r
                                                  join cage.custody_release_verdicts v on v.release_id = r.id and v.valid
                                                 where r.dispute_id = d.id and r.entry_id = d.entry_id)
      or not exists (select from cage.operator_acts a where a.ref_id = 'custody-dispute:' || d.id and a.act = 'custody_dispute')
  union all
  select 'provenance', 'custody_entry:' || c.id,
         jsonb_build_object('ref_id', c.ref_id, 'problem', 'custody entry without its settlement, escape or hold')
    from cage.custody_entries c
   where c.escape_id is null and c.hold_id is null
     and not exists (select from cage.withdraw_intents w where w.custody_entry_id = c.id and w.ledger_ref_id = c.source_ref_id)
$$;

-- What justifies each journal entry (invariant 6, provenance, and the entry side of 8 and 9), one row
-- per violation, for the entries with p_after < id <= p_upto and those named in p_also. The full audit
-- passes every entry; the periodic one (45_audit_checkpoint.sql) the entries since its checkpoint.
-- Stable: it reads the snapshot of the query that calls it. Planned for each call's bounds
-- (plan_cache_mode): the whole journal is a sequential scan, a minute of it a few index probes.
-- Long because: one short branch per kind of entry (what justifies it), all over the one scope of
-- entries and one snapshot; split into functions, each would scan that scope again.
create or replace function cage_private.entry_provenance(p_after bigint, p_upto bigint, p_also bigint[])
  returns table (invariant text, subject text, detail jsonb)
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_custom_plan
as $$
-- plpgsql, not sql: the body reads the claims domain's functions, which are created after this file
begin
  return query
  with scope as not materialized (
    -- two index ranges, not one OR (which no index serves: it would read the whole journal)
    select e.* from cage.cage_entries e where e.id > p_after and e.id <= p_upto
    union all
    select e.* from cage.cage_entries e where e.id = any (p_also) and not (e.id > p_after and e.id <= p_upto)
  )
  -- 6. provenance: every entry has the record of the step that justifies it.
  --    Chips from or to the outside world: the operator's purchase or redemption record.
  select 'provenance', 'entry:' || e.id,
         jsonb_build_object('ref_id', e.ref_id, 'kind', e.kind, 'problem', 'no operator record')
    from scope e
   where e.kind in ('purchase', 'redemption')
     and not exists (select from cage.operator_acts a where a.ref_id = e.ref_id and a.act = e.kind::text)
  union all
  --    An adjustment: a deposit's reversal, or an operator's correction (who and why).
  select 'provenance', 'entry:' || e.id,
         jsonb_build_object('ref_id', e.ref_id, 'kind', e.kind, 'problem', 'adjustment without a reversed deposit or a correction record')
    from scope e
   where e.kind = 'adjustment'
     and not exists (select from cage.deposit_intents d where d.reversal_ref_id = e.ref_id and d.status = 'failed')
     and not exists (select from cage.operator_acts a where a.ref_id = e.ref_id and a.act = 'correction')
  union all
  --    A grant: the claim intent that backed it (same claim id, user and amount), at once: a grant
  --    nothing backs is never completed into a claim, it is named here and left to an operator.
  select 'provenance', 'entry:' || e.id,
         jsonb_build_object('ref_id', e.ref_id, 'kind', e.kind, 'problem', 'grant without its claim intent')
    from scope e
   where e.kind = 'grant'
     and not exists (select from claims.claim_intents i
                      where i.claim_id = e.ref_id and i.user_id::text = e.memo ->> 'user_id' and i.amount = e.amounts[2])
     -- a test seed under the harness (cage.seed_test_chips) is backed by its record instead
     and not exists (select from cage.test_seeds s
                      where s.ref_id = e.ref_id and s.user_id::text = e.memo ->> 'user_id' and s.amount = e.amounts[2])
  union all
  --    ... and its claim-ledger row (same claim id, user and amount): written in the grant's own
  --    transaction since issue 33 (claims.credit_claim); judged past claims_private.claim_report_after.
  select 'provenance', 'entry:' || e.id,
         jsonb_build_object('ref_id', e.ref_id, 'kind', e.kind, 'problem', 'grant without its claim')
    from scope e
   where e.kind = 'grant' and e.created_at < now() - claims_private.claim_report_after()
     and exists (select from claims.claim_intents i
                  where i.claim_id = e.ref_id and i.user_id::text = e.memo ->> 'user_id' and i.amount = e.amounts[2])
     and not exists (select from claims.claim_ledger l
                      where l.claim_id = e.ref_id and l.user_id::text = e.memo ->> 'user_id' and l.amount = e.amounts[2])
  union all
  --    A buy-in: its deposit; a cash-out or bust: its settlement.
  select 'provenance', 'entry:' || e.id,
         jsonb_build_object('ref_id', e.ref_id, 'kind', e.kind, 'problem', 'table movement without its deposit or settlement')
    from scope e
   where (e.kind = 'table_buy_in' and not exists (select from cage.deposit_intents d where d.ref_id = e.ref_id))
      or (e.kind in ('table_cash_out', 'bust_close') and not exists (select from cage.withdraw_intents w where w.ledger_ref_id = e.ref_id))
  union all
  select 'provenance', 'entry:' || e.id,
         jsonb_build_object('ref_id', e.ref_id, 'kind', e.kind, 'problem', 'custody claim without its receipt')
    from scope e
   where e.kind = 'custody_claim' and not exists (select from cage.receipts r where r.ledger_ref_id = e.ref_id)
  union all
  --    Tournament money: an entry has its deposit and its paid entry, a refund its closed entry,
  --    a payout its confirmed payout intent.
  select 'provenance', 'entry:' || e.id,
         jsonb_build_object('ref_id', e.ref_id, 'kind', e.kind, 'problem', 'tournament movement without its registration or payout')
    from scope e
   where (e.kind = 'tournament_entry' and not exists (select from cage.deposit_intents d join game.table_players p on p.entry_ref_id = d.ref_id
                                                      where d.ref_id = e.ref_id and d.status = 'confirmed'))
      or (e.kind = 'tournament_refund' and not exists (select from game.table_players p where p.closing_ref_id = e.ref_id and p.status = 'closed'))
      or (e.kind = 'tournament_payout' and not exists (select from cage.payout_intents i where i.ref_id = e.ref_id and i.confirmed_at is not null))
  union all
  --    8d. provenance: a stake debit has its stake row, a refund the stake it compensated or
  --        returned, a payout its recorded payout (same market, user and amount)
  select 'provenance', 'entry:' || e.id,
         jsonb_build_object('ref_id', e.ref_id, 'kind', e.kind, 'problem', 'betting movement without its stake or payout')
    from scope e
   where (e.kind = 'bet_stake' and not exists (select from cage.bet_stakes s where s.ref_id = e.ref_id and s.amount = e.amounts[2]
                                                and s.user_id::text = e.memo ->> 'user_id'))
      or (e.kind = 'bet_refund' and not exists (select from cage.bet_stakes s where s.refund_ref_id = e.ref_id and s.amount = e.amounts[2]))
      or (e.kind = 'bet_payout' and not exists (select from betting.payouts p where p.market_id = e.memo ->> 'market_id'
                                                 and p.user_id::text = e.memo ->> 'user_id' and p.amount = e.amounts[2]
                                                 and e.ref_id = cage.bet_claim_ref(p.market_id, p.user_id)))
  union all
  --    every gas movement is the user's own deposit, or a step of its withdrawal's row: a reserve for
  --    every withdrawal, then a delivery or a refund as its status says, of its chips
  select 'gas_tank', 'entry:' || e.id,
         jsonb_build_object('ref_id', e.ref_id, 'kind', e.kind, 'problem', 'gas movement without its request')
    from scope e
   where (e.kind = 'gas_deposit' and not (e.ref_id like 'gas-deposit:%' and cardinality(e.accounts) = 2
            and exists (select from cage.cage_accounts a where a.id = e.accounts[1] and a.account_type = 'user'
                          and a.user_id::text = e.memo ->> 'user_id')
            and exists (select from cage.cage_accounts a where a.id = e.accounts[2] and a.account_type = 'gas_tank'
                          and a.scope = e.memo ->> 'user_id')))
      or (e.kind = 'gas_withdraw' and not exists (
            select from cage.gas_withdrawals w
             where e.ref_id in (w.ref_id || ':reserve', w.ref_id || ':deliver', w.ref_id || ':refund')
               and e.amounts = array[-w.chips, w.chips] and e.money_kind = w.money_kind
               and (e.ref_id = w.ref_id || ':reserve'
                    or (e.ref_id = w.ref_id || ':deliver' and w.status = 'delivered')
                    or (e.ref_id = w.ref_id || ':refund' and w.status = 'refunded'))));
end;
$$;

-- The books of the other domains against the cage's accounts and records (invariants 4, 4b-4d, 7, 8
-- and 9, and the record side of 5 and 6), one row per violation. These read the current records
-- (tables, seats, intents, stakes, holds), not the journal's history, except what they sum of one
-- movement kind (bet payouts, escapes), read through cage_entries_audited_kinds_idx. Stable: it
-- reads the snapshot of the query that calls it.
-- Long because: each domain's book is one short branch of one query (one snapshot, one list of
-- violations); splitting the branches into functions would only move them.
create or replace function cage_private.audit_books()
  returns table (invariant text, subject text, detail jsonb)
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
-- plpgsql, not sql: the body reads the claims domain's functions, which are created after this file
begin
  return query
  -- 4. a table's escrow equals what the table owes (cage_private.table_books): the stacks of its
  --    open positions not yet settled by the cage, plus the deposits whose buy-in is posted but
  --    whose seat is not funded yet (nor reversed), plus the rake taken (reconciled or not) unless
  --    an escape took it. An escrow with no table must be empty.
  select 'table_escrow', 'table:' || coalesce(a.scope, g.table_id) || ':' || coalesce(a.money_kind, g.money_kind),
         jsonb_build_object('escrow', coalesce(a.balance, 0), 'live_stacks', coalesce(g.live_stacks, 0),
                            'in_flight_deposits', coalesce(g.in_flight, 0), 'unreconciled_rake', coalesce(g.unreconciled_rake, 0),
                            'reconciled_rake', coalesce(g.reconciled_rake, 0))
           || case when g.escaped then jsonb_build_object('escaped', true) else '{}'::jsonb end
    from (select * from cage.cage_accounts where account_type = 'table_escrow') a
    full join cage_private.table_books g on g.table_id = a.scope and g.money_kind = a.money_kind
   where coalesce(a.balance, 0) <> coalesce(g.owed, 0)
  union all
  -- 4c. a table's rake terms are its house rows: the unreconciled rake is the sum of the unclaimed
  --     rows, the reconciled rake the sum of its reconciliations, each the sum of the rows it claimed
  select 'rake_books', 'table:' || t.table_id,
         jsonb_build_object('unreconciled_rake', t.unreconciled_rake, 'unclaimed_rows', coalesce(u.total, 0),
                            'reconciled_rake', t.reconciled_rake, 'reconciliations', coalesce(c.total, 0),
                            'claimed_rows', coalesce(k.total, 0))
    from game.tables t
    left join (select r.table_id, sum(r.amount) as total from game.rake_rows r where r.reconciliation_id is null group by r.table_id) u
      on u.table_id = t.table_id
    left join (select r.table_id, sum(r.amount) as total from cage.rake_reconciliations r group by r.table_id) c
      on c.table_id = t.table_id
    left join (select r.table_id, sum(r.amount) as total from game.rake_rows r where r.reconciliation_id is not null group by r.table_id) k
      on k.table_id = t.table_id
   where t.unreconciled_rake <> coalesce(u.total, 0) or t.reconciled_rake <> coalesce(c.total, 0)
      or coalesce(c.total, 0) <> coalesce(k.total, 0)
  union all
  -- 4b. the custody account holds exactly what custody owes (base units / 10^6): the FREE and
  --     DISPUTED entries and the holds needing reconciliation (a reconciled hold is its FREE
  --     entries now; a claimed entry left with its claim)
  select 'custody', 'custody:' || coalesce(a.money_kind, c.money_kind),
         jsonb_build_object('account', coalesce(a.balance, 0), 'entries', coalesce(c.chips, 0))
    from (select * from cage.cage_accounts where account_type = 'custody') a
    full join (select e.money_kind, sum(e.amount / cage_private.base_units()) as chips from cage.custody_entries e
                where e.status in ('free', 'disputed', 'needs_reconciliation') group by e.money_kind) c on c.money_kind = a.money_kind
   where coalesce(a.balance, 0) <> coalesce(c.chips, 0)
  union all
  -- 4d. escapes, holds, disputes and releases (cage_private.custody_violations, above)
  select * from cage_private.custody_violations()
  union all
  select 'replay_once', 'receipt:' || r.id,
         jsonb_build_object('ledger_ref_id', r.ledger_ref_id, 'problem', 'receipt without its ledger entry')
    from cage.receipts r
   where not exists (select from cage.cage_entries e where e.ref_id = r.ledger_ref_id)
  union all
  --    A claim that paid: its grant (same claim id, user and amount).
  select 'provenance', 'claim:' || l.claim_id,
         jsonb_build_object('user_id', l.user_id, 'section_key', l.section_key, 'amount', l.amount, 'problem', 'claim without its grant')
    from claims.claim_ledger l
   where l.amount > 0
     and not exists (select from cage.cage_entries e
                      where e.ref_id = l.claim_id and e.kind = 'grant' and e.memo ->> 'user_id' = l.user_id::text and e.amounts[2] = l.amount)
  union all
  --    A seat credit the game holds: its deposit (same key, user, table and amount): the cage's, or
  --    on a chain-bank table the chain bank's confirmed one (the chain's receipt behind it)
  select 'provenance', 'credit:' || c.credit_key,
         jsonb_build_object('table_id', c.table_id, 'user_id', c.user_id, 'amount', c.amount, 'problem', 'seat credit without its deposit')
    from game.seat_credits c
   where c.status <> 'cancelled'
     and not exists (select from cage.deposit_intents d
                      where d.ref_id = c.credit_key and d.user_id = c.user_id and d.table_id = c.table_id and d.amount = c.amount)
     and not exists (select from bank.deposit_intents d join game.tables t on t.table_id = d.table_id and t.bank = 'chain'
                      where d.idempotency_key = c.credit_key and d.status = 'confirmed' and d.user_id = c.user_id
                        and d.table_id = c.table_id and d.amount = c.amount)
  union all
  --    A settlement: its ledger entry and exactly one receipt, signed in its transaction; a custody
  --    claim: its receipt. A bust (written in its hand's end, 62_busts.sql) is signed afterwards by
  --    the cage: its receipt may be pending for cage_private.bust_receipt_lag(), and is named after.
  select 'provenance', 'settlement:' || w.ledger_ref_id,
         jsonb_build_object('player_id', w.player_id, 'receipts', x.receipts,
                            'entry', exists (select from cage.cage_entries e where e.ref_id = w.ledger_ref_id),
                            'problem', case when x.receipts = 0 and w.settlement = 'bust' then 'bust receipt unsigned past its lag'
                                            else 'settlement without its entry or its one receipt' end)
    from cage.withdraw_intents w
   cross join lateral (select count(*) as receipts from cage.receipts r where r.ledger_ref_id = w.ledger_ref_id) x
   where (x.receipts <> 1 and not (x.receipts = 0 and w.settlement = 'bust' and w.created_at > now() - cage_private.bust_receipt_lag()))
      or not exists (select from cage.cage_entries e where e.ref_id = w.ledger_ref_id)
  union all
  -- 7. a tournament's pool: it moves only by entries, refunds and payouts, and holds what the
  --    tournament owes: the open entry claims, the payouts not yet paid and, once settlement began,
  --    the house fee (rakeFee x seats, never moved: a closed pool holds exactly it).
  select 'tournament_pool', 'table:' || t.table_id,
         jsonb_build_object('state', t.tournament_state, 'pool', coalesce(a.balance, 0), 'entry_claims', g.claims,
                            'unpaid_payouts', g.unpaid, 'house_fee', g.fee, 'other_movements', g.other)
    from game.tables t
    left join cage.cage_accounts a on a.account_type = 'tournament_pool' and a.scope = t.table_id and a.money_kind = t.money_kind
    cross join lateral (
      select (select coalesce(sum(p.chip_balance), 0) from game.table_players p where p.table_id = t.table_id and p.status <> 'closed') as claims,
             (select coalesce(sum(i.amount), 0) from cage.payout_intents i where i.table_id = t.table_id and i.confirmed_at is null) as unpaid,
             case when t.tournament_state in ('settling', 'closed')
                  then coalesce(game_private.setting_bigint(t.settings, 'rakeFee'), 0) * game_private.setting_bigint(t.settings, 'seats')
                  else 0 end as fee,
             (select count(*) from cage.cage_ledger l where l.account_id = a.id
               and l.kind not in ('tournament_entry', 'tournament_refund', 'tournament_payout')) as other
    ) g
   where t.mode = 'sng'
     and t.bank = 'cage' -- a chain-bank tournament's money is in its vault, on chain
     and (coalesce(a.balance, 0) <> g.claims + g.unpaid + g.fee or g.other > 0)
  union all
  --    tournament chips are conserved while it plays: startingStack for every entry
  select 'tournament_chips', 'table:' || t.table_id,
         jsonb_build_object('stacks', s.total, 'expected', game_private.setting_bigint(t.settings, 'startingStack') * s.entries)
    from game.tables t
    cross join lateral (select coalesce(sum(p.tournament_stack), 0) as total, count(*) as entries
                          from game.table_players p where p.table_id = t.table_id and p.status <> 'closed' and p.entry_state = 'paid') s
   where t.mode = 'sng' and t.tournament_state in ('playing', 'ended')
     and s.total <> game_private.setting_bigint(t.settings, 'startingStack') * s.entries
  union all
  --    a pool with no tournament table must be empty
  select 'tournament_pool', 'account:' || a.id, jsonb_build_object('pool', a.balance, 'problem', 'pool without its tournament')
    from cage.cage_accounts a
   where a.account_type = 'tournament_pool' and a.balance <> 0
     and not exists (select from game.tables t where t.table_id = a.scope and t.mode = 'sng' and t.money_kind = a.money_kind)
  union all
  -- 8. betting (issue 19; db/functions/cage/86_betting.sql, db/functions/betting/).
  --    8a. per money kind, the cage's betting account holds the stakes held (pending or confirmed)
  --        minus the payouts claimed; compensations and unbets were credited back and hold nothing
  select 'betting', 'betting:' || k.money_kind,
         jsonb_build_object('account', coalesce(a.balance, 0), 'stakes_held', k.held, 'payouts', k.paid)
    from (select m.money_kind,
                 (select coalesce(sum(s.amount), 0) from cage.bet_stakes s where s.money_kind = m.money_kind and s.status in ('pending', 'confirmed')) as held,
                 (select coalesce(sum(e.amounts[2]), 0) from cage.cage_entries e where e.kind = 'bet_payout' and e.money_kind = m.money_kind) as paid
            from (select unnest(enum_range(null::cage.money_kind)) as money_kind) m) k
    left join cage.cage_accounts a on a.account_type = 'betting' and a.money_kind = k.money_kind
   where coalesce(a.balance, 0) <> k.held - k.paid
  union all
  --    8b. the cage's stakes agree with the betting schema's bets (same user, market, runner and
  --        amount), at every instant (issue 32: a stake, an unbet are one transaction across the two
  --        schemas): a confirmed stake has its bet in the pool, an unbet stake its removed bet, a
  --        compensated one (before issue 32) none; a pending stake is a stake half-written
  select 'betting', 'stake:' || s.ref_id,
         jsonb_build_object('status', s.status, 'bet', b.status, 'problem', 'stake and bet disagree')
    from cage.bet_stakes s
    left join betting.bets b on b.stake_ref = s.ref_id
   where not coalesce(
          (s.status = 'confirmed' and b.status = 'active')
       or (s.status = 'unbet' and b.status = 'unbet')
       or (s.status = 'compensated' and b.stake_ref is null), false)
      or (b.stake_ref is not null and (b.user_id <> s.user_id or b.market_id <> s.market_id
                                       or b.runner_user_id <> s.runner_user_id or b.amount <> s.amount))
  union all
  --    8c. a market pays out no more than its pool (its bets still in it), and every payout claimed
  --        is the amount the betting service recorded for that bettor
  select 'betting', 'market:' || m.market_id,
         jsonb_build_object('pool', g.pool, 'paid', g.paid, 'recorded', g.recorded)
    from betting.markets m
    cross join lateral (
      select (select coalesce(sum(b.amount), 0) from betting.bets b where b.market_id = m.market_id and b.status = 'active') as pool,
             (select coalesce(sum(e.amounts[2]), 0) from cage.cage_entries e where e.kind = 'bet_payout' and e.memo ->> 'market_id' = m.market_id) as paid,
             (select coalesce(sum(p.amount), 0) from betting.payouts p where p.market_id = m.market_id) as recorded
    ) g
   where g.paid > g.pool or g.recorded > g.pool
  union all
  -- 9. gas tanks (000028). The outbound account holds exactly the reserved withdrawals.
  select 'gas_tank', 'outbound:' || coalesce(a.money_kind, r.money_kind),
         jsonb_build_object('outbound', coalesce(a.balance, 0), 'reserved', coalesce(r.chips, 0))
    from (select * from cage.cage_accounts where account_type = 'gas_tank' and scope = 'outbound') a
    full join (select w.money_kind, sum(w.chips) as chips from cage.gas_withdrawals w where w.status = 'reserved' group by w.money_kind) r
      on r.money_kind = a.money_kind
   where coalesce(a.balance, 0) <> coalesce(r.chips, 0)
  union all
  select 'gas_tank', 'withdrawal:' || w.ref_id,
         jsonb_build_object('status', w.status, 'problem', 'withdrawal steps missing')
    from cage.gas_withdrawals w
   where not exists (select from cage.cage_entries e where e.ref_id = w.ref_id || ':reserve')
      or (w.status = 'delivered' and not exists (select from cage.cage_entries e where e.ref_id = w.ref_id || ':deliver'))
      or (w.status = 'refunded' and not exists (select from cage.cage_entries e where e.ref_id = w.ref_id || ':refund'));
end;
$$;

-- The invariants of the cage (five of balance, and provenance) (docs: ARCHITECTURE.md, "The cage"). Every violation is one row;
-- an empty result means the books hold. One query, so one snapshot: callers run it in a
-- REPEATABLE READ READ ONLY transaction (audit() in server/cage/ledger.ts) and it blocks no writer.
-- This is the full audit: it reads the whole journal, so its cost grows with it (an operator's, on
-- demand); the worker's periodic audit reads only what was written since its checkpoint
-- (cage.audit_since_checkpoint, 45_audit_checkpoint.sql) and reports violations in the same rows.
create or replace function cage.audit()
  returns table (invariant text, subject text, detail jsonb)
  language plpgsql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
-- plpgsql, not sql: the body reads the claims domain's functions, which are created after this file
begin
  return query
  with sums as (
    select l.account_id, sum(l.amount) as total, count(*) as n
      from cage.cage_ledger l
     group by l.account_id
  ),
  entry_sums as (
    select l.entry_id, sum(l.amount) as total, count(*) as n,
           count(*) filter (where l.money_kind <> e.money_kind or l.kind <> e.kind or l.ref_id <> e.ref_id) as mismatched
      from cage.cage_ledger l
      join cage.cage_entries e on e.id = l.entry_id
     group by l.entry_id
  )
  -- 1. per account: the projection equals the journal (balance = sum of postings, version = count)
  select 'account_balance', 'account:' || a.id,
         jsonb_build_object('balance', a.balance, 'journal', coalesce(s.total, 0),
                            'version', a.version, 'postings', coalesce(s.n, 0))
    from cage.cage_accounts a
    left join sums s on s.account_id = a.id
   where a.bounded and (a.balance <> coalesce(s.total, 0) or a.version <> coalesce(s.n, 0))
  union all
  -- postings must land on existing accounts of their money kind
  select 'account_balance', 'posting:' || l.id,
         jsonb_build_object('account', l.account_id, 'money_kind', l.money_kind, 'problem', 'no such account of this money kind')
    from cage.cage_ledger l
   where not exists (select from cage.cage_accounts a where a.id = l.account_id and a.money_kind = l.money_kind)
  union all
  -- 2. per transaction: postings sum to zero and match the entry's legs exactly
  select 'transaction_balance', 'entry:' || e.id,
         jsonb_build_object('ref_id', e.ref_id, 'sum', coalesce(es.total, 0), 'postings', coalesce(es.n, 0),
                            'legs', cardinality(e.accounts), 'mismatched', coalesce(es.mismatched, 0))
    from cage.cage_entries e
    left join entry_sums es on es.entry_id = e.id
   where coalesce(es.total, 0) <> 0
      or coalesce(es.n, 0) <> cardinality(e.accounts)
      or coalesce(es.mismatched, 0) > 0
      or (select sum(x) from unnest(e.amounts) x) <> 0
  union all
  select 'transaction_balance', 'posting:' || l.id,
         jsonb_build_object('entry', l.entry_id, 'problem', 'posting without its entry')
    from cage.cage_ledger l
   where not exists (select from cage.cage_entries e where e.id = l.entry_id)
  union all
  select 'transaction_balance', 'money_kind:' || l.money_kind,
         jsonb_build_object('sum', sum(l.amount))
    from cage.cage_ledger l
   group by l.money_kind
  having sum(l.amount) <> 0
  union all
  -- 3. no bounded balance below zero, in the projection or in the journal
  select 'non_negative', 'account:' || a.id,
         jsonb_build_object('balance', a.balance, 'journal', coalesce(s.total, 0), 'account_type', a.account_type)
    from cage.cage_accounts a
    left join sums s on s.account_id = a.id
   where a.bounded and (a.balance < 0 or coalesce(s.total, 0) < 0)
  union all
  -- 5. replay-once: a ref_id has one entry (the unique index) and that entry's postings only
  select 'replay_once', 'ref_id:' || l.ref_id,
         jsonb_build_object('entries', count(distinct l.entry_id))
    from cage.cage_ledger l
   group by l.ref_id
  having count(distinct l.entry_id) > 1
  union all
  -- 6. provenance, and the entry side of 8 and 9 (cage_private.entry_provenance, above)
  select * from cage_private.entry_provenance(0, 9223372036854775807, '{}')
  union all
  -- 4, 4b-4d, 7, 8, 9 and the record side of 5 and 6 (cage_private.audit_books, above)
  select * from cage_private.audit_books();
end;
$$;

-- Rebuilds the projection of bounded accounts from the journal (the journal wins) and returns the
-- accounts it repaired. Takes the accounts table in EXCLUSIVE mode: readers go on, posters wait.
create or replace function cage.rebuild_projection()
  returns table (account_id bigint, old_balance bigint, new_balance bigint, old_version bigint, new_version bigint)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  lock table cage.cage_accounts in exclusive mode;
  return query
  with journal as (
    select a.id, a.balance, a.version,
           coalesce((select sum(l.amount) from cage.cage_ledger l where l.account_id = a.id), 0)::bigint as total,
           (select count(*) from cage.cage_ledger l where l.account_id = a.id) as n
      from cage.cage_accounts a
     where a.bounded
  ),
  fixed as (
    update cage.cage_accounts a
       set balance = j.total, version = j.n
      from journal j
     where a.id = j.id and (a.balance <> j.total or a.version <> j.n)
    returning a.id, j.balance as old_balance, a.balance as new_balance, j.version as old_version, a.version as new_version
  )
  select * from fixed order by 1;
end;
$$;
