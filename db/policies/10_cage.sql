-- The cage: only the cage role may post, and only through the functions. Tables are never written
-- directly by any service role; the admin reads through row-level security; nobody else sees a row.
revoke all on schema cage, cage_private from public;
revoke all on all tables in schema cage, cage_private from public;
revoke all on all functions in schema cage, cage_private from public;
revoke all on all tables in schema cage, cage_private from poker_cage, poker_auth, poker_game, poker_worker, poker_admin, poker_anonymous;
revoke all on all functions in schema cage, cage_private from poker_cage, poker_auth, poker_game, poker_worker, poker_admin, poker_anonymous;
alter default privileges in schema cage, cage_private revoke execute on functions from public;

grant usage on schema cage to poker_cage, poker_worker, poker_admin, poker_anonymous;

-- cage service: reads its books, writes only through the named business functions. Never the
-- generic posting (post_movement, post_movements, ensure_account) or the projection rebuild: those
-- run inside the business functions (as their owner) or by the operator's own login.
grant select on cage.cage_accounts, cage.cage_entries, cage.cage_ledger, cage.receipts, cage.account_balances,
  cage.deposit_intents, cage.withdraw_intents, cage.custody_entries, cage.rake_reconciliations,
  cage.operator_acts, cage.manual_corrections, cage.table_escapes, cage.custody_disputes, cage.custody_releases
  to poker_cage;
-- a deposit as it stands (60_cash.sql): the read of GET /api/deposits/:key
grant select on cage.deposit_states to poker_cage;
grant execute on function
  cage.audit(),
  cage.open_deposit(uuid, text, text, integer, bigint),
  cage.deposit_to_seat(uuid, text, text, integer, bigint),
  cage.confirm_deposit(text),
  cage.fail_deposit(text, text),
  cage.settle_position(uuid, text, bigint, bigint, text, text, text, boolean),
  cage.mark_withdrawal_settled(text),
  cage.grant_play_chips(text, bigint, text, text, text),
  cage.exchange_chips(text, uuid, bigint, text, text, uuid),
  cage.correct_books(uuid, text, text, bigint[], bigint[], text),
  cage.set_switch(uuid, text, boolean),
  cage.switch_states(),
  cage.claim_custody(uuid, bigint),
  cage.store_receipt(text, text, text, bytea, bytea, bytea),
  cage.reconcile_rake(text),
  cage.tables_with_unreconciled_rake(),
  cage.unsettled_stand_ups(integer, integer),
  cage.unsigned_bust_receipts(integer),
  cage.gas_deposit(uuid, text, bigint, text),
  cage.reserve_gas_withdrawal(uuid, text, bigint, text),
  cage.deliver_gas_withdrawal(text),
  cage.refund_gas_withdrawal(text, text),
  cage.play_gate_state(),
  cage.seed_test_chips(uuid, text, bigint)
  to poker_cage;
grant select on cage.gas_withdrawals, cage.play_gate_accounts, cage.gate_events, cage.deployment to poker_cage;
-- ... and the refs its routes look up or answer with (db/functions/00_refs.sql: pure formatting)
grant execute on function cage.deposit_ref(uuid, text), cage.tournament_refund_ref(text) to poker_cage;
-- ... and the bank contract's withdraw replay window (db/functions/00_bank_contract.sql: a constant)
grant execute on function cage.withdraw_replay_window() to poker_cage;
-- ... and the escape and custody paths (85_custody.sql): the operator's acts take their live admin
-- session; the release, the dispute it ends (the arbiter's signature is checked by the cage process)
grant execute on function
  cage.escape_table(uuid, text, text),
  cage.custody_holdings(uuid, text[], text, uuid, bigint, integer),
  cage.reconcile_custody_hold(uuid, bigint, text, jsonb, text),
  cage.dispute_custody(uuid, bigint, text),
  cage.custody_release_message(bigint, bigint),
  cage.release_custody(bigint, bigint, text, bytea, bytea)
  to poker_cage;

-- worker: runs the periodic audit (read-only) and the cash reconcilers (deposits left pending by
-- a cage that stopped mid-request; settled withdrawals the game has not zeroed yet)
grant execute on function cage.audit() to poker_worker;
-- ... and the periodic audit, which reads what changed since its checkpoint and moves it (45_audit_checkpoint.sql)
grant execute on function cage.audit_since_checkpoint() to poker_worker;
-- ... with the audit of causes (47_cause_audit.sql; server/audit/): what is new since its marks, the
-- dealer's pinned keys, and the run's end (which moves the marks when clean); its liveness
grant execute on function cage.cause_audit_hands(boolean, integer), cage.cause_audit_links(boolean, integer), cage.cause_audit_tournaments(boolean),
  cage.audit_dealer_keys(), cage.cause_audit_finish(boolean, integer, jsonb, jsonb, integer, integer), cage.audit_liveness()
  to poker_worker;
grant select on cage.deposit_intents, cage.withdraw_intents to poker_worker;
grant execute on function cage.confirm_deposit(text), cage.fail_deposit(text, text), cage.mark_withdrawal_settled(text)
  to poker_worker;
-- ... and lists stand-ups whose answer was lost; the cage itself settles them (it writes and signs
-- settlements: the worker asks it over HTTP, POST /settlement/reconcile-stand-ups)
grant execute on function cage.unsettled_stand_ups(integer, integer) to poker_worker;
-- the busts whose receipt the cage has yet to sign: the job asks the cage only when there are some
grant execute on function cage.unsigned_bust_receipts(integer) to poker_worker;
-- ... and the rake reconciler (claims house rows; moves no chip)
grant execute on function cage.reconcile_rake(text), cage.tables_with_unreconciled_rake() to poker_worker;
-- ... and the gas reconciler: reservations a stopped cage never delivered go back to their tanks
grant execute on function cage.refund_gas_withdrawal(text, text) to poker_worker;

-- admin GraphQL: reads the books under RLS. The anonymous role is granted the same SELECT so that
-- row-level security, not a missing grant, is what shows it nothing.
grant select on cage.cage_accounts, cage.cage_entries, cage.cage_ledger, cage.receipts, cage.account_balances,
  cage.deposit_intents, cage.withdraw_intents, cage.custody_entries, cage.rake_reconciliations,
  cage.operator_acts, cage.manual_corrections, cage.switches, cage.table_escapes, cage.custody_disputes, cage.custody_releases
  to poker_admin, poker_anonymous;
grant execute on function cage.audit() to poker_admin;
-- an operator's audit (npm run ops -- audit: the admin role's GET /api/audit) runs the same checks,
-- reading from the marks (or from the start) and moving none; /health shows the liveness
grant execute on function cage.cause_audit_hands(boolean, integer), cage.cause_audit_links(boolean, integer), cage.cause_audit_tournaments(boolean),
  cage.audit_dealer_keys(), cage.audit_liveness() to poker_admin;

drop policy if exists cage_accounts_read on cage.cage_accounts;
create policy cage_accounts_read on cage.cage_accounts for select to poker_cage, poker_admin using (true);
drop policy if exists cage_entries_read on cage.cage_entries;
create policy cage_entries_read on cage.cage_entries for select to poker_cage, poker_admin using (true);
drop policy if exists cage_ledger_read on cage.cage_ledger;
create policy cage_ledger_read on cage.cage_ledger for select to poker_cage, poker_admin using (true);
drop policy if exists deposit_intents_read on cage.deposit_intents;
create policy deposit_intents_read on cage.deposit_intents for select to poker_cage, poker_worker, poker_admin using (true);
drop policy if exists withdraw_intents_read on cage.withdraw_intents;
create policy withdraw_intents_read on cage.withdraw_intents for select to poker_cage, poker_worker, poker_admin using (true);
drop policy if exists custody_entries_read on cage.custody_entries;
create policy custody_entries_read on cage.custody_entries for select to poker_cage, poker_admin using (true);
drop policy if exists receipts_read on cage.receipts;
create policy receipts_read on cage.receipts for select to poker_cage, poker_admin using (true);
drop policy if exists rake_reconciliations_read on cage.rake_reconciliations;
create policy rake_reconciliations_read on cage.rake_reconciliations for select to poker_cage, poker_admin using (true);
drop policy if exists operator_acts_read on cage.operator_acts;
create policy operator_acts_read on cage.operator_acts for select to poker_cage, poker_admin using (true);
drop policy if exists switches_read on cage.switches;
create policy switches_read on cage.switches for select to poker_admin using (true);

-- gas withdrawals and the play-chip transfer gate (000028): the cage reads them; the admin through RLS
grant select on cage.gas_withdrawals, cage.play_gate_accounts, cage.gate_events, cage.deployment to poker_admin, poker_anonymous;
drop policy if exists gas_withdrawals_read on cage.gas_withdrawals;
create policy gas_withdrawals_read on cage.gas_withdrawals for select to poker_cage, poker_admin using (true);
drop policy if exists play_gate_accounts_read on cage.play_gate_accounts;
create policy play_gate_accounts_read on cage.play_gate_accounts for select to poker_cage, poker_admin using (true);
drop policy if exists gate_events_read on cage.gate_events;
create policy gate_events_read on cage.gate_events for select to poker_cage, poker_admin using (true);
drop policy if exists deployment_read on cage.deployment;
create policy deployment_read on cage.deployment for select to poker_cage, poker_admin using (true);

-- test seeds (000029): read by the cage and the admin
grant select on cage.test_seeds to poker_cage, poker_admin, poker_anonymous;
drop policy if exists test_seeds_read on cage.test_seeds;
create policy test_seeds_read on cage.test_seeds for select to poker_cage, poker_admin using (true);
drop policy if exists table_escapes_read on cage.table_escapes;
create policy table_escapes_read on cage.table_escapes for select to poker_cage, poker_admin using (true);
drop policy if exists custody_disputes_read on cage.custody_disputes;
create policy custody_disputes_read on cage.custody_disputes for select to poker_cage, poker_admin using (true);
drop policy if exists custody_releases_read on cage.custody_releases;
create policy custody_releases_read on cage.custody_releases for select to poker_cage, poker_worker, poker_admin using (true);
-- the worker's audit job checks every recorded release against the arbiter's key (SQL cannot verify
-- ed25519: a stolen cage login could record a release with any bytes; the job names it)
grant select on cage.custody_releases to poker_worker;

-- Keys (000039, 55_keys.sql): the pinned public keys are public; the operators pin and retire them
-- through the cage (a live admin session); the worker verifies each custody release (the cage
-- records it, pending) and gives the verdict that frees the entry, and checks every receipt
-- the audit's checks read the pins: the worker's periodic job and an operator's ops audit (poker_admin)
grant execute on function cage.pinned_keys(text) to poker_cage, poker_worker, poker_admin;
grant execute on function cage.pin_key(uuid, text, bytea), cage.retire_key(uuid, text, bytea) to poker_cage;
grant execute on function cage.verify_custody_release(bigint, boolean) to poker_worker;
grant select on cage.custody_release_verdicts to poker_cage, poker_worker, poker_admin;
drop policy if exists custody_release_verdicts_read on cage.custody_release_verdicts;
-- poker_admin's share of this policy becomes an admin-session one (90_admin_reads.sql): ops audit's checks
create policy custody_release_verdicts_read on cage.custody_release_verdicts for select to poker_cage, poker_worker, poker_admin using (true);
grant select on cage.receipts, cage.custody_disputes to poker_worker;
drop policy if exists custody_disputes_worker_read on cage.custody_disputes;
create policy custody_disputes_worker_read on cage.custody_disputes for select to poker_worker using (true);
drop policy if exists receipts_worker_read on cage.receipts;
create policy receipts_worker_read on cage.receipts for select to poker_worker using (true);
