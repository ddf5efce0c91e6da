-- The chain bank (issue 20): its login (poker_bank) reads its own schema and writes it only through
-- the bank functions; it creates its tables through bank.create_table; the worker reconciles and
-- verifies its intents against the chain. Nobody else sees a row.
revoke all on schema bank, bank_private from public;
revoke all on all tables in schema bank, bank_private from public;
revoke all on all functions in schema bank, bank_private from public;
alter default privileges in schema bank, bank_private revoke execute on functions from public;

grant usage on schema bank to poker_bank, poker_worker, poker_admin;
-- poker_admin reads them for the audit's chain check (ops audit), under a live admin session (90_admin_reads.sql)
grant select on bank.deployments, bank.deposit_intents, bank.withdraw_intents, bank.tournament_payments, bank.vault_refunds to poker_bank, poker_worker, poker_admin;
-- a deposit as it stands (10_deposits.sql): the read of GET /api/deposits/:key and of a replayed entry
grant select on bank.deposit_states to poker_bank;
grant execute on function
  bank.activate_deployment(uuid, bigint, text, text, bigint),
  bank.create_table(text, text, jsonb, uuid, integer, integer, text, text),
  bank.open_deposit(uuid, text, text, integer, bigint, text, bigint),
  bank.submit_deposit(text, text),
  bank.confirm_deposit(text, text, bigint, text, numeric),
  bank.fail_deposit(text, text),
  bank.mark_credited(text),
  bank.uncredited_deposits(integer, integer),
  bank.unresolved_deposits(integer, integer),
  bank.open_withdrawal(uuid, text, bigint, bigint, text, text, text, boolean, text),
  bank.advance_withdrawal(text, text, text, bigint, text, numeric, text),
  bank.retry_withdrawal(text),
  bank.take_withdrawal(text),
  bank.mark_withdrawal_settled(text),
  bank.unsettled_withdrawals(integer, integer),
  bank.refund_tournament_entry(uuid, text),
  bank.open_tournament_payout(text, integer, bigint),
  bank.advance_tournament_payment(text, text, text, bigint, text, numeric, text),
  bank.retry_tournament_payment(text),
  bank.tournament_payments_to_resume(integer, integer),
  bank.open_vault_refund(text, integer, text, text, numeric, text),
  bank.advance_vault_refund(text, text, text, bigint, text, numeric, text)
  to poker_bank;
-- the bank reads, through the read views (db/functions/game/60_read_views.sql), of a table what its
-- routes check (which bank keeps its money, its kind of play, its status), of a tournament its state
-- and count, of a registration its seat; and the switches, as the cage does
grant usage on schema game, cage to poker_bank;
grant select (table_id, bank, mode, status, money_kind) on game.table_records to poker_bank;
grant select (table_id, tournament_state, registered_count) on game.tournaments to poker_bank;
grant select (table_id, seat_index, entry_ref_id) on game.seats to poker_bank;
grant execute on function game_private.registered_count(text) to poker_bank;
grant execute on function cage.switch_states() to poker_bank;
-- the bank contract's withdraw replay window (db/functions/00_bank_contract.sql: a constant, the cage's too)
grant execute on function cage.withdraw_replay_window() to poker_bank;

drop policy if exists deployments_read on bank.deployments;
create policy deployments_read on bank.deployments for select to poker_bank, poker_worker, poker_admin using (true);
drop policy if exists deposit_intents_read on bank.deposit_intents;
create policy deposit_intents_read on bank.deposit_intents for select to poker_bank, poker_worker, poker_admin using (true);
drop policy if exists withdraw_intents_read on bank.withdraw_intents;
create policy withdraw_intents_read on bank.withdraw_intents for select to poker_bank, poker_worker, poker_admin using (true);
drop policy if exists tournament_payments_read on bank.tournament_payments;
create policy tournament_payments_read on bank.tournament_payments for select to poker_bank, poker_worker, poker_admin using (true);
drop policy if exists vault_refunds_read on bank.vault_refunds;
create policy vault_refunds_read on bank.vault_refunds for select to poker_bank, poker_worker, poker_admin using (true);
-- the bank reads its registrants through game.seats now: the policy that let it read the rows goes
drop policy if exists table_players_bank_read on game.table_players;

-- Issue 31, class 7: the game reads a chain deposit's evidence back from the chain before it funds a
-- seat, and records that it did (db/functions/game/22_chain_deposits.sql); the bank login cannot.
revoke all on function game.chain_deposit_to_verify(text), game.record_chain_deposit(text, text, bigint, text, numeric) from public;
grant execute on function game.chain_deposit_to_verify(text), game.record_chain_deposit(text, text, bigint, text, numeric) to poker_game;
